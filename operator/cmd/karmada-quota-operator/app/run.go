package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	operatorv1alpha1 "github.com/karmada-quota/karmada-quota/operator/api/v1alpha1"
	"github.com/karmada-quota/karmada-quota/operator/pkg/controller"
	"github.com/karmada-quota/karmada-quota/pkg/scheme"
	"github.com/karmada-quota/karmada-quota/pkg/util/command"
	"github.com/karmada-quota/karmada-quota/pkg/version"
)

type operatorOptions struct {
	command.Common
	LeaderElect             bool
	LeaderElectionNamespace string
	Workers                 int
}

func (o *operatorOptions) AddFlags(fs *pflag.FlagSet) {
	o.Common.AddFlags(fs, "reconciles")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "Elect one active replica; keep it on whenever more than one runs.")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-elect-resource-namespace", o.LeaderElectionNamespace,
		"Namespace, in the host cluster, of the Lease that elects the leader. Empty: the pod's namespace ($POD_NAMESPACE).")
	fs.IntVar(&o.Workers, "workers", o.Workers, "How many installations are reconciled at once.")
}

func (o *operatorOptions) Validate() error {
	errs := o.Common.Validate()
	if o.Workers <= 0 {
		errs = append(errs, fmt.Errorf("--workers must be positive, got %d", o.Workers))
	}
	if o.LeaderElect && o.LeaderElectionNamespace == "" {
		errs = append(errs, errors.New("--leader-elect-resource-namespace must be set (or $POD_NAMESPACE) when --leader-elect is on"))
	}
	return errors.Join(errs...)
}

func newOperatorCommand() *cobra.Command {
	opts := &operatorOptions{Common: command.NewCommon(50, 100), LeaderElect: true, Workers: 2, LeaderElectionNamespace: os.Getenv("POD_NAMESPACE")}
	return command.New("karmada-quota-operator", "Install, upgrade and repair karmada-quota on a Karmada from one custom resource",
		opts, &opts.Kubeconfig, func(ctx context.Context, cfg *rest.Config) error { return run(ctx, cfg, opts) })
}

func run(ctx context.Context, cfg *rest.Config, opts *operatorOptions) error {
	ctrl.SetLogger(klog.NewKlogr())
	cfg = opts.ClientConfig(cfg, "karmada-quota-operator")
	s := runtime.NewScheme()
	utilruntime.Must(scheme.AddToScheme(s))
	utilruntime.Must(operatorv1alpha1.AddToScheme(s))

	leaseDuration, renewDeadline, retryPeriod := 15*time.Second, 10*time.Second, 2*time.Second
	shutdown := opts.GracefulShutdownTimeout
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        s,
		Metrics:                       metricsserver.Options{BindAddress: opts.MetricsBindAddress},
		HealthProbeBindAddress:        opts.HealthProbeBindAddress,
		LeaderElection:                opts.LeaderElect,
		LeaderElectionResourceLock:    resourcelock.LeasesResourceLock,
		LeaderElectionNamespace:       opts.LeaderElectionNamespace,
		LeaderElectionID:              "karmada-quota-operator",
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &leaseDuration,
		RenewDeadline:                 &renewDeadline,
		RetryPeriod:                   &retryPeriod,
		GracefulShutdownTimeout:       &shutdown,
		Cache:                         controller.CacheOptions(),
	})
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	if name, err := controller.Setup(mgr, controller.Options{Version: version.Get().Version, Workers: opts.Workers}); err != nil {
		return fmt.Errorf("setting up %s: %w", name, err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	klog.FromContext(ctx).Info("Starting karmada-quota-operator", "version", version.Get().String(), "leaderElect", opts.LeaderElect)
	return mgr.Start(ctx)
}
