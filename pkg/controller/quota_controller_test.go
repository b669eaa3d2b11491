package controller

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/metrics"
	"github.com/karmada-quota/karmada-quota/pkg/scheme"
	"github.com/karmada-quota/karmada-quota/pkg/util/lastwrite"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

const ns = "team-a"

// t0 is the fake clock's start. It is a whole second: status keeps times in seconds, so a stored time compares
// equal to the clock's.
var t0 = time.Date(2025, time.January, 1, 0, 0, 0, 0, time.UTC)

var quotaResource = quotav1alpha1.GroupVersion.WithResource("karmadaquotas").GroupResource()

var list = utiltesting.List

var statusOpts = cmp.Options{
	cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 }),
	cmpopts.EquateEmpty(),
}

func counter(c prometheus.Counter) float64 {
	return testutil.ToFloat64(c)
}

func conflict(name string) error {
	return apierrors.NewConflict(quotaResource, name, errors.New("the object has been modified; please apply your changes to the latest version and try again"))
}

// fixture is a QuotaReconciler wired by hand to a fake client, a fake clock and a fake recorder, as setup wires
// the real one to the manager.
type fixture struct {
	client     client.WithWatch
	clock      *clocktesting.FakeClock
	recorder   *record.FakeRecorder
	deleted    *tombstones
	state      *state
	requeuer   *requeuer
	reconciler *QuotaReconciler
	// statusWrites counts quota status writes, refused ones included.
	statusWrites atomic.Int32
}

// newFixture stores objs in a fake client. funcs intercept the client; a SubResourceUpdate among them replaces
// the status write after it was counted.
func newFixture(t *testing.T, funcs interceptor.Funcs, objs ...client.Object) *fixture {
	t.Helper()
	f := &fixture{clock: clocktesting.NewFakeClock(t0), recorder: record.NewFakeRecorder(100)}
	update := funcs.SubResourceUpdate
	funcs.SubResourceUpdate = func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
		f.statusWrites.Add(1)
		if update != nil {
			return update(ctx, c, sub, obj, opts...)
		}
		return c.SubResource(sub).Update(ctx, obj, opts...)
	}
	f.client = fake.NewClientBuilder().
		WithScheme(scheme.Scheme).
		WithStatusSubresource(&quotav1alpha1.KarmadaQuota{}, &workv1alpha2.ResourceBinding{}).
		WithObjects(objs...).
		WithInterceptorFuncs(funcs).
		Build()
	f.deleted = newTombstones(10*time.Minute, f.clock.Now)
	f.state = newState()
	f.requeuer = &requeuer{client: f.client, clock: f.clock, recorder: f.recorder, cooldown: time.Minute, last: map[types.UID]time.Time{}}
	f.reconciler = &QuotaReconciler{
		client:    f.client,
		apiReader: f.client,
		clock:     f.clock,
		recorder:  f.recorder,
		deleted:   f.deleted,
		state:     f.state,
		requeuer:  f.requeuer,
		written:   lastwrite.NewStore[*quotav1alpha1.KarmadaQuota](),
	}
	return f
}

func (f *fixture) reconcile(t *testing.T, name string) (ctrl.Result, error) {
	t.Helper()
	return f.reconciler.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}})
}

// mustReconcile reconciles and fails the test on an error.
func (f *fixture) mustReconcile(t *testing.T, name string) ctrl.Result {
	t.Helper()
	result, err := f.reconcile(t, name)
	if err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	return result
}

func (f *fixture) quota(t *testing.T, name string) *quotav1alpha1.KarmadaQuota {
	t.Helper()
	var q quotav1alpha1.KarmadaQuota
	if err := f.client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &q); err != nil {
		t.Fatalf("getting quota %s: %v", name, err)
	}
	return &q
}

func (f *fixture) binding(t *testing.T, name string) *workv1alpha2.ResourceBinding {
	t.Helper()
	var rb workv1alpha2.ResourceBinding
	if err := f.client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &rb); err != nil {
		t.Fatalf("getting binding %s: %v", name, err)
	}
	return &rb
}

// events drains the events recorded so far.
func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func ready(generation int64, at time.Time) metav1.Condition {
	return metav1.Condition{
		Type:               quotav1alpha1.ConditionReady,
		Status:             metav1.ConditionTrue,
		Reason:             ReasonCalculated,
		Message:            "Usage recounted from the namespace's ResourceBindings",
		ObservedGeneration: generation,
		LastTransitionTime: metav1.NewTime(at),
	}
}

func objects[T client.Object](objs ...T) []client.Object {
	out := make([]client.Object, len(objs))
	for i, o := range objs {
		out[i] = o
	}
	return out
}

// TestReconcileStatus recounts a quota from its namespace's bindings and renders every status field.
func TestReconcileStatus(t *testing.T) {
	team := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10", "memory", "20Gi", "pods", "20", "count/deployments.apps", "5"))
	team.ObjectMeta.Generation = 2
	bindings := []*workv1alpha2.ResourceBinding{
		utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "500m", "memory", "1Gi")).Replicas(3).
			Cluster("member1", 2).Cluster("member2", 1).Obj(),
		utiltesting.MakeBinding(ns, "api").Requests(list("cpu", "1", "memory", "256Mi")).Replicas(2).
			Cluster("member1", 2).Cluster("member2", 2).Obj(),
		// Another namespace's binding is not this quota's business.
		utiltesting.MakeBinding("team-b", "web").Requests(list("cpu", "50")).Cluster("member1", 1).Obj(),
	}
	f := newFixture(t, interceptor.Funcs{}, append(objects(bindings...), team.Obj())...)

	result := f.mustReconcile(t, "team")

	want := quotav1alpha1.KarmadaQuotaStatus{
		ObservedGeneration: 2,
		Hard:               list("cpu", "10", "memory", "20Gi", "pods", "20", "count/deployments.apps", "5"),
		Used:               list("cpu", "5500m", "memory", "4Gi", "pods", "7", "count/deployments.apps", "2"),
		Reserved:           list("cpu", "0", "memory", "0", "pods", "0", "count/deployments.apps", "0"),
		Clusters: []quotav1alpha1.ClusterUsage{
			{Name: "member1", Used: list("cpu", "3", "memory", "2560Mi", "pods", "4")},
			{Name: "member2", Used: list("cpu", "2500m", "memory", "1536Mi", "pods", "3")},
		},
		Summary:    "count/deployments.apps: 2/5, cpu: 5500m/10, memory: 4Gi/20Gi, pods: 7/20",
		Conditions: []metav1.Condition{ready(2, t0)},
	}
	if diff := cmp.Diff(want, f.quota(t, "team").Status, statusOpts); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(ctrl.Result{}, result); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	if got := f.statusWrites.Load(); got != 1 {
		t.Errorf("status writes = %d, want 1", got)
	}

	snapshots := f.state.Snapshots()
	if len(snapshots) != 1 {
		t.Fatalf("%d snapshots, want 1", len(snapshots))
	}
	s := snapshots[0]
	if s.Namespace != ns || s.Name != "team" || s.Used["cpu"] != 5.5 || s.Used["memory"] != 4<<30 || s.Clusters["member2"]["cpu"] != 2.5 {
		t.Errorf("snapshot = %+v, want team-a/team with used cpu 5.5, memory 4Gi in bytes, member2 cpu 2.5", s)
	}
}

// TestReconcileSettlesReservations drops a reservation once its write is observed, its binding is gone or it
// expired, and keeps it otherwise.
func TestReconcileSettlesReservations(t *testing.T) {
	// web is observed at generation 2.
	web := utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")).Cluster("member1", 1).Generation(2)
	// ghost is a binding whose admitted write the controller has not observed.
	ghost := utiltesting.MakeBinding(ns, "ghost")
	ghost2 := utiltesting.MakeBinding(ns, "ghost2")
	team := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10"))
	later := t0.Add(time.Minute)

	type reservation struct {
		rb         *workv1alpha2.ResourceBinding
		generation int64
		expires    time.Time
	}
	cases := map[string]struct {
		reservations []reservation
		deleted      []types.UID
		// wantKept are the reservations left, in status order.
		wantKept         []reservation
		wantRequeueAfter time.Duration
		wantSettled      float64
		wantExpired      float64
		wantEvents       []string
	}{
		"settled: the binding is observed at the reserved generation": {
			reservations: []reservation{{web.Obj(), 2, later}},
			wantSettled:  1,
		},
		"settled: the binding is observed at a later generation": {
			reservations: []reservation{{web.Obj(), 1, later}},
			wantSettled:  1,
		},
		"kept: the binding is observed at an earlier generation": {
			reservations:     []reservation{{web.Obj(), 3, later}},
			wantKept:         []reservation{{web.Obj(), 3, later}},
			wantRequeueAfter: time.Minute + time.Second,
		},
		"kept: the binding is not observed": {
			reservations:     []reservation{{ghost.Obj(), 1, later}},
			wantKept:         []reservation{{ghost.Obj(), 1, later}},
			wantRequeueAfter: time.Minute + time.Second,
		},
		"dropped: the binding was deleted": {
			reservations: []reservation{{ghost.Obj(), 1, later}},
			deleted:      []types.UID{ghost.Obj().UID},
			wantSettled:  1,
		},
		"dropped: another binding holds the name (its create lost to AlreadyExists)": {
			reservations: []reservation{{web.Clone().UID("uid-lost-create").Generation(1).Obj(), 1, later}},
			wantSettled:  1,
		},
		"dropped: expired without the write being observed": {
			reservations: []reservation{{ghost.Obj(), 1, t0.Add(-time.Second)}},
			wantExpired:  1,
			wantEvents:   []string{"Normal ReservationExpired 1 reservation(s) expired without their binding write being observed"},
		},
		"settled, not expired: an expired reservation whose write is observed": {
			reservations: []reservation{{web.Obj(), 2, t0.Add(-time.Second)}},
			wantSettled:  1,
		},
		"kept: it expires this very second": {
			reservations:     []reservation{{ghost.Obj(), 1, t0}},
			wantKept:         []reservation{{ghost.Obj(), 1, t0}},
			wantRequeueAfter: time.Second,
		},
		"the first expiry decides when to come back": {
			reservations: []reservation{
				{ghost.Obj(), 1, t0.Add(90 * time.Second)},
				{ghost2.Obj(), 1, t0.Add(30 * time.Second)},
				{web.Obj(), 2, t0.Add(10 * time.Second)},
			},
			wantKept: []reservation{
				{ghost.Obj(), 1, t0.Add(90 * time.Second)},
				{ghost2.Obj(), 1, t0.Add(30 * time.Second)},
			},
			wantRequeueAfter: 31 * time.Second,
			wantSettled:      1,
		},
		"each reservation on its own": {
			reservations: []reservation{
				{web.Obj(), 2, later},
				{ghost.Obj(), 1, t0.Add(-time.Minute)},
				{ghost2.Obj(), 1, later},
				{utiltesting.MakeBinding(ns, "gone").Obj(), 1, later},
			},
			deleted:          []types.UID{"uid-team-a-gone"},
			wantKept:         []reservation{{ghost2.Obj(), 1, later}},
			wantRequeueAfter: time.Minute + time.Second,
			wantSettled:      2,
			wantExpired:      1,
			wantEvents:       []string{"Normal ReservationExpired 1 reservation(s) expired without their binding write being observed"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			q := team.Clone()
			for _, r := range tc.reservations {
				q.Reservation(r.rb, r.generation, list("cpu", "1"), r.expires)
			}
			f := newFixture(t, interceptor.Funcs{}, web.Obj(), q.Obj())
			for _, uid := range tc.deleted {
				f.deleted.add(uid)
			}
			settled, expired := counter(metrics.ReservationsSettled), counter(metrics.ReservationsExpired)

			result := f.mustReconcile(t, "team")

			want := team.Clone()
			for _, r := range tc.wantKept {
				want.Reservation(r.rb, r.generation, list("cpu", "1"), r.expires)
			}
			if want.Status.Reserved == nil {
				want.Status.Reserved = list("cpu", "0")
			}
			got := f.quota(t, "team").Status
			if diff := cmp.Diff(want.Status.Reservations, got.Reservations, statusOpts); diff != "" {
				t.Errorf("reservations (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(want.Status.Reserved, got.Reserved, statusOpts); diff != "" {
				t.Errorf("reserved (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(list("cpu", "1"), got.Used, statusOpts); diff != "" {
				t.Errorf("used (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(ctrl.Result{RequeueAfter: tc.wantRequeueAfter}, result); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if got := counter(metrics.ReservationsSettled) - settled; got != tc.wantSettled {
				t.Errorf("ReservationsSettled grew by %v, want %v", got, tc.wantSettled)
			}
			if got := counter(metrics.ReservationsExpired) - expired; got != tc.wantExpired {
				t.Errorf("ReservationsExpired grew by %v, want %v", got, tc.wantExpired)
			}
			if diff := cmp.Diff(tc.wantEvents, f.events(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReconcileComesBackAtExpiry follows a reservation whose write never happens: kept until its expiry, dropped
// by the reconcile that RequeueAfter schedules.
func TestReconcileComesBackAtExpiry(t *testing.T) {
	ghost := utiltesting.MakeBinding(ns, "ghost")
	// The fake clock has a fraction of a second here, which the expiry (whole seconds) does not.
	start := t0.Add(400 * time.Millisecond)
	q := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10")).Reservation(ghost.Obj(), 1, list("cpu", "2"), t0.Add(time.Minute))
	f := newFixture(t, interceptor.Funcs{}, q.Obj())
	f.clock.SetTime(start)
	expired := counter(metrics.ReservationsExpired)

	result := f.mustReconcile(t, "team")
	if want := time.Minute - 400*time.Millisecond + time.Second; result.RequeueAfter != want {
		t.Fatalf("RequeueAfter = %v, want %v", result.RequeueAfter, want)
	}
	if got := len(f.quota(t, "team").Status.Reservations); got != 1 {
		t.Fatalf("%d reservations before the expiry, want 1", got)
	}

	f.clock.Step(result.RequeueAfter)
	result = f.mustReconcile(t, "team")

	if diff := cmp.Diff(ctrl.Result{}, result); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	got := f.quota(t, "team").Status
	if len(got.Reservations) != 0 {
		t.Errorf("reservations = %+v, want none", got.Reservations)
	}
	if diff := cmp.Diff(list("cpu", "0"), got.Reserved, statusOpts); diff != "" {
		t.Errorf("reserved (-want +got):\n%s", diff)
	}
	if got := counter(metrics.ReservationsExpired) - expired; got != 1 {
		t.Errorf("ReservationsExpired grew by %v, want 1", got)
	}
}

// TestReconcileWritesOnlyChanges writes the status once, and not again while nothing changes; a change to the
// spec or to the bindings is written.
func TestReconcileWritesOnlyChanges(t *testing.T) {
	web := utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")).Cluster("member1", 1)
	f := newFixture(t, interceptor.Funcs{}, web.Obj(), utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10")).Obj())

	f.mustReconcile(t, "team")
	rv := f.quota(t, "team").ResourceVersion
	f.clock.Step(time.Hour)
	f.mustReconcile(t, "team")
	f.mustReconcile(t, "team")

	if got := f.statusWrites.Load(); got != 1 {
		t.Errorf("status writes = %d, want 1", got)
	}
	if got := f.quota(t, "team").ResourceVersion; got != rv {
		t.Errorf("resourceVersion = %s, want %s: nothing changed", got, rv)
	}

	// A new limit (the fake client does not bump generations: the test does).
	q := f.quota(t, "team")
	q.Spec.Hard = list("cpu", "10", "pods", "5")
	q.Generation = 2
	if err := f.client.Update(context.Background(), q); err != nil {
		t.Fatalf("updating the quota: %v", err)
	}
	f.mustReconcile(t, "team")

	got := f.quota(t, "team").Status
	want := quotav1alpha1.KarmadaQuotaStatus{
		ObservedGeneration: 2,
		Hard:               list("cpu", "10", "pods", "5"),
		Used:               list("cpu", "1", "pods", "1"),
		Reserved:           list("cpu", "0", "pods", "0"),
		Clusters:           []quotav1alpha1.ClusterUsage{{Name: "member1", Used: list("cpu", "1", "pods", "1")}},
		Summary:            "cpu: 1/10, pods: 1/5",
		// Ready stayed True: its transition time is the first reconcile's.
		Conditions: []metav1.Condition{ready(2, t0)},
	}
	if diff := cmp.Diff(want, got, statusOpts); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	if got := f.statusWrites.Load(); got != 2 {
		t.Errorf("status writes = %d, want 2", got)
	}
}

// TestReconcileConflictRetried loses the first status write to the webhook, which reserved for a new binding in
// between: the same Reconcile reads again and writes, keeping the webhook's reservation.
func TestReconcileConflictRetried(t *testing.T) {
	web := utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")).Cluster("member1", 1)
	late := utiltesting.MakeBinding(ns, "late")
	team := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10"))
	expires := t0.Add(time.Minute)

	var calls atomic.Int32
	funcs := interceptor.Funcs{
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if calls.Add(1) == 1 {
				var stored quotav1alpha1.KarmadaQuota
				if err := c.Get(ctx, client.ObjectKeyFromObject(obj), &stored); err != nil {
					return err
				}
				stored.Status.Reservations = append(stored.Status.Reservations, quotav1alpha1.Reservation{
					ReservedBy: utiltesting.ReservationOwner(late.Obj()), Generation: 1,
					Reserved: list("cpu", "2"), ExpirationTime: metav1.NewTime(expires),
				})
				stored.Status.Reserved = list("cpu", "3")
				if err := c.Status().Update(ctx, &stored); err != nil {
					return err
				}
				return conflict(obj.GetName())
			}
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
	}
	// web's own reservation is settled: counted once, although two attempts settle it.
	f := newFixture(t, funcs, web.Obj(), team.Clone().Reservation(web.Obj(), 1, list("cpu", "1"), expires).Obj())
	conflicts := counter(metrics.StatusConflicts.WithLabelValues("controller"))
	settled := counter(metrics.ReservationsSettled)

	result, err := f.reconcile(t, "team")
	if err != nil {
		t.Fatalf("Reconcile: %v", err)
	}

	want := team.Clone().Reservation(late.Obj(), 1, list("cpu", "2"), expires).Obj().Status
	want.ObservedGeneration = 1
	want.Hard = list("cpu", "10")
	want.Used = list("cpu", "1")
	want.Clusters = []quotav1alpha1.ClusterUsage{{Name: "member1", Used: list("cpu", "1")}}
	want.Summary = "cpu: 1/10"
	want.Conditions = []metav1.Condition{ready(1, t0)}
	if diff := cmp.Diff(want, f.quota(t, "team").Status, statusOpts); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(ctrl.Result{RequeueAfter: time.Minute + time.Second}, result); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	if got := calls.Load(); got != 2 {
		t.Errorf("status writes = %d, want 2 (one lost, one retried)", got)
	}
	if got := counter(metrics.StatusConflicts.WithLabelValues("controller")) - conflicts; got != 1 {
		t.Errorf("StatusConflicts{writer=controller} grew by %v, want 1", got)
	}
	if got := counter(metrics.ReservationsSettled) - settled; got != 1 {
		t.Errorf("ReservationsSettled grew by %v, want 1", got)
	}
}

// TestReconcileWriteFails gives up after losing every attempt, and reports a write error.
func TestReconcileWriteFails(t *testing.T) {
	web := utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")).Cluster("member1", 1)
	team := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10"))

	cases := map[string]struct {
		err           error
		wantResult    ctrl.Result
		wantErr       string
		wantConflicts float64
		wantWrites    int32
	}{
		"every attempt conflicts: requeued, no error": {
			err:           conflict("team"),
			wantResult:    ctrl.Result{Requeue: true},
			wantConflicts: conflictRetries,
			wantWrites:    conflictRetries,
		},
		"the write fails: an error": {
			err:        apierrors.NewServiceUnavailable("etcd is down"),
			wantErr:    "writing status: etcd is down",
			wantWrites: 1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, interceptor.Funcs{
				SubResourceUpdate: func(context.Context, client.Client, string, client.Object, ...client.SubResourceUpdateOption) error {
					return tc.err
				},
			}, web.Obj(), team.Clone().Reservation(web.Obj(), 1, list("cpu", "1"), t0.Add(time.Minute)).Obj())
			conflicts := counter(metrics.StatusConflicts.WithLabelValues("controller"))
			settled := counter(metrics.ReservationsSettled)

			result, err := f.reconcile(t, "team")

			if diff := cmp.Diff(tc.wantResult, result); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if gotErr != tc.wantErr {
				t.Errorf("error = %q, want %q", gotErr, tc.wantErr)
			}
			if got := counter(metrics.StatusConflicts.WithLabelValues("controller")) - conflicts; got != tc.wantConflicts {
				t.Errorf("StatusConflicts{writer=controller} grew by %v, want %v", got, tc.wantConflicts)
			}
			if got := f.statusWrites.Load(); got != tc.wantWrites {
				t.Errorf("status writes = %d, want %d", got, tc.wantWrites)
			}
			if got := counter(metrics.ReservationsSettled) - settled; got != 0 {
				t.Errorf("ReservationsSettled grew by %v, want 0: nothing was written", got)
			}
			if got := f.state.Snapshots(); len(got) != 0 {
				t.Errorf("snapshots = %+v, want none: nothing was written", got)
			}
			if got := f.quota(t, "team").Status.Reservations; len(got) != 1 {
				t.Errorf("reservations = %+v, want the stored one", got)
			}
		})
	}
}

// TestReconcileReadFails reports what it cannot read.
func TestReconcileReadFails(t *testing.T) {
	team := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10"))
	cases := map[string]struct {
		funcs   interceptor.Funcs
		wantErr string
	}{
		"the quota cannot be read": {
			funcs: interceptor.Funcs{
				Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
					return errors.New("connection refused")
				},
			},
			wantErr: "connection refused",
		},
		"the bindings cannot be listed": {
			funcs: interceptor.Funcs{
				List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
					return errors.New("cache not started")
				},
			},
			wantErr: "listing bindings: cache not started",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, tc.funcs, team.Obj())
			_, err := f.reconcile(t, "team")
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("error = %v, want %q", err, tc.wantErr)
			}
			if got := f.statusWrites.Load(); got != 0 {
				t.Errorf("status writes = %d, want 0", got)
			}
		})
	}
}

// TestReconcileInvalidSpec marks a quota that slipped past validation Ready=False and writes nothing else.
func TestReconcileInvalidSpec(t *testing.T) {
	cases := map[string]struct {
		quota       *quotav1alpha1.KarmadaQuota
		wantMessage string
	}{
		"two keys for one resource": {
			quota:       utiltesting.MakeQuota(ns, "broken").Hard(list("cpu", "4", "requests.cpu", "8")).Obj(),
			wantMessage: `quota broken is invalid: spec.hard: "cpu" and "requests.cpu" are the same resource (requests.cpu)`,
		},
		"an object count under a scope, which a scoped quota would never count": {
			quota: utiltesting.MakeQuota(ns, "broken").Hard(list("cpu", "4", "count/deployments.apps", "8")).
				Scope(corev1.ScopeSelectorOpIn, "high").Obj(),
			wantMessage: "quota broken is invalid: spec.hard[count/deployments.apps]: a PriorityClass scope cannot count objects",
		},
		"a limit that cannot be enforced": {
			quota:       utiltesting.MakeQuota(ns, "broken").Hard(list("limits.cpu", "4")).Obj(),
			wantMessage: "quota broken is invalid: spec.hard[limits.cpu]: limits cannot be enforced",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			web := utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")).Cluster("member1", 1)
			f := newFixture(t, interceptor.Funcs{}, web.Obj(), tc.quota)

			result := f.mustReconcile(t, "broken")

			if diff := cmp.Diff(ctrl.Result{}, result); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			got := f.quota(t, "broken").Status
			if got.ObservedGeneration != 1 || len(got.Used) != 0 || len(got.Hard) != 0 || got.Summary != "" {
				t.Errorf("status = %+v, want only observedGeneration 1 and the Ready condition", got)
			}
			if len(got.Conditions) != 1 {
				t.Fatalf("conditions = %+v, want Ready", got.Conditions)
			}
			c := got.Conditions[0]
			if c.Type != quotav1alpha1.ConditionReady || c.Status != metav1.ConditionFalse || c.Reason != ReasonInvalidSpec ||
				c.ObservedGeneration != 1 || !strings.HasPrefix(c.Message, tc.wantMessage) {
				t.Errorf("condition = %+v, want Ready=False, reason %s, observedGeneration 1, message starting %q", c, ReasonInvalidSpec, tc.wantMessage)
			}
			events := f.events()
			if len(events) != 1 || !strings.HasPrefix(events[0], "Warning InvalidSpec "+tc.wantMessage) {
				t.Errorf("events = %q, want one Warning InvalidSpec %q", events, tc.wantMessage)
			}

			// Nothing changed: nothing written again.
			f.clock.Step(time.Minute)
			f.mustReconcile(t, "broken")
			if got := f.statusWrites.Load(); got != 1 {
				t.Errorf("status writes = %d, want 1", got)
			}
			if got := f.state.Snapshots(); len(got) != 0 {
				t.Errorf("snapshots = %+v, want none for an invalid quota", got)
			}
		})
	}
}

// TestReconcileDeletedQuota forgets a quota that is gone.
func TestReconcileDeletedQuota(t *testing.T) {
	f := newFixture(t, interceptor.Funcs{},
		utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10")).Obj(),
		utiltesting.MakeQuota(ns, "other").Hard(list("cpu", "10")).Obj())
	f.mustReconcile(t, "team")
	f.mustReconcile(t, "other")
	if got := len(f.state.Snapshots()); got != 2 {
		t.Fatalf("%d snapshots, want 2", got)
	}

	if err := f.client.Delete(context.Background(), f.quota(t, "team")); err != nil {
		t.Fatalf("deleting the quota: %v", err)
	}
	result := f.mustReconcile(t, "team")

	if diff := cmp.Diff(ctrl.Result{}, result); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	var names []string
	for _, s := range f.state.Snapshots() {
		names = append(names, s.Namespace+"/"+s.Name)
	}
	if diff := cmp.Diff([]string{ns + "/other"}, names); diff != "" {
		t.Errorf("snapshots (-want +got):\n%s", diff)
	}
	if f.state.drifted(types.NamespacedName{Namespace: ns, Name: "team"}, "", &quotav1alpha1.KarmadaQuotaStatus{Used: list("cpu", "99")}) {
		t.Error("drifted for a forgotten quota")
	}
}

// TestReconcileDrift repairs a status that another writer changed, and counts it; the webhook's reservations are
// not drift.
func TestReconcileDrift(t *testing.T) {
	web := utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")).Cluster("member1", 1)
	cases := map[string]struct {
		edit        func(*quotav1alpha1.KarmadaQuotaStatus)
		wantDrift   float64
		wantEvents  []string
		wantWritten bool
	}{
		"used edited by hand": {
			edit:        func(s *quotav1alpha1.KarmadaQuotaStatus) { s.Used = list("cpu", "0") },
			wantDrift:   1,
			wantEvents:  []string{"Warning DriftRepaired Status had been changed by another writer; recounted from the bindings"},
			wantWritten: true,
		},
		"a cluster removed by hand": {
			edit:        func(s *quotav1alpha1.KarmadaQuotaStatus) { s.Clusters = nil },
			wantDrift:   1,
			wantEvents:  []string{"Warning DriftRepaired Status had been changed by another writer; recounted from the bindings"},
			wantWritten: true,
		},
		"a reservation added by the webhook": {
			edit: func(s *quotav1alpha1.KarmadaQuotaStatus) {
				s.Reservations = []quotav1alpha1.Reservation{{
					ReservedBy: utiltesting.ReservationOwner(utiltesting.MakeBinding(ns, "late").Obj()), Generation: 1,
					Reserved: list("cpu", "1"), ExpirationTime: metav1.NewTime(t0.Add(time.Minute)),
				}}
				s.Reserved = list("cpu", "1")
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, interceptor.Funcs{}, web.Obj(), utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10")).Obj())
			f.mustReconcile(t, "team")
			want := f.quota(t, "team").Status
			_ = f.events()

			edited := f.quota(t, "team")
			tc.edit(&edited.Status)
			if err := f.client.Status().Update(context.Background(), edited); err != nil {
				t.Fatalf("editing the status: %v", err)
			}
			tc.edit(&want)
			writes := f.statusWrites.Load()
			drift := counter(metrics.DriftRepaired)

			f.mustReconcile(t, "team")

			if tc.wantWritten {
				want = *f.quota(t, "team").Status.DeepCopy()
				if diff := cmp.Diff(list("cpu", "1"), want.Used, statusOpts); diff != "" {
					t.Errorf("used after the repair (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff([]quotav1alpha1.ClusterUsage{{Name: "member1", Used: list("cpu", "1")}}, want.Clusters, statusOpts); diff != "" {
					t.Errorf("clusters after the repair (-want +got):\n%s", diff)
				}
			} else if diff := cmp.Diff(want, f.quota(t, "team").Status, statusOpts); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
			if got := f.statusWrites.Load()-writes == 1; got != tc.wantWritten {
				t.Errorf("written = %v, want %v", got, tc.wantWritten)
			}
			if got := counter(metrics.DriftRepaired) - drift; got != tc.wantDrift {
				t.Errorf("DriftRepaired grew by %v, want %v", got, tc.wantDrift)
			}
			if diff := cmp.Diff(tc.wantEvents, f.events(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReconcileRequeuesWhenUsageDrops requeues a waiting binding once a deletion frees what it needs, and not
// before.
func TestReconcileRequeuesWhenUsageDrops(t *testing.T) {
	big := utiltesting.MakeBinding(ns, "big").Requests(list("cpu", "1")).Replicas(2).Cluster("member1", 2)
	waiting := utiltesting.MakeBinding(ns, "waiting").Requests(list("cpu", "1")).Replicas(1).
		Scheduled(false, workv1alpha2.BindingReasonQuotaExceeded)
	f := newFixture(t, interceptor.Funcs{}, big.Obj(), waiting.Obj(), utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "2")).Obj())
	requeued := counter(metrics.BindingsRequeued)

	f.mustReconcile(t, "team")
	if got := f.binding(t, "waiting").Spec.RescheduleTriggeredAt; got != nil {
		t.Fatalf("rescheduleTriggeredAt = %v while the quota is full, want none", got)
	}

	f.clock.Step(10 * time.Second)
	if err := f.client.Delete(context.Background(), big.Obj()); err != nil {
		t.Fatalf("deleting a binding: %v", err)
	}
	f.deleted.add(big.Obj().UID)
	_ = f.events()
	f.mustReconcile(t, "team")

	got := f.binding(t, "waiting").Spec.RescheduleTriggeredAt
	if want := metav1.NewTime(t0.Add(10 * time.Second)); got == nil || !got.Equal(&want) {
		t.Errorf("rescheduleTriggeredAt = %v, want %v", got, want)
	}
	if got := counter(metrics.BindingsRequeued) - requeued; got != 1 {
		t.Errorf("BindingsRequeued grew by %v, want 1", got)
	}
	if diff := cmp.Diff([]string{"Normal BindingRequeued Requeued binding waiting: usage dropped and it now fits"}, f.events()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestReconcileRequeueFailureIsLogged does not fail the reconcile, whose status write landed, when a requeue
// cannot be written.
func TestReconcileRequeueFailureIsLogged(t *testing.T) {
	waiting := utiltesting.MakeBinding(ns, "waiting").Requests(list("cpu", "1")).Replicas(1).
		Scheduled(false, workv1alpha2.BindingReasonQuotaExceeded)
	f := newFixture(t, interceptor.Funcs{
		Patch: func(context.Context, client.WithWatch, client.Object, client.Patch, ...client.PatchOption) error {
			return apierrors.NewServiceUnavailable("etcd is down")
		},
	}, waiting.Obj(), utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "2")).Obj())

	if _, err := f.reconcile(t, "team"); err != nil {
		t.Errorf("Reconcile: %v, want no error", err)
	}
	if got := f.statusWrites.Load(); got != 1 {
		t.Errorf("status writes = %d, want 1", got)
	}
}

func TestSummary(t *testing.T) {
	cases := map[string]struct {
		hard, used corev1.ResourceList
		want       string
	}{
		"nothing limited": {want: ""},
		"sorted, in the author's names": {
			hard: list("requests.memory", "20Gi", "cpu", "10", "pods", "5"),
			used: list("requests.memory", "1Gi", "cpu", "1500m", "pods", "2"),
			want: "cpu: 1500m/10, pods: 2/5, requests.memory: 1Gi/20Gi",
		},
		"nothing used yet reads 0": {
			hard: list("cpu", "10"),
			want: "cpu: 0/10",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := summary(tc.hard, tc.used); got != tc.want {
				t.Errorf("summary = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestOptionsValidate(t *testing.T) {
	cases := map[string]struct {
		opts Options
		want []string
	}{
		"valid":               {opts: Options{ResyncPeriod: time.Minute, Workers: 1}},
		"a cooldown of zero":  {opts: Options{ResyncPeriod: time.Minute, Workers: 1, RequeueCooldown: 0}},
		"every error at once": {opts: Options{RequeueCooldown: -time.Second}, want: []string{"resync period must be positive", "workers must be positive", "requeue cooldown must not be negative"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := tc.opts.Validate()
			if (err != nil) != (len(tc.want) > 0) {
				t.Fatalf("Validate = %v, want errors %q", err, tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate = %v, want it to say %q", err, w)
				}
			}
		})
	}
}

// TestQuotasOf maps a binding event to every quota of the binding's namespace, and to nothing when they cannot be
// listed.
func TestQuotasOf(t *testing.T) {
	objs := []client.Object{
		utiltesting.MakeQuota(ns, "a").Obj(),
		utiltesting.MakeQuota(ns, "b").Obj(),
		utiltesting.MakeQuota("team-b", "c").Obj(),
	}
	f := newFixture(t, interceptor.Funcs{}, objs...)
	got := quotasOf(f.client)(context.Background(), utiltesting.MakeBinding(ns, "web").Obj())
	want := []ctrl.Request{
		{NamespacedName: types.NamespacedName{Namespace: ns, Name: "a"}},
		{NamespacedName: types.NamespacedName{Namespace: ns, Name: "b"}},
	}
	if diff := cmp.Diff(want, got, cmpopts.SortSlices(func(x, y ctrl.Request) bool { return x.Name < y.Name })); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}

	failing := newFixture(t, interceptor.Funcs{
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			return errors.New("connection refused")
		},
	}, objs...)
	if got := quotasOf(failing.client)(context.Background(), utiltesting.MakeBinding(ns, "web").Obj()); len(got) != 0 {
		t.Errorf("requests = %v, want none when the quotas cannot be listed", got)
	}
}

// TestResyncEvery enqueues every quota each period, and stops with its context.
func TestResyncEvery(t *testing.T) {
	f := newFixture(t, interceptor.Funcs{},
		utiltesting.MakeQuota(ns, "a").Obj(),
		utiltesting.MakeQuota("team-b", "b").Obj())
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan event.TypedGenericEvent[*quotav1alpha1.KarmadaQuota])
	done := make(chan error, 1)
	go func() { done <- resyncEvery(ctx, f.client, 10*time.Millisecond, out) }()

	// Two periods: each quota is sent twice.
	seen := map[string]int{}
	for range 4 {
		select {
		case e := <-out:
			seen[e.Object.Namespace+"/"+e.Object.Name]++
		case <-time.After(10 * time.Second):
			t.Fatal("no resync event")
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("resyncEvery = %v, want nil", err)
	}
	if diff := cmp.Diff(map[string]int{ns + "/a": 2, "team-b/b": 2}, seen); diff != "" {
		t.Errorf("resync events (-want +got):\n%s", diff)
	}
}
