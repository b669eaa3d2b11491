package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/metrics"
	"github.com/karmada-quota/karmada-quota/pkg/quota"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

func TestPacerDelay(t *testing.T) {
	key := types.NamespacedName{Namespace: ns, Name: "team"}
	cases := map[string]struct {
		interval, growthInterval time.Duration
		startedAgo               *time.Duration
		reservations             int
		// grows is a change that releases nothing.
		grows bool
		want  time.Duration
	}{
		"never recounted: at once":                         {interval: time.Second, want: 0},
		"recounted a moment ago: the rest of the interval": {interval: time.Second, startedAgo: ptrTo(300 * time.Millisecond), want: 700 * time.Millisecond},
		"recounted longer ago than the interval: at once":  {interval: time.Second, startedAgo: ptrTo(2 * time.Second), want: 0},
		"a long list of reservations: at once, to keep the ledger small": {
			interval: time.Second, startedAgo: ptrTo(300 * time.Millisecond), reservations: DefaultSettleBacklog, want: 0,
		},
		"no interval: at once": {startedAgo: ptrTo(time.Duration(0)), want: 0},
		"growth alone: the rest of the growth interval": {
			interval: time.Second, growthInterval: 5 * time.Second, startedAgo: ptrTo(300 * time.Millisecond), grows: true, want: 4700 * time.Millisecond,
		},
		"growth alone, never recounted: at once": {interval: time.Second, growthInterval: 5 * time.Second, grows: true, want: 0},
		"growth alone with a long list of reservations: at once": {
			interval: time.Second, growthInterval: 5 * time.Second, startedAgo: ptrTo(300 * time.Millisecond), reservations: DefaultSettleBacklog, grows: true, want: 0,
		},
		"growth alone, a growth interval shorter than the interval: the interval": {
			interval: time.Second, growthInterval: 100 * time.Millisecond, startedAgo: ptrTo(300 * time.Millisecond), grows: true, want: 700 * time.Millisecond,
		},
		"a release, whatever the growth interval: the rest of the interval": {
			interval: time.Second, growthInterval: 5 * time.Second, startedAgo: ptrTo(300 * time.Millisecond), want: 700 * time.Millisecond,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(t0)
			p := newPacer(tc.interval, tc.growthInterval, 0, clk.Now)
			if tc.startedAgo != nil {
				clk.SetTime(t0.Add(-*tc.startedAgo))
				p.started(key)
				clk.SetTime(t0)
			}
			if got := p.delay(key, tc.reservations, !tc.grows); got != tc.want {
				t.Errorf("delay = %v, want %v", got, tc.want)
			}
		})
	}
	var none *pacer
	if got := none.delay(key, 0, true); got != 0 {
		t.Errorf("a nil pacer delays by %v", got)
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestPacedQuotasOf enqueues every quota of the binding's namespace, a quota recounted a moment ago after the
// rest of its interval unless it holds a backlog of reservations (in its ledger, or in its status from an earlier
// release's webhook), and folds the changes in between into one recount.
func TestPacedQuotasOf(t *testing.T) {
	busy := utiltesting.MakeQuota(ns, "busy").Hard(list("cpu", "10"))
	quiet := utiltesting.MakeQuota(ns, "quiet").Hard(list("cpu", "10"))
	// backlogged's ledger holds a backlog; upgrading holds one between its ledger and its status.
	backlogged := utiltesting.MakeQuota(ns, "backlogged").Hard(list("cpu", "100"))
	upgrading := utiltesting.MakeQuota(ns, "upgrading").Hard(list("cpu", "100"))
	for i := range DefaultSettleBacklog {
		rb := utiltesting.MakeBinding(ns, fmt.Sprintf("ghost-%d", i)).Obj()
		backlogged.Reservation(rb, 1, list("cpu", "1"), t0.Add(time.Minute))
		upgrading.Reservation(rb, 1, list("cpu", "1"), t0.Add(time.Minute))
	}
	backloggedQuota := backlogged.Obj()
	upgradingQuota := upgrading.Obj()
	// Half in each, below the backlog on its own: the sum counts.
	upgradingLedger := utiltesting.MoveToLedger(upgrading.Obj())
	upgradingLedger.Reservations = upgradingLedger.Reservations[:DefaultSettleBacklog/2]
	upgradingLedger.ReservationCount = int32(len(upgradingLedger.Reservations))
	upgradingQuota.Status.Reservations = upgradingQuota.Status.Reservations[DefaultSettleBacklog/2:]
	f := newFixture(t, interceptor.Funcs{}, busy.Obj(), quiet.Obj(), utiltesting.MoveToLedger(backloggedQuota), backloggedQuota,
		upgradingLedger, upgradingQuota, utiltesting.MakeQuota("elsewhere", "other").Obj())
	p := newPacer(time.Second, 0, 0, f.clock.Now)
	for _, name := range []string{"busy", "backlogged", "upgrading"} {
		p.started(types.NamespacedName{Namespace: ns, Name: name})
	}
	f.clock.Step(400 * time.Millisecond)
	h := pacedQuotasOf{quotas: f.client, pacer: p}

	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request](),
		workqueue.TypedRateLimitingQueueConfig[reconcile.Request]{Clock: f.clock})
	defer q.ShutDown()
	rb := utiltesting.MakeBinding(ns, "web").Obj()
	for range 3 {
		h.Update(context.Background(), event.UpdateEvent{ObjectOld: rb, ObjectNew: rb}, q)
	}
	if got := q.Len(); got != 3 {
		t.Fatalf("%d quotas ready, want 3 (quiet, backlogged and upgrading, at once)", got)
	}
	var ready []string
	for range 3 {
		item, _ := q.Get()
		ready = append(ready, item.Name)
		q.Done(item)
	}
	if diff := cmp.Diff([]string{"backlogged", "quiet", "upgrading"}, ready, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("ready first (-want +got):\n%s", diff)
	}
	f.clock.Step(600 * time.Millisecond)
	waitFor(t, func() bool { return q.Len() == 1 })
	// The delaying queue hands each AddAfter to its own goroutine through a channel: one of the three may reach it
	// after the first fired. Still waiting, or queued and not yet taken, it folds into the queued one; taken and done
	// first, it would be a recount of its own. Let it arrive before taking the recount.
	time.Sleep(50 * time.Millisecond)
	item, _ := q.Get()
	if diff := cmp.Diff(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "busy"}}, item); diff != "" {
		t.Errorf("ready after its interval (-want +got):\n%s", diff)
	}
	q.Done(item)
	f.clock.Step(time.Second)
	time.Sleep(50 * time.Millisecond)
	if got := q.Len(); got != 0 {
		extra, _ := q.Get()
		t.Errorf("%d more recounts queued (%v first), want none: three changes make one recount", got, extra)
	}
}

// TestPacedQuotasOfReleasesSooner: a binding change that frees something (a scale-down, a binding deleted) is
// recounted after the settle interval, for the bindings waiting on that room; one that only grows waits for the
// growth interval, since its recount only turns reservations into used.
func TestPacedQuotasOfReleasesSooner(t *testing.T) {
	team := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10"))
	f := newFixture(t, interceptor.Funcs{}, team.Obj())
	p := newPacer(time.Second, 5*time.Second, 0, f.clock.Now)
	key := types.NamespacedName{Namespace: ns, Name: "team"}
	h := pacedQuotasOf{quotas: f.client, pacer: p}
	// As the informer hands them over.
	two := cached(t, utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")).Cluster("member1", 2).Obj())
	three := cached(t, utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")).Cluster("member1", 3).Obj())
	moved := cached(t, utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")).Cluster("member2", 2).Obj())
	// Each a spec of its own, as the apiserver numbers them.
	two.Generation, three.Generation, moved.Generation = 1, 2, 3

	for name, tc := range map[string]struct {
		send func(workqueue.TypedRateLimitingInterface[reconcile.Request])
		want time.Duration
	}{
		"scaled up": {send: func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Update(context.Background(), event.UpdateEvent{ObjectOld: two, ObjectNew: three}, q)
		}, want: 5 * time.Second},
		"created": {send: func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Create(context.Background(), event.CreateEvent{Object: two}, q)
		}, want: 5 * time.Second},
		"scaled down": {send: func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Update(context.Background(), event.UpdateEvent{ObjectOld: three, ObjectNew: two}, q)
		}, want: time.Second},
		"moved to another cluster": {send: func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Update(context.Background(), event.UpdateEvent{ObjectOld: two, ObjectNew: moved}, q)
		}, want: time.Second},
		"its status changed alone (same generation)": {send: func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			waiting := three.DeepCopyObject().(*CachedBinding)
			waiting.ResourceVersion = "7"
			waiting.Scheduled = &metav1.Condition{Type: workv1alpha2.Scheduled, Status: metav1.ConditionFalse, Reason: workv1alpha2.BindingReasonQuotaExceeded}
			h.Update(context.Background(), event.UpdateEvent{ObjectOld: three, ObjectNew: waiting}, q)
		}, want: 5 * time.Second},
		"deleted": {send: func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Delete(context.Background(), event.DeleteEvent{Object: two}, q)
		}, want: time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			p.started(key)
			q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request](),
				workqueue.TypedRateLimitingQueueConfig[reconcile.Request]{Clock: f.clock})
			defer q.ShutDown()
			tc.send(q)
			f.clock.Step(tc.want - time.Millisecond)
			time.Sleep(20 * time.Millisecond)
			if got := q.Len(); got != 0 {
				t.Fatalf("recounted before %s", tc.want)
			}
			f.clock.Step(time.Millisecond)
			waitFor(t, func() bool { return q.Len() == 1 })
		})
	}
}

// TestPacedQuotasOfSkipsTheInitialList: the informer's replay of every binding to a starting controller enqueues
// nothing (each quota's own initial event does), and a binding created afterwards enqueues its namespace's quota.
func TestPacedQuotasOfSkipsTheInitialList(t *testing.T) {
	team := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10"))
	f := newFixture(t, interceptor.Funcs{}, team.Obj())
	h := pacedQuotasOf{quotas: f.client, pacer: newPacer(time.Second, 5*time.Second, 0, f.clock.Now), shrinks: newShrinks()}
	placed := utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")).Cluster("member1", 2).Generation(1).Obj()
	web := cached(t, placed)
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request](),
		workqueue.TypedRateLimitingQueueConfig[reconcile.Request]{Clock: f.clock})
	defer q.ShutDown()

	h.Create(context.Background(), event.CreateEvent{Object: web, IsInInitialList: true}, q)
	f.clock.Step(time.Minute)
	time.Sleep(20 * time.Millisecond)
	if got := q.Len(); got != 0 {
		t.Fatalf("%d recounts queued by a binding of the initial list, want none", got)
	}
	if got := h.shrinks.of([]workv1alpha2.ResourceBinding{*placed}); len(got) != 0 {
		t.Errorf("a binding of the initial list is not noted handled: the first recounts would read its Works (%v)", got)
	}
	h.Create(context.Background(), event.CreateEvent{Object: web}, q)
	waitFor(t, func() bool { return q.Len() == 1 })
	item, _ := q.Get()
	if diff := cmp.Diff(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "team"}}, item); diff != "" {
		t.Errorf("a binding created after the start (-want +got):\n%s", diff)
	}
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestReconcileFoldedReservations keeps a folded sum until it has expired, then drops it in the write that comes
// back for it: by then each folded write is counted in used or can no longer happen.
func TestReconcileFoldedReservations(t *testing.T) {
	web := utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")).Cluster("member1", 2).Generation(2)
	expires := t0.Add(time.Minute)
	team := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10")).Folded(3, list("cpu", "3"), expires)
	q := team.Obj()
	f := newFixture(t, interceptor.Funcs{}, web.Obj(), utiltesting.MoveToLedger(q), q)
	expired := counter(metrics.ReservationsExpired)

	result := f.mustReconcile(t, "team")
	got := f.quota(t, "team").Status
	if diff := cmp.Diff(team.Obj().Status.FoldedReservations, f.checkLedgerOf(t, "team").FoldedReservations, statusOpts); diff != "" {
		t.Errorf("folded before expiry (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(list("cpu", "3"), got.Reserved, statusOpts); diff != "" {
		t.Errorf("reserved before expiry (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(list("cpu", "2"), got.Used, statusOpts); diff != "" {
		t.Errorf("used (-want +got):\n%s", diff)
	}
	if want := time.Minute + time.Second; result.RequeueAfter != want {
		t.Errorf("RequeueAfter = %v, want %v: the controller must come back for the folded sum", result.RequeueAfter, want)
	}

	f.clock.Step(result.RequeueAfter)
	f.mustReconcile(t, "team")
	got = f.quota(t, "team").Status
	if folded := f.checkLedgerOf(t, "team").FoldedReservations; folded != nil {
		t.Errorf("folded after expiry = %+v, want none", folded)
	}
	if diff := cmp.Diff(list("cpu", "0"), got.Reserved, statusOpts); diff != "" {
		t.Errorf("reserved after expiry (-want +got):\n%s", diff)
	}
	if got := counter(metrics.ReservationsExpired) - expired; got != 3 {
		t.Errorf("ReservationsExpired grew by %v, want 3", got)
	}
}

// TestReconcileFoldsALongList brings a list past the bound within it, however it got there.
func TestReconcileFoldsALongList(t *testing.T) {
	team := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10000"))
	for i := range quota.MaxReservations + 2 {
		team.Reservation(utiltesting.MakeBinding(ns, fmt.Sprintf("ghost-%04d", i)).Obj(), 1, list("cpu", "1"), t0.Add(time.Minute+time.Duration(i)*time.Second))
	}
	q := team.Obj()
	f := newFixture(t, interceptor.Funcs{}, utiltesting.MoveToLedger(q), q)
	f.mustReconcile(t, "team")
	got := f.checkLedgerOf(t, "team")
	if n := len(got.Reservations); n != quota.MaxReservations {
		t.Errorf("%d reservations listed, want %d", n, quota.MaxReservations)
	}
	want := &quotav1alpha1.FoldedReservations{Count: 2, Reserved: list("cpu", "2"), ExpirationTime: metav1.NewTime(t0.Add(time.Minute + time.Second))}
	if diff := cmp.Diff(want, got.FoldedReservations, statusOpts); diff != "" {
		t.Errorf("folded (-want +got):\n%s", diff)
	}
	// Folding moves charges, it drops none.
	if diff := cmp.Diff(list("cpu", fmt.Sprint(quota.MaxReservations+2)), f.quota(t, "team").Status.Reserved, statusOpts); diff != "" {
		t.Errorf("reserved (-want +got):\n%s", diff)
	}
}

// cacheAt makes the reconciler's cache (its client's reads) return q and l as they are, whatever is stored; nil
// reads the stored one.
func (f *fixture) cacheAt(q *quotav1alpha1.KarmadaQuota, l *quotav1alpha1.KarmadaQuotaLedger) {
	f.reconciler.client = interceptor.NewClient(f.client, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			switch o := obj.(type) {
			case *quotav1alpha1.KarmadaQuota:
				if q != nil {
					q.DeepCopyInto(o)
					return nil
				}
			case *quotav1alpha1.KarmadaQuotaLedger:
				if l != nil {
					l.DeepCopyInto(o)
					return nil
				}
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
}

// TestReconcileDecidesOnItsOwnWrite: the cache lags behind the controller's own writes of the status and of the
// ledger; the next recount starts from what those writes returned instead of losing a race against them, and reads
// from the apiserver only the ledger it is about to write, once, after the bindings (the settle's read).
func TestReconcileDecidesOnItsOwnWrite(t *testing.T) {
	web := utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")).Cluster("member1", 1)
	team := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10")).Obj()
	// The ledger as the webhook's first admission created it.
	f := newFixture(t, interceptor.Funcs{}, web.Obj(), team, utiltesting.MoveToLedger(team))
	// The first recount writes the ledger. From then on the cache is frozen at the quota and the ledger as they
	// were before that recount's writes, and the apiserver reader must not be used.
	f.mustReconcile(t, "team")
	frozenQuota := f.quota(t, "team")
	frozenQuota.Status = quotav1alpha1.KarmadaQuotaStatus{}
	frozenQuota.ResourceVersion = "1"
	frozenLedger := f.mustLedger(t, "team").DeepCopy()
	frozenLedger.ResourceVersion = "1"
	apiReads := map[string]int{}
	f.cacheAt(frozenQuota, frozenLedger)
	f.reconciler.apiReader = interceptor.NewClient(f.client, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			apiReads[fmt.Sprintf("%T", obj)]++
			return c.Get(ctx, key, obj, opts...)
		},
	})
	conflicts := counter(metrics.StatusConflicts.WithLabelValues("controller"))

	var rb workv1alpha2.ResourceBinding
	if err := f.client.Get(context.Background(), client.ObjectKeyFromObject(web.Obj()), &rb); err != nil {
		t.Fatal(err)
	}
	rb.Spec.Clusters[0].Replicas = 3
	if err := f.client.Update(context.Background(), &rb); err != nil {
		t.Fatal(err)
	}
	f.mustReconcile(t, "team")

	if diff := cmp.Diff(list("cpu", "3"), f.quota(t, "team").Status.Used, statusOpts); diff != "" {
		t.Errorf("used (-want +got):\n%s", diff)
	}
	// Each recount wrote it once: the second one on the first's write, not on the frozen copy.
	f.checkLedgerOf(t, "team")
	if got := f.ledgerWrites.Load(); got != 2 {
		t.Errorf("ledger writes = %d, want 2", got)
	}
	if got := counter(metrics.StatusConflicts.WithLabelValues("controller")) - conflicts; got != 0 {
		t.Errorf("%v status writes lost a race against the controller's own writes", got)
	}
	if diff := cmp.Diff(map[string]int{"*v1alpha1.KarmadaQuotaLedger": 1}, apiReads); diff != "" {
		t.Errorf("reads of the apiserver (-want +got):\n%s", diff)
	}
}

// TestReconcileSettlesOnTheLedgerReadAfterTheBindings: the webhook reserved for a scale-up and the binding was
// stored with it, and the controller's binding cache shows the scale-up while its ledger cache is older than the
// reservation (the two caches are not ordered). The recount counts the scale-up, so it settles on the ledger read
// again from the apiserver before it writes: the reservation goes in the write that counts it, never listed beside
// it.
func TestReconcileSettlesOnTheLedgerReadAfterTheBindings(t *testing.T) {
	web := utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")).Cluster("member1", 1)
	team := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10")).Obj()
	f := newFixture(t, interceptor.Funcs{}, web.Obj(), team, utiltesting.MoveToLedger(team))
	f.mustReconcile(t, "team")
	// The ledger cache stays at the first recount's write.
	cachedLedger := f.mustLedger(t, "team").DeepCopy()
	f.cacheAt(nil, cachedLedger)

	// The webhook admits web's scale to 3 (2 CPU more, at its next generation), then the binding is stored.
	rb := f.binding(t, "web")
	rb.Generation++
	if err := reserveLate(context.Background(), f.client, cachedLedger, func(l *quotav1alpha1.KarmadaQuotaLedger) {
		l.Reservations = append(l.Reservations, quotav1alpha1.Reservation{
			ReservedBy: utiltesting.ReservationOwner(rb), Generation: rb.Generation,
			Reserved: list("cpu", "2"), ExpirationTime: metav1.NewTime(t0.Add(time.Minute)),
		})
	}); err != nil {
		t.Fatal(err)
	}
	rb.Spec.Clusters[0].Replicas = 3
	if err := f.client.Update(context.Background(), rb); err != nil {
		t.Fatal(err)
	}
	if got := f.binding(t, "web").Generation; got != rb.Generation {
		t.Fatalf("the binding is stored at generation %d, want %d", got, rb.Generation)
	}
	f.mustReconcile(t, "team")

	l := f.checkLedgerOf(t, "team")
	if len(l.Reservations) != 0 {
		t.Errorf("the ledger lists %+v beside the usage it reserved", l.Reservations)
	}
	if diff := cmp.Diff(list("cpu", "3"), l.Observed.Used, statusOpts); diff != "" {
		t.Errorf("observed used (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(list("cpu", "0"), f.quota(t, "team").Status.Reserved, statusOpts); diff != "" {
		t.Errorf("reserved (-want +got):\n%s", diff)
	}
}
