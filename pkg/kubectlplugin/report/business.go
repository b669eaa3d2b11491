package report

import (
	"sort"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/quota"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
)

// A business quota (KarmadaBusinessQuota) limits what the namespaces of a business use together. Two people read
// it, from two objects:
//
//   - a cluster admin reads the KarmadaBusinessQuota and its ledger, which name every namespace of the business and
//     what each uses (DescribeBusiness, BusinessRows, ListBusiness);
//   - a team reads, in its namespace, the AppliedBusinessQuota the controller keeps there: the business's limits and
//     totals and the namespace's own part, and nothing of the other namespaces, not even their names
//     (DescribeApplied, AppliedRows). The stock view role reads it; it cannot read the KarmadaBusinessQuota.
//
// Both are read through the accounting of a KarmadaQuota, as admission reads a business quota: AsKarmadaQuota for
// the former, appliedAsQuota for the latter.

// memberUsageForAdmins says why a namespace's view of a business quota shows no use per member cluster.
const memberUsageForAdmins = "the business's use per member cluster is in the KarmadaBusinessQuota, which cluster admins read"

// DescribeBusiness reports a KarmadaBusinessQuota as `describe` reports a quota, for cluster admins: its limits
// over the business's namespaces together, what each namespace uses, use per member cluster, its reservations (a
// binding's named with its namespace), and the bindings of its namespaces waiting on it. stored is its ledger
// (KarmadaBusinessQuotaLedger.AsKarmadaQuotaLedger), nil when there is none or it could not be read; bindings are
// those of the namespaces it selects.
func DescribeBusiness(b *quotav1alpha1.KarmadaBusinessQuota, stored *quotav1alpha1.KarmadaQuotaLedger, bindings []workv1alpha2.ResourceBinding) Quota {
	q := b.AsKarmadaQuota()
	out := Describe(q, quota.LedgerOf(stored, q), bindings)
	out.Kind = KindBusinessQuota
	out.Business = &Business{
		NamespaceSelector: metav1.FormatLabelSelector(&b.Spec.NamespaceSelector),
		NamespaceCount:    b.Status.NamespaceCount,
	}
	ledger, _ := quota.NewLedger(q, nil)
	for _, n := range b.Status.Namespaces {
		out.Business.Namespaces = append(out.Business.Namespaces, NamespaceUsage{
			Namespace: n.Name, Used: limitedAmounts(ledger, q.Spec.Hard, n.Used),
		})
	}
	sort.Slice(out.Business.Namespaces, func(i, j int) bool {
		return out.Business.Namespaces[i].Namespace < out.Business.Namespaces[j].Namespace
	})
	return out
}

// DescribeApplied reports a business quota as its namespace sees it, from the AppliedBusinessQuota there: the
// business's limits, used and reserved, the namespace's own part of used, the limits on member clusters (not what
// the business uses there, which the view does not carry), and the namespace's bindings waiting on it. bindings
// are the namespace's. Nothing in it names another namespace of the business.
func DescribeApplied(a *quotav1alpha1.AppliedBusinessQuota, bindings []workv1alpha2.ResourceBinding) Quota {
	q := appliedAsQuota(a)
	out := Describe(q, nil, bindings)
	out.Kind = KindAppliedBusinessQuota
	out.Namespace = a.Namespace
	out.Status = appliedStatus(a)
	ledger, err := quota.NewLedger(q, nil)
	if err != nil {
		ledger = nil
	}
	namespaceUsed := limitedAmounts(ledger, q.Spec.Hard, a.Status.NamespaceUsed)
	for i := range out.Resources {
		out.Resources[i].NamespaceUsed = orDefault(namespaceUsed[out.Resources[i].Name], "0")
	}
	out.MemberUsageUnknown = memberUsageForAdmins
	out.Clusters, out.ClusterGroups = memberLimits(ledger)
	// What is reserved is the business's, known in sum only (appliedAsQuota): no reservation to list.
	out.Reservations, out.FoldedReservations = nil, nil
	return out
}

// appliedAsQuota reads an AppliedBusinessQuota as the accounting reads a quota: the business quota's spec and its
// totals as the namespace's copy holds them, under the business quota's name. Its namespace is empty, as a business
// quota's (quota.Ledger.Business), and its kind KindAppliedBusinessQuota, which tells that its status holds no use
// per member cluster. It shares a's maps and slices: read it, do not change it.
//
// The business's reservations are in its ledger, which the namespace may not read (they name the other
// namespaces' bindings): their sum, in the view's status, is read as one folded reservation, so that what the
// accounting finds available is what admission finds.
func appliedAsQuota(a *quotav1alpha1.AppliedBusinessQuota) *quotav1alpha1.KarmadaQuota {
	q := &quotav1alpha1.KarmadaQuota{
		TypeMeta: metav1.TypeMeta{APIVersion: quotav1alpha1.GroupVersion.String(), Kind: KindAppliedBusinessQuota},
		// The business quota's generation, as far as the namespace knows it.
		ObjectMeta: metav1.ObjectMeta{Name: a.Name, Generation: a.Status.ObservedGeneration},
		Spec:       a.Spec,
		Status: quotav1alpha1.KarmadaQuotaStatus{
			Hard: a.Status.Hard, Used: a.Status.Used, Reserved: a.Status.Reserved,
			ObservedGeneration: a.Status.ObservedGeneration,
		},
	}
	for _, v := range a.Status.Reserved {
		if v.Sign() > 0 {
			q.Status.FoldedReservations = &quotav1alpha1.FoldedReservations{Count: 1, Reserved: a.Status.Reserved}
			break
		}
	}
	return q
}

// appliedStatus is what a namespace knows of its business quota's currency: the generation the controller last
// counted it for, or nothing yet.
func appliedStatus(a *quotav1alpha1.AppliedBusinessQuota) Status {
	s := Status{State: Applied, Ready: string(metav1.ConditionUnknown),
		Generation: a.Status.ObservedGeneration, ObservedGeneration: a.Status.ObservedGeneration}
	if a.Status.ObservedGeneration == 0 {
		s.State = NoStatus
	}
	return s
}

// memberLimits lists a quota's limits on member clusters and on groups of them, without use: in a namespace's view
// of a business quota, which carries the limits but not what the business uses there.
func memberLimits(ledger *quota.Ledger) ([]ClusterUsage, []ClusterGroup) {
	if ledger == nil || !ledger.LimitsMembers() {
		return nil, nil
	}
	var clusters []ClusterUsage
	for _, name := range ledger.LimitedClusters() {
		hard, _, _ := ledger.ClusterLimit(name)
		clusters = append(clusters, ClusterUsage{Cluster: name, Hard: renderOnCluster(ledger, hard)})
	}
	sort.Slice(clusters, func(i, j int) bool { return clusters[i].Cluster < clusters[j].Cluster })
	var groups []ClusterGroup
	for _, g := range ledger.Groups(nil, nil) {
		groups = append(groups, ClusterGroup{Group: g.Name, NotCounted: true, Hard: renderOnCluster(ledger, g.Hard)})
	}
	return clusters, groups
}

// limitedAmounts renders a status list whose keys mirror spec.hard (a namespace's part of a business quota) for
// every resource hard limits, 0 for those it lacks: through the ledger when the quota parses (nil when it does
// not), as written otherwise.
func limitedAmounts(ledger *quota.Ledger, hard, list corev1.ResourceList) map[string]string {
	out := make(map[string]string, len(hard))
	if ledger == nil {
		for name := range hard {
			v := list[name]
			out[string(name)] = v.String()
		}
		return out
	}
	parsed := ledger.ParseStatus(list)
	for _, name := range ledger.Hard().Names() {
		out[string(ledger.AuthorName(name))] = resources.Human(name, parsed[name])
	}
	return out
}

// BusinessRows reports every limited resource of every business quota, as Rows does quotas: one row per quota
// and resource, Namespace empty.
func BusinessRows(business []quotav1alpha1.KarmadaBusinessQuota) []Row {
	var rows []Row
	for i := range business {
		q := business[i].AsKarmadaQuota()
		state := StatusOf(q).State
		for _, r := range Describe(q, nil, nil).Resources {
			rows = append(rows, Row{
				Quota: q.Name, Kind: KindBusinessQuota, Resource: r.Name,
				Used: r.Used, Reserved: r.Reserved, Hard: r.Hard, UsedPercent: r.UsedPercent, Status: state,
			})
		}
	}
	SortByName(rows)
	return rows
}

// AppliedRows reports every limited resource of the business quotas applying to namespaces, from their
// AppliedBusinessQuotas: the business's used and hard, under the namespace it applies to.
func AppliedRows(applied []quotav1alpha1.AppliedBusinessQuota) []Row {
	var rows []Row
	for i := range applied {
		a := &applied[i]
		state := appliedStatus(a).State
		for _, r := range Describe(appliedAsQuota(a), nil, nil).Resources {
			rows = append(rows, Row{
				Namespace: a.Namespace, Quota: a.Name, Kind: KindAppliedBusinessQuota, Resource: r.Name,
				Used: r.Used, Reserved: r.Reserved, Hard: r.Hard, UsedPercent: r.UsedPercent, Status: state,
			})
		}
	}
	SortByName(rows)
	return rows
}

// ListBusiness summarises business quotas for `business` without a name, sorted by name: each one's selector, how
// many namespaces it selects, and its limited resources.
func ListBusiness(business []quotav1alpha1.KarmadaBusinessQuota) []BusinessQuota {
	out := make([]BusinessQuota, 0, len(business))
	for i := range business {
		b := &business[i]
		q := b.AsKarmadaQuota()
		out = append(out, BusinessQuota{
			Name:              b.Name,
			NamespaceSelector: metav1.FormatLabelSelector(&b.Spec.NamespaceSelector),
			NamespaceCount:    b.Status.NamespaceCount,
			Resources:         Describe(q, nil, nil).Resources,
			Status:            StatusOf(q).State,
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
