// Package metrics holds every metric karmada-quota exports. Names are permanent once released: they carry the
// karmada_quota_ prefix and base units (seconds, counts), and labels stay few and bounded.
package metrics

import (
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

const namespace = "karmada_quota"

// Result labels of an admission decision.
const (
	ResultAllowed = "allowed"
	ResultDenied  = "denied"
	ResultError   = "error"
)

var (
	// AdmissionRequests counts admission decisions by kind (ResourceBinding, KarmadaQuota), operation, result
	// and reason (QuotaExceeded, Invalid, InternalError; empty when allowed).
	AdmissionRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "admission_requests_total",
		Help:      "Admission requests decided, by kind, operation, result and reason.",
	}, []string{"kind", "operation", "result", "reason"})

	// AdmissionDuration is the time from receiving an admission request to answering it.
	AdmissionDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace,
		Name:      "admission_duration_seconds",
		Help:      "Time to decide an admission request, by kind and operation.",
		Buckets:   []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
	}, []string{"kind", "operation"})

	// AdmissionBatchSize is how many binding writes of one namespace were decided on one read of its quotas.
	AdmissionBatchSize = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: namespace,
		Name:      "admission_batch_size",
		Help:      "Binding admissions decided together on one fresh read of a namespace's quotas.",
		Buckets:   []float64{1, 2, 4, 8, 16, 32, 64, 128, 256},
	})

	// StatusConflicts counts quota status writes refused because the quota changed since it was read, by writer
	// (webhook, controller). Each is retried on a fresh read; none reaches a client.
	StatusConflicts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "status_write_conflicts_total",
		Help:      "Quota status writes that lost a compare-and-swap race and were retried, by writer.",
	}, []string{"writer"})

	// AdmissionRetries counts batches decided again after a status write conflict.
	AdmissionRetries = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "admission_batch_retries_total",
		Help:      "Admission batches re-read and decided again after losing a status write race.",
	})

	// ReservationsWritten counts reservations added or grown in quota status by admission.
	ReservationsWritten = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "reservations_written_total",
		Help:      "Reservations added to or grown in quota status by admitted binding writes.",
	})

	// ReservationsRolledBack counts reservations undone because another quota refused the same write.
	ReservationsRolledBack = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "reservations_rolled_back_total",
		Help:      "Reservations undone because a later quota refused the same binding write.",
	})
)

var (
	// ReconcileDuration is the time to recount one quota and write its status.
	ReconcileDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: namespace,
		Name:      "reconcile_duration_seconds",
		Help:      "Time to recount one quota from the observed bindings and write its status.",
		Buckets:   prometheus.ExponentialBuckets(0.0005, 2, 16),
	})

	// ReservationsSettled counts reservations dropped because the controller observed their write.
	ReservationsSettled = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "reservations_settled_total",
		Help:      "Reservations dropped because the controller observed the binding at the reserved generation or later, or deleted.",
	})

	// ReservationsExpired counts reservations dropped because their write never happened.
	ReservationsExpired = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "reservations_expired_total",
		Help:      "Reservations dropped because they expired without their binding write being observed.",
	})

	// DriftRepaired counts quota statuses found changed by someone other than the controller and rewritten.
	DriftRepaired = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "drift_repaired_total",
		Help:      "Quota statuses whose hard, used or per-cluster usage had been changed by another writer and were recounted.",
	})

	// BindingsRequeued counts waiting bindings whose scheduling the controller retriggered after usage dropped.
	BindingsRequeued = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "bindings_requeued_total",
		Help:      "Bindings waiting with Scheduled=False, QuotaExceeded that were requeued after usage dropped.",
	})
)

// QuotaSnapshot is what the collector exports for one quota, in base units (cores, bytes, counts).
type QuotaSnapshot struct {
	Namespace, Name      string
	Hard, Used, Reserved map[string]float64
	// Clusters maps a member cluster to what the quota's namespace uses there.
	Clusters map[string]map[string]float64
}

// QuotaSource hands the collector the current snapshots at scrape time.
type QuotaSource interface {
	Snapshots() []QuotaSnapshot
}

var (
	hardDesc        = prometheus.NewDesc(namespace+"_hard", "Hard limit of a quota, in base units.", []string{"namespace", "quota", "resource"}, nil)
	usedDesc        = prometheus.NewDesc(namespace+"_used", "Observed usage against a quota, in base units.", []string{"namespace", "quota", "resource"}, nil)
	reservedDesc    = prometheus.NewDesc(namespace+"_reserved", "Admitted but not yet observed usage against a quota, in base units.", []string{"namespace", "quota", "resource"}, nil)
	clusterUsedDesc = prometheus.NewDesc(namespace+"_cluster_used", "Observed usage against a quota in one member cluster, in base units.", []string{"namespace", "quota", "cluster", "resource"}, nil)
)

// quotaCollector exports quota state read at scrape time, so a deleted quota's series vanish with it. Its source
// is set by the controller; a process that runs no controller exports nothing.
type quotaCollector struct{ source atomic.Pointer[QuotaSource] }

var quotas = &quotaCollector{}

func (c *quotaCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- hardDesc
	ch <- usedDesc
	ch <- reservedDesc
	ch <- clusterUsedDesc
}

func (c *quotaCollector) Collect(ch chan<- prometheus.Metric) {
	source := c.source.Load()
	if source == nil {
		return
	}
	for _, s := range (*source).Snapshots() {
		for desc, values := range map[*prometheus.Desc]map[string]float64{hardDesc: s.Hard, usedDesc: s.Used, reservedDesc: s.Reserved} {
			for resource, v := range values {
				ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, s.Namespace, s.Name, resource)
			}
		}
		for cluster, values := range s.Clusters {
			for resource, v := range values {
				ch <- prometheus.MustNewConstMetric(clusterUsedDesc, prometheus.GaugeValue, v, s.Namespace, s.Name, cluster, resource)
			}
		}
	}
}

// SetQuotaSource makes the quota gauges export what source knows, from the next scrape on.
func SetQuotaSource(source QuotaSource) {
	quotas.source.Store(&source)
}

var registerOnce sync.Once

// Register adds the metrics to controller-runtime's registry, which its manager serves on /metrics.
func Register() {
	registerOnce.Do(func() {
		ctrlmetrics.Registry.MustRegister(
			AdmissionRequests,
			AdmissionDuration,
			AdmissionBatchSize,
			StatusConflicts,
			AdmissionRetries,
			ReservationsWritten,
			ReservationsRolledBack,
			ReconcileDuration,
			ReservationsSettled,
			ReservationsExpired,
			DriftRepaired,
			BindingsRequeued,
			quotas,
		)
	})
}
