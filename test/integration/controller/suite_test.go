// Package controller proves the quota controller against a real etcd + kube-apiserver, running together with the
// real webhook: usage recounted per member cluster, reservations settled or expired, the reservations proposal's
// race closed under a lagging informer, deletes freeing quota in seconds, drift repaired, waiting bindings
// requeued.
package controller

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/karmada-quota/karmada-quota/internal/specdigest"
	"github.com/karmada-quota/karmada-quota/pkg/controller"
	"github.com/karmada-quota/karmada-quota/test/integration/framework"
)

var (
	testEnv  *envtest.Environment
	cfg      *rest.Config
	k8s      client.Client
	ctx      context.Context
	cancel   context.CancelFunc
	webhooks *framework.Webhooks
	// clock drives the controller's notion of now, so that expiry is tested without waiting minutes. It follows
	// real time unless a test steps it.
	clock *clocktesting.FakeClock
)

func TestController(t *testing.T) {
	RegisterFailHandler(Fail)
	specdigest.RunSpecs(t, "Controller integration")
}

var _ = BeforeSuite(func() {
	ctx, cancel = context.WithCancel(context.Background())
	var err error
	testEnv, cfg, k8s, err = framework.Start()
	Expect(err).NotTo(HaveOccurred())
	webhooks, err = framework.StartWebhooks(ctx, cfg, k8s, 1, nil, nil)
	Expect(err).NotTo(HaveOccurred())
	Expect(webhooks.WaitReady(ctx, k8s)).To(Succeed())
})

var _ = AfterSuite(func() {
	Expect(framework.StopAll(testEnv, webhooks, cancel)).To(Succeed())
})

// startController runs a controller for one spec, stopped when the spec ends; bindingDelay lags its binding
// informer (framework.Lag).
func startController(opts controller.Options, bindingDelay time.Duration) {
	startLagging(opts, framework.Lag{Bindings: bindingDelay})
}

// startLagging runs a controller for one spec whose informers lag by lag, stopped when the spec ends.
func startLagging(opts controller.Options, lag framework.Lag) {
	clock = clocktesting.NewFakeClock(time.Now())
	if opts.Clock == nil {
		opts.Clock = clock
	}
	if opts.ResyncPeriod == 0 {
		opts.ResyncPeriod = 5 * time.Minute
	}
	if opts.Workers == 0 {
		opts.Workers = 4
	}
	// Paced as it ships: binding changes within the interval are recounted together.
	opts.SettleInterval = controller.DefaultSettleInterval
	c, err := framework.StartController(ctx, cfg, opts, lag)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(c.Stop()).To(Succeed()) })
}
