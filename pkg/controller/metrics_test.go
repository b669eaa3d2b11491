package controller

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
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

// TestReconcileExportsBusinessQuota: a business quota's recount exports it under its name with no namespace, and
// what each namespace it selects uses, every limited resource of each present (a namespace that uses nothing at 0);
// a namespace labelled out leaves the next recount's metrics, and a deleted business quota leaves them all. A
// KarmadaQuota recounted beside it exports no namespace parts.
func TestReconcileExportsBusinessQuota(t *testing.T) {
	shopKey := types.NamespacedName{Name: "shop"}
	f := newFixture(t, interceptor.Funcs{},
		utiltesting.BusinessQuota("shop", list("cpu", "10", "pods", "20")),
		utiltesting.Namespace("shop-dev", map[string]string{"business": "shop"}),
		utiltesting.Namespace("shop-prod", map[string]string{"business": "shop"}),
		utiltesting.Namespace("shop-new", map[string]string{"business": "shop"}),
		utiltesting.Namespace(ns, nil),
		utiltesting.MakeBinding("shop-dev", "web").Requests(list("cpu", "1")).Cluster("member1", 2).Obj(),
		utiltesting.MakeBinding("shop-prod", "web").Requests(list("cpu", "1")).Cluster("member1", 3).Obj(),
		utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "2")).Obj(),
	)
	reconcileShop := func() {
		t.Helper()
		if _, err := f.reconciler.Reconcile(context.Background(), ctrl.Request{NamespacedName: shopKey}); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
	}
	byName := func() map[string]metrics.QuotaSnapshot {
		out := map[string]metrics.QuotaSnapshot{}
		for _, s := range f.state.Snapshots() {
			out[s.Namespace+"/"+s.Name] = s
		}
		return out
	}
	reconcileShop()
	f.mustReconcile(t, "team")

	got := byName()
	shop, ok := got["/shop"]
	if !ok {
		t.Fatalf("snapshots %v: none of business quota shop, with an empty namespace", got)
	}
	if diff := cmp.Diff(map[string]float64{"cpu": 5, "pods": 5}, shop.Used); diff != "" {
		t.Errorf("shop's used (-want +got):\n%s", diff)
	}
	want := map[string]map[string]float64{
		"shop-dev":  {"cpu": 2, "pods": 2},
		"shop-new":  {"cpu": 0, "pods": 0},
		"shop-prod": {"cpu": 3, "pods": 3},
	}
	if diff := cmp.Diff(want, shop.Namespaces); diff != "" {
		t.Errorf("shop's namespaces (-want +got):\n%s", diff)
	}
	if team, ok := got[ns+"/team"]; !ok || team.Namespaces != nil {
		t.Errorf("KarmadaQuota %s/team: snapshot %+v (found %v), want one without namespace parts", ns, team, ok)
	}

	// shop-dev is labelled out of the business: its part leaves the metrics with the next recount, and its usage the
	// business's total.
	var dev corev1.Namespace
	if err := f.client.Get(context.Background(), client.ObjectKey{Name: "shop-dev"}, &dev); err != nil {
		t.Fatal(err)
	}
	dev.Labels = map[string]string{"business": "elsewhere"}
	if err := f.client.Update(context.Background(), &dev); err != nil {
		t.Fatal(err)
	}
	reconcileShop()
	shop = byName()["/shop"]
	delete(want, "shop-dev")
	if diff := cmp.Diff(want, shop.Namespaces); diff != "" {
		t.Errorf("shop's namespaces after shop-dev left (-want +got):\n%s", diff)
	}
	if shop.Used["cpu"] != 3 {
		t.Errorf("shop's used cpu %v after shop-dev left, want 3", shop.Used["cpu"])
	}

	// The business quota deleted: nothing of it is exported; the KarmadaQuota's stays.
	if err := f.client.Delete(context.Background(), utiltesting.BusinessQuota("shop", nil)); err != nil {
		t.Fatal(err)
	}
	reconcileShop()
	got = byName()
	if _, ok := got["/shop"]; ok || len(got) != 1 {
		t.Errorf("snapshots after shop was deleted: %v, want %s/team's only", got, ns)
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
	business := utiltesting.BusinessQuota("business", list("cpu", "1"))
	business.Generation = 4
	business.Status.ObservedGeneration = 3
	f := newFixture(t, interceptor.Funcs{}, current, behind, invalid, fresh, business)

	synced := []interface{ HasSynced() bool }{fakeInformer(true), fakeInformer(true)}
	got := storedQuotas{reader: f.client, informers: synced}.StoredQuotas()
	want := []metrics.StoredQuota{
		{Namespace: ns, Name: "behind", Generation: 3, ObservedGeneration: 2, Ready: true},
		// A business quota's, without a namespace.
		{Name: "business", Generation: 4, ObservedGeneration: 3},
		{Namespace: ns, Name: "current", Generation: 2, ObservedGeneration: 2, Ready: true},
		// Never counted: no observed generation, no Ready condition.
		{Namespace: ns, Name: "fresh", Generation: 1},
		{Namespace: ns, Name: "invalid", Generation: 1, ObservedGeneration: 1},
	}
	byName := cmpopts.SortSlices(func(a, b metrics.StoredQuota) bool { return a.Name < b.Name })
	if diff := cmp.Diff(want, got, byName); diff != "" {
		t.Errorf("StoredQuotas (-want +got):\n%s", diff)
	}

	notSynced := []interface{ HasSynced() bool }{fakeInformer(true), fakeInformer(false)}
	if got := (storedQuotas{reader: f.client, informers: notSynced}).StoredQuotas(); len(got) != 0 {
		t.Errorf("StoredQuotas before the cache synced = %+v, want none", got)
	}
	failing := newFixture(t, interceptor.Funcs{
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			return errors.New("cache stopped")
		},
	}, current)
	if got := (storedQuotas{reader: failing.client, informers: synced}).StoredQuotas(); len(got) != 0 {
		t.Errorf("StoredQuotas when the list fails = %+v, want none", got)
	}
}
