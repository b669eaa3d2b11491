package controller

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/quota"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

// TestReconcileBusinessQuota: a business quota counts the bindings of the namespaces its selector chooses now, in
// all and per namespace; a namespace not selected, or no longer, counts nothing; reservations of writes observed, and
// of a namespace labelled out, are settled; its ledger is a KarmadaBusinessQuotaLedger.
func TestReconcileBusinessQuota(t *testing.T) {
	expires := t0.Add(time.Minute)
	dev := utiltesting.MakeBinding("shop-dev", "web").Requests(list("cpu", "1")).Cluster("member1", 2)
	prod := utiltesting.MakeBinding("shop-prod", "web").Requests(list("cpu", "1")).Cluster("member1", 3)
	pending := utiltesting.MakeBinding("shop-prod", "api").Requests(list("cpu", "1"))
	other := utiltesting.MakeBinding("other", "web").Requests(list("cpu", "1")).Cluster("member1", 7)
	left := utiltesting.MakeBinding("shop-old", "web").Requests(list("cpu", "1")).Cluster("member1", 1)

	bq := utiltesting.BusinessQuota("shop", list("cpu", "10"))
	owner := func(rb *utiltesting.BindingWrapper) quotav1alpha1.ReservationOwner {
		o := utiltesting.ReservationOwner(rb.Obj())
		o.Namespace = rb.Namespace
		return o
	}
	ledger := &quotav1alpha1.KarmadaBusinessQuotaLedger{
		ObjectMeta: metav1.ObjectMeta{Name: "shop", OwnerReferences: quota.LedgerOwner(bq.AsKarmadaQuota())},
		LedgerState: quotav1alpha1.LedgerState{
			QuotaGeneration: 1,
			Reservations: []quotav1alpha1.Reservation{
				// Observed: settles.
				{ReservedBy: owner(dev), Generation: 1, Reserved: list("cpu", "2"), ExpirationTime: metav1.NewTime(expires)},
				// Its write is not observed yet: stays.
				{ReservedBy: owner(pending), Generation: 2, Reserved: list("cpu", "4"), ExpirationTime: metav1.NewTime(expires)},
				// In a namespace labelled out: observed there, settles.
				{ReservedBy: owner(left), Generation: 1, Reserved: list("cpu", "1"), ExpirationTime: metav1.NewTime(expires)},
			},
			ReservationCount: 3,
		},
	}
	// Written when shop-old was in the business.
	staleView := &quotav1alpha1.AppliedBusinessQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "shop-old", Name: "shop",
		Labels: map[string]string{appliedLabel: "shop"}}}
	f := newFixture(t, interceptor.Funcs{}, bq, ledger, staleView,
		utiltesting.Namespace("shop-dev", map[string]string{"business": "shop"}),
		utiltesting.Namespace("shop-prod", map[string]string{"business": "shop"}),
		utiltesting.Namespace("shop-old", map[string]string{"business": "was-shop"}),
		utiltesting.Namespace("other", nil),
		dev.Obj(), prod.Obj(), pending.Obj(), other.Obj(), left.Obj(),
	)
	if _, err := f.reconciler.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: "shop"}}); err != nil {
		t.Fatal(err)
	}

	var got quotav1alpha1.KarmadaBusinessQuota
	if err := f.client.Get(context.Background(), client.ObjectKey{Name: "shop"}, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(list("cpu", "5"), got.Status.Used, statusOpts); diff != "" {
		t.Errorf("used (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(list("cpu", "4"), got.Status.Reserved, statusOpts); diff != "" {
		t.Errorf("reserved (-want +got):\n%s", diff)
	}
	wantNamespaces := []quotav1alpha1.NamespaceUsage{
		{Name: "shop-dev", Used: list("cpu", "2")},
		{Name: "shop-prod", Used: list("cpu", "3")},
	}
	if diff := cmp.Diff(wantNamespaces, got.Status.Namespaces, statusOpts); diff != "" {
		t.Errorf("namespaces (-want +got):\n%s", diff)
	}
	if got.Status.NamespaceCount != 2 {
		t.Errorf("namespaceCount %d, want 2", got.Status.NamespaceCount)
	}
	if got.Status.Summary != "cpu: 5/10" {
		t.Errorf("summary %q", got.Status.Summary)
	}

	var stored quotav1alpha1.KarmadaBusinessQuotaLedger
	if err := f.client.Get(context.Background(), client.ObjectKey{Name: "shop"}, &stored); err != nil {
		t.Fatal(err)
	}
	var left2 []string
	for _, r := range stored.Reservations {
		left2 = append(left2, r.ReservedBy.Namespace+"/"+r.ReservedBy.Name)
	}
	if diff := cmp.Diff([]string{"shop-prod/api"}, left2); diff != "" {
		t.Errorf("reservations left (-want +got):\n%s", diff)
	}
	if stored.Observed == nil {
		t.Fatal("the ledger records no usage observed")
	}
	if diff := cmp.Diff(list("cpu", "5"), stored.Observed.Used, statusOpts); diff != "" {
		t.Errorf("ledger's observed used (-want +got):\n%s", diff)
	}

	// Each selected namespace has its team's view: the business's totals and its own part, nothing of the others.
	var views quotav1alpha1.AppliedBusinessQuotaList
	if err := f.client.List(context.Background(), &views); err != nil {
		t.Fatal(err)
	}
	gotViews := map[string]quotav1alpha1.AppliedBusinessQuotaStatus{}
	for _, v := range views.Items {
		gotViews[v.Namespace+"/"+v.Name] = v.Status
		if !metav1.IsControlledBy(&v, &got) {
			t.Errorf("view %s/%s is not owned by the business quota: %+v", v.Namespace, v.Name, v.OwnerReferences)
		}
	}
	view := func(namespaceUsed string) quotav1alpha1.AppliedBusinessQuotaStatus {
		return quotav1alpha1.AppliedBusinessQuotaStatus{
			Hard: list("cpu", "10"), Used: list("cpu", "5"), Reserved: list("cpu", "4"), NamespaceUsed: list("cpu", namespaceUsed),
			Summary: "cpu: 5/10", NamespaceSummary: "cpu: " + namespaceUsed + "/10", ObservedGeneration: 1,
		}
	}
	wantViews := map[string]quotav1alpha1.AppliedBusinessQuotaStatus{"shop-dev/shop": view("2"), "shop-prod/shop": view("3")}
	if diff := cmp.Diff(wantViews, gotViews, statusOpts); diff != "" {
		t.Errorf("views (-want +got):\n%s", diff)
	}

	// A recount that changes nothing writes nothing, views included.
	writes := f.statusWrites.Load()
	var before quotav1alpha1.AppliedBusinessQuota
	if err := f.client.Get(context.Background(), client.ObjectKey{Namespace: "shop-dev", Name: "shop"}, &before); err != nil {
		t.Fatal(err)
	}
	if _, err := f.reconciler.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: "shop"}}); err != nil {
		t.Fatal(err)
	}
	var after quotav1alpha1.AppliedBusinessQuota
	if err := f.client.Get(context.Background(), client.ObjectKey{Namespace: "shop-dev", Name: "shop"}, &after); err != nil {
		t.Fatal(err)
	}
	if f.statusWrites.Load() != writes || after.ResourceVersion != before.ResourceVersion {
		t.Errorf("a second recount wrote: status writes %d -> %d, view resourceVersion %s -> %s", writes, f.statusWrites.Load(), before.ResourceVersion, after.ResourceVersion)
	}
}

// TestReconcileBusinessQuotaInvalidSelector: a business quota stored with an empty selector (past validation) is
// reported Ready=False, and counts nothing.
func TestReconcileBusinessQuotaInvalidSelector(t *testing.T) {
	bq := utiltesting.BusinessQuota("everything", list("cpu", "10"))
	bq.Spec.NamespaceSelector = metav1.LabelSelector{}
	f := newFixture(t, interceptor.Funcs{}, bq, utiltesting.Namespace("a", nil),
		utiltesting.MakeBinding("a", "web").Requests(list("cpu", "1")).Cluster("member1", 2).Obj())
	if _, err := f.reconciler.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: "everything"}}); err != nil {
		t.Fatal(err)
	}
	var got quotav1alpha1.KarmadaBusinessQuota
	if err := f.client.Get(context.Background(), client.ObjectKey{Name: "everything"}, &got); err != nil {
		t.Fatal(err)
	}
	ready := findCondition(got.Status.Conditions, quotav1alpha1.ConditionReady)
	if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != ReasonInvalidSpec {
		t.Errorf("Ready condition %+v, want False with reason %s", ready, ReasonInvalidSpec)
	}
	if len(got.Status.Used) != 0 {
		t.Errorf("used %v, want nothing counted", got.Status.Used)
	}
}

func findCondition(conditions []metav1.Condition, t string) *metav1.Condition {
	for i := range conditions {
		if conditions[i].Type == t {
			return &conditions[i]
		}
	}
	return nil
}

// TestReconcileBusinessQuotaSelectingNothing: a business quota whose selector matches no namespace yet counts
// nothing, and says so.
func TestReconcileBusinessQuotaSelectingNothing(t *testing.T) {
	f := newFixture(t, interceptor.Funcs{}, utiltesting.BusinessQuota("later", list("cpu", "10")), utiltesting.Namespace("a", nil))
	if _, err := f.reconciler.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Name: "later"}}); err != nil {
		t.Fatal(err)
	}
	var got quotav1alpha1.KarmadaBusinessQuota
	if err := f.client.Get(context.Background(), client.ObjectKey{Name: "later"}, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(list("cpu", "0"), got.Status.Used, statusOpts); diff != "" {
		t.Errorf("used (-want +got):\n%s", diff)
	}
	if got.Status.NamespaceCount != 0 || len(got.Status.Namespaces) != 0 {
		t.Errorf("namespaces %d %+v, want none", got.Status.NamespaceCount, got.Status.Namespaces)
	}
}

// TestBusinessViewsPaced: a view whose counts alone move waits for the view interval (the reconcile comes back
// then); one of a namespace that joins is written at once.
func TestBusinessViewsPaced(t *testing.T) {
	bq := utiltesting.BusinessQuota("shop", list("cpu", "10"))
	dev := utiltesting.MakeBinding("dev", "web").Requests(list("cpu", "1")).Cluster("member1", 1)
	f := newFixture(t, interceptor.Funcs{}, bq, utiltesting.Namespace("dev", map[string]string{"business": "shop"}), dev.Obj())
	f.reconciler.views = newStatusPacer(10*time.Second, f.clock.Now)
	key := ctrl.Request{NamespacedName: types.NamespacedName{Name: "shop"}}
	view := func(namespace string) *quotav1alpha1.AppliedBusinessQuota {
		t.Helper()
		var v quotav1alpha1.AppliedBusinessQuota
		if err := f.client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: "shop"}, &v); err != nil {
			t.Fatalf("view in %s: %v", namespace, err)
		}
		return &v
	}
	if _, err := f.reconciler.Reconcile(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	if got := view("dev").Status.Summary; got != "cpu: 1/10" {
		t.Fatalf("first view %q", got)
	}

	// More used in dev, and a namespace joins: the new one's view is written, dev's waits.
	var grown workv1alpha2.ResourceBinding
	if err := f.client.Get(context.Background(), client.ObjectKeyFromObject(dev.Obj()), &grown); err != nil {
		t.Fatal(err)
	}
	grown.Spec.Clusters[0].Replicas = 3
	if err := f.client.Update(context.Background(), &grown); err != nil {
		t.Fatal(err)
	}
	if err := f.client.Create(context.Background(), utiltesting.Namespace("prod", map[string]string{"business": "shop"})); err != nil {
		t.Fatal(err)
	}
	f.clock.Step(time.Second)
	result, err := f.reconciler.Reconcile(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if got := view("prod").Status.Summary; got != "cpu: 3/10" {
		t.Errorf("joining namespace's view %q, want it written at once with the business's totals", got)
	}
	if got := view("dev").Status.Summary; got != "cpu: 1/10" {
		t.Errorf("dev's view %q before the interval, want it unchanged", got)
	}
	if result.RequeueAfter <= 0 || result.RequeueAfter > 9*time.Second {
		t.Errorf("requeue after %v, want the rest of the interval (9s)", result.RequeueAfter)
	}

	f.clock.Step(9 * time.Second)
	if _, err := f.reconciler.Reconcile(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	if got := view("dev"); got.Status.Summary != "cpu: 3/10" || got.Status.NamespaceSummary != "cpu: 3/10" {
		t.Errorf("dev's view after the interval: %q, %q", got.Status.Summary, got.Status.NamespaceSummary)
	}
}
