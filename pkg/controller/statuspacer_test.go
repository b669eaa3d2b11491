package controller

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

func TestStatusPacer(t *testing.T) {
	now := t0
	p := newStatusPacer(5*time.Second, func() time.Time { return now })
	key := types.NamespacedName{Namespace: ns, Name: "team"}
	stored := &quotav1alpha1.KarmadaQuotaStatus{
		ObservedGeneration: 1, Used: list("cpu", "1"), Reserved: list("cpu", "0"), Summary: "cpu: 1/10",
		Clusters:      []quotav1alpha1.ClusterUsage{{Name: "member1", Hard: list("cpu", "5"), Used: list("cpu", "1")}},
		ClusterGroups: []quotav1alpha1.ClusterGroupUsage{{Name: "eu", Clusters: []string{"member1"}, Used: list("cpu", "1")}},
		Conditions:    []metav1.Condition{{Type: quotav1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonCalculated}},
	}
	counts := stored.DeepCopy()
	counts.Used, counts.Reserved, counts.Summary = list("cpu", "3"), list("cpu", "1"), "cpu: 3/10"
	counts.Clusters[0].Used, counts.Clusters[0].Reserved, counts.Clusters[0].Running = list("cpu", "3"), list("cpu", "1"), list("cpu", "3")
	counts.ClusterGroups[0].Used = list("cpu", "3")

	if got := p.wait(key, stored, counts); got != 0 {
		t.Errorf("first change of a quota waits %s, want none", got)
	}
	p.wrote(key)
	now = now.Add(2 * time.Second)
	if got := p.wait(key, stored, counts); got != 3*time.Second {
		t.Errorf("a change of counts 2s after a write waits %s, want the 3s left of the interval", got)
	}
	for name, change := range map[string]func(*quotav1alpha1.KarmadaQuotaStatus){
		"a new spec observed": func(s *quotav1alpha1.KarmadaQuotaStatus) { s.ObservedGeneration = 2 },
		"a condition":         func(s *quotav1alpha1.KarmadaQuotaStatus) { s.Conditions[0].Status = metav1.ConditionFalse },
		"a cluster's limit":   func(s *quotav1alpha1.KarmadaQuotaStatus) { s.Clusters[0].Hard = list("cpu", "6") },
		"a cluster newly shown": func(s *quotav1alpha1.KarmadaQuotaStatus) {
			s.Clusters = append(s.Clusters, quotav1alpha1.ClusterUsage{Name: "member2", Used: list("cpu", "1")})
		},
		"a group's clusters": func(s *quotav1alpha1.KarmadaQuotaStatus) { s.ClusterGroups[0].Clusters = nil },
	} {
		rendered := counts.DeepCopy()
		change(rendered)
		if got := p.wait(key, stored, rendered); got != 0 {
			t.Errorf("%s waits %s, want none", name, got)
		}
	}
	now = now.Add(3 * time.Second)
	if got := p.wait(key, stored, counts); got != 0 {
		t.Errorf("a change of counts once the interval passed waits %s, want none", got)
	}
	if got := (*statusPacer)(nil).wait(key, stored, counts); got != 0 {
		t.Errorf("without a pacer a change waits %s", got)
	}
	if got := newStatusPacer(0, func() time.Time { return now }).wait(key, stored, counts); got != 0 {
		t.Errorf("with interval 0 a change waits %s", got)
	}
}

// TestReconcileHoldsCountsBack: with a status interval, a recount that only moves counts settles the ledger at once
// and shows the counts in the metrics, writes the status at the end of the interval, and requeues itself for it.
func TestReconcileHoldsCountsBack(t *testing.T) {
	web := utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")).Cluster("member1", 1)
	team := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10")).Obj()
	// The ledger an admission created: what the webhook decides on.
	f := newFixture(t, interceptor.Funcs{}, web.Obj(), team, utiltesting.MoveToLedger(team))
	result := recountGrowthWithinTheInterval(t, f)
	if got := f.statusWrites.Load(); got != 1 {
		t.Errorf("status writes = %d, want still 1: counts alone wait for the interval", got)
	}
	if diff := cmp.Diff(list("cpu", "3"), f.mustLedger(t, "team").Observed.Used, statusOpts); diff != "" {
		t.Errorf("the ledger, settled at once (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(list("cpu", "1"), f.quota(t, "team").Status.Used, statusOpts); diff != "" {
		t.Errorf("status used (-want +got):\n%s", diff)
	}
	if result.RequeueAfter != 4*time.Second {
		t.Errorf("requeued after %s, want the 4s left of the interval", result.RequeueAfter)
	}
	snapshots := f.state.Snapshots()
	if len(snapshots) != 1 || snapshots[0].Used["cpu"] != 3 {
		t.Errorf("metrics %+v, want the recount's 3 cpu used", snapshots)
	}

	f.clock.Step(4 * time.Second)
	f.mustReconcile(t, "team")
	if got := f.statusWrites.Load(); got != 2 {
		t.Errorf("status writes = %d, want 2 at the end of the interval", got)
	}
	if diff := cmp.Diff(list("cpu", "3"), f.quota(t, "team").Status.Used, statusOpts); diff != "" {
		t.Errorf("status used at the end of the interval (-want +got):\n%s", diff)
	}

	// Status changed by someone else is repaired at once, interval or not.
	f.clock.Step(time.Second)
	q := f.quota(t, "team")
	q.Status.Used = list("cpu", "0")
	if err := f.client.Status().Update(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	f.mustReconcile(t, "team")
	if diff := cmp.Diff(list("cpu", "3"), f.quota(t, "team").Status.Used, statusOpts); diff != "" {
		t.Errorf("status used after a hand edit (-want +got):\n%s", diff)
	}
}

// TestReconcileWritesCountsAtOnceWithoutALedger: a quota no admission has reserved on has no ledger, and the webhook
// decides on its status: the status interval does not hold its counts back, and no ledger is made for it.
func TestReconcileWritesCountsAtOnceWithoutALedger(t *testing.T) {
	web := utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")).Cluster("member1", 1)
	f := newFixture(t, interceptor.Funcs{}, web.Obj(), utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10")).Obj())
	result := recountGrowthWithinTheInterval(t, f)
	if got := f.statusWrites.Load(); got != 2 {
		t.Errorf("status writes = %d, want 2: without a ledger, counts are written at once", got)
	}
	if diff := cmp.Diff(list("cpu", "3"), f.quota(t, "team").Status.Used, statusOpts); diff != "" {
		t.Errorf("status used (-want +got):\n%s", diff)
	}
	if result.RequeueAfter != 0 {
		t.Errorf("requeued after %s, want nothing to come back for", result.RequeueAfter)
	}
	if l := f.ledger(t, "team"); l != nil || f.ledgerWrites.Load() != 0 {
		t.Errorf("ledger %+v after %d writes, want none", l, f.ledgerWrites.Load())
	}
}

// recountGrowthWithinTheInterval gives f's controller a 5s status interval and recounts quota team, whose first
// status is written at once; then, a second later, web places 3 replicas, and it recounts again.
func recountGrowthWithinTheInterval(t *testing.T, f *fixture) ctrl.Result {
	t.Helper()
	f.reconciler.statusPacer = newStatusPacer(5*time.Second, f.clock.Now)
	f.mustReconcile(t, "team")
	if got := f.statusWrites.Load(); got != 1 {
		t.Fatalf("status writes = %d, want 1: the first recount writes at once", got)
	}
	f.clock.Step(time.Second)
	f.place(t, "web", 3)
	return f.mustReconcile(t, "team")
}
