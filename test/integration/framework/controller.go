package framework

import (
	"context"
	"fmt"
	"runtime/pprof"
	"strings"
	"time"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/controller"
	"github.com/karmada-quota/karmada-quota/pkg/scheme"
	"github.com/karmada-quota/karmada-quota/pkg/util/kindjson"
)

// Controller is the quota controller running in this process against the test apiserver.
type Controller struct {
	stop context.CancelFunc
	done chan error
}

// Lag holds every event of a kind that long before the controller's cache sees it: a lagging informer, as under
// load. The informers of different kinds are not ordered with each other, and each of them can fall behind.
type Lag struct {
	Bindings, Ledgers time.Duration
}

// StartController runs the real quota controller, its informers lagging by lag.
func StartController(ctx context.Context, cfg *rest.Config, opts controller.Options, lag Lag) (*Controller, error) {
	clients, err := kindjson.NewClients(cfg)
	if err != nil {
		return nil, err
	}
	cacheOpts, err := controller.CacheOptions(clients)
	if err != nil {
		return nil, err
	}
	if lag.Bindings > 0 {
		cacheOpts.ByObject[&workv1alpha2.ResourceBinding{}] = cache.ByObject{Transform: func(obj any) (any, error) {
			time.Sleep(lag.Bindings)
			return controller.TrimBinding(obj)
		}}
	}
	if lag.Ledgers > 0 {
		stripManagedFields := cacheOpts.DefaultTransform
		cacheOpts.ByObject[&quotav1alpha1.KarmadaQuotaLedger{}] = cache.ByObject{Transform: func(obj any) (any, error) {
			time.Sleep(lag.Ledgers)
			return stripManagedFields(obj)
		}}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme.Scheme,
		MapperProvider:          clients.MapperProvider,
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:  "0",
		Cache:                   cacheOpts,
		GracefulShutdownTimeout: ptr.To(5 * time.Second),
		// Tests run several controllers one after another in one process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return nil, err
	}
	if name, err := controller.Setup(ctx, mgr, opts); err != nil {
		return nil, fmt.Errorf("setting up %s: %w", name, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	c := &Controller{stop: cancel, done: make(chan error, 1)}
	go func() { c.done <- mgr.Start(ctx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		cancel()
		return nil, fmt.Errorf("the controller's cache never synced")
	}
	return c, nil
}

// Stop stops the controller and waits for it. A controller that does not stop cleanly (within its grace period,
// most often) has something that ignores its context: the error carries every goroutine's stack, which names it.
func (c *Controller) Stop() error {
	c.stop()
	err := <-c.done
	if err != nil {
		var stacks strings.Builder
		_ = pprof.Lookup("goroutine").WriteTo(&stacks, 1)
		return fmt.Errorf("%w; the goroutines then:\n%s", err, stacks.String())
	}
	return err
}
