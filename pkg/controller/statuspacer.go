package controller

import (
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
)

// DefaultStatusInterval is quota-controller's --status-interval, chosen by measurement (docs/performance.md): a
// quota's status costs the apiserver about twice what its ledger costs to write, and while a namespace places
// continuously its counts change at every recount. Admission decides on the ledger, settled every
// --settle-interval; what waits is how soon kubectl, the plugin and the metrics show the new counts.
const DefaultStatusInterval = 5 * time.Second

// statusPacer spaces the status writes of a quota that only move its counts: used and reserved, federation-wide,
// per member cluster and per group, and the summary of them (and, as QuotaReconciler.views, the writes of a business
// quota's AppliedBusinessQuotas that only move theirs). Any other change (a new spec observed, a condition,
// a cluster limit, a group's clusters) is written at once, and so is the first change after a quiet interval. A
// change held back is written at the end of the interval by the recount it requeues.
type statusPacer struct {
	interval time.Duration
	// writes are when each quota's status was last written.
	writes *lastTimes
}

func newStatusPacer(interval time.Duration, now func() time.Time) *statusPacer {
	return &statusPacer{interval: interval, writes: newLastTimes(now)}
}

// wait is how long the write of rendered over stored, quota key's status, should wait: 0 to write it now.
func (p *statusPacer) wait(key types.NamespacedName, stored, rendered *quotav1alpha1.KarmadaQuotaStatus) time.Duration {
	return p.waitCounts(key, countsOnly(stored, rendered))
}

// waitCounts is how long a write of key that moves counts only (counts) should wait: 0 to write it now. The pacer
// of a business quota's views (applyViews) asks it directly.
func (p *statusPacer) waitCounts(key types.NamespacedName, counts bool) time.Duration {
	if p == nil || p.interval <= 0 || !counts {
		return 0
	}
	return p.writes.untilPast(key, p.interval)
}

// wrote records a status write of key.
func (p *statusPacer) wrote(key types.NamespacedName) {
	if p != nil && p.interval > 0 {
		p.writes.mark(key)
	}
}

// forget drops what is known of a deleted quota.
func (p *statusPacer) forget(key types.NamespacedName) {
	if p != nil {
		p.writes.forget(key)
	}
}

// countsOnly reports whether two statuses differ in their counts alone.
func countsOnly(a, b *quotav1alpha1.KarmadaQuotaStatus) bool {
	return equality.Semantic.DeepEqual(withoutCounts(a), withoutCounts(b))
}

// withoutCounts is a copy of status with its counts cleared.
func withoutCounts(status *quotav1alpha1.KarmadaQuotaStatus) *quotav1alpha1.KarmadaQuotaStatus {
	out := status.DeepCopy()
	out.Used, out.Reserved, out.Summary = nil, nil, ""
	for i := range out.Clusters {
		c := &out.Clusters[i]
		c.Used, c.Reserved, c.Evicting, c.EvictingUntil, c.Running = nil, nil, nil, nil, nil
	}
	for i := range out.ClusterGroups {
		out.ClusterGroups[i].Used, out.ClusterGroups[i].Reserved = nil, nil
	}
	return out
}
