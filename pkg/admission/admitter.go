package admission

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/metrics"
	"github.com/karmada-quota/karmada-quota/pkg/quota"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
	"github.com/karmada-quota/karmada-quota/pkg/util/lastwrite"
)

// ReasonQuotaExceeded is the status reason of a denial. Karmada's scheduler recognises exactly a 403 with this
// reason and turns it into the binding's Scheduled=False, QuotaExceeded condition.
const ReasonQuotaExceeded metav1.StatusReason = "QuotaExceeded"

// Request is one binding write to decide.
type Request struct {
	Namespace string
	Key       quota.Key
	Owner     quotav1alpha1.ReservationOwner
	New       usage.Usage
	// Old is nil for a create.
	Old    *usage.Usage
	DryRun bool
	// BaseResourceVersion is the resourceVersion of the old object an update was built on: if the binding has
	// moved past it, the attempt cannot commit (quota.Write.Freshness).
	BaseResourceVersion string
	// NotSteered says why karmada-scheduler does not divide this binding's replicas by the room member clusters
	// have (placementNotSteered); empty when it does. A refusal by a cluster or group limit says it.
	NotSteered string
}

// Admitter decides binding writes against every quota of their namespace. Concurrent requests for one namespace
// are decided together: one read of the namespace's quotas, each request decided in turn (quota.Decide), one
// compare-and-swap status write per changed quota. A lost race re-reads and decides again, so contention between
// admissions, in this process or another replica, never reaches a client as an error.
//
// The quotas are read from the informer, or from this process's own last write of a quota when the informer has
// not caught up with it yet (the same resourceVersion comparison Kubernetes' ResourceQuota admission makes). The
// compare-and-swap is what makes an admission exact: a status write lands only on the version it was decided
// on, so an admission decided on a stale copy never lands; its quota is then read from the apiserver and the
// batch decided again. A refusal decided on a copy milliseconds old is what any reader of the quota could have
// answered then. Reading the informer instead of the apiserver saves a GET per batch, which in a namespace
// without concurrent writes is a GET per admission.
type Admitter struct {
	quotas   *QuotaReader
	reader   client.Reader
	bindings client.Reader
	writer   client.Client
	clock    clock.PassiveClock
	ttl      time.Duration
	timeout  time.Duration
	// maxReservations is the bound of a quota's reservation list (quota.MaxReservations unless lowered).
	maxReservations int

	mu     sync.Mutex
	queues map[string][]*pending

	// written holds the object each status write of this process returned, while it is newer than the
	// informer's copy: the namespace's next batch decides on it instead of losing a race against its own write.
	written *lastwrite.Store[*quotav1alpha1.KarmadaQuota]
	// foldingChecked is set once a dry-run write proved that the stored schema keeps status.foldedReservations.
	foldingChecked atomic.Bool
	// clusterLabels tells the member clusters' labels, for the quotas' cluster groups; nil knows of none.
	clusterLabels quota.ClusterLabels
}

type pending struct {
	Request
	done chan error
	// classified is set once the request's freshness is known; cannotCommit then says whether it is stale.
	classified, cannotCommit bool
}

// NewAdmitter returns an Admitter. quotas reads a namespace's quotas from the informer; reader reads them from the
// apiserver after a lost race, and bindings reads a binding from the apiserver when an attempt may be stale. ttl
// is how long a reservation outlives a write that never happened; timeout bounds one batch's decision;
// maxReservations bounds each quota's reservation list (0: quota.MaxReservations).
func NewAdmitter(quotas *QuotaReader, reader, bindings client.Reader, writer client.Client, clk clock.PassiveClock, ttl, timeout time.Duration, maxReservations int) *Admitter {
	if maxReservations <= 0 || maxReservations > quota.MaxReservations {
		maxReservations = quota.MaxReservations
	}
	return &Admitter{
		quotas: quotas, reader: reader, bindings: bindings, writer: writer, clock: clk, ttl: ttl, timeout: timeout,
		maxReservations: maxReservations,
		queues:          map[string][]*pending{},
		written:         lastwrite.NewStore[*quotav1alpha1.KarmadaQuota](),
	}
}

// Admit decides r. It returns nil when admitted, a 403 QuotaExceeded status error when a quota refuses, and
// another error when the quotas could not be read or written (fail closed).
func (a *Admitter) Admit(ctx context.Context, r Request) error {
	p := &pending{Request: r, done: make(chan error, 1)}
	a.mu.Lock()
	queue, running := a.queues[r.Namespace]
	a.queues[r.Namespace] = append(queue, p)
	if !running {
		go a.drain(r.Namespace)
	}
	a.mu.Unlock()

	select {
	case err := <-p.done:
		return err
	case <-ctx.Done():
		return apierrors.NewTimeoutError(fmt.Sprintf("deciding quota for %s/%s: %v", r.Namespace, r.Owner.Name, ctx.Err()), 1)
	}
}

// drain decides the namespace's queue batch after batch: whatever arrived while a batch was decided forms the
// next one. The queue entry exists while a drainer runs, so at most one batch per namespace is in flight here.
func (a *Admitter) drain(namespace string) {
	for {
		a.mu.Lock()
		batch := a.queues[namespace]
		if len(batch) == 0 {
			delete(a.queues, namespace)
			a.mu.Unlock()
			return
		}
		a.queues[namespace] = batch[:0:0]
		a.mu.Unlock()
		a.answer(namespace, batch)
	}
}

// conflictError means a quota changed between the read and the write of one attempt: the version read was
// resourceVersion.
type conflictError struct{ quota, resourceVersion string }

func (e conflictError) Error() string {
	return fmt.Sprintf("quota %s changed since it was read", e.quota)
}

// answer answers every request of a batch: it decides and writes (decideAndWrite), again on a newer read after
// each lost race, until the writes land, or refuses the whole batch when the quotas cannot be read or written.
func (a *Admitter) answer(namespace string, batch []*pending) {
	metrics.AdmissionBatchSize.Observe(float64(len(batch)))
	ctx, cancel := context.WithTimeout(context.Background(), a.timeout)
	defer cancel()
	log := klog.FromContext(ctx).WithValues("namespace", namespace, "batch", len(batch))

	written := quota.Written{}
	// The versions of quotas whose write lost a race: the next attempt needs a newer one.
	stale := map[string]string{}
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			metrics.AdmissionRetries.Inc()
			// A short random pause lets the writer that won the race finish, and its write reach the informer,
			// before we read again; it also keeps replicas racing for one quota from retrying in step.
			backoff := time.Duration(rand.Int64N(int64(min(attempt, 10)) * int64(5*time.Millisecond)))
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
			}
		}
		results, err := a.decideAndWrite(ctx, namespace, batch, written, stale)
		var conflict conflictError
		if errors.As(err, &conflict) && ctx.Err() == nil {
			stale[conflict.quota] = conflict.resourceVersion
			continue
		}
		if err != nil {
			log.Error(err, "Quota state could not be read or written; refusing the batch", "attempt", attempt)
			failure := apierrors.NewInternalError(fmt.Errorf("quota state of namespace %s could not be read or written, "+
				"so the write is refused (fail closed): %w", namespace, err))
			for _, p := range batch {
				p.done <- failure
			}
			return
		}
		for i, p := range batch {
			p.done <- results[i]
		}
		return
	}
}

// decideAndWrite is one attempt at a batch: it reads the namespace's quotas, decides every request (quota.Decide),
// and writes each changed quota with its resourceVersion as precondition.
func (a *Admitter) decideAndWrite(ctx context.Context, namespace string, batch []*pending, written quota.Written, stale map[string]string) ([]error, error) {
	list, err := a.readNewest(ctx, namespace, stale)
	if err != nil {
		return nil, err
	}
	ledgers := make([]*quota.Ledger, len(list))
	for i := range list {
		l, err := quota.NewLedger(list[i])
		if err != nil {
			// A quota we cannot read could limit anything: refuse rather than guess.
			broken := apierrors.NewForbidden(quotav1alpha1.GroupVersion.WithResource("karmadaquotas").GroupResource(),
				list[i].Name, err)
			results := make([]error, len(batch))
			for j := range results {
				results[j] = broken
			}
			return results, nil
		}
		l.SetClusterLabels(a.clusterLabels)
		ledgers[i] = l
	}

	writes := make([]quota.Write, len(batch))
	for i, p := range batch {
		writes[i] = quota.Write{Key: p.Key, Owner: p.Owner, New: p.New, Old: p.Old, DryRun: p.DryRun}
		if !p.classified {
			p.cannotCommit = a.cannotCommit(ctx, p, writes[i].Freshness(ledgers))
			p.classified = true
		}
		writes[i].CannotCommit = p.cannotCommit
	}
	// Seconds are what survive the round trip through status; RestoreIf compares against what was written.
	d := quota.Decide(ledgers, writes, written, quota.Policy{
		Expires:         a.clock.Now().Add(a.ttl).Truncate(time.Second),
		MaxReservations: a.maxReservations,
	})

	results := make([]error, len(batch))
	for i := range batch {
		if len(d.Denials[i]) > 0 {
			results[i] = quotaExceeded(d.Denials[i], batch[i].NotSteered)
		}
	}
	for j, l := range ledgers {
		if !d.Changed[j] {
			continue
		}
		obj := list[j]
		base := obj.ResourceVersion
		l.WriteReservations(&obj.Status)
		if err := a.checkFolding(ctx, obj); err != nil {
			return nil, err
		}
		if err := a.writer.Status().Update(ctx, obj); err != nil {
			if apierrors.IsConflict(err) {
				metrics.StatusWriteConflict(metrics.WriterWebhook)
				return nil, conflictError{quota: l.Name, resourceVersion: base}
			}
			return nil, fmt.Errorf("writing the status of quota %s: %w", l.Name, err)
		}
		a.written.Remember(obj)
		metrics.ReservationsWritten.Add(float64(len(d.Undo[j])))
		written.Landed(l.Name, d.Undo[j])
	}
	metrics.ReservationsRolledBack.Add(float64(d.RolledBack))
	return results, nil
}

// cannotCommit settles a request's freshness: an update recognised as stale from the quotas alone, or, when they
// leave it open, read from the apiserver. The apiserver makes its first attempt at an update on its watch cache's
// copy of the binding, which can be a generation behind: such an attempt cannot commit, and reserving for it would
// charge an earlier key with a stale delta until the controller settles it. If the binding cannot be read, the
// attempt is decided as any other (reserving is the conservative side).
func (a *Admitter) cannotCommit(ctx context.Context, p *pending, f quota.Freshness) bool {
	switch f {
	case quota.Stale:
		return true
	case quota.Ambiguous:
		if a.bindings == nil || p.BaseResourceVersion == "" {
			return false
		}
		var current workv1alpha2.ResourceBinding
		if err := a.bindings.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: p.Owner.Name}, &current); err != nil {
			return false
		}
		return current.UID == p.Key.UID && current.ResourceVersion != p.BaseResourceVersion
	}
	return false
}

// readNewest returns copies of the namespace's quotas, sorted by name, for the batch to change and write: the
// newer of the informer's copy and this process's last write. A quota whose write lost a race (in stale, with the
// version that lost) must be newer than that: the informer usually has the winner's write a moment later, and the
// apiserver is read only when it has not.
func (a *Admitter) readNewest(ctx context.Context, namespace string, stale map[string]string) ([]*quotav1alpha1.KarmadaQuota, error) {
	known, err := a.quotas.Read(ctx, namespace)
	if err != nil {
		return nil, err
	}
	cached := known.list.Items
	out := make([]*quotav1alpha1.KarmadaQuota, 0, len(cached))
	for i := range cached {
		q := a.written.Newest(&cached[i])
		if lost, ok := stale[q.Name]; ok && !lastwrite.Newer(q.ResourceVersion, lost) {
			q = &quotav1alpha1.KarmadaQuota{}
			if err := a.reader.Get(ctx, client.ObjectKeyFromObject(&cached[i]), q); err != nil {
				if apierrors.IsNotFound(err) {
					continue
				}
				return nil, fmt.Errorf("reading quota %s: %w", cached[i].Name, err)
			}
		}
		out = append(out, q)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// checkFolding makes sure, once per process, that the apiserver keeps status.foldedReservations before the first
// status that carries it is written: a KarmadaQuota CRD older than this webhook would prune the field, and with it
// the charge of every folded reservation. A dry-run write shows what would be stored without storing it.
func (a *Admitter) checkFolding(ctx context.Context, obj *quotav1alpha1.KarmadaQuota) error {
	if obj.Status.FoldedReservations == nil || a.foldingChecked.Load() {
		return nil
	}
	probe := obj.DeepCopy()
	if err := a.writer.Status().Update(ctx, probe, client.DryRunAll); err != nil {
		if apierrors.IsConflict(err) {
			return conflictError{quota: obj.Name, resourceVersion: obj.ResourceVersion}
		}
		return fmt.Errorf("checking that quota %s can hold folded reservations: %w", obj.Name, err)
	}
	if probe.Status.FoldedReservations == nil {
		return fmt.Errorf("the KarmadaQuota CRD in the apiserver drops status.foldedReservations: apply the CRD of this " +
			"release, or the reservations of a quota past its bound cannot be kept")
	}
	a.foldingChecked.Store(true)
	return nil
}

// quotaExceeded renders the denials of every refusing quota as one 403 the scheduler recognises. A refusal by a
// cluster or group limit of a placement the scheduler does not steer says why it does not (notSteered): waiting
// will not move the replicas elsewhere, changing the placement will.
func quotaExceeded(denials []*quota.Denial, notSteered string) error {
	msgs := make([]string, len(denials))
	onMembers := false
	for i, d := range denials {
		msgs[i] = d.Error()
		for _, e := range d.Exceeded {
			onMembers = onMembers || e.Where != ""
		}
	}
	msg := strings.Join(msgs, "; ")
	if onMembers && notSteered != "" {
		msg += "; " + notSteered
	}
	return forbidden(ReasonQuotaExceeded, msg)
}

// forbidden is a refusal as the apiserver relays it to the client: a 403 with a reason clients act on.
func forbidden(reason metav1.StatusReason, message string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusForbidden,
		Reason:  reason,
		Message: message,
	}}
}
