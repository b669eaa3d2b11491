package demo

import (
	"context"
	"fmt"
	"sync"
	"time"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/karmada-quota/karmada-quota/hack/localkarmada"
	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
)

// timeline prints, as they happen, the changes a scale-down sets off in the karmada-apiserver: the binding's new
// size, the scheduler's new placement, the quota's recount, the requeue of the waiting binding, its admission and
// its scheduling. The steps follow each other within a second; polling would miss most of them, so they come from
// watches (informers), which see every change.
type timeline struct {
	n     *narrator
	start time.Time
	// watched are the bindings whose changes are narrated, by name.
	watched map[string]bool

	mu sync.Mutex
	// requeuedAt and scheduledAt are when, after the start, quota-controller requeued a waiting binding and when
	// that binding turned Scheduled=True; zero until seen.
	requeuedAt, scheduledAt map[string]time.Duration
}

// watchTimeline starts the watches and returns once they have listed the current state, so no later change is
// missed. Cancelling ctx stops them.
func (d *demo) watchTimeline(ctx context.Context, bindings ...string) (*timeline, error) {
	t := &timeline{n: d.narrator, watched: map[string]bool{},
		requeuedAt: map[string]time.Duration{}, scheduledAt: map[string]time.Duration{}}
	for _, b := range bindings {
		t.watched[b] = true
	}
	c, err := cache.New(d.karmadaConfig, cache.Options{
		Scheme:            localkarmada.Scheme,
		DefaultNamespaces: map[string]cache.Config{namespace: {}},
	})
	if err != nil {
		return nil, err
	}
	quotas, err := c.GetInformer(ctx, &quotav1alpha1.KarmadaQuota{})
	if err != nil {
		return nil, err
	}
	if _, err := quotas.AddEventHandler(toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(old, updated any) {
		o, ok1 := old.(*quotav1alpha1.KarmadaQuota)
		u, ok2 := updated.(*quotav1alpha1.KarmadaQuota)
		if ok1 && ok2 {
			t.quotaChanged(o, u)
		}
	}}); err != nil {
		return nil, err
	}
	// The reservations are in the quota's ledger: the webhook adds them there, the controller settles them.
	ledgers, err := c.GetInformer(ctx, &quotav1alpha1.KarmadaQuotaLedger{})
	if err != nil {
		return nil, err
	}
	if _, err := ledgers.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if l, ok := obj.(*quotav1alpha1.KarmadaQuotaLedger); ok {
				t.reservationsChanged(nil, l.Reservations)
			}
		},
		UpdateFunc: func(old, updated any) {
			o, ok1 := old.(*quotav1alpha1.KarmadaQuotaLedger)
			u, ok2 := updated.(*quotav1alpha1.KarmadaQuotaLedger)
			if ok1 && ok2 {
				t.reservationsChanged(o.Reservations, u.Reservations)
			}
		},
	}); err != nil {
		return nil, err
	}
	rbs, err := c.GetInformer(ctx, &workv1alpha2.ResourceBinding{})
	if err != nil {
		return nil, err
	}
	if _, err := rbs.AddEventHandler(toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(old, updated any) {
		o, ok1 := old.(*workv1alpha2.ResourceBinding)
		u, ok2 := updated.(*workv1alpha2.ResourceBinding)
		if ok1 && ok2 && t.watched[u.Name] {
			t.bindingChanged(o, u)
		}
	}}); err != nil {
		return nil, err
	}
	go func() {
		// Start returns when ctx ends; an error before that shows as a sync failure below.
		_ = c.Start(ctx)
	}()
	syncCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if !c.WaitForCacheSync(syncCtx) {
		return nil, fmt.Errorf("watching KarmadaQuotas, their ledgers and ResourceBindings in %s: the watches never synced", namespace)
	}
	return t, nil
}

// begin sets the moment the timeline counts from.
func (t *timeline) begin() {
	t.mu.Lock()
	t.start = time.Now()
	t.mu.Unlock()
}

func (t *timeline) note(format string, args ...any) {
	t.mu.Lock()
	offset := time.Since(t.start)
	t.mu.Unlock()
	// A hanging indent keeps the offsets in a column of their own.
	const indent = "             "
	text := wrap(fmt.Sprintf(format, args...), indent, lineWidth)
	t.n.lines(fmt.Sprintf("    %-8s ", fmt.Sprintf("+%.2fs", offset.Seconds())) + text[len(indent):])
}

func (t *timeline) since() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return time.Since(t.start)
}

func (t *timeline) record(m map[string]time.Duration, name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, seen := m[name]; !seen {
		m[name] = time.Since(t.start)
	}
}

// requeued and scheduled report when the binding was requeued and scheduled, and whether it was.
func (t *timeline) requeued(name string) (time.Duration, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	at, ok := t.requeuedAt[name]
	return at, ok
}

func (t *timeline) scheduled(name string) (time.Duration, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	at, ok := t.scheduledAt[name]
	return at, ok
}

func (t *timeline) bindingChanged(old, updated *workv1alpha2.ResourceBinding) {
	if old.Spec.Replicas != updated.Spec.Replicas {
		t.note("binding %s: spec.replicas %d -> %d (Karmada copied the Deployment's new size into its binding)",
			updated.Name, old.Spec.Replicas, updated.Spec.Replicas)
	}
	if !equality.Semantic.DeepEqual(old.Spec.RescheduleTriggeredAt, updated.Spec.RescheduleTriggeredAt) && updated.Spec.RescheduleTriggeredAt != nil {
		t.record(t.requeuedAt, updated.Name)
		t.note("binding %s: spec.rescheduleTriggeredAt set to %s: quota-controller requeued it, the quota has room now",
			updated.Name, updated.Spec.RescheduleTriggeredAt.Format("15:04:05"))
	}
	if !equality.Semantic.DeepEqual(old.Spec.Clusters, updated.Spec.Clusters) {
		t.note("binding %s: placed %s (was %s): karmada-scheduler's placement, admitted by quota-webhook",
			updated.Name, placementString(updated.Spec.Clusters), placementString(old.Spec.Clusters))
	}
	before, after := scheduledCondition(old), scheduledCondition(updated)
	if after != nil && (before == nil || before.Status != after.Status || before.Reason != after.Reason) {
		if after.Status == metav1.ConditionTrue {
			t.record(t.scheduledAt, updated.Name)
		}
		t.note("binding %s: %s", updated.Name, conditionString(after))
	}
}

// reservationsChanged tells the admissions the webhook reserved for and the controller settled, from the quota's
// ledger before and after a write.
func (t *timeline) reservationsChanged(old, updated []quotav1alpha1.Reservation) {
	oldRes := reservationsByBinding(old)
	newRes := reservationsByBinding(updated)
	for uid, r := range newRes {
		if _, had := oldRes[uid]; !had {
			t.note("quota: quota-webhook admitted a placement of binding %s and reserved %s until the controller sees it",
				r.ReservedBy.Name, resourceString(r.Reserved))
		}
	}
	for uid, r := range oldRes {
		if _, kept := newRes[uid]; !kept {
			t.note("quota: quota-controller observed binding %s's placement and settled its reservation into used", r.ReservedBy.Name)
		}
	}
}

// quotaChanged tells a change of what the quota's status shows used.
func (t *timeline) quotaChanged(old, updated *quotav1alpha1.KarmadaQuota) {
	if !equality.Semantic.DeepEqual(old.Status.Used, updated.Status.Used) {
		oldCPU, newCPU := old.Status.Used[corev1.ResourceCPU], updated.Status.Used[corev1.ResourceCPU]
		hard := updated.Status.Hard[corev1.ResourceCPU]
		t.note("quota: status.used cpu %s -> %s of %s (recounted by quota-controller)",
			cpuString(oldCPU), cpuString(newCPU), cpuString(hard))
	}
}

func reservationsByBinding(list []quotav1alpha1.Reservation) map[types.UID]quotav1alpha1.Reservation {
	byUID := map[types.UID]quotav1alpha1.Reservation{}
	for _, r := range list {
		byUID[r.ReservedBy.UID] = r
	}
	return byUID
}
