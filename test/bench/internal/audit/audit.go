// Package audit checks what a quota system did against the truth: the usage of the bindings actually stored,
// summed with pkg/usage (the same function for both quota APIs; for single-template bindings it agrees with
// Karmada's helper.CalculateResourceUsage), in all and on each member cluster. Over-admission is stored usage
// beyond hard, or beyond a limit on member clusters; drift is what a quota's status says is used, in all, on a
// member cluster or in a cluster group, minus that true sum. A quota shared by several namespaces (a business quota)
// is held to the sum over every namespace it governs, and what its status says each of them uses to that
// namespace's own.
package audit

import (
	"context"
	"errors"
	"slices"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/pkg/resources"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
	"github.com/karmada-quota/karmada-quota/test/bench/internal/systems"
)

// CPU is the resource the report counts in; memory is limited in the same proportion (workload.Hard) and
// checked alike.
const CPU corev1.ResourceName = "requests.cpu"

// Result is the audit of one workload's namespaces.
type Result struct {
	// Admitted and Hard sum CPU over the namespaces, in milli-cores.
	Admitted, Hard int64
	// Over is stored usage beyond hard, summed over namespaces (milli-cores); OverQuotas counts the quotas
	// exceeded in any resource.
	Over       int64
	OverQuotas int
	// MemberLimits counts the quotas' limits on member clusters and cluster groups; MemberOverLimits those exceeded
	// in any resource by the stored usage on the clusters they cover, and MemberOver the CPU beyond them, summed
	// (milli-cores).
	MemberLimits, MemberOverLimits int
	MemberOver                     int64
	// DriftUp is CPU a status claims used beyond the truth (blocks admissions that fit); DriftDown is true usage
	// a status misses (lets admissions past hard); both namespace-wide. DriftQuotas counts quotas whose status is
	// off in any resource: in all, on a member cluster, or in a cluster group.
	DriftUp, DriftDown int64
	DriftQuotas        int
	// Pending is CPU admitted but not yet observed (karmada-quota's reservations) left in the statuses.
	Pending int64
	// Quotas counts the quotas audited, shared ones included; Namespaces the namespaces.
	Quotas, Namespaces int
	// SharedQuotas counts the quotas audited that govern several namespaces together (business quotas), and
	// SharedNamespaces the audited namespaces they govern. A shared quota is audited over every namespace it
	// governs: over-admission and drift are its totals' against the sum over them all.
	SharedQuotas, SharedNamespaces int
	// DriftParts counts the namespaces whose part in a shared quota's status (what it says the namespace uses) is
	// off, or that it lists without governing them; each makes its quota count in DriftQuotas.
	DriftParts int
	// Ungoverned counts the audited namespaces that no quota governs, of their own or shared, under a quota system.
	Ungoverned int
}

// Settled says whether every status is exact and nothing is pending.
func (r Result) Settled() bool { return r.DriftQuotas == 0 && r.Pending == 0 }

// Truth is what a namespace's stored bindings use.
type Truth struct {
	Total resources.List
	// Clusters is the usage on each member cluster.
	Clusters map[string]resources.List
}

// True is the usage of namespace ns's stored bindings, read from the apiserver.
func True(ctx context.Context, c client.Client, ns string) (Truth, error) {
	var list workv1alpha2.ResourceBindingList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return Truth{}, err
	}
	t := Truth{Total: resources.List{}, Clusters: map[string]resources.List{}}
	for i := range list.Items {
		u, err := usage.Of(&list.Items[i])
		if err != nil {
			return Truth{}, err
		}
		charge := u.Charge(usage.Selector{})
		t.Total.Add(charge.Total)
		for cluster, l := range charge.Clusters {
			if t.Clusters[cluster] == nil {
				t.Clusters[cluster] = resources.List{}
			}
			t.Clusters[cluster].Add(l)
		}
	}
	return t, nil
}

// clusterLabels are the labels of the member clusters that have joined, by name: what a cluster group selects.
func clusterLabels(ctx context.Context, c client.Client) (map[string]labels.Set, error) {
	var list clusterv1alpha1.ClusterList
	if err := c.List(ctx, &list); err != nil {
		return nil, err
	}
	out := make(map[string]labels.Set, len(list.Items))
	for _, cluster := range list.Items {
		out[cluster.Name] = cluster.Labels
	}
	return out, nil
}

// Audit compares every namespace's quota with its bindings, and every quota shared by several namespaces
// (karmada-quota's business quotas) that governs one of them at least with the bindings of all it governs. Without a
// quota system it only sums what was admitted.
func Audit(ctx context.Context, c client.Client, sys systems.System, namespaces []string) (Result, error) {
	var r Result
	truths := map[string]Truth{}
	truthOf := func(ns string) (Truth, error) {
		if t, ok := truths[ns]; ok {
			return t, nil
		}
		t, err := True(ctx, c, ns)
		if err == nil {
			truths[ns] = t
		}
		return t, err
	}
	// Read once per audit, when a quota first limits member clusters: the benchmark never relabels them.
	var joined map[string]labels.Set
	joinedLabels := func() (map[string]labels.Set, error) {
		var err error
		if joined == nil {
			joined, err = clusterLabels(ctx, c)
		}
		return joined, err
	}
	governed := map[string]bool{}
	for _, ns := range namespaces {
		t, err := truthOf(ns)
		if err != nil {
			return r, err
		}
		r.Namespaces++
		r.Admitted += t.Total[CPU]
		if !sys.Enforcing() {
			continue
		}
		st, err := sys.Status(ctx, ns)
		if errors.Is(err, systems.ErrNoQuota) {
			continue
		}
		if err != nil {
			return r, err
		}
		governed[ns] = true
		if err := r.check(st, t, false, joinedLabels); err != nil {
			return r, err
		}
	}
	if shared, ok := sys.(systems.SharedQuotas); ok && sys.Enforcing() {
		statuses, err := shared.SharedStatuses(ctx, namespaces)
		if err != nil {
			return r, err
		}
		audited := map[string]bool{}
		for _, ns := range namespaces {
			audited[ns] = true
		}
		for _, st := range statuses {
			r.SharedQuotas++
			total := Truth{Total: resources.List{}, Clusters: map[string]resources.List{}}
			partsDrift := false
			for _, ns := range st.Namespaces {
				t, err := truthOf(ns)
				if err != nil {
					return r, err
				}
				total.add(t)
				if audited[ns] {
					governed[ns] = true
					r.SharedNamespaces++
				}
				// The namespace's part, which the status must list with every resource the quota limits.
				part, listed := st.NamespaceUsed[ns]
				off := !listed
				for name := range st.Hard {
					off = off || part[name] != t.Total[name]
				}
				if off {
					r.DriftParts++
					partsDrift = true
				}
			}
			for ns := range st.NamespaceUsed {
				if !slices.Contains(st.Namespaces, ns) {
					// A namespace the quota no longer governs, still listed.
					r.DriftParts++
					partsDrift = true
				}
			}
			if err := r.check(st.Status, total, partsDrift, joinedLabels); err != nil {
				return r, err
			}
		}
	}
	if sys.Enforcing() {
		r.Ungoverned = len(namespaces) - len(governed)
	}
	return r, nil
}

// add adds another namespace's truth.
func (t Truth) add(o Truth) {
	t.Total.Add(o.Total)
	for cluster, l := range o.Clusters {
		if t.Clusters[cluster] == nil {
			t.Clusters[cluster] = resources.List{}
		}
		t.Clusters[cluster].Add(l)
	}
}

// check audits one quota: st is what its status says, t the truth over the namespaces it governs, drift whether
// something else of its status is already known to be off.
func (r *Result) check(st systems.Status, t Truth, drift bool, joinedLabels func() (map[string]labels.Set, error)) error {
	truth := t.Total
	r.Quotas++
	r.Hard += st.Hard[CPU]
	over := false
	for name, hard := range st.Hard {
		if truth[name] > hard {
			over = true
			if name == CPU {
				r.Over += truth[name] - hard
			}
		}
		d := st.Used[name] - truth[name]
		if d != 0 {
			drift = true
		}
		if name == CPU {
			if d > 0 {
				r.DriftUp += d
			} else {
				r.DriftDown -= d
			}
		}
	}
	if over {
		r.OverQuotas++
	}
	if st.ClusterUsed != nil && clustersDrift(st, t) {
		drift = true
	}
	if len(st.MemberLimits) > 0 {
		joined, err := joinedLabels()
		if err != nil {
			return err
		}
		for _, limit := range st.MemberLimits {
			r.MemberLimits++
			covered := resources.List{}
			for cluster, l := range t.Clusters {
				if limit.Covers(cluster, joined[cluster]) {
					covered.Add(l)
				}
			}
			exceeded := false
			for name, hard := range limit.Hard {
				if covered[name] > hard {
					exceeded = true
					if name == CPU {
						r.MemberOver += covered[name] - hard
					}
				}
				if limit.Used[name] != covered[name] {
					drift = true
				}
			}
			if exceeded {
				r.MemberOverLimits++
			}
		}
	}
	if drift {
		r.DriftQuotas++
	}
	r.Pending += st.Pending[CPU]
	return nil
}

// clustersDrift says whether what the status says is used on some member cluster differs from the truth there, in
// a resource the quota limits. A cluster missing from either side uses nothing there.
func clustersDrift(st systems.Status, t Truth) bool {
	for _, byCluster := range []map[string]resources.List{st.ClusterUsed, t.Clusters} {
		for cluster := range byCluster {
			for name := range st.Hard {
				if st.ClusterUsed[cluster][name] != t.Clusters[cluster][name] {
					return true
				}
			}
		}
	}
	return false
}

// Settling is how long the statuses took to become exact, and to have nothing pending.
type Settling struct {
	// Exact says every status's used equalled the truth before the timeout, ExactAfter when that was first seen.
	Exact      bool
	ExactAfter time.Duration
	// Clear says nothing was pending either (karmada-quota's reservations all settled), ClearAfter when.
	Clear      bool
	ClearAfter time.Duration
}

// Settle waits, at most timeout, until every status is exact with nothing pending: the controllers have caught
// up. A reservation for a write that failed after admission (the apiserver timed the webhook call out) is only
// released when it expires, so nothing pending may take longer than the timeout; Settling says which held.
func Settle(ctx context.Context, c client.Client, sys systems.System, namespaces []string, timeout time.Duration) (Settling, error) {
	var s Settling
	start := time.Now()
	for {
		r, err := Audit(ctx, c, sys, namespaces)
		if err != nil {
			return s, err
		}
		if r.DriftQuotas == 0 && !s.Exact {
			s.Exact, s.ExactAfter = true, time.Since(start)
		}
		if r.Settled() {
			s.Clear, s.ClearAfter = true, time.Since(start)
			return s, nil
		}
		if time.Since(start) > timeout {
			return s, nil
		}
		select {
		case <-ctx.Done():
			return s, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}
