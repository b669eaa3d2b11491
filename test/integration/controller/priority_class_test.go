package controller

import (
	"time"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/karmada-quota/karmada-quota/internal/testenv"
	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/controller"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
	"github.com/karmada-quota/karmada-quota/test/integration/framework"
)

// Karmada without its ResourceQuotaEstimate feature gate (the default) never copies a pod template's priority class
// into the binding: the recount reads it from the template.
var _ = Describe("PriorityClass scopes on bindings that carry no class", func() {
	scopedQuota := func(ns, name string, op corev1.ScopeSelectorOperator, values ...string) *quotav1alpha1.KarmadaQuota {
		q := testenv.Quota(ns, name, list("cpu", "100"))
		q.Spec.ScopeSelector = &quotav1alpha1.ScopeSelector{MatchExpressions: []quotav1alpha1.ScopedResourceSelectorRequirement{
			{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: op, Values: values},
		}}
		return q
	}
	usedCPU := func(ns, name string) string {
		return framework.Canonical(getQuota(ns, name).Status.Used)
	}

	It("counts each binding under the class its template names, and says which it cannot classify", func() {
		startController(controller.Options{}, 0)
		ns := newNamespace()
		web, err := framework.CreateDeployment(ctx, k8s, ns, "web", "high", "1")
		Expect(err).NotTo(HaveOccurred())
		plain, err := framework.CreateDeployment(ctx, k8s, ns, "plain", "", "1")
		Expect(err).NotTo(HaveOccurred())
		webRB := mustCreate(framework.BindingOf(web).Replicas(2))
		Expect(place(webRB, cluster("member1", 2))).To(Succeed())
		Expect(place(mustCreate(framework.BindingOf(plain)), cluster("member2", 1))).To(Succeed())
		// Placed before any scoped quota existed, so the webhook had no reason to refuse it.
		flink := utiltesting.MakeBinding(ns, "flink").Resource("flink.apache.org/v1beta1", "FlinkDeployment").Replicas(1).Requests(list("cpu", "4"))
		flink.Spec.Resource.ResourceVersion = "1"
		Expect(place(mustCreate(flink), cluster("member1", 1))).To(Succeed())

		for _, q := range []*quotav1alpha1.KarmadaQuota{
			scopedQuota(ns, "high", corev1.ScopeSelectorOpIn, "high"),
			scopedQuota(ns, "not-high", corev1.ScopeSelectorOpNotIn, "high"),
			scopedQuota(ns, "any-class", corev1.ScopeSelectorOpExists),
			scopedQuota(ns, "no-class", corev1.ScopeSelectorOpDoesNotExist),
			testenv.Quota(ns, "team", list("cpu", "100")),
		} {
			Expect(k8s.Create(ctx, q)).To(Succeed())
		}
		Eventually(func(g Gomega) {
			g.Expect(usedCPU(ns, "high")).To(Equal(framework.Canonical(list("cpu", "2"))))
			g.Expect(usedCPU(ns, "not-high")).To(Equal(framework.Canonical(list("cpu", "1"))))
			g.Expect(usedCPU(ns, "any-class")).To(Equal(framework.Canonical(list("cpu", "2"))))
			g.Expect(usedCPU(ns, "no-class")).To(Equal(framework.Canonical(list("cpu", "1"))))
			g.Expect(usedCPU(ns, "team")).To(Equal(framework.Canonical(list("cpu", "7"))), "an unscoped quota counts every binding")
		}).WithTimeout(10 * time.Second).Should(Succeed())

		for _, name := range []string{"high", "not-high", "any-class", "no-class"} {
			cond := meta.FindStatusCondition(getQuota(ns, name).Status.Conditions, quotav1alpha1.ConditionPriorityClassesKnown)
			Expect(cond).NotTo(BeNil(), name)
			Expect(cond.Status).To(Equal(metav1.ConditionFalse), name)
			Expect(cond.Reason).To(Equal(quotav1alpha1.ReasonPriorityClassUnknown), name)
			Expect(cond.Message).To(And(ContainSubstring("1 binding(s)"), ContainSubstring("flink (the priority class of FlinkDeployment")), name)
			Eventually(scrape).WithTimeout(2 * time.Second).Should(ContainSubstring(`karmada_quota_bindings_unclassified{namespace="` + ns + `",quota="` + name + `"} 1`))
		}
		Expect(meta.FindStatusCondition(getQuota(ns, "team").Status.Conditions, quotav1alpha1.ConditionPriorityClassesKnown)).To(BeNil(),
			"an unscoped quota needs no class")

		By("the template moving to another class moves the binding's usage")
		web.Spec.Template.Spec.PriorityClassName = "low"
		Expect(k8s.Update(ctx, web)).To(Succeed())
		// As Karmada's detector does: the binding now names the new template version.
		current := getBinding(ns, webRB.Name)
		current.Spec.Resource.ResourceVersion = web.ResourceVersion
		Expect(k8s.Update(ctx, current)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(usedCPU(ns, "high")).To(Equal(framework.Canonical(list("cpu", "0"))))
			g.Expect(usedCPU(ns, "not-high")).To(Equal(framework.Canonical(list("cpu", "3"))))
		}).WithTimeout(10 * time.Second).Should(Succeed())

		By("the unclassifiable binding gone, every class is known")
		Expect(k8s.Delete(ctx, getBinding(ns, "flink"))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(meta.IsStatusConditionTrue(getQuota(ns, "high").Status.Conditions, quotav1alpha1.ConditionPriorityClassesKnown)).To(BeTrue())
			g.Expect(scrape()).To(ContainSubstring(`karmada_quota_bindings_unclassified{namespace="` + ns + `",quota="high"} 0`))
		}).WithTimeout(10 * time.Second).Should(Succeed())
	})
})

func getBinding(ns, name string) *workv1alpha2.ResourceBinding {
	GinkgoHelper()
	var rb workv1alpha2.ResourceBinding
	Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &rb)).To(Succeed())
	return &rb
}
