// Package e2e proves karmada-quota on a real Karmada: karmada-apiserver, aggregated apiserver,
// karmada-controller-manager, karmada-scheduler and karmada-webhook, with two member clusters whose pods "run"
// on KWOK nodes, and karmada-quota installed as in production (hack/localkarmada). Workloads are what users
// apply: Deployments, Services and PropagationPolicies on the karmada-apiserver; Karmada's detector makes the
// bindings and its scheduler places them, through the quota webhook.
//
// The suite starts its own environment in a temporary folder and stops it at the end. With LOCAL_KARMADA_DIR set
// to the folder of a running `make up`, it runs against that one instead and leaves it running.
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/hack/localkarmada"
	"github.com/karmada-quota/karmada-quota/internal/specdigest"
)

var (
	env     *localkarmada.Environment
	karmada client.Client
	// members are the member clusters' clients, by cluster name.
	members  = map[string]client.Client{}
	started  bool
	ctx      context.Context
	cancel   context.CancelFunc
	tempRoot string
)

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	specdigest.RunSpecs(t, "karmada-quota on a local Karmada")
}

var _ = BeforeSuite(func() {
	ctx, cancel = context.WithCancel(context.Background())
	var err error
	if dir := os.Getenv("LOCAL_KARMADA_DIR"); dir != "" {
		env, err = localkarmada.Load(dir)
		Expect(err).NotTo(HaveOccurred(), "LOCAL_KARMADA_DIR=%s holds no environment: run `make up`", dir)
		Expect(env.Running(ctx)).To(BeTrue(), "the environment in %s is not running: run `make up`", dir)
	} else {
		toolPath, stages := os.Getenv("LOCAL_KARMADA_TOOL_PATH"), os.Getenv("KWOK_STAGES")
		Expect(toolPath).NotTo(BeEmpty(), "LOCAL_KARMADA_TOOL_PATH is not set: run the suite with `make test-e2e`")
		Expect(stages).NotTo(BeEmpty(), "KWOK_STAGES is not set: run the suite with `make test-e2e`")
		tempRoot, err = os.MkdirTemp("", "karmada-quota-e2e-")
		Expect(err).NotTo(HaveOccurred())
		env, err = localkarmada.Up(ctx, localkarmada.Options{
			Dir: tempRoot, ToolPath: filepath.SplitList(toolPath), KWOKStages: stages, Tied: true,
			ContainerRuntime: os.Getenv("LOCAL_KARMADA_CONTAINER_RUNTIME"), Progress: GinkgoWriter,
		})
		Expect(err).NotTo(HaveOccurred())
		started = true
	}
	karmada, err = localkarmada.Client(env.Karmada.Kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	for _, m := range env.Members {
		members[m.Name], err = localkarmada.Client(m.Kubeconfig)
		Expect(err).NotTo(HaveOccurred())
	}
})

var _ = AfterSuite(func() {
	if cancel != nil {
		cancel()
	}
	if !suitePassed && env != nil {
		// CI keeps no files: the ends of the logs that decide quota go to the test output.
		for _, name := range []string{"karmada-scheduler", "karmada-controller-manager"} {
			fmt.Fprintf(GinkgoWriter, "\n--- last lines of %s ---\n%s\n", name, env.LogTail(name, 40))
		}
		for _, deployment := range []string{localkarmada.QuotaWebhookDeployment, localkarmada.QuotaControllerDeployment} {
			pods, _ := env.DeploymentPods(context.Background(), localkarmada.KarmadaNamespace, deployment)
			for _, p := range pods {
				fmt.Fprintf(GinkgoWriter, "\n--- last lines of pod %s ---\n%s\n", p.Name,
					env.PodLogTail(context.Background(), p.Namespace, p.Name, p.Pod.Spec.Containers[0].Name, 40))
			}
		}
		// The host's pods run as processes: the output of those that failed, are not ready or restarted.
		fmt.Fprint(GinkgoWriter, env.FailingPodLogs(context.Background(), 40))
	}
	if !started {
		return
	}
	Expect(env.Down()).To(Succeed())
	if !suitePassed {
		fmt.Fprintf(GinkgoWriter, "logs of the environment kept in %s\n", filepath.Join(tempRoot, "logs"))
		return
	}
	Expect(os.RemoveAll(tempRoot)).To(Succeed())
})

// suitePassed turns false at the first failed spec, so the logs of a failed run are kept.
var suitePassed = true

var _ = ReportAfterEach(func(report SpecReport) {
	if report.Failed() {
		suitePassed = false
	}
})
