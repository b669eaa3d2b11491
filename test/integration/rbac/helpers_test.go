package rbac

import (
	"slices"
	"sort"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/operator/pkg/install"
	"github.com/karmada-quota/karmada-quota/operator/pkg/render"
)

const (
	// karmadaNamespace is the chart's karmada.namespace: where the components' service accounts and the
	// controller's Lease live.
	karmadaNamespace = "karmada-system"
	// teamNamespace is a business team's namespace.
	teamNamespace = "team-a"
)

// subject is who asks: a user name and the groups the authenticator gives them.
type subject struct {
	name   string
	user   string
	groups []string
}

func serviceAccount(name string) subject {
	return subject{
		name: name, user: "system:serviceaccount:" + karmadaNamespace + ":" + name,
		groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + karmadaNamespace, "system:authenticated"},
	}
}

var (
	webhookIdentity    = serviceAccount("karmada-quota-webhook")
	controllerIdentity = serviceAccount("karmada-quota-controller")
	// businessTeam is bound to the stock view role in its namespace; namespaceAdmin to the stock admin role.
	businessTeam   = subject{name: "team (view)", user: "alice", groups: []string{"system:authenticated"}}
	namespaceAdmin = subject{name: "namespace admin (admin)", user: "bob", groups: []string{"system:authenticated"}}
	subjects       = []subject{webhookIdentity, controllerIdentity, businessTeam, namespaceAdmin}
)

// installRenderedObjects applies the karmada-apiserver objects of the chart's default rendering, in the order and
// with the apply the install phases use.
func installRenderedObjects() {
	GinkgoHelper()
	in, err := render.Render("karmada-quota", karmadaNamespace, nil)
	Expect(err).NotTo(HaveOccurred())
	for _, ns := range []string{karmadaNamespace, teamNamespace} {
		Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}
	kinds := map[string]bool{}
	// In the installer's own order, so that nothing is applied before what it refers to.
	for _, obj := range install.Sorted(in.Karmada) {
		_, err := install.Apply(ctx, k8s, obj)
		Expect(err).NotTo(HaveOccurred())
		kinds[obj.GetKind()] = true
	}
	Expect(kinds).To(HaveKey("ValidatingAdmissionPolicy"), "the default rendering holds the status-writer policy")
}

// aggregateClusterRoles does what kube-controller-manager's clusterrole-aggregation controller does: every
// ClusterRole with an aggregationRule gets the rules of the ClusterRoles its selectors match, in name order,
// without duplicates; repeated until nothing changes, since admin aggregates edit, which aggregates view.
func aggregateClusterRoles() {
	GinkgoHelper()
	for round := 0; ; round++ {
		Expect(round).To(BeNumerically("<", 10), "aggregation does not settle")
		var roles rbacv1.ClusterRoleList
		Expect(k8s.List(ctx, &roles)).To(Succeed())
		changed := false
		for i := range roles.Items {
			aggregated := &roles.Items[i]
			if aggregated.AggregationRule == nil {
				continue
			}
			var rules []rbacv1.PolicyRule
			for _, selector := range aggregated.AggregationRule.ClusterRoleSelectors {
				var matched rbacv1.ClusterRoleList
				sel, err := metav1.LabelSelectorAsSelector(&selector)
				Expect(err).NotTo(HaveOccurred())
				Expect(k8s.List(ctx, &matched, client.MatchingLabelsSelector{Selector: sel})).To(Succeed())
				sort.Slice(matched.Items, func(a, b int) bool { return matched.Items[a].Name < matched.Items[b].Name })
				for _, source := range matched.Items {
					if source.Name == aggregated.Name {
						continue
					}
					for _, rule := range source.Rules {
						if !slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool { return equality.Semantic.DeepEqual(r, rule) }) {
							rules = append(rules, rule)
						}
					}
				}
			}
			if equality.Semantic.DeepEqual(rules, aggregated.Rules) {
				continue
			}
			aggregated.Rules = rules
			Expect(k8s.Update(ctx, aggregated)).To(Succeed())
			changed = true
		}
		if !changed {
			return
		}
	}
}

// bindBusinessUsers binds the team to view and the namespace admin to admin in the team's namespace, as a
// platform admin does.
func bindBusinessUsers() {
	GinkgoHelper()
	for _, b := range []struct {
		user, role string
	}{{businessTeam.user, "view"}, {namespaceAdmin.user, "admin"}} {
		Expect(k8s.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: teamNamespace, Name: b.user + "-" + b.role},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: b.role},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: b.user}},
		})).To(Succeed())
	}
}

// can asks the apiserver's authorizer what `kubectl auth can-i` asks.
func can(s subject, attrs authorizationv1.ResourceAttributes) bool {
	GinkgoHelper()
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: s.user, Groups: s.groups, ResourceAttributes: &attrs,
	}}
	Expect(k8s.Create(ctx, review)).To(Succeed())
	return review.Status.Allowed
}

// as returns a client that acts as s, through impersonation by the suite's admin.
func as(s subject) client.Client {
	GinkgoHelper()
	impersonating := rest.CopyConfig(cfg)
	impersonating.Impersonate = rest.ImpersonationConfig{UserName: s.user, Groups: s.groups}
	c, err := client.New(impersonating, client.Options{Scheme: testEnv.Scheme})
	Expect(err).NotTo(HaveOccurred())
	return c
}
