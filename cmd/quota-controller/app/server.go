// Package app runs the quota controller: flags, a manager with leader election (one replica counts, the others
// stand by with warm caches), the controller, probes and metrics.
package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/karmada-quota/karmada-quota/pkg/controller"
	"github.com/karmada-quota/karmada-quota/pkg/scheme"
	"github.com/karmada-quota/karmada-quota/pkg/util/command"
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

	cfg = opts.ClientConfig(cfg, "karmada-quota-controller")

	leaseDuration, renewDeadline, retryPeriod := opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod
	shutdown := opts.GracefulShutdownTimeout
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                     scheme.Scheme,
		Metrics:                    metricsserver.Options{BindAddress: opts.MetricsBindAddress},
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
	if name, err := controller.Setup(ctx, mgr, opts.ControllerOptions()); err != nil {
		return fmt.Errorf("setting up %s: %w", name, err)
	}
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
		"requeueCooldown", opts.RequeueCooldown)
	return mgr.Start(ctx)
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
