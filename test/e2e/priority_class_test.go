package e2e

import (
	"fmt"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
)

// The local Karmada runs karmada-controller-manager with its default feature gates, as most installations do:
// ResourceQuotaEstimate is off, so Karmada never copies a pod template's priorityClassName into the binding. A
// quota scoped by PriorityClass must count and refuse all the same.
var _ = Describe("PriorityClass-scoped quotas on a Karmada with default feature gates", func() {
	It("count exactly their workloads and refuse past hard, with In, NotIn, Exists and DoesNotExist", func() {
		createPriorityClassesInMembers("high", "low")
		ns := newNamespace("classes")
		scopedQuota := func(name string, cpus string, op corev1.ScopeSelectorOperator, values ...string) {
			q := &quotav1alpha1.KarmadaQuota{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: quotav1alpha1.KarmadaQuotaSpec{Hard: list("cpu", cpus), ScopeSelector: &quotav1alpha1.ScopeSelector{
					MatchExpressions: []quotav1alpha1.ScopedResourceSelectorRequirement{{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: op, Values: values}},
				}},
			}
			Expect(karmada.Create(ctx, q)).To(Succeed())
		}
		scopedQuota("in-high", "2", corev1.ScopeSelectorOpIn, "high")
		scopedQuota("notin-high", "3", corev1.ScopeSelectorOpNotIn, "high")
		scopedQuota("exists", "3", corev1.ScopeSelectorOpExists)
		scopedQuota("doesnotexist", "2", corev1.ScopeSelectorOpDoesNotExist)
		createQuota(ns, "team", list("cpu", "100", "pods", "100"))
		scoped := []string{"in-high", "notin-high", "exists", "doesnotexist"}

		By("deploying gold (high, 2 replicas), silver (low, 1) and plain (no class, 1), 1 CPU each")
		deployWithClass(ns, "gold", "high", 2)
		deployWithClass(ns, "silver", "low", 1)
		deployWithClass(ns, "plain", "", 1)
		for name, replicas := range map[string]int32{"gold": 2, "silver": 1, "plain": 1} {
			expectScheduled(ns, name, replicas)
			rb, err := binding(ns, name, "Deployment")
			Expect(err).NotTo(HaveOccurred())
			Expect(rb.Spec.ReplicaRequirements).NotTo(BeNil())
			Expect(rb.Spec.ReplicaRequirements.PriorityClassName).To(BeEmpty(),
				"Karmada with default feature gates leaves the class out of the binding: the case this spec is about")
		}
		wantUsed := map[string]string{"in-high": "2", "notin-high": "2", "exists": "3", "doesnotexist": "1", "team": "4"}
		expectClassesCounted(ns, wantUsed)
		for _, name := range scoped {
			Expect(meta.IsStatusConditionTrue(quotaStatus(ns, name).Conditions, quotav1alpha1.ConditionPriorityClassesKnown)).
				To(BeTrue(), "quota %s knows every binding's class", name)
		}

		By("scaling gold to 3: refused by In [high] and Exists, by no other quota")
		scale(ns, "gold", 3)
		expectRefusedBy(ns, "gold", []string{"in-high", "exists"}, []string{"notin-high", "doesnotexist", "team"})

		By("scaling plain to 2 fits; to 3 is refused by DoesNotExist and NotIn [high]")
		scale(ns, "plain", 2)
		expectScheduled(ns, "plain", 2)
		wantUsed["notin-high"], wantUsed["doesnotexist"], wantUsed["team"] = "3", "2", "5"
		expectClassesCounted(ns, wantUsed)
		scale(ns, "plain", 3)
		expectRefusedBy(ns, "plain", []string{"doesnotexist", "notin-high"}, []string{"in-high", "exists", "team"})

		By("no quota ever went past hard, and the refused placements were never written")
		expectClassesCounted(ns, wantUsed)
		for name, replicas := range map[string]int32{"gold": 2, "plain": 2} {
			rb, err := binding(ns, name, "Deployment")
			Expect(err).NotTo(HaveOccurred())
			Expect(placedReplicas(rb)).To(Equal(replicas), name)
		}
		for _, name := range append(scoped, "team") {
			status := quotaStatus(ns, name)
			used, hard := canonical(status.Used), canonical(status.Hard)
			for resource, v := range used {
				Expect(v).To(BeNumerically("<=", hard[resource]), "quota %s: %s used %d, hard %d", name, resource, v, hard[resource])
			}
		}
	})
})

// createPriorityClassesInMembers creates the PriorityClasses in every member cluster, where the pods run: each
// member's Priority admission refuses a pod naming a class it does not have. Karmada itself needs none; the
// karmada-apiserver runs no pods.
func createPriorityClassesInMembers(names ...string) {
	GinkgoHelper()
	for member, c := range members {
		for i, name := range names {
			pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: int32(1000 * (len(names) - i))}
			if err := c.Create(ctx, pc); err != nil && !apierrors.IsAlreadyExists(err) {
				Expect(err).NotTo(HaveOccurred(), "PriorityClass %s in %s", name, member)
			}
		}
	}
}

// deployWithClass deploys replicas of 1 CPU / 64Mi whose pod template names class ("" for none), Divided.
func deployWithClass(ns, name, class string, replicas int32) *appsv1.Deployment {
	GinkgoHelper()
	d := deployment(ns, name, replicas, "1", "64Mi")
	d.Spec.Template.Spec.PriorityClassName = class
	Expect(karmada.Create(ctx, d)).To(Succeed())
	Expect(karmada.Create(ctx, propagation(ns, name, "apps/v1", "Deployment", divided()))).To(Succeed())
	return d
}

// expectRefusedBy waits until the Deployment's binding is refused with QuotaExceeded by exactly the quotas named.
func expectRefusedBy(ns, name string, by, notBy []string) {
	GinkgoHelper()
	message := expectRefused(ns, name)
	for _, q := range by {
		Expect(message).To(ContainSubstring("exceeded quota: "+q), "refused by %s", q)
	}
	for _, q := range notBy {
		Expect(message).NotTo(ContainSubstring("exceeded quota: "+q+","), "not refused by %s", q)
	}
}

// expectClassesCounted waits until each quota's status counts exactly wantUsed CPUs, with no reservation
// outstanding, and checks that against the truth: every binding counted under the class its Deployment names, read
// from the karmada-apiserver here rather than through karmada-quota.
func expectClassesCounted(ns string, wantUsed map[string]string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		for name, cpus := range wantUsed {
			q := &quotav1alpha1.KarmadaQuota{}
			g.Expect(karmada.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, q)).To(Succeed())
			expectNothingReserved(g, ns, name)
			used := canonical(q.Status.Used)
			g.Expect(used[resources.RequestName(corev1.ResourceCPU)]).To(Equal(canonical(list("cpu", cpus))["requests.cpu"]), "quota %s: cpu used", name)
			g.Expect(used[resources.RequestName(corev1.ResourceCPU)]).To(Equal(classAwareTruth(g, q)["requests.cpu"]), "quota %s against the truth", name)
		}
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "quotas of %s counted by class", ns)
}

// classAwareTruth sums what the quota counts over the namespace's bindings, each under the class its Deployment's
// pod template names.
func classAwareTruth(g Gomega, q *quotav1alpha1.KarmadaQuota) resources.List {
	var bindings workv1alpha2.ResourceBindingList
	g.Expect(karmada.List(ctx, &bindings, client.InNamespace(q.Namespace))).To(Succeed())
	sel, err := usage.NewSelector(q.Spec.ScopeSelector)
	g.Expect(err).NotTo(HaveOccurred())
	total := resources.List{}
	for i := range bindings.Items {
		rb := bindings.Items[i].DeepCopy()
		if rb.Spec.Resource.Kind == "Deployment" {
			var d appsv1.Deployment
			g.Expect(karmada.Get(ctx, client.ObjectKey{Namespace: rb.Namespace, Name: rb.Spec.Resource.Name}, &d)).To(Succeed())
			if rb.Spec.ReplicaRequirements == nil {
				rb.Spec.ReplicaRequirements = &workv1alpha2.ReplicaRequirements{}
			}
			rb.Spec.ReplicaRequirements.PriorityClassName = d.Spec.Template.Spec.PriorityClassName
		}
		u, err := usage.Of(rb)
		g.Expect(err).NotTo(HaveOccurred(), fmt.Sprintf("binding %s", rb.Name))
		total.Add(u.Charge(sel).Total)
	}
	return total
}
