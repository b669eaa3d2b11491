// Package controller keeps every KarmadaQuota's status true: usage recounted from the ResourceBindings the
// controller observes, per member cluster; reservations settled once their write is observed, or once it expired;
// bindings waiting for quota requeued when usage drops.
package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/metrics"
	"github.com/karmada-quota/karmada-quota/pkg/priorityclass"
	"github.com/karmada-quota/karmada-quota/pkg/quota"
	"github.com/karmada-quota/karmada-quota/pkg/quotaio"
	"github.com/karmada-quota/karmada-quota/pkg/templates"
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

// QuotaReconciler recounts one quota. Bindings come from the binding informer's store (bindings), the quota from
// the manager's cache, or the object this controller's last status write returned while the cache has not caught
// up with it. The status write carries the resourceVersion of what was read, so the reservations the webhook
// wrote a moment ago are settled or kept, never overwritten: a write decided on a stale copy loses the race, and
// the retry reads the quota from the apiserver.
type QuotaReconciler struct {
	client    client.Client
	apiReader client.Reader
	bindings  bindingReader
	clock     clock.PassiveClock
	recorder  record.EventRecorder
	deleted   *tombstones
	state     *state
	requeuer  *requeuer
	// classes reads the priority class of bindings that lack it, for scoped quotas; nil takes bindings as they are.
	classes *priorityclass.Resolver
	// written holds this controller's last status write of each quota while the cache is older, writtenBusiness of
	// each business quota, and writtenLedgers its last write of each ledger (of either kind); nil reads every
	// quota, or ledger, from the apiserver.
	written         *lastwrite.Store[*quotav1alpha1.KarmadaQuota]
	writtenBusiness *lastwrite.Store[*quotav1alpha1.KarmadaBusinessQuota]
	writtenLedgers  *lastwrite.Store[*quotav1alpha1.KarmadaQuotaLedger]
	// pacer spaces the recounts that binding changes cause; nil recounts on every change.
	pacer *pacer
	// statusPacer spaces the status writes that only move counts; nil writes every change at once.
	statusPacer *statusPacer
	// views spaces the writes of business quotas' AppliedBusinessQuotas that only move counts (their interval, with
	// the status pacer's rule); nil writes every change at once.
	views *statusPacer
	// members shows what the member clusters run next to what is charged; nil when they are not read.
	members *memberView
	// works holds what the bindings' Works ask their members to run; nil counts bindings alone (tests).
	works *workView
	// shrinks are the bindings that shrank on a member before works caught up with their Work there (shrinks.go).
	shrinks *shrinks
	// leftBehind are the Works recounts found on clusters their binding had left (leftbehind.go); nil knows of none.
	leftBehind *leftBehind
	// holdings reads what bindings' objects hold on members (held.go); nil counts none.
	holdings *templates.Reader[usage.Held]
	// evictionTimeout is when an eviction naming no grace period ends (Options.EvictionTimeout).
	evictionTimeout time.Duration
	// firstPass tells when the recount of every quota the leader found on taking the lead is over; nil counts nothing
	// (tests).
	firstPass *firstPass
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
			if err == nil {
				r.firstPass.recounted(req.NamespacedName)
			}
			return result, err
		}
		metrics.StatusWriteConflict(metrics.WriterController)
	}
	return ctrl.Result{Requeue: true}, nil
}

// reconcileOnce reads the quota (from the apiserver when fresh) and its namespace's bindings, recounts, renders
// the status, writes it when it changed, and then reports and requeues what the recount found; conflict reports a
// lost compare-and-swap.
func (r *QuotaReconciler) reconcileOnce(ctx context.Context, req ctrl.Request, fresh bool) (ctrl.Result, bool, error) {
	key := req.NamespacedName
	s, err := r.read(ctx, key, fresh)
	if err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(key)
			return ctrl.Result{}, false, nil
		}
		return ctrl.Result{}, false, err
	}
	q := s.quota
	stored, err := r.readLedger(ctx, key, fresh)
	if err != nil {
		return ctrl.Result{}, false, err
	}
	ledger, err := parseLedger(ctx, q, stored)
	if err != nil {
		return failed(r.markInvalid(ctx, s, err))
	}
	if ledger.Fenced() && !fresh {
		// The ledger knows a newer spec than the cache: recount that one, read from the apiserver.
		return r.reconcileOnce(ctx, req, true)
	}
	joined, err := r.memberClustersFor(ctx, ledger)
	if err != nil {
		return ctrl.Result{}, false, err
	}
	ledger.SetClusterLabels(joined.labelsOf())
	if r.works != nil && !r.works.synced() {
		// Counting without the Works would charge less than members run. The view syncs once, right after the
		// leader starts: the recount waits for it in flight rather than leaving the queue looking empty.
		if !toolscache.WaitForCacheSync(ctx.Done(), r.works.synced) {
			return ctrl.Result{}, false, fmt.Errorf("the view of the Works never synced: %w", context.Cause(ctx))
		}
	}
	namespaces, err := r.governed(ctx, s, ledger)
	if err != nil {
		if invalid := (invalidSelector{}); errors.As(err, &invalid) {
			return failed(r.markInvalid(ctx, s, err))
		}
		return ctrl.Result{}, false, err
	}
	bindings, byNamespace, unclassified, err := r.readBindings(ctx, namespaces, ledger)
	if err != nil {
		return ctrl.Result{}, false, err
	}
	var works []quota.ObservedWork
	if r.works != nil {
		for i, namespace := range namespaces {
			observed, err := r.works.observe(ctx, namespace, byNamespace[i])
			if err != nil {
				return ctrl.Result{}, false, err
			}
			works = append(works, observed...)
		}
		if works, err = r.freshWorks(ctx, bindings, works); err != nil {
			return ctrl.Result{}, false, err
		}
	}

	held, err := r.holdingsOf(ctx, ledger, bindings)
	if err != nil {
		return ctrl.Result{}, false, err
	}

	now := r.clock.Now()
	observation := quota.Observation{
		Bindings: bindings, Unclassified: unclassifiedNames(unclassified), Works: works, Held: held,
		EvictionTimeout: r.evictionTimeout, Gone: r.deleted.has, Now: now,
	}
	// Asked of every Work of a recount, under a lock: only while some Work is known left behind, which is rare.
	if r.leftBehind != nil && r.leftBehind.any() {
		observation.LeftBehind = func(w *quota.ObservedWork) bool {
			if !r.leftBehind.has(w) {
				return false
			}
			ctrl.LoggerFrom(ctx).V(2).Info("Work left behind on a cluster its binding is back on: charged what the binding places there until Karmada rewrites it",
				"work", klog.KRef(w.Namespace, w.Name), "generation", w.Generation, "binding", klog.KRef(w.BindingNamespace, w.Binding))
			return true
		}
	}
	tally := quota.Recount(ledger, observation)
	write := ledgerWrite(q, stored, ledger, tally)
	if stored != nil && write != nil {
		// The ledger was read before the bindings and Works, from a cache that is not ordered with theirs: a
		// reservation the webhook wrote since may be for a write this recount already counts, and the settle (a
		// patch that keeps what it did not read) would list it beside that count, charging the admission twice
		// until the next recount. Read again now, the ledger holds every reservation of every write observed (the
		// webhook reserves before it admits the write), so the recount settles on that one. Only a recount about
		// to write pays the read.
		current, err := r.readLedger(ctx, key, true)
		if err != nil {
			return ctrl.Result{}, false, err
		}
		if current == nil || current.ResourceVersion != stored.ResourceVersion {
			reread, err := parseLedger(ctx, q, current)
			if err != nil {
				return failed(r.markInvalid(ctx, s, err))
			}
			if reread.Fenced() {
				// A newer spec of the quota was admitted on since it was read: recount that one.
				return ctrl.Result{}, true, nil
			}
			reread.CarryOver(ledger)
			stored, ledger = current, reread
			tally = quota.Recount(ledger, observation)
			write = ledgerWrite(q, stored, ledger, tally)
		}
	}
	if r.leftBehind != nil && len(tally.LeftBehind) > 0 {
		r.leftBehind.note(tally.LeftBehind)
	}
	for _, bad := range tally.Malformed {
		ctrl.LoggerFrom(ctx).V(2).Info("Binding ignored: no quota can count it", "binding", klog.KRef(bad.Namespace, bad.Binding), "err", bad.Err)
	}
	var members memberReport
	if s.business == nil {
		// Members are read per namespace; a business quota's view of them is its namespaces' quotas'.
		members = r.members.observe(q, ledger, tally.Clusters, now)
	}
	status := renderStatus(q, ledger, tally, unclassified, members, joined, now)
	// A business quota's adds each namespace's part: rendered once, for its status and for the metrics.
	var parts []quotav1alpha1.NamespaceUsage
	if s.business != nil {
		parts = namespaceParts(namespaces, ledger, tally)
	}

	// A quota without a ledger that reserves nothing gets none: admission decides on its status then
	// (quota.NewLedger), and the first admission that reserves creates it. A new quota's first recount (a cold
	// start's) writes once instead of twice.
	ledgerless := stored == nil && !ledger.Reserves()
	if !ledgerless {
		// The ledger first: it settles the reservations and records used in one write, and only then may the
		// quota's status stop listing reservations an earlier release's webhook wrote there (they are in the
		// ledger now).
		written, err := r.writeLedger(ctx, q, stored, write)
		if err != nil {
			return failed(err)
		}
		if written != nil {
			// A settle keeps what admissions reserved since the read (quotaio.SettleLedger): this recount did not
			// see those, and their bindings' events recount them, or, for a write that never lands, their expiry.
			tally.UntilExpiry = sooner(tally.UntilExpiry, quota.UntilFirstExpiry(written, now))
		}
	}
	// Settled once the ledger write landed, whatever becomes of the status write: a retry finds nothing to settle.
	r.announceSettled(s.object(), tally)
	drifted := r.state.drifted(key, q.UID, &q.Status)
	// A status that only moves its counts waits for the status interval (statusPacer) when admission decides on
	// the ledger just written; without a ledger, admission decides on the status, which is written at once. Status
	// someone else changed is repaired at once.
	var statusWait, viewWait time.Duration
	if !drifted && !ledgerless {
		statusWait = r.statusPacer.wait(key, &q.Status, status)
	}
	if statusWait == 0 {
		wrote, err := r.writeStatus(ctx, s, status, parts)
		if err != nil {
			return failed(err)
		}
		if wrote {
			r.statusPacer.wrote(key)
		}
		r.announce(ctx, s.object(), members, drifted)
		if s.business != nil {
			if viewWait, err = r.applyViews(ctx, s.business, namespaces); err != nil {
				return ctrl.Result{}, false, err
			}
		}
	}
	// The metrics show the recount, whether its status is written yet or not.
	requeue := r.state.record(key, q, status, parts, tally.Headroom, tally.MemberRoom, tally.Waiting)
	r.state.recordUnclassified(key, len(unclassified))
	if requeue {
		if err := r.requeuer.requeue(ctx, s.object(), tally.Headroom, tally.MemberRoom, tally.Waiting.Bindings); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Requeueing waiting bindings failed", "quota", klog.KObj(q))
		}
	}
	return ctrl.Result{RequeueAfter: sooner(sooner(sooner(tally.UntilExpiry, members.recheck), statusWait), viewWait)}, false, nil
}

// failed is a reconcile's outcome for the error of a write: a lost compare-and-swap is a conflict, read again and
// retried, not an error.
func failed(err error) (ctrl.Result, bool, error) {
	if apierrors.IsConflict(err) {
		return ctrl.Result{}, true, nil
	}
	return ctrl.Result{}, false, err
}

// forget drops what the controller keeps of a deleted quota.
func (r *QuotaReconciler) forget(key types.NamespacedName) {
	r.state.forget(key)
	r.pacer.forget(key)
	r.statusPacer.forget(key)
	r.members.forget(key)
	if r.written != nil {
		r.written.Forget(key)
	}
	if r.writtenLedgers != nil {
		r.writtenLedgers.Forget(key)
	}
	if r.writtenBusiness != nil {
		r.writtenBusiness.Forget(key)
	}
	r.views.forget(key)
}

// readBindings lists the bindings of the namespaces the quota governs (all of them, and each namespace's, in the
// order of namespaces) and, for a scoped quota, reads the priority class of those that lack it (classify),
// returning those it could not read.
func (r *QuotaReconciler) readBindings(ctx context.Context, namespaces []string, ledger *quota.Ledger) ([]workv1alpha2.ResourceBinding, [][]workv1alpha2.ResourceBinding, []priorityclass.Failure, error) {
	// Read-only: the recount never changes a binding and the requeuer copies one before patching it, so what the
	// bindings share with the cache (their requirements, clusters) is not deep-copied, 10,000 of them per recount.
	byNamespace := make([][]workv1alpha2.ResourceBinding, len(namespaces))
	for i, namespace := range namespaces {
		bindings, err := r.bindings.InNamespace(namespace)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("listing bindings: %w", err)
		}
		byNamespace[i] = bindings
	}
	var all []workv1alpha2.ResourceBinding
	switch len(namespaces) {
	case 0: // a business quota selecting no namespace
	case 1:
		all = byNamespace[0]
	default:
		all = slices.Concat(byNamespace...)
		// Each namespace's part points into the whole, so that what classify fills in is seen by both.
		at := 0
		for i := range byNamespace {
			byNamespace[i] = all[at : at+len(byNamespace[i])]
			at += len(byNamespace[i])
		}
	}
	unclassified, err := r.classify(ctx, ledger, all)
	if err != nil {
		return nil, nil, nil, err
	}
	return all, byNamespace, unclassified, nil
}

// writeStatus writes status when it differs from the quota's as read, and remembers the write for the next read;
// a business quota's with its namespaces' parts (namespaceParts). It reports whether it wrote.
func (r *QuotaReconciler) writeStatus(ctx context.Context, s subject, status *quotav1alpha1.KarmadaQuotaStatus, parts []quotav1alpha1.NamespaceUsage) (bool, error) {
	if b := s.business; b != nil {
		full := &quotav1alpha1.KarmadaBusinessQuotaStatus{KarmadaQuotaStatus: *status, NamespaceCount: int32(len(parts)), Namespaces: parts}
		if equality.Semantic.DeepEqual(b.Status, *full) {
			return false, nil
		}
		b.Status = *full
		if err := r.client.Status().Update(ctx, b); err != nil {
			return false, fmt.Errorf("writing status: %w", err)
		}
		if r.writtenBusiness != nil {
			r.writtenBusiness.Remember(b)
		}
		return true, nil
	}
	q := s.quota
	if equality.Semantic.DeepEqual(q.Status, *status) {
		return false, nil
	}
	q.Status = *status
	if err := r.client.Status().Update(ctx, q); err != nil {
		return false, fmt.Errorf("writing status: %w", err)
	}
	if r.written != nil {
		r.written.Remember(q)
	}
	return true, nil
}

// readLedger reads the quota's ledger object: from the apiserver when fresh, otherwise the newer of the cache's copy
// and this controller's last write of it. Nil when there is none.
func (r *QuotaReconciler) readLedger(ctx context.Context, key types.NamespacedName, fresh bool) (*quotav1alpha1.KarmadaQuotaLedger, error) {
	if fresh || r.writtenLedgers == nil {
		stored, err := quotaio.GetLedger(ctx, r.apiReader, key)
		if err != nil {
			return nil, client.IgnoreNotFound(err)
		}
		return stored, nil
	}
	// One this controller created and the cache has not seen yet is created again, refused as existing, and read
	// from the apiserver on the retry: rare, and it never takes a deleted ledger for a current one.
	stored, err := quotaio.GetLedger(ctx, r.client, key)
	if err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return r.writtenLedgers.Newest(stored), nil
}

// writeLedger writes what the recount settled into the quota's ledger object (obj, from ledgerWrite; nil when it
// did not change): the reservations left, and the usage observed; it returns the object as stored (nil when it
// wrote nothing). It creates the ledger of a quota without one that holds reservations (those an earlier release's
// webhook listed in the quota's status), and replaces one a deleted quota of the same name left, so that the
// webhook decides on the usage this recount observed. A write that only settles is a patch that keeps what the
// webhook reserved since the read (quotaio.SettleLedger); any other carries the resourceVersion read, and loses the
// race to a reservation added since, and the retry reads again.
func (r *QuotaReconciler) writeLedger(ctx context.Context, q *quotav1alpha1.KarmadaQuota, stored, obj *quotav1alpha1.KarmadaQuotaLedger) (*quotav1alpha1.KarmadaQuotaLedger, error) {
	if obj == nil {
		return nil, nil
	}
	var err error
	settled := false
	if stored != nil {
		settled, err = quotaio.SettleLedger(ctx, r.client, stored, obj)
	}
	if !settled {
		err = quotaio.WriteLedger(ctx, r.client, obj, stored == nil)
	}
	// Created by the webhook first, or deleted since it was read: read it again.
	if apierrors.IsAlreadyExists(err) || apierrors.IsNotFound(err) {
		err = apierrors.NewConflict(quotav1alpha1.GroupVersion.WithResource("karmadaquotaledgers").GroupResource(), q.Name, err)
	}
	if err != nil {
		return nil, fmt.Errorf("writing the ledger: %w", err)
	}
	if r.writtenLedgers != nil {
		r.writtenLedgers.Remember(obj)
	}
	return obj, nil
}

// ledgerWrite is the ledger object a recount writes: stored with the reservations left and the usage observed;
// nil when that is stored already.
func ledgerWrite(q *quotav1alpha1.KarmadaQuota, stored *quotav1alpha1.KarmadaQuotaLedger, ledger *quota.Ledger, tally quota.Tally) *quotav1alpha1.KarmadaQuotaLedger {
	obj := quota.LedgerObject(q, stored)
	ledger.WriteTo(obj)
	ledger.WriteObserved(obj, tally.Used, tally.Clusters)
	if stored != nil && equality.Semantic.DeepEqual(stored, obj) {
		return nil
	}
	return obj
}

// parseLedger parses the quota and its ledger object for a recount. One whose observed usage cannot be read is
// parsed without it: the recount counts that usage anew and writes it in place of what could not be read.
func parseLedger(ctx context.Context, q *quotav1alpha1.KarmadaQuota, stored *quotav1alpha1.KarmadaQuotaLedger) (*quota.Ledger, error) {
	ledger, err := quota.NewLedger(q, quota.LedgerOf(stored, q))
	if errors.Is(err, quota.ErrObservedMalformed) {
		ctrl.LoggerFrom(ctx).Info("Recounting a quota whose ledger's observed usage cannot be read", "quota", klog.KObj(q), "reason", err.Error())
		withoutObserved := *stored
		withoutObserved.Observed = nil
		ledger, err = quota.NewLedger(q, quota.LedgerOf(&withoutObserved, q))
	}
	return ledger, err
}

// announceSettled counts and tells the reservations a recount settled, once its ledger write landed: a lost write
// is retried, and would count them twice.
func (r *QuotaReconciler) announceSettled(q client.Object, tally quota.Tally) {
	metrics.ReservationsExpired.Add(float64(tally.Expired))
	metrics.ReservationsSettled.Add(float64(len(tally.Settled) - tally.Expired))
	if tally.Expired > 0 {
		r.recorder.Eventf(q, corev1.EventTypeNormal, EventReservationExpired,
			"%d reservation(s) expired without their binding write being observed", tally.Expired)
	}
	if folded := tally.FoldedExpired; folded.Count > 0 {
		metrics.ReservationsExpired.Add(float64(folded.Count))
		r.recorder.Eventf(q, corev1.EventTypeNormal, EventReservationExpired,
			"%d folded reservation(s) expired: each of their writes is counted in used or never happened", folded.Count)
	}
}

// announce tells what a recount found, once its status write landed: a lost write is retried, and would tell it
// twice.
func (r *QuotaReconciler) announce(ctx context.Context, q client.Object, members memberReport, drifted bool) {
	if len(members.newlyOver) > 0 {
		r.recorder.Event(q, corev1.EventTypeWarning, EventMembersRunMore,
			"Member clusters run more than the quota charges there: "+describe(members.newlyOver))
	}
	if drifted {
		metrics.DriftRepaired.Inc()
		r.recorder.Event(q, corev1.EventTypeWarning, EventDriftRepaired, "Status had been changed by another writer; recounted from the bindings")
		ctrl.LoggerFrom(ctx).Info("Repaired quota status changed by another writer", "quota", klog.KObj(q))
	}
}

// sooner is the earlier of two waits, 0 being none.
func sooner(a, b time.Duration) time.Duration {
	if b > 0 && (a == 0 || b < a) {
		return b
	}
	return a
}

// read reads the quota from the apiserver when fresh; otherwise it takes the newer of the cache's copy and this
// controller's last write of it.
func (r *QuotaReconciler) read(ctx context.Context, key types.NamespacedName, fresh bool) (subject, error) {
	if fresh || r.written == nil {
		q, b, err := quotaio.GetQuota(ctx, r.apiReader, key)
		return subject{quota: q, business: b}, err
	}
	if quotaio.Business(key) {
		var b quotav1alpha1.KarmadaBusinessQuota
		if err := r.client.Get(ctx, key, &b); err != nil {
			return subject{}, err
		}
		newest := r.writtenBusiness.Newest(&b)
		return subject{quota: newest.AsKarmadaQuota(), business: newest}, nil
	}
	var q quotav1alpha1.KarmadaQuota
	if err := r.client.Get(ctx, key, &q); err != nil {
		return subject{}, err
	}
	return subject{quota: r.written.Newest(&q)}, nil
}

// markInvalid reports a quota that slipped past validation: Ready=False, an event, and nothing else written. A
// conflict is returned as such, for the caller to read again and retry.
func (r *QuotaReconciler) markInvalid(ctx context.Context, s subject, cause error) error {
	q := s.quota
	r.recorder.Event(s.object(), corev1.EventTypeWarning, EventInvalidSpec, cause.Error())
	status := q.Status.DeepCopy()
	status.ObservedGeneration = q.Generation
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{
		Type: quotav1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonInvalidSpec,
		Message: cause.Error(), ObservedGeneration: q.Generation, LastTransitionTime: metav1.NewTime(r.clock.Now()),
	})
	if equality.Semantic.DeepEqual(q.Status, *status) {
		return nil
	}
	if s.business == nil {
		q.Status = *status
		return r.client.Status().Update(ctx, q)
	}
	s.business.Status.KarmadaQuotaStatus = *status
	return r.client.Status().Update(ctx, s.business)
}
