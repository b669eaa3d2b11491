// Package webhook proves admission against a real etcd + kube-apiserver: the quota webhook runs as two replicas
// of the real app behind one address, registered by a ValidatingWebhookConfiguration, and every binding write in
// these tests goes through the apiserver as Karmada's scheduler would send it.
package webhook

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	webhookapp "github.com/karmada-quota/karmada-quota/cmd/quota-webhook/app"
	"github.com/karmada-quota/karmada-quota/internal/specdigest"
	"github.com/karmada-quota/karmada-quota/test/integration/framework"
)

var (
	testEnv  *envtest.Environment
	cfg      *rest.Config
	k8s      client.Client
	ctx      context.Context
	cancel   context.CancelFunc
	webhooks *framework.Webhooks
	// quotaWatch holds back the KarmadaQuota watch events of the suite's replicas when a test pauses it.
	quotaWatch = framework.NewWatchGate("karmadaquotas")
)

func TestWebhook(t *testing.T) {
	RegisterFailHandler(Fail)
	specdigest.RunSpecs(t, "Webhook integration")
}

// exemptKind is the kind the suite's webhooks let through although they cannot know its pods.
const exemptKind = "Gadget.example.com"

var _ = BeforeSuite(func() {
	ctx, cancel = context.WithCancel(context.Background())
	var err error
	testEnv, cfg, k8s, err = framework.Start()
	Expect(err).NotTo(HaveOccurred())
	webhooks, err = framework.StartWebhooks(ctx, quotaWatch.Wrap(cfg), k8s, 2, func(o *webhookapp.Options) {
		// A kind whose pods karmada-quota cannot know, exempted as an admin would (gates_test.go).
		o.ExemptKinds = []string{exemptKind}
	}, nil)
	Expect(err).NotTo(HaveOccurred())
	Expect(webhooks.WaitReady(ctx, k8s)).To(Succeed())
})

var _ = AfterSuite(func() {
	Expect(framework.StopAll(testEnv, webhooks, cancel)).To(Succeed())
})
