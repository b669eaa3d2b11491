package rbac

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/internal/testenv"
	"github.com/karmada-quota/karmada-quota/operator/pkg/render"
	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
	"github.com/karmada-quota/karmada-quota/test/integration/framework"
)

var _ = Describe("Writing a quota's status", func() {
	// statusEditor may update karmadaquotas and their status by RBAC, cluster-wide: a cluster admin's helper, or
	// anyone an admin granted too much.
	statusEditor := subject{name: "status editor", user: "carol", groups: []string{"system:authenticated"}}
	// admin is a member of system:masters, whom no RBAC rule limits.
	admin := subject{name: "cluster admin", user: "root", groups: []string{"system:masters", "system:authenticated"}}

	BeforeEach(func() {
		role := &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "quota-status-editor"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{quotaGroup}, Resources: []string{"karmadaquotas", "karmadaquotas/status", "karmadaquotaledgers"},
				Verbs: []string{"get", "list", "create", "update", "patch"}}},
		}
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "quota-status-editor"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: statusEditor.user}},
		}
		Expect(k8s.Create(ctx, role)).To(Succeed())
		Expect(k8s.Create(ctx, binding)).To(Succeed())
		DeferCleanup(func() {
			Expect(k8s.Delete(ctx, binding)).To(Succeed())
			Expect(k8s.Delete(ctx, role)).To(Succeed())
		})
	})

	It("is karmada-quota's alone, whatever RBAC grants anyone else", func() {
		q := testenv.Quota(teamNamespace, "policy-"+time.Now().Format("150405.000000"), framework.List("cpu", "10"))
		Expect(k8s.Create(ctx, q)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, q))).To(Succeed()) })

		// freeQuota is what a user would do to free quota: zero the usage and drop the reservations.
		freeQuota := func(c client.Client) error {
			var current quotav1alpha1.KarmadaQuota
			if err := c.Get(ctx, client.ObjectKeyFromObject(q), &current); err != nil {
				return err
			}
			current.Status.Used = framework.List("cpu", "0")
			current.Status.Reservations = nil
			return c.Status().Update(ctx, &current)
		}
		// freeLedger drops the reservations from the quota's ledger, where the webhook lists them.
		ledger := utiltesting.MoveToLedger(q.DeepCopy())
		Expect(as(webhookIdentity).Create(ctx, ledger)).To(Succeed(), "the webhook makes a quota's ledger")
		freeLedger := func(c client.Client) error {
			var current quotav1alpha1.KarmadaQuotaLedger
			if err := c.Get(ctx, client.ObjectKeyFromObject(ledger), &current); err != nil {
				return err
			}
			current.Reservations, current.Observed = nil, &quotav1alpha1.LedgerObserved{Used: framework.List("cpu", "0")}
			return c.Update(ctx, &current)
		}
		freeQuotaByPatch := func(c client.Client) error {
			patch := []byte(`{"status":{"used":{"cpu":"0"}}}`)
			return c.Status().Patch(ctx, q.DeepCopy(), client.RawPatch("application/merge-patch+json", patch))
		}
		Expect(can(statusEditor, quotaStatus("update").attributes())).To(BeTrue(), "RBAC alone would let the editor write status")

		By("others are refused by the policy, the cluster admin too, by update and by patch")
		for _, s := range []subject{statusEditor, admin} {
			c := as(s)
			// The apiserver loads a new policy within moments of its creation.
			Eventually(func() error { return freeQuota(c) }).WithTimeout(10*time.Second).Should(
				And(WithTransform(apierrors.IsForbidden, BeTrue()), MatchError(And(
					ContainSubstring("only karmada-quota's service accounts write the status of a KarmadaQuota"),
					ContainSubstring("not "+s.user)))), s.name)
			Expect(apierrors.IsForbidden(freeQuotaByPatch(c))).To(BeTrue(), "%s by patch", s.name)
			Expect(freeLedger(c)).To(And(WithTransform(apierrors.IsForbidden, BeTrue()),
				MatchError(ContainSubstring("not "+s.user))), "%s, the ledger", s.name)
		}

		By("karmada-quota's own identities write it")
		Expect(freeQuota(as(controllerIdentity))).To(Succeed(), "the controller writes status")
		for _, s := range []subject{webhookIdentity, controllerIdentity} {
			Expect(freeLedger(as(s))).To(Succeed(), "%s, the ledger", s.name)
		}

		By("the spec stays writable by whoever RBAC allows")
		var current quotav1alpha1.KarmadaQuota
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(q), &current)).To(Succeed())
		current.Spec.Hard = framework.List("cpu", "20")
		Expect(as(statusEditor).Update(ctx, &current)).To(Succeed())
	})

	It("covers a business quota's status and ledger, and the views teams read", func() {
		name := "policy-" + time.Now().Format("150405.000000")
		bq := &quotav1alpha1.KarmadaBusinessQuota{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: quotav1alpha1.KarmadaBusinessQuotaSpec{
				NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"business": name}},
				KarmadaQuotaSpec:  quotav1alpha1.KarmadaQuotaSpec{Hard: framework.List("cpu", "10")},
			},
		}
		Expect(k8s.Create(ctx, bq)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, bq))).To(Succeed()) })
		freeBusiness := func(c client.Client) error {
			var current quotav1alpha1.KarmadaBusinessQuota
			if err := c.Get(ctx, client.ObjectKeyFromObject(bq), &current); err != nil {
				return err
			}
			current.Status.Used = framework.List("cpu", "0")
			return c.Status().Update(ctx, &current)
		}
		ledger := func() *quotav1alpha1.KarmadaBusinessQuotaLedger {
			return &quotav1alpha1.KarmadaBusinessQuotaLedger{ObjectMeta: metav1.ObjectMeta{Name: name}}
		}
		view := func() *quotav1alpha1.AppliedBusinessQuota {
			return &quotav1alpha1.AppliedBusinessQuota{ObjectMeta: metav1.ObjectMeta{Namespace: teamNamespace, Name: name},
				Status: quotav1alpha1.AppliedBusinessQuotaStatus{Used: framework.List("cpu", "0")}}
		}
		Eventually(func() error { return freeBusiness(as(admin)) }).WithTimeout(10 * time.Second).Should(
			And(WithTransform(apierrors.IsForbidden, BeTrue()), MatchError(ContainSubstring("KarmadaBusinessQuota"))))
		Expect(apierrors.IsForbidden(as(admin).Create(ctx, ledger()))).To(BeTrue(), "a business quota's ledger")
		Expect(apierrors.IsForbidden(as(admin).Create(ctx, view()))).To(BeTrue(), "a team's view")

		Expect(freeBusiness(as(controllerIdentity))).To(Succeed())
		Expect(as(webhookIdentity).Create(ctx, ledger())).To(Succeed())
		v := view()
		Expect(as(controllerIdentity).Create(ctx, v)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, v))).To(Succeed()) })
	})

	It("is not installed when the components run as the admin", func() {
		in, err := render.Render("karmada-quota", karmadaNamespace, map[string]any{"karmada": map[string]any{"leastPrivilegeIdentities": false}})
		Expect(err).NotTo(HaveOccurred())
		var kinds []string
		for _, obj := range in.Karmada {
			kinds = append(kinds, obj.GetKind())
		}
		Expect(kinds).NotTo(ContainElement("ValidatingAdmissionPolicy"),
			"with the admin kubeconfig the components cannot be told apart from an admin: the policy would lock them out")
	})
})
