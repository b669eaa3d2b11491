// Package metrics holds every metric karmada-quota exports. Names are permanent once released: they carry the
// karmada_quota_ prefix and base units (seconds, counts), and labels stay few and bounded. A series is never renamed
// in place: the new name is added beside the old one, and the old one is documented as deprecated until it goes.
//
// Each binary registers only the series it produces (RegisterWebhook, RegisterController, RegisterOperator), so
// none exports another's counters stuck at zero. quota-controller's per-quota series, tens of thousands at
// thousands of quotas, are not registered: its /metrics (Server, Handler) writes them straight from the leader's
// snapshots and the stored quotas after the registry's.
//
// A KarmadaBusinessQuota is exported under the same quota families as a KarmadaQuota, with its name as quota and an
// empty namespace, which Prometheus stores as no namespace label at all: namespace="" selects business quotas,
// namespace!="" KarmadaQuotas (a KarmadaQuota always has a namespace, so the two never share a series). No kind
// label tells them apart: adding one would change the identity of every series already stored. What each of a
// business quota's namespaces uses has a family of its own, business_namespace_used, whose namespace label is that
// namespace. The alerts and the dashboard in the chart
// (deploy/charts/karmada-quota/files/monitoring) name only these series; a test keeps them honest.
package metrics

import (
	"errors"
	"sync"
	"time"

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

// Kind labels of the admission metrics: the kinds the webhook admits. Resource templates of every kind share one
// label, so that the metric's cardinality does not grow with the kinds a federation propagates.
const (
	KindResourceBinding  = "ResourceBinding"
	KindKarmadaQuota     = "KarmadaQuota"
	KindBusinessQuota    = "KarmadaBusinessQuota"
	KindWork             = "Work"
	KindResourceTemplate = "ResourceTemplate"
)

// Writer labels of StatusConflicts: who lost the compare-and-swap.
const (
	WriterWebhook    = "webhook"
	WriterController = "controller"
)

// admittedOperations are the operations the webhook configuration sends (webhookconfig.Configuration).
var admittedOperations = []string{"CREATE", "UPDATE"}

// quota-webhook's series.
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

	// AdmissionRetries counts batches decided again after a status write conflict.
	AdmissionRetries = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "admission_batch_retries_total",
		Help:      "Admission batches re-read and decided again after losing a status write race.",
	})

	// UnseenQuotaReads counts the lists of a namespace's quotas from the apiserver, made because the informer had
	// none of them, by whether the apiserver had some (found): a quota created a moment before a write governs it.
	UnseenQuotaReads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "admission_unseen_quota_reads_total",
		Help:      "Lists of a namespace's quotas from the apiserver because the informer had none, by whether some were found.",
	}, []string{"found"})

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

// Exported by both binaries, each under its own writer label.
var (
	// StatusConflicts counts quota status writes refused because the quota changed since it was read, by writer
	// (webhook, controller). Each is retried on a fresh read; none reaches a client.
	StatusConflicts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "status_write_conflicts_total",
		Help:      "Writes of a quota's ledger or status that lost a compare-and-swap race and were retried, by writer.",
	}, []string{"writer"})
)

// The scheduler estimator's series (quota-webhook).
var (
	// EstimatorRequests counts karmada-scheduler's calls to the scheduler estimator, by method and by what bounded
	// the answer: a limit on member clusters (bounded), nothing (unbounded), or no answer (error). None at all means
	// karmada-scheduler does not consult it (its --enable-scheduler-estimator and service prefix).
	EstimatorRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "estimator_requests_total",
		Help:      "Calls of karmada-scheduler to the scheduler estimator, by method and result (bounded, unbounded, error).",
	}, []string{"method", "result"})
)

// Results of an estimator call.
const (
	EstimatorBounded   = "bounded"
	EstimatorUnbounded = "unbounded"
	EstimatorError     = "error"
)

// quota-controller's series.
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

	// firstRecount is how long the leader took to recount every quota once it led; absent until it has.
	firstRecount = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace,
		Name:      "first_recount_seconds",
		Help:      "Seconds from when this replica began leading to when it had recounted every quota its cache held then; absent until it has.",
	}, nil)

	// BindingsRequeued counts waiting bindings whose scheduling the controller retriggered after usage dropped.
	BindingsRequeued = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "bindings_requeued_total",
		Help:      "Bindings waiting with Scheduled=False, QuotaExceeded that were requeued after usage dropped.",
	})
)

// FirstRecountDone records how long the leader took to recount every quota once it led.
func FirstRecountDone(took time.Duration) {
	firstRecount.WithLabelValues().Set(took.Seconds())
}

// ObserveAdmission records one admission decision: its result and reason, and how long it took.
func ObserveAdmission(kind, operation, result, reason string, elapsed time.Duration) {
	AdmissionRequests.WithLabelValues(kind, operation, result, reason).Inc()
	AdmissionDuration.WithLabelValues(kind, operation).Observe(elapsed.Seconds())
}

// StatusWriteConflict counts a quota status write by writer (WriterWebhook, WriterController) that lost a
// compare-and-swap race.
func StatusWriteConflict(writer string) {
	StatusConflicts.WithLabelValues(writer).Inc()
}

// QuotaSnapshot is what the leader exports for one quota, in base units (cores, bytes, counts), as of
// its last recount. A KarmadaBusinessQuota's has an empty Namespace and fills Namespaces.
type QuotaSnapshot struct {
	// Namespace is the KarmadaQuota's namespace; empty for a KarmadaBusinessQuota, which is cluster-scoped.
	Namespace, Name      string
	Hard, Used, Reserved map[string]float64
	// Clusters maps a member cluster to what the quota's namespace uses there.
	Clusters map[string]map[string]float64
	// ClustersRunning maps a member cluster to what the namespace's pods there request, read from the member.
	ClustersRunning map[string]map[string]float64
	// ClustersEvicting maps a member cluster to the part of its Clusters entry that runs there only until Karmada's
	// graceful eviction from it ends (status.clusters[].evicting); a cluster nothing is evicted from is absent.
	// SetClusterEvicting fills it and ClustersEvictingUntil.
	ClustersEvicting map[string]map[string]float64
	// ClustersEvictingUntil maps a member cluster of ClustersEvicting to when the last of what is evicted there goes
	// at the latest (status.clusters[].evictingUntil); absent while one of them is held until released.
	ClustersEvictingUntil map[string]time.Time
	// MembersRunningMore is 1 while the quota's MembersWithinQuota condition is False, 0 while True; nil while the
	// members are not read.
	MembersRunningMore *float64
	// Waiting counts the namespace's bindings that wait for quota and still need something this quota limits.
	Waiting int
	// OldestWaiting is when the longest-waiting of them was refused (its Scheduled condition turned False); zero
	// when none waits.
	OldestWaiting time.Time
	// Unclassified counts, for a quota scoped by PriorityClass, the namespace's bindings whose priority class could
	// not be read, which the quota does not count.
	Unclassified int
	// ClustersHard maps a member cluster with a limit of its own (spec.clusters) to that limit
	// (status.clusters[].hard); a cluster without one is absent. SetClusterLimit fills it.
	ClustersHard map[string]map[string]float64
	// ClustersReserved maps a member cluster to what is admitted there and not yet observed, for the resources a
	// cluster or group limit counts (status.clusters[].reserved). SetClusterLimit fills it.
	ClustersReserved map[string]map[string]float64
	// Groups maps a cluster group of the quota (spec.clusterGroups) to its limit and what its clusters use and
	// reserve together (status.clusterGroups[]). SetGroup fills it.
	Groups map[string]GroupSnapshot
	// Namespaces maps each namespace a KarmadaBusinessQuota selects to what it uses of the quota
	// (status.namespaces[]), every resource of Hard present, 0 included; nil for a KarmadaQuota. SetNamespace fills
	// it. A namespace the business quota no longer selects is absent from the next recount's snapshot.
	Namespaces map[string]map[string]float64
}

// GroupSnapshot is one cluster group of a quota, in base units: its limit, and what the clusters it selects now
// use and reserve together. Used and Reserved hold every resource of Hard, 0 included.
type GroupSnapshot struct {
	Hard, Used, Reserved map[string]float64
}

// SetClusterLimit records, for one member cluster of status.clusters[], its own limit (hard; empty for a cluster
// without one) and what is reserved there (reserved; status.clusters[].reserved, which holds only what is above
// zero). Call it after Clusters holds the cluster's used: a limited cluster exports used and reserved for every
// resource of its limit, 0 included, so that used / hard exists from the start, also for a cluster that has not
// joined yet. A cluster without a limit of its own exports only a reservation above zero.
func (s *QuotaSnapshot) SetClusterLimit(cluster string, hard, reserved map[string]float64) {
	if len(hard) == 0 {
		some := false
		for _, v := range reserved {
			some = some || v > 0
		}
		if some {
			if s.ClustersReserved == nil {
				s.ClustersReserved = map[string]map[string]float64{}
			}
			s.ClustersReserved[cluster] = reserved
		}
		return
	}
	if s.ClustersHard == nil {
		s.ClustersHard = map[string]map[string]float64{}
	}
	if s.ClustersReserved == nil {
		s.ClustersReserved = map[string]map[string]float64{}
	}
	if s.Clusters == nil {
		s.Clusters = map[string]map[string]float64{}
	}
	s.ClustersHard[cluster] = hard
	s.ClustersReserved[cluster] = withZeros(reserved, hard)
	s.Clusters[cluster] = withZeros(s.Clusters[cluster], hard)
}

// SetGroup records one cluster group of status.clusterGroups[]: its limit, and what its clusters use and reserve
// together, with every resource of the limit present, 0 included (a group whose clusters use nothing, or that
// selects none now, is at 0, not absent).
func (s *QuotaSnapshot) SetGroup(group string, hard, used, reserved map[string]float64) {
	if s.Groups == nil {
		s.Groups = map[string]GroupSnapshot{}
	}
	s.Groups[group] = GroupSnapshot{Hard: hard, Used: withZeros(used, hard), Reserved: withZeros(reserved, hard)}
}

// SetNamespace records what one namespace a business quota selects uses of it (status.namespaces[].used), with
// every resource of Hard present, 0 included: a selected namespace that uses nothing is at 0, not absent, so that
// its part exists from the moment it joins. Call it after Hard is set.
func (s *QuotaSnapshot) SetNamespace(namespace string, used map[string]float64) {
	if s.Namespaces == nil {
		s.Namespaces = map[string]map[string]float64{}
	}
	s.Namespaces[namespace] = withZeros(used, s.Hard)
}

// withZeros is values with a 0 for every resource of hard it lacks; values itself is not changed.
func withZeros(values, hard map[string]float64) map[string]float64 {
	out := make(map[string]float64, len(values)+len(hard))
	for resource := range hard {
		out[resource] = 0
	}
	for resource, v := range values {
		out[resource] = v
	}
	return out
}

// SetClusterEvicting records what Karmada's graceful eviction from cluster keeps running there (in base units, as
// Clusters) and until when at the latest; a zero until is one held until released (purgeMode Never), which has no
// end to export. An evicting with nothing above zero records nothing, so that a cluster_evicting series always
// means something is evicted, and one without an until series that it is held.
func (s *QuotaSnapshot) SetClusterEvicting(cluster string, evicting map[string]float64, until time.Time) {
	some := false
	for _, v := range evicting {
		some = some || v > 0
	}
	if !some {
		return
	}
	if s.ClustersEvicting == nil {
		s.ClustersEvicting = map[string]map[string]float64{}
	}
	s.ClustersEvicting[cluster] = evicting
	if until.IsZero() {
		return
	}
	if s.ClustersEvictingUntil == nil {
		s.ClustersEvictingUntil = map[string]time.Time{}
	}
	s.ClustersEvictingUntil[cluster] = until
}

// QuotaSource hands a scrape the current snapshots (Handler).
type QuotaSource interface {
	Snapshots() []QuotaSnapshot
}

// StoredQuota is what every controller replica exports for one quota as its informer cache holds it: whether the
// controller keeps its status current.
type StoredQuota struct {
	Namespace, Name string
	// Generation is metadata.generation; ObservedGeneration is status.observedGeneration, the generation the last
	// recount saw.
	Generation, ObservedGeneration int64
	// Ready is whether the Ready condition is True.
	Ready bool
}

// StoredQuotaSource hands a scrape the quotas as stored (Handler). The scrape may reorder the slice it is handed.
type StoredQuotaSource interface {
	StoredQuotas() []StoredQuota
}

// webhookCollectors are the series quota-webhook exports.
func webhookCollectors() []prometheus.Collector {
	return []prometheus.Collector{
		AdmissionRequests,
		AdmissionDuration,
		AdmissionBatchSize,
		StatusConflicts,
		AdmissionRetries,
		UnseenQuotaReads,
		ReservationsWritten,
		ReservationsRolledBack,
		EstimatorRequests,
	}
}

// controllerCollectors are the series quota-controller exports through its registry, but for the certificate
// metrics (RegisterCertificates); the per-quota series Handler writes beside them.
func controllerCollectors() []prometheus.Collector {
	return []prometheus.Collector{
		ReconcileDuration,
		StatusConflicts,
		ReservationsSettled,
		ReservationsExpired,
		DriftRepaired,
		BindingsRequeued,
		firstRecount,
	}
}

// registerWebhook registers quota-webhook's series into r and creates, at zero, the series it exports before its
// first request: admissions allowed, per kind and operation, and its conflicts. A webhook that serves then always
// exports karmada_quota_admission_requests_total, so an alert can take its absence as the webhook being down, and
// rate() sees the first increment.
func registerWebhook(r prometheus.Registerer) {
	register(r, webhookCollectors()...)
	// Resource templates are gated on update only: a new template has no placed replicas yet.
	operations := map[string][]string{
		KindResourceBinding: admittedOperations, KindKarmadaQuota: admittedOperations, KindWork: admittedOperations,
		KindResourceTemplate: {"UPDATE"},
	}
	for kind, ops := range operations {
		for _, op := range ops {
			AdmissionRequests.WithLabelValues(kind, op, ResultAllowed, "")
			AdmissionDuration.WithLabelValues(kind, op)
		}
	}
	StatusConflicts.WithLabelValues(WriterWebhook)
	UnseenQuotaReads.WithLabelValues("true")
	UnseenQuotaReads.WithLabelValues("false")
	// At 0 from the start, so that "karmada-scheduler does not ask" reads as a flat series, not a missing one.
	for _, method := range []string{"MaxAvailableReplicas", "MaxAvailableComponentSets", "GetUnschedulableReplicas"} {
		for _, result := range []string{EstimatorBounded, EstimatorUnbounded, EstimatorError} {
			EstimatorRequests.WithLabelValues(method, result)
		}
	}
}

// registerController registers quota-controller's series into r, with its conflicts at zero.
func registerController(r prometheus.Registerer) {
	register(r, controllerCollectors()...)
	StatusConflicts.WithLabelValues(WriterController)
}

// register adds collectors to r. A collector r already holds is no error: a process that runs both the webhook and
// the controller (the integration tests do) registers their shared series twice.
func register(r prometheus.Registerer, collectors ...prometheus.Collector) {
	for _, c := range collectors {
		err := r.Register(c)
		var already prometheus.AlreadyRegisteredError
		if err == nil || (errors.As(err, &already) && already.ExistingCollector == c) {
			continue
		}
		panic(err)
	}
}

var registerWebhookOnce, registerControllerOnce sync.Once

// RegisterWebhook adds quota-webhook's series to controller-runtime's registry, which its manager serves on
// /metrics.
func RegisterWebhook() {
	registerWebhookOnce.Do(func() { registerWebhook(ctrlmetrics.Registry) })
}

// RegisterController adds quota-controller's series to controller-runtime's registry: the recount's counters and
// the certificate metrics, which Handler serves on /metrics with the per-quota gauges.
func RegisterController() {
	registerControllerOnce.Do(func() { registerController(ctrlmetrics.Registry) })
	RegisterCertificates()
}
