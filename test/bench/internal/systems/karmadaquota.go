package systems

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	controllerapp "github.com/karmada-quota/karmada-quota/cmd/quota-controller/app"
	webhookapp "github.com/karmada-quota/karmada-quota/cmd/quota-webhook/app"
	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/webhookconfig"
)

// KarmadaQuota is karmada-quota as it ships: quota-webhook and quota-controller with their default flags (one
// replica each), registered with the production ValidatingWebhookConfiguration.
type KarmadaQuota struct {
	Env
	// WebhookBin and ControllerBin are the built cmd/quota-webhook and cmd/quota-controller.
	WebhookBin, ControllerBin string
	// ExtraWebhookArgs and ExtraControllerArgs are appended to the webhook's and the controller's flags (to study a
	// setting; none by default).
	ExtraWebhookArgs, ExtraControllerArgs []string

	running
}

// Name implements System.
func (*KarmadaQuota) Name() string { return "karmada-quota" }

// Enforcing implements System.
func (*KarmadaQuota) Enforcing() bool { return true }

// Start implements System.
func (k *KarmadaQuota) Start(ctx context.Context) error {
	certDir, ca, cleanup, err := servingCerts()
	if err != nil {
		return err
	}
	k.certCleanup = cleanup
	addrs, err := freeAddrs(5)
	if err != nil {
		return err
	}
	serving, webhookMetrics, webhookHealth, controllerMetrics, controllerHealth := addrs[0], addrs[1], addrs[2], addrs[3], addrs[4]

	args := append([]string{
		"--kubeconfig", k.CP.Kubeconfig,
		"--cert-dir", certDir,
		"--webhook-bind-address", serving,
		"--metrics-bind-address", webhookMetrics,
		"--health-probe-bind-address", webhookHealth,
	}, k.ExtraWebhookArgs...)
	webhook, err := k.Reg.Start("quota-webhook", k.LogDir, k.WebhookBin, args...)
	if err != nil {
		return err
	}
	k.components = append(k.components, &Component{Role: "webhook", Proc: webhook, MetricsAddr: webhookMetrics})
	controller, err := k.Reg.Start("quota-controller", k.LogDir, k.ControllerBin, append([]string{
		"--kubeconfig", k.CP.Kubeconfig,
		"--metrics-bind-address", controllerMetrics,
		"--health-probe-bind-address", controllerHealth,
	}, k.ExtraControllerArgs...)...)
	if err != nil {
		return err
	}
	k.components = append(k.components, &Component{Role: "controller", Proc: controller, MetricsAddr: controllerMetrics})

	// Ready means serving and the quota informer synced; only then may the apiserver be pointed at it, since
	// with failurePolicy Fail a configuration pointing at nothing refuses every binding write.
	if err := waitHealthy(ctx, webhook, "http://"+webhookHealth+"/readyz"); err != nil {
		return fmt.Errorf("quota-webhook never became ready: %w", err)
	}
	if err := waitServing(ctx, webhook, serving, ca); err != nil {
		return err
	}
	if err := waitHealthy(ctx, controller, "http://"+controllerHealth+"/readyz"); err != nil {
		return fmt.Errorf("quota-controller never became ready: %w", err)
	}
	conf := webhookconfig.Configuration("https://"+serving, ca, webhookconfig.DefaultTimeoutSeconds)
	if err := k.CP.Client.Create(ctx, conf); err != nil {
		return fmt.Errorf("registering the webhooks: %w", err)
	}
	k.registered = conf
	return nil
}

// CreateQuota implements System.
func (k *KarmadaQuota) CreateQuota(ctx context.Context, ns string, hard corev1.ResourceList) error {
	return k.CP.Client.Create(ctx, &quotav1alpha1.KarmadaQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: QuotaName},
		Spec:       quotav1alpha1.KarmadaQuotaSpec{Hard: hard},
	})
}

// Status implements System: status.used, and status.reserved as pending.
func (k *KarmadaQuota) Status(ctx context.Context, ns string) (Status, error) {
	var q quotav1alpha1.KarmadaQuota
	if err := k.CP.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: QuotaName}, &q); err != nil {
		return Status{}, err
	}
	return statusOf(q.Spec.Hard, q.Status.Used, q.Status.Reserved)
}

// Reservations says how many reservations the quota of namespace ns lists, and how many it holds folded.
func (k *KarmadaQuota) Reservations(ctx context.Context, ns string) (listed int, folded int64, err error) {
	var q quotav1alpha1.KarmadaQuota
	if err := k.CP.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: QuotaName}, &q); err != nil {
		return 0, 0, err
	}
	if q.Status.FoldedReservations != nil {
		folded = q.Status.FoldedReservations.Count
	}
	return len(q.Status.Reservations), folded, nil
}

// ControllerWrote implements System: the controller mirrors spec.hard into status.hard; the webhook never
// writes it.
func (k *KarmadaQuota) ControllerWrote(ctx context.Context, ns string) (bool, error) {
	var q quotav1alpha1.KarmadaQuota
	if err := k.CP.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: QuotaName}, &q); err != nil {
		return false, err
	}
	return len(q.Status.Hard) > 0, nil
}

// Stop implements System.
func (k *KarmadaQuota) Stop(ctx context.Context) error { return k.stop(ctx, k.CP.Client) }

// Describe implements System.
func (k *KarmadaQuota) Describe() string {
	extra := ""
	if len(k.ExtraWebhookArgs) > 0 {
		extra = " Extra webhook flags: `" + strings.Join(k.ExtraWebhookArgs, " ") + "`."
	}
	if len(k.ExtraControllerArgs) > 0 {
		extra += " Extra controller flags: `" + strings.Join(k.ExtraControllerArgs, " ") + "`."
	}
	webhook, controller := webhookapp.NewOptions(), controllerapp.NewOptions()
	return fmt.Sprintf("cmd/quota-webhook and cmd/quota-controller built from this tree, one process each with default flags "+
		"(client QPS %v/burst %d and %v/%d; the controller's --settle-interval %s), registered with `webhookconfig.Configuration` "+
		"(failurePolicy Fail, sideEffects NoneOnDryRun, timeoutSeconds 10); one `KarmadaQuota` per namespace.%s",
		webhook.KubeAPIQPS, webhook.KubeAPIBurst, controller.KubeAPIQPS, controller.KubeAPIBurst, controller.SettleInterval, extra)
}
