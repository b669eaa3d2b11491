// Package api proves the API surface the rest of the system stands on, against a real etcd + kube-apiserver:
// the KarmadaQuota CRD (schema, status subresource, compare-and-swap) and Karmada's ResourceBinding as the
// webhook and controller will see it.
package api

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/karmada-quota/karmada-quota/internal/specdigest"
	"github.com/karmada-quota/karmada-quota/test/integration/framework"
)

var (
	testEnv *envtest.Environment
	cfg     *rest.Config
	k8s     client.Client
	ctx     context.Context
	cancel  context.CancelFunc
)

func TestAPI(t *testing.T) {
	RegisterFailHandler(Fail)
	specdigest.RunSpecs(t, "API integration")
}

var _ = BeforeSuite(func() {
	ctx, cancel = context.WithCancel(context.Background())
	var err error
	testEnv, cfg, k8s, err = framework.Start()
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	cancel()
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})
