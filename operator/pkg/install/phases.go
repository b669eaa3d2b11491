package install

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/pkg/scheme"
	"github.com/karmada-quota/karmada-quota/pkg/webhookconfig"
)

// Scheme knows what the installation reads and writes in the karmada-apiserver: karmada-quota's types and, unlike
// the components' scheme, the CustomResourceDefinition it waits on (without it, waiting for the CRD to be
// established failed on "no kind is registered" until its timeout).
var Scheme = runtime.NewScheme()

func init() {
	utilruntime.Must(scheme.AddToScheme(Scheme))
	utilruntime.Must(apiextensionsv1.AddToScheme(Scheme))
}

// CertificateReconciler issues and renews the webhook's self-managed certificates (pkg/certs); one call is one
// pass.
type CertificateReconciler interface {
	Reconcile(ctx context.Context) (time.Duration, error)
}

// Installer runs the phases of one installation.
type Installer struct {
	// Host is a client of the host cluster; Karmada a client of the karmada-apiserver with admin rights.
	Host, Karmada client.Client
	// KarmadaCluster is how the components reach the karmada-apiserver: the admin kubeconfig's cluster.
	KarmadaCluster *clientcmdapi.Cluster
	Config         Config
	// Objects are the karmada-apiserver's objects: the CRD, RBAC, roles, service accounts.
	Objects []*unstructured.Unstructured
	// Certificates is set in the self-managed mode.
	Certificates CertificateReconciler
	Log          logr.Logger
	// Observe, when set, hears of every object an apply created or changed; inKarmada says which plane.
	Observe func(inKarmada bool, obj *unstructured.Unstructured, change Change)
}

func (i *Installer) observe(inKarmada bool, obj *unstructured.Unstructured, change Change) {
	if i.Observe != nil && change != Unchanged {
		i.Observe(inKarmada, obj, change)
	}
}

// KarmadaAccess is what an admin kubeconfig gives the installation.
type KarmadaAccess struct {
	Client  client.Client
	Config  *rest.Config
	Cluster *clientcmdapi.Cluster
}

// KarmadaFromKubeconfig connects to the karmada-apiserver of an admin kubeconfig (the current context's).
func KarmadaFromKubeconfig(kubeconfig []byte) (*KarmadaAccess, error) {
	raw, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("reading the karmada-apiserver kubeconfig: %w", err)
	}
	ctx, ok := raw.Contexts[raw.CurrentContext]
	if !ok {
		return nil, fmt.Errorf("the karmada-apiserver kubeconfig has no current context %q", raw.CurrentContext)
	}
	cluster, ok := raw.Clusters[ctx.Cluster]
	if !ok {
		return nil, fmt.Errorf("the karmada-apiserver kubeconfig has no cluster %q", ctx.Cluster)
	}
	if cluster.CertificateAuthority != "" && len(cluster.CertificateAuthorityData) == 0 {
		return nil, errors.New("the karmada-apiserver kubeconfig must carry its CA inline (certificate-authority-data): " +
			"the components get a copy of it and cannot read files of the installer")
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*raw, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("reading the karmada-apiserver kubeconfig: %w", err)
	}
	cfg.UserAgent = "karmada-quota-installer"
	// client-go's default (5 queries per second) throttled every pass of the operator, which applies the
	// installation's two dozen objects each time, to over a second, and so every drift repair.
	cfg.QPS, cfg.Burst = 50, 100
	c, err := client.New(cfg, client.Options{Scheme: Scheme})
	if err != nil {
		return nil, err
	}
	return &KarmadaAccess{Client: c, Config: cfg, Cluster: cluster}, nil
}

// Prepare installs what must exist before the components roll out: the CRD first, established, so that a new
// schema is served before a new controller writes it; RBAC and roles; the components' identities; the
// self-managed certificates, so that webhook pods start with a certificate at once.
func (i *Installer) Prepare(ctx context.Context) error {
	if err := i.ensureNamespace(ctx); err != nil {
		return err
	}
	for _, obj := range Sorted(i.Objects) {
		change, err := apply(ctx, i.Karmada, obj, i.Config.Labels)
		if err != nil {
			return err
		}
		i.observe(true, obj, change)
		if isCRD(obj) {
			if err := waitEstablished(ctx, i.Karmada, obj.GetName()); err != nil {
				return err
			}
		}
	}
	i.Log.Info("Applied karmada-quota's objects to the karmada-apiserver", "objects", len(i.Objects))
	// What an earlier configuration rendered and this one does not (the business roles turned off) would
	// otherwise outlive the change, granting what the admin just took away.
	if err := i.prune(ctx); err != nil {
		return err
	}
	for _, id := range i.Config.Identities {
		if err := i.ensureIdentity(ctx, id); err != nil {
			return err
		}
	}
	if len(i.Config.Identities) > 0 {
		i.Log.Info("Identities ready", "serviceAccounts", len(i.Config.Identities))
	}
	if i.Certificates != nil {
		existed, err := i.certificateSecrets(ctx)
		if err != nil {
			return err
		}
		if _, err := i.Certificates.Reconcile(ctx); err != nil {
			return fmt.Errorf("issuing the webhook's certificates: %w", err)
		}
		if err := i.labelCertificates(ctx, existed); err != nil {
			return err
		}
		i.Log.Info("Certificates ready", "secret", i.Config.Certificates.ServingSecret)
	}
	return nil
}

func (i *Installer) ensureNamespace(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: i.Config.Karmada.Namespace}}
	if err := i.Karmada.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s in the karmada-apiserver: %w", ns.Name, err)
	}
	return nil
}

// Register makes the karmada-apiserver call the webhook, once the webhook's rollout is complete and its CA is
// known: registered earlier, a Fail webhook would refuse binding writes while no replica serves. It waits for
// both.
func (i *Installer) Register(ctx context.Context) error {
	if err := i.waitRolledOut(ctx); err != nil {
		return err
	}
	caBundle, err := i.waitCABundle(ctx)
	if err != nil {
		return err
	}
	return i.register(ctx, caBundle)
}

// RegisterIfReady registers the webhook if the serving Secret holds its CA bundle, and reports whether it did;
// the caller has seen the webhook's rollout complete. It does not wait, for a reconciler to come back later.
func (i *Installer) RegisterIfReady(ctx context.Context) (bool, error) {
	var s corev1.Secret
	err := i.Host.Get(ctx, client.ObjectKey{Namespace: i.Config.Namespace, Name: i.Config.Certificates.ServingSecret}, &s)
	if apierrors.IsNotFound(err) || (err == nil && len(s.Data["ca.crt"]) == 0) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, i.register(ctx, s.Data["ca.crt"])
}

func (i *Installer) register(ctx context.Context, caBundle []byte) error {
	conf := webhookconfig.Configuration(i.Config.Webhook.URL, caBundle, i.Config.Webhook.TimeoutSeconds)
	conf.TypeMeta = metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingWebhookConfiguration"}
	if err := i.applyTyped(ctx, i.Karmada, conf); err != nil {
		return err
	}
	i.Log.V(1).Info("Registered the webhook in the karmada-apiserver", "url", i.Config.Webhook.URL)
	return nil
}

// waitRolledOut waits until every replica of the webhook runs the current template and is available, as
// `kubectl rollout status` decides it.
func (i *Installer) waitRolledOut(ctx context.Context) error {
	key := client.ObjectKey{Namespace: i.Config.Namespace, Name: i.Config.Webhook.Deployment}
	var last string
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		var d appsv1.Deployment
		if err := i.Host.Get(ctx, key, &d); err != nil {
			last = err.Error()
			return false, nil
		}
		var done bool
		done, last = RolledOut(&d)
		return done, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the rollout of Deployment %s (%s): %w", key, last, err)
	}
	return nil
}

// RolledOut reports whether a Deployment's rollout is complete, and if not, why.
func RolledOut(d *appsv1.Deployment) (bool, string) {
	replicas := int32(1)
	if d.Spec.Replicas != nil {
		replicas = *d.Spec.Replicas
	}
	switch {
	case d.Status.ObservedGeneration < d.Generation:
		return false, "the new template is not observed yet"
	case d.Status.UpdatedReplicas < replicas:
		return false, fmt.Sprintf("%d of %d replicas updated", d.Status.UpdatedReplicas, replicas)
	case d.Status.Replicas > d.Status.UpdatedReplicas:
		return false, fmt.Sprintf("%d old replicas still running", d.Status.Replicas-d.Status.UpdatedReplicas)
	case d.Status.AvailableReplicas < d.Status.UpdatedReplicas:
		return false, fmt.Sprintf("%d of %d updated replicas available", d.Status.AvailableReplicas, d.Status.UpdatedReplicas)
	}
	return true, "rolled out"
}

// waitCABundle returns the serving Secret's CA bundle, waiting for cert-manager to write it.
func (i *Installer) waitCABundle(ctx context.Context) ([]byte, error) {
	key := client.ObjectKey{Namespace: i.Config.Namespace, Name: i.Config.Certificates.ServingSecret}
	var bundle []byte
	var last string
	err := wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		var s corev1.Secret
		if err := i.Host.Get(ctx, key, &s); err != nil {
			last = err.Error()
			return false, nil
		}
		bundle = s.Data["ca.crt"]
		last = "no ca.crt in it yet"
		return len(bundle) > 0, nil
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for the CA bundle in Secret %s (%s): %w", key, last, err)
	}
	return bundle, nil
}

// Unregister removes the webhook configuration from the karmada-apiserver and waits until it is gone, so that
// no binding write is sent to a webhook about to go away.
func (i *Installer) Unregister(ctx context.Context) error {
	conf := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: webhookconfig.ConfigurationName}}
	if err := client.IgnoreNotFound(i.Karmada.Delete(ctx, conf)); err != nil {
		return fmt.Errorf("deleting the webhook configuration: %w", err)
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := i.Karmada.Get(ctx, client.ObjectKeyFromObject(conf), conf)
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	if err != nil {
		return fmt.Errorf("waiting for the webhook configuration to go: %w", err)
	}
	i.Log.Info("Unregistered the webhook from the karmada-apiserver")
	return nil
}

// Cleanup removes what the installation made, in reverse order: identities, the certificates it issued, roles
// and service accounts. The CRD, and so every quota, stays unless Uninstall.RemoveCRD.
func (i *Installer) Cleanup(ctx context.Context) error {
	var errs []error
	for _, id := range i.Config.Identities {
		errs = append(errs, i.deleteIdentity(ctx, id))
	}
	if i.Config.Certificates.Mode == CertificatesSelfManaged {
		for _, name := range []string{i.Config.Certificates.ServingSecret, i.Config.Certificates.CASecret} {
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: i.Config.Namespace, Name: name}}
			errs = append(errs, client.IgnoreNotFound(i.Host.Delete(ctx, s)))
		}
	}
	objects := Sorted(i.Objects)
	slices.Reverse(objects)
	for _, obj := range objects {
		if obj.GetKind() == "Namespace" || (isCRD(obj) && !i.Config.Uninstall.RemoveCRD) {
			continue
		}
		errs = append(errs, deleteObject(ctx, i.Karmada, obj))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	i.Log.Info("Removed karmada-quota from the karmada-apiserver", "crdRemoved", i.Config.Uninstall.RemoveCRD)
	return nil
}

// certificateSecrets reads the self-managed certificates' Secrets in the host; absent ones are nil.
func (i *Installer) certificateSecrets(ctx context.Context) (map[string]*corev1.Secret, error) {
	out := map[string]*corev1.Secret{}
	for _, name := range []string{i.Config.Certificates.CASecret, i.Config.Certificates.ServingSecret} {
		var s corev1.Secret
		err := i.Host.Get(ctx, client.ObjectKey{Namespace: i.Config.Namespace, Name: name}, &s)
		switch {
		case apierrors.IsNotFound(err):
			out[name] = nil
		case err != nil:
			return nil, fmt.Errorf("reading Secret %s/%s: %w", i.Config.Namespace, name, err)
		default:
			out[name] = &s
		}
	}
	return out, nil
}

// labelCertificates puts the installation's labels on the certificate Secrets, which pkg/certs labels only as
// its own: like everything a phase creates, they must carry them for the operator to see them change (a deleted
// serving Secret went unnoticed, and webhook pods starting meanwhile found no certificate). A Secret the pass
// created is reported as such.
func (i *Installer) labelCertificates(ctx context.Context, existed map[string]*corev1.Secret) error {
	now, err := i.certificateSecrets(ctx)
	if err != nil {
		return err
	}
	for name, s := range now {
		if s == nil {
			continue
		}
		if existed[name] == nil {
			u := &unstructured.Unstructured{}
			u.SetAPIVersion("v1")
			u.SetKind("Secret")
			u.SetNamespace(s.Namespace)
			u.SetName(s.Name)
			i.observe(false, u, Created)
		}
		patched := s.DeepCopy()
		if patched.Labels == nil {
			patched.Labels = map[string]string{}
		}
		for k, v := range i.Config.Labels {
			patched.Labels[k] = v
		}
		if maps.Equal(patched.Labels, s.Labels) {
			continue
		}
		if err := i.Host.Patch(ctx, patched, client.MergeFrom(s)); err != nil {
			return fmt.Errorf("labelling Secret %s/%s: %w", s.Namespace, s.Name, err)
		}
	}
	return nil
}
