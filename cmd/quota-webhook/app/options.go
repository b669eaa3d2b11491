package app

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/karmada-quota/karmada-quota/pkg/util/command"
)

// apiserverRequestTimeout is the karmada-apiserver's default --request-timeout. A reservation must outlive it, or
// a binding write admitted at its start could commit after its reservation lapsed and go uncounted.
const apiserverRequestTimeout = 60 * time.Second

// Options are the webhook's flags.
type Options struct {
	command.Common
	CertDir         string
	BindAddress     string
	Port            int
	ReservationTTL  time.Duration
	DecisionTimeout time.Duration
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		Common:          command.NewCommon(100, 200),
		CertDir:         "/tmp/k8s-webhook-server/serving-certs",
		Port:            9443,
		ReservationTTL:  2 * time.Minute,
		DecisionTimeout: 8 * time.Second,
	}
}

// AddFlags binds the options to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.Common.AddFlags(fs, "requests")
	fs.StringVar(&o.CertDir, "cert-dir", o.CertDir, "Folder holding the serving certificate tls.crt and key tls.key.")
	fs.StringVar(&o.BindAddress, "bind-address", o.BindAddress, "Address the webhook server listens on. Empty: all interfaces.")
	fs.IntVar(&o.Port, "port", o.Port, "Port the webhook server listens on.")
	fs.DurationVar(&o.ReservationTTL, "reservation-ttl", o.ReservationTTL,
		"How long a reservation outlives a binding write that never happened. Must exceed the apiserver's 60s request timeout.")
	fs.DurationVar(&o.DecisionTimeout, "decision-timeout", o.DecisionTimeout,
		"Bound on deciding one batch of a namespace's binding writes, retries included. Keep it below the webhook's timeoutSeconds.")
}

// Validate reports every invalid option at once.
func (o *Options) Validate() error {
	var errs []error
	if o.Port <= 0 || o.Port > 65535 {
		errs = append(errs, fmt.Errorf("--port must be between 1 and 65535, got %d", o.Port))
	}
	if o.ReservationTTL <= apiserverRequestTimeout {
		errs = append(errs, fmt.Errorf("--reservation-ttl must exceed the apiserver's request timeout (%s), got %s", apiserverRequestTimeout, o.ReservationTTL))
	}
	if o.DecisionTimeout <= 0 || o.DecisionTimeout > 30*time.Second {
		errs = append(errs, fmt.Errorf("--decision-timeout must be in (0s, 30s] (a webhook's timeoutSeconds is at most 30), got %s", o.DecisionTimeout))
	}
	errs = append(errs, o.Common.Validate()...)
	if o.CertDir == "" {
		errs = append(errs, errors.New("--cert-dir must be set"))
	}
	return errors.Join(errs...)
}
