package webhook

import (
	"fmt"
	"time"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/karmada-quota/karmada-quota/internal/testenv"
	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
	"github.com/karmada-quota/karmada-quota/test/integration/framework"
)

var quota = testenv.Quota

func scoped(q *quotav1alpha1.KarmadaQuota, op corev1.ScopeSelectorOperator, values ...string) *quotav1alpha1.KarmadaQuota {
	q.Spec.ScopeSelector = &quotav1alpha1.ScopeSelector{MatchExpressions: []quotav1alpha1.ScopedResourceSelectorRequirement{
		{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: op, Values: values},
	}}
	return q
}

var _ = Describe("ResourceBinding admission", func() {
	It("admits what fits and reserves it under the binding's UID and the generation its write produces", func() {
		ns := newNamespace()
		createQuota(quota(ns, "team", list("cpu", "2", "requests.memory", "4Gi", "pods", "10", "count/deployments.apps", "5")))

		rb := mustCreateBinding(utiltesting.MakeBinding(ns, "web").Requests(requests("500m", "1Gi")))
		Expect(rb.Generation).To(Equal(int64(1)))
		q := getQuota(ns, "team")
		Expect(reservationsOf(q, rb)).To(HaveKeyWithValue(int64(1), equalQuantities(list("count/deployments.apps", "1"))),
			"a create charges the object at once, before any controller ran")

		before := time.Now()
		Expect(place(rb, cluster("member1", 1), cluster("member2", 1))).To(Succeed())
		Expect(rb.Generation).To(Equal(int64(2)), "the placement is a spec change")
		q = getQuota(ns, "team")
		Expect(reservationsOf(q, rb)).To(HaveKeyWithValue(int64(2), equalQuantities(list("cpu", "1", "requests.memory", "2Gi", "pods", "2"))),
			"the reservation is keyed by the generation the admitted write produced: the webhook saw the bumped generation")
		Expect(reservedOf(q)).To(equalQuantities(list("cpu", "1", "requests.memory", "2Gi", "pods", "2", "count/deployments.apps", "1")))
		for _, r := range getLedger(q.Namespace, q.Name).Reservations {
			Expect(r.ReservedBy).To(Equal(quotav1alpha1.ReservationOwner{
				APIVersion: "work.karmada.io/v1alpha2", Kind: "ResourceBinding", Name: "web", UID: rb.UID,
			}))
			if r.Generation == 2 {
				Expect(r.ExpirationTime.Time).To(BeTemporally("~", before.Add(2*time.Minute), 5*time.Second), "expiry is the default 2m TTL")
			}
		}
	})

	It("refuses with 403 QuotaExceeded, naming the quota and every exceeded resource", func() {
		ns := newNamespace()
		createQuota(quota(ns, "small", list("cpu", "1", "memory", "1Gi")))
		rb := mustCreateBinding(utiltesting.MakeBinding(ns, "big").Requests(requests("600m", "600Mi")))

		statusErr := expectQuotaExceeded(place(rb, cluster("member1", 2)))
		Expect(statusErr.ErrStatus.Message).To(And(
			ContainSubstring("exceeded quota: small"),
			ContainSubstring("cpu: requested 1200m, used 0, reserved 0, hard 1 (can never fit"),
			ContainSubstring("memory: requested 1200Mi, used 0, reserved 0, hard 1Gi (can never fit"),
		))
		var back workv1alpha2.ResourceBinding
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(rb), &back)).To(Succeed())
		Expect(back.Spec.Clusters).To(BeEmpty(), "a refused placement is not stored")

		// One replica fits; a second binding's replica then does not, but could once usage drops.
		Expect(place(rb, cluster("member1", 1))).To(Succeed())
		other := mustCreateBinding(utiltesting.MakeBinding(ns, "other").Requests(requests("600m", "")))
		statusErr = expectQuotaExceeded(place(other, cluster("member2", 1)))
		Expect(statusErr.ErrStatus.Message).To(ContainSubstring("cpu: requested 600m, used 0, reserved 600m, hard 1"))
		Expect(statusErr.ErrStatus.Message).NotTo(ContainSubstring("never"))
	})

	It("admits scale-downs and unrelated changes even over quota, and refuses the next increase", func() {
		ns := newNamespace()
		q := createQuota(quota(ns, "team", list("cpu", "2")))
		rb := mustCreateBinding(utiltesting.MakeBinding(ns, "web").Requests(requests("500m", "")))
		Expect(place(rb, cluster("member1", 2), cluster("member2", 2))).To(Succeed())

		q = getQuota(ns, q.Name)
		q.Spec.Hard = list("cpu", "1")
		Expect(k8s.Update(ctx, q)).To(Succeed(), "the admin lowers the limit below what is in use")

		Expect(place(rb, cluster("member1", 2), cluster("member2", 1))).To(Succeed(), "a scale-down is always admitted")
		rb.Labels = map[string]string{"touched": "yes"}
		Expect(k8s.Update(ctx, rb)).To(Succeed(), "an unrelated change is always admitted")
		expectQuotaExceeded(place(rb, cluster("member1", 2), cluster("member2", 2)))
	})

	It("decides every write after a change of hard on the new hard, however far behind the webhook's informer is", func() {
		// The webhook decides on the quota its informer holds and writes only the ledger; the quota webhook fences
		// the ledger at the new generation before the change is stored, so a decision on the old hard cannot land.
		ns := newNamespace()
		q := createQuota(quota(ns, "team", list("cpu", "4")))
		rb := mustCreateBinding(utiltesting.MakeBinding(ns, "web").Requests(requests("1", "")))
		Expect(place(rb, cluster("member1", 1))).To(Succeed(), "the ledger exists from the first admission")
		replicas := int32(1)
		for round := 0; round < 10; round++ {
			q = getQuota(ns, q.Name)
			q.Spec.Hard = list("cpu", fmt.Sprint(replicas))
			Expect(k8s.Update(ctx, q)).To(Succeed(), "hard lowered to what is placed")
			expectQuotaExceeded(place(rb, cluster("member1", replicas+1)))

			q = getQuota(ns, q.Name)
			q.Spec.Hard = list("cpu", fmt.Sprint(replicas+1))
			Expect(k8s.Update(ctx, q)).To(Succeed(), "hard raised by one replica")
			Expect(place(rb, cluster("member1", replicas+1))).To(Succeed(), "round %d: the raised hard holds at once", round)
			replicas++
		}
		Expect(getLedger(ns, q.Name).QuotaGeneration).To(Equal(getQuota(ns, q.Name).Generation), "the ledger is fenced at the last spec")
	})

	It("is all or nothing across the namespace's quotas", func() {
		ns := newNamespace()
		createQuota(quota(ns, "a-cpu", list("cpu", "10")))
		createQuota(quota(ns, "b-pods", list("pods", "1")))
		createQuota(quota(ns, "c-memory", list("memory", "10Gi")))
		rb := mustCreateBinding(utiltesting.MakeBinding(ns, "web").Requests(requests("100m", "100Mi")))

		statusErr := expectQuotaExceeded(place(rb, cluster("member1", 2)))
		Expect(statusErr.ErrStatus.Message).To(ContainSubstring("exceeded quota: b-pods, pods: requested 2"))
		Expect(statusErr.ErrStatus.Message).NotTo(ContainSubstring("a-cpu"))
		for _, name := range []string{"a-cpu", "b-pods", "c-memory"} {
			Expect(reservationsOf(getQuota(ns, name), rb)).To(BeEmpty(), "quota %s kept a reservation for a refused write", name)
		}

		Expect(place(rb, cluster("member1", 1))).To(Succeed())
		for name, want := range map[string]corev1.ResourceList{
			"a-cpu": list("cpu", "100m"), "b-pods": list("pods", "1"), "c-memory": list("memory", "100Mi"),
		} {
			Expect(reservationsOf(getQuota(ns, name), rb)).To(HaveKeyWithValue(int64(2), equalQuantities(want)), "quota %s", name)
		}
	})

	It("decides dry-run requests and writes nothing", func() {
		ns := newNamespace()
		createQuota(quota(ns, "team", list("cpu", "1")))
		rb := mustCreateBinding(utiltesting.MakeBinding(ns, "web").Requests(requests("500m", "")))
		rv := getQuota(ns, "team").ResourceVersion

		dryRun := []client.PatchOption{client.DryRunAll}
		Expect(placeWith(rb.DeepCopy(), dryRun, cluster("member1", 2))).To(Succeed())
		expectQuotaExceeded(placeWith(rb.DeepCopy(), dryRun, cluster("member1", 3)))
		Expect(getQuota(ns, "team").ResourceVersion).To(Equal(rv), "a dry run must not write the quota")
	})

	It("enforces PriorityClass scopes with all four operators", func() {
		ns := newNamespace()
		createQuota(scoped(quota(ns, "in-high", list("cpu", "1")), corev1.ScopeSelectorOpIn, "high"))
		createQuota(scoped(quota(ns, "notin-high", list("cpu", "1")), corev1.ScopeSelectorOpNotIn, "high"))
		createQuota(scoped(quota(ns, "exists", list("cpu", "1")), corev1.ScopeSelectorOpExists))
		createQuota(scoped(quota(ns, "doesnotexist", list("cpu", "1")), corev1.ScopeSelectorOpDoesNotExist))
		// The class-less binding's template, where the webhook reads that it names no class (priority_class_test.go).
		_, err := framework.CreateDeployment(ctx, k8s, ns, "class-none", "", "600m")
		Expect(err).NotTo(HaveOccurred())

		for class, want := range map[string][]string{
			"high": {"in-high", "exists"},
			"low":  {"notin-high", "exists"},
			"":     {"notin-high", "doesnotexist"},
		} {
			name := "class-" + class
			if class == "" {
				name = "class-none"
			}
			b := utiltesting.MakeBinding(ns, name).Requests(requests("600m", ""))
			if class != "" {
				b.PriorityClass(class)
			}
			rb := mustCreateBinding(b)
			statusErr := expectQuotaExceeded(place(rb, cluster("member1", 2)))
			for _, q := range []string{"in-high", "notin-high", "exists", "doesnotexist"} {
				if contains(want, q) {
					Expect(statusErr.ErrStatus.Message).To(ContainSubstring("exceeded quota: "+q), "class %q", class)
				} else {
					Expect(statusErr.ErrStatus.Message).NotTo(ContainSubstring("exceeded quota: "+q), "class %q", class)
				}
			}
		}
	})

	It("enforces object counts and pods", func() {
		ns := newNamespace()
		createQuota(quota(ns, "objects", list("count/deployments.apps", "1", "services", "1", "pods", "3")))

		mustCreateBinding(utiltesting.MakeBinding(ns, "web"))
		_, err := createBinding(utiltesting.MakeBinding(ns, "api"))
		Expect(expectQuotaExceeded(err).ErrStatus.Message).To(ContainSubstring("count/deployments.apps: requested 1, used 0, reserved 1, hard 1"))

		mustCreateBinding(utiltesting.MakeBinding(ns, "web-svc").Resource("v1", "Service"))
		_, err = createBinding(utiltesting.MakeBinding(ns, "api-svc").Resource("v1", "Service"))
		Expect(expectQuotaExceeded(err).ErrStatus.Message).To(ContainSubstring("services: requested 1"))

		cm := mustCreateBinding(utiltesting.MakeBinding(ns, "settings").Resource("v1", "ConfigMap"))
		Expect(place(cm, cluster("member1", 0), cluster("member2", 0))).To(Succeed(), "a ConfigMap placed everywhere uses no pods")

		job := mustCreateBinding(utiltesting.MakeBinding(ns, "batch").Resource("batch/v1", "Job"))
		expectQuotaExceeded(place(job, cluster("member1", 2), cluster("member2", 2)))
		Expect(place(job, cluster("member1", 2), cluster("member2", 1))).To(Succeed())
	})

	It("governs the writes that follow a quota's create, though no replica's informer has the quota yet", func() {
		ns := newNamespace()
		quotaWatch.Pause()
		DeferCleanup(quotaWatch.Resume)
		createQuota(quota(ns, "team", list("cpu", "1", "count/deployments.apps", "1")))

		rb := mustCreateBinding(utiltesting.MakeBinding(ns, "web").Requests(requests("600m", "")))
		Expect(reservationsOf(getQuota(ns, "team"), rb)).To(HaveKeyWithValue(int64(1), equalQuantities(list("count/deployments.apps", "1"))))
		_, err := createBinding(utiltesting.MakeBinding(ns, "api"))
		Expect(expectQuotaExceeded(err).ErrStatus.Message).To(ContainSubstring("count/deployments.apps: requested 1, used 0, reserved 1, hard 1"))
		Expect(expectQuotaExceeded(place(rb, cluster("member1", 2))).ErrStatus.Message).To(ContainSubstring("cpu: requested 1200m, used 0, reserved 0, hard 1"))
		Expect(place(rb, cluster("member1", 1))).To(Succeed())
	})

	It("refuses replicas placed without a cpu or memory request under a quota that limits it", func() {
		ns := newNamespace()
		createQuota(quota(ns, "team", list("cpu", "10")))
		rb := mustCreateBinding(utiltesting.MakeBinding(ns, "no-requests"))
		statusErr := expectQuotaExceeded(place(rb, cluster("member1", 1)))
		Expect(statusErr.ErrStatus.Message).To(ContainSubstring("must specify requests for cpu"))
	})

	It("refuses a malformed binding with a field error", func() {
		ns := newNamespace()
		rb := mustCreateBinding(utiltesting.MakeBinding(ns, "web").Requests(requests("100m", "")))
		err := place(rb, cluster("member1", -1))
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(ContainSubstring("spec.clusters[0].replicas"))
	})
})

var _ = Describe("Failing closed", func() {
	// A replica whose credentials may do only some of what admission needs, registered for one namespace.
	DescribeTable("refuses a binding write when its quotas cannot be read or written",
		func(user string, verbs []string, ledgerVerbs []string, wantMessage string) {
			ns := newNamespace("quota-test", user)
			// The object count makes every create write a reservation.
			createQuota(quota(ns, "team", list("cpu", "10", "count/deployments.apps", "10")))
			grant(user, verbs, ledgerVerbs)
			partial, err := testEnv.AddUser(envtest.User{Name: user}, cfg)
			Expect(err).NotTo(HaveOccurred())
			replica, err := framework.StartWebhooks(ctx, partial.Config(), k8s, 1, nil, func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
				c.Name = "karmada-quota-" + user
				for i := range c.Webhooks {
					c.Webhooks[i].NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"quota-test": user}}
				}
			})
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(func() {
				Expect(k8s.Delete(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "karmada-quota-" + user}})).To(Succeed())
				Expect(replica.Stop()).To(Succeed())
			})

			// The apiserver picks up a new webhook configuration within moments; until then writes pass unchecked,
			// so every attempt is a binding of its own.
			var rb *workv1alpha2.ResourceBinding
			attempt := 0
			Eventually(func() error {
				attempt++
				rb, err = createBinding(utiltesting.MakeBinding(ns, fmt.Sprintf("web-%d", attempt)).Requests(requests("100m", "")))
				return err
			}).WithTimeout(10*time.Second).Should(MatchError(And(ContainSubstring("fail closed"), ContainSubstring(wantMessage))),
				"the binding is refused once the replica is registered")
			Expect(apierrors.IsInternalError(err)).To(BeTrue(), "%v", err)
			Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(rb), &workv1alpha2.ResourceBinding{}))).To(BeTrue())
		},
		// Without watch, the replica's informer holds the ledgers as first listed: none, while the suite's replicas
		// made this quota's at the first write. Its own write loses the race (the ledger exists), and it must then
		// read the ledger from the apiserver, which it may not.
		Entry("cannot be read", "cannot-get", []string{"get", "list", "watch"}, []string{"list", "create", "update"},
			`cannot get resource "karmadaquotaledgers"`),
		Entry("cannot be written", "cannot-write", []string{"get", "list", "watch"}, []string{"get", "list", "watch"},
			`resource "karmadaquotaledgers"`),
	)
})

// grant gives user the verbs on karmadaquotas and on their ledgers, cluster-wide. (A replica that may not list and
// watch both never syncs its informers: it is never ready, and is not one of these cases.)
func grant(user string, verbs, ledgerVerbs []string) {
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "quota-" + user},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"quota.karmada.io"}, Resources: []string{"karmadaquotas"}, Verbs: verbs},
			{APIGroups: []string{"quota.karmada.io"}, Resources: []string{"karmadaquotaledgers"}, Verbs: ledgerVerbs},
			// What the replica needs besides, as installed: member clusters' labels, for the quotas' cluster groups;
			// business quotas, their ledgers and namespaces' labels, which they select namespaces by.
			{APIGroups: []string{"cluster.karmada.io"}, Resources: []string{"clusters"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"quota.karmada.io"}, Resources: []string{"karmadabusinessquotas", "karmadabusinessquotaledgers"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch"}},
		},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "quota-" + user},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: user}},
	}
	Expect(k8s.Create(ctx, role)).To(Succeed())
	Expect(k8s.Create(ctx, binding)).To(Succeed())
	DeferCleanup(func() {
		Expect(k8s.Delete(ctx, binding)).To(Succeed())
		Expect(k8s.Delete(ctx, role)).To(Succeed())
	})
}

var _ = Describe("KarmadaQuota validation", func() {
	DescribeTable("refuses what the schema lets through, with field errors",
		func(q func(ns string) *quotav1alpha1.KarmadaQuota, wantField, wantMessage string) {
			ns := newNamespace()
			err := k8s.Create(ctx, q(ns))
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
			Expect(err.Error()).To(And(ContainSubstring(wantField), ContainSubstring(wantMessage)))
		},
		Entry("a negative limit", func(ns string) *quotav1alpha1.KarmadaQuota {
			return quota(ns, "q", list("cpu", "-1"))
		}, "spec.hard[cpu]", "must be greater than or equal to 0"),
		Entry("one resource under two names", func(ns string) *quotav1alpha1.KarmadaQuota {
			return quota(ns, "q", list("cpu", "1", "requests.cpu", "2"))
		}, "spec.hard[requests.cpu]", "are the same resource"),
		Entry("an unknown resource", func(ns string) *quotav1alpha1.KarmadaQuota {
			return quota(ns, "q", list("gpus", "1"))
		}, "spec.hard[gpus]", "unknown resource"),
		Entry("a fractional pod count", func(ns string) *quotav1alpha1.KarmadaQuota {
			return quota(ns, "q", list("pods", "1500m"))
		}, "spec.hard[pods]", "must be an integer"),
		Entry("load balancers under a scope", func(ns string) *quotav1alpha1.KarmadaQuota {
			return scoped(quota(ns, "q", list("services.loadbalancers", "1")), corev1.ScopeSelectorOpExists)
		}, "spec.hard[services.loadbalancers]", "cannot count claims, storage, load balancers or node ports"),
		Entry("a storage class that is not a name", func(ns string) *quotav1alpha1.KarmadaQuota {
			return quota(ns, "q", list("Gold_1.storageclass.storage.k8s.io/requests.storage", "1Gi"))
		}, "spec.hard[Gold_1.storageclass.storage.k8s.io/requests.storage]", "is not a valid StorageClass name"),
		Entry("an object count under a scope", func(ns string) *quotav1alpha1.KarmadaQuota {
			return scoped(quota(ns, "q", list("count/deployments.apps", "1")), corev1.ScopeSelectorOpExists)
		}, "spec.hard[count/deployments.apps]", "cannot count objects"),
		Entry("a priority class that is not a name", func(ns string) *quotav1alpha1.KarmadaQuota {
			return scoped(quota(ns, "q", list("cpu", "1")), corev1.ScopeSelectorOpIn, "Not_A_Name")
		}, "spec.scopeSelector.matchExpressions[0].values[0]", "not a PriorityClass name"),
	)

	It("validates updates too", func() {
		ns := newNamespace()
		q := createQuota(quota(ns, "q", list("cpu", "1")))
		q.Spec.Hard = list("cpu", "1", "pods", "1500m")
		Expect(apierrors.IsInvalid(k8s.Update(ctx, q))).To(BeTrue())
	})
})

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
