package e2e

import (
	"fmt"
	"strings"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	configv1alpha1 "github.com/karmada-io/karmada/pkg/apis/config/v1alpha1"
	workv1alpha1 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	karmadanames "github.com/karmada-io/karmada/pkg/util/names"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
)

// Karmada's open bug #6937, reproduced as a user would meet it: a template changed past quota, its binding's
// update refused, and karmada-controller-manager restarted (an upgrade, a failover) renders the Works again from
// the current template. The members must keep running what the quota admitted.
var _ = Describe("No bypass of the quota on the way to the members", func() {
	It("keeps members at what was admitted when a template changed past quota is rendered again after a restart", func() {
		ns := newNamespace("bypass")
		createQuota(ns, "team", list("cpu", "12"))
		deploy(ns, "web", 4, "2", "64Mi", divided())
		expectScheduled(ns, "web", 4)
		expectMembersRunCharged(ns, "team", "2")

		By("changing the template to 3 CPU per pod while karmada-controller-manager is down (an upgrade)")
		Expect(env.Stop("karmada-controller-manager", 10*time.Second)).To(Succeed())
		restarted := false
		DeferCleanup(func() {
			if !restarted {
				Expect(env.Start(ctx, "karmada-controller-manager")).To(Succeed())
			}
		})
		// 4 × 3 = 12 fits hard 12: the template gate lets it through.
		Expect(setCPU(ns, "web", "3")).To(Succeed())
		By("lowering the quota to 10 CPU before Karmada sees the change")
		setQuotaCPU(ns, "team", "10")

		By("starting karmada-controller-manager: its detector's binding update is refused, its binding controller renders the Works again")
		Expect(env.Start(ctx, "karmada-controller-manager")).To(Succeed())
		restarted = true
		Eventually(func(g Gomega) {
			var messages []string
			for _, e := range eventsOf(ns, "Deployment", "web") {
				messages = append(messages, e.Message)
			}
			g.Expect(messages).To(ContainElement(ContainSubstring("would have member cluster")),
				"the user is told on the template why the members keep the old version")
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
		rb, err := binding(ns, "web", "Deployment")
		Expect(err).NotTo(HaveOccurred())
		Expect(rb.Spec.ReplicaRequirements.ResourceRequest.Cpu().String()).To(Equal("2"), "the binding keeps what was admitted")
		// The refused Works are retried; the members must keep 2 CPU per pod all along.
		Consistently(func(g Gomega) {
			expectRunning(g, ns, "web", "2")
		}).WithTimeout(15 * time.Second).WithPolling(time.Second).Should(Succeed())
		expectMembersRunCharged(ns, "team", "2")

		By("raising the quota back: the change goes through to the members")
		setQuotaCPU(ns, "team", "12")
		// A touch of the template makes Karmada's detector retry now rather than after its back-off.
		Expect(annotate(ns, "web", "retry", "1")).To(Succeed())
		expectMembersRunCharged(ns, "team", "3")

		By("editing a Work by hand to ask for more")
		work := workOf(ns, "web", "Deployment", memberNames()[0])
		err = editWork(work, withCPU("4"))
		Expect(apierrors.ReasonForError(err)).To(Equal(metav1.StatusReason("QuotaExceeded")), "%v", err)
		Expect(err).To(MatchError(ContainSubstring("would have member cluster " + memberNames()[0])))
		expectMembersRunCharged(ns, "team", "3")
	})

	It("shows what the members run next to what is charged, and a pod started in a member outside Karmada", func() {
		ns := newNamespace("bypass")
		createQuota(ns, "team", list("cpu", "10"))
		deploy(ns, "web", 4, "1", "64Mi", divided())
		expectScheduled(ns, "web", 4)
		By("every member read: what it runs equals what is charged there")
		Eventually(func(g Gomega) {
			status := quotaStatus(ns, "team")
			cond := meta.FindStatusCondition(status.Conditions, quotav1alpha1.ConditionMembersWithinQuota)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionTrue), cond.Message)
			g.Expect(status.Clusters).To(HaveLen(len(members)))
			for _, c := range status.Clusters {
				g.Expect(c.Running).NotTo(BeNil(), "%s read", c.Name)
				g.Expect(canonical(c.Running)).To(Equal(canonical(c.Used)), "%s runs what is charged there", c.Name)
				g.Expect(canonical(c.Running)).To(Equal(resources.List{resources.RequestName(corev1.ResourceCPU): memberRunningRequests(g, ns, c.Name)[resources.RequestName(corev1.ResourceCPU)]}),
					"%s: status.clusters[].running is what the member's pods request", c.Name)
			}
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())

		By("a pod started in " + memberNames()[0] + " by hand: the quota says so once it outlives the grace")
		member := memberNames()[0]
		stray := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stray"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}}}}},
		}
		Expect(members[member].Create(ctx, stray)).To(Succeed())
		Eventually(func(g Gomega) {
			status := quotaStatus(ns, "team")
			cond := meta.FindStatusCondition(status.Conditions, quotav1alpha1.ConditionMembersWithinQuota)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(cond.Reason).To(Equal("MembersRunMore"))
			g.Expect(cond.Message).To(ContainSubstring(member + " runs cpu"))
			var messages []string
			for _, e := range eventsOf(ns, "KarmadaQuota", "team") {
				messages = append(messages, e.Reason+": "+e.Message)
			}
			g.Expect(messages).To(ContainElement(ContainSubstring("MembersRunMore: Member clusters run more than the quota charges there: " + member)))
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
		// What the quota charges does not move: the stray pod is the member's, not Karmada's.
		Expect(canonical(expectSettled(ns, "team").Used)).To(Equal(resources.List{resources.RequestName(corev1.ResourceCPU): 4000}))

		By("the stray pod deleted: the members are within what is charged again")
		Expect(members[member].Delete(ctx, stray, client.GracePeriodSeconds(0))).To(Succeed())
		Eventually(func(g Gomega) {
			cond := meta.FindStatusCondition(quotaStatus(ns, "team").Conditions, quotav1alpha1.ConditionMembersWithinQuota)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionTrue), cond.Message)
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	})

	It("refuses at kubectl apply a template change its placed replicas cannot get", func() {
		ns := newNamespace("bypass")
		createQuota(ns, "team", list("cpu", "10"))
		deploy(ns, "web", 4, "2", "64Mi", divided())
		expectScheduled(ns, "web", 4)
		expectSettled(ns, "team")

		err := setCPU(ns, "web", "3")
		Expect(apierrors.ReasonForError(err)).To(Equal(metav1.StatusReason("QuotaExceeded")), "%v", err)
		Expect(err.Error()).To(And(ContainSubstring("Deployment %s/web", ns), ContainSubstring("cpu: requested 4, used 8, reserved 0, hard 10")))
		expectMembersRunCharged(ns, "team", "2")
	})

	It("holds a CRD workload described by a ResourceInterpreterCustomization to quota like a Deployment", func() {
		installSleeperKind()
		ns := newNamespace("bypass")
		createQuota(ns, "team", list("cpu", "10"))
		sleeper := sleeperObject(ns, "batch", 4, "2")
		Expect(karmada.Create(ctx, sleeper)).To(Succeed())
		Expect(karmada.Create(ctx, propagation(ns, "batch", sleeperGVK.GroupVersion().String(), sleeperGVK.Kind, divided()))).To(Succeed())

		Eventually(func(g Gomega) {
			rb := &workv1alpha2.ResourceBinding{}
			g.Expect(karmada.Get(ctx, client.ObjectKey{Namespace: ns, Name: bindingName("batch", sleeperGVK.Kind)}, rb)).To(Succeed())
			g.Expect(rb.Spec.ReplicaRequirements).NotTo(BeNil(), "Karmada read no requirements: the customization is not loaded")
			g.Expect(rb.Spec.ReplicaRequirements.ResourceRequest.Cpu().String()).To(Equal("2"))
			// A run saw this binding never placed (once in four); its Scheduled condition says whose doing that is.
			g.Expect(placedReplicas(rb)).To(Equal(int32(4)), "Scheduled condition: %+v",
				meta.FindStatusCondition(rb.Status.Conditions, workv1alpha2.Scheduled))
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
		status := expectSettled(ns, "team")
		expectSleepersCharged(ns, status, "2")

		By("changing the template past quota")
		Eventually(func(g Gomega) {
			g.Expect(karmada.Get(ctx, client.ObjectKeyFromObject(sleeper), sleeper)).To(Succeed())
			withCPU("3")(sleeper)
			err := karmada.Update(ctx, sleeper)
			g.Expect(apierrors.ReasonForError(err)).To(Equal(metav1.StatusReason("QuotaExceeded")), "%v", err)
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())

		By("editing its Work by hand past the quota")
		// 2 × 6 = 12 CPU where its binding places 4: 8 more, past the 10. (What fits is charged as the Work's own
		// admission: a member runs what its Work says, whoever wrote it.)
		err := editWork(workOf(ns, "batch", sleeperGVK.Kind, memberNames()[0]), withCPU("6"))
		Expect(apierrors.ReasonForError(err)).To(Equal(metav1.StatusReason("QuotaExceeded")), "%v", err)
		expectSleepersCharged(ns, expectSettled(ns, "team"), "2")
	})
})

// setCPU changes the CPU request of a Deployment's pods on the karmada-apiserver, as `kubectl apply` does.
func setCPU(ns, name, cpu string) error {
	patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":%q}}}]}}}}`, cpu)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	return karmada.Patch(ctx, d, client.RawPatch(types.StrategicMergePatchType, []byte(patch)))
}

func annotate(ns, name, key, value string) error {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, key, value)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	return karmada.Patch(ctx, d, client.RawPatch(types.MergePatchType, []byte(patch)))
}

// setQuotaCPU changes a quota's CPU limit, as an admin does.
func setQuotaCPU(ns, name, cpu string) {
	GinkgoHelper()
	patch := fmt.Sprintf(`{"spec":{"hard":{"cpu":%q}}}`, cpu)
	q := &quotav1alpha1.KarmadaQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	Expect(karmada.Patch(ctx, q, client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
}

// expectRunning checks that the members run the Deployment's pods at cpu each, and no other version of them.
func expectRunning(g Gomega, ns, name, cpu string) {
	want := resource.MustParse(cpu)
	for member, c := range members {
		var pods corev1.PodList
		g.Expect(c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"app": name})).To(Succeed())
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil {
				continue
			}
			got := p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]
			g.Expect(got.Cmp(want)).To(BeZero(), "pod %s in %s requests %s CPU", p.Name, member, got.String())
		}
	}
}

// expectMembersRunCharged waits until every member runs exactly what the quota charges there, at cpu per pod.
func expectMembersRunCharged(ns, quotaName, cpu string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		expectRunning(g, ns, "web", cpu)
		status := quotaStatus(ns, quotaName)
		expectNothingReserved(g, ns, quotaName)
		charged := clusterUsage(status)
		for member := range members {
			running := memberRunningRequests(g, ns, member)
			g.Expect(running[resources.RequestName(corev1.ResourceCPU)]).To(Equal(charged[member][resources.RequestName(corev1.ResourceCPU)]),
				"%s runs %v, the quota charges %v there", member, running, charged[member])
		}
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
}

// workOf is the Work Karmada renders for a template on a member.
func workOf(ns, name, kind, member string) *workv1alpha1.Work {
	GinkgoHelper()
	w := &workv1alpha1.Work{}
	Expect(karmada.Get(ctx, client.ObjectKey{Namespace: karmadanames.GenerateExecutionSpaceName(member), Name: karmadanames.GenerateWorkName(kind, name, ns)}, w)).To(Succeed())
	return w
}

// editWork changes a Work's manifest as `kubectl edit work` does.
func editWork(w *workv1alpha1.Work, edit func(*unstructured.Unstructured)) error {
	m := &unstructured.Unstructured{}
	Expect(m.UnmarshalJSON(w.Spec.Workload.Manifests[0].Raw)).To(Succeed())
	edit(m)
	raw, err := m.MarshalJSON()
	Expect(err).NotTo(HaveOccurred())
	w.Spec.Workload.Manifests[0].Raw = raw
	return karmada.Update(ctx, w)
}

// withCPU sets the CPU request of the first container of a workload's pod template.
func withCPU(cpu string) func(*unstructured.Unstructured) {
	return func(m *unstructured.Unstructured) {
		GinkgoHelper()
		containers, _, _ := unstructured.NestedSlice(m.Object, "spec", "template", "spec", "containers")
		Expect(containers).NotTo(BeEmpty())
		Expect(unstructured.SetNestedField(containers[0].(map[string]any), cpu, "resources", "requests", "cpu")).To(Succeed())
		Expect(unstructured.SetNestedSlice(m.Object, containers, "spec", "template", "spec", "containers")).To(Succeed())
	}
}

// sleeperGVK is a small custom workload: replicas of a pod template, which no controller runs. Karmada learns to
// read it from a ResourceInterpreterCustomization, as it does any CRD its users propagate.
var sleeperGVK = schema.GroupVersionKind{Group: "e2e.karmada-quota.io", Version: "v1", Kind: "Sleeper"}

// installSleeperKind installs the Sleeper CRD on Karmada and every member, and its interpreter customization.
func installSleeperKind() {
	GinkgoHelper()
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "sleepers." + sleeperGVK.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: sleeperGVK.Group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "sleepers", Singular: "sleeper", Kind: sleeperGVK.Kind, ListKind: sleeperGVK.Kind + "List"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: sleeperGVK.Version, Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true),
				}},
			}},
		},
	}
	for _, c := range append([]client.Client{karmada}, memberClients()...) {
		Expect(client.IgnoreAlreadyExists(c.Create(ctx, crd.DeepCopy()))).To(Succeed())
		Eventually(func(g Gomega) {
			var list unstructured.UnstructuredList
			list.SetGroupVersionKind(sleeperGVK.GroupVersion().WithKind(sleeperGVK.Kind + "List"))
			g.Expect(c.List(ctx, &list)).To(Succeed())
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "the Sleeper CRD is served")
	}
	ric := &configv1alpha1.ResourceInterpreterCustomization{
		ObjectMeta: metav1.ObjectMeta{Name: "sleepers"},
		Spec: configv1alpha1.ResourceInterpreterCustomizationSpec{
			Target: configv1alpha1.CustomizationTarget{APIVersion: sleeperGVK.GroupVersion().String(), Kind: sleeperGVK.Kind},
			Customizations: configv1alpha1.CustomizationRules{
				ReplicaResource: &configv1alpha1.ReplicaResourceRequirement{LuaScript: strings.TrimSpace(`
local kube = require("kube")
function GetReplicas(obj)
  local requirement = kube.accuratePodRequirements(obj.spec.template)
  return obj.spec.replicas, requirement
end`)},
				ReplicaRevision: &configv1alpha1.ReplicaRevision{LuaScript: strings.TrimSpace(`
function ReviseReplica(obj, desiredReplica)
  obj.spec.replicas = desiredReplica
  return obj
end`)},
			},
		},
	}
	Expect(client.IgnoreAlreadyExists(karmada.Create(ctx, ric))).To(Succeed())

	// Karmada's scheduler places a kind only on the members whose Cluster reports it among its API enablements,
	// which Karmada's cluster status controller refreshes on its own period; a Sleeper placed before then is refused
	// with NoClusterFit ("did not have the API resource") and waits out the scheduler's back-off, which a CI run saw
	// last past the spec's wait.
	Eventually(func(g Gomega) {
		for _, name := range memberNames() {
			var cluster clusterv1alpha1.Cluster
			g.Expect(karmada.Get(ctx, client.ObjectKey{Name: name}, &cluster)).To(Succeed())
			found := false
			for _, enablement := range cluster.Status.APIEnablements {
				if enablement.GroupVersion != sleeperGVK.GroupVersion().String() {
					continue
				}
				for _, r := range enablement.Resources {
					found = found || r.Kind == sleeperGVK.Kind
				}
			}
			g.Expect(found).To(BeTrue(), "cluster %s does not report %s yet", name, sleeperGVK)
		}
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "every member reports the Sleeper API to Karmada")

	// Karmada's detector reads a template with the customizations it has loaded when the template comes: a
	// Sleeper created before karmada-controller-manager has this one is bound as running no replicas, and a CI
	// run saw such a binding never placed once it learnt its replicas. A probe in a namespace of its own, touched
	// until its binding carries requirements, says the customization is loaded.
	probeNS := newNamespace("sleeper-probe")
	probe := sleeperObject(probeNS, "probe", 1, "100m")
	Expect(karmada.Create(ctx, probe)).To(Succeed())
	Expect(karmada.Create(ctx, propagation(probeNS, "probe", sleeperGVK.GroupVersion().String(), sleeperGVK.Kind, duplicated()))).To(Succeed())
	touches := 0
	Eventually(func(g Gomega) {
		rb := &workv1alpha2.ResourceBinding{}
		g.Expect(karmada.Get(ctx, client.ObjectKey{Namespace: probeNS, Name: bindingName("probe", sleeperGVK.Kind)}, rb)).To(Succeed())
		if rb.Spec.ReplicaRequirements == nil {
			touches++
			patch := fmt.Sprintf(`{"metadata":{"annotations":{"touch":"%d"}}}`, touches)
			g.Expect(karmada.Patch(ctx, probe.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
		}
		g.Expect(rb.Spec.ReplicaRequirements).NotTo(BeNil(), "karmada-controller-manager has not loaded the customization yet")
	}).WithTimeout(timeout).WithPolling(2 * time.Second).Should(Succeed())
}

// sleeperObject is a Sleeper of replicas, each requesting cpu.
func sleeperObject(ns, name string, replicas int64, cpu string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": sleeperGVK.GroupVersion().String(), "kind": sleeperGVK.Kind,
		"metadata": map[string]any{"namespace": ns, "name": name},
		"spec": map[string]any{"replicas": replicas, "template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "app", "image": "app", "resources": map[string]any{"requests": map[string]any{"cpu": cpu}}}},
		}}},
	}}
}

// expectSleepersCharged waits until the members hold the Sleepers at cpu per replica, and what they ask of each
// member equals what the quota charges there.
func expectSleepersCharged(ns string, status quotav1alpha1.KarmadaQuotaStatus, cpu string) {
	GinkgoHelper()
	charged := clusterUsage(status)
	want := resource.MustParse(cpu)
	Eventually(func(g Gomega) {
		for member, c := range members {
			var list unstructured.UnstructuredList
			list.SetGroupVersionKind(sleeperGVK.GroupVersion().WithKind(sleeperGVK.Kind + "List"))
			g.Expect(c.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
			asked := resources.List{}
			for _, s := range list.Items {
				replicas, _, _ := unstructured.NestedInt64(s.Object, "spec", "replicas")
				containers, _, _ := unstructured.NestedSlice(s.Object, "spec", "template", "spec", "containers")
				g.Expect(containers).NotTo(BeEmpty())
				request, _, _ := unstructured.NestedString(containers[0].(map[string]any), "resources", "requests", "cpu")
				got := resource.MustParse(request)
				g.Expect(got.Cmp(want)).To(BeZero(), "%s runs Sleeper %s at %s CPU", member, s.GetName(), request)
				asked.Add(resources.List{resources.RequestName(corev1.ResourceCPU): got.MilliValue() * replicas})
			}
			cpuName := resources.RequestName(corev1.ResourceCPU)
			g.Expect(asked[cpuName]).To(Equal(charged[member][cpuName]), "%s asked %v, charged %v", member, asked, charged[member])
		}
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
}

func memberClients() []client.Client {
	var out []client.Client
	for _, c := range members {
		out = append(out, c)
	}
	return out
}
