package controller

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/metrics"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

// refusedAt is a binding of replicas × 1 CPU that a quota refused at the given time.
func refusedAt(name string, replicas int32, at time.Time) *utiltesting.BindingWrapper {
	w := utiltesting.MakeBinding(ns, name).Requests(list("cpu", "1")).Replicas(replicas).
		Scheduled(false, workv1alpha2.BindingReasonQuotaExceeded)
	meta.FindStatusCondition(w.Status.Conditions, workv1alpha2.Scheduled).LastTransitionTime = metav1.NewTime(at)
	return w
}

// TestReconcileCountsWaitingBindings exports the bindings waiting on a quota from each recount, and none once
// they are placed.
func TestReconcileCountsWaitingBindings(t *testing.T) {
	big := running("big", 2)
	waiter := refusedAt("waiting", 1, t0.Add(-time.Hour))
	f := newFixture(t, interceptor.Funcs{}, big.Obj(), waiter.Obj(), utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "2")).Obj())

	f.mustReconcile(t, "team")
	snapshots := f.state.Snapshots()
	if len(snapshots) != 1 || snapshots[0].Waiting != 1 || !snapshots[0].OldestWaiting.Equal(t0.Add(-time.Hour)) {
		t.Fatalf("snapshots = %+v, want one binding waiting since %v", snapshots, t0.Add(-time.Hour))
	}

	// The scheduler places it once the big one is gone.
	if err := f.client.Delete(context.Background(), big.Obj()); err != nil {
		t.Fatalf("deleting a binding: %v", err)
	}
	placed := f.binding(t, "waiting")
	placed.Spec.Clusters = []workv1alpha2.TargetCluster{{Name: "member1", Replicas: 1}}
	meta.SetStatusCondition(&placed.Status.Conditions, metav1.Condition{Type: workv1alpha2.Scheduled, Status: metav1.ConditionTrue, Reason: workv1alpha2.BindingReasonSuccess})
	if err := f.client.Update(context.Background(), placed); err != nil {
		t.Fatalf("placing the binding: %v", err)
	}
	if err := f.client.Status().Update(context.Background(), placed); err != nil {
		t.Fatalf("writing the binding's status: %v", err)
	}
	f.mustReconcile(t, "team")
	if got := f.state.Snapshots(); len(got) != 1 || got[0].Waiting != 0 || !got[0].OldestWaiting.IsZero() {
		t.Errorf("snapshots = %+v, want none waiting", got)
	}
}

type fakeInformer bool

func (f fakeInformer) HasSynced() bool { return bool(f) }

func TestStoredQuotas(t *testing.T) {
	current := utiltesting.MakeQuota(ns, "current").Hard(list("cpu", "1")).Obj()
	current.Generation = 2
	current.Status.ObservedGeneration = 2
	current.Status.Conditions = []metav1.Condition{ready(2, t0)}
	behind := utiltesting.MakeQuota(ns, "behind").Hard(list("cpu", "1")).Obj()
	behind.Generation = 3
	behind.Status.ObservedGeneration = 2
	behind.Status.Conditions = []metav1.Condition{ready(2, t0)}
	invalid := utiltesting.MakeQuota(ns, "invalid").Hard(list("cpu", "1")).Obj()
	invalid.Generation = 1
	invalid.Status.ObservedGeneration = 1
	invalid.Status.Conditions = []metav1.Condition{{Type: quotav1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonInvalidSpec, LastTransitionTime: metav1.NewTime(t0)}}
	fresh := utiltesting.MakeQuota(ns, "fresh").Hard(list("cpu", "1")).Obj()
	fresh.Generation = 1
	f := newFixture(t, interceptor.Funcs{}, current, behind, invalid, fresh)

	got := storedQuotas{reader: f.client, informer: fakeInformer(true)}.StoredQuotas()
	want := []metrics.StoredQuota{
		{Namespace: ns, Name: "behind", Generation: 3, ObservedGeneration: 2, Ready: true},
		{Namespace: ns, Name: "current", Generation: 2, ObservedGeneration: 2, Ready: true},
		// Never counted: no observed generation, no Ready condition.
		{Namespace: ns, Name: "fresh", Generation: 1},
		{Namespace: ns, Name: "invalid", Generation: 1, ObservedGeneration: 1},
	}
	byName := cmpopts.SortSlices(func(a, b metrics.StoredQuota) bool { return a.Name < b.Name })
	if diff := cmp.Diff(want, got, byName); diff != "" {
		t.Errorf("StoredQuotas (-want +got):\n%s", diff)
	}

	if got := (storedQuotas{reader: f.client, informer: fakeInformer(false)}).StoredQuotas(); len(got) != 0 {
		t.Errorf("StoredQuotas before the cache synced = %+v, want none", got)
	}
	failing := newFixture(t, interceptor.Funcs{
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			return errors.New("cache stopped")
		},
	}, current)
	if got := (storedQuotas{reader: failing.client, informer: fakeInformer(true)}).StoredQuotas(); len(got) != 0 {
		t.Errorf("StoredQuotas when the list fails = %+v, want none", got)
	}
}
