package admission

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/apis/quota/validation"
	"github.com/karmada-quota/karmada-quota/pkg/quota"
	"github.com/karmada-quota/karmada-quota/pkg/quotaio"
)

// QuotaReader reads the quotas that govern a namespace, and their ledgers, from the webhook's informers, the one
// place admission lists them: the namespace's KarmadaQuotas and the KarmadaBusinessQuotas that select it. A webhook
// request reads them once (Read) and every step of it looks at that one view; the Admitter's batch reads through it
// on every attempt, since a lost race needs a newer read.
type QuotaReader struct {
	cache client.Reader
	// synced reports whether the informer behind cache has synced; nil: cache is always current.
	synced func() bool
	// business tells the business quotas selecting a namespace; nil knows of none (tests of namespaces' quotas).
	business *quotaio.BusinessSelection
	// unseen reads a namespace's quotas from the apiserver when the informer knows none; nil trusts the informer.
	unseen *unseenQuotas
}

// NewQuotaReader returns a QuotaReader over cache, an informer-backed reader; synced reports whether the informers
// of quotas and ledgers have synced (nil when cache is always current).
func NewQuotaReader(cache client.Reader, synced func() bool) *QuotaReader {
	return &QuotaReader{cache: cache, synced: synced}
}

// WithBusinessQuotas makes the reader read the business quotas that select a namespace too: from cache, whose
// informers must watch KarmadaBusinessQuotas, their ledgers and namespaces' metadata (NamespaceMetadata); a
// namespace the informer does not know yet is read with apiReader.
func (r *QuotaReader) WithBusinessQuotas(apiReader client.Reader) *QuotaReader {
	r.business = quotaio.NewBusinessSelection(r.cache, apiReader)
	return r
}

// WithUnseenQuotas makes the reader ask apiReader for a namespace's KarmadaQuotas when the informer has none, so
// that a quota governs the writes that follow its create (unseenQuotas).
func (r *QuotaReader) WithUnseenQuotas(apiReader client.Reader, clk clock.PassiveClock) *QuotaReader {
	r.unseen = newUnseenQuotas(apiReader, clk)
	return r
}

// Read returns the quotas governing the namespace as the informers have them, and the namespace's quotas the
// apiserver has when the informer has none yet (WithUnseenQuotas).
func (r *QuotaReader) Read(ctx context.Context, namespace string) (*Quotas, error) {
	// An informer that never synced (a replica that may not list or watch quotas) would hold the call until the
	// apiserver gives up on it; refuse at once, saying why.
	if r.synced != nil && !r.synced() {
		return nil, errors.New("listing quotas: the quota, ledger and namespace informers have not synced " +
			"(this replica must be able to list and watch karmadaquotas, karmadaquotaledgers, karmadabusinessquotas, " +
			"karmadabusinessquotaledgers and namespaces)")
	}
	q := &Quotas{cache: r.cache, namespace: namespace}
	// Not deep-copied: admission is the hot path, and no one changes what is read here (Admitter.write copies a
	// ledger before it writes it).
	if err := r.cache.List(ctx, &q.list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing quotas: %w", err)
	}
	if len(q.list.Items) == 0 && r.unseen != nil {
		live, err := r.unseen.list(ctx, namespace)
		if err != nil {
			return nil, err
		}
		q.list.Items = live
	}
	var business []*quotav1alpha1.KarmadaBusinessQuota
	if r.business != nil {
		var err error
		if business, err = r.business.Selecting(ctx, namespace); err != nil {
			return nil, err
		}
	}
	q.items = make([]*quotav1alpha1.KarmadaQuota, 0, len(q.list.Items)+len(business))
	for i := range q.list.Items {
		q.items = append(q.items, &q.list.Items[i])
	}
	for _, b := range business {
		q.items = append(q.items, b.AsKarmadaQuota())
	}
	q.queue = queueOf(namespace, business)
	return q, nil
}

// Quotas is one read of the quotas governing a namespace, and of their ledgers once asked for (most binding writes
// are answered from the quotas alone: a namespace without one, a write that grows nothing). The objects are the
// informers' own, shared with them: read, never changed.
type Quotas struct {
	list      quotav1alpha1.KarmadaQuotaList
	cache     client.Reader
	namespace string
	// items are the namespace's quotas, then the business quotas selecting it (quotav1alpha1.AsKarmadaQuota, their
	// namespace empty), each sorted by name.
	items []*quotav1alpha1.KarmadaQuota
	// queue is the Admitter's queue for writes in the namespace (queueOf).
	queue string
	// ledgers are the ledger objects by quota (namespace empty for a business quota's), listed on first use; a
	// quota without one has no admission recorded yet.
	ledgers map[types.NamespacedName]*quotav1alpha1.KarmadaQuotaLedger
}

// ledgersByQuota lists the ledger objects of the namespace's quotas and of the business quotas selecting it, once.
func (q *Quotas) ledgersByQuota(ctx context.Context) (map[types.NamespacedName]*quotav1alpha1.KarmadaQuotaLedger, error) {
	if q.ledgers != nil || len(q.items) == 0 {
		return q.ledgers, nil
	}
	q.ledgers = make(map[types.NamespacedName]*quotav1alpha1.KarmadaQuotaLedger, len(q.items))
	if len(q.list.Items) > 0 {
		var ledgers quotav1alpha1.KarmadaQuotaLedgerList
		if err := q.cache.List(ctx, &ledgers, client.InNamespace(q.namespace), client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("listing quota ledgers: %w", err)
		}
		for i := range ledgers.Items {
			q.ledgers[client.ObjectKeyFromObject(&ledgers.Items[i])] = &ledgers.Items[i]
		}
	}
	for _, kq := range q.items[len(q.list.Items):] {
		var stored quotav1alpha1.KarmadaBusinessQuotaLedger
		err := q.cache.Get(ctx, client.ObjectKey{Name: kq.Name}, &stored, client.UnsafeDisableDeepCopy)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading the ledger of business quota %s: %w", kq.Name, err)
		}
		q.ledgers[types.NamespacedName{Name: kq.Name}] = stored.AsKarmadaQuotaLedger()
	}
	return q.ledgers, nil
}

// Queue is the Admitter's queue for writes in the namespace (Request.Queue).
func (q *Quotas) Queue() string {
	return q.queue
}

// Governed reports whether any quota governs the namespace: a write in a namespace without one needs no decision.
func (q *Quotas) Governed() bool {
	return len(q.items) > 0
}

// LimitMembers reports whether some quota limits member clusters or groups of them: a write that grows nothing
// federation-wide may still grow what they count.
func (q *Quotas) LimitMembers() bool {
	for _, kq := range q.items {
		if len(kq.Spec.Clusters) > 0 || len(kq.Spec.ClusterGroups) > 0 {
			return true
		}
	}
	return false
}

// ScopedByPriorityClass names the quotas that count replicas by their priority class (validation.Scoped, the rule
// the ledger's selector is built by). It compiles no selector: it runs on every placement of a binding that names
// no class, and a quota whose selector does not compile is named too (the batch refuses any write it limits).
func (q *Quotas) ScopedByPriorityClass() []string {
	var scoped []string
	for _, kq := range q.items {
		if validation.Scoped(&kq.Spec) {
			scoped = append(scoped, kq.Name)
		}
	}
	return scoped
}

// Ledgers parses every quota with its ledger object, in the order read; the first that cannot be parsed is the
// error (quota.NewLedger's, which names it). The business quotas' ledgers govern the namespace read.
func (q *Quotas) Ledgers(ctx context.Context) ([]*quota.Ledger, error) {
	stored, err := q.ledgersByQuota(ctx)
	if err != nil {
		return nil, err
	}
	ledgers := make([]*quota.Ledger, len(q.items))
	for i, kq := range q.items {
		l, err := quota.NewLedger(kq, quota.LedgerOf(stored[client.ObjectKeyFromObject(kq)], kq))
		if err != nil {
			return nil, err
		}
		if l.Business() {
			l.SetNamespaces(q.selects)
		}
		ledgers[i] = l
	}
	return ledgers, nil
}

// selects is a business quota's Ledger.SetNamespaces for a read of one namespace: it was read as selecting it.
func (q *Quotas) selects(namespace string) bool {
	return namespace == q.namespace
}

// LedgersWith reads a namespace's quotas, parsed, their cluster groups knowing member clusters by labelsOf: what
// the scheduler estimator answers from.
func (r *QuotaReader) LedgersWith(labelsOf quota.ClusterLabels) func(ctx context.Context, namespace string) ([]*quota.Ledger, error) {
	return func(ctx context.Context, namespace string) ([]*quota.Ledger, error) {
		q, err := r.Read(ctx, namespace)
		if err != nil {
			return nil, err
		}
		ledgers, err := q.Ledgers(ctx)
		if err != nil {
			return nil, err
		}
		for _, l := range ledgers {
			l.SetClusterLabels(labelsOf)
		}
		return ledgers, nil
	}
}

// queueOf is the queue a write in namespace is decided in: its namespace's own, or, where business quotas select
// the namespace, the first of them's, so that the writes of the namespaces sharing a business quota are batched
// into one write of its ledger. Namespaces selected by different sets of business quotas may still share one of
// them from different queues: their batches then race on its ledger, and the compare-and-swap keeps them exact.
func queueOf(namespace string, business []*quotav1alpha1.KarmadaBusinessQuota) string {
	if len(business) == 0 {
		return namespace
	}
	// A namespace's name has no "/", so no namespace queue takes this name.
	return "business/" + business[0].Name
}

// quotasNotListed is the refusal of a write whose namespace's quotas could not be read.
func quotasNotListed(namespace string, err error) error {
	return apierrors.NewInternalError(fmt.Errorf("quotas of namespace %s could not be listed, so the write is refused (fail closed): %w", namespace, err))
}
