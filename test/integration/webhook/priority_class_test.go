package webhook

import (
	"errors"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
	"github.com/karmada-quota/karmada-quota/test/integration/framework"
)

// Karmada without its ResourceQuotaEstimate feature gate (the default) never copies a pod template's priority class
// into the binding. These specs write bindings exactly so, and prove the webhook reads the class from the template.
var _ = Describe("PriorityClass scopes on bindings that carry no class", func() {
	template := func(ns, name, class string) *appsv1.Deployment {
		GinkgoHelper()
		d, err := framework.CreateDeployment(ctx, k8s, ns, name, class, "1")
		Expect(err).NotTo(HaveOccurred())
		return d
	}

	It("charges each scoped quota by the class the template names, with all four operators", func() {
		for class, want := range map[string][]string{
			"high": {"in-high", "exists"},
			"low":  {"notin-high", "exists"},
			"":     {"notin-high", "doesnotexist"},
		} {
			// A namespace per class, so that each class meets empty quotas.
			ns := newNamespace()
			createQuota(scoped(quota(ns, "in-high", list("cpu", "2")), corev1.ScopeSelectorOpIn, "high"))
			createQuota(scoped(quota(ns, "notin-high", list("cpu", "2")), corev1.ScopeSelectorOpNotIn, "high"))
			createQuota(scoped(quota(ns, "exists", list("cpu", "2")), corev1.ScopeSelectorOpExists))
			createQuota(scoped(quota(ns, "doesnotexist", list("cpu", "2")), corev1.ScopeSelectorOpDoesNotExist))
			createQuota(quota(ns, "unscoped", list("cpu", "100")))
			name := "class-" + class
			if class == "" {
				name = "class-none"
			}
			rb := mustCreateBinding(framework.BindingOf(template(ns, name, class)).Replicas(3))
			Expect(rb.Spec.ReplicaRequirements.PriorityClassName).To(BeEmpty(), "the binding carries no class, as Karmada writes it by default")

			statusErr := expectQuotaExceeded(place(rb, cluster("member1", 3)))
			for _, q := range []string{"in-high", "notin-high", "exists", "doesnotexist", "unscoped"} {
				if contains(want, q) {
					Expect(statusErr.ErrStatus.Message).To(ContainSubstring("exceeded quota: "+q), "class %q", class)
				} else {
					Expect(statusErr.ErrStatus.Message).NotTo(ContainSubstring("exceeded quota: "+q), "class %q", class)
				}
			}
			Expect(place(rb, cluster("member1", 2))).To(Succeed(), "class %q: 2 CPU fit every quota of 2", class)
			for _, q := range want {
				Expect(reservationsOf(getQuota(ns, q), rb)).To(HaveKeyWithValue(rb.Generation, equalQuantities(list("cpu", "2"))),
					"class %q charged to %s", class, q)
			}
		}
	})

	It("charges a template's change of class to the new class", func() {
		ns := newNamespace()
		createQuota(scoped(quota(ns, "high", list("cpu", "2")), corev1.ScopeSelectorOpIn, "high"))
		createQuota(scoped(quota(ns, "low", list("cpu", "1")), corev1.ScopeSelectorOpIn, "low"))
		d := template(ns, "web", "high")
		rb := mustCreateBinding(framework.BindingOf(d).Replicas(2))
		Expect(place(rb, cluster("member1", 2))).To(Succeed())

		// The user moves the workload to low: the detector rewrites the binding from the new template version.
		d.Spec.Template.Spec.PriorityClassName = "low"
		Expect(k8s.Update(ctx, d)).To(Succeed())
		moved := rb.DeepCopy()
		moved.Spec.Resource.ResourceVersion = d.ResourceVersion
		err := k8s.Update(ctx, moved)
		Expect(expectQuotaExceeded(err).ErrStatus.Message).To(ContainSubstring("exceeded quota: low, cpu: requested 2"),
			"2 replicas moving to low, whose quota holds 1")
	})

	It("refuses, without pretending, replicas whose class cannot be read, and says why", func() {
		ns := newNamespace()
		createQuota(scoped(quota(ns, "high", list("cpu", "10")), corev1.ScopeSelectorOpIn, "high"))
		flink := utiltesting.MakeBinding(ns, "flink").Resource("flink.apache.org/v1beta1", "FlinkDeployment").
			Replicas(1).Requests(list("cpu", "1"))
		flink.Spec.Resource.ResourceVersion = "1"
		rb := mustCreateBinding(flink)

		err := place(rb, cluster("member1", 1))
		var statusErr *apierrors.StatusError
		Expect(errors.As(err, &statusErr)).To(BeTrue(), "%v", err)
		Expect(statusErr.ErrStatus.Code).To(Equal(int32(403)))
		Expect(statusErr.ErrStatus.Reason).To(Equal(metav1.StatusReason(quotav1alpha1.ReasonPriorityClassUnknown)), "not QuotaExceeded: no quota is full")
		Expect(statusErr.ErrStatus.Message).To(And(
			ContainSubstring("places replicas of FlinkDeployment flink whose priority class is unknown"),
			ContainSubstring("quota(s) high of the namespace are scoped by PriorityClass"),
			ContainSubstring("ResourceQuotaEstimate")))

		By("the same binding naming its class is decided as any other")
		named := rb.DeepCopy()
		named.Spec.ReplicaRequirements.PriorityClassName = "high"
		named.Spec.Clusters = []workv1alpha2.TargetCluster{cluster("member1", 1)}
		Expect(k8s.Update(ctx, named)).To(Succeed())
	})

	It("reads no template in a namespace without a scoped quota", func() {
		ns := newNamespace()
		createQuota(quota(ns, "team", list("cpu", "1")))
		// The template does not even exist: an unscoped quota never asks for it.
		rb := mustCreateBinding(utiltesting.MakeBinding(ns, "ghost").Replicas(1).Requests(list("cpu", "1")))
		Expect(place(rb, cluster("member1", 1))).To(Succeed())
	})
})
