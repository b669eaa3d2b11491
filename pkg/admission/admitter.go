package admission

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/metrics"
	"github.com/karmada-quota/karmada-quota/pkg/quota"
	"github.com/karmada-quota/karmada-quota/pkg/quotaio"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
	"github.com/karmada-quota/karmada-quota/pkg/util/lastwrite"
)

// ReasonQuotaExceeded is the status reason of a denial. Karmada's scheduler recognises exactly a 403 with this
// reason and turns it into the binding's Scheduled=False, QuotaExceeded condition.
const ReasonQuotaExceeded metav1.StatusReason = "QuotaExceeded"

// Request is one binding write to decide.
type Request struct {
	Namespace string
	// Queue is the queue the write is batched in (Quotas.Queue): its namespace's, or one the namespaces sharing a
	// business quota share. Empty: the namespace's.
	Queue string
	Key   quota.Key
	Owner quotav1alpha1.ReservationOwner
	New   usage.Usage
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

// Admitter decides binding writes against every quota that governs their namespace: its KarmadaQuotas and the
// KarmadaBusinessQuotas selecting it. Concurrent requests for one namespace, or for namespaces sharing a business
// quota, are decided together: one read of their quotas and ledgers, each request decided in turn against the
// quotas of its namespace (quota.Decide), one compare-and-swap write of the ledger object (KarmadaQuotaLedger, or
// KarmadaBusinessQuotaLedger) per changed quota. A lost race re-reads and decides again, so contention between
// admissions, in this process or another replica, never reaches a client as an error.
//
// Ledgers are read from the informer, or from this process's own last write of one when the informer has not
// caught up with it yet (the same resourceVersion comparison Kubernetes' ResourceQuota admission makes). The
// compare-and-swap is what makes an admission exact: a ledger write lands only on the version it was decided on,
// so an admission decided on a stale copy never lands; its ledger is then read from the apiserver and the batch
// decided again. The quota's spec is fenced the same way: its webhook raises the ledger's quotaGeneration before a
// new spec is stored, so a decision on an older spec than one stored loses its write, and the quota is read from
// the apiserver for the next attempt (as it is for a ledger's first write). A refusal decided on a copy
// milliseconds old is what any reader of the quota could have answered then. Reading the informer instead of the
// apiserver saves a GET per batch, which in a namespace without concurrent writes is a GET per admission.
//
// The ledger holds only what a decision reads and writes (the usage observed, the reservations): a write of it
// costs the apiserver a fraction of a write of the quota, whose limits and per-cluster view only the controller
// writes.
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

	// written holds the ledger each write of this process returned, while it is newer than the informer's copy:
	// the namespace's next batch decides on it instead of losing a race against its own write.
	written *lastwrite.Store[*quotav1alpha1.KarmadaQuotaLedger]
	// clusterLabels tells the member clusters' labels, for the quotas' cluster groups; nil knows of none.
	clusterLabels quota.ClusterLabels
}

type pending struct {
	Request
	done chan error
	// classified is set once the request's freshness is settled (stale, or told by a read of the binding);
	// cannotCommit then says whether it is stale. An attempt the ledgers read as fresh is classified again on the
	// next attempt of its batch: the newer ledgers a lost race brings may hold the reservation that shows it stale.
	classified, cannotCommit bool
}

// NewAdmitter returns an Admitter. quotas reads a namespace's quotas and ledgers from the informers; reader reads
// them from the apiserver after a lost race, and bindings reads a binding from the apiserver when an attempt may be stale. ttl
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
		written:         lastwrite.NewStore[*quotav1alpha1.KarmadaQuotaLedger](),
	}
}

// Admit decides r. It returns nil when admitted, a 403 QuotaExceeded status error when a quota refuses, and
// another error when the quotas could not be read or written (fail closed).
func (a *Admitter) Admit(ctx context.Context, r Request) error {
	p := &pending{Request: r, done: make(chan error, 1)}
	name := r.Queue
	if name == "" {
		name = r.Namespace
	}
	a.mu.Lock()
	queue, running := a.queues[name]
	a.queues[name] = append(queue, p)
	if !running {
		go a.drain(name)
	}
	a.mu.Unlock()

	select {
	case err := <-p.done:
		return err
	case <-ctx.Done():
		return apierrors.NewTimeoutError(fmt.Sprintf("deciding quota for %s/%s: %v", r.Namespace, r.Owner.Name, ctx.Err()), 1)
	}
}

// drain decides a queue batch after batch: whatever arrived while a batch was decided forms the next one. The
// queue entry exists while a drainer runs, so at most one batch per queue is in flight here.
func (a *Admitter) drain(queue string) {
	for {
		a.mu.Lock()
		batch := a.queues[queue]
		if len(batch) == 0 {
			delete(a.queues, queue)
			a.mu.Unlock()
			return
		}
		a.queues[queue] = batch[:0:0]
		a.mu.Unlock()
		a.answer(queue, batch)
	}
}

// conflictError means a quota's ledger changed between the read and the write of one attempt: the version read was
// resourceVersion ("" for a ledger not there yet). A business quota's namespace is empty.
type conflictError struct {
	quota           types.NamespacedName
	resourceVersion string
}

func (e conflictError) Error() string {
	return fmt.Sprintf("%s %s changed since it was read", quota.Noun(quotaio.Business(e.quota)), e.quota.Name)
}

// answer answers every request of a batch: it decides and writes (decideAndWrite), again on a newer read after
// each lost race, until the writes land, or refuses the whole batch when the quotas cannot be read or written.
func (a *Admitter) answer(queue string, batch []*pending) {
	metrics.AdmissionBatchSize.Observe(float64(len(batch)))
	ctx, cancel := context.WithTimeout(context.Background(), a.timeout)
	defer cancel()
	log := klog.FromContext(ctx).WithValues("queue", queue, "batch", len(batch))

	written := quota.Written{}
	// The versions of quotas whose write lost a race: the next attempt needs a newer one.
	stale := map[types.NamespacedName]string{}
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
		results, err := a.decideAndWrite(ctx, batch, written, stale)
		var conflict conflictError
		if errors.As(err, &conflict) && ctx.Err() == nil {
			stale[conflict.quota] = conflict.resourceVersion
			continue
		}
		if err != nil {
			log.Error(err, "Quota state could not be read or written; refusing the batch", "attempt", attempt)
			for _, p := range batch {
				p.done <- apierrors.NewInternalError(fmt.Errorf("quota state of namespace %s could not be read or written, "+
					"so the write is refused (fail closed): %w", p.Namespace, err))
			}
			return
		}
		for i, p := range batch {
			p.done <- results[i]
		}
		return
	}
}

// decideAndWrite is one attempt at a batch: it reads the quotas and ledgers of the batch's namespaces, decides every
// request against those of its namespace (quota.Decide), and writes each changed ledger with its resourceVersion as
// precondition.
func (a *Admitter) decideAndWrite(ctx context.Context, batch []*pending, written quota.Written, stale map[types.NamespacedName]string) ([]error, error) {
	var namespaces []string
	for _, p := range batch {
		if !slices.Contains(namespaces, p.Namespace) {
			namespaces = append(namespaces, p.Namespace)
		}
	}
	books, err := a.readNewest(ctx, namespaces, stale)
	if err != nil {
		return nil, err
	}
	ledgers := make([]*quota.Ledger, len(books))
	for i, b := range books {
		l, err := quota.NewLedger(b.quota, quota.LedgerOf(b.ledger, b.quota))
		if err != nil {
			// A quota we cannot read could limit anything: refuse rather than guess, every write it governs.
			broken := apierrors.NewForbidden(quotaResource(b.quota), b.quota.Name, err)
			results := make([]error, len(batch))
			governed := false
			for j, p := range batch {
				if b.governs(p.Namespace) {
					results[j], governed = broken, true
				}
			}
			if governed {
				return results, nil
			}
			// It governs none of the batch: a batch of namespaces sharing a business quota read another's quotas.
			continue
		}
		l.SetClusterLabels(a.clusterLabels)
		if l.Business() {
			l.SetNamespaces(b.governs)
		}
		ledgers[i] = l
	}
	ledgers, books = withoutBroken(ledgers, books)

	writes := make([]quota.Write, len(batch))
	for i, p := range batch {
		writes[i] = quota.Write{Namespace: p.Namespace, Key: p.Key, Owner: p.Owner, New: p.New, Old: p.Old, DryRun: p.DryRun}
		if !p.classified {
			f := writes[i].Freshness(ledgers)
			p.cannotCommit = a.cannotCommit(ctx, p, f)
			p.classified = f != quota.Fresh
		}
		writes[i].CannotCommit = p.cannotCommit
	}
	// Seconds are what survive the round trip through the object; RestoreIf compares against what was written.
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
	// Before any write: a batch decided on an old spec is decided again whole, with nothing of it written.
	for j := range ledgers {
		if d.Changed[j] {
			if err := a.ensureNewestSpec(ctx, books[j]); err != nil {
				return nil, err
			}
		}
	}
	for j, l := range ledgers {
		if !d.Changed[j] {
			continue
		}
		if err := a.write(ctx, books[j], l); err != nil {
			return nil, err
		}
		metrics.ReservationsWritten.Add(float64(len(d.Undo[j])))
		written.Landed(l.ID(), d.Undo[j])
	}
	metrics.ReservationsRolledBack.Add(float64(d.RolledBack))
	return results, nil
}

// book is one quota as an attempt reads it: the quota, and its ledger object as stored (nil when there is none). A
// ledger left by a deleted quota of the same name is kept too, to be replaced by the write (quota.LedgerObject);
// decisions see it as none (quota.LedgerOf). fresh says the quota was read from the apiserver. A business quota is
// read as a KarmadaQuota (its namespace empty) and its ledger as a KarmadaQuotaLedger; selects holds the batch's
// namespaces it was read as selecting.
type book struct {
	quota   *quotav1alpha1.KarmadaQuota
	ledger  *quotav1alpha1.KarmadaQuotaLedger
	fresh   bool
	selects []string
}

// governs reports whether the book's quota limits writes in namespace.
func (b book) governs(namespace string) bool {
	if !b.quota.IsBusiness() {
		return b.quota.Namespace == namespace
	}
	return slices.Contains(b.selects, namespace)
}

// withoutBroken drops the ledgers that could not be parsed (nil), with their books: no write of the batch is
// governed by them.
func withoutBroken(ledgers []*quota.Ledger, books []book) ([]*quota.Ledger, []book) {
	keptLedgers, keptBooks := ledgers[:0], books[:0]
	for i, l := range ledgers {
		if l != nil {
			keptLedgers, keptBooks = append(keptLedgers, l), append(keptBooks, books[i])
		}
	}
	return keptLedgers, keptBooks
}

// quotaResource is the resource a quota read as a KarmadaQuota is, for errors.
func quotaResource(q *quotav1alpha1.KarmadaQuota) schema.GroupResource {
	if q.IsBusiness() {
		return quotav1alpha1.GroupVersion.WithResource("karmadabusinessquotas").GroupResource()
	}
	return quotav1alpha1.GroupVersion.WithResource("karmadaquotas").GroupResource()
}

// ensureNewestSpec makes sure a write that creates b's ledger was decided on the quota's spec as stored: the
// ledger's creator fences it at the spec it decided on, and a quota without a ledger has no fence a newer spec
// could have raised (QuotaValidator.fence). A quota most admissions leave alone (one limiting what they do not
// use) never gets a ledger, so its copy in the informer is read from the apiserver only when a write is about to
// create one, not on every batch. A newer spec is a lost race: the batch is decided again, on the quota read from
// the apiserver (readNewest).
func (a *Admitter) ensureNewestSpec(ctx context.Context, b book) error {
	if b.fresh || quota.LedgerOf(b.ledger, b.quota) != nil {
		return nil
	}
	stored, err := a.readQuota(ctx, client.ObjectKeyFromObject(b.quota))
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if err != nil || stored.UID != b.quota.UID || stored.Generation != b.quota.Generation {
		return conflictError{quota: client.ObjectKeyFromObject(b.quota)}
	}
	return nil
}

// readQuota reads a quota from the apiserver (quotaio.GetQuota).
func (a *Admitter) readQuota(ctx context.Context, key types.NamespacedName) (*quotav1alpha1.KarmadaQuota, error) {
	q, _, err := quotaio.GetQuota(ctx, a.reader, key)
	if err != nil {
		return nil, fmt.Errorf("reading quota %s: %w", key.Name, err)
	}
	return q, nil
}

// write writes l into b's ledger object: an update with the version read as precondition, or a create for a quota
// without one. Losing either race is a conflictError.
func (a *Admitter) write(ctx context.Context, b book, l *quota.Ledger) error {
	obj := quota.LedgerObject(b.quota, b.ledger)
	base := obj.ResourceVersion
	l.WriteTo(obj)
	err := quotaio.WriteLedger(ctx, a.writer, obj, base == "")
	if err != nil {
		// Someone wrote the ledger first, created it first, or deleted the one read (its quota deleted and made
		// again, or by hand): read it again.
		if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || apierrors.IsNotFound(err) {
			metrics.StatusWriteConflict(metrics.WriterWebhook)
			return conflictError{quota: l.ID(), resourceVersion: base}
		}
		return fmt.Errorf("writing the ledger of quota %s: %w", l.Name, err)
	}
	a.written.Remember(obj)
	return nil
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

// readNewest returns the quotas governing the namespaces, with their ledgers: each namespace's, sorted by name,
// then the business quotas selecting any of them, sorted by name, each once, for the batch to decide on. A ledger
// is the newer of the informer's copy and this process's last write; one whose write lost a race (in stale, with
// the version that lost) must be newer than that: the informer usually has the winner's write a moment later, and
// the apiserver is read only when it has not. A quota is the informer's copy, read from the apiserver instead when
// its ledger is fenced at a newer generation, or when it has none and an earlier attempt was about to create it
// (stale; ensureNewestSpec).
func (a *Admitter) readNewest(ctx context.Context, namespaces []string, stale map[types.NamespacedName]string) ([]book, error) {
	var own, business []book
	seen := map[types.NamespacedName]int{}
	for _, namespace := range namespaces {
		known, err := a.quotas.Read(ctx, namespace)
		if err != nil {
			return nil, err
		}
		informed, err := known.ledgersByQuota(ctx)
		if err != nil {
			return nil, err
		}
		for _, cached := range known.items {
			key := client.ObjectKeyFromObject(cached)
			if i, ok := seen[key]; ok {
				// A business quota selecting another namespace of the batch too.
				business[i].selects = append(business[i].selects, namespace)
				continue
			}
			b, ok, err := a.newest(ctx, cached, informed[key], stale)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
			if key.Namespace != "" {
				own = append(own, b)
				continue
			}
			b.selects = []string{namespace}
			seen[key] = len(business)
			business = append(business, b)
		}
	}
	sort.SliceStable(own, func(i, j int) bool {
		if own[i].quota.Namespace != own[j].quota.Namespace {
			return own[i].quota.Namespace < own[j].quota.Namespace
		}
		return own[i].quota.Name < own[j].quota.Name
	})
	sort.SliceStable(business, func(i, j int) bool { return business[i].quota.Name < business[j].quota.Name })
	return append(own, business...), nil
}

// newest is one quota as readNewest reads it (cached: the informer's copy; informed: the informer's copy of its
// ledger, nil when it has none); false when the quota is gone.
func (a *Admitter) newest(ctx context.Context, cached *quotav1alpha1.KarmadaQuota, informed *quotav1alpha1.KarmadaQuotaLedger, stale map[types.NamespacedName]string) (book, bool, error) {
	key := client.ObjectKeyFromObject(cached)
	var stored *quotav1alpha1.KarmadaQuotaLedger
	if informed != nil {
		stored = a.written.Newest(informed)
	} else if own, ok := a.written.Written(key); ok {
		// Created by this process a moment ago, not listed yet; if it has been deleted since, its write
		// finds out (NotFound) and the apiserver is read.
		stored = own
	}
	lost, wasLost := stale[key]
	if wasLost && (stored == nil || !lastwrite.Newer(stored.ResourceVersion, lost)) {
		var err error
		if stored, err = quotaio.GetLedger(ctx, a.reader, key); err != nil {
			if !apierrors.IsNotFound(err) {
				return book{}, false, fmt.Errorf("reading the ledger of quota %s: %w", key.Name, err)
			}
			a.written.Forget(key)
			stored = nil
		}
	}
	q, fresh := cached, false
	if owned := quota.LedgerOf(stored, q); (owned == nil && wasLost) || (owned != nil && owned.QuotaGeneration > q.Generation) {
		var err error
		if q, err = a.readQuota(ctx, key); err != nil {
			if apierrors.IsNotFound(err) {
				return book{}, false, nil
			}
			return book{}, false, err
		}
		fresh = true
	}
	return book{quota: q, ledger: stored, fresh: fresh}, true, nil
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
