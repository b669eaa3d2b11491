package controller

import (
	"context"
	"errors"
	"net/http"
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
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
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
	// ledgerWrites counts writes (creates, updates and patches) of ledger objects, refused ones included.
	ledgerWrites atomic.Int32
}

// newFixture stores objs in a fake client. funcs intercept the client; a SubResourceUpdate among them replaces
// the status write after it was counted, and a Create, Update or Patch among them a ledger's write after it was
// counted.
func newFixture(t *testing.T, funcs interceptor.Funcs, objs ...client.Object) *fixture {
	t.Helper()
	f := &fixture{clock: clocktesting.NewFakeClock(t0), recorder: record.NewFakeRecorder(100)}
	subResourceUpdate := funcs.SubResourceUpdate
	funcs.SubResourceUpdate = func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
		f.statusWrites.Add(1)
		if subResourceUpdate != nil {
			return subResourceUpdate(ctx, c, sub, obj, opts...)
		}
		return c.SubResource(sub).Update(ctx, obj, opts...)
	}
	create := funcs.Create
	funcs.Create = func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		if _, ok := obj.(*quotav1alpha1.KarmadaQuotaLedger); ok {
			f.ledgerWrites.Add(1)
		}
		if create != nil {
			return create(ctx, c, obj, opts...)
		}
		return c.Create(ctx, obj, opts...)
	}
	update := funcs.Update
	funcs.Update = func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
		if _, ok := obj.(*quotav1alpha1.KarmadaQuotaLedger); ok {
			f.ledgerWrites.Add(1)
		}
		if update != nil {
			return update(ctx, c, obj, opts...)
		}
		return c.Update(ctx, obj, opts...)
	}
	patch := funcs.Patch
	funcs.Patch = func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
		if _, ok := obj.(*quotav1alpha1.KarmadaQuotaLedger); ok {
			f.ledgerWrites.Add(1)
		}
		if patch != nil {
			return patch(ctx, c, obj, p, opts...)
		}
		return c.Patch(ctx, obj, p, opts...)
	}
	f.client = fake.NewClientBuilder().
		WithScheme(scheme.Scheme).
		WithStatusSubresource(&quotav1alpha1.KarmadaQuota{}, &quotav1alpha1.KarmadaBusinessQuota{}, &workv1alpha2.ResourceBinding{}).
		WithObjects(objs...).
		WithInterceptorFuncs(funcs).
		Build()
	f.deleted = newTombstones(10*time.Minute, f.clock.Now)
	f.state = newState()
	f.requeuer = &requeuer{client: f.client, clock: f.clock, recorder: f.recorder, cooldown: time.Minute, last: map[types.UID]time.Time{}}
	f.reconciler = &QuotaReconciler{
		client:          f.client,
		apiReader:       f.client,
		bindings:        clientBindings{client: f.client},
		clock:           f.clock,
		recorder:        f.recorder,
		deleted:         f.deleted,
		state:           f.state,
		requeuer:        f.requeuer,
		written:         lastwrite.NewStore[*quotav1alpha1.KarmadaQuota](),
		writtenBusiness: lastwrite.NewStore[*quotav1alpha1.KarmadaBusinessQuota](),
		writtenLedgers:  lastwrite.NewStore[*quotav1alpha1.KarmadaQuotaLedger](),
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

// ledger returns the quota's ledger object as stored, nil when there is none.
func (f *fixture) ledger(t *testing.T, name string) *quotav1alpha1.KarmadaQuotaLedger {
	t.Helper()
	var l quotav1alpha1.KarmadaQuotaLedger
	if err := f.client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &l); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		t.Fatalf("getting the ledger of quota %s: %v", name, err)
	}
	return &l
}

// mustLedger returns the quota's ledger object, failing the test when there is none.
func (f *fixture) mustLedger(t *testing.T, name string) *quotav1alpha1.KarmadaQuotaLedger {
	t.Helper()
	l := f.ledger(t, name)
	if l == nil {
		t.Fatalf("quota %s has no ledger", name)
	}
	return l
}

// checkLedgerOf checks that the quota's ledger is its own (a controller owner reference to the quota's UID), fenced
// at its generation, counts its reservations, and records the used of its status, as one recount wrote both.
func (f *fixture) checkLedgerOf(t *testing.T, name string) *quotav1alpha1.KarmadaQuotaLedger {
	t.Helper()
	q := f.quota(t, name)
	l := f.mustLedger(t, name)
	if owner := metav1.GetControllerOf(l); owner == nil || owner.UID != q.UID || owner.Kind != "KarmadaQuota" || owner.Name != q.Name {
		t.Errorf("ledger's controller = %+v, want quota %s (UID %s)", owner, q.Name, q.UID)
	}
	if l.QuotaGeneration != q.Generation {
		t.Errorf("ledger's quotaGeneration = %d, want the quota's generation %d", l.QuotaGeneration, q.Generation)
	}
	if int(l.ReservationCount) != len(l.Reservations) {
		t.Errorf("ledger's reservationCount = %d, want %d", l.ReservationCount, len(l.Reservations))
	}
	if l.Observed == nil {
		t.Errorf("ledger observed nothing, want the used of status %v", q.Status.Used)
	} else if diff := cmp.Diff(q.Status.Used, l.Observed.Used, statusOpts); diff != "" {
		t.Errorf("ledger's observed used differs from status used (-status +ledger):\n%s", diff)
	}
	if len(q.Status.Reservations) != 0 {
		t.Errorf("status lists reservations %+v: want them in the ledger only", q.Status.Reservations)
	}
	return l
}

func (f *fixture) binding(t *testing.T, name string) *workv1alpha2.ResourceBinding {
	t.Helper()
	var rb workv1alpha2.ResourceBinding
	if err := f.client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &rb); err != nil {
		t.Fatalf("getting binding %s: %v", name, err)
	}
	return &rb
}

// place sets what the binding places on its first cluster, as a scheduler's write would.
func (f *fixture) place(t *testing.T, name string, replicas int32) {
	t.Helper()
	rb := f.binding(t, name)
	rb.Spec.Clusters[0].Replicas = replicas
	if err := f.client.Update(context.Background(), rb); err != nil {
		t.Fatalf("placing binding %s: %v", name, err)
	}
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
	// No admission reserved on the quota: it gets no ledger, the webhook decides on its status until the first
	// admission creates one. The first recount writes once.
	if l := f.ledger(t, "team"); l != nil {
		t.Errorf("ledger = %+v, want none", l)
	}
	if got := f.ledgerWrites.Load(); got != 0 {
		t.Errorf("ledger writes = %d, want 0", got)
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
		// wantKept are the reservations left, in the ledger's order.
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
			stored := q.Obj()
			f := newFixture(t, interceptor.Funcs{}, web.Obj(), utiltesting.MoveToLedger(stored), stored)
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
			if diff := cmp.Diff(want.Status.Reservations, f.checkLedgerOf(t, "team").Reservations, statusOpts); diff != "" {
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
	q := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10")).Reservation(ghost.Obj(), 1, list("cpu", "2"), t0.Add(time.Minute)).Obj()
	f := newFixture(t, interceptor.Funcs{}, utiltesting.MoveToLedger(q), q)
	f.clock.SetTime(start)
	expired := counter(metrics.ReservationsExpired)

	result := f.mustReconcile(t, "team")
	if want := time.Minute - 400*time.Millisecond + time.Second; result.RequeueAfter != want {
		t.Fatalf("RequeueAfter = %v, want %v", result.RequeueAfter, want)
	}
	if got := len(f.checkLedgerOf(t, "team").Reservations); got != 1 {
		t.Fatalf("%d reservations before the expiry, want 1", got)
	}
	if diff := cmp.Diff(list("cpu", "2"), f.quota(t, "team").Status.Reserved, statusOpts); diff != "" {
		t.Errorf("reserved before the expiry (-want +got):\n%s", diff)
	}

	f.clock.Step(result.RequeueAfter)
	result = f.mustReconcile(t, "team")

	if diff := cmp.Diff(ctrl.Result{}, result); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	got := f.quota(t, "team").Status
	if l := f.checkLedgerOf(t, "team"); len(l.Reservations) != 0 {
		t.Errorf("reservations = %+v, want none", l.Reservations)
	}
	if diff := cmp.Diff(list("cpu", "0"), got.Reserved, statusOpts); diff != "" {
		t.Errorf("reserved (-want +got):\n%s", diff)
	}
	if got := counter(metrics.ReservationsExpired) - expired; got != 1 {
		t.Errorf("ReservationsExpired grew by %v, want 1", got)
	}
}

// TestReconcileMovesReservationsFromStatus upgrades a quota whose reservations an earlier release's webhook
// listed in its status: the recount moves them into the ledger, next to those this release's webhook wrote there,
// and clears them from status. No reservation is lost, and one listed in both is kept once.
func TestReconcileMovesReservationsFromStatus(t *testing.T) {
	// web is observed at generation 2; the ghosts' writes are not observed.
	web := utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")).Cluster("member1", 1).Generation(2)
	ghost := utiltesting.MakeBinding(ns, "ghost").Obj()
	ghost2 := utiltesting.MakeBinding(ns, "ghost2").Obj()
	ghost3 := utiltesting.MakeBinding(ns, "ghost3").Obj()
	team := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10"))
	later := t0.Add(time.Minute)
	reservation := func(rb *workv1alpha2.ResourceBinding, generation int64, cpu string) quotav1alpha1.Reservation {
		return quotav1alpha1.Reservation{
			ReservedBy: utiltesting.ReservationOwner(rb), Generation: generation,
			Reserved: list("cpu", cpu), ExpirationTime: metav1.NewTime(later),
		}
	}

	cases := map[string]struct {
		// inStatus are the reservations an earlier release's webhook listed in status, inLedger those this release's
		// webhook wrote into the ledger (nil: no ledger yet).
		inStatus *utiltesting.QuotaWrapper
		inLedger *utiltesting.QuotaWrapper
		wantKept []quotav1alpha1.Reservation
		// wantFolded is the folded sum an earlier release's webhook left in status: it stays there until it
		// expires (moved, a lost status write would move it twice), and counts in reserved.
		wantFolded   *quotav1alpha1.FoldedReservations
		wantReserved corev1.ResourceList
		wantSettled  float64
	}{
		"no ledger yet: the first recount makes it": {
			inStatus: team.Clone().
				Reservation(web.Obj(), 2, list("cpu", "1"), later).
				Reservation(ghost, 1, list("cpu", "1"), later).
				Reservation(ghost2, 1, list("cpu", "2"), later).
				Folded(3, list("cpu", "3"), later),
			wantKept:     []quotav1alpha1.Reservation{reservation(ghost, 1, "1"), reservation(ghost2, 1, "2")},
			wantFolded:   &quotav1alpha1.FoldedReservations{Count: 3, Reserved: list("cpu", "3"), ExpirationTime: metav1.NewTime(later)},
			wantReserved: list("cpu", "6"),
			wantSettled:  1,
		},
		"both webhooks wrote: the lists are merged": {
			inStatus: team.Clone().
				Reservation(web.Obj(), 2, list("cpu", "1"), later).
				Reservation(ghost, 1, list("cpu", "1"), later).
				// Moved into the ledger by an earlier recount whose status write has not landed.
				Reservation(ghost2, 1, list("cpu", "2"), later),
			inLedger: team.Clone().
				Reservation(ghost2, 1, list("cpu", "2"), later).
				Reservation(ghost3, 1, list("cpu", "4"), later),
			// The ledger's first, then those only the status listed.
			wantKept:     []quotav1alpha1.Reservation{reservation(ghost2, 1, "2"), reservation(ghost3, 1, "4"), reservation(ghost, 1, "1")},
			wantReserved: list("cpu", "7"),
			wantSettled:  1,
		},
		"the same write reserved by both: the larger amount is kept": {
			inStatus: team.Clone().Reservation(ghost, 1, list("cpu", "1"), later),
			inLedger: team.Clone().Reservation(ghost, 1, list("cpu", "3"), later),
			wantKept: []quotav1alpha1.Reservation{reservation(ghost, 1, "3")},
			// Counted once.
			wantReserved: list("cpu", "3"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			q := tc.inStatus.Obj()
			objs := []client.Object{web.Obj(), q}
			if tc.inLedger != nil {
				objs = append(objs, utiltesting.MoveToLedger(tc.inLedger.Obj()))
			}
			f := newFixture(t, interceptor.Funcs{}, objs...)
			settled := counter(metrics.ReservationsSettled)

			result := f.mustReconcile(t, "team")

			l := f.checkLedgerOf(t, "team")
			if diff := cmp.Diff(tc.wantKept, l.Reservations, statusOpts); diff != "" {
				t.Errorf("ledger's reservations (-want +got):\n%s", diff)
			}
			if l.FoldedReservations != nil {
				t.Errorf("ledger's folded reservations %+v, want none: status's stays in status", l.FoldedReservations)
			}
			if diff := cmp.Diff(tc.wantFolded, f.quota(t, "team").Status.FoldedReservations, statusOpts); diff != "" {
				t.Errorf("status's folded reservations (-want +got):\n%s", diff)
			}
			got := f.quota(t, "team").Status
			if diff := cmp.Diff(tc.wantReserved, got.Reserved, statusOpts); diff != "" {
				t.Errorf("reserved (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(list("cpu", "1"), got.Used, statusOpts); diff != "" {
				t.Errorf("used (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(ctrl.Result{RequeueAfter: time.Minute + time.Second}, result); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if got := counter(metrics.ReservationsSettled) - settled; got != tc.wantSettled {
				t.Errorf("ReservationsSettled grew by %v, want %v", got, tc.wantSettled)
			}
			if got := f.statusWrites.Load(); got != 1 {
				t.Errorf("status writes = %d, want 1", got)
			}
			if got := f.ledgerWrites.Load(); got != 1 {
				t.Errorf("ledger writes = %d, want 1", got)
			}

			// Moved once: the next recount finds nothing to change.
			f.mustReconcile(t, "team")
			if got := f.statusWrites.Load(); got != 1 {
				t.Errorf("status writes after a second recount = %d, want 1", got)
			}
			if got := f.ledgerWrites.Load(); got != 1 {
				t.Errorf("ledger writes after a second recount = %d, want 1", got)
			}
			if diff := cmp.Diff(tc.wantKept, f.mustLedger(t, "team").Reservations, statusOpts); diff != "" {
				t.Errorf("ledger's reservations after a second recount (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReconcileReplacesLedgerOfDeletedQuota: a quota deleted and created again under its name finds the ledger its
// predecessor left (the garbage collector has not removed it yet). The first recount of the new quota makes the
// ledger its own: the predecessor's reservations and fence are dropped, and its owner reference names the new quota.
func TestReconcileReplacesLedgerOfDeletedQuota(t *testing.T) {
	web := utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")).Cluster("member1", 1)
	ghost := utiltesting.MakeBinding(ns, "ghost")
	later := t0.Add(time.Minute)

	cases := map[string]struct {
		// cacheLags hides the old ledger from the cache for a first recount: the controller takes the quota for
		// one without a ledger and writes its status alone (the webhook, which reads the old ledger, takes it for
		// none too); the recount after the cache caught up replaces it.
		cacheLags bool
	}{
		"the cache has the old ledger": {},
		"the cache has not seen it":    {cacheLags: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			deleted := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10")).
				Reservation(ghost.Obj(), 1, list("cpu", "3"), later).
				Folded(2, list("cpu", "2"), later).Obj()
			deleted.UID = "uid-deleted-quota"
			deleted.Generation = 7
			left := utiltesting.MoveToLedger(deleted)
			left.Observed = &quotav1alpha1.LedgerObserved{Used: list("cpu", "9")}
			q := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10")).Obj()
			f := newFixture(t, interceptor.Funcs{}, web.Obj(), left, q)
			if tc.cacheLags {
				f.reconciler.client = interceptor.NewClient(f.client, interceptor.Funcs{
					Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
						if _, ok := obj.(*quotav1alpha1.KarmadaQuotaLedger); ok {
							return apierrors.NewNotFound(quotav1alpha1.GroupVersion.WithResource("karmadaquotaledgers").GroupResource(), key.Name)
						}
						return c.Get(ctx, key, obj, opts...)
					},
				})
			}
			leftUID := f.mustLedger(t, "team").UID
			conflicts := counter(metrics.StatusConflicts.WithLabelValues("controller"))
			settled, expired := counter(metrics.ReservationsSettled), counter(metrics.ReservationsExpired)

			result := f.mustReconcile(t, "team")
			if tc.cacheLags {
				if l := f.mustLedger(t, "team"); l.OwnerReferences[0].UID != deleted.UID || f.ledgerWrites.Load() != 0 {
					t.Errorf("ledger = %+v after %d writes, want the deleted quota's, unwritten", l, f.ledgerWrites.Load())
				}
				if diff := cmp.Diff(list("cpu", "1"), f.quota(t, "team").Status.Used, statusOpts); diff != "" {
					t.Errorf("used while the cache lags (-want +got):\n%s", diff)
				}
				f.reconciler.client = f.client
				result = f.mustReconcile(t, "team")
			}

			l := f.checkLedgerOf(t, "team")
			if len(l.OwnerReferences) != 1 || l.OwnerReferences[0].UID != q.UID {
				t.Errorf("ledger's owner references = %+v, want only the new quota's (UID %s)", l.OwnerReferences, q.UID)
			}
			if len(l.Reservations) != 0 || l.FoldedReservations != nil {
				t.Errorf("ledger holds reservations %+v, folded %+v: want the deleted quota's dropped", l.Reservations, l.FoldedReservations)
			}
			if l.QuotaGeneration != 1 {
				t.Errorf("ledger's quotaGeneration = %d, want the new quota's 1, not the deleted quota's fence", l.QuotaGeneration)
			}
			if diff := cmp.Diff(list("cpu", "1"), l.Observed.Used, statusOpts); diff != "" {
				t.Errorf("ledger's observed used (-want +got):\n%s", diff)
			}
			if l.UID != leftUID {
				t.Errorf("ledger's UID = %s, want %s: the object is updated in place, not deleted", l.UID, leftUID)
			}
			got := f.quota(t, "team").Status
			if diff := cmp.Diff(list("cpu", "0"), got.Reserved, statusOpts); diff != "" {
				t.Errorf("reserved (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(list("cpu", "1"), got.Used, statusOpts); diff != "" {
				t.Errorf("used (-want +got):\n%s", diff)
			}
			// Nothing of the deleted quota is held any more, so nothing to come back for.
			if diff := cmp.Diff(ctrl.Result{}, result); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if got := f.ledgerWrites.Load(); got != 1 {
				t.Errorf("ledger writes = %d, want 1", got)
			}
			if got := counter(metrics.StatusConflicts.WithLabelValues("controller")) - conflicts; got != 0 {
				t.Errorf("StatusConflicts{writer=controller} grew by %v, want 0", got)
			}
			// They were another quota's: not settled or expired by this one.
			if got := counter(metrics.ReservationsSettled) - settled; got != 0 {
				t.Errorf("ReservationsSettled grew by %v, want 0", got)
			}
			if got := counter(metrics.ReservationsExpired) - expired; got != 0 {
				t.Errorf("ReservationsExpired grew by %v, want 0", got)
			}
		})
	}
}

// TestReconcileWritesOnlyChanges writes the status and the ledger (the webhook's first admission created it) once,
// and not again while nothing changes; a change to the spec or to the bindings is written.
func TestReconcileWritesOnlyChanges(t *testing.T) {
	web := utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")).Cluster("member1", 1)
	team := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10")).Obj()
	f := newFixture(t, interceptor.Funcs{}, web.Obj(), team, utiltesting.MoveToLedger(team))

	f.mustReconcile(t, "team")
	rv := f.quota(t, "team").ResourceVersion
	ledgerRV := f.mustLedger(t, "team").ResourceVersion
	f.clock.Step(time.Hour)
	f.mustReconcile(t, "team")
	f.mustReconcile(t, "team")

	if got := f.statusWrites.Load(); got != 1 {
		t.Errorf("status writes = %d, want 1", got)
	}
	if got := f.ledgerWrites.Load(); got != 1 {
		t.Errorf("ledger writes = %d, want 1", got)
	}
	if got := f.quota(t, "team").ResourceVersion; got != rv {
		t.Errorf("resourceVersion = %s, want %s: nothing changed", got, rv)
	}
	if got := f.mustLedger(t, "team").ResourceVersion; got != ledgerRV {
		t.Errorf("ledger's resourceVersion = %s, want %s: nothing changed", got, ledgerRV)
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
	// The ledger observes the new limit's usage, fenced at the new generation.
	f.checkLedgerOf(t, "team")
	if got := f.ledgerWrites.Load(); got != 2 {
		t.Errorf("ledger writes = %d, want 2", got)
	}
}

// TestReconcileConflictRetried loses the first write of the ledger, or of the status, to a webhook, which reserved
// for a new binding in between: the same Reconcile reads again and writes, keeping the webhook's reservation.
func TestReconcileConflictRetried(t *testing.T) {
	web := utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")).Cluster("member1", 1)
	late := utiltesting.MakeBinding(ns, "late")
	team := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10"))
	expires := t0.Add(time.Minute)
	lateReservation := quotav1alpha1.Reservation{
		ReservedBy: utiltesting.ReservationOwner(late.Obj()), Generation: 1,
		Reserved: list("cpu", "2"), ExpirationTime: metav1.NewTime(expires),
	}
	// web's own reservation is settled: counted once, although two attempts settle it.
	withWeb := func() *quotav1alpha1.KarmadaQuota {
		return team.Clone().Reservation(web.Obj(), 1, list("cpu", "1"), expires).Obj()
	}
	inLedger := func() []client.Object {
		q := withWeb()
		return []client.Object{utiltesting.MoveToLedger(q), q}
	}
	// pending's write is still in flight: its reservation stays.
	pending := utiltesting.MakeBinding(ns, "pending")
	pendingReservation := quotav1alpha1.Reservation{
		ReservedBy: utiltesting.ReservationOwner(pending.Obj()), Generation: 1,
		Reserved: list("cpu", "1"), ExpirationTime: metav1.NewTime(expires),
	}

	cases := map[string]struct {
		objs []client.Object
		// funcs lose the first write they intercept, and count the writes they intercept in calls.
		funcs func(calls *atomic.Int32) interceptor.Funcs
		// wantCalls counts the writes funcs intercept; wantLedgerWrites and wantStatusWrites every write, the lost
		// one included; wantConflicts the writes lost (1 when unset).
		wantCalls, wantLedgerWrites, wantStatusWrites int32
		wantConflicts                                 *int
		// wantReserved and wantReservations are what is reserved after the recount; late's reservation when nil.
		wantReserved     corev1.ResourceList
		wantReservations []quotav1alpha1.Reservation
	}{
		// The settle is a patch the apiserver applies to the ledger as it is then (quotaio.SettleLedger): it does
		// not lose to the webhook's reservation, and keeps it. Its reservationCount is corrected by a second write.
		"the webhook reserves between the read and the settle": {
			objs: inLedger(),
			funcs: func(calls *atomic.Int32) interceptor.Funcs {
				return interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
					if _, ok := obj.(*quotav1alpha1.KarmadaQuotaLedger); ok && calls.Add(1) == 1 {
						if err := reserveLate(ctx, c, obj, func(l *quotav1alpha1.KarmadaQuotaLedger) {
							l.Reservations = append(l.Reservations, lateReservation)
						}); err != nil {
							return err
						}
					}
					return c.Patch(ctx, obj, patch, opts...)
				}}
			},
			wantCalls: 1, wantLedgerWrites: 2, wantStatusWrites: 1, wantConflicts: ptr.To(0),
			// The status is this recount's, which did not see late's reservation: as if the webhook had written
			// right after the settle. Late's binding event recounts it, or its expiry (the result).
			wantReserved: list("cpu", "0"), wantReservations: []quotav1alpha1.Reservation{lateReservation},
		},
		// The webhook released web's reservation and reserved it again (a new expiry) between the read and the
		// settle: the patch's test of what it removes fails, as the apiserver answers it (422), the write of the
		// whole ledger by its resourceVersion loses, and the retry reads again.
		"the settle patch is refused": {
			objs: inLedger(),
			funcs: func(calls *atomic.Int32) interceptor.Funcs {
				return interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
					if _, ok := obj.(*quotav1alpha1.KarmadaQuotaLedger); ok && calls.Add(1) == 1 {
						if err := reserveLate(ctx, c, obj, func(l *quotav1alpha1.KarmadaQuotaLedger) {
							l.Reservations[0].ExpirationTime = metav1.NewTime(expires.Add(time.Second))
							l.Reservations = append(l.Reservations, lateReservation)
						}); err != nil {
							return err
						}
						if err := c.Patch(ctx, obj, patch, opts...); err != nil {
							return apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false)
						}
						return errors.New("the patch applied over a changed reservation")
					}
					return c.Patch(ctx, obj, patch, opts...)
				}}
			},
			// The refused patch, the lost whole write, the retry's patch.
			wantCalls: 2, wantLedgerWrites: 3, wantStatusWrites: 1,
		},
		// During an upgrade: web's and pending's reservations are in status (an earlier release's webhook), the
		// controller makes a ledger to hold pending's, and this release's webhook makes the first ledger.
		"the ledger's create loses to the webhook's": {
			objs: []client.Object{team.Clone().Reservation(web.Obj(), 1, list("cpu", "1"), expires).
				Reservation(pending.Obj(), 1, list("cpu", "1"), expires).Obj()},
			funcs: func(calls *atomic.Int32) interceptor.Funcs {
				return interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
					if ledger, ok := obj.(*quotav1alpha1.KarmadaQuotaLedger); ok && calls.Add(1) == 1 {
						webhooks := &quotav1alpha1.KarmadaQuotaLedger{
							ObjectMeta: metav1.ObjectMeta{Namespace: ledger.Namespace, Name: ledger.Name, OwnerReferences: ledger.OwnerReferences},
							LedgerState: quotav1alpha1.LedgerState{
								QuotaGeneration:  1,
								Reservations:     []quotav1alpha1.Reservation{lateReservation},
								ReservationCount: 1,
							},
						}
						if err := c.Create(ctx, webhooks); err != nil {
							return err
						}
					}
					return c.Create(ctx, obj, opts...)
				}}
			},
			// The create lost; the retry updates the webhook's ledger.
			wantCalls: 1, wantLedgerWrites: 2, wantStatusWrites: 1,
			wantReserved: list("cpu", "3"), wantReservations: []quotav1alpha1.Reservation{lateReservation, pendingReservation},
		},
		"the status write loses to an earlier release's webhook": {
			objs: inLedger(),
			funcs: func(calls *atomic.Int32) interceptor.Funcs {
				return interceptor.Funcs{SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
					if calls.Add(1) == 1 {
						var stored quotav1alpha1.KarmadaQuota
						if err := c.Get(ctx, client.ObjectKeyFromObject(obj), &stored); err != nil {
							return err
						}
						stored.Status.Reservations = append(stored.Status.Reservations, lateReservation)
						stored.Status.Reserved = list("cpu", "3")
						if err := c.Status().Update(ctx, &stored); err != nil {
							return err
						}
					}
					return c.SubResource(sub).Update(ctx, obj, opts...)
				}}
			},
			// The first attempt's ledger write landed (web settled); the retry moves late's reservation into it.
			wantCalls: 2, wantLedgerWrites: 2, wantStatusWrites: 2,
		},
	}
	for name, tc := range cases {
		if tc.wantReserved == nil {
			tc.wantReserved, tc.wantReservations = list("cpu", "2"), []quotav1alpha1.Reservation{lateReservation}
		}
		t.Run(name, func(t *testing.T) {
			var calls atomic.Int32
			f := newFixture(t, tc.funcs(&calls), append([]client.Object{web.Obj()}, tc.objs...)...)
			conflicts := counter(metrics.StatusConflicts.WithLabelValues("controller"))
			settled := counter(metrics.ReservationsSettled)

			result, err := f.reconcile(t, "team")
			if err != nil {
				t.Fatalf("Reconcile: %v", err)
			}

			want := quotav1alpha1.KarmadaQuotaStatus{
				ObservedGeneration: 1,
				Hard:               list("cpu", "10"),
				Used:               list("cpu", "1"),
				Reserved:           tc.wantReserved,
				Clusters:           []quotav1alpha1.ClusterUsage{{Name: "member1", Used: list("cpu", "1")}},
				Summary:            "cpu: 1/10",
				Conditions:         []metav1.Condition{ready(1, t0)},
			}
			if diff := cmp.Diff(want, f.quota(t, "team").Status, statusOpts); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantReservations, f.checkLedgerOf(t, "team").Reservations, statusOpts); diff != "" {
				t.Errorf("ledger's reservations (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(ctrl.Result{RequeueAfter: time.Minute + time.Second}, result); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if got := calls.Load(); got != tc.wantCalls {
				t.Errorf("intercepted writes = %d, want %d (one lost, then the retry's)", got, tc.wantCalls)
			}
			if got := f.ledgerWrites.Load(); got != tc.wantLedgerWrites {
				t.Errorf("ledger writes = %d, want %d", got, tc.wantLedgerWrites)
			}
			if got := f.statusWrites.Load(); got != tc.wantStatusWrites {
				t.Errorf("status writes = %d, want %d", got, tc.wantStatusWrites)
			}
			wantConflicts := 1
			if tc.wantConflicts != nil {
				wantConflicts = *tc.wantConflicts
			}
			if got := counter(metrics.StatusConflicts.WithLabelValues("controller")) - conflicts; got != float64(wantConflicts) {
				t.Errorf("StatusConflicts{writer=controller} grew by %v, want %d", got, wantConflicts)
			}
			if got := counter(metrics.ReservationsSettled) - settled; got != 1 {
				t.Errorf("ReservationsSettled grew by %v, want 1", got)
			}
		})
	}
}

// reserveLate changes the stored ledger of obj as the webhook would between the controller's read and its write.
func reserveLate(ctx context.Context, c client.WithWatch, obj client.Object, change func(*quotav1alpha1.KarmadaQuotaLedger)) error {
	var stored quotav1alpha1.KarmadaQuotaLedger
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), &stored); err != nil {
		return err
	}
	change(&stored)
	stored.ReservationCount = int32(len(stored.Reservations))
	return c.Update(ctx, &stored)
}

// TestReconcileWriteFails gives up after losing every attempt, and reports a write error, whether the ledger's
// write (the first) or the status write fails.
func TestReconcileWriteFails(t *testing.T) {
	web := utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")).Cluster("member1", 1)
	team := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10"))

	cases := map[string]struct {
		// ledger fails the ledger's writes; otherwise the status writes fail.
		ledger        bool
		err           error
		wantResult    ctrl.Result
		wantErr       string
		wantConflicts float64
		wantLedger    int32
		wantStatus    int32
	}{
		"every ledger write conflicts: requeued, no error": {
			ledger:        true,
			err:           conflict("team"),
			wantResult:    ctrl.Result{Requeue: true},
			wantConflicts: conflictRetries,
			wantLedger:    conflictRetries,
		},
		"the ledger write fails: an error": {
			ledger:     true,
			err:        apierrors.NewServiceUnavailable("etcd is down"),
			wantErr:    "writing the ledger: etcd is down",
			wantLedger: 1,
		},
		// The ledger is written by the first attempt; the retries find it as they would write it.
		"every status write conflicts: requeued, no error": {
			err:           conflict("team"),
			wantResult:    ctrl.Result{Requeue: true},
			wantConflicts: conflictRetries,
			wantLedger:    1,
			wantStatus:    conflictRetries,
		},
		"the status write fails: an error": {
			err:        apierrors.NewServiceUnavailable("etcd is down"),
			wantErr:    "writing status: etcd is down",
			wantLedger: 1,
			wantStatus: 1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			funcs := interceptor.Funcs{
				SubResourceUpdate: func(context.Context, client.Client, string, client.Object, ...client.SubResourceUpdateOption) error {
					return tc.err
				},
			}
			if tc.ledger {
				// A settle is a patch (quotaio.SettleLedger); other ledger writes are updates.
				funcs = interceptor.Funcs{
					Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
						if _, ok := obj.(*quotav1alpha1.KarmadaQuotaLedger); ok {
							return tc.err
						}
						return c.Update(ctx, obj, opts...)
					},
					Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
						if _, ok := obj.(*quotav1alpha1.KarmadaQuotaLedger); ok {
							return tc.err
						}
						return c.Patch(ctx, obj, patch, opts...)
					},
				}
			}
			q := team.Clone().Reservation(web.Obj(), 1, list("cpu", "1"), t0.Add(time.Minute)).Obj()
			f := newFixture(t, funcs, web.Obj(), utiltesting.MoveToLedger(q), q)
			before := f.quota(t, "team").Status
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
			if got := f.ledgerWrites.Load(); got != tc.wantLedger {
				t.Errorf("ledger writes = %d, want %d", got, tc.wantLedger)
			}
			if got := f.statusWrites.Load(); got != tc.wantStatus {
				t.Errorf("status writes = %d, want %d", got, tc.wantStatus)
			}
			// Settled when the ledger write that settles lands, once, however the status write fares.
			wantSettled := 1.0
			if tc.ledger {
				wantSettled = 0
			}
			if got := counter(metrics.ReservationsSettled) - settled; got != wantSettled {
				t.Errorf("ReservationsSettled grew by %v, want %v", got, wantSettled)
			}
			if got := f.state.Snapshots(); len(got) != 0 {
				t.Errorf("snapshots = %+v, want none: no status write landed", got)
			}
			if diff := cmp.Diff(before, f.quota(t, "team").Status, statusOpts); diff != "" {
				t.Errorf("status changed, although no write of it landed (-before +after):\n%s", diff)
			}
			got := f.mustLedger(t, "team").Reservations
			if tc.ledger && len(got) != 1 {
				t.Errorf("reservations = %+v, want the stored one", got)
			}
			if !tc.ledger && len(got) != 0 {
				t.Errorf("reservations = %+v, want none: the ledger's write landed, and web's write is observed", got)
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
		"the ledger cannot be read": {
			funcs: interceptor.Funcs{
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					if _, ok := obj.(*quotav1alpha1.KarmadaQuotaLedger); ok {
						return errors.New("connection refused")
					}
					return c.Get(ctx, key, obj, opts...)
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
			if got := f.ledgerWrites.Load(); got != 0 {
				t.Errorf("ledger writes = %d, want 0", got)
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
			if got := f.ledgerWrites.Load(); got != 0 {
				t.Errorf("ledger writes = %d, want 0: nothing is decided on an invalid quota", got)
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

// TestReconcileDrift repairs a status that another writer changed, and counts it; the webhook's reservations,
// whether in the ledger or (an earlier release's webhook) in status, are not drift.
func TestReconcileDrift(t *testing.T) {
	web := utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")).Cluster("member1", 1)
	lateReservation := quotav1alpha1.Reservation{
		ReservedBy: utiltesting.ReservationOwner(utiltesting.MakeBinding(ns, "late").Obj()), Generation: 1,
		Reserved: list("cpu", "1"), ExpirationTime: metav1.NewTime(t0.Add(time.Minute)),
	}
	driftEvent := []string{"Warning DriftRepaired Status had been changed by another writer; recounted from the bindings"}
	cases := map[string]struct {
		editStatus func(*quotav1alpha1.KarmadaQuotaStatus)
		editLedger func(*quotav1alpha1.KarmadaQuotaLedger)
		wantDrift  float64
		wantEvents []string
		// wantReserved is status.reserved after the reconcile; nil: as before the edit.
		wantReserved     corev1.ResourceList
		wantReservations []quotav1alpha1.Reservation
		wantStatusWrites int32
		wantLedgerWrites int32
	}{
		"used edited by hand": {
			editStatus:       func(s *quotav1alpha1.KarmadaQuotaStatus) { s.Used = list("cpu", "0") },
			wantDrift:        1,
			wantEvents:       driftEvent,
			wantStatusWrites: 1,
		},
		"a cluster removed by hand": {
			editStatus:       func(s *quotav1alpha1.KarmadaQuotaStatus) { s.Clusters = nil },
			wantDrift:        1,
			wantEvents:       driftEvent,
			wantStatusWrites: 1,
		},
		// What the webhook decides on is repaired too; the quota's status, which was not changed, is not written.
		"the ledger's observed used edited by hand": {
			editLedger:       func(l *quotav1alpha1.KarmadaQuotaLedger) { l.Observed.Used = list("cpu", "0") },
			wantLedgerWrites: 1,
		},
		"a reservation added by the webhook": {
			editLedger: func(l *quotav1alpha1.KarmadaQuotaLedger) {
				l.Reservations = []quotav1alpha1.Reservation{lateReservation}
				l.ReservationCount = 1
			},
			// Status shows the sum; the ledger, which holds the reservation, is left as it is.
			wantReserved:     list("cpu", "1"),
			wantReservations: []quotav1alpha1.Reservation{lateReservation},
			wantStatusWrites: 1,
		},
		"a reservation added by an earlier release's webhook": {
			editStatus: func(s *quotav1alpha1.KarmadaQuotaStatus) {
				s.Reservations = []quotav1alpha1.Reservation{lateReservation}
				s.Reserved = list("cpu", "1")
			},
			// Moved into the ledger, and cleared from status.
			wantReserved:     list("cpu", "1"),
			wantReservations: []quotav1alpha1.Reservation{lateReservation},
			wantStatusWrites: 1,
			wantLedgerWrites: 1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			// The quota has a ledger: an admission created it.
			team := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10")).Obj()
			f := newFixture(t, interceptor.Funcs{}, web.Obj(), team, utiltesting.MoveToLedger(team))
			f.mustReconcile(t, "team")
			want := f.quota(t, "team").Status
			if tc.wantReserved != nil {
				want.Reserved = tc.wantReserved
			}
			_ = f.events()

			if tc.editStatus != nil {
				edited := f.quota(t, "team")
				tc.editStatus(&edited.Status)
				if err := f.client.Status().Update(context.Background(), edited); err != nil {
					t.Fatalf("editing the status: %v", err)
				}
			}
			if tc.editLedger != nil {
				edited := f.mustLedger(t, "team")
				tc.editLedger(edited)
				if err := f.client.Update(context.Background(), edited); err != nil {
					t.Fatalf("editing the ledger: %v", err)
				}
			}
			statusWrites, ledgerWrites := f.statusWrites.Load(), f.ledgerWrites.Load()
			drift := counter(metrics.DriftRepaired)

			f.mustReconcile(t, "team")

			if diff := cmp.Diff(want, f.quota(t, "team").Status, statusOpts); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantReservations, f.checkLedgerOf(t, "team").Reservations, statusOpts); diff != "" {
				t.Errorf("ledger's reservations (-want +got):\n%s", diff)
			}
			if got := f.statusWrites.Load() - statusWrites; got != tc.wantStatusWrites {
				t.Errorf("status writes = %d, want %d", got, tc.wantStatusWrites)
			}
			if got := f.ledgerWrites.Load() - ledgerWrites; got != tc.wantLedgerWrites {
				t.Errorf("ledger writes = %d, want %d", got, tc.wantLedgerWrites)
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

// TestReconcileKeepsStatusFoldedOnce: a folded sum an earlier release's webhook left in status stays there, counted
// once, when the status write after the ledger's loses its race and the recount runs again (moving it into the
// ledger would have counted it once more with every lost status write).
func TestReconcileKeepsStatusFoldedOnce(t *testing.T) {
	q := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10")).Folded(3, list("cpu", "3"), t0.Add(time.Minute)).Obj()
	var calls atomic.Int32
	f := newFixture(t, interceptor.Funcs{SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
		if calls.Add(1) == 1 {
			return conflict(obj.GetName())
		}
		return c.SubResource(sub).Update(ctx, obj, opts...)
	}}, q)
	f.mustReconcile(t, "team")
	f.mustReconcile(t, "team")

	// Nothing else is reserved: the quota needs no ledger.
	if l := f.ledger(t, "team"); l != nil {
		t.Errorf("ledger %+v, want none: the status's folded sum stays in status", l)
	}
	status := f.quota(t, "team").Status
	if status.FoldedReservations == nil || status.FoldedReservations.Count != 3 {
		t.Errorf("status folded %+v, want the 3 left there", status.FoldedReservations)
	}
	if diff := cmp.Diff(list("cpu", "3"), status.Reserved, statusOpts); diff != "" {
		t.Errorf("reserved (-want +got):\n%s", diff)
	}
}

// TestReconcileLedgerDeletedByHand: a ledger deleted by hand is not written again from the controller's memory of
// its last write: the quota goes on without one, its status (written at once) what the webhook decides on, until an
// admission creates a ledger again.
func TestReconcileLedgerDeletedByHand(t *testing.T) {
	web := utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")).Cluster("member1", 1)
	team := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10")).Obj()
	f := newFixture(t, interceptor.Funcs{}, web.Obj(), team, utiltesting.MoveToLedger(team))
	f.reconciler.statusPacer = newStatusPacer(5*time.Second, f.clock.Now)
	f.mustReconcile(t, "team")
	if err := f.client.Delete(context.Background(), f.mustLedger(t, "team")); err != nil {
		t.Fatal(err)
	}
	f.mustReconcile(t, "team")
	if l := f.ledger(t, "team"); l != nil {
		t.Errorf("ledger written again: %+v", l)
	}

	// And recounts go on writing the status at once.
	f.clock.Step(time.Second)
	f.place(t, "web", 2)
	f.mustReconcile(t, "team")
	if diff := cmp.Diff(list("cpu", "2"), f.quota(t, "team").Status.Used, statusOpts); diff != "" {
		t.Errorf("status used after a binding change (-want +got):\n%s", diff)
	}
	if l := f.ledger(t, "team"); l != nil {
		t.Errorf("ledger written again: %+v", l)
	}
}

// TestReconcileReadsAFencedSpec: a ledger fenced at a newer generation than the cache's quota (the quota webhook
// raised it as a new spec was stored) makes the recount read the quota from the apiserver, so that status and
// ledger follow the new spec, not the cache's.
func TestReconcileReadsAFencedSpec(t *testing.T) {
	web := utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")).Cluster("member1", 1)
	team := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10")).Obj()
	f := newFixture(t, interceptor.Funcs{}, web.Obj(), team, utiltesting.MoveToLedger(team))
	f.mustReconcile(t, "team")
	stale := f.quota(t, "team")

	// The new spec is stored, the ledger fenced at it; the cache still has the old spec.
	q := f.quota(t, "team")
	q.Spec.Hard = list("cpu", "1", "pods", "5")
	q.Generation = stale.Generation + 1 // as the apiserver bumps it for a new spec
	if err := f.client.Update(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	q = f.quota(t, "team")
	if q.Generation != stale.Generation+1 {
		t.Fatalf("generation %d stored, want %d", q.Generation, stale.Generation+1)
	}
	l := f.mustLedger(t, "team")
	l.QuotaGeneration = q.Generation
	if err := f.client.Update(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	apiReads := 0
	f.reconciler.client = interceptor.NewClient(f.client, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if o, ok := obj.(*quotav1alpha1.KarmadaQuota); ok {
				stale.DeepCopyInto(o)
				return nil
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
	f.reconciler.apiReader = interceptor.NewClient(f.client, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			apiReads++
			return c.Get(ctx, key, obj, opts...)
		},
	})

	f.mustReconcile(t, "team")
	got := f.quota(t, "team")
	if got.Status.ObservedGeneration != q.Generation {
		t.Errorf("observedGeneration = %d, want %d: the recount of the fenced spec", got.Status.ObservedGeneration, q.Generation)
	}
	if diff := cmp.Diff(list("cpu", "1", "pods", "5"), got.Status.Hard, statusOpts); diff != "" {
		t.Errorf("status.hard (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(list("cpu", "1", "pods", "1"), f.mustLedger(t, "team").Observed.Used, statusOpts); diff != "" {
		t.Errorf("observed used, counted under the new spec (-want +got):\n%s", diff)
	}
	if apiReads == 0 {
		t.Errorf("the quota was not read from the apiserver")
	}
	if got := f.mustLedger(t, "team").QuotaGeneration; got != q.Generation {
		t.Errorf("fence = %d, want it kept at %d", got, q.Generation)
	}
}
