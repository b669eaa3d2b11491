package e2e

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
)

// cpu and memory in accounting units (milli-CPU, bytes).
func cpu(cores float64) int64 { return int64(cores * 1000) }
func gib(n int64) int64       { return n << 30 }

var _ = Describe("The seed-004 test plan", func() {
	It("enumerates each namespace's limits, monitors the tracked resources and rejects usage beyond hard", func() {
		ns := newNamespace("seed")
		other := newNamespace("seed-other")
		createQuota(ns, "compute", list("cpu", "4", "memory", "8Gi", "pods", "10"))
		createQuota(ns, "objects", list("count/deployments.apps", "5"))
		createQuota(other, "compute", list("cpu", "1"))

		By("listing the namespace's quotas: each with its limits, and no other namespace's")
		var quotas quotav1alpha1.KarmadaQuotaList
		Expect(karmada.List(ctx, &quotas, client.InNamespace(ns))).To(Succeed())
		hard := map[string]resources.List{}
		for _, q := range quotas.Items {
			hard[q.Name] = canonical(q.Spec.Hard)
		}
		Expect(hard).To(Equal(map[string]resources.List{
			"compute": {"requests.cpu": cpu(4), "requests.memory": gib(8), "pods": 10},
			"objects": {"count/deployments.apps": 5},
		}))
		Eventually(func(g Gomega) {
			g.Expect(karmada.List(ctx, &quotas, client.InNamespace(ns))).To(Succeed())
			for _, q := range quotas.Items {
				g.Expect(canonical(q.Status.Hard)).To(Equal(canonical(q.Spec.Hard)), "status.hard of %s", q.Name)
				g.Expect(q.Status.Summary).NotTo(BeEmpty(), "the used/hard printer column of %s", q.Name)
			}
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())

		By("deploying 2 replicas of 1 CPU / 1Gi: usage is monitored for every tracked resource")
		deploy(ns, "web", 2, "1", "1Gi", divided())
		expectScheduled(ns, "web", 2)
		status := expectSettled(ns, "compute")
		Expect(canonical(status.Used)).To(Equal(resources.List{"requests.cpu": cpu(2), "requests.memory": gib(2), "pods": 2}))
		Expect(canonical(expectSettled(ns, "objects").Used)).To(Equal(resources.List{"count/deployments.apps": 1}))

		By("scaling to 5 replicas, 5 CPU against 4: refused, and usage stays")
		scale(ns, "web", 5)
		message := expectRefused(ns, "web")
		Expect(message).To(ContainSubstring("compute"))
		Expect(message).To(ContainSubstring("cpu"))
		Eventually(func() []string {
			var reasons []string
			for _, e := range eventsOf(ns, "Deployment", "web") {
				if e.Type == corev1.EventTypeWarning {
					reasons = append(reasons, e.Reason+": "+e.Message)
				}
			}
			return reasons
		}).WithTimeout(timeout).WithPolling(poll).Should(ContainElement(ContainSubstring("exceeded quota: compute")),
			"the Deployment carries an event saying why it is not scheduled")
		status = expectSettled(ns, "compute")
		Expect(canonical(status.Used)).To(Equal(resources.List{"requests.cpu": cpu(2), "requests.memory": gib(2), "pods": 2}))
		rb, err := binding(ns, "web", "Deployment")
		Expect(err).NotTo(HaveOccurred())
		Expect(placedReplicas(rb)).To(Equal(int32(2)), "the refused placement was never written")

		By("counting pods running in the members: still 2")
		Eventually(func(g Gomega) {
			var pods int64
			for _, used := range runningRequests(g, ns) {
				pods += used["pods"]
			}
			g.Expect(pods).To(Equal(int64(2)))
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	})
})

var _ = Describe("Usage per member cluster", func() {
	It("equals the requests of the pods running in that member, read from the member's apiserver", func() {
		ns := newNamespace("per-member")
		createQuota(ns, "compute", list("cpu", "20", "memory", "40Gi", "pods", "40"))
		deploy(ns, "web", 6, "500m", "512Mi", divided())
		deploy(ns, "cache", 2, "250m", "1Gi", duplicated())
		expectScheduled(ns, "web", 6)
		expectScheduled(ns, "cache", 2)

		Eventually(func(g Gomega) {
			q := &quotav1alpha1.KarmadaQuota{}
			g.Expect(karmada.Get(ctx, client.ObjectKey{Namespace: ns, Name: "compute"}, q)).To(Succeed())
			running := runningRequests(g, ns)
			g.Expect(clusterUsage(q.Status)).To(Equal(running), "status.clusters against the running pods")
			total := resources.List{}
			for _, used := range running {
				total.Add(used)
			}
			// 6 × 500m + 2 clusters × 2 × 250m = 4 CPU; 6 × 512Mi + 4 × 1Gi = 7Gi; 10 pods.
			g.Expect(total).To(Equal(resources.List{"requests.cpu": cpu(4), "requests.memory": gib(7), "pods": 10}))
			g.Expect(canonical(q.Status.Used)).To(Equal(total))
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	})
})

var _ = Describe("Placements", func() {
	It("follow Divided and Duplicated workloads through scale up, scale down and delete", func() {
		ns := newNamespace("placements")
		createQuota(ns, "compute", list("cpu", "20"))
		used := func() int64 { return canonical(expectSettled(ns, "compute").Used)["requests.cpu"] }

		deploy(ns, "web", 4, "1", "128Mi", divided())
		deploy(ns, "cache", 3, "1", "128Mi", duplicated())
		expectScheduled(ns, "web", 4)
		expectScheduled(ns, "cache", 3)
		Expect(used()).To(Equal(cpu(4 + 2*3)))

		By("scaling the Divided workload up and the Duplicated one down")
		scale(ns, "web", 8)
		scale(ns, "cache", 1)
		expectScheduled(ns, "web", 8)
		expectScheduled(ns, "cache", 1)
		Expect(used()).To(Equal(cpu(8 + 2*1)))

		By("deleting the Divided workload: its usage is freed once Karmada removes its binding")
		Expect(karmada.Delete(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}})).To(Succeed())
		Eventually(func() error {
			_, err := binding(ns, "web", "Deployment")
			return err
		}).WithTimeout(timeout).WithPolling(poll).Should(Satisfy(apierrors.IsNotFound))
		Expect(used()).To(Equal(cpu(2)))
	})

	It("counts the workloads that existed before the quota, and then only refuses growth", func() {
		ns := newNamespace("late-quota")
		deploy(ns, "web", 3, "1", "128Mi", divided())
		expectScheduled(ns, "web", 3)

		createQuota(ns, "roomy", list("cpu", "10"))
		createQuota(ns, "tight", list("cpu", "2"))
		Expect(canonical(expectSettled(ns, "roomy").Used)).To(Equal(resources.List{"requests.cpu": cpu(3)}))
		Expect(canonical(expectSettled(ns, "tight").Used)).To(Equal(resources.List{"requests.cpu": cpu(3)}),
			"usage above a new quota's hard is reported as it is")

		By("growing is refused by the tight quota; shrinking is admitted although still over hard")
		scale(ns, "web", 4)
		Expect(expectRefused(ns, "web")).To(ContainSubstring("tight"))
		scale(ns, "web", 2)
		expectScheduled(ns, "web", 2)
		Expect(canonical(expectSettled(ns, "tight").Used)).To(Equal(resources.List{"requests.cpu": cpu(2)}))
	})

	It("schedules a waiting workload without manual action once another scales down", func() {
		ns := newNamespace("requeue")
		createQuota(ns, "compute", list("cpu", "10"))
		deploy(ns, "web", 8, "1", "128Mi", divided())
		expectScheduled(ns, "web", 8)
		deploy(ns, "batch", 4, "1", "128Mi", divided())
		expectRefused(ns, "batch")

		scale(ns, "web", 4)
		expectScheduled(ns, "web", 4)
		expectScheduled(ns, "batch", 4)
		Expect(canonical(expectSettled(ns, "compute").Used)).To(Equal(resources.List{"requests.cpu": cpu(8)}))
	})
})

var _ = Describe("Object-count quotas", func() {
	It("limit Deployments and Services propagated by Karmada", func() {
		ns := newNamespace("counts")
		createQuota(ns, "objects", list("count/deployments.apps", "2", "services", "1"))

		deploy(ns, "one", 1, "100m", "64Mi", duplicated())
		deploy(ns, "two", 1, "100m", "64Mi", duplicated())
		expectScheduled(ns, "one", 1)
		expectScheduled(ns, "two", 1)

		By("a third Deployment gets no binding: its creation is refused, and the Deployment says why")
		deploy(ns, "three", 1, "100m", "64Mi", duplicated())
		Eventually(func() []string {
			var messages []string
			for _, e := range eventsOf(ns, "Deployment", "three") {
				messages = append(messages, e.Message)
			}
			return messages
		}).WithTimeout(timeout).WithPolling(poll).Should(ContainElement(ContainSubstring("count/deployments.apps")))
		_, err := binding(ns, "three", "Deployment")
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the third Deployment must have no binding, got %v", err)

		By("one Service is propagated to every member; a second is refused")
		// One after the other: which of two simultaneous Services gets the last slot is the detector's order.
		for _, name := range []string{"first", "second"} {
			svc := &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}, Selector: map[string]string{"app": name}},
			}
			Expect(karmada.Create(ctx, svc)).To(Succeed())
			Expect(karmada.Create(ctx, propagation(ns, name, "v1", "Service", duplicated()))).To(Succeed())
			if name == "first" {
				Eventually(func() error {
					_, err := binding(ns, name, "Service")
					return err
				}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
			}
		}
		expectInEveryMember(ns, &corev1.ServiceList{}, "first")
		_, err = binding(ns, "second", "Service")
		Expect(err).To(HaveOccurred(), "the second Service must have no binding")

		By("the members run exactly the two admitted Deployments")
		expectInEveryMember(ns, &appsv1.DeploymentList{}, "one", "two")
		Expect(canonical(expectSettled(ns, "objects").Used)).To(Equal(resources.List{"count/deployments.apps": 2, "count/services": 1}))
	})
})
