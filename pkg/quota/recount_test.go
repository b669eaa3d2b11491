package quota

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

// bindingsOf lists built bindings as the controller's List returns them: by value.
func bindingsOf(ws []*utiltesting.BindingWrapper) []workv1alpha2.ResourceBinding {
	out := make([]workv1alpha2.ResourceBinding, len(ws))
	for i, w := range ws {
		out[i] = *w.Obj()
	}
	return out
}

// bindingNames are bindings of namespace ns by name, for an Observation's Unclassified.
func bindingNames(bindings ...string) map[types.NamespacedName]bool {
	out := map[types.NamespacedName]bool{}
	for _, name := range bindings {
		out[types.NamespacedName{Namespace: "ns", Name: name}] = true
	}
	return out
}

// goneUIDs is an Observation's Gone for a fixed set of deleted bindings.
func goneUIDs(uids ...types.UID) func(types.UID) bool {
	return func(uid types.UID) bool {
		for _, u := range uids {
			if u == uid {
				return true
			}
		}
		return false
	}
}

var byKey = cmpopts.SortSlices(func(a, b Key) bool {
	if a.UID != b.UID {
		return a.UID < b.UID
	}
	return a.Generation < b.Generation
})

func keys(reservations []Reservation) []Key {
	out := make([]Key, len(reservations))
	for i, r := range reservations {
		out[i] = r.Key()
	}
	return out
}

func TestObservedSettles(t *testing.T) {
	observed := Observed{UID: "uid-web", Generation: 3}
	cases := map[string]struct {
		key  Key
		want bool
	}{
		"the write is observed at its generation":    {key: Key{UID: "uid-web", Generation: 3}, want: true},
		"the write is observed at a later one":       {key: Key{UID: "uid-web", Generation: 2}, want: true},
		"the write is not observed yet":              {key: Key{UID: "uid-web", Generation: 4}},
		"another binding holds the name":             {key: Key{UID: "uid-lost-create", Generation: 1}, want: true},
		"another binding holds it, whatever its gen": {key: Key{UID: "uid-lost-create", Generation: 9}, want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := observed.Settles(tc.key); got != tc.want {
				t.Errorf("Settles(%+v) = %v, want %v", tc.key, got, tc.want)
			}
		})
	}
}

// TestRecountUsage sums what a namespace's bindings use, as one quota counts it, total and per member cluster. Every
// binding is observed at its generation, malformed and unclassified ones too: a reservation at that generation
// settles, one at the next does not.
func TestRecountUsage(t *testing.T) {
	type malformedBinding struct {
		Name string
		// Path is the field the error must name.
		Path string
	}
	cases := map[string]struct {
		quota        *utiltesting.QuotaWrapper
		bindings     []*utiltesting.BindingWrapper
		unclassified map[types.NamespacedName]bool
		wantUsed     resources.List
		// wantClusters holds canonical names and accounting units (milli-CPU, bytes).
		wantClusters map[string]resources.List
		// wantObserved is the generation each binding is observed at, by name.
		wantObserved  map[string]int64
		wantMalformed []malformedBinding
	}{
		"nothing to count": {
			quota:        utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "10")),
			wantUsed:     resources.List{},
			wantClusters: map[string]resources.List{},
		},
		"Divided, Duplicated and multi-component bindings, total and per member cluster": {
			quota: utiltesting.MakeQuota("ns", "team").Hard(list(
				"cpu", "100", "memory", "100Gi", "pods", "100", "count/deployments.apps", "10", "services", "10")),
			bindings: []*utiltesting.BindingWrapper{
				// Divided: 3 replicas over two clusters.
				utiltesting.MakeBinding("ns", "web").Requests(list("cpu", "500m", "memory", "1Gi")).Replicas(3).
					Cluster("member1", 2).Cluster("member2", 1),
				// Duplicated: every cluster runs all 2 replicas.
				utiltesting.MakeBinding("ns", "api").Requests(list("cpu", "1")).Replicas(2).
					Cluster("member1", 2).Cluster("member2", 2),
				// Multi-component: each listed cluster runs each component at its replica count.
				utiltesting.MakeBinding("ns", "flink").Resource("flink.apache.org/v1beta1", "FlinkDeployment").
					Component("jobmanager", 1, list("cpu", "1", "memory", "1Gi")).
					Component("taskmanager", 2, list("cpu", "250m", "memory", "512Mi")).
					Cluster("member2", 1).Cluster("member3", 1),
				// A Service: an object count and no compute, though listed on a cluster.
				utiltesting.MakeBinding("ns", "svc").Resource("v1", "Service").Cluster("member1", 0),
				// Unscheduled: only the object.
				utiltesting.MakeBinding("ns", "pending").Requests(list("cpu", "8")).Replicas(4),
				// Deleting: still counts until it is gone.
				utiltesting.MakeBinding("ns", "leaving").Requests(list("cpu", "100m")).Cluster("member3", 1).Deleting(),
			},
			wantUsed: resources.List{
				requestsCPU:    1500 + 4000 + 2*1500 + 100,
				requestsMemory: 3*gi + 2*(2*gi),
				pods:           3 + 4 + 2*3 + 1,
				deployments:    4,
				services:       1,
			},
			wantClusters: map[string]resources.List{
				"member1": {requestsCPU: 1000 + 2000, requestsMemory: 2 * gi, pods: 2 + 2},
				"member2": {requestsCPU: 500 + 2000 + 1500, requestsMemory: gi + 2*gi, pods: 1 + 2 + 3},
				"member3": {requestsCPU: 1500 + 100, requestsMemory: 2 * gi, pods: 3 + 1},
			},
			wantObserved: map[string]int64{"web": 1, "api": 1, "flink": 1, "svc": 1, "pending": 1, "leaving": 1},
		},
		"only limited resources are counted, and a cluster with none of them is not listed": {
			quota: utiltesting.MakeQuota("ns", "team").Hard(list("count/deployments.apps", "10")),
			bindings: []*utiltesting.BindingWrapper{
				utiltesting.MakeBinding("ns", "web").Requests(list("cpu", "1")).Cluster("member1", 2),
			},
			wantUsed:     resources.List{deployments: 1},
			wantClusters: map[string]resources.List{},
			wantObserved: map[string]int64{"web": 1},
		},
		"a scoped quota counts only the replica sets of the priority classes it selects": {
			quota: utiltesting.MakeQuota("ns", "high").Hard(list("cpu", "10", "pods", "10")).
				Scope(corev1.ScopeSelectorOpIn, "high"),
			bindings: []*utiltesting.BindingWrapper{
				utiltesting.MakeBinding("ns", "web").PriorityClass("high").Requests(list("cpu", "1")).Cluster("member1", 2),
				utiltesting.MakeBinding("ns", "batch").PriorityClass("low").Requests(list("cpu", "1")).Cluster("member1", 3),
				utiltesting.MakeBinding("ns", "plain").Requests(list("cpu", "1")).Cluster("member2", 1),
				// The component that names "high" counts; the one inheriting the binding's "low" does not.
				utiltesting.MakeBinding("ns", "mixed").PriorityClass("low").
					Component("leader", 1, list("cpu", "2")).ComponentPriorityClass("leader", "high").
					Component("worker", 2, list("cpu", "1")).
					Cluster("member2", 1),
			},
			wantUsed: resources.List{requestsCPU: 2000 + 2000, pods: 2 + 1},
			wantClusters: map[string]resources.List{
				"member1": {requestsCPU: 2000, pods: 2},
				"member2": {requestsCPU: 2000, pods: 1},
			},
			wantObserved: map[string]int64{"web": 1, "batch": 1, "plain": 1, "mixed": 1},
		},
		"unclassified bindings are observed and counted nowhere": {
			quota: utiltesting.MakeQuota("ns", "high").Hard(list("cpu", "10")).Scope(corev1.ScopeSelectorOpExists),
			bindings: []*utiltesting.BindingWrapper{
				utiltesting.MakeBinding("ns", "web").PriorityClass("high").Requests(list("cpu", "1")).Cluster("member1", 2),
				utiltesting.MakeBinding("ns", "flink").Resource("flink.apache.org/v1beta1", "FlinkDeployment").
					Requests(list("cpu", "4")).Cluster("member1", 1).Generation(3),
			},
			unclassified: bindingNames("flink"),
			wantUsed:     resources.List{requestsCPU: 2000},
			wantClusters: map[string]resources.List{"member1": {requestsCPU: 2000}},
			wantObserved: map[string]int64{"web": 1, "flink": 3},
		},
		"malformed bindings are skipped and reported; their generations are still observed": {
			quota: utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "10", "count/deployments.apps", "10")),
			bindings: []*utiltesting.BindingWrapper{
				utiltesting.MakeBinding("ns", "good").Requests(list("cpu", "1")).Cluster("member1", 1).Generation(4),
				utiltesting.MakeBinding("ns", "negative-replicas").Requests(list("cpu", "1")).Cluster("member1", -1).Generation(2),
				utiltesting.MakeBinding("ns", "no-kind").Resource("apps/v1", "").Cluster("member1", 1),
				utiltesting.MakeBinding("ns", "negative-request").Requests(list("cpu", "-1")).Cluster("member1", 1),
			},
			wantUsed: resources.List{requestsCPU: 1000, deployments: 1},
			wantClusters: map[string]resources.List{
				"member1": {requestsCPU: 1000},
			},
			wantObserved: map[string]int64{"good": 4, "negative-replicas": 2, "no-kind": 1, "negative-request": 1},
			wantMalformed: []malformedBinding{
				{Name: "negative-replicas", Path: "spec.clusters[0].replicas"},
				{Name: "no-kind", Path: "spec.resource.kind"},
				{Name: "negative-request", Path: "spec.replicaRequirements.resourceRequest[cpu]"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			q := tc.quota.Clone()
			var wantSettled, wantKept []Key
			for _, w := range tc.bindings {
				rb := w.Obj()
				generation, ok := tc.wantObserved[rb.Name]
				if !ok {
					t.Fatalf("binding %s: no generation to observe it at", rb.Name)
				}
				q.Reservation(rb, generation, nil, expires).Reservation(rb, generation+1, nil, expires)
				wantSettled = append(wantSettled, Key{UID: rb.UID, Generation: generation})
				wantKept = append(wantKept, Key{UID: rb.UID, Generation: generation + 1})
			}
			ledger := newLedger(t, q.Obj())

			got := Recount(ledger, Observation{Bindings: bindingsOf(tc.bindings), Unclassified: tc.unclassified, Now: now})

			if diff := cmp.Diff(tc.wantUsed, got.Used, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("used (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantClusters, got.Clusters, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("clusters (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantSettled, keys(got.Settled), byKey, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("settled: the bindings are not observed at their generations (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantKept, keys(ledger.Reservations()), byKey, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("kept: the bindings are observed past their generations (-want +got):\n%s", diff)
			}
			var gotMalformed []malformedBinding
			for _, m := range got.Malformed {
				path := ""
				for _, w := range tc.wantMalformed {
					if w.Name == m.Binding && m.Err != nil && strings.Contains(m.Err.Error(), w.Path) {
						path = w.Path
					}
				}
				if path == "" {
					t.Logf("malformed binding %s: %v", m.Binding, m.Err)
				}
				gotMalformed = append(gotMalformed, malformedBinding{Name: m.Binding, Path: path})
			}
			if diff := cmp.Diff(tc.wantMalformed, gotMalformed, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("malformed bindings, by name and the field their error names (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRecountSettles drops a reservation once its write is observed, its binding is gone or it expired, and keeps
// it otherwise; the folded sum goes at its expiry.
func TestRecountSettles(t *testing.T) {
	// web is observed at generation 2, using 1 CPU.
	observed := utiltesting.MakeBinding("ns", "web").Requests(list("cpu", "1")).Cluster("member1", 1).Generation(2)
	// ghost is a binding whose admitted write the controller has not observed.
	ghost := utiltesting.MakeBinding("ns", "ghost")
	ghost2 := utiltesting.MakeBinding("ns", "ghost2")
	team := utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "10"))
	later := now.Add(time.Minute)

	type reserved struct {
		rb         *utiltesting.BindingWrapper
		generation int64
		expires    time.Time
	}
	key := func(r reserved) Key { return Key{UID: r.rb.Obj().UID, Generation: r.generation} }
	cases := map[string]struct {
		reservations []reserved
		folded       *Folded
		unclassified map[types.NamespacedName]bool
		gone         []types.UID
		wantSettled  []reserved
		wantExpired  int
		wantKept     []reserved
		// wantFoldedExpired is the count of the folded sum dropped; wantFolded what is left of it.
		wantFoldedExpired int64
		wantFolded        int64
		wantHeadroom      resources.List
	}{
		"settled: the binding is observed at the reserved generation": {
			reservations: []reserved{{observed, 2, later}},
			wantSettled:  []reserved{{observed, 2, later}},
			wantHeadroom: resources.List{requestsCPU: 9000},
		},
		"settled: the binding is observed at a later generation": {
			reservations: []reserved{{observed, 1, later}},
			wantSettled:  []reserved{{observed, 1, later}},
			wantHeadroom: resources.List{requestsCPU: 9000},
		},
		"kept: the binding is observed at an earlier generation": {
			reservations: []reserved{{observed, 3, later}},
			wantKept:     []reserved{{observed, 3, later}},
			wantHeadroom: resources.List{requestsCPU: 8000},
		},
		"kept: the binding is not observed": {
			reservations: []reserved{{ghost, 1, later}},
			wantKept:     []reserved{{ghost, 1, later}},
			wantHeadroom: resources.List{requestsCPU: 8000},
		},
		"settled: the binding is gone": {
			reservations: []reserved{{ghost, 1, later}},
			gone:         []types.UID{ghost.Obj().UID},
			wantSettled:  []reserved{{ghost, 1, later}},
			wantHeadroom: resources.List{requestsCPU: 9000},
		},
		"settled: another binding holds the name (its create lost to AlreadyExists)": {
			reservations: []reserved{{observed.Clone().UID("uid-lost-create").Generation(1), 1, later}},
			wantSettled:  []reserved{{observed.Clone().UID("uid-lost-create").Generation(1), 1, later}},
			wantHeadroom: resources.List{requestsCPU: 9000},
		},
		"settled: an unclassified binding is observed all the same": {
			reservations: []reserved{{observed, 2, later}},
			unclassified: bindingNames("web"),
			wantSettled:  []reserved{{observed, 2, later}},
			wantHeadroom: resources.List{requestsCPU: 10000},
		},
		"expired: not observed, past its expiry": {
			reservations: []reserved{{ghost, 1, now.Add(-time.Second)}},
			wantSettled:  []reserved{{ghost, 1, now.Add(-time.Second)}},
			wantExpired:  1,
			wantHeadroom: resources.List{requestsCPU: 9000},
		},
		"settled, not expired: an expired reservation whose write is observed": {
			reservations: []reserved{{observed, 2, now.Add(-time.Second)}},
			wantSettled:  []reserved{{observed, 2, now.Add(-time.Second)}},
			wantHeadroom: resources.List{requestsCPU: 9000},
		},
		"kept: it expires this very second": {
			reservations: []reserved{{ghost, 1, now}},
			wantKept:     []reserved{{ghost, 1, now}},
			wantHeadroom: resources.List{requestsCPU: 8000},
		},
		"each reservation on its own": {
			reservations: []reserved{
				{observed, 2, later},
				{ghost, 1, now.Add(-time.Minute)},
				{ghost2, 1, later},
				{utiltesting.MakeBinding("ns", "gone"), 1, later},
			},
			gone:         []types.UID{"uid-ns-gone"},
			wantSettled:  []reserved{{observed, 2, later}, {ghost, 1, now.Add(-time.Minute)}, {utiltesting.MakeBinding("ns", "gone"), 1, later}},
			wantExpired:  1,
			wantKept:     []reserved{{ghost2, 1, later}},
			wantHeadroom: resources.List{requestsCPU: 8000},
		},
		"the folded sum expired: dropped": {
			folded:            &Folded{Count: 3, Amount: resources.List{requestsCPU: 3000}, Expires: now.Add(-time.Second)},
			wantFoldedExpired: 3,
			wantHeadroom:      resources.List{requestsCPU: 9000},
		},
		"the folded sum not yet expired: kept, whatever was observed": {
			reservations: []reserved{{observed, 2, later}},
			folded:       &Folded{Count: 3, Amount: resources.List{requestsCPU: 3000}, Expires: now},
			wantSettled:  []reserved{{observed, 2, later}},
			wantFolded:   3,
			wantHeadroom: resources.List{requestsCPU: 6000},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			q := team.Clone()
			for _, r := range tc.reservations {
				q.Reservation(r.rb.Obj(), r.generation, list("cpu", "1"), r.expires)
			}
			if f := tc.folded; f != nil {
				q.Folded(f.Count, list("cpu", fmt.Sprintf("%dm", f.Amount[requestsCPU])), f.Expires)
			}
			ledger := newLedger(t, q.Obj())
			var gone func(types.UID) bool
			if tc.gone != nil {
				gone = goneUIDs(tc.gone...)
			}

			got := Recount(ledger, Observation{
				Bindings: bindingsOf([]*utiltesting.BindingWrapper{observed}), Unclassified: tc.unclassified, Gone: gone, Now: now,
			})

			var wantSettled, wantKept []Key
			for _, r := range tc.wantSettled {
				wantSettled = append(wantSettled, key(r))
			}
			for _, r := range tc.wantKept {
				wantKept = append(wantKept, key(r))
			}
			if diff := cmp.Diff(wantSettled, keys(got.Settled), byKey, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("settled (-want +got):\n%s", diff)
			}
			if got.Expired != tc.wantExpired {
				t.Errorf("expired = %d, want %d", got.Expired, tc.wantExpired)
			}
			if diff := cmp.Diff(wantKept, keys(ledger.Reservations()), byKey, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("kept (-want +got):\n%s", diff)
			}
			if got.FoldedExpired.Count != tc.wantFoldedExpired {
				t.Errorf("folded expired = %d, want %d", got.FoldedExpired.Count, tc.wantFoldedExpired)
			}
			if left := ledger.Folded().Count; left != tc.wantFolded {
				t.Errorf("folded left = %d, want %d", left, tc.wantFolded)
			}
			if diff := cmp.Diff(tc.wantHeadroom, got.Headroom); diff != "" {
				t.Errorf("headroom (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRecountFoldsPastTheBound brings a list the webhook let grow past MaxReservations back within it.
func TestRecountFoldsPastTheBound(t *testing.T) {
	q := utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "1000"))
	for i := range MaxReservations + 2 {
		q.Reservation(utiltesting.MakeBinding("ns", fmt.Sprintf("rb-%03d", i)).Obj(), 1, list("cpu", "1"), expires.Add(time.Duration(i)*time.Second))
	}
	ledger := newLedger(t, q.Obj())

	got := Recount(ledger, Observation{Now: now})

	if n := len(ledger.Reservations()); n != MaxReservations {
		t.Errorf("%d reservations listed, want %d", n, MaxReservations)
	}
	if f := ledger.Folded(); f.Count != 2 || !f.Expires.Equal(expires.Add(time.Second)) {
		t.Errorf("folded = %+v, want the two oldest, expiring with the later of them", f)
	}
	if diff := cmp.Diff(resources.List{requestsCPU: 1000_000 - (MaxReservations+2)*1000}, got.Headroom); diff != "" {
		t.Errorf("headroom (-want +got): folding must not change what is reserved\n%s", diff)
	}
}

// TestRecountWaiting finds the bindings that wait on the quota, as the requeue and the metrics see them, each with
// what it still needs, and since when the longest has waited.
func TestRecountWaiting(t *testing.T) {
	refusedSince := func(name string, replicas int32, at time.Time) *utiltesting.BindingWrapper {
		w := utiltesting.MakeBinding("ns", name).Requests(list("cpu", "1")).Replicas(replicas).
			Scheduled(false, workv1alpha2.BindingReasonQuotaExceeded)
		meta.FindStatusCondition(w.Status.Conditions, workv1alpha2.Scheduled).LastTransitionTime = metav1.NewTime(at)
		return w
	}
	placed := func(name string, replicas int32) *utiltesting.BindingWrapper {
		return utiltesting.MakeBinding("ns", name).Requests(list("cpu", "1")).Replicas(replicas).Cluster("member1", replicas).
			Scheduled(true, workv1alpha2.BindingReasonSuccess)
	}
	cpuQuota := utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "4"))
	type waiter struct {
		Name string
		Need resources.List
	}
	cases := map[string]struct {
		quota        *utiltesting.QuotaWrapper
		bindings     []*utiltesting.BindingWrapper
		unclassified map[types.NamespacedName]bool
		want         []waiter
		wantSince    time.Time
	}{
		"none waits": {
			quota:    cpuQuota,
			bindings: []*utiltesting.BindingWrapper{placed("web", 2)},
		},
		"counted as the requeue sees them, in order, the oldest refusal kept": {
			quota: cpuQuota,
			bindings: []*utiltesting.BindingWrapper{
				placed("big", 4),
				refusedSince("a", 1, now.Add(-time.Minute)),
				refusedSince("b", 2, now.Add(-time.Hour)),
				refusedSince("c", 1, now),
				// Not waiting on this quota: being deleted, or refused for another reason.
				refusedSince("deleting", 1, now.Add(-2*time.Hour)).Deleting(),
				utiltesting.MakeBinding("ns", "no-fit").Requests(list("cpu", "1")).Replicas(1).
					Scheduled(false, workv1alpha2.BindingReasonNoClusterFit),
			},
			want: []waiter{
				{"a", resources.List{requestsCPU: 1000}},
				{"b", resources.List{requestsCPU: 2000}},
				{"c", resources.List{requestsCPU: 1000}},
			},
			wantSince: now.Add(-time.Hour),
		},
		"partly placed: it needs the rest": {
			quota:     cpuQuota,
			bindings:  []*utiltesting.BindingWrapper{refusedSince("web", 4, now).Cluster("member1", 3)},
			want:      []waiter{{"web", resources.List{requestsCPU: 1000}}},
			wantSince: now,
		},
		"a binding that needs nothing this quota limits waits on another one": {
			quota:    utiltesting.MakeQuota("ns", "gpus").Hard(list("nvidia.com/gpu", "1")),
			bindings: []*utiltesting.BindingWrapper{refusedSince("web", 1, now)},
		},
		"outside a scoped quota": {
			quota:    cpuQuota.Clone().Scope(corev1.ScopeSelectorOpIn, "high"),
			bindings: []*utiltesting.BindingWrapper{refusedSince("web", 1, now).PriorityClass("low")},
		},
		"an unclassified binding waits on no scoped quota": {
			quota:        cpuQuota.Clone().Scope(corev1.ScopeSelectorOpExists),
			bindings:     []*utiltesting.BindingWrapper{refusedSince("web", 1, now)},
			unclassified: bindingNames("web"),
		},
		"a binding no quota can count waits on none": {
			quota:    cpuQuota,
			bindings: []*utiltesting.BindingWrapper{refusedSince("web", 1, now).Requests(list("cpu", "-1"))},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ledger := newLedger(t, tc.quota.Obj())
			bindings := bindingsOf(tc.bindings)

			got := Recount(ledger, Observation{Bindings: bindings, Unclassified: tc.unclassified, Now: now})

			var waiting []waiter
			for _, w := range got.Waiting.Bindings {
				waiting = append(waiting, waiter{Name: w.Binding.Name, Need: w.Need})
				if i := indexOf(bindings, w.Binding); i < 0 {
					t.Errorf("waiting binding %s is a copy, not the one observed", w.Binding.Name)
				}
				// The rule is Ledger.WaitsOn's, with the usage the recount read already.
				if need, ok := ledger.WaitsOn(w.Binding); !ok || !need.Equal(w.Need) {
					t.Errorf("WaitsOn(%s) = %v, %v; the recount found it waiting for %v", w.Binding.Name, need, ok, w.Need)
				}
			}
			if diff := cmp.Diff(tc.want, waiting, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("waiting (-want +got):\n%s", diff)
			}
			if !got.Waiting.Since.Equal(tc.wantSince) {
				t.Errorf("waiting since %v, want %v", got.Waiting.Since, tc.wantSince)
			}
		})
	}
}

// indexOf is the index of the element rb points to in bindings, or -1.
func indexOf(bindings []workv1alpha2.ResourceBinding, rb *workv1alpha2.ResourceBinding) int {
	for i := range bindings {
		if &bindings[i] == rb {
			return i
		}
	}
	return -1
}

// TestRecountUntilExpiry comes back a second past the first expiry left, of a reservation or of the folded sum.
func TestRecountUntilExpiry(t *testing.T) {
	at := now.Add(700 * time.Millisecond)
	cases := map[string]struct {
		expiries []time.Time
		folded   time.Time
		want     time.Duration
	}{
		"no reservation: no requeue": {},
		"one": {
			expiries: []time.Time{now.Add(time.Minute)},
			want:     time.Minute - 700*time.Millisecond + time.Second,
		},
		"the earliest of several, in any order": {
			expiries: []time.Time{now.Add(2 * time.Minute), now.Add(30 * time.Second), now.Add(time.Minute)},
			want:     30*time.Second - 700*time.Millisecond + time.Second,
		},
		"the folded sum, when it expires first": {
			expiries: []time.Time{now.Add(2 * time.Minute)},
			folded:   now.Add(time.Minute),
			want:     time.Minute - 700*time.Millisecond + time.Second,
		},
		"the folded sum alone": {
			folded: now.Add(time.Minute),
			want:   time.Minute - 700*time.Millisecond + time.Second,
		},
		"not what the recount settled": {
			expiries: []time.Time{now.Add(-time.Minute), now.Add(time.Minute)},
			want:     time.Minute - 700*time.Millisecond + time.Second,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			q := utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "10"))
			for i, e := range tc.expiries {
				q.Reservation(utiltesting.MakeBinding("ns", fmt.Sprintf("rb-%d", i)).Obj(), 1, list("cpu", "1"), e)
			}
			if !tc.folded.IsZero() {
				q.Folded(2, list("cpu", "2"), tc.folded)
			}
			got := Recount(newLedger(t, q.Obj()), Observation{Now: at})
			if got.UntilExpiry != tc.want {
				t.Errorf("UntilExpiry = %v, want %v", got.UntilExpiry, tc.want)
			}
		})
	}
}

// TestRecountBusinessQuota: a business quota's recount counts the bindings of the namespaces it governs, each
// namespace's part apart, keeps bindings of one name in two namespaces apart (their usage, their Works, their
// reservations), and settles the reservations of a namespace it no longer governs.
func TestRecountBusinessQuota(t *testing.T) {
	business := &quotav1alpha1.KarmadaQuota{ObjectMeta: metav1.ObjectMeta{Name: "shop", UID: "uid-shop", Generation: 1},
		Spec: quotav1alpha1.KarmadaQuotaSpec{Hard: list("cpu", "20")}}
	dev := utiltesting.MakeBinding("dev", "web").Requests(list("cpu", "1")).Cluster("member1", 2)
	prod := utiltesting.MakeBinding("prod", "web").Requests(list("cpu", "1")).Cluster("member1", 3).Generation(2)
	left := utiltesting.MakeBinding("old", "web").Requests(list("cpu", "1"))
	owner := func(rb *utiltesting.BindingWrapper) quotav1alpha1.ReservationOwner {
		o := utiltesting.ReservationOwner(rb.Obj())
		o.Namespace = rb.Namespace
		return o
	}
	stored := &quotav1alpha1.KarmadaQuotaLedger{LedgerState: quotav1alpha1.LedgerState{Reservations: []quotav1alpha1.Reservation{
		// dev/web observed at generation 1: settles.
		{ReservedBy: owner(dev), Generation: 1, Reserved: list("cpu", "2"), ExpirationTime: metav1.NewTime(expires)},
		// prod/web, of the same name, reserved for generation 3, observed at 2: stays, though dev/web settles.
		{ReservedBy: owner(prod), Generation: 3, Reserved: list("cpu", "1"), ExpirationTime: metav1.NewTime(expires)},
		// old/web: its namespace left the business.
		{ReservedBy: owner(left), Generation: 5, Reserved: list("cpu", "4"), ExpirationTime: metav1.NewTime(expires)},
	}}}
	l, err := NewLedger(business, stored)
	if err != nil {
		t.Fatal(err)
	}
	l.SetNamespaces(func(ns string) bool { return ns == "dev" || ns == "prod" })
	// A Work asking more than its binding places, for prod/web only: charged to prod, not to dev's web.
	works := []ObservedWork{{
		Namespace: executionNamespace("member1"), Name: "prod-web", UID: "uid-work-prod-web", Generation: 1,
		BindingNamespace: "prod", Binding: "web", Cluster: "member1", Asks: []usage.Placed{asked("member1", "", 4, 1000)},
	}}
	got := Recount(l, Observation{Bindings: bindingsOf([]*utiltesting.BindingWrapper{dev, prod}), Works: works, Now: now})

	if diff := cmp.Diff(resources.List{requestsCPU: 6000}, got.Used); diff != "" {
		t.Errorf("used (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]resources.List{"dev": {requestsCPU: 2000}, "prod": {requestsCPU: 4000}}, got.Namespaces); diff != "" {
		t.Errorf("used by namespace (-want +got):\n%s", diff)
	}
	var left2 []string
	for _, r := range l.Reservations() {
		left2 = append(left2, r.Owner.Namespace+"/"+r.Owner.Name)
	}
	if diff := cmp.Diff([]string{"prod/web"}, left2); diff != "" {
		t.Errorf("reservations left (-want +got):\n%s", diff)
	}
}
