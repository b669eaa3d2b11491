package webhook

import (
	"encoding/json"

	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"github.com/karmada-io/karmada/pkg/util/names"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/internal/testenv"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
	"github.com/karmada-quota/karmada-quota/test/integration/framework"
)

// What a binding's object holds on members (claims and their storage, load balancers), and replicas kept through
// a failover, against a real kube-apiserver with two webhook replicas: the templates are read from it, the binding
// writes are the ones Karmada's detector and scheduler send.
var _ = Describe("What members hold, and failover", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	// bindingFor starts the binding Karmada's detector makes for a template: named as Karmada names it, naming the
	// template's version.
	bindingFor := func(obj client.Object, apiVersion, kind string) *utiltesting.BindingWrapper {
		b := utiltesting.MakeBinding(ns, names.GenerateBindingName(kind, obj.GetName())).Resource(apiVersion, kind)
		b.Spec.Resource.Name = obj.GetName()
		b.Spec.Resource.UID = obj.GetUID()
		b.Spec.Resource.ResourceVersion = obj.GetResourceVersion()
		return b
	}
	claim := func(name, size string) *corev1.PersistentVolumeClaim {
		GinkgoHelper()
		pvc := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
			},
		}
		Expect(k8s.Create(ctx, pvc)).To(Succeed())
		return pvc
	}

	It("charges a claim on every member it is sent to, and refuses claims past storage", func() {
		createQuota(testenv.Quota(ns, "team", list("requests.storage", "3Gi", "persistentvolumeclaims", "4")))
		data := mustCreateBinding(bindingFor(claim("data", "1Gi"), "v1", "PersistentVolumeClaim"))
		Expect(place(data, cluster("member1", 0), cluster("member2", 0))).To(Succeed())
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(data), data)).To(Succeed())
		Expect(reservationsOf(getQuota(ns, "team"), data)).To(HaveKeyWithValue(data.Generation,
			equalQuantities(list("requests.storage", "2Gi", "persistentvolumeclaims", "2"))), "one claim of 1Gi on each member")

		// Another claim of 1Gi on both members: 4Gi of 3Gi.
		more := mustCreateBinding(bindingFor(claim("more", "1Gi"), "v1", "PersistentVolumeClaim"))
		status := expectQuotaExceeded(place(more, cluster("member1", 0), cluster("member2", 0)))
		Expect(status.ErrStatus.Message).To(ContainSubstring("exceeded quota: team, requests.storage: requested 2Gi, used 0, reserved 2Gi, hard 3Gi"))
		// On one member it fits.
		Expect(place(more, cluster("member1", 0))).To(Succeed())

		// A claim pulled in by its dependents (propagateDeps) is on their clusters: here, past the claims left.
		deps := mustCreateBinding(bindingFor(claim("deps", "1"), "v1", "PersistentVolumeClaim"))
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(deps), deps)).To(Succeed())
		deps.Spec.RequiredBy = []workv1alpha2.BindingSnapshot{{Namespace: ns, Name: "web", Clusters: []workv1alpha2.TargetCluster{{Name: "member1"}, {Name: "member2"}}}}
		status = expectQuotaExceeded(k8s.Update(ctx, deps))
		Expect(status.ErrStatus.Message).To(ContainSubstring("persistentvolumeclaims: requested 2, used 0, reserved 3, hard 4"))
	})

	It("holds a member to the claim its binding was admitted for: an OverridePolicy growing it there is charged, and refused past storage", func() {
		for _, member := range []string{"member1", "member2"} {
			execution := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: names.GenerateExecutionSpaceName(member)}}
			Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, execution))).To(Succeed())
		}
		createQuota(testenv.Quota(ns, "team", list("requests.storage", "4Gi")))
		pvc := claim("data", "1Gi")
		rb := mustCreateBinding(bindingFor(pvc, "v1", "PersistentVolumeClaim"))
		Expect(place(rb, cluster("member1", 0), cluster("member2", 0))).To(Succeed())

		// The Work Karmada renders for member1, its claim at size (an OverridePolicy may have changed it).
		work := func(size string) *workv1alpha1.Work {
			GinkgoHelper()
			manifest := pvc.DeepCopy()
			manifest.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"}
			manifest.ObjectMeta = metav1.ObjectMeta{Namespace: ns, Name: pvc.Name}
			manifest.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse(size)
			raw, err := json.Marshal(manifest)
			Expect(err).NotTo(HaveOccurred())
			return &workv1alpha1.Work{
				ObjectMeta: metav1.ObjectMeta{
					Namespace: names.GenerateExecutionSpaceName("member1"), Name: names.GenerateWorkName("PersistentVolumeClaim", pvc.Name, ns),
					Annotations: map[string]string{
						workv1alpha2.ResourceBindingNamespaceAnnotationKey: ns,
						workv1alpha2.ResourceBindingNameAnnotationKey:      rb.Name,
					},
				},
				Spec: workv1alpha1.WorkSpec{Workload: workv1alpha1.WorkloadTemplate{Manifests: []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: raw}}}}},
			}
		}
		w := work("1Gi")
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, w))).To(Succeed()) })
		Expect(k8s.Create(ctx, w)).To(Succeed(), "the claim its binding placed on member1")
		workReservations := func() int {
			n := 0
			for _, r := range getLedger(ns, "team").Reservations {
				if r.ReservedBy.Kind == "Work" {
					n++
				}
			}
			return n
		}
		Expect(workReservations()).To(BeZero(), "a Work holding what its binding places is charged nothing more")

		// Grown to 2Gi on member1: 1Gi more, within the 4Gi (2Gi reserved for the binding).
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(w), w)).To(Succeed())
		w.Spec = work("2Gi").Spec
		Expect(k8s.Update(ctx, w)).To(Succeed())
		Expect(workReservations()).To(Equal(1))
		// Grown to 4Gi: 2Gi more than the 2Gi it asked before, past the 4Gi (3Gi reserved: 2Gi for the binding, 1Gi for the Work).
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(w), w)).To(Succeed())
		w.Spec = work("4Gi").Spec
		status := expectQuotaExceeded(k8s.Update(ctx, w))
		Expect(status.ErrStatus.Message).To(ContainSubstring("exceeded quota: team, requests.storage: requested 2Gi, used 0, reserved 3Gi, hard 4Gi"))
	})

	It("refuses at the template a Service turned into a load balancer past quota, and charges the binding what the detector writes next", func() {
		createQuota(testenv.Quota(ns, "team", list("services.loadbalancers", "1", "services.nodeports", "4")))
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "front", Labels: map[string]string{policyv1alpha1.PropagationPolicyPermanentIDLabel: "policy-id"}},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}},
		}
		Expect(k8s.Create(ctx, svc)).To(Succeed())
		rb := mustCreateBinding(bindingFor(svc, "v1", "Service"))
		Expect(place(rb, cluster("member1", 0), cluster("member2", 0))).To(Succeed(), "a ClusterIP Service holds nothing")

		loadBalancer := func() error {
			GinkgoHelper()
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(svc), svc)).To(Succeed())
			svc.Spec.Type = corev1.ServiceTypeLoadBalancer
			return k8s.Update(ctx, svc)
		}
		status := expectQuotaExceeded(loadBalancer())
		Expect(status.ErrStatus.Message).To(And(
			ContainSubstring("Service %s/front", ns),
			ContainSubstring("exceeded quota: team, services.loadbalancers: requested 2, used 0, reserved 0, hard 1"),
		))

		q := getQuota(ns, "team")
		q.Spec.Hard = list("services.loadbalancers", "2", "services.nodeports", "4")
		Expect(k8s.Update(ctx, q)).To(Succeed())
		Eventually(loadBalancer).Should(Succeed(), "2 load balancers and 2 node ports fit")

		// Karmada's detector rewrites the binding for the new version: what the old version held is read as it
		// was, and the growth is reserved.
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(rb), rb)).To(Succeed())
		rb.Spec.Resource.ResourceVersion = svc.ResourceVersion
		Expect(k8s.Update(ctx, rb)).To(Succeed())
		Expect(reservationsOf(getQuota(ns, "team"), rb)).To(HaveKeyWithValue(rb.Generation,
			equalQuantities(list("services.loadbalancers", "2", "services.nodeports", "2"))))
	})

	It("admits the replacement of replicas a graceful eviction keeps running, at the limit, and nothing else", func() {
		createQuota(testenv.Quota(ns, "team", list("cpu", "2")))
		d, err := framework.CreateDeployment(ctx, k8s, ns, "web", "", "500m")
		Expect(err).NotTo(HaveOccurred())
		rb := mustCreateBinding(framework.BindingOf(d).Replicas(4))
		Expect(place(rb, cluster("member1", 2), cluster("member2", 2))).To(Succeed())

		// Karmada's taint manager evicts member1 gracefully: one update moves its replicas into a task.
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(rb), rb)).To(Succeed())
		evicted := utiltesting.MakeBinding(ns, rb.Name).Cluster("member1", 2).Cluster("member2", 2).Evict("member1", nil, false).Obj()
		rb.Spec.Clusters, rb.Spec.GracefulEvictionTasks = evicted.Spec.Clusters, evicted.Spec.GracefulEvictionTasks
		Expect(k8s.Update(ctx, rb)).To(Succeed(), "the eviction moves replicas, it adds none")

		// The scheduler places the two evicted replicas on member2: at the limit, admitted, and reserved.
		Expect(place(rb, cluster("member2", 4))).To(Succeed())
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(rb), rb)).To(Succeed())
		Expect(reservationsOf(getQuota(ns, "team"), rb)).To(HaveKeyWithValue(rb.Generation, equalQuantities(list("cpu", "1"))))

		// Meanwhile the namespace runs 3 CPU of 2: any other growth is refused, and so is the evicted binding's own.
		other, err := framework.CreateDeployment(ctx, k8s, ns, "api", "", "100m")
		Expect(err).NotTo(HaveOccurred())
		expectQuotaExceeded(place(mustCreateBinding(framework.BindingOf(other)), cluster("member2", 1)))
		// Asking for a fifth replica during the failover is growth: what the replacement may restore stays the four
		// the binding had, and the write asking for more is refused while the namespace is over hard.
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(rb), rb)).To(Succeed())
		rb.Spec.Replicas = 5
		status := expectQuotaExceeded(k8s.Update(ctx, rb))
		Expect(status.ErrStatus.Message).To(ContainSubstring("exceeded quota: team, cpu: requested 500m, used 0, reserved 3, hard 2"))
	})
})
