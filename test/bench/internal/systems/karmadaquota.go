package systems

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	// Business puts each workload's namespaces under one KarmadaBusinessQuota instead of a KarmadaQuota each
	// (workload.SharedQuotaSystem): labelled BusinessLabel=<the business quota's name>, which its namespace selector
	// chooses, it allows what their quotas would together.
	Business bool

	// businesses are the namespaces of each business quota created, by its name; groupOf the reverse.
	businesses map[string][]string
	groupOf    map[string]string
	mu         sync.Mutex

	running
}

// ClusterGroupName names the group of all member clusters that LimitMembers limits.
const ClusterGroupName = "all-members"

// BusinessLabel labels a namespace with the name of the business quota (KarmadaQuota.Business) that selects it.
const BusinessLabel = "bench.karmada-quota.io/business"

// Name implements System.
func (k *KarmadaQuota) Name() string {
	name := "karmada-quota"
	if k.Business {
		name += ", business quota"
	}
	if k.LimitMembers {
		name += ", cluster limits"
	}
	return name
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
	if k.Business {
		return fmt.Errorf("namespace %s: this configuration's quotas are business quotas, shared by a workload's namespaces", ns)
	}
	return k.CP.Client.Create(ctx, &quotav1alpha1.KarmadaQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: QuotaName},
		Spec:       k.spec(limits),
	})
}

// spec is the spec of a quota with limits: hard, and with LimitMembers each member cluster's and the group's.
func (k *KarmadaQuota) spec(limits workload.Limits) quotav1alpha1.KarmadaQuotaSpec {
	spec := quotav1alpha1.KarmadaQuotaSpec{Hard: limits.Hard}
	if k.LimitMembers {
		for _, cluster := range workload.Clusters {
			spec.Clusters = append(spec.Clusters, quotav1alpha1.ClusterLimit{Name: cluster, Hard: limits.PerCluster})
		}
		spec.ClusterGroups = []quotav1alpha1.ClusterGroupLimit{{
			Name:            ClusterGroupName,
			ClusterSelector: metav1.LabelSelector{MatchLabels: workload.GroupLabels},
			Hard:            limits.Hard,
		}}
	}
	return spec
}

// SharesQuotas implements workload.SharedQuotaSystem.
func (k *KarmadaQuota) SharesQuotas() bool { return k.Business }

// SharedLabels implements workload.SharedQuotaSystem.
func (*KarmadaQuota) SharedLabels(group string) map[string]string {
	return map[string]string{BusinessLabel: group}
}

// CreateSharedQuota implements workload.SharedQuotaSystem: the KarmadaBusinessQuota named group, selecting the
// namespaces labelled BusinessLabel=group.
func (k *KarmadaQuota) CreateSharedQuota(ctx context.Context, group string, namespaces []string, limits workload.Limits) error {
	q := &quotav1alpha1.KarmadaBusinessQuota{
		ObjectMeta: metav1.ObjectMeta{Name: group},
		Spec: quotav1alpha1.KarmadaBusinessQuotaSpec{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: k.SharedLabels(group)},
			KarmadaQuotaSpec:  k.spec(limits),
		},
	}
	if err := k.CP.Client.Create(ctx, q); err != nil {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.businesses == nil {
		k.businesses, k.groupOf = map[string][]string{}, map[string]string{}
	}
	k.businesses[group] = slices.Clone(namespaces)
	for _, ns := range namespaces {
		k.groupOf[ns] = group
	}
	return nil
}

// Status implements System: status.used, status.reserved as pending, what status.clusters says each member cluster
// uses, and the limits of spec.clusters and spec.clusterGroups with what status.clusters and status.clusterGroups
// say is used under them. With Business, a namespace without a KarmadaQuota has ErrNoQuota: a business quota
// governs it (SharedStatuses).
func (k *KarmadaQuota) Status(ctx context.Context, ns string) (Status, error) {
	var q quotav1alpha1.KarmadaQuota
	if err := k.CP.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: QuotaName}, &q); err != nil {
		if k.Business && apierrors.IsNotFound(err) {
			return Status{}, ErrNoQuota
		}
		return Status{}, err
	}
	return quotaStatus(&q)
}

// SharedStatuses implements SharedQuotas: every KarmadaBusinessQuota whose namespace selector chooses one of
// namespaces at least, read as quotaStatus reads a KarmadaQuota (the totals over its namespaces), with all the
// namespaces it chooses now and what status.namespaces says each uses.
func (k *KarmadaQuota) SharedStatuses(ctx context.Context, namespaces []string) ([]SharedStatus, error) {
	var list quotav1alpha1.KarmadaBusinessQuotaList
	if err := k.CP.Client.List(ctx, &list); err != nil {
		return nil, err
	}
	var out []SharedStatus
	for i := range list.Items {
		b := &list.Items[i]
		chosen, err := k.chosenBy(ctx, b)
		if err != nil {
			return nil, err
		}
		if !slices.ContainsFunc(namespaces, func(ns string) bool { _, found := slices.BinarySearch(chosen, ns); return found }) {
			continue
		}
		st, err := quotaStatus(b.AsKarmadaQuota())
		shared := SharedStatus{Name: b.Name, Status: st, Namespaces: chosen, NamespaceUsed: map[string]resources.List{}}
		errs := []error{err}
		for _, n := range b.Status.Namespaces {
			used, err := resources.Parse(n.Used)
			errs = append(errs, err)
			shared.NamespaceUsed[n.Name] = used
		}
		if err := errors.Join(errs...); err != nil {
			return nil, fmt.Errorf("business quota %s: %w", b.Name, err)
		}
		out = append(out, shared)
	}
	return out, nil
}

// chosenBy lists the namespaces a business quota's selector chooses now, sorted.
func (k *KarmadaQuota) chosenBy(ctx context.Context, b *quotav1alpha1.KarmadaBusinessQuota) ([]string, error) {
	sel, err := metav1.LabelSelectorAsSelector(&b.Spec.NamespaceSelector)
	if err != nil {
		return nil, fmt.Errorf("business quota %s: %w", b.Name, err)
	}
	var list corev1.NamespaceList
	if err := k.CP.Client.List(ctx, &list, client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, err
	}
	chosen := make([]string, 0, len(list.Items))
	for _, ns := range list.Items {
		chosen = append(chosen, ns.Name)
	}
	slices.Sort(chosen)
	return chosen, nil
}

// quotaStatus reads a KarmadaQuota, or a KarmadaBusinessQuota as one, as Status says.
func quotaStatus(q *quotav1alpha1.KarmadaQuota) (Status, error) {
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
// folded; with Business, the ledger of the business quota it created over ns (one GET, as without).
func (k *KarmadaQuota) Reservations(ctx context.Context, ns string) (listed int, folded int64, err error) {
	k.mu.Lock()
	group, business := k.groupOf[ns]
	k.mu.Unlock()
	var state *quotav1alpha1.LedgerState
	if business {
		var stored quotav1alpha1.KarmadaBusinessQuotaLedger
		if err := k.CP.Client.Get(ctx, types.NamespacedName{Name: group}, &stored); err != nil {
			return 0, 0, client.IgnoreNotFound(err)
		}
		state = &stored.LedgerState
	} else {
		var stored quotav1alpha1.KarmadaQuotaLedger
		if err := k.CP.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: QuotaName}, &stored); err != nil {
			return 0, 0, client.IgnoreNotFound(err)
		}
		state = &stored.LedgerState
	}
	if state.FoldedReservations != nil {
		folded = state.FoldedReservations.Count
	}
	return len(state.Reservations), folded, nil
}

// ControllerWrote implements System: the controller mirrors spec.hard into status.hard; the webhook never
// writes it. With Business, the business quota selecting ns must have it, and list ns among its namespaces.
func (k *KarmadaQuota) ControllerWrote(ctx context.Context, ns string) (bool, error) {
	if k.Business {
		var list quotav1alpha1.KarmadaBusinessQuotaList
		if err := k.CP.Client.List(ctx, &list); err != nil {
			return false, err
		}
		for i := range list.Items {
			b := &list.Items[i]
			chosen, err := k.chosenBy(ctx, b)
			if err != nil {
				return false, err
			}
			if _, found := slices.BinarySearch(chosen, ns); !found {
				continue
			}
			listed := slices.ContainsFunc(b.Status.Namespaces, func(n quotav1alpha1.NamespaceUsage) bool { return n.Name == ns })
			return len(b.Status.Hard) > 0 && listed, nil
		}
		return false, nil
	}
	var q quotav1alpha1.KarmadaQuota
	if err := k.CP.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: QuotaName}, &q); err != nil {
		return false, err
	}
	return len(q.Status.Hard) > 0, nil
}

// Stop implements System. It deletes the business quotas it created, once the webhook is unregistered: each is
// listed at every admission, in any namespace, and recounted on every namespace event, so left behind they would
// weigh on the configurations after this one. (Their ledgers and views stay: envtest runs no garbage collector,
// and nothing reads them.)
func (k *KarmadaQuota) Stop(ctx context.Context) error {
	err := k.stop(ctx, k.CP.Client)
	k.mu.Lock()
	defer k.mu.Unlock()
	for name := range k.businesses {
		q := &quotav1alpha1.KarmadaBusinessQuota{ObjectMeta: metav1.ObjectMeta{Name: name}}
		err = errors.Join(err, client.IgnoreNotFound(k.CP.Client.Delete(ctx, q)))
	}
	k.businesses, k.groupOf = nil, nil
	return err
}

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
	quotas := "one `KarmadaQuota` per namespace."
	if k.Business {
		quotas = fmt.Sprintf("no `KarmadaQuota`: one `KarmadaBusinessQuota` per workload instead, over all its namespaces, "+
			"which are labelled `%s=<the business quota's name>` and chosen by that label (`spec.namespaceSelector`), its hard "+
			"the sum of what their quotas would have, so that it admits as many writes. Admission batches the writes of the "+
			"namespaces sharing it into one compare-and-swap of its ledger (`KarmadaBusinessQuotaLedger`); the controller "+
			"recounts it over the namespaces and writes `status.used` and each namespace's part (`status.namespaces`).", BusinessLabel)
	}
	return fmt.Sprintf("cmd/quota-webhook and cmd/quota-controller built from this tree, one process each with default flags "+
		"(client QPS %v/burst %d and %v/%d; the controller's --settle-interval %s), registered with `webhookconfig.Configuration` "+
		"(failurePolicy Fail, sideEffects NoneOnDryRun, timeoutSeconds 10); %s%s%s",
		webhook.KubeAPIQPS, webhook.KubeAPIBurst, controller.KubeAPIQPS, controller.KubeAPIBurst, controller.SettleInterval, quotas, members, extra)
}
