package app

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"
)

// apiserverRequestTimeout is the karmada-apiserver's default --request-timeout. A reservation must outlive it, or
// a binding write admitted at its start could commit after its reservation lapsed and go uncounted.
const apiserverRequestTimeout = 60 * time.Second

// Options are the webhook's flags.
type Options struct {
	Kubeconfig              string
	CertDir                 string
	BindAddress             string
	Port                    int
	MetricsBindAddress      string
	HealthProbeBindAddress  string
	ReservationTTL          time.Duration
	DecisionTimeout         time.Duration
	KubeAPIQPS              float32
	KubeAPIBurst            int
	GracefulShutdownTimeout time.Duration
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		CertDir:                 "/tmp/k8s-webhook-server/serving-certs",
		Port:                    9443,
		MetricsBindAddress:      ":8080",
		HealthProbeBindAddress:  ":8081",
		ReservationTTL:          2 * time.Minute,
		DecisionTimeout:         8 * time.Second,
		KubeAPIQPS:              100,
		KubeAPIBurst:            200,
		GracefulShutdownTimeout: 30 * time.Second,
	}
}

// AddFlags binds the options to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Kubeconfig of the karmada-apiserver. Empty: in-cluster config or $KUBECONFIG.")
	fs.StringVar(&o.CertDir, "cert-dir", o.CertDir, "Folder holding the serving certificate tls.crt and key tls.key.")
	fs.StringVar(&o.BindAddress, "bind-address", o.BindAddress, "Address the webhook server listens on. Empty: all interfaces.")
	fs.IntVar(&o.Port, "port", o.Port, "Port the webhook server listens on.")
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", o.MetricsBindAddress, "Address of the Prometheus /metrics endpoint; 0 disables it.")
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", o.HealthProbeBindAddress, "Address of /healthz and /readyz.")
	fs.DurationVar(&o.ReservationTTL, "reservation-ttl", o.ReservationTTL,
		"How long a reservation outlives a binding write that never happened. Must exceed the apiserver's 60s request timeout.")
	fs.DurationVar(&o.DecisionTimeout, "decision-timeout", o.DecisionTimeout,
		"Bound on deciding one batch of a namespace's binding writes, retries included. Keep it below the webhook's timeoutSeconds.")
	fs.Float32Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS, "Sustained queries per second to the karmada-apiserver.")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "Burst of queries to the karmada-apiserver.")
	fs.DurationVar(&o.GracefulShutdownTimeout, "graceful-shutdown-timeout", o.GracefulShutdownTimeout,
		"How long in-flight requests may take to finish on shutdown.")
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
	if o.KubeAPIQPS <= 0 {
		errs = append(errs, fmt.Errorf("--kube-api-qps must be positive, got %v", o.KubeAPIQPS))
	}
	if o.KubeAPIBurst <= 0 {
		errs = append(errs, fmt.Errorf("--kube-api-burst must be positive, got %d", o.KubeAPIBurst))
	}
	if o.CertDir == "" {
		errs = append(errs, errors.New("--cert-dir must be set"))
	}
	return errors.Join(errs...)
}
