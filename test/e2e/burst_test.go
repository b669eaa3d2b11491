package e2e

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
	"github.com/karmada-quota/karmada-quota/test/localkarmada"
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

// admissionSampler reads the quota and the bindings until stopped, recording the worst moment seen: what the
// quota had admitted (used + reserved) and how many CPUs the bindings had placed.
type admissionSampler struct {
	samples, maxAdmitted, maxPlaced atomic.Int64
	stop                            chan struct{}
	done                            chan struct{}
}

func sampleAdmissions(ns, quota string) *admissionSampler {
	s := &admissionSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer GinkgoRecover()
		for {
			select {
			case <-s.stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			q := &quotav1alpha1.KarmadaQuota{}
			var bindings workv1alpha2.ResourceBindingList
			if karmada.Get(ctx, client.ObjectKey{Namespace: ns, Name: quota}, q) != nil ||
				karmada.List(ctx, &bindings, client.InNamespace(ns)) != nil {
				continue // the karmada-apiserver is busy; the next sample will tell
			}
			admitted := canonical(q.Status.Used)
			admitted.Add(canonical(q.Status.Reserved))
			var placed int64
			for _, rb := range bindings.Items {
				placed += int64(placedReplicas(&rb))
			}
			s.samples.Add(1)
			s.maxAdmitted.Store(max(s.maxAdmitted.Load(), admitted["requests.cpu"]))
			s.maxPlaced.Store(max(s.maxPlaced.Load(), placed))
		}
	}()
	return s
}

func (s *admissionSampler) finish() {
	close(s.stop)
	<-s.done
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

		// Killed as a crash would: no graceful shutdown, no lease released.
		time.Sleep(time.Second)
		Expect(env.Kill(localkarmada.QuotaWebhook)).To(Succeed())
		Expect(env.Kill(localkarmada.QuotaController)).To(Succeed())
		time.Sleep(2 * time.Second)
		Expect(env.Start(ctx, localkarmada.QuotaWebhook)).To(Succeed())
		<-done
		Expect(env.Start(ctx, localkarmada.QuotaController)).To(Succeed())

		expectExactlyAdmitted(ns, "compute", names, 12)
		sampler.finish()
		Expect(sampler.maxAdmitted.Load()).To(BeNumerically("<=", cpu(12)), "used + reserved exceeded hard")
		Expect(sampler.maxPlaced.Load()).To(BeNumerically("<=", 12), "bindings placed more CPUs than hard")
	})
})
