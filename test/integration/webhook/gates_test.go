package webhook

import (
	"encoding/json"
	"fmt"

	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"github.com/karmada-io/karmada/pkg/util/names"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/internal/testenv"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
	"github.com/karmada-quota/karmada-quota/test/integration/framework"
)

// The gates beyond the binding, against a real kube-apiserver with the webhooks registered as installed: the
// Work a member receives, and the resource template the user writes. Karmada's controllers are not running here;
// each write is the one they (or a user) would send.
var _ = Describe("The Work and resource template gates", func() {
	var (
		ns string
		d  *appsv1.Deployment
		rb *workv1alpha2.ResourceBinding
	)

	// A Deployment of 4 replicas at 2 CPU, propagated, placed 2 + 2 on member1 and member2 under a 10-CPU quota.
	BeforeEach(func() {
		ns = newNamespace()
		for _, member := range []string{"member1", "member2"} {
			execution := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: names.GenerateExecutionSpaceName(member)}}
			Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, execution))).To(Succeed())
		}
		createQuota(testenv.Quota(ns, "team", list("cpu", "10")))
		var err error
		d, err = framework.CreateDeployment(ctx, k8s, ns, "web", "", "2")
		Expect(err).NotTo(HaveOccurred())
		d.Spec.Replicas = ptr.To[int32](4)
		d.Labels = map[string]string{policyv1alpha1.PropagationPolicyPermanentIDLabel: "policy-id"}
		Expect(k8s.Update(ctx, d)).To(Succeed())

		b := framework.BindingOf(d).Replicas(4)
		b.Name = names.GenerateBindingName("Deployment", d.Name)
		rb = mustCreateBinding(b)
		Expect(place(rb, cluster("member1", 2), cluster("member2", 2))).To(Succeed())
	})

	// work is the Work Karmada's binding controller renders for member: the template with the member's replicas.
	work := func(member string, replicas int32, cpu string, bound bool) *workv1alpha1.Work {
		GinkgoHelper()
		manifest := d.DeepCopy()
		manifest.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}
		manifest.ObjectMeta = metav1.ObjectMeta{Namespace: ns, Name: d.Name, Labels: d.Labels}
		manifest.Spec.Replicas = ptr.To(replicas)
		manifest.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
		raw, err := json.Marshal(manifest)
		Expect(err).NotTo(HaveOccurred())
		w := &workv1alpha1.Work{
			ObjectMeta: metav1.ObjectMeta{Namespace: names.GenerateExecutionSpaceName(member), Name: names.GenerateWorkName("Deployment", d.Name, ns)},
			Spec:       workv1alpha1.WorkSpec{Workload: workv1alpha1.WorkloadTemplate{Manifests: []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: raw}}}}},
		}
		if bound {
			w.Annotations = map[string]string{
				workv1alpha2.ResourceBindingNamespaceAnnotationKey: ns,
				workv1alpha2.ResourceBindingNameAnnotationKey:      rb.Name,
			}
		}
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, w))).To(Succeed()) })
		return w
	}
	rewrite := func(w *workv1alpha1.Work, replicas int32, cpu string) error {
		GinkgoHelper()
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(w), w)).To(Succeed())
		w.Spec = work(w.Namespace[len(names.ExecutionSpacePrefix):], replicas, cpu, true).Spec
		return k8s.Update(ctx, w)
	}

	// workReservations are the quota's reservations held by Works (their own admissions, beyond their bindings'),
	// by Work name and generation.
	workReservations := func() map[string]corev1.ResourceList {
		GinkgoHelper()
		out := map[string]corev1.ResourceList{}
		for _, r := range getLedger(ns, "team").Reservations {
			if r.ReservedBy.Kind == "Work" {
				out[fmt.Sprintf("%s/%s@%d", r.ReservedBy.Namespace, r.ReservedBy.Name, r.Generation)] = r.Reserved
			}
		}
		return out
	}

	It("charges a Work what it asks beyond its binding's placement, exactly, and refuses it past hard", func() {
		// The binding placed 2 + 2 replicas at 2 CPU: 8 reserved of 10.
		w1 := work("member1", 2, "2", true)
		Expect(k8s.Create(ctx, w1)).To(Succeed(), "2 × 2 CPU is what member1 was placed")
		Expect(workReservations()).To(BeEmpty(), "a Work asking what its binding places is charged nothing more, and writes nothing")

		// An OverridePolicy raised member1's request to 3 CPU: 6 where 4 are placed, 2 more, which fit.
		Expect(rewrite(w1, 2, "3")).To(Succeed())
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(w1), w1)).To(Succeed())
		key := fmt.Sprintf("%s/%s@%d", w1.Namespace, w1.Name, w1.Generation)
		Expect(workReservations()).To(HaveKeyWithValue(key, equalQuantities(list("cpu", "2"))))

		// Three replicas at 3 CPU: 3 more, past the 10 (8 for the binding, 2 for the Work's last write, no
		// controller here to settle them).
		err := rewrite(w1, 3, "3")
		status := expectQuotaExceeded(err)
		Expect(status.ErrStatus.Message).To(And(
			ContainSubstring("Work %s/%s would have member cluster member1 run more than quota allows", w1.Namespace, w1.Name),
			ContainSubstring("ResourceBinding %s/%s", ns, rb.Name),
			ContainSubstring("exceeded quota: team, cpu: requested 3, used 0, reserved 10, hard 10"),
		))
		// A new Work on member2 asking 500m past its placement does not fit either.
		expectQuotaExceeded(k8s.Create(ctx, work("member2", 2, "2500m", true)))
		// What its placement covers does.
		Expect(k8s.Create(ctx, work("member2", 2, "2", true))).To(Succeed())

		// Less than before always goes through, and writes nothing.
		before := workReservations()
		Expect(rewrite(w1, 1, "2")).To(Succeed())
		Expect(rewrite(w1, 2, "2")).To(Succeed())
		Expect(workReservations()).To(Equal(before))

		// The template's requests changed and its binding has not caught up (Karmada's detector has yet to write it,
		// or a quota refused it): Karmada renders Works from the new template, and nothing beyond the placement goes
		// through, whatever room is left (Karmada's bug #6937). A change of anything else is no such lag.
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
		d.Annotations = map[string]string{"changed": "yes"}
		Expect(k8s.Update(ctx, d)).To(Succeed())
		status = expectQuotaExceeded(rewrite(w1, 2, "2100m"))
		Expect(status.ErrStatus.Message).To(ContainSubstring("exceeded quota: team, cpu: requested 200m, used 0, reserved 10, hard 10"))
		Expect(status.ErrStatus.Message).NotTo(ContainSubstring("has not been admitted"))
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
		d.Spec.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("1")
		Expect(k8s.Update(ctx, d)).To(Succeed())
		status = expectQuotaExceeded(rewrite(w1, 2, "2100m"))
		Expect(status.ErrStatus.Message).To(ContainSubstring("the binding has not been admitted for the requests of the current Deployment %s/web", ns))
		Expect(rewrite(w1, 2, "2")).To(Succeed(), "within its placement, whatever the template")
	})

	It("charges a CronJob the Jobs it runs at once, and refuses one whose Jobs have no bound", func() {
		cronJob := func(name, policy string, parallelism int32, cpu string) *workv1alpha1.Work {
			GinkgoHelper()
			manifest := map[string]any{
				"apiVersion": "batch/v1", "kind": "CronJob",
				"metadata": map[string]any{"namespace": ns, "name": name},
				"spec": map[string]any{
					"schedule": "*/1 * * * *", "concurrencyPolicy": policy,
					"jobTemplate": map[string]any{"spec": map[string]any{
						"parallelism": parallelism,
						"template": map[string]any{"spec": map[string]any{
							"restartPolicy": "Never",
							"containers": []any{map[string]any{"name": "report", "image": "report",
								"resources": map[string]any{"requests": map[string]any{"cpu": cpu}}}},
						}},
					}},
				},
			}
			raw, err := json.Marshal(manifest)
			Expect(err).NotTo(HaveOccurred())
			// Karmada reads no replicas from a CronJob: its binding places it on member1 with none.
			b := utiltesting.MakeBinding(ns, names.GenerateBindingName("CronJob", name))
			b.Spec.Resource = workv1alpha2.ObjectReference{APIVersion: "batch/v1", Kind: "CronJob", Namespace: ns, Name: name}
			binding := mustCreateBinding(b)
			Expect(place(binding, cluster("member1", 0))).To(Succeed())
			w := &workv1alpha1.Work{
				ObjectMeta: metav1.ObjectMeta{
					Namespace: names.GenerateExecutionSpaceName("member1"), Name: names.GenerateWorkName("CronJob", name, ns),
					Annotations: map[string]string{
						workv1alpha2.ResourceBindingNamespaceAnnotationKey: ns,
						workv1alpha2.ResourceBindingNameAnnotationKey:      binding.Name,
					},
				},
				Spec: workv1alpha1.WorkSpec{Workload: workv1alpha1.WorkloadTemplate{Manifests: []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: raw}}}}},
			}
			DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, w))).To(Succeed()) })
			return w
		}

		// Concurrent Jobs allowed: no bound, no admission, whatever room is left.
		status := expectQuotaExceeded(k8s.Create(ctx, cronJob("nightly", "Allow", 1, "100m")))
		Expect(status.ErrStatus.Message).To(And(
			ContainSubstring("quota team limits what it runs"),
			ContainSubstring("CronJob %s/nightly", ns),
			ContainSubstring("set spec.concurrencyPolicy to Forbid or Replace"),
		))
		// One Job at a time, 2 pods at 1 CPU: 2 CPU charged, as the Work's own reservation (8 + 2 = 10).
		w := cronJob("report", "Forbid", 2, "1")
		Expect(k8s.Create(ctx, w)).To(Succeed())
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(w), w)).To(Succeed())
		Expect(workReservations()).To(HaveKeyWithValue(fmt.Sprintf("%s/%s@1", w.Namespace, w.Name), equalQuantities(list("cpu", "2"))))
		// A third pod does not fit.
		status = expectQuotaExceeded(k8s.Create(ctx, cronJob("hourly", "Replace", 1, "500m")))
		Expect(status.ErrStatus.Message).To(ContainSubstring("exceeded quota: team, cpu: requested 500m, used 0, reserved 10, hard 10"))
	})

	It("refuses a Work carrying a kind whose pods it cannot know under a quota limiting pods, unless the kind is exempt", func() {
		custom := func(apiVersion, kind, name string) *workv1alpha1.Work {
			GinkgoHelper()
			raw, err := json.Marshal(map[string]any{
				"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"namespace": ns, "name": name},
				"spec": map[string]any{"size": 3},
			})
			Expect(err).NotTo(HaveOccurred())
			b := utiltesting.MakeBinding(ns, names.GenerateBindingName(kind, name))
			b.Spec.Resource = workv1alpha2.ObjectReference{APIVersion: apiVersion, Kind: kind, Namespace: ns, Name: name}
			binding := mustCreateBinding(b)
			Expect(place(binding, cluster("member1", 0))).To(Succeed())
			w := &workv1alpha1.Work{
				ObjectMeta: metav1.ObjectMeta{
					Namespace: names.GenerateExecutionSpaceName("member1"), Name: names.GenerateWorkName(kind, name, ns),
					Annotations: map[string]string{
						workv1alpha2.ResourceBindingNamespaceAnnotationKey: ns,
						workv1alpha2.ResourceBindingNameAnnotationKey:      binding.Name,
					},
				},
				Spec: workv1alpha1.WorkSpec{Workload: workv1alpha1.WorkloadTemplate{Manifests: []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: raw}}}}},
			}
			DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, w))).To(Succeed()) })
			return w
		}
		status := expectQuotaExceeded(k8s.Create(ctx, custom("example.com/v1", "Widget", "w")))
		Expect(status.ErrStatus.Message).To(And(
			ContainSubstring("quota team limits what pods use, and karmada-quota cannot know the pods of Widget %s/w (Widget.example.com)", ns),
			ContainSubstring("ResourceInterpreterCustomization"),
			ContainSubstring("--exempt-kinds"),
		))
		Expect(k8s.Create(ctx, custom("example.com/v1", "Gadget", "g"))).To(Succeed(), "exempt by the admin")

		// Under a quota limiting only object counts, nothing pods use is limited: no need to know them.
		Expect(k8s.Delete(ctx, getQuota(ns, "team"))).To(Succeed())
		createQuota(testenv.Quota(ns, "counts", list("count/configmaps", "5")))
		Eventually(func() error { return k8s.Create(ctx, custom("example.com/v1", "Widget", "w2")) }).Should(Succeed())
	})

	It("admits nothing to a Work that belongs to no binding, but lets a Work running no replicas through", func() {
		expectQuotaExceeded(k8s.Create(ctx, work("member1", 1, "100m", false)))

		// A Work naming web's binding but carrying another Deployment borrows nothing of web's admission.
		borrowing := work("member1", 1, "100m", true)
		other := &unstructured.Unstructured{}
		Expect(other.UnmarshalJSON(borrowing.Spec.Workload.Manifests[0].Raw)).To(Succeed())
		other.SetName("other")
		raw, err := other.MarshalJSON()
		Expect(err).NotTo(HaveOccurred())
		borrowing.Name = names.GenerateWorkName("Deployment", "other", ns)
		borrowing.Spec.Workload.Manifests[0].Raw = raw
		status := expectQuotaExceeded(k8s.Create(ctx, borrowing))
		Expect(status.ErrStatus.Message).To(ContainSubstring("no ResourceBinding of namespace %s", ns))

		cm, err := json.Marshal(&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}})
		Expect(err).NotTo(HaveOccurred())
		config := &workv1alpha1.Work{
			ObjectMeta: metav1.ObjectMeta{Namespace: names.GenerateExecutionSpaceName("member1"), Name: fmt.Sprintf("settings-%s", ns)},
			Spec:       workv1alpha1.WorkSpec{Workload: workv1alpha1.WorkloadTemplate{Manifests: []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: cm}}}}},
		}
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, config))).To(Succeed()) })
		Expect(k8s.Create(ctx, config)).To(Succeed())
	})

	It("refuses only increases: a Work found over what was admitted can still be relabelled, lowered and deleted", func() {
		// Stored while the namespace had no quota: 3 replicas where 2 are placed.
		Expect(k8s.Delete(ctx, getQuota(ns, "team"))).To(Succeed())
		Eventually(func() error { return k8s.Create(ctx, work("member1", 3, "2", true)) }).Should(Succeed())
		createQuota(testenv.Quota(ns, "team", list("cpu", "10")))
		w := &workv1alpha1.Work{}
		key := types.NamespacedName{Namespace: names.GenerateExecutionSpaceName("member1"), Name: names.GenerateWorkName("Deployment", d.Name, ns)}

		// Karmada's controllers relabel Works and set finalizers: no decision needed, whatever the Work asks.
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, key, w)).To(Succeed())
			w.Labels = map[string]string{"touched": "yes"}
			w.Finalizers = []string{"test.karmada-quota/hold"}
			g.Expect(k8s.Update(ctx, w)).To(Succeed())
		}).Should(Succeed())
		// Asking more than the quota has room for is refused, once the webhook's informer has the new quota: 5 × 4
		// CPU is 14 more than the 6 it asks, past the 10.
		Eventually(func() error { return rewrite(w, 5, "4") }).Should(MatchError(ContainSubstring("cpu: requested 14, used 0, reserved 0, hard 10")))
		// Asking less, still over what was admitted, goes through.
		Expect(rewrite(w, 3, "1800m")).To(Succeed())
		// Deleting it goes through its finalizer's removal.
		Expect(k8s.Delete(ctx, w)).To(Succeed())
		Expect(k8s.Get(ctx, key, w)).To(Succeed())
		w.Finalizers = nil
		Expect(k8s.Update(ctx, w)).To(Succeed())
	})

	It("refuses, at the template, a change of requests its placed replicas cannot get", func() {
		template := func(cpu string) error {
			GinkgoHelper()
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
			d.Spec.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse(cpu)
			return k8s.Update(ctx, d)
		}
		// 4 × 3 CPU > 10: refused at the write, saying why.
		status := expectQuotaExceeded(template("3"))
		Expect(status.ErrStatus.Message).To(And(
			ContainSubstring("Deployment %s/web", ns),
			ContainSubstring("ResourceBinding %s", rb.Name),
			ContainSubstring("exceeded quota: team, cpu: requested 4, used 0, reserved 8, hard 10"),
		))
		// 4 × 2.5 CPU = 10: fits.
		Expect(template("2500m")).To(Succeed())
		// More replicas are the scheduler's to place or refuse: the template write goes through.
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
		d.Spec.Replicas = ptr.To[int32](40)
		Expect(k8s.Update(ctx, d)).To(Succeed())

		// A template no propagation policy claimed is not a gate's business.
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
		d.Labels = nil
		Expect(k8s.Update(ctx, d)).To(Succeed())
		Expect(template("5")).To(Succeed())
	})
})
