// Package app runs the quota webhook: flags, a manager without leader election (every replica serves), the
// webhooks, probes and metrics.
package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/karmada-quota/karmada-quota/pkg/admission"
	"github.com/karmada-quota/karmada-quota/pkg/scheme"
	"github.com/karmada-quota/karmada-quota/pkg/util/command"
	"github.com/karmada-quota/karmada-quota/pkg/util/kindjson"
)

// NewCommand returns the quota-webhook command.
func NewCommand() *cobra.Command {
	opts := NewOptions()
	return command.New("quota-webhook", "Admit Karmada ResourceBindings against KarmadaQuotas", opts, &opts.Kubeconfig,
		func(ctx context.Context, cfg *rest.Config) error { return Run(ctx, cfg, opts) })
}

// Run serves the webhooks against the karmada-apiserver at cfg until ctx is done, keeps serving, unready and
// closing its connections, for the shutdown delay (see drain), then drains in-flight requests.
func Run(ctx context.Context, cfg *rest.Config, opts *Options) error {
	ctrl.SetLogger(klog.NewKlogr())
	log := klog.FromContext(ctx)

	cfg = opts.ClientConfig(cfg, "karmada-quota-webhook")

	host, port, err := opts.hostPort()
	if err != nil {
		return err
	}
	shutdown := opts.GracefulShutdownTimeout
	stopping := &drain{}
	clients, err := kindjson.NewClients(cfg)
	if err != nil {
		return err
	}
	cacheOptions, err := admission.CacheOptions(clients)
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme.Scheme,
		MapperProvider:          clients.MapperProvider,
		Cache:                   cacheOptions,
		Metrics:                 metricsserver.Options{BindAddress: opts.MetricsBindAddress},
		PprofBindAddress:        opts.PprofBindAddress,
		HealthProbeBindAddress:  opts.HealthProbeBindAddress,
		GracefulShutdownTimeout: &shutdown,
		WebhookServer:           stopping.server(newWebhookServer(opts, host, port)),
	})
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	estimatorTLS, err := estimatorTLS(mgr, opts)
	if err != nil {
		return err
	}
	if err := admission.Setup(ctx, mgr, admission.Options{
		ReservationTTL: opts.ReservationTTL, DecisionTimeout: opts.DecisionTimeout, MaxReservations: opts.MaxReservations,
		ExemptKinds: opts.ExemptKinds, EstimatorAddress: opts.EstimatorBindAddress, EstimatorTLS: estimatorTLS,
		MemberEstimators: opts.MemberEstimators,
	}); err != nil {
		return fmt.Errorf("setting up the webhooks: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	// Ready only once the webhook server serves: before that the apiserver would be sent to a closed port, and
	// with failurePolicy Fail every binding write would fail.
	if err := mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("draining", func(*http.Request) error {
		if stopping.draining.Load() {
			return errors.New("shutting down")
		}
		return nil
	}); err != nil {
		return err
	}
	log.Info("Starting quota-webhook", "address", opts.BindAddress, "reservationTTL", opts.ReservationTTL)
	return mgr.Start(stopping.after(ctx, opts.ShutdownDelay))
}

// newWebhookServer is the binary's one TLS listener: TLS 1.2 at least, modern suites only (opts.TLS). Metrics and
// probes are plain HTTP on their own ports and offer no TLS at all. The server reloads the certificate when the
// files in CertDir change, so a renewal needs no restart.
func newWebhookServer(opts *Options, host string, port int) webhook.Server {
	return webhook.NewServer(webhook.Options{
		Host:    host,
		Port:    port,
		CertDir: opts.CertDir,
		TLSOpts: []func(*tls.Config){opts.TLS.Apply},
	})
}

// estimatorTLS is the scheduler estimator's TLS configuration when --estimator-tls asks for one: the webhook's
// serving certificate, reloaded when it is renewed, under the same TLS flags.
func estimatorTLS(mgr ctrl.Manager, opts *Options) (*tls.Config, error) {
	if !opts.EstimatorTLS {
		return nil, nil
	}
	watcher, err := certwatcher.New(filepath.Join(opts.CertDir, "tls.crt"), filepath.Join(opts.CertDir, "tls.key"))
	if err != nil {
		return nil, fmt.Errorf("the estimator's serving certificate: %w", err)
	}
	if err := mgr.Add(watcher); err != nil {
		return nil, err
	}
	cfg := &tls.Config{GetCertificate: watcher.GetCertificate}
	opts.TLS.Apply(cfg)
	return cfg, nil
}
