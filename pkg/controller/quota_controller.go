// Package controller keeps every KarmadaQuota's status true: usage recounted from the ResourceBindings the
// controller observes, per member cluster; reservations settled once their write is observed, or once it expired;
// bindings waiting for quota requeued when usage drops.
package controller

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/metrics"
	"github.com/karmada-quota/karmada-quota/pkg/priorityclass"
	"github.com/karmada-quota/karmada-quota/pkg/quota"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
	"github.com/karmada-quota/karmada-quota/pkg/util/lastwrite"
)

// Condition reasons.
const (
	ReasonCalculated  = "Calculated"
	ReasonInvalidSpec = "InvalidSpec"
)

// Event reasons.
const (
	EventDriftRepaired      = "DriftRepaired"
	EventReservationExpired = "ReservationExpired"
	EventInvalidSpec        = "InvalidSpec"
	EventBindingRequeued    = "BindingRequeued"
)

// QuotaReconciler recounts one quota. Bindings come from the manager's cache, and so does the quota, or the object
// this controller's last status write returned while the cache has not caught up with it. The status write
// carries the resourceVersion of what was read, so the reservations the webhook wrote a moment ago are settled or
// kept, never overwritten: a write decided on a stale copy loses the race, and the retry reads the quota from the
// apiserver.
type QuotaReconciler struct {
	client    client.Client
	apiReader client.Reader
	clock     clock.PassiveClock
	recorder  record.EventRecorder
	deleted   *tombstones
	state     *state
	requeuer  *requeuer
	// classes reads the priority class of bindings that lack it, for scoped quotas; nil takes bindings as they are.
	classes *priorityclass.Resolver
	// written holds this controller's last status write of each quota while the cache is older; nil reads every
	// quota from the apiserver.
	written *lastwrite.Store[*quotav1alpha1.KarmadaQuota]
	// pacer spaces the recounts that binding changes cause; nil recounts on every change.
	pacer *pacer
	// members shows what the member clusters run next to what is charged; nil when they are not read.
	members *memberView
}

// conflictRetries is how often one reconcile recounts and writes again after losing the compare-and-swap to the
// webhook. Under a burst of admissions the webhook writes the quota all the time; a requeue would wait out the
// workqueue's growing back-off and leave usage stale for the whole burst.
const conflictRetries = 8

// Reconcile recounts the quota and writes its status when it changed.
func (r *QuotaReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	start := r.clock.Now()
	defer func() { metrics.ReconcileDuration.Observe(r.clock.Since(start).Seconds()) }()
	r.pacer.started(req.NamespacedName)
	for attempt := 0; attempt < conflictRetries; attempt++ {
		// After a lost race the cache is known to be behind: the retry reads the quota from the apiserver.
		result, conflict, err := r.reconcileOnce(ctx, req, attempt > 0)
		if !conflict {
			return result, err
		}
		metrics.StatusWriteConflict(metrics.WriterController)
	}
	return ctrl.Result{Requeue: true}, nil
}

// reconcileOnce reads the quota (from the apiserver when fresh), recounts it and writes its status; conflict
// reports a lost compare-and-swap.
func (r *QuotaReconciler) reconcileOnce(ctx context.Context, req ctrl.Request, fresh bool) (ctrl.Result, bool, error) {
	log := ctrl.LoggerFrom(ctx)
	var q quotav1alpha1.KarmadaQuota
	if err := r.read(ctx, req.NamespacedName, fresh, &q); err != nil {
		if apierrors.IsNotFound(err) {
			r.state.forget(req.NamespacedName)
			r.pacer.forget(req.NamespacedName)
			r.members.forget(req.NamespacedName)
			if r.written != nil {
				r.written.Forget(req.NamespacedName)
			}
			return ctrl.Result{}, false, nil
		}
		return ctrl.Result{}, false, err
	}
	ledger, err := quota.NewLedger(&q)
	if err != nil {
		err := r.markInvalid(ctx, &q, err)
		if apierrors.IsConflict(err) {
			return ctrl.Result{}, true, nil
		}
		return ctrl.Result{}, false, err
	}

	// Read-only: the recount never changes a binding and the requeuer copies one before patching it, so the
	// cache's objects are listed as they are rather than deep-copied, 10,000 of them per recount.
	var bindings workv1alpha2.ResourceBindingList
	if err := r.client.List(ctx, &bindings, client.InNamespace(q.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return ctrl.Result{}, false, fmt.Errorf("listing bindings: %w", err)
	}
	// A scoped quota reads the priority class of the bindings that lack it; count them where they belong.
	unclassified, err := r.classify(ctx, ledger, bindings.Items)
	if err != nil {
		return ctrl.Result{}, false, err
	}
	count := countUsage(ledger, bindings.Items, unclassifiedNames(unclassified))
	count.unclassified = unclassified
	for _, bad := range count.malformed {
		log.V(2).Info("Binding ignored: no quota can count it", "binding", klog.KRef(q.Namespace, bad.name), "err", bad.err)
	}

	now := r.clock.Now()
	var expired int
	settled := ledger.Settle(func(res quota.Reservation) bool {
		if seen, ok := count.observed[res.Owner.Name]; ok && seen.settles(res.Owner.UID, res.Generation) {
			return true
		}
		if r.deleted.has(res.Owner.UID) {
			return true
		}
		// The binding cache is synced before any reconcile runs, so an expired reservation whose binding the
		// cache does not show at its generation is a write that never happened.
		if now.After(res.Expires) {
			expired++
			return true
		}
		return false
	})
	// The same reasoning for the reservations folded into one sum: once the last of them has expired, each folded
	// write has been observed (and is in used) or can no longer happen.
	folded, foldedExpired := ledger.ExpireFolded(now)
	// The webhook keeps the list within its bound; a list longer than that is brought within it here.
	ledger.Fold(quota.MaxReservations)

	status := r.status(&q, ledger, count)
	newlyOver, recheck := r.members.render(req.NamespacedName, status, ledger, count.clusters, now, q.Generation)
	drifted := r.state.drifted(req.NamespacedName, q.UID, &q.Status)
	if !equality.Semantic.DeepEqual(q.Status, *status) {
		q.Status = *status
		if err := r.client.Status().Update(ctx, &q); err != nil {
			if apierrors.IsConflict(err) {
				return ctrl.Result{}, true, nil
			}
			return ctrl.Result{}, false, fmt.Errorf("writing status: %w", err)
		}
		if r.written != nil {
			r.written.Remember(&q)
		}
	}
	// Counted once the write landed: a lost write is retried and would count them twice.
	metrics.ReservationsExpired.Add(float64(expired))
	metrics.ReservationsSettled.Add(float64(len(settled) - expired))
	if expired > 0 {
		r.recorder.Eventf(&q, corev1.EventTypeNormal, EventReservationExpired,
			"%d reservation(s) expired without their binding write being observed", expired)
	}
	if foldedExpired {
		metrics.ReservationsExpired.Add(float64(folded.Count))
		r.recorder.Eventf(&q, corev1.EventTypeNormal, EventReservationExpired,
			"%d folded reservation(s) expired: each of their writes is counted in used or never happened", folded.Count)
	}
	if len(newlyOver) > 0 {
		r.recorder.Event(&q, corev1.EventTypeWarning, EventMembersRunMore,
			"Member clusters run more than the quota charges there: "+describe(newlyOver))
	}
	if drifted {
		metrics.DriftRepaired.Inc()
		r.recorder.Event(&q, corev1.EventTypeWarning, EventDriftRepaired, "Status had been changed by another writer; recounted from the bindings")
		log.Info("Repaired quota status changed by another writer", "quota", klog.KObj(&q))
	}

	classified := classifiedOnly(bindings.Items, unclassified)
	requeue := r.state.record(req.NamespacedName, &q, ledger, count.used, waitingOn(ledger, classified))
	r.state.recordUnclassified(req.NamespacedName, len(unclassified))
	if requeue {
		if err := r.requeuer.requeue(ctx, &q, ledger, count, classified); err != nil {
			log.Error(err, "Requeueing waiting bindings failed", "quota", klog.KObj(&q))
		}
	}
	after := untilFirstExpiry(ledger, now)
	if recheck > 0 && (after == 0 || recheck < after) {
		after = recheck
	}
	return ctrl.Result{RequeueAfter: after}, false, nil
}

// read reads the quota from the apiserver when fresh; otherwise it takes the newer of the cache's copy and this
// controller's last write of it.
func (r *QuotaReconciler) read(ctx context.Context, key types.NamespacedName, fresh bool, q *quotav1alpha1.KarmadaQuota) error {
	if fresh || r.written == nil {
		return r.apiReader.Get(ctx, key, q)
	}
	if err := r.client.Get(ctx, key, q); err != nil {
		return err
	}
	*q = *r.written.Newest(q)
	return nil
}

// untilFirstExpiry is when the next reservation expires: a write that never happens produces no event, so the
// controller comes back by itself to release what it held.
func untilFirstExpiry(ledger *quota.Ledger, now time.Time) time.Duration {
	var first time.Time
	for _, res := range ledger.Reservations() {
		if first.IsZero() || res.Expires.Before(first) {
			first = res.Expires
		}
	}
	if folded := ledger.Folded(); folded.Count > 0 && (first.IsZero() || folded.Expires.Before(first)) {
		first = folded.Expires
	}
	if first.IsZero() {
		return 0
	}
	// A second past the expiry, since expiry times are whole seconds and "after" is strict.
	return first.Sub(now) + time.Second
}

// counted is what a quota's namespace uses, as the controller observes it.
type counted struct {
	used     resources.List
	clusters map[string]resources.List
	// observed is every binding of the namespace, by name.
	observed  map[string]observedBinding
	malformed []malformed
	// unclassified are the bindings a scoped quota could not read the priority class of, and does not count.
	unclassified []priorityclass.Failure
}

// observedBinding is what the controller observes of the binding holding a name.
type observedBinding struct {
	uid        types.UID
	generation int64
}

// settles reports whether a reservation for the binding write (owner, generation) no longer needs to hold quota,
// given the binding observed under the owner's name: either that write is observed, counted in used from now on,
// or another binding holds the name, so the write never committed (Karmada's detector races itself creating a
// binding, and the loser's create fails with AlreadyExists after admission) or its binding is gone. Waiting for
// the expiry would hold the reservation, a whole object count on a tight quota, for minutes.
func (b observedBinding) settles(owner types.UID, generation int64) bool {
	return b.uid != owner || b.generation >= generation
}

type malformed struct {
	name string
	err  error
}

// countUsage sums what the bindings use that the quota counts, total and per member cluster. The bindings named
// in unclassified are observed (their reservations settle) but not counted: their priority class is unknown.
func countUsage(ledger *quota.Ledger, bindings []workv1alpha2.ResourceBinding, unclassified map[string]bool) counted {
	c := counted{used: resources.List{}, clusters: map[string]resources.List{}, observed: make(map[string]observedBinding, len(bindings))}
	for i := range bindings {
		rb := &bindings[i]
		c.observed[rb.Name] = observedBinding{uid: rb.UID, generation: rb.Generation}
		if unclassified[rb.Name] {
			continue
		}
		u, err := usage.Of(rb)
		if err != nil {
			c.malformed = append(c.malformed, malformed{name: rb.Name, err: err})
			continue
		}
		charge := u.Charge(ledger.Selector)
		c.used.Add(ledger.Limited(charge.Total))
		for cluster, used := range charge.Clusters {
			limited := ledger.Limited(used)
			if len(limited) == 0 {
				continue
			}
			if c.clusters[cluster] == nil {
				c.clusters[cluster] = resources.List{}
			}
			c.clusters[cluster].Add(limited)
		}
	}
	return c
}

// waitingBindings is how many of a namespace's bindings wait on one quota, and since when the longest of them has.
type waitingBindings struct {
	count int
	// uids are the waiting bindings: one seen waiting for the first time may have been refused before the
	// headroom last grew, its condition reaching this controller after that growth (see state.record).
	uids map[types.UID]bool
	// oldest is the earliest lastTransitionTime of their Scheduled conditions: when the scheduler was first
	// refused. Karmada keeps it while its retries are refused again (the condition stays False).
	oldest time.Time
}

// waitingOn counts the bindings that wait on the ledger's quota (Ledger.WaitsOn, the requeue's rule).
func waitingOn(ledger *quota.Ledger, bindings []workv1alpha2.ResourceBinding) waitingBindings {
	w := waitingBindings{uids: map[types.UID]bool{}}
	for i := range bindings {
		rb := &bindings[i]
		if _, ok := ledger.WaitsOn(rb); !ok {
			continue
		}
		w.count++
		w.uids[rb.UID] = true
		since := meta.FindStatusCondition(rb.Status.Conditions, workv1alpha2.Scheduled).LastTransitionTime.Time
		if !since.IsZero() && (w.oldest.IsZero() || since.Before(w.oldest)) {
			w.oldest = since
		}
	}
	return w
}

// status renders the quota's new status from the ledger (reservations) and the count (usage).
func (r *QuotaReconciler) status(q *quotav1alpha1.KarmadaQuota, ledger *quota.Ledger, count counted) *quotav1alpha1.KarmadaQuotaStatus {
	status := q.Status.DeepCopy()
	status.ObservedGeneration = q.Generation
	status.Hard = q.Spec.Hard.DeepCopy()
	status.Used = ledger.RenderAll(count.used)
	ledger.WriteReservations(status)
	status.Clusters = nil
	for _, name := range sortedKeys(count.clusters) {
		status.Clusters = append(status.Clusters, quotav1alpha1.ClusterUsage{Name: name, Used: ledger.Render(count.clusters[name])})
	}
	status.Summary = summary(q.Spec.Hard, status.Used)
	r.setPriorityClassesKnown(status, q, ledger, count.unclassified)
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{
		Type:               quotav1alpha1.ConditionReady,
		Status:             metav1.ConditionTrue,
		Reason:             ReasonCalculated,
		Message:            "Usage recounted from the namespace's ResourceBindings",
		ObservedGeneration: q.Generation,
		LastTransitionTime: metav1.NewTime(r.clock.Now()),
	})
	return status
}

// markInvalid reports a quota that slipped past validation: Ready=False, an event, and nothing else written. A
// conflict is returned as such, for the caller to read again and retry.
func (r *QuotaReconciler) markInvalid(ctx context.Context, q *quotav1alpha1.KarmadaQuota, cause error) error {
	r.recorder.Event(q, corev1.EventTypeWarning, EventInvalidSpec, cause.Error())
	status := q.Status.DeepCopy()
	status.ObservedGeneration = q.Generation
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{
		Type: quotav1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonInvalidSpec,
		Message: cause.Error(), ObservedGeneration: q.Generation, LastTransitionTime: metav1.NewTime(r.clock.Now()),
	})
	if equality.Semantic.DeepEqual(q.Status, *status) {
		return nil
	}
	q.Status = *status
	return r.client.Status().Update(ctx, q)
}

// summary renders "cpu: 3/10, memory: 1Gi/20Gi" for the printer column, in the author's names.
func summary(hard, used corev1.ResourceList) string {
	names := make([]string, 0, len(hard))
	for name := range hard {
		names = append(names, string(name))
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, name := range names {
		u := used[corev1.ResourceName(name)]
		h := hard[corev1.ResourceName(name)]
		parts[i] = fmt.Sprintf("%s: %s/%s", name, u.String(), h.String())
	}
	return strings.Join(parts, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
