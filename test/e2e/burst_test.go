package e2e

import (
	"fmt"
	"sync"
	"time"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/karmada-quota/karmada-quota/hack/localkarmada"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
)

// burst applies n Deployments of one 1-CPU replica at once, each with its policy, and returns their names.
func burst(ns string, n int) []string {
	names := make([]string, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		names[i] = fmt.Sprintf("burst-%02d", i)
		wg.Go(func() {
			if err := karmada.Create(ctx, deployment(ns, names[i], 1, "1", "64Mi")); err != nil {
				errs <- err
				return
			}
			errs <- karmada.Create(ctx, propagation(ns, names[i], "apps/v1", "Deployment", divided()))
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		Expect(err).NotTo(HaveOccurred())
	}
	return names
}

// expectExactlyAdmitted waits until every Deployment of the burst is either scheduled or refused for quota, and
// checks that the scheduled ones are exactly what the quota admits: hard CPUs' worth, every one running in a
// member, and the quota's status saying the same.
func expectExactlyAdmitted(ns, quota string, names []string, hardCPU int) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		scheduled, refused := 0, 0
		for _, name := range names {
			rb, err := binding(ns, name, "Deployment")
			g.Expect(err).NotTo(HaveOccurred())
			cond := meta.FindStatusCondition(rb.Status.Conditions, workv1alpha2.Scheduled)
			g.Expect(cond).NotTo(BeNil(), "%s not scheduled yet", name)
			switch {
			case cond.Status == metav1.ConditionTrue && placedReplicas(rb) == 1:
				scheduled++
			case cond.Status == metav1.ConditionFalse && cond.Reason == workv1alpha2.BindingReasonQuotaExceeded && placedReplicas(rb) == 0:
				refused++
			default:
				g.Expect(cond).To(BeNil(), "%s is neither scheduled nor refused for quota: %s", name, dump(cond))
			}
		}
		g.Expect(scheduled).To(Equal(hardCPU), "scheduled (%d refused)", refused)
		g.Expect(refused).To(Equal(len(names) - hardCPU))
		var pods int64
		for _, used := range runningRequests(g, ns) {
			pods += used["pods"]
		}
		g.Expect(pods).To(Equal(int64(hardCPU)), "pods running in the members")
	}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	status := expectSettled(ns, quota)
	Expect(canonical(status.Used)).To(Equal(resources.List{"requests.cpu": cpu(float64(hardCPU))}))
}

var _ = Describe("A burst of Deployments", func() {
	It("never admits beyond hard, and Karmada schedules exactly the admitted ones", func() {
		ns := newNamespace("burst")
		createQuota(ns, "compute", list("cpu", "10"))
		sampler := sampleAdmissions(ns, "compute")
		names := burst(ns, 20)
		expectExactlyAdmitted(ns, "compute", names, 10)
		sampler.finish()
		Expect(sampler.samples.Load()).To(BeNumerically(">", 10), "the sampler saw the burst")
		Expect(sampler.maxAdmitted.Load()).To(BeNumerically("<=", cpu(10)), "used + reserved exceeded hard")
		Expect(sampler.maxPlaced.Load()).To(BeNumerically("<=", 10), "bindings placed more CPUs than hard")
	})

	It("loses and doubles no charge when the webhook and the controller are killed and restarted mid-burst", func() {
		ns := newNamespace("restarts")
		createQuota(ns, "compute", list("cpu", "12"))
		sampler := sampleAdmissions(ns, "compute")
		var names []string
		done := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(done)
			names = burst(ns, 20)
		}()

		// Every replica of both killed as a crash would: no graceful shutdown, no lease released. The host's
		// kubelet restarts them, as a kubelet restarts a crashed container.
		time.Sleep(time.Second)
		killReplicas(localkarmada.QuotaWebhookDeployment)
		killReplicas(localkarmada.QuotaControllerDeployment)
		<-done
		expectReplicasRestarted(localkarmada.QuotaWebhookDeployment)
		expectReplicasRestarted(localkarmada.QuotaControllerDeployment)

		expectExactlyAdmitted(ns, "compute", names, 12)
		sampler.finish()
		Expect(sampler.maxAdmitted.Load()).To(BeNumerically("<=", cpu(12)), "used + reserved exceeded hard")
		Expect(sampler.maxPlaced.Load()).To(BeNumerically("<=", 12), "bindings placed more CPUs than hard")
	})
})

// killReplicas kills the process of every pod of one of karmada-quota's Deployments in the host.
func killReplicas(deployment string) {
	GinkgoHelper()
	pods, err := env.DeploymentPods(ctx, localkarmada.KarmadaNamespace, deployment)
	Expect(err).NotTo(HaveOccurred())
	Expect(pods).NotTo(BeEmpty())
	for _, p := range pods {
		Expect(env.KillPodProcess(ctx, p.Namespace, p.Name, p.Pod.Spec.Containers[0].Name)).To(Succeed())
	}
}

// expectReplicasRestarted waits until every pod of the Deployment runs again, ready, after a restart.
func expectReplicasRestarted(deployment string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		pods, err := env.DeploymentPods(ctx, localkarmada.KarmadaNamespace, deployment)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(pods).NotTo(BeEmpty())
		for _, p := range pods {
			g.Expect(p.Ready).To(BeTrue(), "%s is ready", p.Name)
			container := p.Pod.Spec.Containers[0].Name
			g.Expect(p.RestartCounts[container]).To(BeNumerically(">=", 1), "%s was restarted", p.Name)
		}
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "%s restarted", deployment)
}
