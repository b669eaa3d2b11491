package e2e

import (
	"bytes"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/hack/localkarmada"
	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/kubectlplugin"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
)

// businessLabel is the label business quotas select this suite's namespaces by.
const businessLabel = "e2e.quota.karmada.io/business"

// newBusinessNamespace creates a namespace of the business on the karmada-apiserver, deleted after the spec.
func newBusinessNamespace(prefix, business string) string {
	GinkgoHelper()
	ns := newNamespace(prefix)
	setBusiness(ns, business)
	return ns
}

// setBusiness labels a namespace into a business ("" labels it out).
func setBusiness(namespace, business string) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var ns corev1.Namespace
		if err := karmada.Get(ctx, client.ObjectKey{Name: namespace}, &ns); err != nil {
			return err
		}
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		if business == "" {
			delete(ns.Labels, businessLabel)
		} else {
			ns.Labels[businessLabel] = business
		}
		return karmada.Update(ctx, &ns)
	})).To(Succeed())
}

func createBusinessQuota(business string, hard corev1.ResourceList) *quotav1alpha1.KarmadaBusinessQuota {
	GinkgoHelper()
	q := &quotav1alpha1.KarmadaBusinessQuota{
		ObjectMeta: metav1.ObjectMeta{Name: business},
		Spec: quotav1alpha1.KarmadaBusinessQuotaSpec{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{businessLabel: business}},
			KarmadaQuotaSpec:  quotav1alpha1.KarmadaQuotaSpec{Hard: hard},
		},
	}
	Expect(karmada.Create(ctx, q)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(karmada.Delete(ctx, q))).To(Succeed()) })
	return q
}

// businessUsage is a business quota's status: in all, and by namespace, in accounting units.
func businessUsage(g Gomega, name string) (resources.List, map[string]resources.List) {
	q := &quotav1alpha1.KarmadaBusinessQuota{}
	g.Expect(karmada.Get(ctx, client.ObjectKey{Name: name}, q)).To(Succeed())
	byNamespace := map[string]resources.List{}
	for _, n := range q.Status.Namespaces {
		byNamespace[n.Name] = canonical(n.Used)
	}
	return canonical(q.Status.Used), byNamespace
}

var _ = Describe("Business quotas", func() {
	It("limit a business's namespaces together, refuse in one for the others' usage, free a share relabelled out, and show each team only its part", func() {
		business := "shop-" + rand.String(5)
		dev := newBusinessNamespace("shop-dev", business)
		staging := newBusinessNamespace("shop-staging", business)
		prod := newBusinessNamespace("shop-prod", business)
		createBusinessQuota(business, list("cpu", "4", "pods", "8"))

		By("two namespaces use the business's 4 CPU between them")
		deploy(dev, "web", 2, "1", "128Mi", divided())
		deploy(staging, "web", 2, "1", "128Mi", divided())
		expectScheduled(dev, "web", 2)
		expectScheduled(staging, "web", 2)

		By("the third is refused for the others' usage, naming the business quota")
		deploy(prod, "web", 1, "1", "128Mi", divided())
		Expect(expectRefused(prod, "web")).To(ContainSubstring("exceeded business quota: " + business))
		Eventually(func(g Gomega) {
			used, byNamespace := businessUsage(g, business)
			g.Expect(used).To(Equal(resources.List{"requests.cpu": cpu(4), "pods": 4}))
			g.Expect(byNamespace).To(Equal(map[string]resources.List{
				dev: {"requests.cpu": cpu(2), "pods": 2}, staging: {"requests.cpu": cpu(2), "pods": 2}, prod: {"requests.cpu": 0, "pods": 0},
			}))
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())

		By("a team bound to view in one namespace reads its part and the business's totals, and nothing of the others")
		const user = "shop-dev-member"
		Expect(karmada.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: dev, Name: "team-view"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
		})).To(Succeed())
		cfg, err := localkarmada.RESTConfig(env.Karmada.Kubeconfig)
		Expect(err).NotTo(HaveOccurred())
		cfg.Impersonate.UserName = user
		team, err := client.New(cfg, client.Options{Scheme: localkarmada.Scheme})
		Expect(err).NotTo(HaveOccurred())
		// view is aggregated by the karmada-apiserver's clusterrole-aggregation controller: give it a moment.
		var view quotav1alpha1.AppliedBusinessQuota
		Eventually(func() error { return team.Get(ctx, client.ObjectKey{Namespace: dev, Name: business}, &view) }).
			WithTimeout(timeout).WithPolling(poll).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(team.Get(ctx, client.ObjectKey{Namespace: dev, Name: business}, &view)).To(Succeed())
			g.Expect(canonical(view.Status.Hard)).To(Equal(resources.List{"requests.cpu": cpu(4), "pods": 8}))
			g.Expect(canonical(view.Status.Used)).To(Equal(resources.List{"requests.cpu": cpu(4), "pods": 4}))
			g.Expect(canonical(view.Status.NamespaceUsed)).To(Equal(resources.List{"requests.cpu": cpu(2), "pods": 2}))
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
		Expect(dump(view)).NotTo(ContainSubstring(staging), "the view names no other namespace")
		Expect(dump(view)).NotTo(ContainSubstring(prod), "the view names no other namespace")
		var out, errOut bytes.Buffer
		code := kubectlplugin.Run(ctx, []string{"describe", "-n", dev, "--kubeconfig", env.Karmada.Kubeconfig, "--as", user},
			genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
		Expect(code).To(BeZero(), errOut.String())
		Expect(out.String()).To(ContainSubstring("Kind:       business quota"))
		Expect(out.String()).To(MatchRegexp(`cpu\s+4\s+0\s+4\s+2`), "the business's used, reserved and hard, and this namespace's part")
		Expect(out.String()).NotTo(ContainSubstring(staging))
		Expect(out.String()).NotTo(ContainSubstring(prod))
		err = team.Get(ctx, client.ObjectKey{Name: business}, &quotav1alpha1.KarmadaBusinessQuota{})
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "the business quota itself, which lists every namespace, is the admins': %v", err)
		err = team.Get(ctx, client.ObjectKey{Namespace: staging, Name: business}, &quotav1alpha1.AppliedBusinessQuota{})
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "another namespace's view: %v", err)

		By("staging labelled out: its share is freed, and prod's workload is scheduled without anyone acting")
		setBusiness(staging, "")
		expectScheduled(prod, "web", 1)
		Eventually(func(g Gomega) {
			used, byNamespace := businessUsage(g, business)
			g.Expect(used).To(Equal(resources.List{"requests.cpu": cpu(3), "pods": 3}))
			g.Expect(byNamespace).NotTo(HaveKey(staging))
			var gone quotav1alpha1.AppliedBusinessQuota
			err := karmada.Get(ctx, client.ObjectKey{Namespace: staging, Name: business}, &gone)
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the view left with its namespace: %v", err)
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
		// Nothing that ran in staging was touched: it runs on, outside the business.
		expectScheduled(staging, "web", 2)
	})
})
