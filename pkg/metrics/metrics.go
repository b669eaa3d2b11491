// Package metrics holds every metric karmada-quota exports. Names are permanent once released: they carry the
// karmada_quota_ prefix and base units (seconds, counts), and labels stay few and bounded.
package metrics

import (
	"sync"

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
		)
	})
}
