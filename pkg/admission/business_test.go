package admission

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/quota"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

func newBusinessAdmitter(c client.Client) *Admitter {
	return NewAdmitter(NewQuotaReader(c, nil).WithBusinessQuotas(c), c, c, c, clocktesting.NewFakePassiveClock(now), ttl, 10*time.Second, 0)
}

// businessRequest is what the binding webhook asks for a create of rb, queued as its quotas say.
func businessRequest(t *testing.T, a *Admitter, rb Request) Request {
	t.Helper()
	quotas, err := a.quotas.Read(context.Background(), rb.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	rb.Queue = quotas.Queue()
	return rb
}

func businessLedger(t *testing.T, c client.Client, name string) *quotav1alpha1.KarmadaBusinessQuotaLedger {
	t.Helper()
	var l quotav1alpha1.KarmadaBusinessQuotaLedger
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, &l); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		t.Fatal(err)
	}
	return &l
}

// TestAdmitBusinessQuota: a business quota limits its namespaces together, not a namespace it does not select; a
// refusal names it as a business quota; its ledger is a KarmadaBusinessQuotaLedger owned by it, whose reservations
// name their binding's namespace (the controller settles them by it).
func TestAdmitBusinessQuota(t *testing.T) {
	c := newClient(nil,
		utiltesting.BusinessQuota("shop", list("cpu", "2")),
		utiltesting.Namespace("shop-dev", map[string]string{"business": "shop"}),
		utiltesting.Namespace("shop-prod", map[string]string{"business": "shop"}),
		utiltesting.Namespace("other", nil),
	)
	a := newBusinessAdmitter(c)
	admit := func(namespace, name string) error {
		rb := utiltesting.MakeBinding(namespace, name).Requests(list("cpu", "1")).Cluster("member1", 1).Obj()
		return a.Admit(context.Background(), businessRequest(t, a, request(t, rb, nil)))
	}
	if err := admit("shop-dev", "web"); err != nil {
		t.Fatalf("first write in shop-dev: %v", err)
	}
	if err := admit("shop-prod", "web"); err != nil {
		t.Fatalf("first write in shop-prod: %v", err)
	}
	checkError(t, &wantError{Code: 403, Reason: ReasonQuotaExceeded, Messages: []string{
		"exceeded business quota: shop, cpu: requested 1, used 0, reserved 2, hard 2",
	}}, admit("shop-dev", "api"))
	if err := admit("other", "web"); err != nil {
		t.Errorf("a write in a namespace the business quota does not select: %v", err)
	}

	stored := businessLedger(t, c, "shop")
	if stored == nil {
		t.Fatal("the business quota has no ledger")
	}
	owner := metav1.GetControllerOf(stored)
	if owner == nil || owner.Kind != "KarmadaBusinessQuota" || owner.UID != "uid-business-shop" {
		t.Errorf("ledger owner %+v, want the business quota", owner)
	}
	var owners []string
	for _, r := range stored.Reservations {
		owners = append(owners, r.ReservedBy.Namespace+"/"+r.ReservedBy.Name)
	}
	if diff := cmp.Diff([]string{"shop-dev/web", "shop-prod/web"}, owners); diff != "" {
		t.Errorf("reservations' owners (-want +got):\n%s", diff)
	}
}

// TestAdmitBusinessAndNamespaceQuotas: a write must fit its namespace's quota and the business quota, all or
// nothing: refused by one, it reserves nothing in the other.
func TestAdmitBusinessAndNamespaceQuotas(t *testing.T) {
	cases := map[string]struct {
		namespaceHard, businessHard string
		want                        *wantError
	}{
		"both fit": {namespaceHard: "4", businessHard: "4"},
		"the business quota refuses": {namespaceHard: "4", businessHard: "2", want: &wantError{Code: 403, Reason: ReasonQuotaExceeded,
			Messages: []string{"exceeded business quota: shop, cpu: requested 3"}}},
		"the namespace's quota refuses": {namespaceHard: "2", businessHard: "4", want: &wantError{Code: 403, Reason: ReasonQuotaExceeded,
			Messages: []string{"exceeded quota: team, cpu: requested 3"}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := newClient(nil,
				utiltesting.BusinessQuota("shop", list("cpu", tc.businessHard)),
				utiltesting.MakeQuota("shop-dev", "team").Hard(list("cpu", tc.namespaceHard)).Obj(),
				utiltesting.Namespace("shop-dev", map[string]string{"business": "shop"}),
			)
			a := newBusinessAdmitter(c)
			rb := utiltesting.MakeBinding("shop-dev", "web").Requests(list("cpu", "1")).Cluster("member1", 3).Obj()
			err := a.Admit(context.Background(), businessRequest(t, a, request(t, rb, nil)))
			checkError(t, tc.want, err)

			reservations := map[string]int{}
			if l := businessLedger(t, c, "shop"); l != nil {
				reservations["shop"] = len(l.Reservations)
			}
			var own quotav1alpha1.KarmadaQuotaLedger
			if err := c.Get(context.Background(), client.ObjectKey{Namespace: "shop-dev", Name: "team"}, &own); err == nil {
				reservations["team"] = len(own.Reservations)
			}
			want := map[string]int{}
			if tc.want == nil {
				want = map[string]int{"shop": 1, "team": 1}
			}
			for k, v := range reservations {
				if v == 0 {
					delete(reservations, k)
				}
			}
			if diff := cmp.Diff(want, reservations); diff != "" {
				t.Errorf("reservations per quota (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAdmitBusinessQuotaConcurrent: a burst spread over the business's namespaces, decided by two replicas, places
// exactly hard, and the namespaces sharing the quota are batched together.
func TestAdmitBusinessQuotaConcurrent(t *testing.T) {
	const (
		namespaces = 5
		writes     = 60
		hardCPU    = 20
	)
	// Counted from both admitters' goroutines at once.
	var ledgerUpdates atomic.Int32
	funcs := interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if _, ok := obj.(*quotav1alpha1.KarmadaBusinessQuotaLedger); ok {
				ledgerUpdates.Add(1)
			}
			return c.Update(ctx, obj, opts...)
		},
	}
	objs := []client.Object{utiltesting.BusinessQuota("shop", list("cpu", fmt.Sprint(hardCPU)))}
	for i := range namespaces {
		objs = append(objs, utiltesting.Namespace(fmt.Sprintf("shop-%d", i), map[string]string{"business": "shop"}))
	}
	c := newClient(&funcs, objs...)
	admitters := []*Admitter{newBusinessAdmitter(c), newBusinessAdmitter(c)}

	requests := make([]Request, writes)
	for i := range writes {
		rb := utiltesting.MakeBinding(fmt.Sprintf("shop-%d", i%namespaces), fmt.Sprintf("web-%d", i)).Requests(list("cpu", "1")).Cluster("member1", 1).Obj()
		requests[i] = businessRequest(t, admitters[0], request(t, rb, nil))
		if requests[i].Queue != "business/shop" {
			t.Fatalf("write in %s queued in %q, want the business quota's queue", rb.Namespace, requests[i].Queue)
		}
	}
	expectOutcomes(t, admitAtOnce(admitters, requests), hardCPU)
	stored := businessLedger(t, c, "shop")
	if stored == nil {
		t.Fatal("no ledger")
	}
	var bq quotav1alpha1.KarmadaBusinessQuota
	if err := c.Get(context.Background(), client.ObjectKey{Name: "shop"}, &bq); err != nil {
		t.Fatal(err)
	}
	l, err := quota.NewLedger(bq.AsKarmadaQuota(), stored.AsKarmadaQuotaLedger())
	if err != nil {
		t.Fatal(err)
	}
	if got := l.RenderAll(l.Reserved())[corev1.ResourceCPU]; got.Cmp(resource.MustParse(fmt.Sprint(hardCPU))) != 0 {
		t.Errorf("reserved cpu %s, want %d", got.String(), hardCPU)
	}
	perNamespace := map[string]int{}
	for _, r := range stored.Reservations {
		perNamespace[r.ReservedBy.Namespace]++
	}
	if len(perNamespace) != namespaces {
		t.Errorf("reservations by namespace %v, want all %d namespaces", perNamespace, namespaces)
	}
	updates := int(ledgerUpdates.Load())
	// Batched: fewer ledger writes than admissions (one create, then at most one update per batch).
	if updates >= hardCPU {
		t.Errorf("%d ledger updates for %d admissions: the namespaces sharing the quota were not batched", updates, hardCPU)
	}
}

// TestValidateBusinessQuota: an empty namespace selector is refused with a message saying why; the rest of the spec
// is validated as a KarmadaQuota's.
func TestValidateBusinessQuota(t *testing.T) {
	empty := utiltesting.BusinessQuota("shop", list("cpu", "2"))
	empty.Spec.NamespaceSelector = metav1.LabelSelector{}
	limits := utiltesting.BusinessQuota("shop", list("limits.cpu", "2"))
	for name, tc := range map[string]struct {
		q    *quotav1alpha1.KarmadaBusinessQuota
		want string
	}{
		"valid":          {q: utiltesting.BusinessQuota("shop", list("cpu", "2"))},
		"empty selector": {q: empty, want: "spec.namespaceSelector: Required value: an empty selector would select every namespace"},
		"limits.cpu":     {q: limits, want: "spec.hard[limits.cpu]"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := BusinessQuotaValidator{}.ValidateCreate(context.Background(), tc.q)
			if tc.want == "" {
				if err != nil {
					t.Errorf("refused: %v", err)
				}
				return
			}
			if err == nil || !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want Invalid containing %q", err, tc.want)
			}
		})
	}
}

// TestBusinessQuotaSpecChangeFencesItsLedger: a new spec of a business quota (its selector, its limits) raises its
// ledger's quotaGeneration before it is stored, as a KarmadaQuota's does, so that no admission decided on the old
// spec lands after it.
func TestBusinessQuotaSpecChangeFencesItsLedger(t *testing.T) {
	old := utiltesting.BusinessQuota("shop", list("cpu", "2"))
	ledger := &quotav1alpha1.KarmadaBusinessQuotaLedger{
		ObjectMeta:  metav1.ObjectMeta{Name: "shop", OwnerReferences: quota.LedgerOwner(old.AsKarmadaQuota())},
		LedgerState: quotav1alpha1.LedgerState{QuotaGeneration: 1},
	}
	c := newClient(nil, old, ledger)
	changed := old.DeepCopy()
	changed.Spec.NamespaceSelector.MatchLabels = map[string]string{"business": "shop-and-more"}
	changed.Generation = 2
	if _, err := (BusinessQuotaValidator{reader: c, writer: c}).ValidateUpdate(context.Background(), old, changed); err != nil {
		t.Fatal(err)
	}
	if got := businessLedger(t, c, "shop").QuotaGeneration; got != 2 {
		t.Errorf("ledger fenced at generation %d, want 2", got)
	}
}

// TestAdmitUnderTwoBusinessQuotas: a namespace selected by two business quotas (its team's and its department's)
// places only what fits both, all or nothing, and each is charged once.
func TestAdmitUnderTwoBusinessQuotas(t *testing.T) {
	department := utiltesting.BusinessQuota("retail", list("cpu", "3"))
	department.Spec.NamespaceSelector = metav1.LabelSelector{MatchLabels: map[string]string{"department": "retail"}}
	c := newClient(nil,
		utiltesting.BusinessQuota("shop", list("cpu", "10")),
		department,
		utiltesting.Namespace("shop-dev", map[string]string{"business": "shop", "department": "retail"}),
	)
	a := newBusinessAdmitter(c)
	admit := func(name string, replicas int32) error {
		rb := utiltesting.MakeBinding("shop-dev", name).Requests(list("cpu", "1")).Cluster("member1", replicas).Obj()
		return a.Admit(context.Background(), businessRequest(t, a, request(t, rb, nil)))
	}
	if err := admit("web", 2); err != nil {
		t.Fatalf("2 CPU under both: %v", err)
	}
	checkError(t, &wantError{Code: 403, Reason: ReasonQuotaExceeded, Messages: []string{
		"exceeded business quota: retail, cpu: requested 2, used 0, reserved 2, hard 3",
	}}, admit("api", 2))
	for name, want := range map[string]int{"shop": 1, "retail": 1} {
		l := businessLedger(t, c, name)
		if l == nil || len(l.Reservations) != want {
			t.Errorf("business quota %s: ledger %+v, want %d reservation (the refused write reserves nothing)", name, l, want)
		}
	}
}
