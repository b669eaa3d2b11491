package quota

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

const (
	requestsCPU    corev1.ResourceName = "requests.cpu"
	requestsMemory corev1.ResourceName = "requests.memory"
	requestsGPU    corev1.ResourceName = "requests.nvidia.com/gpu"
	pods           corev1.ResourceName = corev1.ResourcePods
	deployments    corev1.ResourceName = "count/deployments.apps"
	services       corev1.ResourceName = "count/services"
)

const gi = 1 << 30

var (
	now     = time.Date(2025, time.January, 1, 0, 0, 0, 0, time.UTC)
	expires = now.Add(2 * time.Minute)
)

// list spells a resource list as people write it: "cpu", "100m", "memory", "1Gi".
var list = utiltesting.List

// newLedger parses q as this release stores it: the reservations and the folded sum the test wrote into its status
// are in its ledger object (TestNewLedgerReadsTheLedgerObject and TestFoldedRoundTrip read them from status too).
func newLedger(t *testing.T, q *quotav1alpha1.KarmadaQuota) *Ledger {
	t.Helper()
	q = q.DeepCopy()
	l, err := NewLedger(q, utiltesting.MoveToLedger(q))
	if err != nil {
		t.Fatalf("NewLedger: %v", err)
	}
	return l
}

func usageOf(t *testing.T, rb *workv1alpha2.ResourceBinding) usage.Usage {
	t.Helper()
	u, err := usage.Of(rb)
	if err != nil {
		t.Fatalf("usage.Of: %v", err)
	}
	return u
}

func keyOf(rb *workv1alpha2.ResourceBinding) Key {
	return Key{UID: rb.UID, Generation: rb.Generation}
}

// reservation builds the ledger's view of a reservation of rb's write at generation.
func reservation(rb *workv1alpha2.ResourceBinding, generation int64, amount resources.List, expires time.Time) Reservation {
	return Reservation{Owner: utiltesting.ReservationOwner(rb), Generation: generation, Amount: amount, Expires: expires}
}

// state is what a ledger holds besides its selector, which has nothing comparable.
type state struct {
	Hard         resources.List
	UserName     map[corev1.ResourceName]corev1.ResourceName
	Used         resources.List
	Reserved     resources.List
	Reservations []Reservation
	Folded       Folded
}

func stateOf(l *Ledger) state {
	return state{Hard: l.hard, UserName: l.userName, Used: l.used, Reserved: l.reserved, Reservations: l.reservations, Folded: l.folded}
}

var (
	web   = utiltesting.MakeBinding("ns", "web")
	api   = utiltesting.MakeBinding("ns", "api")
	batch = utiltesting.MakeBinding("ns", "batch")
)

func TestNewLedger(t *testing.T) {
	cases := map[string]struct {
		quota     *quotav1alpha1.KarmadaQuota
		wantState state
		// wantErr lists substrings of the error; empty means none.
		wantErr []string
	}{
		"bare and requests. names are one canonical resource, remembered in the author's spelling": {
			quota: utiltesting.MakeQuota("ns", "team").
				Hard(list("cpu", "10", "requests.memory", "20Gi", "nvidia.com/gpu", "8", "pods", "50", "services", "5", "count/deployments.apps", "3")).
				Obj(),
			wantState: state{
				Hard: resources.List{requestsCPU: 10000, requestsMemory: 20 * gi, requestsGPU: 8, pods: 50, services: 5, deployments: 3},
				UserName: map[corev1.ResourceName]corev1.ResourceName{
					requestsCPU: "cpu", requestsMemory: "requests.memory", requestsGPU: "nvidia.com/gpu",
					pods: "pods", services: "services", deployments: "count/deployments.apps",
				},
				Used:     resources.List{},
				Reserved: resources.List{},
			},
		},
		"status used and reservations are parsed under either spelling; resources no longer limited are dropped": {
			quota: utiltesting.MakeQuota("ns", "team").
				Hard(list("cpu", "10", "memory", "10Gi")).
				Used(list("requests.cpu", "1500m", "memory", "1Gi", "pods", "3")).
				Reservation(web.Obj(), 2, list("cpu", "500m", "nvidia.com/gpu", "1"), expires).
				Reservation(api.Obj(), 1, list("requests.cpu", "1", "requests.memory", "2Gi"), expires.Add(time.Second)).
				Obj(),
			wantState: state{
				Hard:     resources.List{requestsCPU: 10000, requestsMemory: 10 * gi},
				UserName: map[corev1.ResourceName]corev1.ResourceName{requestsCPU: "cpu", requestsMemory: "memory"},
				Used:     resources.List{requestsCPU: 1500, requestsMemory: gi},
				Reserved: resources.List{requestsCPU: 1500, requestsMemory: 2 * gi},
				Reservations: []Reservation{
					reservation(web.Obj(), 2, resources.List{requestsCPU: 500}, expires),
					reservation(api.Obj(), 1, resources.List{requestsCPU: 1000, requestsMemory: 2 * gi}, expires.Add(time.Second)),
				},
			},
		},
		"a limit that cannot be enforced is an error naming the quota and the key": {
			quota:   utiltesting.MakeQuota("ns", "team").Hard(list("limits.cpu", "4")).Obj(),
			wantErr: []string{"quota team is invalid", "limits.cpu"},
		},
		"an unknown resource is an error": {
			quota:   utiltesting.MakeQuota("ns", "team").Hard(list("example", "4")).Obj(),
			wantErr: []string{"quota team is invalid", "spec.hard[example]"},
		},
		"an invalid scope selector is an error naming the quota": {
			quota:   utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "4")).Scope(corev1.ScopeSelectorOpIn).Obj(),
			wantErr: []string{"quota team is invalid", "values: Required value: must name at least one priority class"},
		},
		"an unsupported operator is an error": {
			quota:   utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "4")).Scope("Gt", "1").Obj(),
			wantErr: []string{"quota team is invalid", `operator: Unsupported value: "Gt"`},
		},
		"two keys for one resource are an error, not a coin toss between their limits": {
			quota:   utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "10", "requests.cpu", "100")).Obj(),
			wantErr: []string{"quota team is invalid", `"cpu" and "requests.cpu" are the same resource`},
		},
		"an object count under a scope is an error, not a limit that is never enforced": {
			quota: utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "4", "count/deployments.apps", "1")).
				Scope(corev1.ScopeSelectorOpIn, "high").Obj(),
			wantErr: []string{"quota team is invalid", "count/deployments.apps"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l, err := NewLedger(tc.quota, nil)
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("NewLedger succeeded, want an error containing %q", tc.wantErr)
				}
				for _, want := range tc.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("NewLedger error %q does not contain %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("NewLedger: %v", err)
			}
			if l.Name != tc.quota.Name {
				t.Errorf("Name = %q, want %q", l.Name, tc.quota.Name)
			}
			if diff := cmp.Diff(tc.wantState, stateOf(l), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("ledger state (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDemand(t *testing.T) {
	small := web.Clone().Requests(list("cpu", "500m", "memory", "1Gi"))
	noRequests := web.Clone()
	unscheduled := web.Clone().Requests(list("cpu", "500m", "memory", "1Gi"))

	cases := map[string]struct {
		quota *quotav1alpha1.KarmadaQuota
		old   *workv1alpha2.ResourceBinding
		new   *workv1alpha2.ResourceBinding
		want  Demand
	}{
		"create charges the object count and the compute placed on every cluster": {
			quota: utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "10", "memory", "10Gi", "pods", "10", "count/deployments.apps", "5")).Obj(),
			new:   small.Clone().Cluster("member1", 2).Cluster("member2", 1).Obj(),
			want: Demand{Increase: resources.List{
				requestsCPU: 1500, requestsMemory: 3 * gi, pods: 3, deployments: 1,
			}},
		},
		"create of an unscheduled binding charges only the object count": {
			quota: utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "10", "count/deployments.apps", "5")).Obj(),
			new:   unscheduled.Obj(),
			want:  Demand{Increase: resources.List{deployments: 1}},
		},
		"resources the quota does not limit are not demanded": {
			quota: utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "10")).Obj(),
			new:   web.Clone().Requests(list("cpu", "1", "memory", "1Gi", "nvidia.com/gpu", "1")).Cluster("member1", 2).Obj(),
			want:  Demand{Increase: resources.List{requestsCPU: 2000}},
		},
		"update demands only the limited resources that increase": {
			quota: utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "10", "memory", "10Gi", "pods", "10", "count/deployments.apps", "5")).Obj(),
			old:   web.Clone().Requests(list("cpu", "1", "memory", "2Gi")).Cluster("member1", 2).Obj(),
			new:   web.Clone().Requests(list("cpu", "1", "memory", "1Gi")).Cluster("member1", 3).Obj(),
			want:  Demand{Increase: resources.List{requestsCPU: 1000, pods: 1}},
		},
		"scale down demands nothing": {
			quota: utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "1", "pods", "1")).Obj(),
			old:   small.Clone().Cluster("member1", 4).Obj(),
			new:   small.Clone().Cluster("member1", 2).Obj(),
			want:  Demand{Increase: resources.List{}},
		},
		"scheduling a created binding demands its compute but not its object again": {
			quota: utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "10", "count/deployments.apps", "5")).Obj(),
			old:   unscheduled.Obj(),
			new:   unscheduled.Clone().Cluster("member1", 2).Obj(),
			want:  Demand{Increase: resources.List{requestsCPU: 1000}},
		},
		"a scoped quota sees the replicas of its priority class": {
			quota: utiltesting.MakeQuota("ns", "high").Hard(list("cpu", "10", "pods", "10")).Scope(corev1.ScopeSelectorOpIn, "high").Obj(),
			new:   small.Clone().PriorityClass("high").Cluster("member1", 2).Obj(),
			want:  Demand{Increase: resources.List{requestsCPU: 1000, pods: 2}},
		},
		"a scoped quota does not see another priority class": {
			quota: utiltesting.MakeQuota("ns", "high").Hard(list("cpu", "10", "pods", "10")).Scope(corev1.ScopeSelectorOpIn, "high").Obj(),
			new:   small.Clone().PriorityClass("low").Cluster("member1", 2).Obj(),
			want:  Demand{Increase: resources.List{}},
		},
		"a scoped quota sees only the matching component of a multi-component binding": {
			quota: utiltesting.MakeQuota("ns", "high").Hard(list("cpu", "10", "pods", "10")).Scope(corev1.ScopeSelectorOpIn, "high").Obj(),
			new: web.Clone().
				Component("leader", 1, list("cpu", "2")).ComponentPriorityClass("leader", "high").
				Component("worker", 4, list("cpu", "1")).ComponentPriorityClass("worker", "low").
				Cluster("member1", 0).Cluster("member2", 0).Obj(),
			want: Demand{Increase: resources.List{requestsCPU: 4000, pods: 2}},
		},
		"create placing replicas without a limited cpu or memory request is missing them": {
			quota: utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "10", "memory", "10Gi", "pods", "10")).Obj(),
			new:   noRequests.Clone().Cluster("member1", 1).Obj(),
			want:  Demand{Increase: resources.List{pods: 1}, Missing: []corev1.ResourceName{requestsCPU, requestsMemory}},
		},
		"a limited gpu need not be requested": {
			quota: utiltesting.MakeQuota("ns", "team").Hard(list("nvidia.com/gpu", "4")).Obj(),
			new:   web.Clone().Requests(list("cpu", "1")).Cluster("member1", 1).Obj(),
			want:  Demand{Increase: resources.List{}},
		},
		"an unscheduled binding without requests places nothing and misses nothing": {
			quota: utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "10")).Obj(),
			new:   noRequests.Obj(),
			want:  Demand{Increase: resources.List{}},
		},
		"adding replicas to a binding that already lacked the request is missing it": {
			quota: utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "10", "pods", "10")).Obj(),
			old:   noRequests.Clone().Cluster("member1", 1).Obj(),
			new:   noRequests.Clone().Cluster("member1", 2).Obj(),
			want:  Demand{Increase: resources.List{pods: 1}, Missing: []corev1.ResourceName{requestsCPU}},
		},
		"dropping a request is missing it even without growing": {
			quota: utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "10", "memory", "10Gi")).Obj(),
			old:   web.Clone().Requests(list("cpu", "1", "memory", "1Gi")).Cluster("member1", 2).Obj(),
			new:   web.Clone().Requests(list("memory", "1Gi")).Cluster("member1", 2).Obj(),
			want:  Demand{Increase: resources.List{}, Missing: []corev1.ResourceName{requestsCPU}},
		},
		"a binding that already lacked the request and does not grow is left alone": {
			quota: utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "10", "pods", "10")).Obj(),
			old:   noRequests.Clone().Cluster("member1", 2).Obj(),
			new:   noRequests.Clone().Label("app", "web").Cluster("member1", 1).Cluster("member2", 1).Obj(),
			want:  Demand{Increase: resources.List{}},
		},
		"a binding that lacks the request and scales down is left alone": {
			quota: utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "10")).Obj(),
			old:   noRequests.Clone().Cluster("member1", 3).Obj(),
			new:   noRequests.Clone().Cluster("member1", 1).Obj(),
			want:  Demand{Increase: resources.List{}},
		},
		"a scoped quota ignores missing requests of another priority class": {
			quota: utiltesting.MakeQuota("ns", "high").Hard(list("cpu", "10")).Scope(corev1.ScopeSelectorOpIn, "high").Obj(),
			new:   noRequests.Clone().PriorityClass("low").Cluster("member1", 1).Obj(),
			want:  Demand{Increase: resources.List{}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l := newLedger(t, tc.quota)
			var old *usage.Usage
			if tc.old != nil {
				u := usageOf(t, tc.old)
				old = &u
			}
			key := keyOf(tc.new)
			owner := utiltesting.ReservationOwner(tc.new)
			got := l.Demand(key, owner, usageOf(t, tc.new), old)
			tc.want.Key, tc.want.Owner = key, owner
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Demand (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	demand := func(rb *workv1alpha2.ResourceBinding, increase resources.List, missing ...corev1.ResourceName) Demand {
		return Demand{Key: keyOf(rb), Owner: utiltesting.ReservationOwner(rb), Increase: increase, Missing: missing}
	}
	cpuQuota := utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "2", "requests.memory", "4Gi", "pods", "10")).
		Used(list("cpu", "1"))

	cases := map[string]struct {
		quota   *quotav1alpha1.KarmadaQuota
		demand  Demand
		want    *Denial
		wantMsg string
	}{
		"fits exactly at hard": {
			quota:  cpuQuota.Clone().Reservation(api.Obj(), 1, list("cpu", "500m"), expires).Obj(),
			demand: demand(web.Obj(), resources.List{requestsCPU: 500}),
		},
		"exceeding hard by one milli-CPU is denied, counting used and the others' reservations": {
			quota:   cpuQuota.Clone().Reservation(api.Obj(), 1, list("cpu", "500m"), expires).Obj(),
			demand:  demand(web.Obj(), resources.List{requestsCPU: 501}),
			want:    &Denial{Quota: "team", Exceeded: []Exceeded{{Resource: "cpu", Requested: "501m", Used: "1", Reserved: "500m", Hard: "2"}}},
			wantMsg: "exceeded quota: team, cpu: requested 501m, used 1, reserved 500m, hard 2",
		},
		"reservations alone can exhaust the quota": {
			quota: utiltesting.MakeQuota("ns", "team").Hard(list("pods", "3")).
				Reservation(api.Obj(), 1, list("pods", "2"), expires).
				Reservation(batch.Obj(), 1, list("pods", "1"), expires).Obj(),
			demand:  demand(web.Obj(), resources.List{pods: 1}),
			want:    &Denial{Quota: "team", Exceeded: []Exceeded{{Resource: "pods", Requested: "1", Used: "0", Reserved: "3", Hard: "3"}}},
			wantMsg: "exceeded quota: team, pods: requested 1, used 0, reserved 3, hard 3",
		},
		"a request of exactly hard that does not fit now can fit later": {
			quota:   cpuQuota.Obj(),
			demand:  demand(web.Obj(), resources.List{requestsCPU: 2000}),
			want:    &Denial{Quota: "team", Exceeded: []Exceeded{{Resource: "cpu", Requested: "2", Used: "1", Reserved: "0", Hard: "2"}}},
			wantMsg: "exceeded quota: team, cpu: requested 2, used 1, reserved 0, hard 2",
		},
		"the same write's own reservation is not counted again": {
			quota:  cpuQuota.Clone().Reservation(web.Obj(), 1, list("cpu", "1"), expires).Obj(),
			demand: demand(web.Obj(), resources.List{requestsCPU: 1000}),
		},
		"another generation of the same binding is another write and counts": {
			quota:   cpuQuota.Clone().Reservation(web.Obj(), 2, list("cpu", "1"), expires).Obj(),
			demand:  demand(web.Obj(), resources.List{requestsCPU: 1000}),
			want:    &Denial{Quota: "team", Exceeded: []Exceeded{{Resource: "cpu", Requested: "1", Used: "1", Reserved: "1", Hard: "2"}}},
			wantMsg: "exceeded quota: team, cpu: requested 1, used 1, reserved 1, hard 2",
		},
		"growing the same write beyond its reservation counts in full against the rest": {
			quota:   cpuQuota.Clone().Reservation(web.Obj(), 1, list("cpu", "1"), expires).Obj(),
			demand:  demand(web.Obj(), resources.List{requestsCPU: 1500}),
			want:    &Denial{Quota: "team", Exceeded: []Exceeded{{Resource: "cpu", Requested: "1500m", Used: "1", Reserved: "0", Hard: "2"}}},
			wantMsg: "exceeded quota: team, cpu: requested 1500m, used 1, reserved 0, hard 2",
		},
		"every exceeded resource is named as the author wrote it, and a request beyond hard can never fit": {
			quota:  cpuQuota.Obj(),
			demand: demand(web.Obj(), resources.List{requestsCPU: 3000, requestsMemory: 2 * gi, pods: 1}),
			want: &Denial{Quota: "team", Exceeded: []Exceeded{
				{Resource: "cpu", Requested: "3", Used: "1", Reserved: "0", Hard: "2", NeverFits: true},
			}},
			wantMsg: "exceeded quota: team, cpu: requested 3, used 1, reserved 0, hard 2 (can never fit: the request alone exceeds hard)",
		},
		"several exceeded resources are all reported": {
			quota: utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "2", "requests.memory", "1Gi", "pods", "10")).
				Used(list("requests.cpu", "1", "memory", "512Mi")).Obj(),
			demand: demand(web.Obj(), resources.List{requestsCPU: 1500, requestsMemory: 2 * gi, pods: 1}),
			want: &Denial{Quota: "team", Exceeded: []Exceeded{
				{Resource: "cpu", Requested: "1500m", Used: "1", Reserved: "0", Hard: "2"},
				{Resource: "requests.memory", Requested: "2Gi", Used: "512Mi", Reserved: "0", Hard: "1Gi", NeverFits: true},
			}},
			wantMsg: "exceeded quota: team, cpu: requested 1500m, used 1, reserved 0, hard 2, " +
				"requests.memory: requested 2Gi, used 512Mi, reserved 0, hard 1Gi (can never fit: the request alone exceeds hard)",
		},
		"a missing request is named as the author wrote it": {
			quota:   cpuQuota.Obj(),
			demand:  demand(web.Obj(), resources.List{pods: 1}, requestsCPU, requestsMemory),
			want:    &Denial{Quota: "team", Missing: []corev1.ResourceName{"cpu", "requests.memory"}},
			wantMsg: "exceeded quota: team, must specify requests for cpu,requests.memory: the quota limits them and the binding places replicas without them",
		},
		"an empty demand always fits, even over quota": {
			quota:  utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "1")).Used(list("cpu", "5")).Obj(),
			demand: demand(web.Obj(), resources.List{}),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l := newLedger(t, tc.quota)
			got := l.Check(tc.demand)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("Check (-want +got):\n%s", diff)
			}
			if got != nil {
				if diff := cmp.Diff(tc.wantMsg, got.Error()); diff != "" {
					t.Errorf("Denial.Error (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestCheckReserveIdempotent replays one admitted write, as the apiserver does when it retries a write after a
// conflict: the second admission fits although the quota is full, and merges instead of charging twice.
func TestCheckReserveIdempotent(t *testing.T) {
	l := newLedger(t, utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "2", "memory", "2Gi")).Used(list("cpu", "1")).Obj())
	key := keyOf(web.Obj())
	owner := utiltesting.ReservationOwner(web.Obj())
	first := Demand{Key: key, Owner: owner, Increase: resources.List{requestsCPU: 1000, requestsMemory: gi}}
	again := Demand{Key: key, Owner: owner, Increase: resources.List{requestsCPU: 500, requestsMemory: 2 * gi}}

	if denial := l.Check(first); denial != nil {
		t.Fatalf("first Check: %v", denial)
	}
	if prior, changed := l.Reserve(first, expires); prior != nil || !changed {
		t.Fatalf("first Reserve = (%v, %v), want (nil, true)", prior, changed)
	}
	if denial := l.Check(first); denial != nil {
		t.Fatalf("Check of the same demand again: %v", denial)
	}
	if prior, changed := l.Reserve(first, expires.Add(time.Minute)); prior != nil || changed {
		t.Fatalf("Reserve of the same demand again = (%v, %v), want (nil, false): nothing to write", prior, changed)
	}
	if denial := l.Check(again); denial != nil {
		t.Fatalf("Check of the same key with other amounts: %v", denial)
	}
	prior, changed := l.Reserve(again, expires.Add(time.Minute))
	if !changed {
		t.Errorf("merging a larger amount reported no change")
	}
	if diff := cmp.Diff(&Reservation{Owner: owner, Generation: 1, Amount: resources.List{requestsCPU: 1000, requestsMemory: gi}, Expires: expires}, prior); diff != "" {
		t.Errorf("prior reservation (-want +got):\n%s", diff)
	}

	want := state{
		Hard:     resources.List{requestsCPU: 2000, requestsMemory: 2 * gi},
		UserName: map[corev1.ResourceName]corev1.ResourceName{requestsCPU: "cpu", requestsMemory: "memory"},
		Used:     resources.List{requestsCPU: 1000},
		// Element-wise max of both demands; not their sum.
		Reserved: resources.List{requestsCPU: 1000, requestsMemory: 2 * gi},
		// A merge keeps the first expiry: the TTL already outlasts every retry of the write.
		Reservations: []Reservation{
			{Owner: owner, Generation: 1, Amount: resources.List{requestsCPU: 1000, requestsMemory: 2 * gi}, Expires: expires},
		},
	}
	if diff := cmp.Diff(want, stateOf(l)); diff != "" {
		t.Errorf("ledger state (-want +got):\n%s", diff)
	}
}

func TestReserveRestoreIf(t *testing.T) {
	base := utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "10", "pods", "10")).
		Reservation(api.Obj(), 1, list("cpu", "1", "pods", "1"), expires)
	withPrior := base.Clone().Reservation(web.Obj(), 1, list("cpu", "2"), expires)
	webDemand := func(increase resources.List) Demand {
		return Demand{Key: keyOf(web.Obj()), Owner: utiltesting.ReservationOwner(web.Obj()), Increase: increase}
	}

	cases := map[string]struct {
		quota   *quotav1alpha1.KarmadaQuota
		demand  Demand
		expires time.Time
		// meanwhile runs between our Reserve and RestoreIf, as another admission of the same write would.
		meanwhile   func(l *Ledger)
		wantPrior   *Reservation
		wantChanged bool
		wantRestore bool
	}{
		"a new key is removed on restore": {
			quota:       base.Obj(),
			demand:      webDemand(resources.List{requestsCPU: 3000, pods: 3}),
			expires:     expires,
			wantChanged: true,
			wantRestore: true,
		},
		"a merged key is restored to what it was": {
			quota:       withPrior.Obj(),
			demand:      webDemand(resources.List{requestsCPU: 1000, pods: 3}),
			expires:     expires.Add(time.Second),
			wantPrior:   &Reservation{Owner: utiltesting.ReservationOwner(web.Obj()), Generation: 1, Amount: resources.List{requestsCPU: 2000}, Expires: expires},
			wantChanged: true,
			wantRestore: true,
		},
		"a reservation merged into since is left alone": {
			quota:   withPrior.Obj(),
			demand:  webDemand(resources.List{requestsCPU: 3000}),
			expires: expires,
			meanwhile: func(l *Ledger) {
				l.Reserve(webDemand(resources.List{requestsCPU: 4000}), expires)
			},
			wantPrior:   &Reservation{Owner: utiltesting.ReservationOwner(web.Obj()), Generation: 1, Amount: resources.List{requestsCPU: 2000}, Expires: expires},
			wantChanged: true,
		},
		"a reservation whose expiry differs from what was written is left alone": {
			quota:   base.Obj(),
			demand:  webDemand(resources.List{requestsCPU: 3000}),
			expires: expires,
			meanwhile: func(l *Ledger) {
				l.Find(keyOf(web.Obj())).Expires = expires.Add(time.Minute)
			},
			wantChanged: true,
		},
		"the same amount again is no change": {
			quota:   withPrior.Obj(),
			demand:  webDemand(resources.List{requestsCPU: 2000}),
			expires: expires.Add(time.Minute),
		},
		"a reservation gone since is not restored": {
			quota:   base.Obj(),
			demand:  webDemand(resources.List{requestsCPU: 3000}),
			expires: expires,
			meanwhile: func(l *Ledger) {
				l.reservations = l.reservations[:1]
				l.reserved = resources.List{requestsCPU: 1000, pods: 1}
			},
			wantChanged: true,
		},
		"an empty demand reserves nothing": {
			quota:   base.Obj(),
			demand:  webDemand(resources.List{}),
			expires: expires,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l := newLedger(t, tc.quota)
			before := stateOf(newLedger(t, tc.quota))

			prior, changed := l.Reserve(tc.demand, tc.expires)
			if diff := cmp.Diff(tc.wantPrior, prior); diff != "" {
				t.Errorf("Reserve prior (-want +got):\n%s", diff)
			}
			if changed != tc.wantChanged {
				t.Errorf("Reserve changed = %v, want %v", changed, tc.wantChanged)
			}
			if !changed {
				if diff := cmp.Diff(before, stateOf(l), cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("unchanged Reserve changed the ledger (-before +after):\n%s", diff)
				}
				return
			}
			wrote := *l.Find(tc.demand.Key)
			if tc.meanwhile != nil {
				tc.meanwhile(l)
			}
			beforeRestore := stateOf(l)
			beforeRestore.Reserved = beforeRestore.Reserved.Clone()
			beforeRestore.Reservations = append([]Reservation(nil), beforeRestore.Reservations...)

			restored := l.RestoreIf(tc.demand.Key, wrote, prior)
			if restored != tc.wantRestore {
				t.Errorf("RestoreIf = %v, want %v", restored, tc.wantRestore)
			}
			want := before
			if !tc.wantRestore {
				want = beforeRestore
			}
			if diff := cmp.Diff(want, stateOf(l), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("ledger after RestoreIf (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWriteReservations(t *testing.T) {
	apiV2 := api.Clone().Generation(2)
	q := utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "10", "requests.memory", "10Gi", "pods", "10")).
		Reservation(web.Obj(), 1, list("requests.cpu", "1500m", "pods", "3"), expires).
		Reservation(apiV2.Obj(), 2, list("cpu", "1", "memory", "1Gi"), expires).
		Reservation(api.Obj(), 1, list("cpu", "500m", "nvidia.com/gpu", "1"), expires.Add(-time.Minute)).
		Obj()
	l := newLedger(t, q)
	// Sub-second expiry: what status can hold is seconds.
	l.Reserve(Demand{Key: keyOf(batch.Obj()), Owner: utiltesting.ReservationOwner(batch.Obj()), Increase: resources.List{pods: 1}},
		expires.Add(1500*time.Millisecond))

	var status quotav1alpha1.KarmadaQuotaLedger
	l.WriteTo(&status)

	owner := utiltesting.ReservationOwner
	want := quotav1alpha1.KarmadaQuotaLedger{
		LedgerState: quotav1alpha1.LedgerState{
			// Fenced at the spec decided on.
			QuotaGeneration:  1,
			ReservationCount: 4,
			// In the order read, the new reservation last.
			Reservations: []quotav1alpha1.Reservation{
				{ReservedBy: owner(web.Obj()), Generation: 1, Reserved: list("cpu", "1500m", "pods", "3"), ExpirationTime: metav1.NewTime(expires)},
				{ReservedBy: owner(apiV2.Obj()), Generation: 2, Reserved: list("cpu", "1", "requests.memory", "1Gi"), ExpirationTime: metav1.NewTime(expires)},
				{ReservedBy: owner(api.Obj()), Generation: 1, Reserved: list("cpu", "500m"), ExpirationTime: metav1.NewTime(expires.Add(-time.Minute))},
				{ReservedBy: owner(batch.Obj()), Generation: 1, Reserved: list("pods", "1"), ExpirationTime: metav1.NewTime(expires.Add(1500 * time.Millisecond))},
			},
		},
	}
	quantity := cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })
	if diff := cmp.Diff(want, status, quantity); diff != "" {
		t.Errorf("ledger object (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(resources.List{requestsCPU: 3000, requestsMemory: 1 << 30, pods: 4}, l.Reserved()); diff != "" {
		t.Errorf("reserved (-want +got):\n%s", diff)
	}

	// Writing an unchanged ledger again renders the same object.
	reread := status.DeepCopy()
	spec := quotav1alpha1.KarmadaQuota{Spec: q.Spec}
	reparsed, err := NewLedger(&spec, reread)
	if err != nil {
		t.Fatal(err)
	}
	var again quotav1alpha1.KarmadaQuotaLedger
	reparsed.WriteTo(&again)
	if diff := cmp.Diff(status, again, quantity); diff != "" {
		t.Errorf("ledger written again (-first +second):\n%s", diff)
	}

	raw, err := json.Marshal(status.Reservations[3].ExpirationTime)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(`"2025-01-01T00:02:01Z"`, string(raw)); diff != "" {
		t.Errorf("expirationTime JSON (-want +got):\n%s", diff)
	}
}

func TestWriteReservationsEmpty(t *testing.T) {
	l := newLedger(t, utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "10")).
		Reservation(web.Obj(), 1, list("cpu", "1"), expires).Obj())
	if !l.RestoreIf(keyOf(web.Obj()), *l.Find(keyOf(web.Obj())), nil) {
		t.Fatalf("RestoreIf of the only reservation failed")
	}
	status := quotav1alpha1.KarmadaQuotaLedger{
		LedgerState: quotav1alpha1.LedgerState{Reservations: []quotav1alpha1.Reservation{{Generation: 9}}, ReservationCount: 1},
	}
	l.WriteTo(&status)
	if diff := cmp.Diff(quotav1alpha1.KarmadaQuotaLedger{
		LedgerState: quotav1alpha1.LedgerState{QuotaGeneration: 1},
	}, status); diff != "" {
		t.Errorf("ledger object (-want +got):\n%s", diff)
	}
}

// TestNewLedgerMalformedReservation: a ledger entry that is not a reservation (hand-edited: the schema takes any
// entry, to serve earlier releases' objects unpruned) fails its quota's decisions, closed, saying which entry and
// why; what it charges is unknown.
func TestNewLedgerMalformedReservation(t *testing.T) {
	q := utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "10")).
		Reservation(web.Obj(), 1, list("cpu", "1"), expires).Obj()
	stored := utiltesting.MoveToLedger(q)
	data := []byte(`{"reservations":["work.karmada.io/v1alpha2 ResourceBinding web uid-web 1 12 cpu=lots"]}`)
	var read quotav1alpha1.KarmadaQuotaLedger
	if err := json.Unmarshal(data, &read); err != nil {
		t.Fatal(err)
	}
	stored.Reservations = append(stored.Reservations, read.Reservations...)
	_, err := NewLedger(q, stored)
	for _, want := range []string{"quota team", "not a reservation", `cpu=lots`, "remove it"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got error %v, want one saying %q", err, want)
		}
	}
}

// TestNewLedgerMalformedObservedCluster: a ledger whose observed usage on a member cluster cannot be read fails its
// quota's decisions, closed (what that cluster uses is unknown), with ErrObservedMalformed, which tells the
// controller to recount without it.
func TestNewLedgerMalformedObservedCluster(t *testing.T) {
	q := utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "10")).Obj()
	q.Spec.Clusters = []quotav1alpha1.ClusterLimit{{Name: "member1", Hard: list("cpu", "4")}}
	var stored quotav1alpha1.KarmadaQuotaLedger
	if err := json.Unmarshal([]byte(`{"observed":{"used":{"cpu":"1"},"clusters":["member1:cpu=lots"]}}`), &stored); err != nil {
		t.Fatal(err)
	}
	_, err := NewLedger(q, &stored)
	if !errors.Is(err, ErrObservedMalformed) {
		t.Fatalf("got error %v, want ErrObservedMalformed", err)
	}
	for _, want := range []string{"quota team", "member1:cpu=lots", "recount"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	stored.Observed.Clusters = []quotav1alpha1.ClusterUsed{{Name: "member1", Used: list("cpu", "3")}}
	l, err := NewLedger(q, &stored)
	if err != nil {
		t.Fatal(err)
	}
	if got := l.RoomOn("member1"); got["requests.cpu"] != 1000 {
		t.Errorf("room on member1 %v, want 1 CPU", got)
	}
}
