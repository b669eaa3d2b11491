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
	// now has a fraction of a second, which a reservation's expiry must drop: status keeps seconds.
	now        = time.Date(2025, time.January, 1, 0, 0, 0, 700_000_000, time.UTC)
	ttl        = 2 * time.Minute
	wantExpiry = time.Date(2025, time.January, 1, 0, 2, 0, 0, time.UTC)

	quotaResource = quotav1alpha1.GroupVersion.WithResource("karmadaquotas").GroupResource()
)

var list = utiltesting.List

var statusOpts = cmp.Options{
	cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 }),
	cmpopts.EquateEmpty(),
}

func newClient(funcs *interceptor.Funcs, quotas ...*quotav1alpha1.KarmadaQuota) client.WithWatch {
	b := fake.NewClientBuilder().
		WithScheme(scheme.Scheme).
		WithStatusSubresource(&quotav1alpha1.KarmadaQuota{})
	for _, q := range quotas {
		b = b.WithObjects(q)
	}
	if funcs != nil {
		b = b.WithInterceptorFuncs(*funcs)
	}
	return b.Build()
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

func resourceVersions(t *testing.T, c client.Client, quotas []*quotav1alpha1.KarmadaQuota) map[string]string {
	t.Helper()
	rvs := map[string]string{}
	for _, q := range quotas {
		if q.Namespace == ns {
			rvs[q.Name] = getQuota(t, c, q.Name).ResourceVersion
		}
	}
	return rvs
}

// checkQuotas compares the stored statuses with want and reports which quotas were written.
func checkQuotas(t *testing.T, c client.Client, before map[string]string, want []*quotav1alpha1.KarmadaQuota) map[string]bool {
	t.Helper()
	written := map[string]bool{}
	for _, w := range want {
		got := getQuota(t, c, w.Name)
		if diff := cmp.Diff(w.Status, got.Status, statusOpts); diff != "" {
			t.Errorf("status of quota %s (-want +got):\n%s", w.Name, diff)
		}
		written[w.Name] = got.ResourceVersion != before[w.Name]
	}
	return written
}

func withStatus(q *quotav1alpha1.KarmadaQuota, modify func(*quotav1alpha1.KarmadaQuotaStatus)) *quotav1alpha1.KarmadaQuota {
	modify(&q.Status)
	return q
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

func conflict(name string) error {
	return apierrors.NewConflict(quotaResource, name, errors.New("the object has been modified; please apply your changes to the latest version and try again"))
}

func TestAdmit(t *testing.T) {
	web := utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "500m", "memory", "1Gi"))
	webV2 := web.Clone().Generation(2)
	api := utiltesting.MakeBinding(ns, "api").Requests(list("cpu", "1"))
	team := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10", "count/deployments.apps", "5"))

	cases := map[string]struct {
		quotas   []*quotav1alpha1.KarmadaQuota
		requests []Request
		// wantErrs holds, per request, the expected refusal; nil admits.
		wantErrs []*wantError
		// wantQuotas are the quotas of ns as they must be stored afterwards; only their status is compared.
		wantQuotas []*quotav1alpha1.KarmadaQuota
		// wantWritten names the quotas whose status was written.
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
			c := newClient(nil, tc.quotas...)
			before := resourceVersions(t, c, tc.quotas)
			a := newAdmitter(c)
			for i, r := range tc.requests {
				checkError(t, tc.wantErrs[i], a.Admit(context.Background(), r))
			}
			written := checkQuotas(t, c, before, tc.wantQuotas)
			if diff := cmp.Diff(tc.wantWritten, written, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("quotas written (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAdmitConflictRetried loses the first status write to another writer: the batch re-reads, keeps what the
// other writer wrote, and admits with exactly one reservation.
func TestAdmitConflictRetried(t *testing.T) {
	web := utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")).Cluster("member1", 2)
	team := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10"))

	var calls atomic.Int32
	funcs := interceptor.Funcs{
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if calls.Add(1) == 1 {
				// Another writer (the controller) changes the quota between our read and our write.
				var stored quotav1alpha1.KarmadaQuota
				if err := c.Get(ctx, client.ObjectKeyFromObject(obj), &stored); err != nil {
					return err
				}
				stored.Status.Used = list("cpu", "3")
				if err := c.Status().Update(ctx, &stored); err != nil {
					return err
				}
				return conflict(obj.GetName())
			}
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
	}
	c := newClient(&funcs, team.Obj())
	conflicts := counter(metrics.StatusConflicts.WithLabelValues("webhook"))
	retries := counter(metrics.AdmissionRetries)
	reservations := counter(metrics.ReservationsWritten)

	if err := newAdmitter(c).Admit(context.Background(), request(t, web.Obj(), nil)); err != nil {
		t.Fatalf("Admit: %v", err)
	}

	want := team.Clone().Used(list("cpu", "3")).Reservation(web.Obj(), 1, list("cpu", "2"), wantExpiry).Obj()
	if diff := cmp.Diff(want.Status, getQuota(t, c, "team").Status, statusOpts); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	if got := calls.Load(); got != 2 {
		t.Errorf("status writes = %d, want 2 (one lost, one retried)", got)
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
}

// TestAdmitConflictOnSecondQuota commits the first quota's reservation, then loses the second quota's write.
func TestAdmitConflictOnSecondQuota(t *testing.T) {
	web := utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")).Cluster("member1", 2)
	other := utiltesting.MakeBinding(ns, "other")
	first := utiltesting.MakeQuota(ns, "a-first").Hard(list("cpu", "10"))
	second := utiltesting.MakeQuota(ns, "b-second").Hard(list("cpu", "2"))

	fill := func(q *quotav1alpha1.KarmadaQuota) {
		q.Status.Reservations = append(q.Status.Reservations, quotav1alpha1.Reservation{
			ReservedBy: utiltesting.ReservationOwner(other.Obj()), Generation: 1,
			Reserved: list("cpu", "1"), ExpirationTime: metav1.NewTime(wantExpiry),
		})
		q.Status.Reserved = list("cpu", "1")
		q.Status.Used = list("cpu", "1")
	}
	touch := func(q *quotav1alpha1.KarmadaQuota) {
		q.Status.Summary = "cpu 0/2"
	}

	cases := map[string]struct {
		// otherWriters change the second quota, one before each of its writes that is then refused with a
		// conflict; later writes go through.
		otherWriters []func(q *quotav1alpha1.KarmadaQuota)
		// tick advances the clock at each conflict, so that a retry writes a later expiry.
		tick       time.Duration
		wantErr    *wantError
		wantFirst  *quotav1alpha1.KarmadaQuota
		wantSecond *quotav1alpha1.KarmadaQuota
		// wantFirstWrites counts the first quota's status writes.
		wantFirstWrites int32
		wantRolledBack  float64
	}{
		"the other writer took the rest: the first quota's reservation is rolled back": {
			otherWriters: []func(q *quotav1alpha1.KarmadaQuota){fill},
			wantErr: &wantError{
				Code: http.StatusForbidden, Reason: ReasonQuotaExceeded,
				Messages: []string{"exceeded quota: b-second, cpu: requested 2, used 1, reserved 1, hard 2"},
			},
			// Rendered again after the rollback: no reservation, a sum of zero.
			wantFirst: withStatus(first.Obj(), func(s *quotav1alpha1.KarmadaQuotaStatus) { s.Reserved = list("cpu", "0") }),
			wantSecond: second.Clone().Used(list("cpu", "1")).
				Reservation(other.Obj(), 1, list("cpu", "1"), wantExpiry).Obj(),
			wantFirstWrites: 2,
			wantRolledBack:  1,
		},
		"the other writer changed nothing that matters: both quotas hold one reservation": {
			otherWriters: []func(q *quotav1alpha1.KarmadaQuota){touch},
			wantFirst:    first.Clone().Reservation(web.Obj(), 1, list("cpu", "2"), wantExpiry).Obj(),
			wantSecond: withStatus(second.Clone().Reservation(web.Obj(), 1, list("cpu", "2"), wantExpiry).Obj(),
				func(s *quotav1alpha1.KarmadaQuotaStatus) { s.Summary = "cpu 0/2" }),
			wantFirstWrites: 1,
		},
		"rolled back to before the batch, not to what an earlier attempt of the batch wrote": {
			// Attempt 1 reserves at the first quota; attempt 2 (the clock moved) finds it there and writes
			// nothing; attempt 3 is denied by the second quota and must remove the reservation.
			otherWriters: []func(q *quotav1alpha1.KarmadaQuota){touch, fill},
			tick:         time.Second,
			wantErr: &wantError{
				Code: http.StatusForbidden, Reason: ReasonQuotaExceeded,
				Messages: []string{"exceeded quota: b-second, cpu: requested 2, used 1, reserved 1, hard 2"},
			},
			wantFirst: withStatus(first.Obj(), func(s *quotav1alpha1.KarmadaQuotaStatus) { s.Reserved = list("cpu", "0") }),
			wantSecond: withStatus(second.Clone().Used(list("cpu", "1")).Reservation(other.Obj(), 1, list("cpu", "1"), wantExpiry).Obj(),
				func(s *quotav1alpha1.KarmadaQuotaStatus) { s.Summary = "cpu 0/2" }),
			wantFirstWrites: 2,
			wantRolledBack:  1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(now)
			var firstWrites, secondWrites atomic.Int32
			funcs := interceptor.Funcs{
				SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
					switch obj.GetName() {
					case "a-first":
						firstWrites.Add(1)
					case "b-second":
						if n := int(secondWrites.Add(1)); n <= len(tc.otherWriters) {
							var stored quotav1alpha1.KarmadaQuota
							if err := c.Get(ctx, client.ObjectKeyFromObject(obj), &stored); err != nil {
								return err
							}
							tc.otherWriters[n-1](&stored)
							clk.SetTime(clk.Now().Add(tc.tick))
							if err := c.Status().Update(ctx, &stored); err != nil {
								return err
							}
							return conflict(obj.GetName())
						}
					}
					return c.SubResource(sub).Update(ctx, obj, opts...)
				},
			}
			c := newClient(&funcs, first.Obj(), second.Obj())
			rolledBack := counter(metrics.ReservationsRolledBack)

			a := NewAdmitter(NewQuotaReader(c, nil), c, c, c, clk, ttl, 10*time.Second, 0)
			checkError(t, tc.wantErr, a.Admit(context.Background(), request(t, web.Obj(), nil)))

			if diff := cmp.Diff(tc.wantFirst.Status, getQuota(t, c, "a-first").Status, statusOpts); diff != "" {
				t.Errorf("status of the first quota (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantSecond.Status, getQuota(t, c, "b-second").Status, statusOpts); diff != "" {
				t.Errorf("status of the second quota (-want +got):\n%s", diff)
			}
			if got := firstWrites.Load(); got != tc.wantFirstWrites {
				t.Errorf("writes of the first quota = %d, want %d", got, tc.wantFirstWrites)
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

	cases := map[string]struct {
		funcs   interceptor.Funcs
		wantErr *wantError
	}{
		"the quotas cannot be listed": {
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
		"a status cannot be written": {
			funcs: interceptor.Funcs{
				SubResourceUpdate: func(context.Context, client.Client, string, client.Object, ...client.SubResourceUpdateOption) error {
					return apierrors.NewServiceUnavailable("etcd is down")
				},
			},
			wantErr: &wantError{
				Code: http.StatusInternalServerError, Reason: metav1.StatusReasonInternalError,
				Messages: []string{"fail closed", "writing the status of quota team: etcd is down"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := newClient(&tc.funcs, team.Obj())
			before := getQuota(t, c, "team")

			checkError(t, tc.wantErr, newAdmitter(c).Admit(context.Background(), request(t, web.Obj(), nil)))

			after := getQuota(t, c, "team")
			if diff := cmp.Diff(before, after, statusOpts); diff != "" {
				t.Errorf("quota changed (-before +after):\n%s", diff)
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

// TestAdmitConcurrent admits 50 writes of 1 CPU each against 20 CPU, from two webhook replicas sharing one
// apiserver: exactly 20 fit, whatever the interleaving, and the quota's status accounts for exactly them.
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
			lists.Add(1)
			time.Sleep(20 * time.Millisecond)
			return c.List(ctx, l, opts...)
		},
	}
	c := newClient(&funcs, utiltesting.MakeQuota(ns, "team").Hard(list("cpu", fmt.Sprint(hardCPU))).Obj())
	admitters := make([]*Admitter, replicas)
	for i := range admitters {
		admitters[i] = newAdmitter(c)
	}
	batches, batched := histogram(t, metrics.AdmissionBatchSize)

	start := make(chan struct{})
	errs := make([]error, writes)
	var wg sync.WaitGroup
	for i := range writes {
		r := request(t, utiltesting.MakeBinding(ns, fmt.Sprintf("web-%d", i)).Requests(list("cpu", "1")).Cluster("member1", 1).Obj(), nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = admitters[i%replicas].Admit(context.Background(), r)
		}()
	}
	close(start)
	wg.Wait()

	admitted, exceeded := 0, 0
	for i, err := range errs {
		switch {
		case err == nil:
			admitted++
		case apierrors.ReasonForError(err) == ReasonQuotaExceeded && apierrors.IsForbidden(err):
			exceeded++
		default:
			t.Errorf("write %d: unexpected error %v", i, err)
		}
	}
	if diff := cmp.Diff([]int{hardCPU, writes - hardCPU}, []int{admitted, exceeded}); diff != "" {
		t.Errorf("[admitted, QuotaExceeded] (-want +got):\n%s", diff)
	}

	stored := getQuota(t, c, "team")
	reserved := stored.Status.Reserved[corev1.ResourceCPU]
	if reserved.Cmp(resource.MustParse(fmt.Sprint(hardCPU))) != 0 {
		t.Errorf("status.reserved[cpu] = %s, want %d", reserved.String(), hardCPU)
	}
	if got := len(stored.Status.Reservations); got != hardCPU {
		t.Errorf("%d reservations, want %d", got, hardCPU)
	}
	owners := map[types.UID]bool{}
	for _, r := range stored.Status.Reservations {
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
		validate  func(ctx context.Context, v *BindingValidator) error
		dryRun    bool
		wantErr   *wantError
		wantQuota *quotav1alpha1.KarmadaQuota
		// wantReads counts informer lists: one to learn the namespace has quotas, one for the batch that decides.
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
			var reads atomic.Int32
			funcs := interceptor.Funcs{
				List: func(ctx context.Context, c client.WithWatch, l client.ObjectList, opts ...client.ListOption) error {
					reads.Add(1)
					return c.List(ctx, l, opts...)
				},
			}
			c := newClient(&funcs, team.Obj())
			v := &BindingValidator{admitter: newAdmitter(c), quotas: NewQuotaReader(c, nil)}
			ctx := admission.NewContextWithRequest(context.Background(), admission.Request{
				AdmissionRequest: admissionv1.AdmissionRequest{DryRun: ptr.To(tc.dryRun)},
			})

			checkError(t, tc.wantErr, tc.validate(ctx, v))

			if diff := cmp.Diff(tc.wantQuota.Status, getQuota(t, c, "team").Status, statusOpts); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
			if got := reads.Load(); got != tc.wantReads {
				t.Errorf("quota reads = %d, want %d", got, tc.wantReads)
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
		quota *quotav1alpha1.KarmadaQuota
		// stored is the binding as the apiserver has it; nil when the test expects no read.
		stored    *workv1alpha2.ResourceBinding
		write     *workv1alpha2.ResourceBinding
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
			c := newClient(nil, tc.quota)
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
			if diff := cmp.Diff(tc.wantQuota.Status, getQuota(t, c, "team").Status, statusOpts); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
			if got := reads.Load(); got != tc.wantReads {
				t.Errorf("binding reads = %d, want %d", got, tc.wantReads)
			}
		})
	}
}

// TestAdmitDecidesOnItsOwnWrite: the informer lags behind the webhook's own status writes; the next batch decides
// on the object the last write returned, so back-to-back admissions in one namespace cost one status write each,
// with no read of the apiserver and no lost race.
func TestAdmitDecidesOnItsOwnWrite(t *testing.T) {
	team := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10"))
	apiserver := newClient(nil, team.Obj())
	// An informer frozen at the quota as it was at the start.
	informer := newClient(nil, getQuota(t, apiserver, "team"))
	var gets atomic.Int32
	reader := interceptor.NewClient(apiserver, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			gets.Add(1)
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
	}
	if diff := cmp.Diff(want.Obj().Status, getQuota(t, apiserver, "team").Status, statusOpts); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	if got := counter(metrics.StatusConflicts.WithLabelValues("webhook")) - conflicts; got != 0 {
		t.Errorf("%v status writes lost a race against the webhook's own writes", got)
	}
	if got := gets.Load(); got != 0 {
		t.Errorf("%d reads of the apiserver, want none", got)
	}

	// Another writer moves the quota on; the informer has not seen it. The write loses the race once, the quota is
	// read from the apiserver, and the admission lands on what the other writer wrote.
	stored := getQuota(t, apiserver, "team")
	stored.Status.Used = list("cpu", "2")
	if err := apiserver.Status().Update(context.Background(), stored); err != nil {
		t.Fatal(err)
	}
	rb := utiltesting.MakeBinding(ns, "api").Requests(list("cpu", "1")).Cluster("member1", 1).Obj()
	if err := a.Admit(context.Background(), request(t, rb, nil)); err != nil {
		t.Fatalf("Admit after another writer: %v", err)
	}
	// Status lists reservations sorted by binding name.
	want = team.Clone().Used(list("cpu", "2")).Reservation(rb, 1, list("cpu", "1"), wantExpiry)
	for _, web := range webs {
		want.Reservation(web, 1, list("cpu", "1"), wantExpiry)
	}
	if diff := cmp.Diff(want.Obj().Status, getQuota(t, apiserver, "team").Status, statusOpts); diff != "" {
		t.Errorf("status after another writer (-want +got):\n%s", diff)
	}
	if got := counter(metrics.StatusConflicts.WithLabelValues("webhook")) - conflicts; got != 1 {
		t.Errorf("status write conflicts = %v, want 1", got)
	}
	if got := gets.Load(); got != 1 {
		t.Errorf("%d reads of the apiserver, want 1 (after the lost race)", got)
	}
}

// TestAdmitFolds keeps a quota's list within the bound: the oldest reservations fold into one sum that still
// charges the quota, and a schema that would drop that sum refuses the write instead of losing the charge.
func TestAdmitFolds(t *testing.T) {
	team := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10"))
	admitAll := func(t *testing.T, a *Admitter, clk *clocktesting.FakePassiveClock, n int) []error {
		var errs []error
		for i := range n {
			clk.SetTime(now.Add(time.Duration(i) * time.Second))
			rb := utiltesting.MakeBinding(ns, fmt.Sprintf("web-%d", i)).Requests(list("cpu", "1")).Cluster("member1", 1).Obj()
			errs = append(errs, a.Admit(context.Background(), request(t, rb, nil)))
		}
		return errs
	}

	t.Run("past the bound", func(t *testing.T) {
		c := newClient(nil, team.Obj())
		clk := clocktesting.NewFakePassiveClock(now)
		a := NewAdmitter(NewQuotaReader(c, nil), c, c, c, clk, ttl, 10*time.Second, 2)
		for i, err := range admitAll(t, a, clk, 4) {
			if err != nil {
				t.Errorf("Admit %d: %v", i, err)
			}
		}
		owner := func(i int) *workv1alpha2.ResourceBinding {
			return utiltesting.MakeBinding(ns, fmt.Sprintf("web-%d", i)).Obj()
		}
		want := team.Clone().
			Reservation(owner(2), 1, list("cpu", "1"), wantExpiry.Add(2*time.Second)).
			Reservation(owner(3), 1, list("cpu", "1"), wantExpiry.Add(3*time.Second)).
			Folded(2, list("cpu", "2"), wantExpiry.Add(time.Second)).Obj()
		if diff := cmp.Diff(want.Status, getQuota(t, c, "team").Status, statusOpts); diff != "" {
			t.Errorf("status (-want +got):\n%s", diff)
		}
	})

	t.Run("a schema that drops the folded sum", func(t *testing.T) {
		c := newClient(&interceptor.Funcs{
			SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
				// An older CRD prunes the field it does not know.
				obj.(*quotav1alpha1.KarmadaQuota).Status.FoldedReservations = nil
				return c.SubResource(sub).Update(ctx, obj, opts...)
			},
		}, team.Obj())
		clk := clocktesting.NewFakePassiveClock(now)
		a := NewAdmitter(NewQuotaReader(c, nil), c, c, c, clk, ttl, 10*time.Second, 2)
		errs := admitAll(t, a, clk, 3)
		for i, err := range errs[:2] {
			if err != nil {
				t.Errorf("Admit %d within the bound: %v", i, err)
			}
		}
		checkError(t, &wantError{Code: http.StatusInternalServerError, Reason: metav1.StatusReasonInternalError,
			Messages: []string{"fail closed", "drops status.foldedReservations"}}, errs[2])
		if got := len(getQuota(t, c, "team").Status.Reservations); got != 2 {
			t.Errorf("%d reservations stored, want the 2 written before the refusal", got)
		}
	})
}

// TestBindingValidatorInformerNotSynced refuses at once, saying why, when the quota informer has not synced: a
// replica that may not list quotas would otherwise hold every call until the apiserver gives up on it.
func TestBindingValidatorInformerNotSynced(t *testing.T) {
	c := newClient(nil, utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "1")).Obj())
	notSynced := NewQuotaReader(c, func() bool { return false })
	v := &BindingValidator{admitter: NewAdmitter(notSynced, c, c, c, clocktesting.NewFakePassiveClock(now), ttl, 10*time.Second, 0), quotas: notSynced}
	old := utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")).Obj()
	placed := utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")).Cluster("member1", 1).Generation(2).Obj()
	_, err := v.ValidateUpdate(context.Background(), old, placed)
	checkError(t, &wantError{Code: http.StatusInternalServerError, Reason: metav1.StatusReasonInternalError,
		Messages: []string{"fail closed", "the KarmadaQuota informer has not synced"}}, err)
}
