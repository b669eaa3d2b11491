// Package install proves the installation of karmada-quota onto two planes against two real control planes (etcd +
// kube-apiserver each): one plays the host cluster, where the components run; the other the karmada-apiserver,
// with Karmada's CRDs. It covers the install phases (operator/pkg/install, as the Helm chart's hook Jobs run
// them, from the chart rendered by operator/pkg/render) and the operator's reconciler (operator/pkg/controller).
//
// envtest runs no kube-controller-manager, so the test plays the two controllers the installation leans on:
// the karmada-apiserver's service-account token controller (it fills token Secrets with real tokens from the
// TokenRequest API, so the kubeconfigs the installer writes really authenticate) and the host's Deployment
// controller (it reports a rollout complete when a spec says so).
package install

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2/textlogger"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/karmada-quota/karmada-quota/internal/specdigest"
	"github.com/karmada-quota/karmada-quota/internal/testenv"
	operatorv1alpha1 "github.com/karmada-quota/karmada-quota/operator/api/v1alpha1"
)

var (
	ctx    context.Context
	cancel context.CancelFunc

	// hostPlane plays the host cluster: the operator's CRD is installed, nothing else.
	hostPlane *plane
	// karmadaPlane plays the karmada-apiserver: Karmada's CRDs are installed; karmada-quota's CRD is the
	// installation's to apply.
	karmadaPlane *plane

	// tokens and deployments play kube-controller-manager's token and Deployment controllers.
	tokens      *tokenController
	deployments *deploymentController
)

// plane is one running control plane and an admin's ways into it.
type plane struct {
	env    *envtest.Environment
	config *rest.Config
	client client.Client
	typed  kubernetes.Interface
	// adminKubeconfig authenticates as a member of system:masters, its CA inline, as Karmada's admin
	// kubeconfig Secret does.
	adminKubeconfig []byte
}

func TestInstall(t *testing.T) {
	RegisterFailHandler(Fail)
	specdigest.RunSpecs(t, "Install integration")
}

var _ = BeforeSuite(func() {
	// With timestamps, to tell where the time of a slow spec goes; shown only for failing specs.
	ctrl.SetLogger(textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(GinkgoWriter), textlogger.Verbosity(1))))
	// An apiserver round trip or a reconcile takes milliseconds; a wait that gets long has found a bug.
	SetDefaultEventuallyTimeout(10 * time.Second)
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	ctx, cancel = context.WithCancel(context.Background())

	karmadaCRDs, err := testenv.KarmadaCRDDirs()
	Expect(err).NotTo(HaveOccurred())
	karmadaPlane = startPlane(karmadaCRDs)
	hostPlane = startPlane([]string{filepath.Join(testenv.RepoRoot(), "operator", "charts", "karmada-quota-operator", "files", "crds")})

	tokens = startTokenController(ctx, karmadaPlane.typed, karmadaPlane.config.CAData)
	deployments = startDeploymentController(ctx, hostPlane)
	startOperator(ctx)
})

var _ = AfterSuite(func() {
	stopOperator()
	cancel()
	for _, p := range []*plane{hostPlane, karmadaPlane} {
		if p != nil {
			Expect(p.env.Stop()).To(Succeed())
		}
	}
})

// testScheme knows what the tests read and write in either plane: Kubernetes, apiextensions, Karmada's and
// karmada-quota's APIs, and the operator's.
func testScheme() *runtime.Scheme {
	GinkgoHelper()
	s, err := testenv.Scheme()
	Expect(err).NotTo(HaveOccurred())
	Expect(operatorv1alpha1.AddToScheme(s)).To(Succeed())
	return s
}

// startPlane starts a control plane with the CRDs of the given folders only.
func startPlane(crdDirs []string) *plane {
	GinkgoHelper()
	env, err := testenv.NewEnvironment()
	Expect(err).NotTo(HaveOccurred())
	s := testScheme()
	env.Scheme = s
	env.CRDInstallOptions.Scheme = s
	env.CRDInstallOptions.Paths = crdDirs
	cfg, err := env.Start()
	Expect(err).NotTo(HaveOccurred())
	p := &plane{env: env, config: cfg}
	p.client, err = client.New(cfg, client.Options{Scheme: s})
	Expect(err).NotTo(HaveOccurred())
	p.typed, err = kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	admin, err := env.AddUser(envtest.User{Name: "plane-admin", Groups: []string{"system:masters"}}, nil)
	Expect(err).NotTo(HaveOccurred())
	p.adminKubeconfig, err = admin.KubeConfig()
	Expect(err).NotTo(HaveOccurred())
	return p
}
