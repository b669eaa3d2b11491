package certs

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"maps"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/pkg/metrics"
)

// What the reconciler needs in the karmada-apiserver: it reads and patches the caBundle of its own webhook
// configuration, never creates or deletes one. `make generate` writes it into the chart (files/rbac/controller).
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,verbs=get;patch,resourceNames=karmada-quota

// Timings of the passes.
const (
	// TrustPropagationDelay is how long a serving certificate from a new CA waits after the pass that put the CA
	// into the webhook configuration: every karmada-apiserver replica must have seen the new caBundle through its
	// watch before the webhook may present a certificate only that bundle verifies.
	TrustPropagationDelay = 5 * time.Second
	// minRequeue keeps a pass whose renewal time has already come from spinning.
	minRequeue = time.Second
	// maxAttempts bounds the passes of one Reconcile that lose a write race to another writer.
	maxAttempts = 5
)

// Event reasons, recorded on the host Secrets.
const (
	EventCACreated      = "CACreated"
	EventCARotated      = "CARotated"
	EventIssued         = "CertificateIssued"
	EventWaitingTrust   = "WaitingForTrust"
	EventBundleUpdated  = "CABundleUpdated"
	EventWebhookSynced  = "WebhookCABundleSynced"
	EventNoCABundle     = "NoCABundle"
	managedByLabel      = "app.kubernetes.io/managed-by"
	managedByLabelValue = "karmada-quota-controller"
)

// Reconciler keeps the webhook's certificates and the caBundle of its configuration. It holds two clients: the
// host cluster's, where the Secrets live (namespace Options.Namespace), and the karmada-apiserver's, where the
// webhook configuration lives.
//
// It runs in two ways. quota-controller adds it to its manager as a leader-elected Runnable, which reconciles
// at start and then whenever a renewal falls due, at least every CheckInterval. The installer calls Reconcile
// once before the webhook pods start, so they find their Secret; it needs no manager.
type Reconciler struct {
	host, karmada client.Client
	opts          Options
	clock         clock.Clock
	recorder      record.EventRecorder
}

// NewReconciler returns a reconciler writing Secrets through host and the caBundle through karmada. host must
// read and write core/v1 Secrets; karmada must know admissionregistration.k8s.io/v1. Neither needs a cache: a
// pass reads everything from the apiservers, which also keeps the karmada-apiserver permissions to get and patch
// one named object.
func NewReconciler(host, karmada client.Client, opts Options, clk clock.Clock) (*Reconciler, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.Mode == ModeNone {
		return nil, errors.New("certificate management is off (mode none)")
	}
	return &Reconciler{host: host, karmada: karmada, opts: opts, clock: clk}, nil
}

// WithEventRecorder makes the reconciler record what it does as events on the host Secrets.
func (r *Reconciler) WithEventRecorder(recorder record.EventRecorder) *Reconciler {
	r.recorder = recorder
	return r
}

// NeedLeaderElection is true: two replicas issuing certificates would only overwrite each other.
func (r *Reconciler) NeedLeaderElection() bool { return true }

// Start reconciles until ctx is done: at once, then when the next renewal falls due or after CheckInterval,
// whichever comes first. A failed pass is retried with backoff; it never stops the manager.
func (r *Reconciler) Start(ctx context.Context) error {
	log := klog.FromContext(ctx).WithName("certificates")
	ctx = klog.NewContext(ctx, log)
	log.Info("Managing the webhook certificates", "mode", r.opts.Mode, "namespace", r.opts.Namespace,
		"servingSecret", r.opts.ServingSecret, "webhookConfiguration", r.opts.WebhookConfiguration)
	backoff := minRequeue
	for {
		wait, err := r.Reconcile(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			log.Error(err, "Reconciling the webhook certificates failed; retrying", "after", backoff)
			wait, backoff = backoff, min(2*backoff, r.opts.CheckInterval)
		} else {
			backoff = minRequeue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-r.clock.After(wait):
		}
	}
}

// Reconcile makes one pass and returns how long until the next one is due (at most CheckInterval). A pass that
// loses a write race to another writer (the installer, a former leader, a person) reads everything again and
// decides afresh.
func (r *Reconciler) Reconcile(ctx context.Context) (time.Duration, error) {
	log := klog.FromContext(ctx)
	for attempt := 1; ; attempt++ {
		wait, err := r.pass(ctx)
		if err == nil {
			return min(max(wait, minRequeue), r.opts.CheckInterval), nil
		}
		if !(apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)) || attempt == maxAttempts {
			return 0, err
		}
		log.V(1).Info("Another writer changed an object this pass read; reading again", "attempt", attempt, "err", err)
	}
}

func (r *Reconciler) pass(ctx context.Context) (time.Duration, error) {
	now := r.clock.Now()
	serving, err := r.getSecret(ctx, r.opts.ServingSecret)
	if err != nil {
		return 0, err
	}
	webhook, err := r.getWebhookConfiguration(ctx)
	if err != nil {
		return 0, err
	}
	if r.opts.Mode == ModeExternal {
		return r.passExternal(ctx, now, serving, webhook)
	}
	ca, err := r.getSecret(ctx, r.opts.CASecret)
	if err != nil {
		return 0, err
	}
	return r.passSelfManaged(ctx, now, ca, serving, webhook)
}

// passSelfManaged writes the CA Secret, then the serving Secret, then the caBundle: a serving certificate is
// written only once the CA that signed it is stored, and the caBundle only from what is stored.
func (r *Reconciler) passSelfManaged(ctx context.Context, now time.Time, caSecret, servingSecret *corev1.Secret,
	webhook *admissionregistrationv1.ValidatingWebhookConfiguration) (time.Duration, error) {
	log := klog.FromContext(ctx)
	o := observe(caSecret, servingSecret, webhook)
	s := parse(o)
	plan := decide(ModeSelfManaged, o, s, now, r.opts.DNSNames, Lifetimes{CA: r.opts.CAValidity, Serving: r.opts.Validity})

	hadCA, hadServing := caSecret != nil, servingSecret != nil
	ca := s.ca
	if plan.CA.Action != Keep {
		var err error
		if ca, err = newCA(now, r.opts.CAValidity); err != nil {
			return 0, err
		}
	}
	bundle := encodeBundle(append([]*x509.Certificate{ca.cert}, plan.Previous...))
	caSecret, caWritten, err := r.writeSecret(ctx, caSecret, r.opts.CASecret, map[string][]byte{
		KeyCertificate: ca.certPEM, KeyPrivateKey: ca.keyPEM, KeyCABundle: bundle,
	})
	if err != nil {
		return 0, fmt.Errorf("writing the CA Secret: %w", err)
	}
	switch {
	case plan.CA.Action == Create:
		r.record(log, caSecret, EventCACreated, "Created CA %s, valid until %s: %s", ca.cert.Subject.CommonName, stamp(ca.cert.NotAfter), plan.CA.Reason)
		if hadCA {
			metrics.CertificateRenewed(metrics.CACertificate)
		}
	case plan.CA.Action == Rotate:
		r.record(log, caSecret, EventCARotated, "Rotated to CA %s, valid until %s; %d previous CA(s) stay trusted: %s",
			ca.cert.Subject.CommonName, stamp(ca.cert.NotAfter), len(plan.Previous), plan.CA.Reason)
		metrics.CertificateRenewed(metrics.CACertificate)
	case caWritten:
		r.record(log, caSecret, EventBundleUpdated, "CA bundle now holds %d CA(s): the current one and %d previous one(s) not expired", 1+len(plan.Previous), len(plan.Previous))
	}

	leaf := s.serving
	if plan.Serving.Action == Issue {
		if leaf, err = newServing(ca, r.opts.DNSNames, now, r.opts.Validity); err != nil {
			return 0, err
		}
	}
	servingSecret, _, err = r.writeSecret(ctx, servingSecret, r.opts.ServingSecret, map[string][]byte{
		KeyCertificate: leaf.certPEM, KeyPrivateKey: leaf.keyPEM, KeyCABundle: bundle,
	})
	if err != nil {
		return 0, fmt.Errorf("writing the serving Secret: %w", err)
	}
	switch plan.Serving.Action {
	case Issue:
		r.record(log, servingSecret, EventIssued, "Issued serving certificate %x from CA %s for %v, valid until %s: %s",
			leaf.cert.SerialNumber, ca.cert.Subject.CommonName, leaf.cert.DNSNames, stamp(leaf.cert.NotAfter), plan.Serving.Reason)
		if hadServing {
			metrics.CertificateRenewed(metrics.ServingCertificate)
		}
	case WaitForTrust:
		r.record(log, servingSecret, EventWaitingTrust, "Serving certificate %x is kept until the webhook configuration trusts CA %s: %s",
			leaf.cert.SerialNumber, ca.cert.Subject.CommonName, plan.Serving.Reason)
	}
	metrics.ReportCertificateExpiration(metrics.CACertificate, ca.cert.NotAfter)
	metrics.ReportCertificateExpiration(metrics.ServingCertificate, leaf.cert.NotAfter)

	if err := r.syncWebhook(ctx, plan.Webhook, webhook, servingSecret); err != nil {
		return 0, err
	}
	if plan.Serving.Action == WaitForTrust {
		return TrustPropagationDelay, nil
	}
	next := nextRenewal(ca.cert, leaf.cert, plan.Previous)
	log.V(1).Info("Webhook certificates are up to date", "ca", ca.cert.Subject.CommonName, "caExpires", ca.cert.NotAfter,
		"serving", fmt.Sprintf("%x", leaf.cert.SerialNumber), "servingExpires", leaf.cert.NotAfter, "previousCAs", len(plan.Previous), "nextRenewal", next)
	return next.Sub(now), nil
}

// passExternal only carries the ca.crt of the serving Secret another issuer writes into the caBundle.
func (r *Reconciler) passExternal(ctx context.Context, now time.Time, serving *corev1.Secret,
	webhook *admissionregistrationv1.ValidatingWebhookConfiguration) (time.Duration, error) {
	log := klog.FromContext(ctx)
	plan := Decide(ModeExternal, observe(nil, serving, webhook), now, nil, Lifetimes{})
	reportExternal(serving)
	switch {
	case serving == nil:
		log.Info("Not syncing the caBundle", "reason", plan.Webhook.Reason, "secret", klog.KRef(r.opts.Namespace, r.opts.ServingSecret))
	case plan.Webhook.Action != SyncCABundle && webhook != nil:
		r.warn(log, serving, EventNoCABundle, "Not syncing the caBundle of webhook configuration %s: %s", r.opts.WebhookConfiguration, plan.Webhook.Reason)
	}
	if err := r.syncWebhook(ctx, plan.Webhook, webhook, serving); err != nil {
		return 0, err
	}
	return r.opts.CheckInterval, nil
}

// reportExternal exports the expiry of the serving certificate and of the CA in ca.crt that signed it.
func reportExternal(serving *corev1.Secret) {
	if serving == nil {
		metrics.ClearCertificateExpiration(metrics.ServingCertificate)
		metrics.ClearCertificateExpiration(metrics.CACertificate)
		return
	}
	leaf, err := parseKeyPair(serving.Data)
	if err != nil {
		metrics.ClearCertificateExpiration(metrics.ServingCertificate)
		metrics.ClearCertificateExpiration(metrics.CACertificate)
		return
	}
	metrics.ReportCertificateExpiration(metrics.ServingCertificate, leaf.cert.NotAfter)
	for _, ca := range parseBundle(serving.Data[KeyCABundle]) {
		if signedBy(leaf.cert, ca) {
			metrics.ReportCertificateExpiration(metrics.CACertificate, ca.NotAfter)
			return
		}
	}
	metrics.ClearCertificateExpiration(metrics.CACertificate)
}

// syncWebhook carries out the plan's step for the webhook configuration: with SyncCABundle, it sets every
// webhook's caBundle to the serving Secret's ca.crt where it differs.
func (r *Reconciler) syncWebhook(ctx context.Context, step Step, webhook *admissionregistrationv1.ValidatingWebhookConfiguration, serving *corev1.Secret) error {
	log := klog.FromContext(ctx)
	if step.Action != SyncCABundle {
		log.V(1).Info("Leaving the webhook configuration alone", "webhookConfiguration", r.opts.WebhookConfiguration, "reason", step.Reason)
		return nil
	}
	bundle := serving.Data[KeyCABundle]
	original := webhook.DeepCopy()
	var changed []string
	for i := range webhook.Webhooks {
		if !bytes.Equal(webhook.Webhooks[i].ClientConfig.CABundle, bundle) {
			webhook.Webhooks[i].ClientConfig.CABundle = bundle
			changed = append(changed, webhook.Webhooks[i].Name)
		}
	}
	if len(changed) == 0 {
		return nil
	}
	// A strategic merge patch touches only the caBundle of each webhook, by name; the optimistic lock makes it
	// fail rather than apply to a configuration changed since it was read (a webhook renamed or removed).
	if err := r.karmada.Patch(ctx, webhook, client.StrategicMergeFrom(original, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("updating the caBundle of webhook configuration %s: %w", r.opts.WebhookConfiguration, err)
	}
	metrics.CABundleUpdated()
	r.record(log, serving, EventWebhookSynced, "Set the caBundle of webhook configuration %s (webhooks %v) from %s (%d CA(s))",
		r.opts.WebhookConfiguration, changed, KeyCABundle, len(parseBundle(bundle)))
	return nil
}

// writeSecret makes the Secret name hold data, creating it as kubernetes.io/tls if it does not exist, updating it
// at the resourceVersion read otherwise (keys other than data's are kept). It returns the Secret as stored and
// whether it wrote.
func (r *Reconciler) writeSecret(ctx context.Context, existing *corev1.Secret, name string, data map[string][]byte) (*corev1.Secret, bool, error) {
	if existing == nil {
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: r.opts.Namespace, Name: name, Labels: map[string]string{managedByLabel: managedByLabelValue}},
			Type:       corev1.SecretTypeTLS,
			Data:       data,
		}
		// Two writers creating at once: the loser gets AlreadyExists and its pass starts over from the winner's.
		return secret, true, r.host.Create(ctx, secret)
	}
	same := true
	for k, v := range data {
		if !bytes.Equal(existing.Data[k], v) {
			same = false
		}
	}
	if same {
		return existing, false, nil
	}
	secret := existing.DeepCopy()
	if secret.Data == nil {
		secret.Data = map[string][]byte{}
	}
	maps.Copy(secret.Data, data)
	return secret, true, r.host.Update(ctx, secret)
}

func (r *Reconciler) getSecret(ctx context.Context, name string) (*corev1.Secret, error) {
	var secret corev1.Secret
	if err := r.host.Get(ctx, types.NamespacedName{Namespace: r.opts.Namespace, Name: name}, &secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading Secret %s/%s in the host cluster: %w", r.opts.Namespace, name, err)
	}
	return &secret, nil
}

func (r *Reconciler) getWebhookConfiguration(ctx context.Context) (*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	var webhook admissionregistrationv1.ValidatingWebhookConfiguration
	if err := r.karmada.Get(ctx, types.NamespacedName{Name: r.opts.WebhookConfiguration}, &webhook); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading webhook configuration %s in the karmada-apiserver: %w", r.opts.WebhookConfiguration, err)
	}
	return &webhook, nil
}

// observe is the policy's view of what a pass read.
func observe(ca, serving *corev1.Secret, webhook *admissionregistrationv1.ValidatingWebhookConfiguration) Observed {
	var o Observed
	if ca != nil {
		o.CA = nonNil(ca.Data)
	}
	if serving != nil {
		o.Serving = nonNil(serving.Data)
	}
	if webhook != nil {
		o.WebhookConfigurationExists = true
		for _, w := range webhook.Webhooks {
			o.WebhookCABundles = append(o.WebhookCABundles, w.ClientConfig.CABundle)
		}
	}
	return o
}

// nonNil keeps an existing Secret without data apart from a missing one.
func nonNil(data map[string][]byte) map[string][]byte {
	if data == nil {
		return map[string][]byte{}
	}
	return data
}

// record logs what a pass did and, with a recorder, records it as an event on the Secret.
func (r *Reconciler) record(log klog.Logger, secret *corev1.Secret, reason, format string, args ...any) {
	message := fmt.Sprintf(format, args...)
	log.Info(message, "reason", reason, "secret", klog.KObj(secret))
	if r.recorder != nil {
		r.recorder.Event(secret, corev1.EventTypeNormal, reason, message)
	}
}

// warn is record for what a person must fix.
func (r *Reconciler) warn(log klog.Logger, secret *corev1.Secret, reason, format string, args ...any) {
	message := fmt.Sprintf(format, args...)
	log.Info("Warning: "+message, "reason", reason, "secret", klog.KObj(secret))
	if r.recorder != nil {
		r.recorder.Event(secret, corev1.EventTypeWarning, reason, message)
	}
}
