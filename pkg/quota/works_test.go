package quota

import (
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

const daemonsets corev1.ResourceName = "count/daemonsets.apps"

// executionNamespace is where Karmada puts the Works for a member cluster.
func executionNamespace(cluster string) string { return "karmada-es-" + cluster }

// observedWork is the Work of binding on cluster, named after the binding as Karmada names it, observed at
// generation, asking asks of its member.
func observedWork(binding, cluster string, generation int64, asks ...usage.Placed) ObservedWork {
	return ObservedWork{
		Namespace:        executionNamespace(cluster),
		Name:             binding,
		UID:              types.UID("uid-work-" + cluster + "-" + binding),
		Generation:       generation,
		BindingNamespace: "ns",
		Binding:          binding,
		Cluster:          cluster,
		Asks:             asks,
	}
}

// asked is a replica set a Work asks its member for: replicas × cpu (milli-CPU), at class ("" for none).
func asked(cluster, class string, replicas, milliCPU int64) usage.Placed {
	return usage.Placed{Cluster: cluster, PriorityClass: class, Replicas: replicas, PerReplica: resources.List{requestsCPU: milliCPU}}
}

// workOwner names a Work as the owner of a reservation, as the Work webhook does.
func workOwner(namespace, name string, uid types.UID) quotav1alpha1.ReservationOwner {
	return quotav1alpha1.ReservationOwner{
		APIVersion: "work.karmada.io/v1alpha1", Kind: KindWork, Namespace: namespace, Name: name, UID: uid,
	}
}

// reserveFor adds a reservation of owner's write producing generation to q's status, as a webhook records it.
func reserveFor(q *utiltesting.QuotaWrapper, owner quotav1alpha1.ReservationOwner, generation int64, reserved corev1.ResourceList, expires time.Time) {
	q.Status.Reservations = append(q.Status.Reservations, quotav1alpha1.Reservation{
		ReservedBy: owner, Generation: generation, Reserved: reserved.DeepCopy(), ExpirationTime: metav1.NewTime(expires),
	})
}

// TestRecountWorks charges, on each member, the larger of what a binding places there and what its Works ask there.
func TestRecountWorks(t *testing.T) {
	// web places 2 × 1 CPU on member1 and member2.
	web := utiltesting.MakeBinding("ns", "web").Requests(list("cpu", "1")).Replicas(2).
		Cluster("member1", 2).Cluster("member2", 2)
	// ds is a DaemonSet: its binding places no replicas, its Works a pod per node of their member.
	ds := utiltesting.MakeBinding("ns", "ds").Resource("apps/v1", "DaemonSet").Requests(list("cpu", "3")).
		Cluster("member1", 0).Cluster("member2", 0)
	unscoped := utiltesting.MakeQuota("ns", "team").Hard(list(
		"cpu", "100", "pods", "100", "count/deployments.apps", "10", "count/daemonsets.apps", "10"))

	cases := map[string]struct {
		quota        *utiltesting.QuotaWrapper
		bindings     []*utiltesting.BindingWrapper
		unclassified map[types.NamespacedName]bool
		works        []ObservedWork
		wantUsed     resources.List
		wantClusters map[string]resources.List
	}{
		"Works asking what is placed change nothing": {
			quota:    unscoped,
			bindings: []*utiltesting.BindingWrapper{web},
			works: []ObservedWork{
				observedWork("web", "member1", 1, asked("member1", "", 2, 1000)),
				observedWork("web", "member2", 1, asked("member2", "", 2, 1000)),
			},
			wantUsed: resources.List{requestsCPU: 4000, pods: 4, deployments: 1, daemonsets: 0},
			wantClusters: map[string]resources.List{
				"member1": {requestsCPU: 2000, pods: 2},
				"member2": {requestsCPU: 2000, pods: 2},
			},
		},
		// An OverridePolicy raising the request on member1: 2 × 2 CPU run there.
		"a Work raising requests on one member is charged there": {
			quota:    unscoped,
			bindings: []*utiltesting.BindingWrapper{web},
			works: []ObservedWork{
				observedWork("web", "member1", 1, asked("member1", "", 2, 2000)),
				observedWork("web", "member2", 1, asked("member2", "", 2, 1000)),
			},
			wantUsed: resources.List{requestsCPU: 4000 + 2000, pods: 4, deployments: 1, daemonsets: 0},
			wantClusters: map[string]resources.List{
				"member1": {requestsCPU: 4000, pods: 2},
				"member2": {requestsCPU: 2000, pods: 2},
			},
		},
		"a Work lowering requests keeps the placement": {
			quota:    unscoped,
			bindings: []*utiltesting.BindingWrapper{web},
			works:    []ObservedWork{observedWork("web", "member1", 1, asked("member1", "", 1, 500))},
			wantUsed: resources.List{requestsCPU: 4000, pods: 4, deployments: 1, daemonsets: 0},
			wantClusters: map[string]resources.List{
				"member1": {requestsCPU: 2000, pods: 2},
				"member2": {requestsCPU: 2000, pods: 2},
			},
		},
		"a DaemonSet's Works are charged where the binding places nothing": {
			quota:    unscoped,
			bindings: []*utiltesting.BindingWrapper{ds},
			works: []ObservedWork{
				observedWork("ds", "member1", 1, asked("member1", "", 2, 3000)),
				observedWork("ds", "member2", 1, asked("member2", "", 4, 3000)),
			},
			wantUsed: resources.List{requestsCPU: 18000, pods: 6, deployments: 0, daemonsets: 1},
			wantClusters: map[string]resources.List{
				"member1": {requestsCPU: 6000, pods: 2},
				"member2": {requestsCPU: 12000, pods: 4},
			},
		},
		"several Works of one binding on one member are summed before the max": {
			quota:    unscoped,
			bindings: []*utiltesting.BindingWrapper{web},
			works: []ObservedWork{
				observedWork("web", "member1", 1, asked("member1", "", 2, 1000)),
				{
					Namespace: executionNamespace("member1"), Name: "web-extra", UID: "uid-work-web-extra", Generation: 1,
					BindingNamespace: "ns", Binding: "web", Cluster: "member1", Asks: []usage.Placed{asked("member1", "", 1, 1000)},
				},
			},
			wantUsed: resources.List{requestsCPU: 5000, pods: 5, deployments: 1, daemonsets: 0},
			wantClusters: map[string]resources.List{
				"member1": {requestsCPU: 3000, pods: 3},
				"member2": {requestsCPU: 2000, pods: 2},
			},
		},
		"each binding is charged its own Works": {
			quota:    unscoped,
			bindings: []*utiltesting.BindingWrapper{web, ds},
			works: []ObservedWork{
				observedWork("ds", "member1", 1, asked("member1", "", 2, 3000)),
				observedWork("web", "member1", 1, asked("member1", "", 2, 2000)),
			},
			wantUsed: resources.List{requestsCPU: 4000 + 2000 + 6000, pods: 4 + 2, deployments: 1, daemonsets: 1},
			wantClusters: map[string]resources.List{
				"member1": {requestsCPU: 4000 + 6000, pods: 2 + 2},
				"member2": {requestsCPU: 2000, pods: 2},
			},
		},
		"a Work of a binding not observed is not counted": {
			quota:    unscoped,
			bindings: []*utiltesting.BindingWrapper{web},
			works:    []ObservedWork{observedWork("gone", "member3", 1, asked("member3", "", 5, 5000))},
			wantUsed: resources.List{requestsCPU: 4000, pods: 4, deployments: 1, daemonsets: 0},
			wantClusters: map[string]resources.List{
				"member1": {requestsCPU: 2000, pods: 2},
				"member2": {requestsCPU: 2000, pods: 2},
			},
		},
		"the Works of an unclassified binding are not counted": {
			quota:        utiltesting.MakeQuota("ns", "high").Hard(list("cpu", "100", "pods", "100")).Scope(corev1.ScopeSelectorOpExists),
			bindings:     []*utiltesting.BindingWrapper{web},
			unclassified: bindingNames("web"),
			works:        []ObservedWork{observedWork("web", "member3", 1, asked("member3", "high", 5, 5000))},
			wantUsed:     resources.List{},
			wantClusters: map[string]resources.List{},
		},
		"the Works of a malformed binding are not counted": {
			quota:        utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "100")),
			bindings:     []*utiltesting.BindingWrapper{web.Clone().Requests(list("cpu", "-1"))},
			works:        []ObservedWork{observedWork("web", "member1", 1, asked("member1", "", 5, 5000))},
			wantUsed:     resources.List{},
			wantClusters: map[string]resources.List{},
		},
		"only limited resources of the Works are counted": {
			quota:    utiltesting.MakeQuota("ns", "team").Hard(list("pods", "100")),
			bindings: []*utiltesting.BindingWrapper{web},
			works:    []ObservedWork{observedWork("web", "member1", 1, asked("member1", "", 3, 9000))},
			wantUsed: resources.List{pods: 5},
			wantClusters: map[string]resources.List{
				"member1": {pods: 3},
				"member2": {pods: 2},
			},
		},
		"Work sets are counted at the class they carry, not their binding's": {
			quota:    utiltesting.MakeQuota("ns", "low").Hard(list("cpu", "100")).Scope(corev1.ScopeSelectorOpIn, "low"),
			bindings: []*utiltesting.BindingWrapper{web.Clone().PriorityClass("high")},
			works: []ObservedWork{observedWork("web", "member1", 1,
				asked("member1", "low", 1, 3000), asked("member1", "", 2, 2000))},
			wantUsed:     resources.List{requestsCPU: 3000},
			wantClusters: map[string]resources.List{"member1": {requestsCPU: 3000}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ledger := newLedger(t, tc.quota.Obj())
			works := cloneWorks(tc.works)

			got := Recount(ledger, Observation{Bindings: bindingsOf(tc.bindings), Unclassified: tc.unclassified, Works: works, Now: now})

			if diff := cmp.Diff(tc.wantUsed, got.Used, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("used (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantClusters, got.Clusters, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("clusters (-want +got):\n%s", diff)
			}
			// The Works come from the controller's cache: the recount only reads them.
			if diff := cmp.Diff(tc.works, works); diff != "" {
				t.Errorf("Recount modified the observed Works (-before +after):\n%s", diff)
			}
		})
	}
}

func cloneWorks(works []ObservedWork) []ObservedWork {
	if works == nil {
		return nil
	}
	out := make([]ObservedWork, len(works))
	for i, w := range works {
		asks := make([]usage.Placed, len(w.Asks))
		for j, p := range w.Asks {
			p.PerReplica = p.PerReplica.Clone()
			asks[j] = p
		}
		w.Asks = asks
		out[i] = w
	}
	return out
}

// TestRecountSettlesWorks settles a reservation a Work's admission made as binding reservations settle against
// bindings: once the Work is observed at the reserved generation or later, another Work holds its namespace and
// name, it is gone, or it expired. Bindings and Works do not settle each other's, even of the same name.
func TestRecountSettlesWorks(t *testing.T) {
	later := now.Add(time.Minute)
	// The Work of web on member1 is observed at generation 3; the binding web at generation 2.
	binding := utiltesting.MakeBinding("ns", "web").Requests(list("cpu", "1")).Cluster("member1", 1).Generation(2)
	work := observedWork("web", "member1", 3, asked("member1", "", 1, 1000))
	ownerOfWork := workOwner(work.Namespace, work.Name, work.UID)

	type reserved struct {
		owner      quotav1alpha1.ReservationOwner
		generation int64
		expires    time.Time
	}
	key := func(r reserved) Key { return Key{UID: r.owner.UID, Generation: r.generation} }
	cases := map[string]struct {
		reservations []reserved
		// works replaces the observed Works when set; noWorks observes none.
		works        []ObservedWork
		noWorks      bool
		gone         []types.UID
		wantSettled  []reserved
		wantExpired  int
		wantKept     []reserved
		wantHeadroom resources.List
	}{
		"settled: the Work is observed at the reserved generation": {
			reservations: []reserved{{ownerOfWork, 3, later}},
			wantSettled:  []reserved{{ownerOfWork, 3, later}},
			wantHeadroom: resources.List{requestsCPU: 9000},
		},
		"settled: the Work is observed at a later generation": {
			reservations: []reserved{{ownerOfWork, 2, later}},
			wantSettled:  []reserved{{ownerOfWork, 2, later}},
			wantHeadroom: resources.List{requestsCPU: 9000},
		},
		"kept: the Work is observed at an earlier generation": {
			reservations: []reserved{{ownerOfWork, 4, later}},
			wantKept:     []reserved{{ownerOfWork, 4, later}},
			wantHeadroom: resources.List{requestsCPU: 8000},
		},
		"kept: the Work is not observed, before its expiry": {
			reservations: []reserved{{ownerOfWork, 1, later}},
			noWorks:      true,
			wantKept:     []reserved{{ownerOfWork, 1, later}},
			wantHeadroom: resources.List{requestsCPU: 8000},
		},
		"kept: it expires this very second": {
			reservations: []reserved{{ownerOfWork, 1, now}},
			noWorks:      true,
			wantKept:     []reserved{{ownerOfWork, 1, now}},
			wantHeadroom: resources.List{requestsCPU: 8000},
		},
		"settled: another Work (another UID) holds its namespace and name": {
			reservations: []reserved{{workOwner(work.Namespace, work.Name, "uid-lost-create"), 1, later}},
			wantSettled:  []reserved{{workOwner(work.Namespace, work.Name, "uid-lost-create"), 1, later}},
			wantHeadroom: resources.List{requestsCPU: 9000},
		},
		"kept: a Work of the same name in another execution namespace is another Work": {
			reservations: []reserved{{workOwner(executionNamespace("member2"), work.Name, "uid-work-member2-web"), 1, later}},
			wantKept:     []reserved{{workOwner(executionNamespace("member2"), work.Name, "uid-work-member2-web"), 1, later}},
			wantHeadroom: resources.List{requestsCPU: 8000},
		},
		"settled: the Work is gone": {
			reservations: []reserved{{ownerOfWork, 1, later}},
			noWorks:      true,
			gone:         []types.UID{work.UID},
			wantSettled:  []reserved{{ownerOfWork, 1, later}},
			wantHeadroom: resources.List{requestsCPU: 9000},
		},
		"expired: not observed, past its expiry": {
			reservations: []reserved{{ownerOfWork, 1, now.Add(-time.Second)}},
			noWorks:      true,
			wantSettled:  []reserved{{ownerOfWork, 1, now.Add(-time.Second)}},
			wantExpired:  1,
			wantHeadroom: resources.List{requestsCPU: 9000},
		},
		"settled, not expired: an expired reservation whose Work is observed": {
			reservations: []reserved{{ownerOfWork, 3, now.Add(-time.Second)}},
			wantSettled:  []reserved{{ownerOfWork, 3, now.Add(-time.Second)}},
			wantHeadroom: resources.List{requestsCPU: 9000},
		},
		// The Work's binding is not among the observed ones: its Work is observed all the same.
		"settled: the Work of a binding not observed": {
			reservations: []reserved{{workOwner(executionNamespace("member1"), "orphan", "uid-orphan"), 1, later}},
			works: []ObservedWork{{
				Namespace: executionNamespace("member1"), Name: "orphan", UID: "uid-orphan", Generation: 1,
				BindingNamespace: "ns", Binding: "no-such-binding", Cluster: "member1",
			}},
			wantSettled:  []reserved{{workOwner(executionNamespace("member1"), "orphan", "uid-orphan"), 1, later}},
			wantHeadroom: resources.List{requestsCPU: 9000},
		},
		// The binding web (another UID) holds the name "web": were kinds confused, it would settle the Work's.
		"kept: a binding of the Work's name does not settle the Work's reservation": {
			reservations: []reserved{{ownerOfWork, 1, later}},
			noWorks:      true,
			wantKept:     []reserved{{ownerOfWork, 1, later}},
			wantHeadroom: resources.List{requestsCPU: 8000},
		},
		// The binding's own reservation, not yet observed (generation 3 > 2); the Work "web" (another UID,
		// generation 3) must not settle it.
		"kept: a Work of the binding's name does not settle the binding's reservation": {
			reservations: []reserved{{utiltesting.ReservationOwner(binding.Obj()), 3, later}},
			wantKept:     []reserved{{utiltesting.ReservationOwner(binding.Obj()), 3, later}},
			wantHeadroom: resources.List{requestsCPU: 8000},
		},
		"kept: a Work of another binding's name does not settle that binding's reservation": {
			reservations: []reserved{{utiltesting.ReservationOwner(utiltesting.MakeBinding("ns", "api").Obj()), 1, later}},
			works: []ObservedWork{{
				Namespace: executionNamespace("member1"), Name: "api", UID: "uid-work-api", Generation: 1,
				BindingNamespace: "ns", Binding: "api", Cluster: "member1",
			}},
			wantKept:     []reserved{{utiltesting.ReservationOwner(utiltesting.MakeBinding("ns", "api").Obj()), 1, later}},
			wantHeadroom: resources.List{requestsCPU: 8000},
		},
		"settled: the binding's reservation by the binding, the Work's by the Work": {
			reservations: []reserved{
				{utiltesting.ReservationOwner(binding.Obj()), 2, later},
				{ownerOfWork, 3, later},
				{ownerOfWork, 4, later},
			},
			wantSettled: []reserved{
				{utiltesting.ReservationOwner(binding.Obj()), 2, later},
				{ownerOfWork, 3, later},
			},
			wantKept:     []reserved{{ownerOfWork, 4, later}},
			wantHeadroom: resources.List{requestsCPU: 8000},
		},
		// A reservation from before Works carries no kind: it is a binding's.
		"settled: a reservation without a kind is a binding's": {
			reservations: []reserved{{quotav1alpha1.ReservationOwner{Name: "web", UID: binding.Obj().UID}, 2, later}},
			wantSettled:  []reserved{{quotav1alpha1.ReservationOwner{Name: "web", UID: binding.Obj().UID}, 2, later}},
			wantHeadroom: resources.List{requestsCPU: 9000},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			q := utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "10"))
			for _, r := range tc.reservations {
				reserveFor(q, r.owner, r.generation, list("cpu", "1"), r.expires)
			}
			ledger := newLedger(t, q.Obj())
			works := []ObservedWork{work}
			if tc.works != nil {
				works = tc.works
			}
			if tc.noWorks {
				works = nil
			}
			var gone func(types.UID) bool
			if tc.gone != nil {
				gone = goneUIDs(tc.gone...)
			}

			got := Recount(ledger, Observation{
				Bindings: bindingsOf([]*utiltesting.BindingWrapper{binding}), Works: works, Gone: gone, Now: now,
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
			if diff := cmp.Diff(tc.wantHeadroom, got.Headroom); diff != "" {
				t.Errorf("headroom (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWriteReservationsKeepsOrder: the list is written in the order it was read, whoever owns each reservation,
// new ones last, and a settle removes without reordering what stays: the controller's settle patch names each
// reservation it removes by its index (quotaio.SettleLedger), which an admission in between must not move.
func TestWriteReservationsKeepsOrder(t *testing.T) {
	q := utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "10"))
	owners := []quotav1alpha1.ReservationOwner{
		workOwner(executionNamespace("member2"), "a", "uid-a2"),
		utiltesting.ReservationOwner(utiltesting.MakeBinding("ns", "z").Obj()),
		workOwner(executionNamespace("member1"), "b", "uid-b1"),
		workOwner(executionNamespace("member1"), "a", "uid-a1"),
	}
	for _, o := range owners {
		reserveFor(q, o, 1, list("cpu", "1"), expires)
	}
	ownersOf := func(l *quotav1alpha1.KarmadaQuotaLedger) []quotav1alpha1.ReservationOwner {
		var got []quotav1alpha1.ReservationOwner
		for _, r := range l.Reservations {
			got = append(got, r.ReservedBy)
		}
		return got
	}
	var status quotav1alpha1.KarmadaQuotaLedger
	newLedger(t, q.Obj()).WriteTo(&status)
	if diff := cmp.Diff(owners, ownersOf(&status)); diff != "" {
		t.Errorf("reservation order (-want +got):\n%s", diff)
	}
	quantity := cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

	reparsed, err := NewLedger(&quotav1alpha1.KarmadaQuota{Spec: q.Obj().Spec}, status.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	var again quotav1alpha1.KarmadaQuotaLedger
	reparsed.WriteTo(&again)
	if diff := cmp.Diff(status, again, quantity); diff != "" {
		t.Errorf("ledger written again (-first +second):\n%s", diff)
	}

	// Settle the second, then reserve for a new owner: the others keep their order, the new one comes last.
	reparsed.Settle(func(r Reservation) bool { return r.Owner == owners[1] })
	added := utiltesting.ReservationOwner(utiltesting.MakeBinding("ns", "a").Obj())
	reparsed.Reserve(Demand{Key: Key{UID: added.UID, Generation: 1}, Owner: added, Increase: resources.List{requestsCPU: 1000}}, expires)
	var settled quotav1alpha1.KarmadaQuotaLedger
	reparsed.WriteTo(&settled)
	want := []quotav1alpha1.ReservationOwner{owners[0], owners[2], owners[3], added}
	if diff := cmp.Diff(want, ownersOf(&settled)); diff != "" {
		t.Errorf("reservation order after a settle and a new reservation (-want +got):\n%s", diff)
	}
}

// TestLimitsCompute: a quota limits what replica sets run when it counts a resource they use, or requires a
// request they would have to make; one that limits only object counts, or whose scope does not select them, does
// not.
func TestLimitsCompute(t *testing.T) {
	requesting := []usage.Placed{{Cluster: "member1", Replicas: 2, PerReplica: resources.List{requestsCPU: 1000, requestsMemory: gi}}}
	unrequesting := []usage.Placed{{Cluster: "member1", Replicas: 2}}
	high := []usage.Placed{{Cluster: "member1", PriorityClass: "high", Replicas: 2, PerReplica: resources.List{requestsCPU: 1000}}}
	cases := map[string]struct {
		quota *utiltesting.QuotaWrapper
		sets  []usage.Placed
		want  bool
	}{
		"a cpu quota, sets requesting cpu": {
			quota: utiltesting.MakeQuota("ns", "q").Hard(list("cpu", "10")),
			sets:  requesting,
			want:  true,
		},
		"a requests.memory quota, sets requesting memory": {
			quota: utiltesting.MakeQuota("ns", "q").Hard(list("requests.memory", "10Gi")),
			sets:  requesting,
			want:  true,
		},
		"a pods quota, sets requesting nothing": {
			quota: utiltesting.MakeQuota("ns", "q").Hard(list("pods", "10")),
			sets:  unrequesting,
			want:  true,
		},
		"a cpu quota, sets that do not request cpu (they would have to)": {
			quota: utiltesting.MakeQuota("ns", "q").Hard(list("cpu", "10")),
			sets:  unrequesting,
			want:  true,
		},
		"a memory quota, sets that request cpu only": {
			quota: utiltesting.MakeQuota("ns", "q").Hard(list("memory", "10Gi")),
			sets:  high,
			want:  true,
		},
		"a gpu quota, sets that request no gpu (none is required)": {
			quota: utiltesting.MakeQuota("ns", "q").Hard(list("nvidia.com/gpu", "4")),
			sets:  requesting,
		},
		"a quota limiting only count/configmaps": {
			quota: utiltesting.MakeQuota("ns", "q").Hard(list("count/configmaps", "10")),
			sets:  requesting,
		},
		"a quota limiting only count/configmaps, sets requesting nothing": {
			quota: utiltesting.MakeQuota("ns", "q").Hard(list("count/configmaps", "10")),
			sets:  unrequesting,
		},
		"a cpu and pods quota whose scope does not select the sets": {
			quota: utiltesting.MakeQuota("ns", "q").Hard(list("cpu", "10", "pods", "10")).Scope(corev1.ScopeSelectorOpIn, "low"),
			sets:  high,
		},
		"a cpu quota whose scope does not select the sets, which do not request cpu": {
			quota: utiltesting.MakeQuota("ns", "q").Hard(list("cpu", "10")).Scope(corev1.ScopeSelectorOpExists),
			sets:  unrequesting,
		},
		"a cpu quota whose scope selects the sets": {
			quota: utiltesting.MakeQuota("ns", "q").Hard(list("cpu", "10")).Scope(corev1.ScopeSelectorOpIn, "high"),
			sets:  high,
			want:  true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l := newLedger(t, tc.quota.Obj())
			if got := l.LimitsCompute(usage.Usage{Placed: tc.sets}); got != tc.want {
				t.Errorf("LimitsCompute(%v) = %v, want %v", tc.sets, got, tc.want)
			}
		})
	}
}

// TestAuthorNames renders canonical names as the quota's author wrote them, in order; a name the quota does not
// limit stays canonical.
func TestAuthorNames(t *testing.T) {
	l := newLedger(t, utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "10", "requests.memory", "10Gi", "count/deployments.apps", "3")).Obj())
	got := l.AuthorNames([]corev1.ResourceName{requestsMemory, requestsCPU, pods, deployments})
	want := []corev1.ResourceName{"requests.memory", "cpu", "pods", "count/deployments.apps"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("AuthorNames (-want +got):\n%s", diff)
	}
	if got := l.AuthorNames(nil); len(got) != 0 {
		t.Errorf("AuthorNames(nil) = %v, want none", got)
	}
}

// TestRecountWorksOfAnEarlierBinding leaves out a Work Karmada left behind for an earlier binding of the same name
// (its binding controller can create one after the binding's cleanup ran): it was admitted nothing of the binding
// that now holds the name, and is still observed, so its own reservation settles.
func TestRecountWorksOfAnEarlierBinding(t *testing.T) {
	quota := utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "100"))
	web := utiltesting.MakeBinding("ns", "web").Requests(list("cpu", "1")).Cluster("member1", 2)
	web.Labels = map[string]string{workv1alpha2.ResourceBindingPermanentIDLabel: "id-now"}
	for name, tc := range map[string]struct {
		workID   string
		wantUsed int64
	}{
		"rendered from the binding now holding the name": {workID: "id-now", wantUsed: 6000},
		"left behind by an earlier binding of that name": {workID: "id-before", wantUsed: 2000},
		"written by hand, without the ID":                {workID: "", wantUsed: 6000},
	} {
		t.Run(name, func(t *testing.T) {
			q := quota.Clone()
			work := observedWork("web", "member1", 2, asked("member1", "", 2, 3000))
			work.BindingID = tc.workID
			reserveFor(q, workOwner(work.Namespace, work.Name, work.UID), 2, list("cpu", "4"), now.Add(time.Minute))
			got := Recount(newLedger(t, q.Obj()), Observation{Bindings: bindingsOf([]*utiltesting.BindingWrapper{web}), Works: []ObservedWork{work}, Now: now})
			if got.Used[requestsCPU] != tc.wantUsed {
				t.Errorf("used cpu %dm, want %dm", got.Used[requestsCPU], tc.wantUsed)
			}
			if len(got.Settled) != 1 {
				t.Errorf("settled %v, want the Work's reservation: the Work is observed", got.Settled)
			}
		})
	}
}

// TestRecountWorksOfAClusterLeft leaves out the Work of a cluster the binding no longer lists (its replicas moved,
// the cluster unjoined): Karmada is removing it, and the binding write that moved the replicas was admitted as a
// move. It is still observed, so its own reservation settles.
func TestRecountWorksOfAClusterLeft(t *testing.T) {
	q := utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "100"))
	web := utiltesting.MakeBinding("ns", "web").Requests(list("cpu", "1")).Cluster("member2", 4)
	left := observedWork("web", "member1", 2, asked("member1", "", 2, 3000))
	reserveFor(q, workOwner(left.Namespace, left.Name, left.UID), 2, list("cpu", "4"), now.Add(time.Minute))
	got := Recount(newLedger(t, q.Obj()), Observation{Bindings: bindingsOf([]*utiltesting.BindingWrapper{web}), Works: []ObservedWork{left}, Now: now})
	if got.Used[requestsCPU] != 4000 {
		t.Errorf("used cpu %dm, want 4000m: member2's placement alone", got.Used[requestsCPU])
	}
	if len(got.Settled) != 1 {
		t.Errorf("settled %v, want the Work's reservation", got.Settled)
	}
}

// TestRecountWorksLeftBehind: a Work of a cluster its binding left is reported left behind (it was charged nothing);
// once the binding is back there, that Work is charged what the binding places while the controller still knows it
// left behind and unchanged (Observation.LeftBehind), and what it asks otherwise.
func TestRecountWorksLeftBehind(t *testing.T) {
	q := utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "10"))
	away := utiltesting.MakeBinding("ns", "web").Requests(list("cpu", "1")).Cluster("member2", 1)
	old := observedWork("web", "member1", 3, asked("member1", "", 2, 1000))
	deleting := observedWork("web", "member3", 1, asked("member3", "", 2, 1000))
	deleting.Deleting = true
	got := Recount(newLedger(t, q.Obj()), Observation{
		Bindings: bindingsOf([]*utiltesting.BindingWrapper{away}), Works: []ObservedWork{old, deleting}, Now: now,
	})
	if got.Used[requestsCPU] != 1000 {
		t.Errorf("used cpu %dm, want 1000m: member2's placement alone", got.Used[requestsCPU])
	}
	if want := []WorkVersion{{UID: old.UID, Generation: 3}}; !reflect.DeepEqual(got.LeftBehind, want) {
		t.Errorf("left behind %v, want %v: the Work Karmada is not deleting yet", got.LeftBehind, want)
	}

	back := utiltesting.MakeBinding("ns", "web").Requests(list("cpu", "1")).Cluster("member2", 1).Cluster("member1", 1)
	for _, tc := range []struct {
		name       string
		leftBehind func(*ObservedWork) bool
		want       int64
	}{
		{"known left behind", func(w *ObservedWork) bool { return w.UID == old.UID && w.Generation == 3 }, 2000},
		{"not known", nil, 3000},
		{"known, but not this Work", func(w *ObservedWork) bool { return false }, 3000},
	} {
		got := Recount(newLedger(t, q.Obj()), Observation{
			Bindings: bindingsOf([]*utiltesting.BindingWrapper{back}), Works: []ObservedWork{old}, LeftBehind: tc.leftBehind, Now: now,
		})
		if got.Used[requestsCPU] != tc.want {
			t.Errorf("%s: used cpu %dm, want %dm", tc.name, got.Used[requestsCPU], tc.want)
		}
		if len(got.LeftBehind) != 0 {
			t.Errorf("%s: left behind %v, want none: the binding targets the Work's cluster", tc.name, got.LeftBehind)
		}
	}
}

// TestRecountWorksBeingDeleted: a binding that left a member and came back while its old Work there was still
// being deleted (the member unreachable: Karmada does not update a Work being deleted) is charged what it places
// there, what its move back was admitted, not what the old Work asks; the Work's own reservation still settles.
func TestRecountWorksBeingDeleted(t *testing.T) {
	q := utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "100"))
	web := utiltesting.MakeBinding("ns", "web").Requests(list("cpu", "1")).Cluster("member1", 2).Cluster("member2", 1)
	old := observedWork("web", "member2", 2, asked("member2", "", 3, 1000))
	old.Deleting = true
	current := observedWork("web", "member1", 1, asked("member1", "", 2, 1000))
	reserveFor(q, workOwner(old.Namespace, old.Name, old.UID), 2, list("cpu", "3"), now.Add(time.Minute))
	got := Recount(newLedger(t, q.Obj()), Observation{
		Bindings: bindingsOf([]*utiltesting.BindingWrapper{web}), Works: []ObservedWork{old, current}, Now: now,
	})
	if got.Used[requestsCPU] != 3000 || got.Clusters["member2"][requestsCPU] != 1000 {
		t.Errorf("used cpu %dm, member2 %dm; want 3000m, 1000m: the placement alone", got.Used[requestsCPU], got.Clusters["member2"][requestsCPU])
	}
	if len(got.Settled) != 1 {
		t.Errorf("settled %v, want the Work's reservation", got.Settled)
	}

	// Not being deleted, the same Work is what the member is asked to run.
	old.Deleting = false
	got = Recount(newLedger(t, q.Obj()), Observation{
		Bindings: bindingsOf([]*utiltesting.BindingWrapper{web}), Works: []ObservedWork{old, current}, Now: now,
	})
	if got.Used[requestsCPU] != 5000 {
		t.Errorf("used cpu %dm, want 5000m: member2's Work asks 3", got.Used[requestsCPU])
	}
}
