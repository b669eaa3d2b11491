package cli

import (
	"fmt"
	"slices"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/operator/pkg/render"
	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/kubectlplugin/report"
)

// The business shop: namespaces shop-dev and shop-prod, labelled business=shop, under business quota shop, which
// the real controller counts with the other quotas (computeStatus), writing its status and the
// AppliedBusinessQuota of each namespace as production does.
//
//   - shop-dev: web placed (500m of cpu, 1Gi of memory); sale refused by the business quota, short of cpu; its own
//     quota shop-dev. A user shop-dev-team is bound to the stock view role there, as a team is; a user
//     shop-dev-quota-reader may read its quotas, bindings and Deployments, but no business quota.
//   - A user cluster-viewer is bound to view in every namespace: it reads the AppliedBusinessQuotas of every
//     namespace, and no KarmadaBusinessQuota.
//   - shop-prod: api placed (2100m of cpu, 4608Mi of memory): figures that appear nowhere else, so that a team's
//     output is seen not to hold them.
const (
	businessQuota = "shop"
	teamUser      = "shop-dev-team"
	clusterViewer = "cluster-viewer"
	// What the scheduler recorded for sale: the business quota refused it, with the business's figures then.
	saleRefused = `admission webhook "resourcebinding.quota.karmada.io" denied the request: exceeded business quota: shop, ` +
		`cpu: requested 2, used 2600m, reserved 0, hard 4`
)

// createBusinessFixtures creates the business shop before the controller counts (createFixtures), and the team
// user of shop-dev.
func createBusinessFixtures() {
	GinkgoHelper()
	for _, ns := range []string{"shop-dev", "shop-prod"} {
		Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"business": "shop"}}})).To(Succeed())
	}
	for _, d := range []struct{ ns, name string }{{"shop-dev", "web"}, {"shop-dev", "sale"}, {"shop-prod", "api"}} {
		Expect(k8s.Create(ctx, deployment(d.ns, d.name))).To(Succeed())
	}
	placed := workv1alpha2.BindingReasonSuccess
	createBinding(binding("shop-dev", "web").Replicas(1).Requests(list("cpu", "500m", "memory", "1Gi")).
		Cluster("member1", 1).Scheduled(true, placed))
	createBinding(refused(binding("shop-dev", "sale").Replicas(4).Requests(list("cpu", "500m", "memory", "256Mi")), saleRefused))
	createBinding(binding("shop-prod", "api").Replicas(3).Requests(list("cpu", "700m", "memory", "1536Mi")).
		Cluster("member1", 2).Cluster("member2", 1).Scheduled(true, placed))

	Expect(k8s.Create(ctx, &quotav1alpha1.KarmadaQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop-dev", Name: "shop-dev"},
		Spec:       quotav1alpha1.KarmadaQuotaSpec{Hard: list("cpu", "3", "memory", "4Gi")},
	})).To(Succeed())
	Expect(k8s.Create(ctx, &quotav1alpha1.KarmadaBusinessQuota{
		ObjectMeta: metav1.ObjectMeta{Name: businessQuota},
		Spec: quotav1alpha1.KarmadaBusinessQuotaSpec{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"business": "shop"}},
			KarmadaQuotaSpec:  quotav1alpha1.KarmadaQuotaSpec{Hard: list("cpu", "4", "memory", "8Gi")},
		},
	})).To(Succeed())

	bindTeamToView("shop-dev", teamUser)

	// View in every namespace, as a platform team may have it, and still no business quota.
	Expect(k8s.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: clusterViewer + "-view"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: clusterViewer}},
	})).To(Succeed())

	// What `why` reads but the business quotas: the refusal must still name the business quota.
	Expect(k8s.Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop-dev", Name: "shop-dev-quota-reader"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{quotav1alpha1.GroupVersion.Group}, Resources: []string{"karmadaquotas"}, Verbs: []string{"get", "list"}},
			{APIGroups: []string{workv1alpha2.GroupVersion.Group}, Resources: []string{"resourcebindings"}, Verbs: []string{"get", "list"}},
			{APIGroups: []string{appsv1.GroupName}, Resources: []string{"deployments"}, Verbs: []string{"get", "list"}},
		},
	})).To(Succeed())
	Expect(k8s.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop-dev", Name: "shop-dev-quota-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "shop-dev-quota-reader"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "shop-dev-quota-reader"}},
	})).To(Succeed())
}

// bindTeamToView binds user to the stock view role in namespace, as a platform admin binds a team, with the rules
// karmada-quota's chart aggregates into view.
//
// envtest runs no kube-controller-manager, so view arrives without the rules aggregated into it: the ClusterRoles
// the chart labels for view are applied, and view gets their rules and those of the apiserver's own roles for it
// (Kubernetes' clusterrole-aggregation: the union of the rules of every ClusterRole its selectors match).
func bindTeamToView(namespace, user string) {
	GinkgoHelper()
	rendered, err := render.Render("karmada-quota", "karmada-system", nil)
	Expect(err).NotTo(HaveOccurred())
	for _, obj := range rendered.Karmada {
		if obj.GetKind() == "ClusterRole" && obj.GetLabels()["rbac.authorization.k8s.io/aggregate-to-view"] == "true" {
			Expect(k8s.Create(ctx, obj)).To(Succeed())
		}
	}
	var view rbacv1.ClusterRole
	Expect(k8s.Get(ctx, client.ObjectKey{Name: "view"}, &view)).To(Succeed())
	Expect(view.AggregationRule).NotTo(BeNil(), "the stock view role aggregates others' rules")
	var rules []rbacv1.PolicyRule
	for _, selector := range view.AggregationRule.ClusterRoleSelectors {
		sel, err := metav1.LabelSelectorAsSelector(&selector)
		Expect(err).NotTo(HaveOccurred())
		var matched rbacv1.ClusterRoleList
		Expect(k8s.List(ctx, &matched, client.MatchingLabelsSelector{Selector: sel})).To(Succeed())
		for _, source := range matched.Items {
			for _, rule := range source.Rules {
				if !slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool { return equality.Semantic.DeepEqual(r, rule) }) {
					rules = append(rules, rule)
				}
			}
		}
	}
	view.Rules = rules
	Expect(k8s.Update(ctx, &view)).To(Succeed())
	Expect(k8s.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: user + "-view"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	})).To(Succeed())
}

// businessCounted says whether the controller has counted every business quota for its spec and written the
// AppliedBusinessQuota of each namespace it selects for that count.
func businessCounted() error {
	var business quotav1alpha1.KarmadaBusinessQuotaList
	if err := k8s.List(ctx, &business); err != nil {
		return err
	}
	for i := range business.Items {
		b := &business.Items[i]
		if s := report.StatusOf(b.AsKarmadaQuota()); s.State != report.Current {
			return fmt.Errorf("business quota %s: %s", b.Name, s.State)
		}
		for _, n := range b.Status.Namespaces {
			var applied quotav1alpha1.AppliedBusinessQuota
			if err := k8s.Get(ctx, client.ObjectKey{Namespace: n.Name, Name: b.Name}, &applied); err != nil {
				return fmt.Errorf("the AppliedBusinessQuota of business quota %s in namespace %s: %w", b.Name, n.Name, err)
			}
			if applied.Status.ObservedGeneration != b.Status.ObservedGeneration {
				return fmt.Errorf("the AppliedBusinessQuota of business quota %s in namespace %s is for generation %d, not %d",
					b.Name, n.Name, applied.Status.ObservedGeneration, b.Status.ObservedGeneration)
			}
		}
	}
	return nil
}

var _ = Describe("kubectl karmada quota and business quotas", func() {
	It("shows a team, bound to view in its namespace, the business quota's limits and use, and its own part, and nothing of the other namespaces", func() {
		got := run("describe", "-n", "shop-dev", "--as", teamUser)
		Expect(got).To(ContainSubstring("--- exit code 0\n"))
		Expect(got).To(HaveSuffix("--- stderr\n"), "no warning: view reads all of it")
		for _, want := range []string{
			// The namespace's own quota, as before.
			`(?m)^Name:\s+shop-dev$`,
			// The business quota, marked as one.
			`(?m)^Name:\s+shop\nNamespace:\s+shop-dev\nKind:\s+business quota`,
			// Resource, Used (the business's), Reserved, Hard, and what shop-dev uses of it.
			`(?m)^Resource\s+Used\s+Reserved\s+Hard\s+Used by shop-dev$`,
			`(?m)^cpu\s+2600m\s+0\s+4\s+500m$`,
			`(?m)^memory\s+5632Mi\s+0\s+8Gi\s+1Gi$`,
		} {
			Expect(got).To(MatchRegexp(want))
		}
		// The other namespace of the business: not its name, not what it uses.
		for _, secret := range []string{"shop-prod", "2100m", "4608Mi", "api-deployment"} {
			Expect(got).NotTo(ContainSubstring(secret))
		}
		expectGolden("describe-shop-dev-team", normalise(got))
	})

	It("shows an admin every namespace's part of a business quota", func() {
		got := run("business", businessQuota)
		Expect(got).To(ContainSubstring("--- exit code 0\n"))
		for _, want := range []string{
			`(?m)^Namespaces:\s+business=shop \(2 selected\)$`,
			`(?m)^cpu\s+2600m\s+0\s+4$`,
			`(?m)^memory\s+5632Mi\s+0\s+8Gi$`,
			`(?m)^Usage per namespace:\n\s+Namespace\s+cpu\s+memory\n.*\n\s+shop-dev\s+500m\s+1Gi\n\s+shop-prod\s+2100m\s+4608Mi$`,
		} {
			Expect(got).To(MatchRegexp(want))
		}
		expectGolden("business-shop", normalise(got))
	})

	DescribeTable("prints what the golden file holds",
		func(golden string, args ...string) {
			expectGolden(golden, normalise(run(args...)))
		},
		Entry("describe NAME of a business quota, as the team sees it", "describe-shop-team",
			"describe", "shop", "-n", "shop-dev", "--as", teamUser),
		Entry("describe -o json, as the team sees it: the namespace's part apart", "describe-shop-team-json",
			"describe", "shop", "-n", "shop-dev", "--as", teamUser, "-o", "json"),
		Entry("why: refused by the business quota, named and recomputed from the team's view", "why-sale-team",
			"why", "sale", "-n", "shop-dev", "--as", teamUser),
		Entry("why: scheduled, charged by the namespace's quota and the business quota", "why-web-team",
			"why", "web", "-n", "shop-dev", "--as", teamUser),
		Entry("why: a user who may not read business quotas still has the refusal named, from its message", "why-sale-no-business",
			"why", "sale", "-n", "shop-dev", "--as", "shop-dev-quota-reader"),
		Entry("list a namespace: its quota, and the business quota applying to it", "list-shop-dev-team",
			"list", "-n", "shop-dev", "--as", teamUser),
		Entry("top -A for someone who may not read business quotas: each namespace's view of them", "top-all-cluster-viewer",
			"top", "-A", "--as", clusterViewer),
		Entry("describe for someone who may not read business quotas: the namespace's own, quietly", "describe-shop-dev-quota-reader",
			"describe", "-n", "shop-dev", "--as", "shop-dev-quota-reader"),
		Entry("error: describe NAME of a business quota for someone who may not read it: no such KarmadaQuota", "error-shop-quota-reader",
			"describe", "shop", "-n", "shop-dev", "--as", "shop-dev-quota-reader"),
		Entry("business: every business quota, for admins", "business-list",
			"business"),
		Entry("business NAME -o json", "business-shop-json",
			"business", "shop", "-o", "json"),
		Entry("error: a team may not read business quotas, and is told what it reads instead", "error-business-forbidden",
			"business", "--as", teamUser),
		Entry("error: no such business quota", "error-no-such-business",
			"business", "nothing"),
	)
})
