package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

// Waits are generous: Karmada's own loops (detector, scheduler back-off, garbage collection of a deleted
// Deployment's binding) take seconds, and CI machines are small.
const (
	timeout = 2 * time.Minute
	poll    = 250 * time.Millisecond
)

var list = utiltesting.List

// newNamespace creates a namespace on the karmada-apiserver (Karmada propagates it to every member) and deletes
// it after the spec.
func newNamespace(prefix string) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: prefix + "-" + rand.String(5)}}
	Expect(karmada.Create(ctx, ns)).To(Succeed())
	DeferCleanup(func() {
		Expect(client.IgnoreNotFound(karmada.Delete(ctx, ns))).To(Succeed())
	})
	return ns.Name
}

func createQuota(ns, name string, hard corev1.ResourceList) *quotav1alpha1.KarmadaQuota {
	q := &quotav1alpha1.KarmadaQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       quotav1alpha1.KarmadaQuotaSpec{Hard: hard},
	}
	Expect(karmada.Create(ctx, q)).To(Succeed())
	return q
}

// deploy creates a Deployment whose pods request cpu and memory each, and propagates it with its own policy.
func deploy(ns, name string, replicas int32, cpu, memory string, placement policyv1alpha1.Placement) *appsv1.Deployment {
	d := deployment(ns, name, replicas, cpu, memory)
	Expect(karmada.Create(ctx, d)).To(Succeed())
	Expect(karmada.Create(ctx, propagation(ns, name, "apps/v1", "Deployment", placement))).To(Succeed())
	return d
}

func deployment(ns, name string, replicas int32, cpu, memory string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "app", Image: "registry.k8s.io/pause:3.10",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory),
					}},
				}}},
			},
		},
	}
}

func propagation(ns, name, apiVersion, kind string, placement policyv1alpha1.Placement) *policyv1alpha1.PropagationPolicy {
	return &policyv1alpha1.PropagationPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: policyv1alpha1.PropagationSpec{
			ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: apiVersion, Kind: kind, Name: name}},
			Placement:         placement,
		},
	}
}

// divided spreads replicas over every member by what each can still take, as most Karmada users configure it.
func divided() policyv1alpha1.Placement {
	return policyv1alpha1.Placement{
		ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: memberNames()},
		ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
			ReplicaSchedulingType:     policyv1alpha1.ReplicaSchedulingTypeDivided,
			ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted,
			WeightPreference:          &policyv1alpha1.ClusterPreferences{DynamicWeight: policyv1alpha1.DynamicWeightByAvailableReplicas},
		},
	}
}

// duplicated runs every replica on every member.
func duplicated() policyv1alpha1.Placement {
	return policyv1alpha1.Placement{
		ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: memberNames()},
		ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
			ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDuplicated,
		},
	}
}

// onlyOn runs every replica on member alone.
func onlyOn(member string) policyv1alpha1.Placement {
	p := duplicated()
	p.ClusterAffinity.ClusterNames = []string{member}
	return p
}

func memberNames() []string {
	var names []string
	for _, m := range env.Members {
		names = append(names, m.Name)
	}
	return names
}

// scale changes a Deployment's replicas on the karmada-apiserver, as `kubectl scale` does.
func scale(ns, name string, replicas int32) {
	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	Expect(karmada.Patch(ctx, d, client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
}

// bindingName is the name Karmada's detector gives the binding of an object.
func bindingName(name, kind string) string { return name + "-" + strings.ToLower(kind) }

func binding(ns, name, kind string) (*workv1alpha2.ResourceBinding, error) {
	rb := &workv1alpha2.ResourceBinding{}
	return rb, karmada.Get(ctx, client.ObjectKey{Namespace: ns, Name: bindingName(name, kind)}, rb)
}

// placedReplicas sums the replicas a binding places over its clusters.
func placedReplicas(rb *workv1alpha2.ResourceBinding) int32 {
	var n int32
	for _, tc := range rb.Spec.Clusters {
		n += tc.Replicas
	}
	return n
}

// expectScheduled waits until the Deployment's binding has the replicas placed (replicas on each member when
// Duplicated) and Karmada reports it scheduled.
func expectScheduled(ns, name string, replicas int32) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		rb, err := binding(ns, name, "Deployment")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(rb.Spec.Replicas).To(Equal(replicas), "the binding has not seen the new replica count")
		cond := meta.FindStatusCondition(rb.Status.Conditions, workv1alpha2.Scheduled)
		g.Expect(cond).NotTo(BeNil(), "not scheduled yet")
		g.Expect(cond.Status).To(Equal(metav1.ConditionTrue), "%s: %s", cond.Reason, cond.Message)
		g.Expect(rb.Status.SchedulerObservedGeneration).To(Equal(rb.Generation), "the scheduler has not seen the latest spec")
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "%s/%s scheduled with %d replicas", ns, name, replicas)
}

// expectRefused waits until Karmada reports the Deployment's binding as refused by the quota, and returns the
// condition's message.
func expectRefused(ns, name string) string {
	GinkgoHelper()
	var message string
	Eventually(func(g Gomega) {
		rb, err := binding(ns, name, "Deployment")
		g.Expect(err).NotTo(HaveOccurred())
		cond := meta.FindStatusCondition(rb.Status.Conditions, workv1alpha2.Scheduled)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(cond.Reason).To(Equal(workv1alpha2.BindingReasonQuotaExceeded), cond.Message)
		message = cond.Message
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "%s/%s refused with QuotaExceeded", ns, name)
	return message
}

// quotaStatus reads a quota's status.
func quotaStatus(ns, name string) quotav1alpha1.KarmadaQuotaStatus {
	GinkgoHelper()
	q := &quotav1alpha1.KarmadaQuota{}
	Expect(karmada.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, q)).To(Succeed())
	return q.Status
}

// canonical renders a resource list in accounting units under canonical names, so "cpu: 1" and
// "requests.cpu: 1000m" compare equal.
func canonical(l corev1.ResourceList) resources.List {
	GinkgoHelper()
	out, err := resources.Parse(l)
	Expect(err).NotTo(HaveOccurred())
	return out
}

// expectNothingReserved asserts that no admission of the quota waits to be observed: its ledger lists no
// reservation and folds none, and its status shows nothing reserved.
func expectNothingReserved(g Gomega, ns, name string) {
	stored := &quotav1alpha1.KarmadaQuotaLedger{}
	if err := karmada.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, stored); !apierrors.IsNotFound(err) {
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(stored.Reservations).To(BeEmpty(), "quota %s/%s: reservations outstanding", ns, name)
		g.Expect(stored.FoldedReservations).To(BeNil(), "quota %s/%s: reservations folded", ns, name)
	}
	q := &quotav1alpha1.KarmadaQuota{}
	g.Expect(karmada.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, q)).To(Succeed())
	for resource, reserved := range q.Status.Reserved {
		g.Expect(reserved.IsZero()).To(BeTrue(), "quota %s/%s: %s reserved in status", ns, name, resource)
	}
}

// settledUsage is a quota's status once the controller has caught up: no reservation outstanding, and used
// equal to the sum over the namespace's bindings computed from scratch. It returns the status.
func expectSettled(ns, name string) quotav1alpha1.KarmadaQuotaStatus {
	GinkgoHelper()
	var status quotav1alpha1.KarmadaQuotaStatus
	Eventually(func(g Gomega) {
		q := &quotav1alpha1.KarmadaQuota{}
		g.Expect(karmada.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, q)).To(Succeed())
		expectNothingReserved(g, ns, name)
		truth := trueUsage(g, q)
		got := canonical(q.Status.Used)
		g.Expect(got).To(Equal(truth), "status.used %v, the bindings use %v", got, truth)
		status = q.Status
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "quota %s/%s settled", ns, name)
	return status
}

// trueUsage sums, over the namespace's bindings, what the quota counts, with every resource it limits present
// (zero when unused), as status.used lists them.
func trueUsage(g Gomega, q *quotav1alpha1.KarmadaQuota) resources.List {
	var bindings workv1alpha2.ResourceBindingList
	g.Expect(karmada.List(ctx, &bindings, client.InNamespace(q.Namespace))).To(Succeed())
	sel, err := usage.NewSelector(q.Spec.ScopeSelector)
	g.Expect(err).NotTo(HaveOccurred())
	total := resources.List{}
	for i := range bindings.Items {
		u, err := usage.Of(&bindings.Items[i])
		g.Expect(err).NotTo(HaveOccurred())
		total.Add(u.Charge(sel).Total)
	}
	out := resources.List{}
	for name := range canonical(q.Spec.Hard) {
		out[name] = total[name]
	}
	return out
}

// runningRequests sums the requests of the pods running in the namespace in each member cluster, read from the
// members' own apiservers.
func runningRequests(g Gomega, ns string) map[string]resources.List {
	out := map[string]resources.List{}
	for name := range members {
		out[name] = memberRunningRequests(g, ns, name)
	}
	return out
}

// memberRunningRequests sums the requests of the pods running in the namespace in one member, leaving out the pods
// of the workloads named in except (their app label).
func memberRunningRequests(g Gomega, ns, member string, except ...string) resources.List {
	var pods corev1.PodList
	g.Expect(members[member].List(ctx, &pods, client.InNamespace(ns))).To(Succeed())
	sum := resources.List{resources.RequestName(corev1.ResourceCPU): 0, resources.RequestName(corev1.ResourceMemory): 0}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil || slices.Contains(except, p.Labels["app"]) {
			continue
		}
		for _, c := range p.Spec.Containers {
			sum.Add(canonical(c.Resources.Requests))
		}
		sum.Add(resources.List{"pods": 1})
	}
	return sum
}

// expectInEveryMember waits until every member cluster holds exactly the named objects of a kind in the
// namespace: what Karmada propagated there, read from the members' own apiservers.
func expectInEveryMember(ns string, list client.ObjectList, names ...string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		for member, c := range members {
			g.Expect(c.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			var got []string
			g.Expect(meta.EachListItem(list, func(obj runtime.Object) error {
				got = append(got, obj.(client.Object).GetName())
				return nil
			})).To(Succeed())
			g.Expect(got).To(ConsistOf(names), "%T in %s", list, member)
		}
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
}

// clusterUsage is status.clusters in accounting units, every member present.
func clusterUsage(status quotav1alpha1.KarmadaQuotaStatus) map[string]resources.List {
	out := map[string]resources.List{}
	for _, name := range memberNames() {
		out[name] = resources.List{}
	}
	for _, c := range status.Clusters {
		out[c.Name] = canonical(c.Used)
	}
	return out
}

// eventsOf lists the events recorded on an object in the karmada-apiserver, as `kubectl describe` shows them.
func eventsOf(ns, kind, name string) []corev1.Event {
	var events corev1.EventList
	Expect(karmada.List(ctx, &events, client.InNamespace(ns))).To(Succeed())
	return slices.DeleteFunc(events.Items, func(e corev1.Event) bool {
		return e.InvolvedObject.Kind != kind || e.InvolvedObject.Name != name
	})
}

// dump renders an object for a failure message.
func dump(obj any) string {
	b, _ := json.MarshalIndent(obj, "", "  ")
	return string(b)
}
