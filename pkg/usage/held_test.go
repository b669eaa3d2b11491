package usage

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/karmada-quota/karmada-quota/pkg/resources"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

const (
	claims        = corev1.ResourcePersistentVolumeClaims
	storage       = corev1.ResourceRequestsStorage
	loadBalancers = corev1.ResourceServicesLoadBalancers
	pvcTemplates  = corev1.ResourceName("count/persistentvolumeclaims")
)

func mustWith(t *testing.T, b *utiltesting.BindingWrapper, held Held) Usage {
	t.Helper()
	u, err := With(b.Obj(), held)
	if err != nil {
		t.Fatalf("With: %v", err)
	}
	return u
}

// TestHeldPerCluster: an object sent to members without replicas (a PersistentVolumeClaim, a Service) holds what
// it holds once on each of them, whether its binding lists them or, pulled in by its dependents, names them under
// requiredBy; it places no pods.
func TestHeldPerCluster(t *testing.T) {
	claim := Held{PerCluster: resources.List{claims: 1, storage: gi}}
	pvc := func(name string) *utiltesting.BindingWrapper {
		return utiltesting.MakeBinding("ns", name).Resource("v1", "PersistentVolumeClaim")
	}
	twoClaims := Charge{
		Total:    resources.List{pvcTemplates: 1, claims: 2, storage: 2 * gi},
		Clusters: map[string]resources.List{"member1": {claims: 1, storage: gi}, "member2": {claims: 1, storage: gi}},
	}
	cases := map[string]struct {
		binding *utiltesting.BindingWrapper
		held    Held
		want    Charge
	}{
		"propagated to two members: two claims, twice the storage": {
			binding: pvc("data").Cluster("member1", 0).Cluster("member2", 0), held: claim, want: twoClaims,
		},
		"pulled in by two dependents on the same members: each member once": {
			binding: pvc("data").RequiredBy("web", "member1", "member2").RequiredBy("worker", "member2", "member1"),
			held:    claim, want: twoClaims,
		},
		"unscheduled: the object alone": {
			binding: pvc("data"), held: claim,
			want: Charge{Total: resources.List{pvcTemplates: 1}, Clusters: map[string]resources.List{}},
		},
		"a Service of type LoadBalancer on two members: two load balancers": {
			binding: utiltesting.MakeBinding("ns", "front").Resource("v1", "Service").Cluster("member1", 0).Cluster("member2", 0),
			held:    Held{PerCluster: resources.List{loadBalancers: 1}},
			want: Charge{
				Total:    resources.List{"count/services": 1, loadBalancers: 2},
				Clusters: map[string]resources.List{"member1": {loadBalancers: 1}, "member2": {loadBalancers: 1}},
			},
		},
		"a StatefulSet's claim templates: one claim per replica where the replica is placed": {
			binding: utiltesting.MakeBinding("ns", "db").Resource("apps/v1", "StatefulSet").Replicas(4).
				Requests(utiltesting.List("cpu", "100m")).Cluster("member1", 3).Cluster("member2", 1),
			held: Held{PerReplica: resources.List{claims: 1, storage: gi}},
			want: Charge{
				Total: resources.List{"count/statefulsets.apps": 1, pods: 4, requestsCPU: 400, claims: 4, storage: 4 * gi},
				Clusters: map[string]resources.List{
					"member1": {pods: 3, requestsCPU: 300, claims: 3, storage: 3 * gi},
					"member2": {pods: 1, requestsCPU: 100, claims: 1, storage: gi},
				},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := mustWith(t, tc.binding, tc.held).Charge(Selector{})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Charge (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMissingStorage: no request, no admission, for claims too: a claim that requests no storage is refused under a
// quota limiting storage (in general, or in its class), and nowhere else.
func TestMissingStorage(t *testing.T) {
	gold := resources.StorageClassStorage("gold")
	withoutStorage := Held{PerCluster: resources.List{claims: 1, resources.StorageClassClaims("gold"): 1}}
	withStorage := Held{PerCluster: resources.List{claims: 1, storage: gi, resources.StorageClassClaims("gold"): 1, gold: gi}}
	pvc := utiltesting.MakeBinding("ns", "data").Resource("v1", "PersistentVolumeClaim").Cluster("member1", 0)
	sts := utiltesting.MakeBinding("ns", "db").Resource("apps/v1", "StatefulSet").Replicas(2).
		Requests(utiltesting.List("cpu", "100m", "memory", "1Gi")).Cluster("member1", 2)
	cases := map[string]struct {
		binding *utiltesting.BindingWrapper
		held    Held
		limited []corev1.ResourceName
		want    []corev1.ResourceName
	}{
		"a claim without storage under requests.storage": {pvc, withoutStorage, []corev1.ResourceName{storage}, []corev1.ResourceName{storage}},
		"under its class's storage":                      {pvc, withoutStorage, []corev1.ResourceName{gold}, []corev1.ResourceName{gold}},
		"under another class's storage":                  {pvc, withoutStorage, []corev1.ResourceName{resources.StorageClassStorage("silver")}, nil},
		"under claims alone":                             {pvc, withoutStorage, []corev1.ResourceName{claims}, nil},
		"a claim with storage":                           {pvc, withStorage, []corev1.ResourceName{storage, gold}, nil},
		"claim templates without storage":                {sts, Held{PerReplica: resources.List{claims: 1}}, []corev1.ResourceName{storage, requestsCPU}, []corev1.ResourceName{storage}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := mustWith(t, tc.binding, tc.held).MissingRequests(Selector{}, tc.limited)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("MissingRequests (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFailover walks a taint-based failover of a Divided Deployment of 4 × 500m over two members: what members run
// is charged at every step, and what admission holds the binding to grows only with real growth.
func TestFailover(t *testing.T) {
	web := func() *utiltesting.BindingWrapper {
		return utiltesting.MakeBinding("ns", "web").Replicas(4).Requests(utiltesting.List("cpu", "500m"))
	}
	charge := func(b *utiltesting.BindingWrapper) Charge { return mustWith(t, b, Held{}).Charge(Selector{}) }

	before := charge(web().Cluster("member1", 2).Cluster("member2", 2))
	evicted := charge(web().Cluster("member1", 2).Cluster("member2", 2).Evict("member1", nil, false))
	if diff := cmp.Diff(before.Total, evicted.Total); diff != "" {
		t.Errorf("the eviction changed what is charged (-before +after):\n%s", diff)
	}
	if got, want := evicted.Evicting, map[string]resources.List{"member1": {pods: 2, requestsCPU: 1000}}; !cmp.Equal(got, want) {
		t.Errorf("Evicting = %v, want %v", got, want)
	}
	if d := EntitledDelta(evicted, &before).Positive(); len(d) > 0 {
		t.Errorf("the eviction grows what the binding is held to by %v: it is a move", d)
	}

	// The scheduler places the 2 evicted replicas again, on the member left.
	replacement := web().Cluster("member2", 4)
	replacement.Spec.GracefulEvictionTasks = web().Cluster("member1", 2).Evict("member1", nil, false).Spec.GracefulEvictionTasks
	after := charge(replacement)
	if got, want := after.Total, (resources.List{deployments: 1, pods: 6, requestsCPU: 3000}); !cmp.Equal(got, want) {
		t.Errorf("with the replacement placed, Total = %v, want %v: members run both until the task ends", got, want)
	}
	if got, want := Delta(after, &evicted), (resources.List{pods: 2, requestsCPU: 1000}); !cmp.Equal(got.Positive(), want) {
		t.Errorf("the replacement adds %v to what runs, want %v (reserved)", got, want)
	}
	if d := EntitledDelta(after, &evicted).Positive(); len(d) > 0 {
		t.Errorf("the replacement grows what the binding is held to by %v: it is a move", d)
	}
	// Growth during the failover is growth: a fifth replica is checked.
	grown := web().Replicas(5).Cluster("member2", 5)
	grown.Spec.GracefulEvictionTasks = replacement.Spec.GracefulEvictionTasks
	if got, want := EntitledDelta(charge(grown), &after).Positive(), (resources.List{pods: 1, requestsCPU: 500}); !cmp.Equal(got, want) {
		t.Errorf("a fifth replica during the failover grows the binding by %v, want %v", got, want)
	}
	// The task ends: charged what the member left runs.
	done := charge(web().Cluster("member2", 4))
	if got, want := done.Total, (resources.List{deployments: 1, pods: 4, requestsCPU: 2000}); !cmp.Equal(got, want) || done.Evicting != nil || done.Entitled != nil {
		t.Errorf("after the task, Total = %v (want %v), Evicting = %v, Entitled = %v", got, want, done.Evicting, done.Entitled)
	}
}

// TestEvictionUntil: an eviction ends at its own grace period, Karmada's timeout without one, never while held.
func TestEvictionUntil(t *testing.T) {
	at := utiltesting.FixedTime.Time
	rb := utiltesting.MakeBinding("ns", "web").Replicas(3).Requests(utiltesting.List("cpu", "1")).
		Cluster("member1", 1).Cluster("member2", 1).Cluster("member3", 1).
		Evict("member1", nil, false).Evict("member2", ptr(int32(60)), false).Evict("member3", nil, true)
	u := mustWith(t, rb, Held{})
	want := []struct {
		until time.Time
		ok    bool
	}{{at.Add(10 * time.Minute), true}, {at.Add(time.Minute), true}, {time.Time{}, false}}
	for i, e := range u.Evictions {
		until, ok := e.Until(10 * time.Minute)
		if !until.Equal(want[i].until) || ok != want[i].ok {
			t.Errorf("eviction from %s ends %v, %v; want %v, %v", e.Cluster, until, ok, want[i].until, want[i].ok)
		}
	}
}
