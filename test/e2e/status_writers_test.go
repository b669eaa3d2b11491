package e2e

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/operator/pkg/install"
	"github.com/karmada-quota/karmada-quota/operator/pkg/render"
	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
)

// statusWritersPolicy is the ValidatingAdmissionPolicy the chart renders into the karmada-apiserver when the
// components run as their own service accounts (templates/_karmada.tpl). The local Karmada runs them as those
// users (client certificates named after the service accounts).
const statusWritersPolicy = "karmada-quota-status-writers"

var _ = Describe("A quota's status", func() {
	It("is written by karmada-quota alone, not even by the karmada-apiserver's admin", func() {
		ensureStatusWritersPolicy()
		ns := newNamespace("status")
		createQuota(ns, "team", list("cpu", "4", "pods", "10"))
		deploy(ns, "web", 2, "1", "64Mi", divided())
		expectScheduled(ns, "web", 2)
		used := canonical(expectSettled(ns, "team").Used)
		Expect(used).To(Equal(resources.List{"requests.cpu": cpu(2), "pods": 2}), "the controller writes status under the policy")

		By("the admin zeroing the usage to free quota is refused")
		// The apiserver takes a policy into account within moments of its creation.
		Eventually(func(g Gomega) {
			q := &quotav1alpha1.KarmadaQuota{}
			g.Expect(karmada.Get(ctx, client.ObjectKey{Namespace: ns, Name: "team"}, q)).To(Succeed())
			q.Status.Used = list("cpu", "0", "pods", "0")
			err := karmada.Status().Update(ctx, q)
			g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
			g.Expect(err.Error()).To(ContainSubstring("only karmada-quota's service accounts write the status of a KarmadaQuota"))
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
		Expect(canonical(quotaStatus(ns, "team").Used)).To(Equal(resources.List{"requests.cpu": cpu(2), "pods": 2}))

		By("admissions still reserve and the controller still settles: both write as their service accounts")
		scale(ns, "web", 3)
		expectScheduled(ns, "web", 3)
		Expect(canonical(expectSettled(ns, "team").Used)).To(Equal(resources.List{"requests.cpu": cpu(3), "pods": 3}))
	})
})

// ensureStatusWritersPolicy makes sure the chart's policy is in force. An environment installed from the chart has
// it; one installed from the generated files (the components still run as the service accounts' users) gets the
// policy and its binding exactly as the chart renders them, for this spec only.
func ensureStatusWritersPolicy() {
	GinkgoHelper()
	var policy admissionregistrationv1.ValidatingAdmissionPolicy
	err := karmada.Get(ctx, client.ObjectKey{Name: statusWritersPolicy}, &policy)
	if err == nil {
		return
	}
	Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%v", err)
	in, err := render.Render("karmada-quota", "karmada-system", nil)
	Expect(err).NotTo(HaveOccurred())
	applied := 0
	for _, obj := range in.Karmada {
		if obj.GetKind() != "ValidatingAdmissionPolicy" && obj.GetKind() != "ValidatingAdmissionPolicyBinding" {
			continue
		}
		_, err := install.Apply(ctx, karmada, obj)
		Expect(err).NotTo(HaveOccurred())
		applied++
		DeferCleanup(func() { Expect(client.IgnoreNotFound(karmada.Delete(ctx, obj.DeepCopy()))).To(Succeed()) })
	}
	Expect(applied).To(Equal(2), "the chart renders the policy and its binding")
}
