package admission

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/metrics"
	"github.com/karmada-quota/karmada-quota/pkg/quota"
	"github.com/karmada-quota/karmada-quota/pkg/scheme"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

const ns = "team-a"

var (
	// now has a fraction of a second, which a reservation's expiry must drop: the ledger object keeps seconds.
	now        = time.Date(2025, time.January, 1, 0, 0, 0, 700_000_000, time.UTC)
	ttl        = 2 * time.Minute
	wantExpiry = time.Date(2025, time.January, 1, 0, 2, 0, 0, time.UTC)
)

var list = utiltesting.List

var statusOpts = cmp.Options{
	cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 }),
	cmpopts.EquateEmpty(),
}

// newClient is a fake karmada-apiserver holding objs: quotas, and the ledger objects of some.
func newClient(funcs *interceptor.Funcs, objs ...client.Object) client.WithWatch {
	b := fake.NewClientBuilder().
		WithScheme(scheme.Scheme).
		WithStatusSubresource(&quotav1alpha1.KarmadaQuota{}).
		WithObjects(objs...)
	if funcs != nil {
		b = b.WithInterceptorFuncs(*funcs)
	}
	return b.Build()
}

// seeded lists quotas and ledger objects for newClient.
func seeded(quotas []*quotav1alpha1.KarmadaQuota, ledgers ...*quotav1alpha1.KarmadaQuotaLedger) []client.Object {
	objs := make([]client.Object, 0, len(quotas)+len(ledgers))
	for _, q := range quotas {
		objs = append(objs, q)
	}
	for _, l := range ledgers {
		objs = append(objs, l)
	}
	return objs
}

// withLedger is q and its ledger object, holding the reservations (and folded sum) q was built with: what a fake
// apiserver holds after earlier admissions.
func withLedger(q *quotav1alpha1.KarmadaQuota) []client.Object {
	q = q.DeepCopy()
	l := utiltesting.MoveToLedger(q)
	return []client.Object{q, l}
}

func newAdmitter(c client.Client) *Admitter {
	return NewAdmitter(NewQuotaReader(c, nil), c, c, c, clocktesting.NewFakePassiveClock(now), ttl, 10*time.Second, 0)
}

// request builds what the binding webhook asks of the Admitter for a write from old (nil: create) to rb.
func request(t *testing.T, rb, old *workv1alpha2.ResourceBinding) Request {
	t.Helper()
	newUsage, err := usage.Of(rb)
	if err != nil {
		t.Fatalf("usage.Of: %v", err)
	}
	r := Request{
		Namespace: rb.Namespace,
		Key:       quota.Key{UID: rb.UID, Generation: rb.Generation},
		Owner:     utiltesting.ReservationOwner(rb),
		New:       newUsage,
	}
	if old != nil {
		oldUsage, err := usage.Of(old)
		if err != nil {
			t.Fatalf("usage.Of: %v", err)
		}
		r.Old = &oldUsage
	}
	return r
}

func dryRun(r Request) Request {
	r.DryRun = true
	return r
}

// wantError describes an expected refusal: its HTTP code and reason, and text its message must contain.
type wantError struct {
	Code     int32
	Reason   metav1.StatusReason
	Messages []string
}

func checkError(t *testing.T, want *wantError, err error) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Errorf("got error %v, want admitted", err)
		}
		return
	}
	var status *apierrors.StatusError
	if !errors.As(err, &status) {
		t.Errorf("got error %v (%T), want a *StatusError with code %d and reason %s", err, err, want.Code, want.Reason)
		return
	}
	got := status.Status()
	if diff := cmp.Diff([]any{want.Code, want.Reason}, []any{got.Code, got.Reason}); diff != "" {
		t.Errorf("code and reason (-want +got):\n%s", diff)
	}
	for _, m := range want.Messages {
		if !strings.Contains(got.Message, m) {
			t.Errorf("message %q does not contain %q", got.Message, m)
		}
	}
}

func getQuota(t *testing.T, c client.Client, name string) *quotav1alpha1.KarmadaQuota {
	t.Helper()
	var q quotav1alpha1.KarmadaQuota
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &q); err != nil {
		t.Fatalf("getting quota %s: %v", name, err)
	}
	return &q
}

// getLedger reads the ledger object of quota name; nil when there is none.
func getLedger(t *testing.T, c client.Reader, name string) *quotav1alpha1.KarmadaQuotaLedger {
	t.Helper()
	var l quotav1alpha1.KarmadaQuotaLedger
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &l); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		t.Fatalf("getting the ledger of quota %s: %v", name, err)
	}
	return &l
}

// ledgerVersion is the resourceVersion of quota name's ledger object, "" when there is none.
func ledgerVersion(t *testing.T, c client.Reader, name string) string {
	t.Helper()
	if l := getLedger(t, c, name); l != nil {
		return l.ResourceVersion
	}
	return ""
}

// reservationsOf are the reservations the ledger object of quota name lists; none without one.
func reservationsOf(t *testing.T, c client.Reader, name string) []quotav1alpha1.Reservation {
	t.Helper()
	if l := getLedger(t, c, name); l != nil {
		return l.Reservations
	}
	return nil
}

// versions are the resourceVersions of quotas and of their ledger objects ("" for none), by quota name.
type versions struct{ quotas, ledgers map[string]string }

func resourceVersions(t *testing.T, c client.Client, quotas []*quotav1alpha1.KarmadaQuota) versions {
	t.Helper()
	rvs := versions{quotas: map[string]string{}, ledgers: map[string]string{}}
	for _, q := range quotas {
		if q.Namespace == ns {
			rvs.quotas[q.Name] = getQuota(t, c, q.Name).ResourceVersion
			rvs.ledgers[q.Name] = ledgerVersion(t, c, q.Name)
		}
	}
	return rvs
}

// checkQuotas checks that no quota was written (the admitter writes only ledger objects), compares each quota's
// ledger object with want and what the controller observed, by quota name (checkLedger), and reports which ledger
// objects were written.
func checkQuotas(t *testing.T, c client.Client, before versions, want []*quotav1alpha1.KarmadaQuota, observed map[string]*quotav1alpha1.LedgerObserved) map[string]bool {
	t.Helper()
	written := map[string]bool{}
	for _, w := range want {
		if got := getQuota(t, c, w.Name).ResourceVersion; got != before.quotas[w.Name] {
			t.Errorf("quota %s was written (resourceVersion %s -> %s): the admitter writes only its ledger", w.Name, before.quotas[w.Name], got)
		}
		checkLedger(t, c, w, observed[w.Name])
		written[w.Name] = ledgerVersion(t, c, w.Name) != before.ledgers[w.Name]
	}
	return written
}

// ledgerOpts compares what a ledger object records, not its metadata.
var ledgerOpts = cmp.Options{statusOpts, cmpopts.IgnoreFields(quotav1alpha1.KarmadaQuotaLedger{}, "TypeMeta", "ObjectMeta")}

// checkLedger compares the ledger object stored for want's quota with what want was built with: its status's
// reservations and folded sum (utiltesting.QuotaWrapper's Reservation and Folded), fenced at want's generation,
// with observed as the controller's count. The object must be the quota's (a controller owner reference to it),
// and read back with the stored quota it must reserve want's status.reserved. A quota that must hold nothing may
// have no ledger object at all.
func checkLedger(t *testing.T, c client.Client, want *quotav1alpha1.KarmadaQuota, observed *quotav1alpha1.LedgerObserved) {
	t.Helper()
	wantLedger := utiltesting.MoveToLedger(want.DeepCopy())
	wantLedger.Observed = observed
	got := getLedger(t, c, want.Name)
	if got == nil {
		if len(wantLedger.Reservations) > 0 || wantLedger.FoldedReservations != nil || observed != nil {
			t.Errorf("quota %s has no ledger object, want one with %d reservations", want.Name, len(wantLedger.Reservations))
		}
		return
	}
	stored := getQuota(t, c, want.Name)
	if quota.LedgerOf(got, stored) == nil {
		t.Errorf("the ledger object of quota %s is not the quota's: owner references %+v, quota UID %s", want.Name, got.OwnerReferences, stored.UID)
	}
	if diff := cmp.Diff(wantLedger, got, ledgerOpts); diff != "" {
		t.Errorf("ledger of quota %s (-want +got):\n%s", want.Name, diff)
	}
	l, err := quota.NewLedger(stored, got)
	if err != nil {
		t.Fatalf("reading back quota %s with its ledger: %v", want.Name, err)
	}
	if diff := cmp.Diff(nonZero(want.Status.Reserved), nonZero(l.RenderAll(l.Reserved())), statusOpts); diff != "" {
		t.Errorf("reserved by quota %s (-want +got):\n%s", want.Name, diff)
	}
}

// nonZero drops the zero amounts of a list.
func nonZero(list corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, q := range list {
		if !q.IsZero() {
			out[name] = q
		}
	}
	return out
}

// writeLedger is another writer (another replica, the controller) changing the ledger object of quota name,
// creating it for the quota when there is none.
func writeLedger(ctx context.Context, c client.Client, name string, change func(*quotav1alpha1.KarmadaQuotaLedger)) error {
	key := types.NamespacedName{Namespace: ns, Name: name}
	var l quotav1alpha1.KarmadaQuotaLedger
	if err := c.Get(ctx, key, &l); err != nil {
		if !apierrors.IsNotFound(err) {
			return err
		}
		var q quotav1alpha1.KarmadaQuota
		if err := c.Get(ctx, key, &q); err != nil {
			return err
		}
		fresh := utiltesting.MoveToLedger(&q)
		change(fresh)
		return c.Create(ctx, fresh)
	}
	change(&l)
	return c.Update(ctx, &l)
}

// isLedger tells the writes of ledger objects apart.
func isLedger(obj client.Object) bool {
	_, ok := obj.(*quotav1alpha1.KarmadaQuotaLedger)
	return ok
}

func counter(c prometheus.Counter) float64 {
	return testutil.ToFloat64(c)
}

func histogram(t *testing.T, h prometheus.Histogram) (count uint64, sum float64) {
	t.Helper()
	var m dto.Metric
	if err := h.Write(&m); err != nil {
		t.Fatalf("reading histogram: %v", err)
	}
	return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
}

func TestAdmit(t *testing.T) {
	web := utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "500m", "memory", "1Gi"))
	webV2 := web.Clone().Generation(2)
	api := utiltesting.MakeBinding(ns, "api").Requests(list("cpu", "1"))
	team := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10", "count/deployments.apps", "5"))

	cases := map[string]struct {
		quotas []*quotav1alpha1.KarmadaQuota
		// ledgers are the ledger objects stored with the quotas.
		ledgers  []*quotav1alpha1.KarmadaQuotaLedger
		requests []Request
		// wantErrs holds, per request, the expected refusal; nil admits.
		wantErrs []*wantError
		// wantQuotas are the quotas of ns built with the reservations (and their sum in status.reserved) their
		// ledger objects must hold afterwards (checkLedger); the quotas themselves must not be written.
		wantQuotas []*quotav1alpha1.KarmadaQuota
		// wantObserved is what the controller observed, in the ledger objects of the quotas named.
		wantObserved map[string]*quotav1alpha1.LedgerObserved
		// wantWritten names the quotas whose ledger object was written.
		wantWritten map[string]bool
	}{
		"an admitted create reserves its object and placed compute until now+ttl, in seconds": {
			quotas:   []*quotav1alpha1.KarmadaQuota{team.Obj()},
			requests: []Request{request(t, web.Clone().Cluster("member1", 2).Obj(), nil)},
			wantErrs: []*wantError{nil},
			wantQuotas: []*quotav1alpha1.KarmadaQuota{
				team.Clone().Reservation(web.Obj(), 1, list("cpu", "1", "count/deployments.apps", "1"), wantExpiry).Obj(),
			},
			wantWritten: map[string]bool{"team": true},
		},
		"an admitted update reserves the increase under the generation it produces": {
			quotas: []*quotav1alpha1.KarmadaQuota{team.Clone().Used(list("cpu", "1", "count/deployments.apps", "1")).Obj()},
			requests: []Request{request(t,
				webV2.Clone().Cluster("member1", 2).Cluster("member2", 1).Obj(),
				web.Clone().Cluster("member1", 2).Obj())},
			wantErrs: []*wantError{nil},
			wantQuotas: []*quotav1alpha1.KarmadaQuota{
				team.Clone().Used(list("cpu", "1", "count/deployments.apps", "1")).
					Reservation(web.Obj(), 2, list("cpu", "500m"), wantExpiry).Obj(),
			},
			wantWritten: map[string]bool{"team": true},
		},
		"a later request is decided against what an earlier one reserved": {
			quotas: []*quotav1alpha1.KarmadaQuota{utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "1500m")).Obj()},
			requests: []Request{
				request(t, web.Clone().Cluster("member1", 2).Obj(), nil),
				request(t, api.Clone().Cluster("member1", 1).Obj(), nil),
			},
			wantErrs: []*wantError{nil, {
				Code: http.StatusForbidden, Reason: ReasonQuotaExceeded,
				Messages: []string{"exceeded quota: team, cpu: requested 1, used 0, reserved 1, hard 1500m"},
			}},
			wantQuotas: []*quotav1alpha1.KarmadaQuota{
				utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "1500m")).
					Reservation(web.Obj(), 1, list("cpu", "1"), wantExpiry).Obj(),
			},
			wantWritten: map[string]bool{"team": true},
		},
		"a denial is a 403 QuotaExceeded naming the quota and the resource, and writes nothing": {
			quotas:   []*quotav1alpha1.KarmadaQuota{team.Clone().Used(list("cpu", "9500m")).Obj()},
			requests: []Request{request(t, web.Clone().Cluster("member1", 2).Obj(), nil)},
			wantErrs: []*wantError{{
				Code: http.StatusForbidden, Reason: ReasonQuotaExceeded,
				Messages: []string{"exceeded quota: team, cpu: requested 1, used 9500m, reserved 0, hard 10"},
			}},
			wantQuotas:  []*quotav1alpha1.KarmadaQuota{team.Clone().Used(list("cpu", "9500m")).Obj()},
			wantWritten: map[string]bool{"team": false},
		},
		"a request without a limited cpu request is denied": {
			quotas:   []*quotav1alpha1.KarmadaQuota{team.Obj()},
			requests: []Request{request(t, utiltesting.MakeBinding(ns, "bare").Cluster("member1", 1).Obj(), nil)},
			wantErrs: []*wantError{{
				Code: http.StatusForbidden, Reason: ReasonQuotaExceeded,
				Messages: []string{"exceeded quota: team, must specify requests for cpu"},
			}},
			wantQuotas:  []*quotav1alpha1.KarmadaQuota{team.Obj()},
			wantWritten: map[string]bool{"team": false},
		},
		"a dry run that fits is admitted and writes nothing": {
			quotas:      []*quotav1alpha1.KarmadaQuota{team.Obj()},
			requests:    []Request{dryRun(request(t, web.Clone().Cluster("member1", 2).Obj(), nil))},
			wantErrs:    []*wantError{nil},
			wantQuotas:  []*quotav1alpha1.KarmadaQuota{team.Obj()},
			wantWritten: map[string]bool{"team": false},
		},
		"a dry run that does not fit is denied": {
			quotas:   []*quotav1alpha1.KarmadaQuota{team.Obj()},
			requests: []Request{dryRun(request(t, web.Clone().Cluster("member1", 40).Obj(), nil))},
			wantErrs: []*wantError{{
				Code: http.StatusForbidden, Reason: ReasonQuotaExceeded,
				Messages: []string{"cpu: requested 20, used 0, reserved 0, hard 10 (can never fit"},
			}},
			wantQuotas:  []*quotav1alpha1.KarmadaQuota{team.Obj()},
			wantWritten: map[string]bool{"team": false},
		},
		"when a second quota denies, the first keeps no reservation": {
			quotas: []*quotav1alpha1.KarmadaQuota{
				utiltesting.MakeQuota(ns, "a-cpu").Hard(list("cpu", "10")).Obj(),
				utiltesting.MakeQuota(ns, "b-pods").Hard(list("pods", "1")).Obj(),
			},
			requests: []Request{request(t, web.Clone().Cluster("member1", 2).Obj(), nil)},
			wantErrs: []*wantError{{
				Code: http.StatusForbidden, Reason: ReasonQuotaExceeded,
				Messages: []string{"exceeded quota: b-pods, pods: requested 2, used 0, reserved 0, hard 1 (can never fit"},
			}},
			wantQuotas: []*quotav1alpha1.KarmadaQuota{
				utiltesting.MakeQuota(ns, "a-cpu").Hard(list("cpu", "10")).Obj(),
				utiltesting.MakeQuota(ns, "b-pods").Hard(list("pods", "1")).Obj(),
			},
			wantWritten: map[string]bool{"a-cpu": false, "b-pods": false},
		},
		"every quota that denies is named": {
			quotas: []*quotav1alpha1.KarmadaQuota{
				utiltesting.MakeQuota(ns, "a-cpu").Hard(list("cpu", "500m")).Obj(),
				utiltesting.MakeQuota(ns, "b-pods").Hard(list("pods", "1")).Obj(),
			},
			requests: []Request{request(t, web.Clone().Cluster("member1", 2).Obj(), nil)},
			wantErrs: []*wantError{{
				Code: http.StatusForbidden, Reason: ReasonQuotaExceeded,
				Messages: []string{"exceeded quota: a-cpu, cpu: requested 1,", "; exceeded quota: b-pods, pods: requested 2,"},
			}},
			wantQuotas: []*quotav1alpha1.KarmadaQuota{
				utiltesting.MakeQuota(ns, "a-cpu").Hard(list("cpu", "500m")).Obj(),
				utiltesting.MakeQuota(ns, "b-pods").Hard(list("pods", "1")).Obj(),
			},
			wantWritten: map[string]bool{"a-cpu": false, "b-pods": false},
		},
		"both quotas admit: each reserves what it limits": {
			quotas: []*quotav1alpha1.KarmadaQuota{
				utiltesting.MakeQuota(ns, "a-cpu").Hard(list("cpu", "10")).Obj(),
				utiltesting.MakeQuota(ns, "b-pods").Hard(list("pods", "5")).Obj(),
			},
			requests: []Request{request(t, web.Clone().Cluster("member1", 2).Obj(), nil)},
			wantErrs: []*wantError{nil},
			wantQuotas: []*quotav1alpha1.KarmadaQuota{
				utiltesting.MakeQuota(ns, "a-cpu").Hard(list("cpu", "10")).Reservation(web.Obj(), 1, list("cpu", "1"), wantExpiry).Obj(),
				utiltesting.MakeQuota(ns, "b-pods").Hard(list("pods", "5")).Reservation(web.Obj(), 1, list("pods", "2"), wantExpiry).Obj(),
			},
			wantWritten: map[string]bool{"a-cpu": true, "b-pods": true},
		},
		"a scale-down is admitted over quota and writes nothing": {
			quotas:   []*quotav1alpha1.KarmadaQuota{team.Clone().Used(list("cpu", "20")).Obj()},
			requests: []Request{request(t, webV2.Clone().Cluster("member1", 1).Obj(), web.Clone().Cluster("member1", 4).Obj())},
			wantErrs: []*wantError{nil},
			wantQuotas: []*quotav1alpha1.KarmadaQuota{
				team.Clone().Used(list("cpu", "20")).Obj(),
			},
			wantWritten: map[string]bool{"team": false},
		},
		"a quota of another namespace is not consulted": {
			quotas: []*quotav1alpha1.KarmadaQuota{
				utiltesting.MakeQuota("team-b", "team").Hard(list("cpu", "0")).Obj(),
			},
			requests: []Request{request(t, web.Clone().Cluster("member1", 2).Obj(), nil)},
			wantErrs: []*wantError{nil},
		},
		"a scoped quota neither charges nor writes for another priority class": {
			quotas:   []*quotav1alpha1.KarmadaQuota{utiltesting.MakeQuota(ns, "high").Hard(list("cpu", "0")).Scope(corev1.ScopeSelectorOpIn, "high").Obj()},
			requests: []Request{request(t, web.Clone().PriorityClass("low").Cluster("member1", 2).Obj(), nil)},
			wantErrs: []*wantError{nil},
			wantQuotas: []*quotav1alpha1.KarmadaQuota{
				utiltesting.MakeQuota(ns, "high").Hard(list("cpu", "0")).Scope(corev1.ScopeSelectorOpIn, "high").Obj(),
			},
			wantWritten: map[string]bool{"high": false},
		},
		"the same write admitted again merges into its reservation": {
			quotas: []*quotav1alpha1.KarmadaQuota{utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "1")).Obj()},
			requests: []Request{
				request(t, web.Clone().Cluster("member1", 2).Obj(), nil),
				request(t, web.Clone().Cluster("member1", 2).Obj(), nil),
			},
			wantErrs: []*wantError{nil, nil},
			wantQuotas: []*quotav1alpha1.KarmadaQuota{
				utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "1")).Reservation(web.Obj(), 1, list("cpu", "1"), wantExpiry).Obj(),
			},
			wantWritten: map[string]bool{"team": true},
		},
		"reservations in the quota's ledger count": {
			quotas:   []*quotav1alpha1.KarmadaQuota{utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "1500m")).Obj()},
			ledgers:  []*quotav1alpha1.KarmadaQuotaLedger{utiltesting.MoveToLedger(utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "1500m")).Reservation(api.Obj(), 1, list("cpu", "1"), wantExpiry).Obj())},
			requests: []Request{request(t, web.Clone().Cluster("member1", 2).Obj(), nil)},
			wantErrs: []*wantError{{
				Code: http.StatusForbidden, Reason: ReasonQuotaExceeded,
				Messages: []string{"exceeded quota: team, cpu: requested 1, used 0, reserved 1, hard 1500m"},
			}},
			wantQuotas: []*quotav1alpha1.KarmadaQuota{
				utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "1500m")).Reservation(api.Obj(), 1, list("cpu", "1"), wantExpiry).Obj(),
			},
			wantWritten: map[string]bool{"team": false},
		},
		"an admission adds to the reservations of the quota's ledger, keeping what the controller observed": {
			quotas: []*quotav1alpha1.KarmadaQuota{utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10")).Obj()},
			ledgers: []*quotav1alpha1.KarmadaQuotaLedger{func() *quotav1alpha1.KarmadaQuotaLedger {
				l := utiltesting.MoveToLedger(utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10")).Reservation(api.Obj(), 1, list("cpu", "1"), wantExpiry).Obj())
				l.Observed = &quotav1alpha1.LedgerObserved{Used: list("cpu", "2")}
				return l
			}()},
			requests: []Request{request(t, web.Clone().Cluster("member1", 2).Obj(), nil)},
			wantErrs: []*wantError{nil},
			wantQuotas: []*quotav1alpha1.KarmadaQuota{
				// Listed sorted by binding name.
				utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10")).
					Reservation(api.Obj(), 1, list("cpu", "1"), wantExpiry).
					Reservation(web.Obj(), 1, list("cpu", "1"), wantExpiry).Obj(),
			},
			wantObserved: map[string]*quotav1alpha1.LedgerObserved{"team": {Used: list("cpu", "2")}},
			wantWritten:  map[string]bool{"team": true},
		},
		"what the controller observed in the ledger counts, not the quota's status.used": {
			quotas: []*quotav1alpha1.KarmadaQuota{team.Clone().Used(list("cpu", "0")).Obj()},
			ledgers: []*quotav1alpha1.KarmadaQuotaLedger{func() *quotav1alpha1.KarmadaQuotaLedger {
				l := utiltesting.MoveToLedger(team.Obj())
				l.Observed = &quotav1alpha1.LedgerObserved{Used: list("cpu", "9500m")}
				return l
			}()},
			requests: []Request{request(t, web.Clone().Cluster("member1", 2).Obj(), nil)},
			wantErrs: []*wantError{{
				Code: http.StatusForbidden, Reason: ReasonQuotaExceeded,
				Messages: []string{"exceeded quota: team, cpu: requested 1, used 9500m, reserved 0, hard 10"},
			}},
			wantQuotas:   []*quotav1alpha1.KarmadaQuota{team.Obj()},
			wantObserved: map[string]*quotav1alpha1.LedgerObserved{"team": {Used: list("cpu", "9500m")}},
			wantWritten:  map[string]bool{"team": false},
		},
		"upgrade: a reservation an earlier release listed in the quota's status counts": {
			quotas: []*quotav1alpha1.KarmadaQuota{
				utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "1500m")).Reservation(api.Obj(), 1, list("cpu", "1"), wantExpiry).Obj(),
			},
			requests: []Request{request(t, web.Clone().Cluster("member1", 2).Obj(), nil)},
			wantErrs: []*wantError{{
				Code: http.StatusForbidden, Reason: ReasonQuotaExceeded,
				Messages: []string{"exceeded quota: team, cpu: requested 1, used 0, reserved 1, hard 1500m"},
			}},
			// A refusal writes nothing: the quota still has no ledger object.
			wantQuotas:  []*quotav1alpha1.KarmadaQuota{utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "1500m")).Obj()},
			wantWritten: map[string]bool{"team": false},
		},
		"upgrade: a reservation in both the quota's status and its ledger counts once, and the ledger keeps it": {
			quotas: []*quotav1alpha1.KarmadaQuota{
				utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "2")).Reservation(api.Obj(), 1, list("cpu", "1"), wantExpiry).Obj(),
			},
			ledgers:  []*quotav1alpha1.KarmadaQuotaLedger{utiltesting.MoveToLedger(utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "2")).Reservation(api.Obj(), 1, list("cpu", "1"), wantExpiry).Obj())},
			requests: []Request{request(t, web.Clone().Cluster("member1", 2).Obj(), nil)},
			wantErrs: []*wantError{nil},
			wantQuotas: []*quotav1alpha1.KarmadaQuota{
				utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "2")).
					Reservation(api.Obj(), 1, list("cpu", "1"), wantExpiry).
					Reservation(web.Obj(), 1, list("cpu", "1"), wantExpiry).Obj(),
			},
			wantWritten: map[string]bool{"team": true},
		},
		"upgrade: an admission moves the reservations of the quota's status into the ledger it creates": {
			quotas: []*quotav1alpha1.KarmadaQuota{
				utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "2")).Reservation(api.Obj(), 1, list("cpu", "1"), wantExpiry).Obj(),
			},
			requests: []Request{request(t, web.Clone().Cluster("member1", 2).Obj(), nil)},
			wantErrs: []*wantError{nil},
			wantQuotas: []*quotav1alpha1.KarmadaQuota{
				utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "2")).
					Reservation(api.Obj(), 1, list("cpu", "1"), wantExpiry).
					Reservation(web.Obj(), 1, list("cpu", "1"), wantExpiry).Obj(),
			},
			wantWritten: map[string]bool{"team": true},
		},
		"a ledger left by a deleted quota of the same name counts nothing, and is taken over": {
			quotas: []*quotav1alpha1.KarmadaQuota{utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "1500m")).Obj()},
			ledgers: []*quotav1alpha1.KarmadaQuotaLedger{func() *quotav1alpha1.KarmadaQuotaLedger {
				deleted := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "1500m")).Reservation(api.Obj(), 1, list("cpu", "1"), wantExpiry).Obj()
				deleted.UID, deleted.Generation = "uid-of-a-deleted-quota", 7
				l := utiltesting.MoveToLedger(deleted)
				l.Observed = &quotav1alpha1.LedgerObserved{Used: list("cpu", "1500m")}
				return l
			}()},
			requests: []Request{request(t, web.Clone().Cluster("member1", 2).Obj(), nil)},
			wantErrs: []*wantError{nil},
			wantQuotas: []*quotav1alpha1.KarmadaQuota{
				utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "1500m")).Reservation(web.Obj(), 1, list("cpu", "1"), wantExpiry).Obj(),
			},
			wantWritten: map[string]bool{"team": true},
		},
		"a quota that cannot be parsed refuses every request of the namespace": {
			quotas: []*quotav1alpha1.KarmadaQuota{
				utiltesting.MakeQuota(ns, "broken").Hard(list("limits.cpu", "4")).Obj(),
				utiltesting.MakeQuota(ns, "fine").Hard(list("cpu", "10")).Obj(),
			},
			requests: []Request{
				request(t, web.Clone().Cluster("member1", 2).Obj(), nil),
				request(t, api.Clone().Cluster("member1", 1).Obj(), nil),
			},
			wantErrs: []*wantError{
				{Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden, Messages: []string{`"broken" is forbidden`, "quota broken is invalid", "limits.cpu"}},
				{Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden, Messages: []string{"quota broken is invalid"}},
			},
			wantQuotas: []*quotav1alpha1.KarmadaQuota{
				utiltesting.MakeQuota(ns, "broken").Hard(list("limits.cpu", "4")).Obj(),
				utiltesting.MakeQuota(ns, "fine").Hard(list("cpu", "10")).Obj(),
			},
			wantWritten: map[string]bool{"broken": false, "fine": false},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := newClient(nil, seeded(tc.quotas, tc.ledgers...)...)
			before := resourceVersions(t, c, tc.quotas)
			a := newAdmitter(c)
			for i, r := range tc.requests {
				checkError(t, tc.wantErrs[i], a.Admit(context.Background(), r))
			}
			written := checkQuotas(t, c, before, tc.wantQuotas, tc.wantObserved)
			if diff := cmp.Diff(tc.wantWritten, written, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("ledgers written (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAdmitConflictRetried loses the first ledger write to another writer (the controller): the batch re-reads,
// keeps what the other writer wrote, and admits with exactly one reservation. The race lost is an update of the
// quota's ledger object, or its creation when the other writer created it first.
func TestAdmitConflictRetried(t *testing.T) {
	web := utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")).Cluster("member1", 2)
	team := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10"))
	observed := &quotav1alpha1.LedgerObserved{Used: list("cpu", "3")}

	cases := map[string]struct {
		objs []client.Object
		// wantLost is what the apiserver answers the write that lost.
		wantLost func(error) bool
	}{
		"an update of the ledger":    {objs: withLedger(team.Obj()), wantLost: apierrors.IsConflict},
		"the creation of the ledger": {objs: []client.Object{team.Obj()}, wantLost: apierrors.IsAlreadyExists},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var calls atomic.Int32
			// race has the other writer write first, then lets the webhook's write (write) meet the apiserver.
			race := func(ctx context.Context, c client.Client, obj client.Object, write func() error) error {
				if calls.Add(1) == 1 {
					if err := writeLedger(ctx, c, obj.GetName(), func(l *quotav1alpha1.KarmadaQuotaLedger) { l.Observed = observed }); err != nil {
						return err
					}
					err := write()
					if !tc.wantLost(err) {
						t.Errorf("the write that lost the race got %v", err)
					}
					return err
				}
				return write()
			}
			funcs := onLedgerWrites(race)
			c := newClient(&funcs, tc.objs...)
			quotaVersion := getQuota(t, c, "team").ResourceVersion
			conflicts := counter(metrics.StatusConflicts.WithLabelValues("webhook"))
			retries := counter(metrics.AdmissionRetries)
			reservations := counter(metrics.ReservationsWritten)

			if err := newAdmitter(c).Admit(context.Background(), request(t, web.Obj(), nil)); err != nil {
				t.Fatalf("Admit: %v", err)
			}

			checkLedger(t, c, team.Clone().Reservation(web.Obj(), 1, list("cpu", "2"), wantExpiry).Obj(), observed)
			if got := getQuota(t, c, "team").ResourceVersion; got != quotaVersion {
				t.Errorf("the quota was written (resourceVersion %s -> %s)", quotaVersion, got)
			}
			if got := calls.Load(); got != 2 {
				t.Errorf("ledger writes = %d, want 2 (one lost, one retried)", got)
			}
			if got := counter(metrics.StatusConflicts.WithLabelValues("webhook")) - conflicts; got != 1 {
				t.Errorf("StatusConflicts{writer=webhook} grew by %v, want 1", got)
			}
			if got := counter(metrics.AdmissionRetries) - retries; got != 1 {
				t.Errorf("AdmissionRetries grew by %v, want 1", got)
			}
			if got := counter(metrics.ReservationsWritten) - reservations; got != 1 {
				t.Errorf("ReservationsWritten grew by %v, want 1", got)
			}
		})
	}
}

// TestAdmitConflictOnSecondQuota commits the first quota's reservation, then loses the second quota's ledger write.
func TestAdmitConflictOnSecondQuota(t *testing.T) {
	web := utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")).Cluster("member1", 2)
	other := utiltesting.MakeBinding(ns, "other")
	first := utiltesting.MakeQuota(ns, "a-first").Hard(list("cpu", "10"))
	second := utiltesting.MakeQuota(ns, "b-second").Hard(list("cpu", "2"))

	// fill is another replica's admission of other, which the controller has since observed as used.
	fill := func(l *quotav1alpha1.KarmadaQuotaLedger) {
		l.Reservations = append(l.Reservations, quotav1alpha1.Reservation{
			ReservedBy: utiltesting.ReservationOwner(other.Obj()), Generation: 1,
			Reserved: list("cpu", "1"), ExpirationTime: metav1.NewTime(wantExpiry),
		})
		l.ReservationCount = int32(len(l.Reservations))
		l.Observed = &quotav1alpha1.LedgerObserved{Used: list("cpu", "1")}
	}
	// touch is the controller observing nothing used.
	touch := func(l *quotav1alpha1.KarmadaQuotaLedger) {
		l.Observed = &quotav1alpha1.LedgerObserved{Used: list("cpu", "0")}
	}

	cases := map[string]struct {
		// otherWriters change the second quota's ledger, one before each of its writes, which then loses the race;
		// later writes go through.
		otherWriters []func(*quotav1alpha1.KarmadaQuotaLedger)
		// tick advances the clock at each conflict, so that a retry writes a later expiry.
		tick    time.Duration
		wantErr *wantError
		// wantFirst and wantSecond are the quotas built with the reservations their ledgers must hold;
		// wantSecondObserved is what the controller observed in the second one's.
		wantFirst, wantSecond *quotav1alpha1.KarmadaQuota
		wantSecondObserved    *quotav1alpha1.LedgerObserved
		// wantFirstWrites counts the first quota's ledger writes.
		wantFirstWrites int32
		wantRolledBack  float64
	}{
		"the other writer took the rest: the first quota's reservation is rolled back": {
			otherWriters: []func(*quotav1alpha1.KarmadaQuotaLedger){fill},
			wantErr: &wantError{
				Code: http.StatusForbidden, Reason: ReasonQuotaExceeded,
				Messages: []string{"exceeded quota: b-second, cpu: requested 2, used 1, reserved 1, hard 2"},
			},
			// Written again after the rollback: no reservation.
			wantFirst:          first.Obj(),
			wantSecond:         second.Clone().Reservation(other.Obj(), 1, list("cpu", "1"), wantExpiry).Obj(),
			wantSecondObserved: &quotav1alpha1.LedgerObserved{Used: list("cpu", "1")},
			wantFirstWrites:    2,
			wantRolledBack:     1,
		},
		"the other writer changed nothing that matters: both quotas hold one reservation": {
			otherWriters:       []func(*quotav1alpha1.KarmadaQuotaLedger){touch},
			wantFirst:          first.Clone().Reservation(web.Obj(), 1, list("cpu", "2"), wantExpiry).Obj(),
			wantSecond:         second.Clone().Reservation(web.Obj(), 1, list("cpu", "2"), wantExpiry).Obj(),
			wantSecondObserved: &quotav1alpha1.LedgerObserved{Used: list("cpu", "0")},
			wantFirstWrites:    1,
		},
		"rolled back to before the batch, not to what an earlier attempt of the batch wrote": {
			// Attempt 1 reserves at the first quota; attempt 2 (the clock moved) finds it there and writes
			// nothing; attempt 3 is denied by the second quota and must remove the reservation.
			otherWriters: []func(*quotav1alpha1.KarmadaQuotaLedger){touch, fill},
			tick:         time.Second,
			wantErr: &wantError{
				Code: http.StatusForbidden, Reason: ReasonQuotaExceeded,
				Messages: []string{"exceeded quota: b-second, cpu: requested 2, used 1, reserved 1, hard 2"},
			},
			wantFirst:          first.Obj(),
			wantSecond:         second.Clone().Reservation(other.Obj(), 1, list("cpu", "1"), wantExpiry).Obj(),
			wantSecondObserved: &quotav1alpha1.LedgerObserved{Used: list("cpu", "1")},
			wantFirstWrites:    2,
			wantRolledBack:     1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(now)
			var firstWrites, secondWrites atomic.Int32
			// race counts the ledger writes, and before each of the first len(otherWriters) writes of the second
			// quota's has another writer write first: the webhook's write (write) then loses.
			race := func(ctx context.Context, c client.Client, obj client.Object, write func() error) error {
				switch obj.GetName() {
				case "a-first":
					firstWrites.Add(1)
				case "b-second":
					if n := int(secondWrites.Add(1)); n <= len(tc.otherWriters) {
						if err := writeLedger(ctx, c, obj.GetName(), tc.otherWriters[n-1]); err != nil {
							return err
						}
						clk.SetTime(clk.Now().Add(tc.tick))
						err := write()
						if !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
							t.Errorf("write %d of the second quota's ledger got %v, want it to lose the race", n, err)
						}
						return err
					}
				}
				return write()
			}
			funcs := onLedgerWrites(race)
			quotas := []*quotav1alpha1.KarmadaQuota{first.Obj(), second.Obj()}
			c := newClient(&funcs, seeded(quotas)...)
			before := resourceVersions(t, c, quotas)
			rolledBack := counter(metrics.ReservationsRolledBack)

			a := NewAdmitter(NewQuotaReader(c, nil), c, c, c, clk, ttl, 10*time.Second, 0)
			checkError(t, tc.wantErr, a.Admit(context.Background(), request(t, web.Obj(), nil)))

			checkLedger(t, c, tc.wantFirst, nil)
			checkLedger(t, c, tc.wantSecond, tc.wantSecondObserved)
			for _, q := range quotas {
				if got := getQuota(t, c, q.Name).ResourceVersion; got != before.quotas[q.Name] {
					t.Errorf("quota %s was written (resourceVersion %s -> %s)", q.Name, before.quotas[q.Name], got)
				}
			}
			if got := firstWrites.Load(); got != tc.wantFirstWrites {
				t.Errorf("ledger writes of the first quota = %d, want %d", got, tc.wantFirstWrites)
			}
			if got := counter(metrics.ReservationsRolledBack) - rolledBack; got != tc.wantRolledBack {
				t.Errorf("ReservationsRolledBack grew by %v, want %v", got, tc.wantRolledBack)
			}
		})
	}
}

// TestAdmitFailsClosed refuses when the quota state cannot be read or written.
func TestAdmitFailsClosed(t *testing.T) {
	web := utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")).Cluster("member1", 1)
	team := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10"))
	etcdDown := apierrors.NewServiceUnavailable("etcd is down")

	cases := map[string]struct {
		objs    []client.Object
		funcs   interceptor.Funcs
		wantErr *wantError
	}{
		"the quotas cannot be listed": {
			objs: withLedger(team.Obj()),
			funcs: interceptor.Funcs{
				List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
					return errors.New("connection refused")
				},
			},
			wantErr: &wantError{
				Code: http.StatusInternalServerError, Reason: metav1.StatusReasonInternalError,
				Messages: []string{"quota state of namespace team-a could not be read or written", "fail closed", "listing quotas: connection refused"},
			},
		},
		"the ledgers cannot be listed": {
			objs: withLedger(team.Obj()),
			funcs: interceptor.Funcs{
				List: func(ctx context.Context, c client.WithWatch, l client.ObjectList, opts ...client.ListOption) error {
					if _, ok := l.(*quotav1alpha1.KarmadaQuotaLedgerList); ok {
						return errors.New("connection refused")
					}
					return c.List(ctx, l, opts...)
				},
			},
			wantErr: &wantError{
				Code: http.StatusInternalServerError, Reason: metav1.StatusReasonInternalError,
				Messages: []string{"fail closed", "listing quota ledgers: connection refused"},
			},
		},
		"a quota without a ledger cannot be read from the apiserver": {
			objs: []client.Object{team.Obj()},
			funcs: interceptor.Funcs{
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					if _, ok := obj.(*quotav1alpha1.KarmadaQuota); ok {
						return etcdDown
					}
					return c.Get(ctx, key, obj, opts...)
				},
			},
			wantErr: &wantError{
				Code: http.StatusInternalServerError, Reason: metav1.StatusReasonInternalError,
				Messages: []string{"fail closed", "reading quota team: etcd is down"},
			},
		},
		"a ledger cannot be created": {
			objs: []client.Object{team.Obj()},
			funcs: interceptor.Funcs{
				Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
					return etcdDown
				},
			},
			wantErr: &wantError{
				Code: http.StatusInternalServerError, Reason: metav1.StatusReasonInternalError,
				Messages: []string{"fail closed", "writing the ledger of quota team: etcd is down"},
			},
		},
		"a ledger cannot be updated": {
			objs: withLedger(team.Obj()),
			funcs: interceptor.Funcs{
				Update: func(context.Context, client.WithWatch, client.Object, ...client.UpdateOption) error {
					return etcdDown
				},
			},
			wantErr: &wantError{
				Code: http.StatusInternalServerError, Reason: metav1.StatusReasonInternalError,
				Messages: []string{"fail closed", "writing the ledger of quota team: etcd is down"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			apiserver := newClient(nil, tc.objs...)
			c := interceptor.NewClient(apiserver, tc.funcs)
			quotaBefore, ledgerBefore := getQuota(t, apiserver, "team"), getLedger(t, apiserver, "team")

			checkError(t, tc.wantErr, newAdmitter(c).Admit(context.Background(), request(t, web.Obj(), nil)))

			if diff := cmp.Diff(quotaBefore, getQuota(t, apiserver, "team"), statusOpts); diff != "" {
				t.Errorf("quota changed (-before +after):\n%s", diff)
			}
			if diff := cmp.Diff(ledgerBefore, getLedger(t, apiserver, "team"), statusOpts); diff != "" {
				t.Errorf("ledger changed (-before +after):\n%s", diff)
			}
		})
	}
}

// TestAdmitCallerGivesUp answers a caller whose context ends before the decision with a timeout. The batch still
// runs to its end; the next request of the namespace is decided after it.
func TestAdmitCallerGivesUp(t *testing.T) {
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	funcs := interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, l client.ObjectList, opts ...client.ListOption) error {
			select {
			case entered <- struct{}{}:
				<-release
			default:
			}
			return c.List(ctx, l, opts...)
		},
	}
	c := newClient(&funcs, utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10")).Obj())
	a := newAdmitter(c)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := a.Admit(ctx, request(t, utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")).Cluster("member1", 1).Obj(), nil))
	if !apierrors.IsTimeout(err) {
		t.Errorf("Admit = %v, want a timeout", err)
	}

	// Let the abandoned batch finish before the test ends, so that it cannot leak into another test's metrics.
	<-entered
	close(release)
	if err := a.Admit(context.Background(), request(t, utiltesting.MakeBinding(ns, "api").Requests(list("cpu", "1")).Cluster("member1", 1).Obj(), nil)); err != nil {
		t.Errorf("Admit after the abandoned batch: %v", err)
	}
}

// admitAtOnce has admitters decide requests, round robin, all at once, and returns each one's outcome.
func admitAtOnce(admitters []*Admitter, requests []Request) []error {
	start := make(chan struct{})
	errs := make([]error, len(requests))
	var wg sync.WaitGroup
	for i, r := range requests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = admitters[i%len(admitters)].Admit(context.Background(), r)
		}()
	}
	close(start)
	wg.Wait()
	return errs
}

// expectOutcomes checks that admitted of errs are admissions and the others QuotaExceeded refusals.
func expectOutcomes(t *testing.T, errs []error, admitted int) {
	t.Helper()
	got, exceeded := 0, 0
	for i, err := range errs {
		switch {
		case err == nil:
			got++
		case apierrors.ReasonForError(err) == ReasonQuotaExceeded && apierrors.IsForbidden(err):
			exceeded++
		default:
			t.Errorf("write %d: unexpected error %v", i, err)
		}
	}
	if diff := cmp.Diff([]int{admitted, len(errs) - admitted}, []int{got, exceeded}); diff != "" {
		t.Errorf("[admitted, QuotaExceeded] (-want +got):\n%s", diff)
	}
}

// TestAdmitConcurrent admits 50 writes of 1 CPU each against 20 CPU, from two webhook replicas sharing one
// apiserver: exactly 20 fit, whatever the interleaving, and the quota's ledger accounts for exactly them. The
// replicas race to create the ledger, then to update it.
func TestAdmitConcurrent(t *testing.T) {
	const (
		writes   = 50
		hardCPU  = 20
		replicas = 2
	)
	var lists atomic.Int32
	funcs := interceptor.Funcs{
		// A slow read lets requests queue up behind the batch being decided.
		List: func(ctx context.Context, c client.WithWatch, l client.ObjectList, opts ...client.ListOption) error {
			if _, ok := l.(*quotav1alpha1.KarmadaQuotaList); ok {
				lists.Add(1)
				time.Sleep(20 * time.Millisecond)
			}
			return c.List(ctx, l, opts...)
		},
	}
	c := newClient(&funcs, utiltesting.MakeQuota(ns, "team").Hard(list("cpu", fmt.Sprint(hardCPU))).Obj())
	admitters := make([]*Admitter, replicas)
	for i := range admitters {
		admitters[i] = newAdmitter(c)
	}
	batches, batched := histogram(t, metrics.AdmissionBatchSize)

	requests := make([]Request, writes)
	for i := range writes {
		requests[i] = request(t, utiltesting.MakeBinding(ns, fmt.Sprintf("web-%d", i)).Requests(list("cpu", "1")).Cluster("member1", 1).Obj(), nil)
	}
	errs := admitAtOnce(admitters, requests)
	expectOutcomes(t, errs, hardCPU)

	team := getQuota(t, c, "team")
	stored := getLedger(t, c, "team")
	if stored == nil {
		t.Fatal("the quota has no ledger object")
	}
	if quota.LedgerOf(stored, team) == nil {
		t.Errorf("the ledger object is not the quota's: owner references %+v", stored.OwnerReferences)
	}
	l, err := quota.NewLedger(team, stored)
	if err != nil {
		t.Fatal(err)
	}
	reserved := l.RenderAll(l.Reserved())[corev1.ResourceCPU]
	if reserved.Cmp(resource.MustParse(fmt.Sprint(hardCPU))) != 0 {
		t.Errorf("reserved cpu = %s, want %d", reserved.String(), hardCPU)
	}
	if got := len(stored.Reservations); got != hardCPU {
		t.Errorf("%d reservations, want %d", got, hardCPU)
	}
	if stored.ReservationCount != hardCPU {
		t.Errorf("reservationCount = %d, want %d", stored.ReservationCount, hardCPU)
	}
	owners := map[types.UID]bool{}
	for _, r := range stored.Reservations {
		owners[r.ReservedBy.UID] = true
	}
	for i, err := range errs {
		uid := types.UID(fmt.Sprintf("uid-%s-web-%d", ns, i))
		if (err == nil) != owners[uid] {
			t.Errorf("write %d: admitted = %v, but reserved = %v", i, err == nil, owners[uid])
		}
	}

	count, sum := histogram(t, metrics.AdmissionBatchSize)
	if got := sum - batched; got != writes {
		t.Errorf("AdmissionBatchSize summed %v requests, want %d", got, writes)
	}
	if got := count - batches; got >= writes {
		t.Errorf("AdmissionBatchSize saw %d batches for %d writes: nothing was batched", got, writes)
	}
	t.Logf("%d writes decided in %d batches on %d reads", writes, count-batches, lists.Load())
}

// TestBindingValidator goes through the typed webhook: the reservation key of a create, dry run from the
// admission request, and no quota read at all for a write that cannot grow.
func TestBindingValidator(t *testing.T) {
	web := utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")).Cluster("member1", 1)
	team := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10", "pods", "100"))

	cases := map[string]struct {
		validate func(ctx context.Context, v *BindingValidator) error
		dryRun   bool
		wantErr  *wantError
		// wantQuota is the quota built with the reservations its ledger must hold.
		wantQuota *quotav1alpha1.KarmadaQuota
		// wantReads counts informer lists of quotas: one to learn the namespace has quotas, one for the batch that
		// decides.
		wantReads int32
	}{
		"a create is reserved under generation 1, which the apiserver sets after validating admission": {
			validate: func(ctx context.Context, v *BindingValidator) error {
				_, err := v.ValidateCreate(ctx, web.Clone().Generation(0).Obj())
				return err
			},
			wantQuota: team.Clone().Reservation(web.Obj(), 1, list("cpu", "1", "pods", "1"), wantExpiry).Obj(),
			wantReads: 2,
		},
		"a dry-run create that fits is admitted and writes nothing": {
			validate: func(ctx context.Context, v *BindingValidator) error {
				_, err := v.ValidateCreate(ctx, web.Clone().Generation(0).Obj())
				return err
			},
			dryRun:    true,
			wantQuota: team.Obj(),
			wantReads: 2,
		},
		"a dry-run create that does not fit is denied": {
			validate: func(ctx context.Context, v *BindingValidator) error {
				_, err := v.ValidateCreate(ctx, web.Clone().Generation(0).Cluster("member2", 10).Obj())
				return err
			},
			dryRun: true,
			wantErr: &wantError{Code: http.StatusForbidden, Reason: ReasonQuotaExceeded,
				Messages: []string{"cpu: requested 11, used 0, reserved 0, hard 10 (can never fit"}},
			wantQuota: team.Obj(),
			wantReads: 2,
		},
		"an update is reserved under the new generation": {
			validate: func(ctx context.Context, v *BindingValidator) error {
				_, err := v.ValidateUpdate(ctx, web.Obj(), web.Clone().Generation(3).Cluster("member2", 2).Obj())
				return err
			},
			wantQuota: team.Clone().Reservation(web.Obj(), 3, list("cpu", "2", "pods", "2"), wantExpiry).Obj(),
			wantReads: 2,
		},
		"a write that cannot grow is admitted without reading any quota": {
			validate: func(ctx context.Context, v *BindingValidator) error {
				_, err := v.ValidateUpdate(ctx, web.Obj(), web.Clone().Label("app", "web").Obj())
				return err
			},
			wantQuota: team.Obj(),
		},
		"an invalid binding is refused as invalid": {
			validate: func(ctx context.Context, v *BindingValidator) error {
				_, err := v.ValidateCreate(ctx, web.Clone().Resource("", "Deployment").Obj())
				return err
			},
			wantErr:   &wantError{Code: http.StatusUnprocessableEntity, Reason: metav1.StatusReasonInvalid, Messages: []string{"spec.resource.apiVersion"}},
			wantQuota: team.Obj(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var reads, ledgerReads atomic.Int32
			funcs := interceptor.Funcs{
				List: func(ctx context.Context, c client.WithWatch, l client.ObjectList, opts ...client.ListOption) error {
					switch l.(type) {
					case *quotav1alpha1.KarmadaQuotaList:
						reads.Add(1)
					case *quotav1alpha1.KarmadaQuotaLedgerList:
						ledgerReads.Add(1)
					}
					return c.List(ctx, l, opts...)
				},
			}
			c := newClient(&funcs, team.Obj())
			quotaVersion := getQuota(t, c, "team").ResourceVersion
			v := &BindingValidator{admitter: newAdmitter(c), quotas: NewQuotaReader(c, nil)}
			ctx := admission.NewContextWithRequest(context.Background(), admission.Request{
				AdmissionRequest: admissionv1.AdmissionRequest{DryRun: ptr.To(tc.dryRun)},
			})

			checkError(t, tc.wantErr, tc.validate(ctx, v))

			checkLedger(t, c, tc.wantQuota, nil)
			if written, want := getLedger(t, c, "team") != nil, len(tc.wantQuota.Status.Reservations) > 0; written != want {
				t.Errorf("ledger written = %v, want %v", written, want)
			}
			if got := getQuota(t, c, "team").ResourceVersion; got != quotaVersion {
				t.Errorf("the quota was written (resourceVersion %s -> %s)", quotaVersion, got)
			}
			if got := reads.Load(); got != tc.wantReads {
				t.Errorf("quota reads = %d, want %d", got, tc.wantReads)
			}
			// The ledgers are read by the batch's decision alone (when there is one): the validator's first read,
			// which learns that the namespace has quotas and what they limit, needs none.
			if want := min(tc.wantReads, 1); ledgerReads.Load() != want {
				t.Errorf("ledger reads = %d, want %d", ledgerReads.Load(), want)
			}
		})
	}
}

// TestBindingValidatorNamespaceWithoutQuota: most namespaces of a federation have no quota; a growing write there
// is admitted on one informer list, without reading the binding or forming a batch.
func TestBindingValidatorNamespaceWithoutQuota(t *testing.T) {
	var reads atomic.Int32
	funcs := interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, l client.ObjectList, opts ...client.ListOption) error {
			reads.Add(1)
			return c.List(ctx, l, opts...)
		},
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			t.Errorf("unexpected read of %s", key)
			return c.Get(ctx, key, obj, opts...)
		},
	}
	c := newClient(&funcs, utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "1")).Obj())
	v := &BindingValidator{admitter: newAdmitter(c), quotas: NewQuotaReader(c, nil)}
	batches := batchCount(t)

	old := utiltesting.MakeBinding("no-quota", "web").Requests(list("cpu", "1")).ResourceVersion("7").Obj()
	placed := utiltesting.MakeBinding("no-quota", "web").Requests(list("cpu", "1")).Cluster("member1", 50).Generation(2).Obj()
	if _, err := v.ValidateUpdate(context.Background(), old, placed); err != nil {
		t.Fatalf("ValidateUpdate: %v", err)
	}
	if got := reads.Load(); got != 1 {
		t.Errorf("informer lists = %d, want 1", got)
	}
	if got := batchCount(t) - batches; got != 0 {
		t.Errorf("batches decided = %d, want 0", got)
	}
}

func batchCount(t *testing.T) uint64 {
	t.Helper()
	var m dto.Metric
	if err := metrics.AdmissionBatchSize.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}

// TestAdmitStaleAttempt: an update built on a stale copy of its binding cannot commit, and reserves nothing. The
// binding is read only when the quotas leave it open.
func TestAdmitStaleAttempt(t *testing.T) {
	web := utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")).ResourceVersion("10")
	v2 := web.Clone().Generation(2).Cluster("member1", 1)
	// What the apiserver's stale copy turns the next placement into: generation 2 again, and a larger delta.
	staleV2 := web.Clone().Generation(2).Cluster("member1", 3)
	team := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10"))

	cases := map[string]struct {
		// quota is built with the reservations its ledger holds at the start.
		quota *quotav1alpha1.KarmadaQuota
		// stored is the binding as the apiserver has it; nil when the test expects no read.
		stored *workv1alpha2.ResourceBinding
		write  *workv1alpha2.ResourceBinding
		// wantQuota is built with the reservations its ledger must hold afterwards.
		wantQuota *quotav1alpha1.KarmadaQuota
		wantReads int32
	}{
		"a write whose key holds nothing is decided without reading the binding": {
			quota:     team.Obj(),
			write:     v2.Obj(),
			wantQuota: team.Clone().Reservation(web.Obj(), 2, list("cpu", "1"), wantExpiry).Obj(),
		},
		"a later generation reserved for the binding proves the attempt stale, without a read": {
			quota:     team.Clone().Reservation(web.Obj(), 3, list("cpu", "1"), wantExpiry).Obj(),
			write:     staleV2.Obj(),
			wantQuota: team.Clone().Reservation(web.Obj(), 3, list("cpu", "1"), wantExpiry).Obj(),
		},
		"a key already held for less is read: a binding moved past the attempt's base makes it stale": {
			quota:     team.Clone().Reservation(web.Obj(), 2, list("cpu", "1"), wantExpiry).Obj(),
			stored:    v2.Clone().ResourceVersion("11").Obj(),
			write:     staleV2.Obj(),
			wantQuota: team.Clone().Reservation(web.Obj(), 2, list("cpu", "1"), wantExpiry).Obj(),
			wantReads: 1,
		},
		"a key already held for less is read: a binding still at the attempt's base is a racing writer, and merges": {
			quota:     team.Clone().Reservation(web.Obj(), 2, list("cpu", "1"), wantExpiry).Obj(),
			stored:    web.Obj(),
			write:     staleV2.Obj(),
			wantQuota: team.Clone().Reservation(web.Obj(), 2, list("cpu", "3"), wantExpiry).Obj(),
			wantReads: 1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := newClient(nil, withLedger(tc.quota)...)
			var reads atomic.Int32
			bindings := interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme.Scheme).Build(), interceptor.Funcs{
				Get: func(ctx context.Context, _ client.WithWatch, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
					reads.Add(1)
					if tc.stored == nil {
						t.Errorf("unexpected read of binding %s", key)
						return apierrors.NewNotFound(schema.GroupResource{}, key.Name)
					}
					tc.stored.DeepCopyInto(obj.(*workv1alpha2.ResourceBinding))
					return nil
				},
			})
			a := NewAdmitter(NewQuotaReader(c, nil), c, bindings, c, clocktesting.NewFakePassiveClock(now), ttl, 10*time.Second, 0)
			r := request(t, tc.write, web.Obj())
			r.BaseResourceVersion = web.Obj().ResourceVersion
			if err := a.Admit(context.Background(), r); err != nil {
				t.Fatalf("Admit: %v", err)
			}
			checkLedger(t, c, tc.wantQuota, nil)
			if got := reads.Load(); got != tc.wantReads {
				t.Errorf("binding reads = %d, want %d", got, tc.wantReads)
			}
		})
	}
}

// TestAdmitStaleAttemptSeenAfterALostRace: the stale first attempt of the next write is decided on a ledger that
// does not hold the committed write's reservation yet (another replica wrote it; the informer has not caught up),
// so it reads as fresh; its write loses to that replica's, and on the newer ledger it must be classified again and
// found stale, not merged into the committed write's key with its larger delta.
func TestAdmitStaleAttemptSeenAfterALostRace(t *testing.T) {
	web := utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")).ResourceVersion("10")
	// The write committed by another replica: generation 2, one replica, stored at resourceVersion 11.
	v2 := web.Clone().Generation(2).Cluster("member1", 1).ResourceVersion("11")
	// The next write's first attempt, on the apiserver's copy from before v2: keyed 2, three replicas from none.
	staleV2 := web.Clone().Generation(2).Cluster("member1", 3)
	team := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10"))
	committed := team.Clone().Reservation(web.Obj(), 2, list("cpu", "1"), wantExpiry).Obj()

	var writes atomic.Int32
	funcs := onLedgerWrites(func(ctx context.Context, c client.Client, obj client.Object, write func() error) error {
		if writes.Add(1) == 1 {
			if err := writeLedger(ctx, c, obj.GetName(), func(l *quotav1alpha1.KarmadaQuotaLedger) {
				l.LedgerState = utiltesting.MoveToLedger(committed.DeepCopy()).LedgerState
			}); err != nil {
				return err
			}
		}
		return write()
	})
	c := newClient(&funcs, withLedger(team.Obj())...)
	var reads atomic.Int32
	bindings := interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme.Scheme).Build(), interceptor.Funcs{
		Get: func(_ context.Context, _ client.WithWatch, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
			reads.Add(1)
			v2.Obj().DeepCopyInto(obj.(*workv1alpha2.ResourceBinding))
			return nil
		},
	})
	a := NewAdmitter(NewQuotaReader(c, nil), c, bindings, c, clocktesting.NewFakePassiveClock(now), ttl, 10*time.Second, 0)
	r := request(t, staleV2.Obj(), web.Obj())
	r.BaseResourceVersion = web.Obj().ResourceVersion
	if err := a.Admit(context.Background(), r); err != nil {
		t.Fatalf("Admit: %v", err)
	}
	checkLedger(t, c, committed, nil)
	if got := writes.Load(); got != 1 {
		t.Errorf("ledger writes = %d, want 1: the attempt's, which lost to the other replica's; the retry reserves nothing", got)
	}
	if got := reads.Load(); got != 1 {
		t.Errorf("binding reads = %d, want 1 (on the retry, when the key holds less than the attempt asks)", got)
	}
}

// TestAdmitDecidesOnItsOwnWrite: the informer lags behind the webhook's own ledger writes; the next batch decides
// on the object the last write returned, so back-to-back admissions in one namespace cost one ledger write each,
// with no read of the apiserver and no lost race. The first admission creates the ledger object, which the
// informer has never listed, after reading the quota from the apiserver.
func TestAdmitDecidesOnItsOwnWrite(t *testing.T) {
	team := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10"))
	apiserver := newClient(nil, team.Obj())
	// An informer frozen at the quota as it was at the start, without a ledger.
	informer := newClient(nil, getQuota(t, apiserver, "team"))
	var quotaGets, ledgerGets atomic.Int32
	reader := interceptor.NewClient(apiserver, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			switch obj.(type) {
			case *quotav1alpha1.KarmadaQuota:
				quotaGets.Add(1)
			case *quotav1alpha1.KarmadaQuotaLedger:
				ledgerGets.Add(1)
			default:
				t.Errorf("unexpected read of %T %s", obj, key)
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
	conflicts := counter(metrics.StatusConflicts.WithLabelValues("webhook"))
	a := NewAdmitter(NewQuotaReader(informer, nil), reader, reader, apiserver, clocktesting.NewFakePassiveClock(now), ttl, 10*time.Second, 0)

	want := team.Clone()
	var webs []*workv1alpha2.ResourceBinding
	for i := range 3 {
		rb := utiltesting.MakeBinding(ns, fmt.Sprintf("web-%d", i)).Requests(list("cpu", "1")).Cluster("member1", 1).Obj()
		if err := a.Admit(context.Background(), request(t, rb, nil)); err != nil {
			t.Fatalf("Admit %d: %v", i, err)
		}
		want.Reservation(rb, 1, list("cpu", "1"), wantExpiry)
		webs = append(webs, rb)
		// Only the ledger's creation reads the quota from the apiserver.
		if got := quotaGets.Load(); got != 1 {
			t.Errorf("after admission %d: %d reads of the quota from the apiserver, want 1 (for the ledger's creation)", i, got)
		}
	}
	checkLedger(t, apiserver, want.Obj(), nil)
	if got := counter(metrics.StatusConflicts.WithLabelValues("webhook")) - conflicts; got != 0 {
		t.Errorf("%v ledger writes lost a race against the webhook's own writes", got)
	}
	if got := ledgerGets.Load(); got != 0 {
		t.Errorf("%d reads of the ledger from the apiserver, want none", got)
	}

	// Another writer (the controller) moves the ledger on; the informer has not seen it. The write loses the race
	// once, the ledger is read from the apiserver, and the admission lands on what the other writer wrote.
	observed := &quotav1alpha1.LedgerObserved{Used: list("cpu", "2")}
	if err := writeLedger(context.Background(), apiserver, "team", func(l *quotav1alpha1.KarmadaQuotaLedger) { l.Observed = observed }); err != nil {
		t.Fatal(err)
	}
	rb := utiltesting.MakeBinding(ns, "api").Requests(list("cpu", "1")).Cluster("member1", 1).Obj()
	if err := a.Admit(context.Background(), request(t, rb, nil)); err != nil {
		t.Fatalf("Admit after another writer: %v", err)
	}
	// The ledger lists reservations in the order they were admitted.
	want = team.Clone()
	for _, web := range webs {
		want.Reservation(web, 1, list("cpu", "1"), wantExpiry)
	}
	want.Reservation(rb, 1, list("cpu", "1"), wantExpiry)
	checkLedger(t, apiserver, want.Obj(), observed)
	if got := counter(metrics.StatusConflicts.WithLabelValues("webhook")) - conflicts; got != 1 {
		t.Errorf("ledger write conflicts = %v, want 1", got)
	}
	if got := ledgerGets.Load(); got != 1 {
		t.Errorf("%d reads of the ledger from the apiserver, want 1 (after the lost race)", got)
	}
	if got := quotaGets.Load(); got != 1 {
		t.Errorf("%d reads of the quota from the apiserver, want still 1: the ledger read is fenced at the cached generation", got)
	}
}

// TestAdmitFolds keeps a quota's list within the bound: the oldest reservations fold into one sum in the ledger
// object that still charges the quota.
func TestAdmitFolds(t *testing.T) {
	team := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "5"))
	admit := func(t *testing.T, a *Admitter, clk *clocktesting.FakePassiveClock, i int) error {
		clk.SetTime(now.Add(time.Duration(i) * time.Second))
		rb := utiltesting.MakeBinding(ns, fmt.Sprintf("web-%d", i)).Requests(list("cpu", "1")).Cluster("member1", 1).Obj()
		return a.Admit(context.Background(), request(t, rb, nil))
	}
	owner := func(i int) *workv1alpha2.ResourceBinding {
		return utiltesting.MakeBinding(ns, fmt.Sprintf("web-%d", i)).Obj()
	}

	c := newClient(nil, team.Obj())
	clk := clocktesting.NewFakePassiveClock(now)
	a := NewAdmitter(NewQuotaReader(c, nil), c, c, c, clk, ttl, 10*time.Second, 2)
	for i := range 4 {
		if err := admit(t, a, clk, i); err != nil {
			t.Errorf("Admit %d: %v", i, err)
		}
	}
	want := team.Clone().
		Reservation(owner(2), 1, list("cpu", "1"), wantExpiry.Add(2*time.Second)).
		Reservation(owner(3), 1, list("cpu", "1"), wantExpiry.Add(3*time.Second)).
		Folded(2, list("cpu", "2"), wantExpiry.Add(time.Second)).Obj()
	checkLedger(t, c, want, nil)

	// The folded sum still charges the quota: 4 of 5 are reserved, a fifth fits, a sixth does not.
	if err := admit(t, a, clk, 4); err != nil {
		t.Errorf("Admit 4: %v", err)
	}
	checkError(t, &wantError{Code: http.StatusForbidden, Reason: ReasonQuotaExceeded,
		Messages: []string{"cpu: requested 1, used 0, reserved 5, hard 5"}}, admit(t, a, clk, 5))
}

// TestBindingValidatorInformerNotSynced refuses at once, saying why, when the quota and ledger informers have not
// synced: a replica that may not list them would otherwise hold every call until the apiserver gives up on it.
func TestBindingValidatorInformerNotSynced(t *testing.T) {
	c := newClient(nil, utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "1")).Obj())
	notSynced := NewQuotaReader(c, func() bool { return false })
	v := &BindingValidator{admitter: NewAdmitter(notSynced, c, c, c, clocktesting.NewFakePassiveClock(now), ttl, 10*time.Second, 0), quotas: notSynced}
	old := utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")).Obj()
	placed := utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")).Cluster("member1", 1).Generation(2).Obj()
	_, err := v.ValidateUpdate(context.Background(), old, placed)
	checkError(t, &wantError{Code: http.StatusInternalServerError, Reason: metav1.StatusReasonInternalError,
		Messages: []string{"fail closed", "the quota, ledger and namespace informers have not synced"}}, err)
}

// TestAdmitCreatesLedger: the first admission for a quota creates its ledger object: the quota's (a controller
// owner reference, so that it goes with the quota), fenced at the generation of the spec it decided on, which it
// read from the apiserver. The quota itself is not written.
func TestAdmitCreatesLedger(t *testing.T) {
	team := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10"))
	team.Generation = 3
	web := utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")).Cluster("member1", 2)
	c := newClient(nil, team.Obj())
	quotaVersion := getQuota(t, c, "team").ResourceVersion
	var quotaGets atomic.Int32
	reader := interceptor.NewClient(c, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*quotav1alpha1.KarmadaQuota); ok {
				quotaGets.Add(1)
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
	a := NewAdmitter(NewQuotaReader(c, nil), reader, reader, c, clocktesting.NewFakePassiveClock(now), ttl, 10*time.Second, 0)

	if err := a.Admit(context.Background(), request(t, web.Obj(), nil)); err != nil {
		t.Fatalf("Admit: %v", err)
	}

	got := getLedger(t, c, "team")
	if got == nil {
		t.Fatal("no ledger object was created")
	}
	wantOwners := []metav1.OwnerReference{{
		APIVersion: "quota.karmada.io/v1alpha1", Kind: "KarmadaQuota", Name: "team", UID: team.UID, Controller: ptr.To(true),
	}}
	if diff := cmp.Diff(wantOwners, got.OwnerReferences); diff != "" {
		t.Errorf("owner references (-want +got):\n%s", diff)
	}
	if got.QuotaGeneration != 3 {
		t.Errorf("quotaGeneration = %d, want 3, the generation of the spec decided on", got.QuotaGeneration)
	}
	if got.ReservationCount != 1 {
		t.Errorf("reservationCount = %d, want 1", got.ReservationCount)
	}
	// The reservation, fenced at generation 3, nothing observed yet.
	checkLedger(t, c, team.Clone().Reservation(web.Obj(), 1, list("cpu", "2"), wantExpiry).Obj(), nil)
	if got := quotaGets.Load(); got != 1 {
		t.Errorf("%d reads of the quota from the apiserver, want 1: a ledger is created on the quota as stored", got)
	}
	if got := getQuota(t, c, "team").ResourceVersion; got != quotaVersion {
		t.Errorf("the quota was written (resourceVersion %s -> %s)", quotaVersion, got)
	}
}

// TestAdmitDecidesOnTheNewestSpec: the informer's copy of a quota can be older than its spec as stored. Whenever
// that can matter (a write is about to create the quota's ledger, or its ledger is fenced at a newer generation
// than the copy's), the decision is taken on the quota read from the apiserver: once a quota's author lowered hard,
// no admission is decided against the old limit.
func TestAdmitDecidesOnTheNewestSpec(t *testing.T) {
	team := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10"))
	web := utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")).Cluster("member1", 2)
	refused := &wantError{Code: http.StatusForbidden, Reason: ReasonQuotaExceeded,
		Messages: []string{"exceeded quota: team, cpu: requested 2, used 0, reserved 0, hard 1"}}

	cases := map[string]struct {
		// ledger says whether the quota has a ledger object (fenced at generation 1) before its spec changes.
		ledger bool
		// lowered has the quota's author lower hard cpu to 1 (generation 2) through the quota webhook, which fences
		// the ledger, before the apiserver stores the new spec. The informer keeps the old spec.
		lowered bool
		// informerFenced: the informer has the fenced ledger (not the new spec).
		informerFenced bool
		wantErr        *wantError
		// wantQuotaGets and wantLedgerGets count reads from the apiserver.
		wantQuotaGets, wantLedgerGets int32
		wantConflicts                 float64
	}{
		"no ledger yet: the write that would create it reads the quota from the apiserver, finds the new spec, and the batch is decided again on it": {
			lowered: true, wantErr: refused, wantQuotaGets: 2, wantLedgerGets: 1,
		},
		"a ledger fenced past the informer's quota: the quota is read from the apiserver": {
			ledger: true, lowered: true, informerFenced: true, wantErr: refused, wantQuotaGets: 1,
		},
		"the informer has neither the new spec nor the fence: the write loses its race, and the batch is decided again on the new spec": {
			ledger: true, lowered: true, wantErr: refused, wantQuotaGets: 1, wantLedgerGets: 1, wantConflicts: 1,
		},
		"a ledger fenced at the informer's quota: decided on the informer's copy, without a read": {
			ledger: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			objs := []client.Object{team.Obj()}
			if tc.ledger {
				objs = withLedger(team.Obj())
			}
			apiserver := newClient(nil, objs...)
			cached := []client.Object{getQuota(t, apiserver, "team")}
			cachedLedger := getLedger(t, apiserver, "team")
			if tc.lowered {
				old := getQuota(t, apiserver, "team")
				lowered := old.DeepCopy()
				lowered.Spec.Hard = list("cpu", "1")
				lowered.Generation = 2
				if _, err := (QuotaValidator{reader: apiserver, writer: apiserver}).ValidateUpdate(ctx, old, lowered); err != nil {
					t.Fatalf("ValidateUpdate: %v", err)
				}
				if err := apiserver.Update(ctx, lowered); err != nil {
					t.Fatal(err)
				}
				if tc.informerFenced {
					cachedLedger = getLedger(t, apiserver, "team")
				}
			}
			if cachedLedger != nil {
				cached = append(cached, cachedLedger)
			}
			informer := newClient(nil, cached...)
			ledgerBefore := getLedger(t, apiserver, "team")

			var quotaGets, ledgerGets atomic.Int32
			reader := interceptor.NewClient(apiserver, interceptor.Funcs{
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					switch obj.(type) {
					case *quotav1alpha1.KarmadaQuota:
						quotaGets.Add(1)
					case *quotav1alpha1.KarmadaQuotaLedger:
						ledgerGets.Add(1)
					}
					return c.Get(ctx, key, obj, opts...)
				},
			})
			conflicts := counter(metrics.StatusConflicts.WithLabelValues("webhook"))
			a := NewAdmitter(NewQuotaReader(informer, nil), reader, reader, apiserver, clocktesting.NewFakePassiveClock(now), ttl, 10*time.Second, 0)

			checkError(t, tc.wantErr, a.Admit(ctx, request(t, web.Obj(), nil)))

			if tc.wantErr != nil {
				if diff := cmp.Diff(ledgerBefore, getLedger(t, apiserver, "team")); diff != "" {
					t.Errorf("a refusal changed the ledger (-before +after):\n%s", diff)
				}
			} else {
				checkLedger(t, apiserver, team.Clone().Reservation(web.Obj(), 1, list("cpu", "2"), wantExpiry).Obj(), nil)
			}
			if got := quotaGets.Load(); got != tc.wantQuotaGets {
				t.Errorf("%d reads of the quota from the apiserver, want %d", got, tc.wantQuotaGets)
			}
			if got := ledgerGets.Load(); got != tc.wantLedgerGets {
				t.Errorf("%d reads of the ledger from the apiserver, want %d", got, tc.wantLedgerGets)
			}
			if got := counter(metrics.StatusConflicts.WithLabelValues("webhook")) - conflicts; got != tc.wantConflicts {
				t.Errorf("ledger write conflicts = %v, want %v", got, tc.wantConflicts)
			}
		})
	}
}

// TestAdmitAfterItsLedgerWasDeleted: a ledger this process created and remembers, deleted since with its quota
// (made again under the same name) before the informer listed it, is found gone by the write, read again and made
// anew: the namespace keeps admitting instead of failing closed on a ledger that no longer exists.
func TestAdmitAfterItsLedgerWasDeleted(t *testing.T) {
	team := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10"))
	apiserver := newClient(nil, team.Obj())
	// The informer: it lists the quota, never the ledger (it has not caught up with its creation).
	informer := newClient(nil, team.Obj())
	a := NewAdmitter(NewQuotaReader(informer, nil), apiserver, apiserver, apiserver, clocktesting.NewFakePassiveClock(now), ttl, 10*time.Second, 0)
	first := utiltesting.MakeBinding(ns, "first").Requests(list("cpu", "1")).Cluster("member1", 1)
	if err := a.Admit(context.Background(), request(t, first.Obj(), nil)); err != nil {
		t.Fatalf("first admission: %v", err)
	}

	// The quota is deleted (its ledger with it) and made again.
	ctx := context.Background()
	if err := apiserver.Delete(ctx, getLedger(t, apiserver, "team")); err != nil {
		t.Fatal(err)
	}
	if err := apiserver.Delete(ctx, getQuota(t, apiserver, "team")); err != nil {
		t.Fatal(err)
	}
	again := team.Clone().Obj()
	again.UID = "uid-quota-made-again"
	again.ResourceVersion = ""
	if err := apiserver.Create(ctx, again); err != nil {
		t.Fatal(err)
	}
	cached := getQuota(t, informer, "team")
	cached.UID = again.UID
	if err := informer.Update(ctx, cached); err != nil {
		t.Fatal(err)
	}

	second := utiltesting.MakeBinding(ns, "second").Requests(list("cpu", "2")).Cluster("member1", 1)
	if err := a.Admit(ctx, request(t, second.Obj(), nil)); err != nil {
		t.Fatalf("admission after the ledger was deleted: %v", err)
	}
	got := getLedger(t, apiserver, "team")
	if got == nil || quota.LedgerOf(got, getQuota(t, apiserver, "team")) == nil {
		t.Fatalf("ledger %+v, want one owned by the quota made again", got)
	}
	if len(got.Reservations) != 1 || got.Reservations[0].ReservedBy.Name != "second" {
		t.Errorf("reservations %+v, want only the second write's (the first belonged to the deleted quota)", got.Reservations)
	}
}

// onLedgerWrites intercepts the creates and updates of ledger objects with around, which makes the write (write)
// or fails it; other objects are written as they come.
func onLedgerWrites(around func(ctx context.Context, c client.Client, obj client.Object, write func() error) error) interceptor.Funcs {
	return interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if !isLedger(obj) {
				return c.Create(ctx, obj, opts...)
			}
			return around(ctx, c, obj, func() error { return c.Create(ctx, obj, opts...) })
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if !isLedger(obj) {
				return c.Update(ctx, obj, opts...)
			}
			return around(ctx, c, obj, func() error { return c.Update(ctx, obj, opts...) })
		},
	}
}

// TestAdmitLeavesAQuotaWithoutALedgerUnread: a quota without a ledger is decided on the informer's copy unless a
// write is about to create its ledger. One limiting what the namespace's workloads do not use (object counts of
// another kind) never gets a ledger, and costs no read of the apiserver per batch; nor does a refusal.
func TestAdmitLeavesAQuotaWithoutALedgerUnread(t *testing.T) {
	compute := utiltesting.MakeQuota(ns, "compute").Hard(list("cpu", "2")).Obj()
	objects := utiltesting.MakeQuota(ns, "objects").Hard(list("count/services", "5")).Obj()
	apiserver := newClient(nil, append(withLedger(compute), objects)...)
	informer := newClient(nil, append(withLedger(compute), objects)...)
	reads := map[string]int{}
	var mu sync.Mutex
	reader := interceptor.NewClient(apiserver, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			mu.Lock()
			reads[fmt.Sprintf("%T %s", obj, key.Name)]++
			mu.Unlock()
			return c.Get(ctx, key, obj, opts...)
		},
	})
	a := NewAdmitter(NewQuotaReader(informer, nil), reader, reader, apiserver, clocktesting.NewFakePassiveClock(now), ttl, 10*time.Second, 0)

	web := utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")).Cluster("member1", 2).Obj()
	if err := a.Admit(context.Background(), request(t, web, nil)); err != nil {
		t.Fatalf("Admit: %v", err)
	}
	api := utiltesting.MakeBinding(ns, "api").Requests(list("cpu", "1")).Cluster("member1", 1).Obj()
	checkError(t, &wantError{Code: http.StatusForbidden, Reason: ReasonQuotaExceeded,
		Messages: []string{"exceeded quota: compute, cpu: requested 1, used 0, reserved 2, hard 2"}}, a.Admit(context.Background(), request(t, api, nil)))

	if len(reads) != 0 {
		t.Errorf("reads of the apiserver %v, want none", reads)
	}
	if l := getLedger(t, apiserver, "objects"); l != nil {
		t.Errorf("quota objects got a ledger %+v: nothing was reserved on it", l)
	}
}
