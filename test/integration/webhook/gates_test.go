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

	It("sends a member what its binding was admitted for there, and refuses a Work asking more", func() {
		w1 := work("member1", 2, "2", true)
		Expect(k8s.Create(ctx, w1)).To(Succeed(), "2 × 2 CPU is what member1 was admitted")

		// The template changed to 3 CPU and the binding's update was refused; the binding controller, restarted,
		// renders the Work from the template again.
		err := rewrite(w1, 2, "3")
		status := expectQuotaExceeded(err)
		Expect(status.ErrStatus.Message).To(And(
			ContainSubstring("member cluster member1"),
			ContainSubstring("ResourceBinding %s/%s", ns, rb.Name),
			ContainSubstring("quota team, cpu: asked 6, admitted 4"),
		))
		// Three replicas where two were placed: the same.
		expectQuotaExceeded(rewrite(w1, 3, "2"))
		// A new Work on member2 asking past its placement is refused as well.
		expectQuotaExceeded(k8s.Create(ctx, work("member2", 2, "2500m", true)))

		// Less than admitted always goes through, and so does what was admitted.
		Expect(rewrite(w1, 1, "2")).To(Succeed())
		Expect(rewrite(w1, 2, "2")).To(Succeed())
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
		// Asking more than it does is refused, once the webhook's informer has the new quota.
		Eventually(func() error { return rewrite(w, 4, "2") }).Should(MatchError(ContainSubstring("asked 8, admitted 4")))
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
