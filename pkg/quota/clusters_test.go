package quota

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

// capped is a quota of 100 CPU in all, at most 2 on member1, and 3 in the EU clusters (member1 and member2).
func capped() *utiltesting.QuotaWrapper {
	q := utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "100"))
	q.Spec.Clusters = []quotav1alpha1.ClusterLimit{{Name: "member1", Hard: list("cpu", "2")}}
	q.Spec.ClusterGroups = []quotav1alpha1.ClusterGroupLimit{{
		Name: "eu", ClusterSelector: metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}}, Hard: list("cpu", "3"),
	}}
	return q
}

var regions = map[string]labels.Set{"member1": {"region": "eu"}, "member2": {"region": "eu"}, "member3": {"region": "us"}}

func cappedLedger(t *testing.T, q *quotav1alpha1.KarmadaQuota) *Ledger {
	t.Helper()
	l := newLedger(t, q)
	l.SetClusterLabels(func(c string) (labels.Set, bool) { set, ok := regions[c]; return set, ok })
	return l
}

func webAt(clusters ...workv1alpha2.TargetCluster) *workv1alpha2.ResourceBinding {
	b := utiltesting.MakeBinding("ns", "web").Requests(list("cpu", "1"))
	for _, c := range clusters {
		b.Cluster(c.Name, c.Replicas)
	}
	return b.Obj()
}

func at(name string, replicas int32) workv1alpha2.TargetCluster {
	return workv1alpha2.TargetCluster{Name: name, Replicas: replicas}
}

func TestClusterAndGroupLimits(t *testing.T) {
	cases := map[string]struct {
		old, new  *workv1alpha2.ResourceBinding
		wantError string
		// wantClusters is what the write reserves on each cluster when admitted.
		wantClusters map[string]resources.List
	}{
		"within the cluster's and the group's limits": {
			new:          webAt(at("member1", 2), at("member3", 5)),
			wantClusters: map[string]resources.List{"member1": {requestsCPU: 2000}, "member3": {requestsCPU: 5000}},
		},
		"past the cluster's limit, though the namespace has room": {
			new:       webAt(at("member1", 3)),
			wantError: "exceeded quota: team, cpu in cluster member1: requested 3, used 0, reserved 0, hard 2 (can never fit: the request alone exceeds hard)",
		},
		"past the group's limit, each cluster within its own": {
			new:       webAt(at("member1", 2), at("member2", 2)),
			wantError: "exceeded quota: team, cpu in cluster group eu: requested 4, used 0, reserved 0, hard 3 (can never fit: the request alone exceeds hard)",
		},
		"a move out of the capped cluster to one with room": {
			old:          webAt(at("member1", 2), at("member3", 1)),
			new:          webAt(at("member1", 1), at("member3", 2)),
			wantClusters: map[string]resources.List{"member3": {requestsCPU: 1000}},
		},
		"a move inside the group is no growth of the group, but is reserved where it arrives": {
			old:          webAt(at("member1", 1), at("member2", 1)),
			new:          webAt(at("member2", 2)),
			wantClusters: map[string]resources.List{"member2": {requestsCPU: 1000}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l := cappedLedger(t, capped().Obj())
			var old *usage.Usage
			if tc.old != nil {
				u := usageOf(t, tc.old)
				old = &u
			}
			d := l.Demand(keyOf(tc.new), utiltesting.ReservationOwner(tc.new), usageOf(t, tc.new), old)
			denial := l.Check(d)
			if tc.wantError != "" {
				if denial == nil || denial.Error() != tc.wantError {
					t.Fatalf("denial %v, want %q", denial, tc.wantError)
				}
				return
			}
			if denial != nil {
				t.Fatalf("refused: %v", denial)
			}
			l.Reserve(d, expires)
			if diff := cmp.Diff(tc.wantClusters, l.Find(keyOf(tc.new)).Clusters); diff != "" {
				t.Errorf("reserved on clusters (-want +got):\n%s", diff)
			}
		})
	}
}

// TestClusterReservationsCountForOthers: what one write reserves on a cluster holds it against the next, through a
// status round trip, until settled.
func TestClusterReservationsCountForOthers(t *testing.T) {
	l := cappedLedger(t, capped().Obj())
	first := utiltesting.MakeBinding("ns", "a").Requests(list("cpu", "1")).Cluster("member1", 2).Obj()
	d := l.Demand(keyOf(first), utiltesting.ReservationOwner(first), usageOf(t, first), nil)
	if denial := l.Check(d); denial != nil {
		t.Fatal(denial)
	}
	l.Reserve(d, expires)

	var stored quotav1alpha1.KarmadaQuotaLedger
	l.WriteTo(&stored)
	again, err := NewLedger(capped().Obj(), &stored)
	if err != nil {
		t.Fatal(err)
	}
	again.SetClusterLabels(func(c string) (labels.Set, bool) { set, ok := regions[c]; return set, ok })
	second := utiltesting.MakeBinding("ns", "b").Requests(list("cpu", "1")).Cluster("member1", 1).Obj()
	d = again.Demand(keyOf(second), utiltesting.ReservationOwner(second), usageOf(t, second), nil)
	denial := again.Check(d)
	if denial == nil || denial.Error() != "exceeded quota: team, cpu in cluster member1: requested 1, used 0, reserved 2, hard 2" {
		t.Fatalf("denial %v, want member1 held by the first write's reservation", denial)
	}
	// The group sees it too: 2 reserved on member1, 2 more on member2 is 4 of 3.
	third := utiltesting.MakeBinding("ns", "c").Requests(list("cpu", "1")).Cluster("member2", 2).Obj()
	d = again.Demand(keyOf(third), utiltesting.ReservationOwner(third), usageOf(t, third), nil)
	if denial := again.Check(d); denial == nil || denial.Error() != "exceeded quota: team, cpu in cluster group eu: requested 2, used 0, reserved 2, hard 3" {
		t.Fatalf("denial %v, want the group held by the reservation on member1", denial)
	}
	// Settled: the room is back.
	again.Settle(func(Reservation) bool { return true })
	if denial := again.Check(again.Demand(keyOf(second), utiltesting.ReservationOwner(second), usageOf(t, second), nil)); denial != nil {
		t.Fatalf("refused after the reservation settled: %v", denial)
	}
}

// TestGroupMembershipFollowsLabels: a cluster relabelled out of a group no longer counts in it.
func TestGroupMembershipFollowsLabels(t *testing.T) {
	l := newLedger(t, capped().Obj())
	rb := webAt(at("member2", 4))
	d := l.Demand(keyOf(rb), utiltesting.ReservationOwner(rb), usageOf(t, rb), nil)
	if denial := l.Check(d); denial != nil {
		t.Fatalf("no labels known, no group member, yet refused: %v", denial)
	}
	l.SetClusterLabels(func(c string) (labels.Set, bool) { set, ok := regions[c]; return set, ok })
	if denial := l.Check(d); denial == nil {
		t.Fatal("member2 is in the EU group: 4 of 3 admitted")
	}
}

// TestWaitingOnAClusterLimit: a binding refused by a cluster's limit on a resource the namespace-wide hard does not
// limit waits on the quota, and the headroom that would requeue it is the room of the roomiest limit on it.
func TestWaitingOnAClusterLimit(t *testing.T) {
	q := utiltesting.MakeQuota("ns", "team").Hard(list("pods", "100"))
	q.Spec.Clusters = []quotav1alpha1.ClusterLimit{{Name: "member1", Hard: list("cpu", "2")}}
	running := utiltesting.MakeBinding("ns", "api").Requests(list("cpu", "1")).Cluster("member1", 2).Obj()
	waiting := utiltesting.MakeBinding("ns", "web").Replicas(1).Requests(list("cpu", "1")).
		Scheduled(false, workv1alpha2.BindingReasonQuotaExceeded).Obj()

	l := newLedger(t, q.Obj())
	tally := Recount(l, Observation{Bindings: []workv1alpha2.ResourceBinding{*running, *waiting}, Now: now})
	if len(tally.Waiting.Bindings) != 1 || tally.Waiting.Bindings[0].Binding.Name != "web" {
		t.Fatalf("waiting %v, want web, refused by member1's cpu", tally.Waiting.Bindings)
	}
	if got := tally.Waiting.Bindings[0].Need[requestsCPU]; got != 1000 {
		t.Errorf("web still needs %dm cpu, want 1000m", got)
	}
	if got := tally.Headroom[requestsCPU]; got != 0 {
		t.Errorf("cpu headroom %dm, want 0: member1 is full", got)
	}

	// api leaves member1: its room is back, and web would fit.
	tally = Recount(newLedger(t, q.Obj()), Observation{Bindings: []workv1alpha2.ResourceBinding{*waiting}, Now: now})
	if got := tally.Headroom[requestsCPU]; got != 2000 {
		t.Errorf("cpu headroom %dm, want 2000m once member1 is empty", got)
	}
}

// TestRoomOn: the room a placement on a cluster has is the least of what the cluster's own limit and its groups
// leave, reservations counted; the namespace-wide hard is left to admission.
func TestRoomOn(t *testing.T) {
	l := cappedLedger(t, capped().Obj())
	// 1 CPU reserved on member2: the EU group (3) has 2 left, member1 (2) has 2 of its own.
	rb := webAt(at("member2", 1))
	d := l.Demand(keyOf(rb), utiltesting.ReservationOwner(rb), usageOf(t, rb), nil)
	if denial := l.Check(d); denial != nil {
		t.Fatal(denial)
	}
	l.Reserve(d, expires)

	cases := map[string]struct {
		cluster string
		// want is the room for requests.cpu; nil: no member limit there.
		want *int64
	}{
		"member1: its own 2, the group's 2 left": {cluster: "member1", want: ptr.To[int64](2000)},
		"member2: the group's 2 left":            {cluster: "member2", want: ptr.To[int64](2000)},
		"member3: outside the group, no limit":   {cluster: "member3"},
		"a cluster not joined: in no group":      {cluster: "member9"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			room, limited := l.RoomOn(tc.cluster)[requestsCPU]
			switch {
			case tc.want == nil && limited:
				t.Errorf("room for requests.cpu on %s = %d, want no member limit", tc.cluster, room)
			case tc.want != nil && (!limited || room != *tc.want):
				t.Errorf("room for requests.cpu on %s = %d (limited: %t), want %d", tc.cluster, room, limited, *tc.want)
			}
		})
	}
	// A second cluster of the group reserves its room away from the first.
	more := webAt(at("member1", 2))
	d = l.Demand(keyOf(more), utiltesting.ReservationOwner(more), usageOf(t, more), nil)
	if denial := l.Check(d); denial != nil {
		t.Fatal(denial)
	}
	l.Reserve(d, expires)
	if room := l.RoomOn("member2"); room[requestsCPU] != 0 {
		t.Errorf("room on member2 after the group filled = %d, want 0", room[requestsCPU])
	}
}

// TestMemberRoom: the most room one limit on members has left, a cluster's own limit lowered by its groups; a
// cluster known not to have joined offers none; no limits on members, no room to speak of.
func TestMemberRoom(t *testing.T) {
	if room := newLedger(t, utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "100")).Obj()).MemberRoom(); room != nil {
		t.Errorf("MemberRoom without limits on members = %v, want nil", room)
	}

	q := capped()
	q.Spec.Clusters = append(q.Spec.Clusters, quotav1alpha1.ClusterLimit{Name: "member9", Hard: list("cpu", "50")})
	l := cappedLedger(t, q.Obj())
	// 2 CPUs used on member2: the EU group (3) has 1 left, member1's own 2 are lowered to it.
	tally := Recount(l, Observation{Bindings: []workv1alpha2.ResourceBinding{*webAt(at("member2", 2))}, Now: now})
	if diff := cmp.Diff(resources.List{requestsCPU: 1000}, tally.MemberRoom); diff != "" {
		t.Errorf("MemberRoom, member9 not joined (-want +got):\n%s", diff)
	}

	// Nothing known of the members' labels: the cluster limits count as they are, member9's 50 the most.
	l = newLedger(t, q.Obj())
	tally = Recount(l, Observation{Bindings: []workv1alpha2.ResourceBinding{*webAt(at("member2", 2))}, Now: now})
	if diff := cmp.Diff(resources.List{requestsCPU: 50000}, tally.MemberRoom); diff != "" {
		t.Errorf("MemberRoom, no labels known (-want +got):\n%s", diff)
	}
}

func TestReplicasThatFit(t *testing.T) {
	cases := map[string]struct {
		room, perReplica resources.List
		want             int64
	}{
		"the scarcest resource bounds":          {room: resources.List{requestsCPU: 2500, "pods": 10}, perReplica: resources.List{requestsCPU: 500, "pods": 1}, want: 5},
		"pods bound":                            {room: resources.List{requestsCPU: 2500, "pods": 3}, perReplica: resources.List{requestsCPU: 500, "pods": 1}, want: 3},
		"a partial replica does not fit":        {room: resources.List{requestsCPU: 999}, perReplica: resources.List{requestsCPU: 500}, want: 1},
		"over hard: none":                       {room: resources.List{requestsCPU: -100, "pods": 5}, perReplica: resources.List{requestsCPU: 500, "pods": 1}, want: 0},
		"a resource not charged does not bound": {room: resources.List{requestsCPU: 0}, perReplica: resources.List{"pods": 1}, want: math.MaxInt64},
		"nothing limited":                       {room: resources.List{}, perReplica: resources.List{requestsCPU: 1}, want: math.MaxInt64},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := ReplicasThatFit(tc.room, tc.perReplica); got != tc.want {
				t.Errorf("ReplicasThatFit = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestCarryOver: a ledger parsed again from a newer object (the controller's read before it writes) knows what the
// first parse was told: the member clusters' labels, and the namespaces a business quota governs. Without them it
// would put no cluster in a group, and settle every reservation of a business quota as of a namespace it left.
func TestCarryOver(t *testing.T) {
	q := capped().Obj()
	again := newLedger(t, q)
	again.CarryOver(cappedLedger(t, q))
	if got := again.Groups(map[string]resources.List{"member2": {requestsCPU: 1000}}, []string{"member1", "member2", "member3"}); len(got) != 1 ||
		!cmp.Equal(got[0].Clusters, []string{"member1", "member2"}) {
		t.Errorf("groups after CarryOver = %+v, want eu of member1 and member2", got)
	}

	business := &quotav1alpha1.KarmadaQuota{ObjectMeta: metav1.ObjectMeta{Name: "shop", UID: "uid-shop", Generation: 1},
		Spec: quotav1alpha1.KarmadaQuotaSpec{Hard: list("cpu", "10")}}
	told := newLedger(t, business)
	told.SetNamespaces(func(ns string) bool { return ns == "dev" })
	reparsed := newLedger(t, business)
	reparsed.CarryOver(told)
	if !reparsed.Governs("dev") || reparsed.Governs("prod") {
		t.Errorf("after CarryOver the business ledger governs dev %t, prod %t; want dev only", reparsed.Governs("dev"), reparsed.Governs("prod"))
	}
}
