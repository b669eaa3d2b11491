package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Certificate names one of the webhook's certificates in the certificate metrics.
type Certificate string

const (
	// ServingCertificate is the certificate the webhook serves.
	ServingCertificate Certificate = "serving"
	// CACertificate is the CA that signed it (self-managed: the current CA).
	CACertificate Certificate = "ca"
)

var (
	certificateExpiration = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace,
		Name:      "webhook_certificate_expiration_timestamp_seconds",
		Help:      "When the webhook's serving certificate and its CA expire, as Unix time, as last seen by the leading quota-controller.",
	}, []string{"certificate"})

	certificateRenewals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "webhook_certificate_renewals_total",
		Help:      "Self-managed webhook certificates replaced by a new one, by certificate (serving, ca). A first issue is not counted.",
	}, []string{"certificate"})

	caBundleUpdates = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "webhook_ca_bundle_updates_total",
		Help:      "Updates of the caBundle of the webhook configuration in the karmada-apiserver.",
	})
)

// ReportCertificateExpiration records when certificate expires.
func ReportCertificateExpiration(certificate Certificate, notAfter time.Time) {
	certificateExpiration.WithLabelValues(string(certificate)).Set(float64(notAfter.Unix()))
}

// ClearCertificateExpiration forgets certificate's expiry, when it is no longer known.
func ClearCertificateExpiration(certificate Certificate) {
	certificateExpiration.DeleteLabelValues(string(certificate))
}

// CertificateRenewed counts a certificate replaced by a new one.
func CertificateRenewed(certificate Certificate) {
	certificateRenewals.WithLabelValues(string(certificate)).Inc()
}

// CABundleUpdated counts an update of the webhook configuration's caBundle.
func CABundleUpdated() {
	caBundleUpdates.Inc()
}

var registerCertificatesOnce sync.Once

// RegisterCertificates adds the certificate metrics to controller-runtime's registry. Only the process that
// manages certificates (quota-controller) registers them.
func RegisterCertificates() {
	registerCertificatesOnce.Do(func() {
		ctrlmetrics.Registry.MustRegister(certificateExpiration, certificateRenewals, caBundleUpdates)
	})
}
