package install

import (
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/pkg/certs"
	"github.com/karmada-quota/karmada-quota/pkg/webhookconfig"
)

// CertificatesFor returns what issues the self-managed certificates before the webhook starts: the very code
// quota-controller renews them with afterwards, with the same names and lifetimes. It returns nil when
// cert-manager issues them.
func CertificatesFor(config Config, host, karmada client.Client) (CertificateReconciler, error) {
	if config.Certificates.Mode != CertificatesSelfManaged {
		return nil, nil
	}
	opts := certs.NewOptions()
	opts.Mode = certs.ModeSelfManaged
	opts.Namespace = config.Namespace
	opts.ServingSecret = config.Certificates.ServingSecret
	opts.CASecret = config.Certificates.CASecret
	opts.DNSNames = config.Certificates.DNSNames
	opts.CAValidity = config.Certificates.CAValidity.Duration
	opts.Validity = config.Certificates.Validity.Duration
	opts.CheckInterval = min(opts.CheckInterval, opts.Validity/10)
	opts.WebhookConfiguration = webhookconfig.ConfigurationName
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return certs.NewReconciler(host, karmada, opts, clock.RealClock{})
}
