// Package burst proves that a quota's status stays within what the apiserver stores. A burst of placements into
// one namespace while the controller is away gets only admissions and QuotaExceeded refusals, never past hard; the
// reservation list stays within its bound, the oldest reservations folded into one sum; and the controller, once
// back, settles the status to the truth with no reservation left. It also measures what a reservation costs in
// bytes, and how long a list the apiserver accepts without the bound.
//
// CI runs it small: a bound lowered to BURST_MAX_RESERVATIONS (default 20) and BURST_PLACEMENTS placements (default
// 150). `make test-burst` runs it at the size of issue 13: 10,000 placements against the shipped bound
// (BURST_MAX_RESERVATIONS=shipped).
package burst

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	webhookapp "github.com/karmada-quota/karmada-quota/cmd/quota-webhook/app"
	"github.com/karmada-quota/karmada-quota/internal/specdigest"
	"github.com/karmada-quota/karmada-quota/pkg/quota"
	"github.com/karmada-quota/karmada-quota/test/integration/framework"
)

var (
	testEnv  *envtest.Environment
	cfg      *rest.Config
	k8s      client.Client
	ctx      context.Context
	cancel   context.CancelFunc
	webhooks *framework.Webhooks

	// sizes of the burst, from the environment; BURST_MAX_RESERVATIONS=shipped is quota.MaxReservations.
	placements      = envInt("BURST_PLACEMENTS", 150)
	maxReservations = boundFromEnv()
	writers         = envInt("BURST_WRITERS", 16)
)

func boundFromEnv() int {
	if os.Getenv("BURST_MAX_RESERVATIONS") == "shipped" {
		return quota.MaxReservations
	}
	return envInt("BURST_MAX_RESERVATIONS", 20)
}

func envInt(name string, fallback int) int {
	v, err := strconv.Atoi(os.Getenv(name))
	if err != nil || v <= 0 {
		return fallback
	}
	return v
}

func TestBurst(t *testing.T) {
	RegisterFailHandler(Fail)
	specdigest.RunSpecs(t, "Burst integration")
}

var _ = BeforeSuite(func() {
	ctx, cancel = context.WithCancel(context.Background())
	var err error
	testEnv, cfg, k8s, err = framework.Start()
	Expect(err).NotTo(HaveOccurred())
	// Two replicas racing on one quota, each keeping the list within the bound.
	webhooks, err = framework.StartWebhooks(ctx, cfg, k8s, 2, func(o *webhookapp.Options) {
		o.MaxReservations = maxReservations
	}, nil)
	Expect(err).NotTo(HaveOccurred())
	Expect(webhooks.WaitReady(ctx, k8s)).To(Succeed())
	GinkgoWriter.Println(fmt.Sprintf("burst: %d placements, %d writers, at most %d reservations listed", placements, writers, maxReservations))
})

var _ = AfterSuite(func() {
	Expect(framework.StopAll(testEnv, webhooks, cancel)).To(Succeed())
})
