package quota

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"

	"github.com/karmada-quota/karmada-quota/pkg/resources"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

// TestFailoverAtTheLimit: in a namespace at its limit, the replacement of replicas a graceful eviction keeps
// running is admitted, and reserved, so that the next growth sees the namespace over hard and is refused until the
// task ends.
func TestFailoverAtTheLimit(t *testing.T) {
	web := func() *utiltesting.BindingWrapper {
		return utiltesting.MakeBinding("ns", "web").Replicas(4).Requests(list("cpu", "500m"))
	}
	evicted := web().Cluster("member1", 2).Cluster("member2", 2).Evict("member1", nil, false)
	replaced := web().Cluster("member2", 4)
	replaced.Spec.GracefulEvictionTasks = evicted.Obj().Spec.GracefulEvictionTasks
	replaced.Generation(2)

	l := newLedger(t, utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "2")).Used(list("cpu", "2")).Obj())
	oldUsage := usageOf(t, evicted.Obj())
	d := l.Demand(keyOf(replaced.Obj()), utiltesting.ReservationOwner(replaced.Obj()), usageOf(t, replaced.Obj()), &oldUsage)
	if denial := l.Check(d); denial != nil {
		t.Fatalf("the replacement was refused at the limit: %v", denial)
	}
	if diff := cmp.Diff(resources.List{requestsCPU: 1000}, d.Increase); diff != "" {
		t.Errorf("the replacement reserves (-want +got):\n%s", diff)
	}
	l.Reserve(d, expires)

	api := utiltesting.MakeBinding("ns", "api").Replicas(1).Requests(list("cpu", "1m")).Cluster("member2", 1)
	growth := l.Demand(keyOf(api.Obj()), utiltesting.ReservationOwner(api.Obj()), usageOf(t, api.Obj()), nil)
	denial := l.Check(growth)
	if denial == nil {
		t.Fatal("growth was admitted in a namespace over hard through a failover")
	}
	if got, want := denial.Error(), "exceeded quota: team, cpu: requested 1m, used 2, reserved 1, hard 2"; got != want {
		t.Errorf("refusal %q, want %q", got, want)
	}
}

// TestRecountShowsEvicting: the recount charges what a graceful eviction keeps running on its cluster, says which
// part of that cluster's usage it is, and until when: the longest grace there, none while one is held.
func TestRecountShowsEvicting(t *testing.T) {
	web := utiltesting.MakeBinding("ns", "web").Replicas(4).Requests(list("cpu", "500m")).
		Cluster("member1", 2).Cluster("member2", 2).Evict("member1", nil, false)
	web.Spec.Clusters = nil
	web.Cluster("member2", 4)
	api := utiltesting.MakeBinding("ns", "api").Replicas(1).Requests(list("cpu", "1")).
		Cluster("member1", 1).Evict("member1", nil, true)
	api.Cluster("member3", 1)

	l := newLedger(t, utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "10")).Obj())
	tally := Recount(l, Observation{
		Bindings:        []workv1alpha2.ResourceBinding{*web.Obj()},
		EvictionTimeout: 10 * time.Minute, Now: now,
	})
	if diff := cmp.Diff(resources.List{requestsCPU: 3000}, tally.Used); diff != "" {
		t.Errorf("Used (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]resources.List{"member1": {requestsCPU: 1000}}, tally.Evicting); diff != "" {
		t.Errorf("Evicting (-want +got):\n%s", diff)
	}
	if until := tally.EvictingUntil["member1"]; until == nil || !until.Equal(utiltesting.FixedTime.Add(10*time.Minute)) {
		t.Errorf("EvictingUntil = %v, want Karmada's timeout after the task was made", until)
	}

	tally = Recount(l, Observation{
		Bindings:        []workv1alpha2.ResourceBinding{*web.Obj(), *api.Obj()},
		EvictionTimeout: 10 * time.Minute, Now: now,
	})
	if diff := cmp.Diff(map[string]resources.List{"member1": {requestsCPU: 2000}}, tally.Evicting); diff != "" {
		t.Errorf("Evicting (-want +got):\n%s", diff)
	}
	if until, ok := tally.EvictingUntil["member1"]; !ok || until != nil {
		t.Errorf("EvictingUntil = %v, %v; want none while one eviction is held until released", until, ok)
	}
}
