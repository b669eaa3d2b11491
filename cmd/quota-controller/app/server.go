// Package app runs the quota controller: flags, a manager with leader election (one replica counts, the others
// stand by with warm caches), the controller, the webhook certificate management, probes and metrics.
package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/karmada-quota/karmada-quota/pkg/certs"
	"github.com/karmada-quota/karmada-quota/pkg/controller"
	"github.com/karmada-quota/karmada-quota/pkg/estimator/discovery"
	"github.com/karmada-quota/karmada-quota/pkg/metrics"
	"github.com/karmada-quota/karmada-quota/pkg/scheme"
	"github.com/karmada-quota/karmada-quota/pkg/util/command"
	"github.com/karmada-quota/karmada-quota/pkg/util/kindjson"
)

// cacheSyncProbeWait bounds how long one /readyz request waits for the informers to sync, so a probe without a
// timeout of its own gets an answer instead of hanging until the caches are warm.
const cacheSyncProbeWait = time.Second

// NewCommand returns the quota-controller command.
func NewCommand() *cobra.Command {
	opts := NewOptions()
	return command.New("quota-controller", "Count what ResourceBindings use into KarmadaQuota status and settle reservations", opts, &opts.Kubeconfig,
		func(ctx context.Context, cfg *rest.Config) error { return Run(ctx, cfg, opts) })
}

// Run reconciles quotas against the karmada-apiserver at cfg until ctx is done, leading or standing by as the
// election decides, then lets in-flight reconciles finish and hands the lease over.
func Run(ctx context.Context, cfg *rest.Config, opts *Options) error {
	ctrl.SetLogger(klog.NewKlogr())
	log := klog.FromContext(ctx)
	// Until the leader's first recount (Options.FirstPassDone): a standby keeps collecting often, with its cache
	// full and little else to collect, until it leads and has recounted.
	command.CollectOftenUntilStarted()

	cfg = opts.ClientConfig(cfg, "karmada-quota-controller")

	leaseDuration, renewDeadline, retryPeriod := opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod
	shutdown := opts.GracefulShutdownTimeout
	clients, err := kindjson.NewClients(cfg)
	if err != nil {
		return err
	}
	cacheOptions, err := controller.CacheOptions(clients)
	if err != nil {
		return err
	}
	var estimatorServices *discovery.Options
	if opts.EstimatorAddress != "" {
		services, err := opts.estimatorServices()
		if err != nil {
			return err
		}
		estimatorServices = &services
		cacheOptions.ByObject[&corev1.Service{}] = discovery.CacheOptions(services)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:         scheme.Scheme,
		MapperProvider: clients.MapperProvider,
		Cache:          cacheOptions,
		// metrics.Server serves /metrics instead (below): the registry and the per-quota series beside it.
		Metrics:                    metricsserver.Options{BindAddress: "0"},
		PprofBindAddress:           opts.PprofBindAddress,
		HealthProbeBindAddress:     opts.HealthProbeBindAddress,
		LeaderElection:             opts.LeaderElect,
		LeaderElectionResourceLock: resourcelock.LeasesResourceLock,
		LeaderElectionNamespace:    opts.LeaderElectionNamespace,
		LeaderElectionID:           opts.LeaderElectionID,
		// Step down as soon as the manager stops, so a rolling update hands over at once instead of leaving quotas
		// uncounted for a lease duration. Safe because the process exits right after Run returns.
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &leaseDuration,
		RenewDeadline:                 &renewDeadline,
		RetryPeriod:                   &retryPeriod,
		GracefulShutdownTimeout:       &shutdown,
	})
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	if opts.MetricsBindAddress != "0" {
		if err := mgr.Add(metrics.Server{Address: opts.MetricsBindAddress, Gatherer: ctrlmetrics.Registry}); err != nil {
			return fmt.Errorf("adding the metrics server: %w", err)
		}
	}
	if name, err := controller.Setup(ctx, mgr, opts.ControllerOptions()); err != nil {
		return fmt.Errorf("setting up %s: %w", name, err)
	}
	if estimatorServices != nil {
		if err := discovery.Setup(mgr, *estimatorServices); err != nil {
			return fmt.Errorf("setting up the estimator Services: %w", err)
		}
	}
	stopEvents, err := setupCertificates(mgr, opts)
	if err != nil {
		return fmt.Errorf("setting up certificate management: %w", err)
	}
	defer stopEvents()
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	// Ready only once the informers have synced: before that the controller cannot count, and a rolling update
	// must not retire the old replica for one that cannot yet take over.
	if err := mgr.AddReadyzCheck("cache-sync", cacheSyncedChecker(mgr)); err != nil {
		return err
	}
	log.Info("Starting quota-controller",
		"leaderElect", opts.LeaderElect,
		"leaderElectionNamespace", opts.LeaderElectionNamespace,
		"leaderElectionID", opts.LeaderElectionID,
		"resyncPeriod", opts.ResyncPeriod,
		"workers", opts.Workers,
		"requeueCooldown", opts.RequeueCooldown,
		"webhookCertMode", opts.Certs.Mode,
		"estimatorAddress", opts.EstimatorAddress)
	return mgr.Start(ctx)
}

// setupCertificates adds the webhook certificate reconciler to the manager, leader-elected, unless certificate
// management is off. It writes Secrets (and records events on them) through a client of the host cluster; the
// webhook configuration it keeps in sync is in the karmada-apiserver, the manager's cluster. It returns what
// stops the event recorder.
func setupCertificates(mgr ctrl.Manager, opts *Options) (func(), error) {
	if opts.Certs.Mode == certs.ModeNone {
		return func() {}, nil
	}
	hostCfg, err := command.HostRestConfig(opts.HostKubeconfig)
	if err != nil {
		return nil, err
	}
	hostCfg = rest.CopyConfig(hostCfg)
	hostCfg.UserAgent = "karmada-quota-controller"
	host, err := client.New(hostCfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		return nil, fmt.Errorf("creating the host cluster client: %w", err)
	}
	// Uncached: the manager's client would start an informer over every webhook configuration, which the
	// controller may not list; it may only get and patch its own.
	karmada, err := client.New(mgr.GetConfig(), client.Options{Scheme: scheme.Scheme, HTTPClient: mgr.GetHTTPClient(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return nil, fmt.Errorf("creating the karmada-apiserver client: %w", err)
	}
	hostClientset, err := kubernetes.NewForConfig(hostCfg)
	if err != nil {
		return nil, fmt.Errorf("creating the host cluster event client: %w", err)
	}
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: hostClientset.CoreV1().Events(opts.Certs.Namespace)})
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "karmada-quota-controller"})

	reconciler, err := certs.NewReconciler(host, karmada, opts.Certs, clock.RealClock{})
	if err != nil {
		broadcaster.Shutdown()
		return nil, err
	}
	// Its series are registered with the controller's own (metrics.RegisterController).
	if err := mgr.Add(reconciler.WithEventRecorder(recorder)); err != nil {
		broadcaster.Shutdown()
		return nil, err
	}
	return broadcaster.Shutdown, nil
}

// cacheSyncedChecker passes once the manager's informers have synced.
func cacheSyncedChecker(mgr ctrl.Manager) healthz.Checker {
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), cacheSyncProbeWait)
		defer cancel()
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return errors.New("informers have not synced yet")
		}
		return nil
	}
}
