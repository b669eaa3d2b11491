package admission

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

// countingLists wraps an apiserver, counting its lists of KarmadaQuotas and failing them with fail when set.
func countingLists(apiserver client.WithWatch, lists *atomic.Int32, fail error) client.WithWatch {
	return interceptor.NewClient(apiserver, interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, l client.ObjectList, opts ...client.ListOption) error {
			if _, ok := l.(*quotav1alpha1.KarmadaQuotaList); ok {
				lists.Add(1)
				if fail != nil {
					return fail
				}
			}
			return c.List(ctx, l, opts...)
		},
	})
}

// TestUnseenQuotaGovernsTheNextWrite: a quota the apiserver has and the informer has not received yet governs the
// write that follows its create, as the informer's copy would.
func TestUnseenQuotaGovernsTheNextWrite(t *testing.T) {
	informer := newClient(nil) // the watch event of the quota has not arrived
	var lists atomic.Int32
	apiserver := countingLists(newClient(nil, utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "1")).Obj()), &lists, nil)
	clk := clocktesting.NewFakePassiveClock(now)
	quotas := NewQuotaReader(informer, nil).WithUnseenQuotas(apiserver, clk)
	admitter := NewAdmitter(quotas, apiserver, apiserver, apiserver, clk, ttl, 10*time.Second, 0)

	big := utiltesting.MakeBinding(ns, "big").Requests(list("cpu", "600m")).Cluster("member1", 2).Obj()
	checkError(t, &wantError{Code: http.StatusForbidden, Reason: ReasonQuotaExceeded,
		Messages: []string{"exceeded quota: team", "cpu: requested 1200m, used 0, reserved 0, hard 1"}},
		admitter.Admit(context.Background(), request(t, big, nil)))

	web := utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "600m")).Cluster("member1", 1).Obj()
	if err := admitter.Admit(context.Background(), request(t, web, nil)); err != nil {
		t.Fatalf("a write that fits: %v", err)
	}
	if got := reservationsOf(t, apiserver, "team"); len(got) != 1 || got[0].ReservedBy.Name != "web" {
		t.Errorf("reservations = %+v, want web's alone", got)
	}
	before := lists.Load()
	if _, err := quotas.Read(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	if lists.Load() != before+1 {
		t.Errorf("quotas found are not remembered: a read made %d lists, want 1", lists.Load()-before)
	}
}

// TestUnseenQuotaNoneRemembered: the answer that a namespace has no quota is kept for the TTL, so that an
// ungoverned namespace costs one list per TTL, not one per write.
func TestUnseenQuotaNoneRemembered(t *testing.T) {
	var lists atomic.Int32
	apiserver := countingLists(newClient(nil), &lists, nil)
	clk := clocktesting.NewFakePassiveClock(now)
	quotas := NewQuotaReader(newClient(nil), nil).WithUnseenQuotas(apiserver, clk)
	read := func() *Quotas {
		t.Helper()
		q, err := quotas.Read(context.Background(), ns)
		if err != nil {
			t.Fatal(err)
		}
		return q
	}

	if read().Governed() || read().Governed() {
		t.Fatal("a namespace without a quota is governed")
	}
	if got := lists.Load(); got != 1 {
		t.Errorf("two reads within the TTL made %d lists, want 1", got)
	}
	if _, err := quotas.Read(context.Background(), "other"); err != nil {
		t.Fatal(err)
	}
	if got := lists.Load(); got != 2 {
		t.Errorf("another namespace is its own entry: %d lists, want 2", got)
	}

	// A quota created in the namespace now is not seen until the answer expires: the window the TTL leaves open
	// (its watch event reaches a real informer milliseconds later).
	if err := apiserver.Create(context.Background(), utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "1")).Obj()); err != nil {
		t.Fatal(err)
	}
	clk.SetTime(now.Add(unseenQuotaTTL - time.Second))
	if read().Governed() {
		t.Error("the answer none expired before its TTL")
	}
	clk.SetTime(now.Add(unseenQuotaTTL))
	if !read().Governed() {
		t.Error("after the TTL the apiserver is asked again and its quota governs")
	}
	if got := lists.Load(); got != 3 {
		t.Errorf("lists = %d, want 3", got)
	}
}

// TestUnseenQuotaListFails: a namespace whose quotas cannot be read is not taken as ungoverned.
func TestUnseenQuotaListFails(t *testing.T) {
	var lists atomic.Int32
	apiserver := countingLists(newClient(nil), &lists, errors.New("connection refused"))
	admitter := NewAdmitter(NewQuotaReader(newClient(nil), nil).WithUnseenQuotas(apiserver, clocktesting.NewFakePassiveClock(now)),
		apiserver, apiserver, apiserver, clocktesting.NewFakePassiveClock(now), ttl, 10*time.Second, 0)
	web := utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")).Cluster("member1", 1).Obj()
	for range 2 {
		checkError(t, &wantError{Code: http.StatusInternalServerError, Reason: metav1.StatusReasonInternalError,
			Messages: []string{"fail closed", "listing the quotas of namespace team-a from the apiserver", "connection refused"}},
			admitter.Admit(context.Background(), request(t, web, nil)))
	}
	if got := lists.Load(); got != 2 {
		t.Errorf("a failed list is remembered: %d lists for two writes, want 2", got)
	}
}
