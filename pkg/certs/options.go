package certs

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/karmada-quota/karmada-quota/pkg/webhookconfig"
)

// Mode says who issues the webhook's serving certificate.
type Mode string

const (
	// ModeNone leaves certificates and the webhook configuration's caBundle alone: someone else keeps them.
	ModeNone Mode = "none"
	// ModeSelfManaged issues a CA and the serving certificate into host Secrets, renews both ahead of expiry and
	// keeps the caBundle in sync.
	ModeSelfManaged Mode = "self-managed"
	// ModeExternal reads the serving Secret another issuer (cert-manager) writes and keeps the caBundle equal to
	// its ca.crt.
	ModeExternal Mode = "external"
)

// Bounds on the options. MinValidity is low enough for tests to watch a renewal happen.
const (
	MinValidity = time.Minute
	// checkIntervalShare is the largest share of the serving validity a check interval may take: a check that
	// repairs a lost Secret or a hand-edited caBundle must come round many times within the last third of a
	// certificate's life, when it is renewed.
	checkIntervalShare = 10
)

// Options configure certificate management. The zero value is not useful; start from NewOptions.
type Options struct {
	Mode Mode
	// Namespace is the host namespace of both Secrets.
	Namespace string
	// ServingSecret is the kubernetes.io/tls Secret the webhook mounts: tls.crt, tls.key, and ca.crt, the bundle
	// the webhook's clients must trust.
	ServingSecret string
	// CASecret (self-managed only) holds the CA's certificate (tls.crt) and key (tls.key), and in ca.crt the CA
	// bundle: the current CA and the previous ones still trusted.
	CASecret string
	// DNSNames (self-managed only) are the serving certificate's names: the webhook Service's
	// <service>.<namespace>.svc and <service>.<namespace>.svc.cluster.local.
	DNSNames []string
	// CAValidity and Validity (self-managed only) are the lifetimes of the CA and of the serving certificate.
	// Each is renewed when less than a third of its lifetime is left.
	CAValidity time.Duration
	Validity   time.Duration
	// CheckInterval is the longest wait between two passes; passes also run when a renewal falls due.
	CheckInterval time.Duration
	// WebhookConfiguration is the ValidatingWebhookConfiguration, in the karmada-apiserver, whose caBundle is
	// kept in sync.
	WebhookConfiguration string
}

// NewOptions returns the defaults of the quota-controller binary: management off, and the names the chart gives
// a release called karmada-quota in karmada-system. The lifetimes are those of Kueue's and Gatekeeper's
// self-managed certificates: a 10-year CA and a 1-year serving certificate.
func NewOptions() Options {
	return Options{
		Mode:          ModeNone,
		Namespace:     "karmada-system",
		ServingSecret: "karmada-quota-webhook-cert",
		CASecret:      "karmada-quota-ca",
		DNSNames: []string{
			"karmada-quota-webhook.karmada-system.svc",
			"karmada-quota-webhook.karmada-system.svc.cluster.local",
		},
		CAValidity:           10 * 365 * 24 * time.Hour,
		Validity:             365 * 24 * time.Hour,
		CheckInterval:        time.Minute,
		WebhookConfiguration: webhookconfig.ConfigurationName,
	}
}

// AddFlags binds the options to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar((*string)(&o.Mode), "webhook-cert-mode", string(o.Mode),
		"Who keeps the webhook's serving certificate: self-managed (karmada-quota issues a CA and the certificate into host Secrets and renews both), "+
			"external (cert-manager or another issuer writes the serving Secret; karmada-quota keeps the webhook configuration's caBundle equal to its ca.crt), "+
			"or none.")
	fs.StringVar(&o.Namespace, "webhook-cert-namespace", o.Namespace, "Namespace, in the host cluster, of the certificate Secrets.")
	fs.StringVar(&o.ServingSecret, "webhook-cert-secret", o.ServingSecret,
		"Host Secret the webhook mounts (kubernetes.io/tls: tls.crt, tls.key, and ca.crt, the CA bundle the karmada-apiserver must trust).")
	fs.StringVar(&o.CASecret, "webhook-cert-ca-secret", o.CASecret,
		"Host Secret holding the self-managed CA (tls.crt, tls.key) and, in ca.crt, every CA still trusted.")
	fs.StringSliceVar(&o.DNSNames, "webhook-cert-dns-names", o.DNSNames,
		"Names of the self-managed serving certificate: the webhook Service's <service>.<namespace>.svc and <service>.<namespace>.svc.cluster.local.")
	fs.DurationVar(&o.CAValidity, "webhook-cert-ca-validity", o.CAValidity,
		"Lifetime of a self-managed CA. It is replaced when less than a third is left; the old CA stays trusted until it expires.")
	fs.DurationVar(&o.Validity, "webhook-cert-validity", o.Validity,
		fmt.Sprintf("Lifetime of a self-managed serving certificate, at least %s. It is renewed when less than a third is left.", MinValidity))
	fs.DurationVar(&o.CheckInterval, "webhook-cert-check-interval", o.CheckInterval,
		fmt.Sprintf("Longest wait between two checks of the Secrets and the caBundle; renewals also run when they fall due. At most a %dth of --webhook-cert-validity.", checkIntervalShare))
	fs.StringVar(&o.WebhookConfiguration, "webhook-configuration-name", o.WebhookConfiguration,
		"ValidatingWebhookConfiguration, in the karmada-apiserver, whose caBundle is kept in sync. It is never created: the installer does that. "+
			"The controller's role may only touch "+webhookconfig.ConfigurationName+".")
}

// Validate reports every invalid option at once. Options a mode does not read are not checked.
func (o *Options) Validate() error {
	var errs []error
	switch o.Mode {
	case ModeNone:
		return nil
	case ModeSelfManaged, ModeExternal:
	default:
		return fmt.Errorf("--webhook-cert-mode must be %s, %s or %s, got %q", ModeSelfManaged, ModeExternal, ModeNone, o.Mode)
	}
	if o.Namespace == "" {
		errs = append(errs, errors.New("--webhook-cert-namespace must be set"))
	} else if msgs := validation.IsDNS1123Label(o.Namespace); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--webhook-cert-namespace: %q is not a valid namespace: %s", o.Namespace, strings.Join(msgs, "; ")))
	}
	for _, name := range []struct{ flag, value string }{
		{"--webhook-cert-secret", o.ServingSecret},
		{"--webhook-configuration-name", o.WebhookConfiguration},
	} {
		errs = append(errs, validateName(name.flag, name.value)...)
	}
	if o.CheckInterval <= 0 {
		errs = append(errs, fmt.Errorf("--webhook-cert-check-interval must be positive, got %s", o.CheckInterval))
	}
	if o.Mode == ModeSelfManaged {
		errs = append(errs, o.validateSelfManaged()...)
	}
	return errors.Join(errs...)
}

func (o *Options) validateSelfManaged() []error {
	var errs []error
	errs = append(errs, validateName("--webhook-cert-ca-secret", o.CASecret)...)
	if o.CASecret != "" && o.CASecret == o.ServingSecret {
		// The webhook mounts the serving Secret: sharing it would hand the CA's key to every webhook pod.
		errs = append(errs, fmt.Errorf("--webhook-cert-ca-secret must differ from --webhook-cert-secret, both are %q", o.CASecret))
	}
	if len(o.DNSNames) == 0 {
		errs = append(errs, errors.New("--webhook-cert-dns-names must name at least one DNS name"))
	}
	for _, name := range o.DNSNames {
		if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--webhook-cert-dns-names: %q is not a DNS name: %s", name, strings.Join(msgs, "; ")))
		}
	}
	if o.Validity < MinValidity {
		errs = append(errs, fmt.Errorf("--webhook-cert-validity must be at least %s, got %s", MinValidity, o.Validity))
		return errs
	}
	if o.CAValidity <= o.Validity {
		errs = append(errs, fmt.Errorf("--webhook-cert-ca-validity must be longer than --webhook-cert-validity, got %s and %s", o.CAValidity, o.Validity))
	}
	if limit := o.Validity / checkIntervalShare; o.CheckInterval > limit {
		errs = append(errs, fmt.Errorf("--webhook-cert-check-interval must be at most a %dth of --webhook-cert-validity (%s), got %s",
			checkIntervalShare, limit, o.CheckInterval))
	}
	return errs
}

func validateName(flag, value string) []error {
	if value == "" {
		return []error{fmt.Errorf("%s must be set", flag)}
	}
	if msgs := validation.IsDNS1123Subdomain(value); len(msgs) > 0 {
		return []error{fmt.Errorf("%s: %q is not a valid name: %s", flag, value, strings.Join(msgs, "; "))}
	}
	return nil
}
