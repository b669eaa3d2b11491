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
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/metrics"
	"github.com/karmada-quota/karmada-quota/pkg/quota"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
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
}

// Admitter decides binding writes against every quota of their namespace. Concurrent requests for one namespace
// are decided together: one fresh read of the namespace's quotas, each request decided in turn, one
// compare-and-swap status write per changed quota. A lost race re-reads and decides again, so contention between
// admissions, in this process or another replica, never reaches a client as an error.
//
// Which quotas a namespace has comes from an informer; each quota's state is then read with a GET, which the
// apiserver serves from etcd. A consistent LIST would be exact for the set too, but the apiserver serves it from
// its watch cache once that has caught up with etcd, which under write load on other resources waits for a
// progress notification: measured at 63 ms per LIST against 3 ms per GET. The informer only lags for a quota
// created milliseconds ago, the same window Kubernetes' ResourceQuota admission has.
type Admitter struct {
	quotas  client.Reader
	reader  client.Reader
	writer  client.Client
	clock   clock.PassiveClock
	ttl     time.Duration
	timeout time.Duration

	mu     sync.Mutex
	queues map[string][]*pending
}

type pending struct {
	Request
	done chan error
}

// NewAdmitter returns an Admitter. quotas lists a namespace's quotas (an informer-backed cache); reader must read
// from the apiserver, not a cache: a decision has to see the reservations other replicas wrote a moment ago. ttl
// is how long a reservation outlives a write that never happened; timeout bounds one batch's decision.
func NewAdmitter(quotas, reader client.Reader, writer client.Client, clk clock.PassiveClock, ttl, timeout time.Duration) *Admitter {
	return &Admitter{quotas: quotas, reader: reader, writer: writer, clock: clk, ttl: ttl, timeout: timeout, queues: map[string][]*pending{}}
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
		a.decide(namespace, batch)
	}
}

// errConflict means a quota changed between the read and the write of one attempt.
var errConflict = errors.New("quota status changed since it was read")

// committed remembers, per quota and reservation key, what this batch wrote, so that a request refused on a
// later attempt can be rolled back in the quotas that already admitted it.
type committed map[string]map[quota.Key]undo

type undo struct {
	prior *quota.Reservation // the reservation before this batch first wrote the key; nil if there was none
	wrote quota.Reservation  // what this batch last wrote
}

func (a *Admitter) decide(namespace string, batch []*pending) {
	metrics.AdmissionBatchSize.Observe(float64(len(batch)))
	ctx, cancel := context.WithTimeout(context.Background(), a.timeout)
	defer cancel()
	log := klog.FromContext(ctx).WithValues("namespace", namespace, "batch", len(batch))

	written := committed{}
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			metrics.AdmissionRetries.Inc()
			// A short random pause lets the writer that won the race finish before we read again.
			backoff := time.Duration(rand.Int64N(int64(min(attempt, 10)) * int64(time.Millisecond)))
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
			}
		}
		results, err := a.attempt(ctx, namespace, batch, written)
		if errors.Is(err, errConflict) && ctx.Err() == nil {
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

// attempt reads the namespace's quotas, decides every request of the batch in order, and writes each changed
// quota with its resourceVersion as precondition.
func (a *Admitter) attempt(ctx context.Context, namespace string, batch []*pending, written committed) ([]error, error) {
	list, err := a.read(ctx, namespace)
	if err != nil {
		return nil, err
	}
	ledgers := make([]*quota.Ledger, len(list.Items))
	for i := range list.Items {
		l, err := quota.NewLedger(&list.Items[i])
		if err != nil {
			// A quota we cannot read could limit anything: refuse rather than guess.
			broken := apierrors.NewForbidden(quotav1alpha1.GroupVersion.WithResource("karmadaquotas").GroupResource(),
				list.Items[i].Name, err)
			results := make([]error, len(batch))
			for j := range results {
				results[j] = broken
			}
			return results, nil
		}
		ledgers[i] = l
	}

	// Seconds are what survive the round trip through status; RestoreIf compares against what was written.
	expires := a.clock.Now().Add(a.ttl).Truncate(time.Second)
	changed := make([]bool, len(ledgers))
	pendingUndo := make([]map[quota.Key]undo, len(ledgers))
	results := make([]error, len(batch))
	for i, p := range batch {
		demands := make([]quota.Demand, len(ledgers))
		var denials []*quota.Denial
		for j, l := range ledgers {
			demands[j] = l.Demand(p.Key, p.Owner, p.New, p.Old)
			if denial := l.Check(demands[j]); denial != nil {
				denials = append(denials, denial)
			}
		}
		if len(denials) > 0 {
			results[i] = quotaExceeded(denials)
			// All or nothing: a quota that admitted this write on an earlier attempt gets its reservation back.
			for j, l := range ledgers {
				if u, ok := written[l.Name][p.Key]; ok && l.RestoreIf(p.Key, u.wrote, u.prior) {
					changed[j] = true
					metrics.ReservationsRolledBack.Inc()
				}
			}
			continue
		}
		if p.DryRun {
			continue
		}
		for j, l := range ledgers {
			prior, didChange := l.Reserve(demands[j], expires)
			if !didChange {
				continue
			}
			changed[j] = true
			if pendingUndo[j] == nil {
				pendingUndo[j] = map[quota.Key]undo{}
			}
			// The state to roll back to is the one before this batch first touched the key: on an earlier
			// attempt, or earlier in this one when the batch holds the same write twice.
			u, seen := pendingUndo[j][p.Key]
			if !seen {
				u, seen = written[l.Name][p.Key]
			}
			if !seen {
				u.prior = prior
			}
			u.wrote = *l.Find(p.Key)
			pendingUndo[j][p.Key] = u
		}
	}

	for j, l := range ledgers {
		if !changed[j] {
			continue
		}
		obj := &list.Items[j]
		l.WriteReservations(&obj.Status)
		if err := a.writer.Status().Update(ctx, obj); err != nil {
			if apierrors.IsConflict(err) {
				metrics.StatusConflicts.WithLabelValues("webhook").Inc()
				return nil, errConflict
			}
			return nil, fmt.Errorf("writing the status of quota %s: %w", l.Name, err)
		}
		metrics.ReservationsWritten.Add(float64(len(pendingUndo[j])))
		if written[l.Name] == nil {
			written[l.Name] = map[quota.Key]undo{}
		}
		for key, u := range pendingUndo[j] {
			written[l.Name][key] = u
		}
	}
	return results, nil
}

// Governed reports whether the namespace has any quota. A write in a namespace without one needs no decision: a
// free answer from the informer, instead of a read of the binding and a batch.
func (a *Admitter) Governed(ctx context.Context, namespace string) (bool, error) {
	known, err := a.known(ctx, namespace)
	return len(known.Items) > 0, err
}

// known lists the namespace's quotas as the informer has them. Only their names are used (read fetches each
// fresh), so the cache's objects are not deep-copied.
func (a *Admitter) known(ctx context.Context, namespace string) (*quotav1alpha1.KarmadaQuotaList, error) {
	var known quotav1alpha1.KarmadaQuotaList
	if err := a.quotas.List(ctx, &known, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing quotas: %w", err)
	}
	return &known, nil
}

// read returns the namespace's quotas, sorted by name, each as etcd has it now.
func (a *Admitter) read(ctx context.Context, namespace string) (*quotav1alpha1.KarmadaQuotaList, error) {
	known, err := a.known(ctx, namespace)
	if err != nil {
		return nil, err
	}
	fresh := &quotav1alpha1.KarmadaQuotaList{Items: make([]quotav1alpha1.KarmadaQuota, 0, len(known.Items))}
	for i := range known.Items {
		var q quotav1alpha1.KarmadaQuota
		if err := a.reader.Get(ctx, client.ObjectKeyFromObject(&known.Items[i]), &q); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("reading quota %s: %w", known.Items[i].Name, err)
		}
		fresh.Items = append(fresh.Items, q)
	}
	sort.Slice(fresh.Items, func(i, j int) bool { return fresh.Items[i].Name < fresh.Items[j].Name })
	return fresh, nil
}

// quotaExceeded renders the denials of every refusing quota as one 403 the scheduler recognises.
func quotaExceeded(denials []*quota.Denial) error {
	msgs := make([]string, len(denials))
	for i, d := range denials {
		msgs[i] = d.Error()
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusForbidden,
		Reason:  ReasonQuotaExceeded,
		Message: strings.Join(msgs, "; "),
	}}
}
