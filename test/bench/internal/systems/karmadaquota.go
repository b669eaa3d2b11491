package systems

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controllerapp "github.com/karmada-quota/karmada-quota/cmd/quota-controller/app"
	webhookapp "github.com/karmada-quota/karmada-quota/cmd/quota-webhook/app"
	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
	"github.com/karmada-quota/karmada-quota/pkg/webhookconfig"
	"github.com/karmada-quota/karmada-quota/test/bench/internal/workload"
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
	// LimitMembers gives every quota, besides its hard, a limit on each member cluster the workloads place on
	// (spec.clusters) and one on a group of them all (spec.clusterGroups), as workload.Limits sizes them.
	LimitMembers bool

	running
}

// ClusterGroupName names the group of all member clusters that LimitMembers limits.
const ClusterGroupName = "all-members"

// Name implements System.
func (k *KarmadaQuota) Name() string {
	if k.LimitMembers {
		return "karmada-quota, cluster limits"
	}
	return "karmada-quota"
}

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
func (k *KarmadaQuota) CreateQuota(ctx context.Context, ns string, limits workload.Limits) error {
	q := &quotav1alpha1.KarmadaQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: QuotaName},
		Spec:       quotav1alpha1.KarmadaQuotaSpec{Hard: limits.Hard},
	}
	if k.LimitMembers {
		for _, cluster := range workload.Clusters {
			q.Spec.Clusters = append(q.Spec.Clusters, quotav1alpha1.ClusterLimit{Name: cluster, Hard: limits.PerCluster})
		}
		q.Spec.ClusterGroups = []quotav1alpha1.ClusterGroupLimit{{
			Name:            ClusterGroupName,
			ClusterSelector: metav1.LabelSelector{MatchLabels: workload.GroupLabels},
			Hard:            limits.Hard,
		}}
	}
	return k.CP.Client.Create(ctx, q)
}

// Status implements System: status.used, status.reserved as pending, what status.clusters says each member cluster
// uses, and the limits of spec.clusters and spec.clusterGroups with what status.clusters and status.clusterGroups
// say is used under them.
func (k *KarmadaQuota) Status(ctx context.Context, ns string) (Status, error) {
	var q quotav1alpha1.KarmadaQuota
	if err := k.CP.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: QuotaName}, &q); err != nil {
		return Status{}, err
	}
	st, err := statusOf(q.Spec.Hard, q.Status.Used, q.Status.Reserved)
	errs := []error{err}
	parse := func(list corev1.ResourceList) resources.List {
		l, err := resources.Parse(list)
		errs = append(errs, err)
		return l
	}
	st.ClusterUsed = map[string]resources.List{}
	for _, c := range q.Status.Clusters {
		st.ClusterUsed[c.Name] = parse(c.Used)
	}
	for _, c := range q.Spec.Clusters {
		st.MemberLimits = append(st.MemberLimits, MemberLimit{
			Covers: func(cluster string, _ labels.Set) bool { return cluster == c.Name },
			Hard:   parse(c.Hard),
			Used:   st.ClusterUsed[c.Name],
		})
	}
	groupUsed := map[string]corev1.ResourceList{}
	for _, g := range q.Status.ClusterGroups {
		groupUsed[g.Name] = g.Used
	}
	for _, g := range q.Spec.ClusterGroups {
		selector, err := metav1.LabelSelectorAsSelector(&g.ClusterSelector)
		errs = append(errs, err)
		st.MemberLimits = append(st.MemberLimits, MemberLimit{
			Covers: func(_ string, set labels.Set) bool { return selector.Matches(set) },
			Hard:   parse(g.Hard),
			Used:   parse(groupUsed[g.Name]),
		})
	}
	return st, errors.Join(errs...)
}

// Reservations says how many reservations the ledger of the quota of namespace ns lists, and how many it holds
// folded.
func (k *KarmadaQuota) Reservations(ctx context.Context, ns string) (listed int, folded int64, err error) {
	var stored quotav1alpha1.KarmadaQuotaLedger
	if err := k.CP.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: QuotaName}, &stored); err != nil {
		return 0, 0, client.IgnoreNotFound(err)
	}
	if stored.FoldedReservations != nil {
		folded = stored.FoldedReservations.Count
	}
	return len(stored.Reservations), folded, nil
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
	members := ""
	if k.LimitMembers {
		members = fmt.Sprintf(" Every quota also limits each member cluster the bindings are placed on (`spec.clusters`: %s) and "+
			"the group of both (`spec.clusterGroups`: %s, selecting the `Cluster` objects labelled %s, to the namespace's hard), "+
			"each cluster to the most the workload's placements put there while the namespace is within its hard. The same "+
			"writes, and every admission checks three limits more, which bind when the namespace's hard does or just after.",
			strings.Join(workload.Clusters, ", "), ClusterGroupName, labels.Set(workload.GroupLabels))
	}
	return fmt.Sprintf("cmd/quota-webhook and cmd/quota-controller built from this tree, one process each with default flags "+
		"(client QPS %v/burst %d and %v/%d; the controller's --settle-interval %s), registered with `webhookconfig.Configuration` "+
		"(failurePolicy Fail, sideEffects NoneOnDryRun, timeoutSeconds 10); one `KarmadaQuota` per namespace.%s%s",
		webhook.KubeAPIQPS, webhook.KubeAPIBurst, controller.KubeAPIQPS, controller.KubeAPIBurst, controller.SettleInterval, members, extra)
}
