package systems

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/karmada-quota/karmada-quota/internal/testenv"
	"github.com/karmada-quota/karmada-quota/test/bench/internal/workload"
)

// frqConfigurationName names the registration of Karmada's ResourceBinding webhook.
const frqConfigurationName = "karmada-frq-bench"

// FRQ is Karmada's own quota enforcement: karmada-webhook with the FederatedQuotaEnforcement feature gate,
// registered for ResourceBindings exactly as artifacts/deploy/webhook-configuration.yaml registers it, and
// karmada-controller-manager running only the federated-resource-quota controllers that work without member
// clusters. Both run with Karmada's default flags otherwise.
type FRQ struct {
	Env
	// Bin is the folder holding karmada-webhook and karmada-controller-manager.
	Bin string
	// SyncPeriod is karmada-controller-manager's --federated-resource-quota-sync-period: how often it recounts
	// every FRQ from the bindings. Zero keeps Karmada's default (5m).
	SyncPeriod time.Duration
	// Controllers are the karmada-controller-manager controllers enabled.
	Controllers []string
	// ExtraWebhookArgs and ExtraControllerArgs are appended to karmada-webhook's and karmada-controller-manager's
	// flags (to study a setting; none by default).
	ExtraWebhookArgs, ExtraControllerArgs []string
	// Label names the configuration in the report when it is not Karmada's defaults.
	Label string

	running
}

// RaisedQPS are the client rate flags of the "Karmada FRQ at its best" configuration: 25 times Karmada's defaults
// (40/60), so that neither the webhook's status writes nor the recount ever wait for a token.
var RaisedQPS = []string{"--kube-api-qps=1000", "--kube-api-burst=2000"}

// FRQControllers are the controllers run by default. federatedResourceQuotaEnforcement is the recount that
// FederatedQuotaEnforcement relies on (it writes status.overall and status.overallUsed); the Sync and Status
// controllers split FRQs into per-cluster ResourceQuotas through Works and aggregate them back, so they need
// Cluster objects, which only karmada-aggregated-apiserver serves.
var FRQControllers = []string{"federatedResourceQuotaEnforcement"}

// Name implements System.
func (f *FRQ) Name() string {
	if f.Label != "" {
		return f.Label
	}
	return "Karmada FRQ"
}

// Enforcing implements System.
func (*FRQ) Enforcing() bool { return true }

// Start implements System.
func (f *FRQ) Start(ctx context.Context) error {
	if len(f.Controllers) == 0 {
		f.Controllers = FRQControllers
	}
	webhookBin, cmBin := f.Bin+"/karmada-webhook", f.Bin+"/karmada-controller-manager"
	certDir, ca, cleanup, err := servingCerts()
	if err != nil {
		return err
	}
	f.certCleanup = cleanup
	addrs, err := freeAddrs(5)
	if err != nil {
		return err
	}
	serving, webhookMetrics, webhookHealth, cmMetrics, cmHealth := addrs[0], addrs[1], addrs[2], addrs[3], addrs[4]
	_, port, _ := strings.Cut(serving, ":")
	const gate = "--feature-gates=FederatedQuotaEnforcement=true"
	webhookArgs := append([]string{
		"--kubeconfig", f.CP.Kubeconfig,
		"--bind-address", "127.0.0.1",
		"--secure-port", port,
		"--cert-dir", certDir, // tls.crt and tls.key, its default file names
		"--metrics-bind-address", webhookMetrics,
		"--health-probe-bind-address", webhookHealth,
		gate,
	}, f.ExtraWebhookArgs...)
	webhook, err := f.Reg.Start("karmada-webhook", f.LogDir, webhookBin, webhookArgs...)
	if err != nil {
		return err
	}
	f.components = append(f.components, &Component{Role: "webhook", Proc: webhook, MetricsAddr: webhookMetrics})
	cmArgs := []string{
		"--kubeconfig", f.CP.Kubeconfig,
		"--controllers", strings.Join(f.Controllers, ","),
		"--metrics-bind-address", cmMetrics,
		"--health-probe-bind-address", cmHealth,
		gate,
	}
	if f.SyncPeriod > 0 {
		cmArgs = append(cmArgs, "--federated-resource-quota-sync-period", f.SyncPeriod.String())
	}
	cmArgs = append(cmArgs, f.ExtraControllerArgs...)
	cm, err := f.Reg.Start("karmada-controller-manager", f.LogDir, cmBin, cmArgs...)
	if err != nil {
		return err
	}
	f.components = append(f.components, &Component{Role: "controller", Proc: cm, MetricsAddr: cmMetrics})

	if err := waitServing(ctx, webhook, serving, ca); err != nil {
		return fmt.Errorf("karmada-webhook never served: %w", err)
	}
	if err := waitHealthy(ctx, cm, "http://"+cmHealth+"/healthz"); err != nil {
		return fmt.Errorf("karmada-controller-manager never became healthy: %w", err)
	}
	conf, err := frqWebhookConfiguration(serving, ca)
	if err != nil {
		return err
	}
	if err := f.CP.Client.Create(ctx, conf); err != nil {
		return fmt.Errorf("registering karmada-webhook: %w", err)
	}
	f.registered = conf
	return nil
}

// frqWebhookConfiguration is Karmada's registration of its ResourceBinding validation, taken from the
// configuration Karmada's installer applies (artifacts/deploy/webhook-configuration.yaml, webhook
// resourcebinding.karmada.io) and pointed at addr. The other webhooks of that file are left out: none of them
// sees a ResourceBinding write except the mutating one on CREATE, which adds a permanent-id label, has nothing to
// do with quota, and a Karmada installation runs whichever quota system is used.
func frqWebhookConfiguration(addr string, ca []byte) (*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	_, karmada, err := testenv.KarmadaWebhookConfigurations(addr, ca)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(karmada.Webhooks, func(w admissionregistrationv1.ValidatingWebhook) bool {
		return w.Name == "resourcebinding.karmada.io"
	})
	if i < 0 {
		return nil, errors.New("karmada's webhook configuration has no resourcebinding.karmada.io webhook")
	}
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: frqConfigurationName},
		Webhooks:   karmada.Webhooks[i : i+1],
	}, nil
}

// CreateQuota implements System: an FRQ with spec.overall only, which is what FederatedQuotaEnforcement
// enforces.
func (f *FRQ) CreateQuota(ctx context.Context, ns string, limits workload.Limits) error {
	return f.CP.Client.Create(ctx, &policyv1alpha1.FederatedResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: QuotaName},
		Spec:       policyv1alpha1.FederatedResourceQuotaSpec{Overall: limits.Hard},
	})
}

// Status implements System: status.overallUsed, which the webhook charges at admission and the enforcement
// controller recounts.
func (f *FRQ) Status(ctx context.Context, ns string) (Status, error) {
	var q policyv1alpha1.FederatedResourceQuota
	if err := f.CP.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: QuotaName}, &q); err != nil {
		return Status{}, err
	}
	return statusOf(q.Spec.Overall, q.Status.OverallUsed, nil)
}

// ControllerWrote implements System: the enforcement controller copies spec.overall into status.overall; the
// webhook only ever writes status.overallUsed.
func (f *FRQ) ControllerWrote(ctx context.Context, ns string) (bool, error) {
	var q policyv1alpha1.FederatedResourceQuota
	if err := f.CP.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: QuotaName}, &q); err != nil {
		return false, err
	}
	return len(q.Status.Overall) > 0, nil
}

// Stop implements System.
func (f *FRQ) Stop(ctx context.Context) error { return f.stop(ctx, f.CP.Client) }

// Describe implements System.
func (f *FRQ) Describe() string {
	sync := "its default --federated-resource-quota-sync-period (5m)"
	if f.SyncPeriod > 0 {
		sync = "--federated-resource-quota-sync-period=" + f.SyncPeriod.String()
	}
	extra := ""
	if len(f.ExtraWebhookArgs) > 0 {
		extra = " Extra webhook flags: `" + strings.Join(f.ExtraWebhookArgs, " ") + "`."
	}
	if len(f.ExtraControllerArgs) > 0 {
		extra += " Extra controller manager flags: `" + strings.Join(f.ExtraControllerArgs, " ") + "`."
	}
	return fmt.Sprintf("karmada-webhook and karmada-controller-manager built from github.com/karmada-io/karmada, "+
		"both with `--feature-gates=FederatedQuotaEnforcement=true` and default flags otherwise (client QPS 40/burst 60 unless raised below); "+
		"the webhook registered as Karmada registers `resourcebinding.karmada.io` (failurePolicy Fail, sideEffects "+
		"NoneOnDryRun, timeoutSeconds 3); the controller manager with `--controllers=%s` and %s; one "+
		"`FederatedResourceQuota` with `spec.overall` per namespace.%s", strings.Join(f.Controllers, ","), sync, extra)
}
