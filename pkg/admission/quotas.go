package admission

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/apis/quota/validation"
	"github.com/karmada-quota/karmada-quota/pkg/quota"
)

// QuotaReader reads a namespace's quotas, and their ledgers, from the webhook's informers, the one place admission
// lists them. A webhook request reads them once (Read) and every step of it looks at that one view; the Admitter's
// batch reads through it on every attempt, since a lost race needs a newer read.
type QuotaReader struct {
	cache client.Reader
	// synced reports whether the informer behind cache has synced; nil: cache is always current.
	synced func() bool
}

// NewQuotaReader returns a QuotaReader over cache, an informer-backed reader; synced reports whether the informers
// of quotas and ledgers have synced (nil when cache is always current).
func NewQuotaReader(cache client.Reader, synced func() bool) *QuotaReader {
	return &QuotaReader{cache: cache, synced: synced}
}

// Read returns the namespace's quotas as the informer has them.
func (r *QuotaReader) Read(ctx context.Context, namespace string) (*Quotas, error) {
	// An informer that never synced (a replica that may not list or watch quotas) would hold the call until the
	// apiserver gives up on it; refuse at once, saying why.
	if r.synced != nil && !r.synced() {
		return nil, errors.New("listing quotas: the KarmadaQuota and KarmadaQuotaLedger informers have not synced " +
			"(this replica must be able to list and watch karmadaquotas and karmadaquotaledgers)")
	}
	q := &Quotas{cache: r.cache, namespace: namespace}
	// Not deep-copied: admission is the hot path, and no one changes what is read here (Admitter.write copies a
	// ledger before it writes it).
	if err := r.cache.List(ctx, &q.list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing quotas: %w", err)
	}
	return q, nil
}

// Quotas is one read of a namespace's quotas, and of their ledgers once asked for (most binding writes are
// answered from the quotas alone: a namespace without one, a write that grows nothing). The objects are the
// informers' own, shared with them: read, never changed.
type Quotas struct {
	list      quotav1alpha1.KarmadaQuotaList
	cache     client.Reader
	namespace string
	// ledgers are the ledger objects by name, listed on first use; a quota without one has no admission recorded
	// yet.
	ledgers map[string]*quotav1alpha1.KarmadaQuotaLedger
}

// ledgersByName lists the namespace's ledger objects, once.
func (q *Quotas) ledgersByName(ctx context.Context) (map[string]*quotav1alpha1.KarmadaQuotaLedger, error) {
	if q.ledgers != nil || len(q.list.Items) == 0 {
		return q.ledgers, nil
	}
	var ledgers quotav1alpha1.KarmadaQuotaLedgerList
	if err := q.cache.List(ctx, &ledgers, client.InNamespace(q.namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing quota ledgers: %w", err)
	}
	q.ledgers = make(map[string]*quotav1alpha1.KarmadaQuotaLedger, len(ledgers.Items))
	for i := range ledgers.Items {
		q.ledgers[ledgers.Items[i].Name] = &ledgers.Items[i]
	}
	return q.ledgers, nil
}

// Governed reports whether the namespace has any quota: a write in a namespace without one needs no decision.
func (q *Quotas) Governed() bool {
	return len(q.list.Items) > 0
}

// LimitMembers reports whether some quota limits member clusters or groups of them: a write that grows nothing
// federation-wide may still grow what they count.
func (q *Quotas) LimitMembers() bool {
	for i := range q.list.Items {
		if spec := &q.list.Items[i].Spec; len(spec.Clusters) > 0 || len(spec.ClusterGroups) > 0 {
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
	for i := range q.list.Items {
		if validation.Scoped(&q.list.Items[i].Spec) {
			scoped = append(scoped, q.list.Items[i].Name)
		}
	}
	return scoped
}

// Ledgers parses every quota with its ledger object, in the order read; the first that cannot be parsed is the
// error (quota.NewLedger's, which names it).
func (q *Quotas) Ledgers(ctx context.Context) ([]*quota.Ledger, error) {
	stored, err := q.ledgersByName(ctx)
	if err != nil {
		return nil, err
	}
	ledgers := make([]*quota.Ledger, len(q.list.Items))
	for i := range q.list.Items {
		kq := &q.list.Items[i]
		l, err := quota.NewLedger(kq, quota.LedgerOf(stored[kq.Name], kq))
		if err != nil {
			return nil, err
		}
		ledgers[i] = l
	}
	return ledgers, nil
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

// quotasNotListed is the refusal of a write whose namespace's quotas could not be read.
func quotasNotListed(namespace string, err error) error {
	return apierrors.NewInternalError(fmt.Errorf("quotas of namespace %s could not be listed, so the write is refused (fail closed): %w", namespace, err))
}
