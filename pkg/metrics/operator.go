package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// OperatorDriftRepaired counts objects of an installation the operator found changed or deleted by someone else
// and restored, by plane (host, karmada) and kind.
var OperatorDriftRepaired = prometheus.NewCounterVec(prometheus.CounterOpts{
	Namespace: namespace,
	Name:      "operator_drift_repaired_total",
	Help:      "Objects of an installation found changed or deleted by another writer and restored by the operator, by plane and kind.",
}, []string{"plane", "kind"})

var registerOperatorOnce sync.Once

// RegisterOperator adds the operator's metrics to controller-runtime's registry.
func RegisterOperator() {
	registerOperatorOnce.Do(func() {
		ctrlmetrics.Registry.MustRegister(OperatorDriftRepaired)
	})
}
