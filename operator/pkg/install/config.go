// Package install puts karmada-quota into a Karmada: its API objects into the karmada-apiserver, and the Secrets
// its components need into the host cluster. It works in phases ordered so that binding writes never fail for
// want of a webhook:
//
//   - Prepare, before the components roll out: the CRD (first, and established), RBAC and the business-team
//     roles, a least-privilege identity per component, the self-managed certificates.
//   - Register, once the webhook's rollout is complete: the ValidatingWebhookConfiguration, with the CA bundle.
//   - Unregister, before the components go: the ValidatingWebhookConfiguration, first of all, since a Fail
//     webhook without a backend blocks every binding write in the federation.
//   - Cleanup, after: the rest, keeping the CRD and every quota unless told otherwise.
//
// The Helm chart's hook Jobs run each phase (`karmada-quota-operator install <phase>`); the operator runs them
// from its reconcile. Both take the Config and the objects from the same chart.
package install

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// Certificate modes.
const (
	// CertificatesSelfManaged: karmada-quota keeps a CA and the serving certificate in host Secrets.
	CertificatesSelfManaged = "self-managed"
	// CertificatesCertManager: a cert-manager Certificate writes the serving Secret.
	CertificatesCertManager = "cert-manager"
)

// Config is what the phases need to know beyond the objects themselves: where things live and what they are
// called. The chart renders it from its values.
type Config struct {
	// Namespace of the installation in the host cluster.
	Namespace string `json:"namespace"`
	// Labels go on every object a phase creates, so that cleanup and the operator find them.
	Labels map[string]string `json:"labels,omitempty"`
	// Karmada is where karmada-quota lives in the karmada-apiserver.
	Karmada Karmada `json:"karmada"`
	// Webhook is how the karmada-apiserver reaches the webhook.
	Webhook Webhook `json:"webhook"`
	// Controller names the controller's Deployment.
	Controller Controller `json:"controller"`
	// Identities are the components' own service accounts in the karmada-apiserver. Empty: the components use
	// the admin kubeconfig.
	Identities []Identity `json:"identities,omitempty"`
	// Certificates of the webhook.
	Certificates Certificates `json:"certificates"`
	// Uninstall says what cleanup removes beyond what the installation made.
	Uninstall Uninstall `json:"uninstall"`
}

// Karmada locates karmada-quota in the karmada-apiserver.
type Karmada struct {
	// Namespace of the service accounts and of the controller's Lease.
	Namespace string `json:"namespace"`
}

// Webhook describes the webhook's backend in the host cluster and its registration.
type Webhook struct {
	// Deployment of the webhook in the host namespace; Register waits for its rollout.
	Deployment string `json:"deployment"`
	// URL is https://<service>.<namespace>.svc:<port>, as the karmada-apiserver resolves it through host DNS.
	URL string `json:"url"`
	// TimeoutSeconds is how long the karmada-apiserver waits for a binding decision.
	TimeoutSeconds int32 `json:"timeoutSeconds"`
}

// Controller names the quota controller's Deployment in the host namespace.
type Controller struct {
	Deployment string `json:"deployment"`
}

// Identity is one component's service account in the karmada-apiserver and the host Secret its kubeconfig is
// written to (key "kubeconfig").
type Identity struct {
	ServiceAccount   string `json:"serviceAccount"`
	KubeconfigSecret string `json:"kubeconfigSecret"`
}

// Certificates configures the webhook's serving certificate.
type Certificates struct {
	// Mode is CertificatesSelfManaged or CertificatesCertManager.
	Mode string `json:"mode"`
	// ServingSecret (kubernetes.io/tls, with ca.crt) in the host namespace.
	ServingSecret string `json:"servingSecret"`
	// CASecret holds the self-managed CA.
	CASecret string `json:"caSecret,omitempty"`
	// DNSNames of the serving certificate.
	DNSNames []string `json:"dnsNames,omitempty"`
	// CAValidity and Validity are the self-managed lifetimes.
	CAValidity metav1.Duration `json:"caValidity,omitempty"`
	Validity   metav1.Duration `json:"validity,omitempty"`
}

// Uninstall configures cleanup.
type Uninstall struct {
	// RemoveCRD deletes the KarmadaQuota CRD, and with it every quota.
	RemoveCRD bool `json:"removeCRD"`
}

// KubeconfigKey is the key of a kubeconfig in the identity Secrets.
const KubeconfigKey = "kubeconfig"

// ParseConfig reads a Config and checks it.
func ParseConfig(raw []byte) (Config, error) {
	var c Config
	if err := yaml.UnmarshalStrict(raw, &c); err != nil {
		return Config{}, fmt.Errorf("reading the install configuration: %w", err)
	}
	if err := c.Validate(); err != nil {
		return Config{}, fmt.Errorf("the install configuration is invalid: %w", err)
	}
	return c, nil
}

// Validate reports every problem at once.
func (c Config) Validate() error {
	var errs []error
	name := func(field, value string) {
		if value == "" {
			errs = append(errs, fmt.Errorf("%s must be set", field))
			return
		}
		for _, msg := range validation.IsDNS1123Subdomain(value) {
			errs = append(errs, fmt.Errorf("%s %q: %s", field, value, msg))
		}
	}
	name("namespace", c.Namespace)
	name("karmada.namespace", c.Karmada.Namespace)
	name("webhook.deployment", c.Webhook.Deployment)
	name("controller.deployment", c.Controller.Deployment)
	if u, err := url.Parse(c.Webhook.URL); err != nil || u.Scheme != "https" || u.Host == "" || u.Path != "" {
		errs = append(errs, fmt.Errorf("webhook.url must be https://host:port without a path, got %q", c.Webhook.URL))
	}
	if c.Webhook.TimeoutSeconds < 1 || c.Webhook.TimeoutSeconds > 30 {
		errs = append(errs, fmt.Errorf("webhook.timeoutSeconds must be between 1 and 30, got %d", c.Webhook.TimeoutSeconds))
	}
	for i, id := range c.Identities {
		name(fmt.Sprintf("identities[%d].serviceAccount", i), id.ServiceAccount)
		name(fmt.Sprintf("identities[%d].kubeconfigSecret", i), id.KubeconfigSecret)
	}
	name("certificates.servingSecret", c.Certificates.ServingSecret)
	switch c.Certificates.Mode {
	case CertificatesSelfManaged:
		name("certificates.caSecret", c.Certificates.CASecret)
		if len(c.Certificates.DNSNames) == 0 {
			errs = append(errs, errors.New("certificates.dnsNames must name the webhook Service"))
		}
		if c.Certificates.Validity.Duration < time.Minute || c.Certificates.CAValidity.Duration <= c.Certificates.Validity.Duration {
			errs = append(errs, fmt.Errorf("certificates: validity must be at least 1m and caValidity longer, got %s and %s",
				c.Certificates.Validity.Duration, c.Certificates.CAValidity.Duration))
		}
	case CertificatesCertManager:
	default:
		errs = append(errs, fmt.Errorf("certificates.mode must be %s or %s, got %q", CertificatesSelfManaged, CertificatesCertManager, c.Certificates.Mode))
	}
	return errors.Join(errs...)
}
