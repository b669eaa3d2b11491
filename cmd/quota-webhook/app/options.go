package app

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/karmada-quota/karmada-quota/pkg/admission"
	"github.com/karmada-quota/karmada-quota/pkg/estimator/discovery"
	"github.com/karmada-quota/karmada-quota/pkg/quota"
	"github.com/karmada-quota/karmada-quota/pkg/util/command"
)

// Options are the webhook's flags.
type Options struct {
	command.Common
	TLS     command.TLS
	CertDir string
	// BindAddress is host:port; an empty host means every interface.
	BindAddress     string
	ReservationTTL  time.Duration
	DecisionTimeout time.Duration
	// MaxReservations bounds each quota's list of reservations (at most quota.MaxReservations); tests lower it.
	MaxReservations int
	// ShutdownDelay is how long a replica keeps serving, unready, after it is told to stop.
	ShutdownDelay time.Duration
	// ExemptKinds are kinds (Kind.group) whose pods karmada-quota cannot know, let through uncharged.
	ExemptKinds []string
	// EstimatorBindAddress is host:port the scheduler estimator listens on; empty serves none.
	EstimatorBindAddress string
	// EstimatorTLS serves the estimator over TLS with the webhook's serving certificate.
	EstimatorTLS bool
	// MemberEstimators are the members' own karmada-scheduler-estimators, asked too; none without a prefix.
	MemberEstimators discovery.Lookup
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		// The webhook makes about one request per admitted write (its status write; reads come from its informer),
		// so its client rate must follow the apiserver's own binding write rate: measured at 400-550 writes/s on 2
		// cores (docs/performance.md). A lower limit only turns load into admission latency and timeouts; the
		// apiserver's priority and fairness is what protects it.
		Common:          command.NewCommon(1000, 2000),
		TLS:             command.NewTLS(),
		CertDir:         "/tmp/k8s-webhook-server/serving-certs",
		BindAddress:     ":9443",
		ReservationTTL:  2 * time.Minute,
		DecisionTimeout: 8 * time.Second,
		MaxReservations: quota.MaxReservations,
		ShutdownDelay:   5 * time.Second,
		// karmada-scheduler's defaults for karmada-scheduler-estimator, but the prefix: off until given.
		MemberEstimators: discovery.Lookup{Namespace: "karmada-system", Port: 10352},
	}
}

// AddFlags binds the options to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.Common.AddFlags(fs, "requests")
	o.TLS.AddFlags(fs)
	fs.StringVar(&o.CertDir, "cert-dir", o.CertDir,
		"Folder holding the serving certificate tls.crt and key tls.key. A renewed certificate written there is served without a restart.")
	fs.StringVar(&o.BindAddress, "webhook-bind-address", o.BindAddress,
		"host:port the webhook server listens on; an empty host means every interface.")
	fs.DurationVar(&o.ReservationTTL, "reservation-ttl", o.ReservationTTL,
		fmt.Sprintf("How long a reservation outlives a binding write that never happened. Must exceed the apiserver's %s request timeout, "+
			"and be at most %s, how long quota-controller remembers a deleted binding.", quota.APIServerRequestTimeout, quota.MaxReservationTTL))
	fs.DurationVar(&o.DecisionTimeout, "decision-timeout", o.DecisionTimeout,
		"Bound on deciding one batch of a namespace's binding writes, retries included. Keep it below the webhook's timeoutSeconds.")
	fs.IntVar(&o.MaxReservations, "max-reservations-per-quota", o.MaxReservations,
		fmt.Sprintf("How many reservations a quota's ledger lists one by one before the oldest are folded into one sum, at most %d. "+
			"Lower it only to test folding.", quota.MaxReservations))
	// Hidden: the default is sized to what the apiserver stores; a lower bound only folds sooner.
	_ = fs.MarkHidden("max-reservations-per-quota")
	fs.StringSliceVar(&o.ExemptKinds, "exempt-kinds", o.ExemptKinds,
		"Kinds, as Kind.group (Certificate.cert-manager.io), that may run under a quota limiting what pods use although "+
			"karmada-quota cannot know the pods they make (a CRD without a ResourceInterpreterCustomization describing its "+
			"replicas): their Works go through, uncharged. Other such kinds are refused there.")
	fs.StringVar(&o.EstimatorBindAddress, "estimator-bind-address", o.EstimatorBindAddress,
		"host:port the scheduler estimator listens on (Karmada's karmada-scheduler-estimator gRPC protocol: how many replicas "+
			"the quotas leave room for on each member cluster, so that karmada-scheduler divides workloads within them); empty serves none.")
	fs.BoolVar(&o.EstimatorTLS, "estimator-tls", o.EstimatorTLS,
		"Serve the scheduler estimator over TLS with the webhook's serving certificate (--cert-dir); karmada-scheduler then needs "+
			"--scheduler-estimator-ca-file. Off, it serves plain gRPC, as karmada-scheduler-estimator does by default.")
	fs.StringVar(&o.MemberEstimators.Prefix, "member-estimator-service-prefix", o.MemberEstimators.Prefix,
		"When the members run karmada-scheduler-estimator, the --scheduler-estimator-service-prefix karmada-scheduler would find them by "+
			"(karmada-scheduler-estimator, Karmada's default): the scheduler estimator asks each member's too and answers the least of both, "+
			"so that karmada-scheduler, pointed at karmada-quota's, still learns what the member's nodes can take. Empty asks none.")
	fs.StringVar(&o.MemberEstimators.Namespace, "member-estimator-service-namespace", o.MemberEstimators.Namespace,
		"The --scheduler-estimator-service-namespace of the members' estimators.")
	fs.Int32Var(&o.MemberEstimators.Port, "member-estimator-port", o.MemberEstimators.Port,
		"The --scheduler-estimator-port of the members' estimators.")
	fs.DurationVar(&o.ShutdownDelay, "shutdown-delay", o.ShutdownDelay,
		"How long the webhook keeps serving after SIGTERM, reporting itself unready, before it drains: the time for the "+
			"cluster to stop routing new calls to it, so that a rolling update never sends a binding write to a closed port.")
}

// Validate reports every invalid option at once.
func (o *Options) Validate() error {
	var errs []error
	if _, _, err := o.hostPort(); err != nil {
		errs = append(errs, err)
	}
	// The bounds the controller relies on too: one rule, in pkg/quota.
	if err := quota.ValidateReservationTTL(o.ReservationTTL); err != nil {
		errs = append(errs, fmt.Errorf("--reservation-ttl %w", err))
	}
	if o.DecisionTimeout <= 0 || o.DecisionTimeout > 30*time.Second {
		errs = append(errs, fmt.Errorf("--decision-timeout must be in (0s, 30s] (a webhook's timeoutSeconds is at most 30), got %s", o.DecisionTimeout))
	}
	if o.MaxReservations <= 0 || o.MaxReservations > quota.MaxReservations {
		errs = append(errs, fmt.Errorf("--max-reservations-per-quota must be in [1, %d], got %d", quota.MaxReservations, o.MaxReservations))
	}
	if _, err := admission.ParseExemptKinds(o.ExemptKinds); err != nil {
		errs = append(errs, fmt.Errorf("--exempt-kinds %w", err))
	}
	if o.EstimatorBindAddress != "" {
		if _, _, err := command.HostPort("--estimator-bind-address", o.EstimatorBindAddress); err != nil {
			errs = append(errs, err)
		}
	} else if o.EstimatorTLS || o.MemberEstimators.Prefix != "" {
		errs = append(errs, errors.New("--estimator-tls and --member-estimator-service-prefix need --estimator-bind-address"))
	}
	if o.MemberEstimators.Prefix != "" {
		if o.MemberEstimators.Namespace == "" {
			errs = append(errs, errors.New("--member-estimator-service-namespace must be set"))
		}
		if o.MemberEstimators.Port <= 0 || o.MemberEstimators.Port > 65535 {
			errs = append(errs, fmt.Errorf("--member-estimator-port must be between 1 and 65535, got %d", o.MemberEstimators.Port))
		}
	}
	if o.ShutdownDelay < 0 {
		errs = append(errs, fmt.Errorf("--shutdown-delay must not be negative, got %s", o.ShutdownDelay))
	}
	errs = append(errs, o.Common.Validate()...)
	errs = append(errs, o.TLS.Validate()...)
	if o.CertDir == "" {
		errs = append(errs, errors.New("--cert-dir must be set"))
	}
	return errors.Join(errs...)
}

// hostPort splits --webhook-bind-address.
func (o *Options) hostPort() (string, int, error) {
	return command.HostPort("--webhook-bind-address", o.BindAddress)
}
