// Package cli runs `kubectl karmada quota` in-process against a real etcd + kube-apiserver with Karmada's CRDs and
// the project's, and compares what it prints (stdout, stderr, exit code) with testdata/*.golden. The quotas'
// status is computed by the real quota controller from real ResourceBindings, so the plugin is checked against
// what production writes. `go test ./test/integration/cli -update` (with KUBEBUILDER_ASSETS set, as
// `make test-integration` sets it) rewrites the golden files.
package cli

import (
	"context"
	"os"
	"path/filepath"
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
	// dir holds the kubeconfig the plugin is pointed at and its discovery cache.
	dir        string
	kubeconfig string
)

func TestCLI(t *testing.T) {
	RegisterFailHandler(Fail)
	specdigest.RunSpecs(t, "kubectl karmada quota against a real apiserver")
}

var _ = BeforeSuite(func() {
	ctx, cancel = context.WithCancel(context.Background())
	var err error
	testEnv, cfg, k8s, err = framework.Start()
	Expect(err).NotTo(HaveOccurred())

	// A kubeconfig file, as a user has one: the plugin loads it through kubectl's own flags.
	admin, err := testEnv.AddUser(envtest.User{Name: "cli-admin", Groups: []string{"system:masters"}}, nil)
	Expect(err).NotTo(HaveOccurred())
	raw, err := admin.KubeConfig()
	Expect(err).NotTo(HaveOccurred())
	dir, err = os.MkdirTemp("", "kubectl-karmada-quota-")
	Expect(err).NotTo(HaveOccurred())
	kubeconfig = filepath.Join(dir, "kubeconfig")
	Expect(os.WriteFile(kubeconfig, raw, 0o600)).To(Succeed())

	createFixtures()
})

var _ = AfterSuite(func() {
	cancel()
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
	if dir != "" {
		Expect(os.RemoveAll(dir)).To(Succeed())
	}
})
