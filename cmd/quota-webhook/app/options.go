package app

import (
	"errors"
	"fmt"
	"net"
	"strconv"
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
	TLS     command.TLS
	CertDir string
	// BindAddress is host:port; an empty host means every interface.
	BindAddress     string
	ReservationTTL  time.Duration
	DecisionTimeout time.Duration
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		Common:          command.NewCommon(100, 200),
		TLS:             command.NewTLS(),
		CertDir:         "/tmp/k8s-webhook-server/serving-certs",
		BindAddress:     ":9443",
		ReservationTTL:  2 * time.Minute,
		DecisionTimeout: 8 * time.Second,
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
		"How long a reservation outlives a binding write that never happened. Must exceed the apiserver's 60s request timeout.")
	fs.DurationVar(&o.DecisionTimeout, "decision-timeout", o.DecisionTimeout,
		"Bound on deciding one batch of a namespace's binding writes, retries included. Keep it below the webhook's timeoutSeconds.")
}

// Validate reports every invalid option at once.
func (o *Options) Validate() error {
	var errs []error
	if _, _, err := o.hostPort(); err != nil {
		errs = append(errs, err)
	}
	if o.ReservationTTL <= apiserverRequestTimeout {
		errs = append(errs, fmt.Errorf("--reservation-ttl must exceed the apiserver's request timeout (%s), got %s", apiserverRequestTimeout, o.ReservationTTL))
	}
	if o.DecisionTimeout <= 0 || o.DecisionTimeout > 30*time.Second {
		errs = append(errs, fmt.Errorf("--decision-timeout must be in (0s, 30s] (a webhook's timeoutSeconds is at most 30), got %s", o.DecisionTimeout))
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
	host, portText, err := net.SplitHostPort(o.BindAddress)
	if err != nil {
		return "", 0, fmt.Errorf("--webhook-bind-address must be host:port, got %q", o.BindAddress)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port <= 0 || port > 65535 {
		return "", 0, fmt.Errorf("--webhook-bind-address: the port must be between 1 and 65535, got %q", portText)
	}
	return host, port, nil
}
