package controller

import (
	"context"
	"sync"
	"time"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/quotaio"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
)

// DefaultSettleInterval is quota-controller's --settle-interval: how soon a binding change that frees something
// (a scale-down, a move, a binding deleted) is recounted, and the room handed to the bindings waiting for it. A
// ledger write costs the apiserver more than the binding write it settles (docs/performance.md), so a stream of
// changes is recounted a few at a time.
const DefaultSettleInterval = time.Second

// DefaultSettleBacklog is how many reservations a quota may hold before a binding change recounts it at once,
// whatever the interval. Every ledger write, the webhook's included, carries the whole list, and the apiserver
// spends CPU on each listed reservation at every write (docs/performance.md): a long list costs more than the
// controller writes it saves.
const DefaultSettleBacklog = 8

// pacer spaces the recounts of a quota that binding changes cause. The first change after a quiet interval is
// recounted at once; later ones wait until the interval since the last recount has passed, and the workqueue
// folds them into one recount. A change that frees nothing waits longer, for the growth interval (the status
// interval): its recount only turns reservations into used, which changes no decision and no status shown before
// the status interval anyway. A stream of admissions into one namespace then costs the controller one ledger write
// per growth interval, or per backlog of reservations, instead of one per admission. Nothing is lost by waiting: an
// admitted write is charged by its reservation until the recount moves it into used, in the same ledger write.
// What waits is how soon used shows it, and how soon bindings waiting for quota are requeued when usage drops.
type pacer struct {
	interval time.Duration
	// growthInterval spaces the recounts that writes releasing nothing cause: such a recount only turns
	// reservations into used, which changes no decision, so it waits for the status to be due (the status interval),
	// or for the backlog.
	growthInterval time.Duration
	backlog        int
	// recounts are when each quota's last recount began.
	recounts *lastTimes
}

func newPacer(interval, growthInterval time.Duration, backlog int, now func() time.Time) *pacer {
	if backlog <= 0 {
		backlog = DefaultSettleBacklog
	}
	return &pacer{interval: interval, growthInterval: max(interval, growthInterval), backlog: backlog, recounts: newLastTimes(now)}
}

// started records that a recount of key began.
func (p *pacer) started(key types.NamespacedName) {
	if p == nil || p.interval <= 0 {
		return
	}
	p.recounts.mark(key)
}

// forget drops what is known of a deleted quota.
func (p *pacer) forget(key types.NamespacedName) {
	if p != nil {
		p.recounts.forget(key)
	}
}

// delay is how long a binding change should wait before it recounts key, a quota holding reservations; releases
// says whether the change frees anything (usage.Releases), which waiting bindings may then use.
func (p *pacer) delay(key types.NamespacedName, reservations int, releases bool) time.Duration {
	if p == nil || p.interval <= 0 || reservations >= p.backlog {
		return 0
	}
	interval := p.interval
	if !releases {
		interval = p.growthInterval
	}
	return p.recounts.untilPast(key, interval)
}

// lastTimes remembers, per quota, when something last happened to it (a recount began, its status was written),
// for the pacers that space the next one.
type lastTimes struct {
	now func() time.Time

	mu   sync.Mutex
	last map[types.NamespacedName]time.Time
}

func newLastTimes(now func() time.Time) *lastTimes {
	return &lastTimes{now: now, last: map[types.NamespacedName]time.Time{}}
}

// mark records that it happened to key now.
func (l *lastTimes) mark(key types.NamespacedName) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.last[key] = l.now()
}

// forget drops what is known of a deleted quota.
func (l *lastTimes) forget(key types.NamespacedName) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.last, key)
}

// untilPast is how long until interval has passed since it last happened to key; 0 when it has, or never happened.
func (l *lastTimes) untilPast(key types.NamespacedName, interval time.Duration) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	last, ok := l.last[key]
	if !ok {
		return 0
	}
	return max(0, last.Add(interval).Sub(l.now()))
}

// pacedQuotasOf enqueues every quota of a changed binding's namespace, each after the pacer's delay. A binding
// that shrank on a member is noted in shrinks first, so that the recount it causes knows it.
type pacedQuotasOf struct {
	quotas client.Reader
	pacer  *pacer
	// shrinks notes bindings that shrank on a member (shrinks.go); nil for events of anything but bindings.
	shrinks *shrinks
	// business tells the business quotas selecting the namespace, enqueued too; nil enqueues none.
	business *quotaio.BusinessSelection
}

var _ handler.EventHandler = pacedQuotasOf{}

func (h pacedQuotasOf) enqueue(ctx context.Context, obj client.Object, releases bool, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	var quotas quotav1alpha1.KarmadaQuotaList
	// Read-only, and only names and reservation counts are looked at.
	if err := h.quotas.List(ctx, &quotas, client.InNamespace(obj.GetNamespace()), client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing quotas for a binding event", "namespace", obj.GetNamespace())
		return
	}
	h.enqueueBusiness(ctx, obj.GetNamespace(), releases, q)
	if len(quotas.Items) == 0 {
		return
	}
	var ledgers quotav1alpha1.KarmadaQuotaLedgerList
	if err := h.quotas.List(ctx, &ledgers, client.InNamespace(obj.GetNamespace()), client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing quota ledgers for a binding event", "namespace", obj.GetNamespace())
		return
	}
	reservations := make(map[string]int, len(ledgers.Items))
	for i := range ledgers.Items {
		reservations[ledgers.Items[i].Name] = len(ledgers.Items[i].Reservations)
	}
	for i := range quotas.Items {
		req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&quotas.Items[i])}
		pending := reservations[req.Name] + len(quotas.Items[i].Status.Reservations)
		if d := h.pacer.delay(req.NamespacedName, pending, releases); d > 0 {
			q.AddAfter(req, d)
		} else {
			q.Add(req)
		}
	}
}

// enqueueBusiness enqueues, paced as the namespace's own quotas, the business quotas selecting namespace.
func (h pacedQuotasOf) enqueueBusiness(ctx context.Context, namespace string, releases bool, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if h.business == nil {
		return
	}
	selecting, err := h.business.Selecting(ctx, namespace)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the business quotas of a binding's namespace", "namespace", namespace)
		return
	}
	for _, b := range selecting {
		req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(b)}
		pending := 0
		var ledger quotav1alpha1.KarmadaBusinessQuotaLedger
		if err := h.quotas.Get(ctx, req.NamespacedName, &ledger, client.UnsafeDisableDeepCopy); err == nil {
			pending = len(ledger.Reservations)
		}
		if d := h.pacer.delay(req.NamespacedName, pending, releases); d > 0 {
			q.AddAfter(req, d)
		} else {
			q.Add(req)
		}
	}
}

// Create implements handler.EventHandler: a new binding releases nothing. A binding of the informer's initial list
// enqueues nothing: every quota (and business quota) is enqueued by its own initial event, which the workers wait
// for as they wait for this replay, and each binding's would only add its namespace's quotas again. At 100,000
// bindings that replay, two cache lists per binding, was about 2 s of the 3.4 s between ready and the workers' start.
// Every binding is noted handled first (shrinks.handled), the initial list's too.
func (h pacedQuotasOf) Create(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if h.shrinks != nil {
		h.shrinks.handled(e.Object)
	}
	if e.IsInInitialList {
		return
	}
	h.enqueue(ctx, e.Object, false, q)
}

// Update implements handler.EventHandler. Only a new generation changes what a binding uses: an update of its status
// alone (most of them, the scheduler's) releases nothing, and is enqueued without reading the bindings back from
// the cache's records.
func (h pacedQuotasOf) Update(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if e.ObjectOld.GetGeneration() == e.ObjectNew.GetGeneration() {
		h.enqueue(ctx, e.ObjectNew, false, q)
		return
	}
	old, ok1 := bindingOf(e.ObjectOld)
	updated, ok2 := bindingOf(e.ObjectNew)
	releases := !ok1 || !ok2 || h.released(old, updated)
	// After released noted any shrink, and before the recount it queues runs.
	if h.shrinks != nil {
		h.shrinks.handled(e.ObjectNew)
	}
	h.enqueue(ctx, e.ObjectNew, releases, q)
}

// Delete implements handler.EventHandler: a binding gone releases what it used.
func (h pacedQuotasOf) Delete(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.enqueue(ctx, e.Object, true, q)
}

// Generic implements handler.EventHandler: a Work changed, which may release what its member ran beyond its
// binding.
func (h pacedQuotasOf) Generic(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.enqueue(ctx, e.Object, true, q)
}

// released reports whether a binding's update to a new generation lowers what it uses anywhere (usage.Releases),
// and notes a shrink on a member in shrinks. A binding that cannot be read counts as releasing, which recounts it
// sooner rather than later.
func (h pacedQuotasOf) released(old, updated *workv1alpha2.ResourceBinding) bool {
	before, err := usage.Of(old)
	if err != nil {
		return true
	}
	after, err := usage.Of(updated)
	if err != nil {
		return true
	}
	if h.shrinks != nil {
		h.shrinks.observe(updated, before, after)
	}
	return usage.Releases(after, before)
}
