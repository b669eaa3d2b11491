package command

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
)

// Common are the options every binary has: where the karmada-apiserver is and how hard to press it, where metrics
// and probes are served, and how long to drain on shutdown.
type Common struct {
	Kubeconfig             string
	MetricsBindAddress     string
	HealthProbeBindAddress string
	// PprofBindAddress serves Go's /debug/pprof, off unless set: profiles show what the process holds and does, to
	// whoever can reach the address.
	PprofBindAddress        string
	KubeAPIQPS              float32
	KubeAPIBurst            int
	GracefulShutdownTimeout time.Duration
}

// NewCommon returns the defaults, with the client rate the binary needs.
func NewCommon(qps float32, burst int) Common {
	return Common{
		MetricsBindAddress:      ":8080",
		HealthProbeBindAddress:  ":8081",
		KubeAPIQPS:              qps,
		KubeAPIBurst:            burst,
		GracefulShutdownTimeout: 30 * time.Second,
	}
}

// AddFlags binds the options to fs; inFlight names what shutdown waits for ("requests", "reconciles").
func (c *Common) AddFlags(fs *pflag.FlagSet, inFlight string) {
	fs.StringVar(&c.Kubeconfig, "kubeconfig", c.Kubeconfig, "Kubeconfig of the karmada-apiserver. Empty: in-cluster config or $KUBECONFIG.")
	fs.StringVar(&c.MetricsBindAddress, "metrics-bind-address", c.MetricsBindAddress, "Address of the Prometheus /metrics endpoint; 0 disables it.")
	fs.StringVar(&c.HealthProbeBindAddress, "health-probe-bind-address", c.HealthProbeBindAddress, "Address of /healthz and /readyz.")
	fs.StringVar(&c.PprofBindAddress, "pprof-bind-address", c.PprofBindAddress, "Address of Go's /debug/pprof profiles (heap, CPU, goroutines); empty or 0 disables it.")
	fs.Float32Var(&c.KubeAPIQPS, "kube-api-qps", c.KubeAPIQPS, "Sustained queries per second to the karmada-apiserver.")
	fs.IntVar(&c.KubeAPIBurst, "kube-api-burst", c.KubeAPIBurst, "Burst of queries to the karmada-apiserver.")
	fs.DurationVar(&c.GracefulShutdownTimeout, "graceful-shutdown-timeout", c.GracefulShutdownTimeout,
		fmt.Sprintf("How long in-flight %s may take to finish on shutdown.", inFlight))
}

// Validate returns every invalid option.
func (c *Common) Validate() []error {
	var errs []error
	if c.KubeAPIQPS <= 0 {
		errs = append(errs, fmt.Errorf("--kube-api-qps must be positive, got %v", c.KubeAPIQPS))
	}
	if c.KubeAPIBurst <= 0 {
		errs = append(errs, fmt.Errorf("--kube-api-burst must be positive, got %d", c.KubeAPIBurst))
	}
	if c.GracefulShutdownTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--graceful-shutdown-timeout must be positive, got %s", c.GracefulShutdownTimeout))
	}
	return errs
}

// ClientConfig is cfg with the binary's client rate and user agent.
func (c *Common) ClientConfig(cfg *rest.Config, userAgent string) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = c.KubeAPIQPS, c.KubeAPIBurst
	cfg.UserAgent = userAgent
	return cfg
}
