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
)

// DefaultSettleInterval is quota-controller's --settle-interval, chosen by measurement (docs/performance.md): a
// status write costs the apiserver as much CPU as the binding write it settles, so a namespace's stream of
// admissions is settled a few at a time, and used shows a placement at most a second late (reserved shows it at
// once).
const DefaultSettleInterval = time.Second

// DefaultSettleBacklog is how many reservations a quota may hold before a binding change recounts it at once,
// whatever the interval. Every status write, the webhook's included, carries the whole list, and the apiserver
// spends about a third of a millisecond of CPU per listed reservation on each (docs/performance.md): a long list
// costs more than the controller writes it saves.
const DefaultSettleBacklog = 8

// pacer spaces the recounts of a quota that binding changes cause. The first change after a quiet interval is
// recounted at once; later ones wait until the interval since the last recount has passed, and the workqueue
// folds them into one recount. A stream of admissions into one namespace then costs the controller one status
// write per interval instead of one per admission. Nothing is lost by waiting: an admitted write is charged by
// its reservation until the recount moves it into used, in the same status write. What waits is how soon used
// shows it, and how soon bindings waiting for quota are requeued when usage drops.
type pacer struct {
	interval time.Duration
	backlog  int
	now      func() time.Time

	mu   sync.Mutex
	last map[types.NamespacedName]time.Time
}

func newPacer(interval time.Duration, backlog int, now func() time.Time) *pacer {
	if backlog <= 0 {
		backlog = DefaultSettleBacklog
	}
	return &pacer{interval: interval, backlog: backlog, now: now, last: map[types.NamespacedName]time.Time{}}
}

// started records that a recount of key began.
func (p *pacer) started(key types.NamespacedName) {
	if p == nil || p.interval <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last[key] = p.now()
}

// forget drops what is known of a deleted quota.
func (p *pacer) forget(key types.NamespacedName) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.last, key)
}

// delay is how long a binding change should wait before it recounts key, a quota holding reservations.
func (p *pacer) delay(key types.NamespacedName, reservations int) time.Duration {
	if p == nil || p.interval <= 0 || reservations >= p.backlog {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	last, ok := p.last[key]
	if !ok {
		return 0
	}
	return max(0, last.Add(p.interval).Sub(p.now()))
}

// pacedQuotasOf enqueues every quota of a changed binding's namespace, each after the pacer's delay. A binding
// that shrank on a member is noted in shrinks first, so that the recount it causes knows it.
type pacedQuotasOf struct {
	quotas client.Reader
	pacer  *pacer
	// shrinks notes bindings that shrank on a member (shrinks.go); nil for events of anything but bindings.
	shrinks *shrinks
}

var _ handler.EventHandler = pacedQuotasOf{}

func (h pacedQuotasOf) enqueue(ctx context.Context, obj client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	var quotas quotav1alpha1.KarmadaQuotaList
	// Read-only, and only the reservation count is looked at.
	if err := h.quotas.List(ctx, &quotas, client.InNamespace(obj.GetNamespace()), client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing quotas for a binding event", "namespace", obj.GetNamespace())
		return
	}
	for i := range quotas.Items {
		req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&quotas.Items[i])}
		if d := h.pacer.delay(req.NamespacedName, len(quotas.Items[i].Status.Reservations)); d > 0 {
			q.AddAfter(req, d)
		} else {
			q.Add(req)
		}
	}
}

// Create implements handler.EventHandler.
func (h pacedQuotasOf) Create(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.enqueue(ctx, e.Object, q)
}

// Update implements handler.EventHandler.
func (h pacedQuotasOf) Update(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	old, ok1 := e.ObjectOld.(*workv1alpha2.ResourceBinding)
	updated, ok2 := e.ObjectNew.(*workv1alpha2.ResourceBinding)
	if h.shrinks != nil && ok1 && ok2 && old.Generation != updated.Generation {
		h.shrinks.observe(old, updated)
	}
	h.enqueue(ctx, e.ObjectNew, q)
}

// Delete implements handler.EventHandler.
func (h pacedQuotasOf) Delete(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.enqueue(ctx, e.Object, q)
}

// Generic implements handler.EventHandler.
func (h pacedQuotasOf) Generic(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	h.enqueue(ctx, e.Object, q)
}
