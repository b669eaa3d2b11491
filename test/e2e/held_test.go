package e2e

import (
	"fmt"
	"slices"
	"strings"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
)

// What the members hold besides running pods: claims and their storage, load balancers and node ports, counted on
// each member cluster a binding sends the object to, as each member's own ResourceQuota would count them there.
// And what they keep running through Karmada's graceful eviction: charged where it runs until the eviction ends,
// shown as such, its replacement admitted as a move.
var _ = Describe("What the members hold", func() {
	onEveryMember := func() policyv1alpha1.Placement {
		return policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: memberNames()}}
	}

	It("charges a PersistentVolumeClaim a claim and its storage on each member it is sent to, and refuses one past the quota", func() {
		ns := newNamespace("held-pvc")
		createQuota(ns, "team", list("requests.storage", "3Gi", "persistentvolumeclaims", "4"))
		Expect(karmada.Create(ctx, claim(ns, "data", "1Gi"))).To(Succeed())
		Expect(karmada.Create(ctx, propagation(ns, "data", "v1", "PersistentVolumeClaim", onEveryMember()))).To(Succeed())
		expectPlaced(ns, "data", "PersistentVolumeClaim", placedOn(memberNames(), 0))
		expectInEveryMember(ns, &corev1.PersistentVolumeClaimList{}, "data")

		// One claim of 1Gi on each of the two members.
		each := canonical(list("requests.storage", "1Gi", "persistentvolumeclaims", "1"))
		expectHeld(ns, "team", canonical(list("requests.storage", "2Gi", "persistentvolumeclaims", "2")), everyMember(each))

		By("a second claim of 1Gi sent to both members: 2Gi more, past the 3Gi")
		Expect(karmada.Create(ctx, claim(ns, "more", "1Gi"))).To(Succeed())
		Expect(karmada.Create(ctx, propagation(ns, "more", "v1", "PersistentVolumeClaim", onEveryMember()))).To(Succeed())
		message := expectBindingRefused(ns, "more", "PersistentVolumeClaim")
		AddReportEntry("second PersistentVolumeClaim past requests.storage", message)
		Expect(message).To(ContainSubstring("requests.storage"))
		Expect(message).NotTo(ContainSubstring("persistentvolumeclaims:"), "4 claims fit the 4 allowed")
		Consistently(func(g Gomega) {
			checkHeld(g, ns, "team", canonical(list("requests.storage", "2Gi", "persistentvolumeclaims", "2")), everyMember(each))
			for member, c := range members {
				var claims corev1.PersistentVolumeClaimList
				g.Expect(c.List(ctx, &claims, client.InNamespace(ns))).To(Succeed())
				g.Expect(objectNames(claims.Items)).To(ConsistOf("data"), "claims in %s", member)
			}
		}).WithTimeout(5 * time.Second).WithPolling(poll).Should(Succeed())
	})

	It("charges a StatefulSet a claim per replica, and refuses the placement of claims past the storage quota", func() {
		ns := newNamespace("held-sts")
		member := memberNames()[0]
		createQuota(ns, "team", list("requests.storage", "3Gi", "cpu", "10"))
		set := statefulSet(ns, "db", 1, "100m", "1Gi")
		Expect(karmada.Create(ctx, set)).To(Succeed())
		Expect(karmada.Create(ctx, propagation(ns, "db", "apps/v1", "StatefulSet", policyv1alpha1.Placement{
			ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{member}},
		}))).To(Succeed())
		expectPlaced(ns, "db", "StatefulSet", map[string]int32{member: 1})
		one := canonical(list("requests.storage", "1Gi", "cpu", "100m"))
		expectHeld(ns, "team", one, map[string]resources.List{member: one})

		By("scaling the template to 3 replicas: 3 claims of 1Gi, the 3Gi allowed")
		Expect(setStatefulSetReplicas(ns, "db", 3)).To(Succeed())
		expectPlaced(ns, "db", "StatefulSet", map[string]int32{member: 3})
		three := canonical(list("requests.storage", "3Gi", "cpu", "300m"))
		expectHeld(ns, "team", three, map[string]resources.List{member: three})

		By("scaling it to 4: the scheduler's placement of a 4th claim of 1Gi is refused, and the binding waits")
		// Replicas are the scheduler's to place, for claims as for compute: the template write goes through, and the
		// placement past requests.storage is refused, as the binding's Scheduled=False, QuotaExceeded says.
		Expect(setStatefulSetReplicas(ns, "db", 4)).To(Succeed())
		Eventually(func(g Gomega) {
			rb, err := binding(ns, "db", "StatefulSet")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(rb.Spec.Replicas).To(Equal(int32(4)))
			cond := meta.FindStatusCondition(rb.Status.Conditions, workv1alpha2.Scheduled)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(cond.Reason).To(Equal(workv1alpha2.BindingReasonQuotaExceeded), cond.Message)
			g.Expect(cond.Message).To(ContainSubstring("requests.storage: requested 1Gi, used 3Gi"))
			AddReportEntry("StatefulSet scaled past requests.storage", cond.Message)
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
		Consistently(func(g Gomega) {
			rb, err := binding(ns, "db", "StatefulSet")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(rb.Spec.Clusters).To(Equal([]workv1alpha2.TargetCluster{{Name: member, Replicas: 3}}))
			checkHeld(g, ns, "team", three, map[string]resources.List{member: three})
		}).WithTimeout(5 * time.Second).WithPolling(poll).Should(Succeed())
	})

	It("charges a LoadBalancer Service a load balancer and its node ports on each member it is sent to", func() {
		ns := newNamespace("held-lb")
		createQuota(ns, "team", list("services.loadbalancers", "1"))
		Expect(karmada.Create(ctx, service(ns, "web", corev1.ServiceTypeLoadBalancer))).To(Succeed())
		Expect(karmada.Create(ctx, propagation(ns, "web", "v1", "Service", onEveryMember()))).To(Succeed())

		By("two members, two load balancers, past the one allowed")
		message := expectBindingRefused(ns, "web", "Service")
		AddReportEntry("LoadBalancer Service on two members under services.loadbalancers: 1", message)
		Expect(message).To(ContainSubstring("services.loadbalancers"))
		Consistently(func(g Gomega) {
			checkHeld(g, ns, "team", canonical(list("services.loadbalancers", "0")), nil)
			for member, c := range members {
				var services corev1.ServiceList
				g.Expect(c.List(ctx, &services, client.InNamespace(ns))).To(Succeed())
				g.Expect(objectNames(services.Items)).NotTo(ContainElement("web"), "the refused Service reached %s", member)
			}
		}).WithTimeout(5 * time.Second).WithPolling(poll).Should(Succeed())

		By("raising the quota to 2 load balancers and 2 node ports")
		q := &quotav1alpha1.KarmadaQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "team"}}
		Expect(karmada.Patch(ctx, q, client.RawPatch(types.MergePatchType,
			[]byte(`{"spec":{"hard":{"services.loadbalancers":"2","services.nodeports":"2"}}}`)))).To(Succeed())
		expectPlaced(ns, "web", "Service", placedOn(memberNames(), 0))
		expectInEveryMember(ns, &corev1.ServiceList{}, "web")
		each := canonical(list("services.loadbalancers", "1", "services.nodeports", "1"))
		expectHeld(ns, "team", canonical(list("services.loadbalancers", "2", "services.nodeports", "2")), everyMember(each))
	})

	It("refuses at the template write a Service turned into a LoadBalancer past the quota", func() {
		ns := newNamespace("held-lb")
		createQuota(ns, "team", list("services.loadbalancers", "1"))
		Expect(karmada.Create(ctx, service(ns, "web", corev1.ServiceTypeClusterIP))).To(Succeed())
		Expect(karmada.Create(ctx, propagation(ns, "web", "v1", "Service", onEveryMember()))).To(Succeed())
		expectPlaced(ns, "web", "Service", placedOn(memberNames(), 0))
		expectInEveryMember(ns, &corev1.ServiceList{}, "web")
		none := canonical(list("services.loadbalancers", "0"))
		expectHeld(ns, "team", none, nil)

		By("turning it into a LoadBalancer: one on each of the two members, past the one allowed")
		svc := &corev1.Service{}
		Expect(karmada.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, svc)).To(Succeed())
		svc.Spec.Type = corev1.ServiceTypeLoadBalancer
		err := karmada.Update(ctx, svc)
		Expect(err).To(HaveOccurred(), "a Service turned into a LoadBalancer on 2 members under services.loadbalancers: 1 was let through at the template")
		Expect(apierrors.ReasonForError(err)).To(Equal(metav1.StatusReason("QuotaExceeded")), "%v", err)
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(ContainSubstring("services.loadbalancers"))
		AddReportEntry("ClusterIP Service turned into a LoadBalancer past services.loadbalancers", err.Error())
		Consistently(func(g Gomega) {
			got := &corev1.Service{}
			g.Expect(karmada.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, got)).To(Succeed())
			g.Expect(got.Spec.Type).To(Equal(corev1.ServiceTypeClusterIP))
			for member, c := range members {
				got := &corev1.Service{}
				g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, got)).To(Succeed())
				g.Expect(got.Spec.Type).To(Equal(corev1.ServiceTypeClusterIP), "in %s", member)
			}
			checkHeld(g, ns, "team", none, nil)
		}).WithTimeout(5 * time.Second).WithPolling(poll).Should(Succeed())
	})
})

// Karmada's taint-based cluster failover: a member tainted NoExecute loses the bindings that do not tolerate it to
// graceful eviction tasks; their replicas keep running there until the task ends while the scheduler places their
// replacement elsewhere. The spec taints a member Cluster, so it runs alone.
var _ = Describe("What the members hold: graceful eviction", Serial, func() {
	It("charges replicas kept through a graceful eviction where they run, shows them, admits their replacement as a move, and is exact once released", func() {
		ns := newNamespace("held-evict")
		tainted, other := memberNames()[0], memberNames()[1]
		createQuota(ns, "team", list("cpu", "2", "pods", "10"))

		// The replacement never turns healthy on the other member (its pods select no node there), so Karmada keeps
		// the evicted replicas until the task's timeout or a release, not the few seconds a healthy replacement
		// takes: what the quota shows meanwhile can be read.
		Expect(karmada.Create(ctx, &policyv1alpha1.OverridePolicy{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "unschedulable-on-" + other},
			Spec: policyv1alpha1.OverrideSpec{
				ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}},
				OverrideRules: []policyv1alpha1.RuleWithCluster{{
					TargetCluster: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{other}},
					Overriders: policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{{
						Path: "/spec/template/spec/nodeSelector", Operator: policyv1alpha1.OverriderOpAdd,
						Value: apiextensionsv1.JSON{Raw: []byte(`{"e2e.karmada-quota.io/no-such-node":"true"}`)},
					}}},
				}},
			},
		})).To(Succeed())
		// 4 replicas at 500m, 2 on each member by static weights: the 2 CPU of the quota.
		halves := policyv1alpha1.Placement{
			ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{tainted, other}},
			ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
				ReplicaSchedulingType:     policyv1alpha1.ReplicaSchedulingTypeDivided,
				ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted,
				WeightPreference: &policyv1alpha1.ClusterPreferences{StaticWeightList: []policyv1alpha1.StaticClusterWeight{
					{TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{tainted}}, Weight: 1},
					{TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{other}}, Weight: 1},
				}},
			},
		}
		Expect(karmada.Create(ctx, deployment(ns, "web", 4, "500m", "64Mi"))).To(Succeed())
		pp := propagation(ns, "web", "apps/v1", "Deployment", halves)
		// v1.18 offers a cluster failover only Directly or Gracefully (no Never, no grace period of its own).
		pp.Spec.Failover = &policyv1alpha1.FailoverBehavior{Cluster: &policyv1alpha1.ClusterFailoverBehavior{PurgeMode: policyv1alpha1.PurgeModeGracefully}}
		Expect(karmada.Create(ctx, pp)).To(Succeed())
		// Another workload of the namespace, on the other member, with no replicas yet.
		deploy(ns, "batch", 0, "500m", "64Mi", policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{other}}})
		expectPlaced(ns, "web", "Deployment", map[string]int32{tainted: 2, other: 2})
		expectScheduled(ns, "batch", 0)
		expectHeld(ns, "team", canonical(list("cpu", "2", "pods", "4")), map[string]resources.List{
			tainted: canonical(list("cpu", "1", "pods", "2")), other: canonical(list("cpu", "1", "pods", "2")),
		})
		Expect(evictionsShown(quotaStatus(ns, "team"))).To(BeEmpty())

		By("tainting " + tainted + " NoExecute, a taint the policy does not tolerate")
		// Every binding there that does not tolerate it is evicted too: the spec gives them back their member.
		DeferCleanup(restoreMember, tainted, bindingsOn(tainted, ns))
		taintedAt := time.Now()
		taintCluster(tainted)

		var task workv1alpha2.GracefulEvictionTask
		Eventually(func(g Gomega) {
			rb, err := binding(ns, "web", "Deployment")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(rb.Spec.GracefulEvictionTasks).To(HaveLen(1), "no graceful eviction task yet: %s", dump(rb.Spec))
			task = rb.Spec.GracefulEvictionTasks[0]
			g.Expect(task.CreationTimestamp).NotTo(BeNil(), "the graceful eviction controller has not stamped the task")
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
		taskAt := since(taintedAt)
		Expect(task.FromCluster).To(Equal(tainted))
		Expect(task.Replicas).To(Equal(ptr.To[int32](2)))
		Expect(task.Reason).To(Equal(workv1alpha2.EvictionReasonTaintUntolerated))
		Expect(task.Producer).To(Equal(workv1alpha2.EvictionProducerTaintManager))
		Expect(task.PurgeMode).To(Equal(policyv1alpha1.PurgeModeGracefully))
		Expect(task.SuppressDeletion).To(BeNil())
		Expect(task.GracePeriodSeconds).To(BeNil())

		By("the scheduler places the replacement on " + other + " although the namespace is at its limit")
		rb := expectPlaced(ns, "web", "Deployment", map[string]int32{other: 4})
		placedAt := since(taintedAt)
		Expect(rb.Spec.GracefulEvictionTasks).To(HaveLen(1), "the task ended before its timeout: %s", dump(rb.Spec))
		AddReportEntry("binding while "+tainted+" is evicted", dump(rb.Spec))
		// Its 2 replicas still run on the tainted member, beside the 4 of the replacement.
		Eventually(func(g Gomega) {
			d := &appsv1.Deployment{}
			g.Expect(members[tainted].Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, d)).To(Succeed())
			g.Expect(d.Spec.Replicas).To(Equal(ptr.To[int32](2)))
			g.Expect(members[other].Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, d)).To(Succeed())
			g.Expect(d.Spec.Replicas).To(Equal(ptr.To[int32](4)))
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())

		By("the quota charges the evicting replicas where they run, and shows them until the timeout")
		// 4 × 500m placed on the other member, 2 × 500m evicting on the tainted one: 3 CPU, over the 2.
		until := task.CreationTimestamp.Add(karmadaGracefulEvictionTimeout)
		evicting := canonical(list("cpu", "1", "pods", "2"))
		expectHeld(ns, "team", canonical(list("cpu", "3", "pods", "6")), map[string]resources.List{
			tainted: evicting, other: canonical(list("cpu", "2", "pods", "4")),
		})
		Eventually(func(g Gomega) {
			g.Expect(evictionsShown(quotaStatus(ns, "team"))).To(Equal(map[string]shownEviction{
				tainted: {Evicting: evicting, Until: until.UTC().Format(time.RFC3339)},
			}))
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
		shownAt := since(taintedAt)

		// What the tainted member still runs is read (status.clusters[].running), as for any member: the evicting
		// replicas, the same 2 it ran before the taint. So the quota must keep reading it over several of the
		// environment's member samples (every 5s; a member that cannot be read is left out of running). Checked
		// at the end, so that a failure here does not hide the rest.
		runningOnTainted := func(g Gomega) {
			for _, c := range quotaStatus(ns, "team").Clusters {
				if c.Name == tainted {
					g.Expect(c.Running).NotTo(BeNil(), "the quota no longer reads what %s runs", tainted)
					g.Expect(canonical(c.Running)).To(Equal(evicting), "status.clusters[%s].running", tainted)
					return
				}
			}
			g.Expect(tainted).To(BeEmpty(), "no status.clusters entry for %s", tainted)
		}
		readWhileEvicted := InterceptGomegaFailure(func() {
			Eventually(runningOnTainted).WithTimeout(30 * time.Second).WithPolling(poll).Should(Succeed())
			Consistently(runningOnTainted).WithTimeout(16 * time.Second).WithPolling(time.Second).Should(Succeed())
		})
		readerOnTainted := memberReaderOn(tainted)

		By("while over hard, another workload's growth is refused")
		scale(ns, "batch", 1)
		message := expectRefused(ns, "batch")
		AddReportEntry("growth while over hard", message)
		Expect(message).To(And(ContainSubstring("cpu: requested 500m"), ContainSubstring("hard 2")))
		checkHeldNow(ns, "team", canonical(list("cpu", "3", "pods", "6")))

		By("an admin holding the task (suppressDeletion: true): nothing ends it but a release")
		setSuppressDeletion(ns, "web", tainted, true)
		Eventually(func(g Gomega) {
			g.Expect(evictionsShown(quotaStatus(ns, "team"))).To(Equal(map[string]shownEviction{tainted: {Evicting: evicting}}))
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
		checkHeldNow(ns, "team", canonical(list("cpu", "3", "pods", "6")))

		By("releasing it (suppressDeletion: false): Karmada ends the task, and the quota is exact again")
		releasedAt := time.Now()
		setSuppressDeletion(ns, "web", tainted, false)
		Eventually(func(g Gomega) {
			rb, err := binding(ns, "web", "Deployment")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(rb.Spec.GracefulEvictionTasks).To(BeEmpty())
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
		endedAt := since(releasedAt)
		Eventually(func(g Gomega) {
			var deployments appsv1.DeploymentList
			g.Expect(members[tainted].List(ctx, &deployments, client.InNamespace(ns))).To(Succeed())
			g.Expect(deployments.Items).To(BeEmpty(), "%s still runs the evicted replicas", tainted)
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
		expectHeld(ns, "team", canonical(list("cpu", "2", "pods", "4")), map[string]resources.List{
			other: canonical(list("cpu", "2", "pods", "4")),
		})
		Expect(evictionsShown(quotaStatus(ns, "team"))).To(BeEmpty())
		exactAt := since(releasedAt)
		AddReportEntry("graceful eviction timings", fmt.Sprintf(
			"taint to task stamped %s, to replacement placed %s, to quota showing the eviction %s; release to task gone %s, to quota exact %s",
			taskAt, placedAt, shownAt, endedAt, exactAt))

		By("at its limit again, the other workload's growth stays refused")
		checkHeldNow(ns, "team", canonical(list("cpu", "2", "pods", "4")))
		rb, err := binding(ns, "batch", "Deployment")
		Expect(err).NotTo(HaveOccurred())
		Expect(placedReplicas(rb)).To(BeZero())

		Expect(readWhileEvicted).NotTo(HaveOccurred(),
			"what %s runs while Karmada evicts from it was not read; karmada-quota's member reader there: %s", tainted, readerOnTainted)
	})
})

// memberReaderOn says whether a member holds the RBAC karmada-quota reads it with (the chart's
// karmada-quota-member-reader ClusterRole and ClusterRoleBinding, which Karmada propagates to every member).
func memberReaderOn(member string) string {
	GinkgoHelper()
	var out []string
	for _, obj := range []client.Object{&rbacv1.ClusterRole{}, &rbacv1.ClusterRoleBinding{}} {
		err := members[member].Get(ctx, client.ObjectKey{Name: "karmada-quota-member-reader"}, obj)
		switch {
		case err == nil:
			out = append(out, fmt.Sprintf("%T present", obj))
		case apierrors.IsNotFound(err):
			out = append(out, fmt.Sprintf("%T missing", obj))
		default:
			out = append(out, fmt.Sprintf("%T: %v", obj, err))
		}
	}
	var crbs workv1alpha2.ClusterResourceBindingList
	Expect(karmada.List(ctx, &crbs)).To(Succeed())
	for _, crb := range crbs.Items {
		if strings.HasPrefix(crb.Name, "karmada-quota-member-reader") {
			out = append(out, fmt.Sprintf("ClusterResourceBinding %s places %v, eviction tasks %v", crb.Name, crb.Spec.Clusters, crb.Spec.GracefulEvictionTasks))
		}
	}
	return strings.Join(out, "; ")
}

// bindingsOn lists the bindings (namespace/name, or the name of a ClusterResourceBinding) placing something on a
// member, but those of the namespace except.
func bindingsOn(member, except string) []string {
	GinkgoHelper()
	var out []string
	var rbs workv1alpha2.ResourceBindingList
	Expect(karmada.List(ctx, &rbs)).To(Succeed())
	for _, rb := range rbs.Items {
		if rb.Namespace != except && rb.DeletionTimestamp == nil && rb.Spec.TargetContains(member) {
			out = append(out, rb.Namespace+"/"+rb.Name)
		}
	}
	var crbs workv1alpha2.ClusterResourceBindingList
	Expect(karmada.List(ctx, &crbs)).To(Succeed())
	for _, crb := range crbs.Items {
		if crb.DeletionTimestamp == nil && crb.Spec.TargetContains(member) {
			out = append(out, crb.Name)
		}
	}
	return out
}

// restoreMember takes the eviction taint off a member and waits until every binding placed there before (bindingsOn)
// is placed there again, as a later spec expects. Karmada's scheduler places a Duplicated binding back on the member
// by itself once the taint is gone; an eviction task Karmada still keeps there is released as an admin would.
func restoreMember(member string, before []string) {
	GinkgoHelper()
	untaintCluster(member)
	Eventually(func(g Gomega) {
		var released []string
		for _, key := range before {
			var obj client.Object
			var spec *workv1alpha2.ResourceBindingSpec
			if ns, name, namespaced := strings.Cut(key, "/"); namespaced {
				rb := &workv1alpha2.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
				obj, spec = rb, &rb.Spec
			} else {
				crb := &workv1alpha2.ClusterResourceBinding{ObjectMeta: metav1.ObjectMeta{Name: key}}
				obj, spec = crb, &crb.Spec
			}
			err := karmada.Get(ctx, client.ObjectKeyFromObject(obj), obj)
			if apierrors.IsNotFound(err) || (err == nil && obj.GetDeletionTimestamp() != nil) {
				continue
			}
			g.Expect(err).NotTo(HaveOccurred())
			if i := slices.IndexFunc(spec.GracefulEvictionTasks, func(t workv1alpha2.GracefulEvictionTask) bool {
				return t.FromCluster == member && t.Producer == workv1alpha2.EvictionProducerTaintManager
			}); i >= 0 {
				spec.GracefulEvictionTasks[i].SuppressDeletion = ptr.To(false)
				g.Expect(karmada.Update(ctx, obj)).To(Succeed())
				released = append(released, key)
				continue
			}
			g.Expect(spec.TargetContains(member)).To(BeTrue(), "%s is not placed on %s again", key, member)
		}
		g.Expect(released).To(BeEmpty(), "eviction tasks from %s released; waiting for Karmada to end them", member)
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
}

// karmadaGracefulEvictionTimeout is karmada-controller-manager's --graceful-eviction-timeout, which the local
// environment leaves at Karmada's default: how long a task without a grace period of its own lasts at most.
const karmadaGracefulEvictionTimeout = 10 * time.Minute

// evictTaint is the NoExecute taint the graceful eviction spec puts on a member Cluster.
var evictTaint = corev1.Taint{Key: "e2e.karmada-quota.io/evict", Value: "true", Effect: corev1.TaintEffectNoExecute}

func isEvictTaint(t corev1.Taint) bool { return evictTaint.MatchTaint(&t) }

// taintCluster adds evictTaint to a member's Cluster on the karmada-apiserver, as an admin draining it would.
func taintCluster(name string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		var cluster clusterv1alpha1.Cluster
		g.Expect(karmada.Get(ctx, client.ObjectKey{Name: name}, &cluster)).To(Succeed())
		if slices.ContainsFunc(cluster.Spec.Taints, isEvictTaint) {
			return
		}
		taint := evictTaint
		taint.TimeAdded = ptr.To(metav1.Now())
		cluster.Spec.Taints = append(cluster.Spec.Taints, taint)
		g.Expect(karmada.Update(ctx, &cluster)).To(Succeed())
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
}

// untaintCluster removes evictTaint from a member's Cluster.
func untaintCluster(name string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		var cluster clusterv1alpha1.Cluster
		g.Expect(karmada.Get(ctx, client.ObjectKey{Name: name}, &cluster)).To(Succeed())
		if !slices.ContainsFunc(cluster.Spec.Taints, isEvictTaint) {
			return
		}
		cluster.Spec.Taints = slices.DeleteFunc(cluster.Spec.Taints, isEvictTaint)
		g.Expect(karmada.Update(ctx, &cluster)).To(Succeed())
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
}

// setSuppressDeletion sets suppressDeletion on a Deployment binding's graceful eviction task from a cluster, as an
// admin holds (true) or releases (false) the replicas Karmada keeps there.
func setSuppressDeletion(ns, name, cluster string, suppress bool) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		rb, err := binding(ns, name, "Deployment")
		g.Expect(err).NotTo(HaveOccurred())
		i := slices.IndexFunc(rb.Spec.GracefulEvictionTasks, func(t workv1alpha2.GracefulEvictionTask) bool { return t.FromCluster == cluster })
		g.Expect(i).NotTo(Equal(-1), "no eviction task from %s: %s", cluster, dump(rb.Spec))
		rb.Spec.GracefulEvictionTasks[i].SuppressDeletion = ptr.To(suppress)
		g.Expect(karmada.Update(ctx, rb)).To(Succeed())
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
}

// shownEviction is what a quota's status.clusters[] shows of a graceful eviction: what is evicting, in accounting
// units, and until when (RFC 3339, empty when absent).
type shownEviction struct {
	Evicting resources.List
	Until    string
}

// evictionsShown are the members whose status.clusters[] entry shows an eviction (evicting not all zero, or
// evictingUntil set).
func evictionsShown(status quotav1alpha1.KarmadaQuotaStatus) map[string]shownEviction {
	GinkgoHelper()
	out := map[string]shownEviction{}
	for _, c := range status.Clusters {
		shown := shownEviction{Evicting: nonZero(canonical(c.Evicting))}
		if c.EvictingUntil != nil {
			shown.Until = c.EvictingUntil.UTC().Format(time.RFC3339)
		}
		if len(shown.Evicting) > 0 || shown.Until != "" {
			out[c.Name] = shown
		}
	}
	return out
}

// expectPlaced waits until the binding of an object places exactly the replicas given per member cluster (0 for
// an object without replicas), scheduled at its latest generation, and returns it.
func expectPlaced(ns, name, kind string, want map[string]int32) *workv1alpha2.ResourceBinding {
	GinkgoHelper()
	var rb *workv1alpha2.ResourceBinding
	Eventually(func(g Gomega) {
		var err error
		rb, err = binding(ns, name, kind)
		g.Expect(err).NotTo(HaveOccurred())
		cond := meta.FindStatusCondition(rb.Status.Conditions, workv1alpha2.Scheduled)
		g.Expect(cond).NotTo(BeNil(), "not scheduled yet")
		g.Expect(cond.Status).To(Equal(metav1.ConditionTrue), "%s: %s", cond.Reason, cond.Message)
		g.Expect(rb.Status.SchedulerObservedGeneration).To(Equal(rb.Generation), "the scheduler has not seen the latest spec")
		got := map[string]int32{}
		for _, tc := range rb.Spec.Clusters {
			got[tc.Name] = tc.Replicas
		}
		g.Expect(got).To(Equal(want))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "%s %s/%s placed %v", kind, ns, name, want)
	return rb
}

// expectBindingRefused waits until the binding of an object is refused by the quota (Scheduled=False,
// QuotaExceeded) with nothing placed, and returns the condition's message.
func expectBindingRefused(ns, name, kind string) string {
	GinkgoHelper()
	var message string
	Eventually(func(g Gomega) {
		rb, err := binding(ns, name, kind)
		g.Expect(err).NotTo(HaveOccurred())
		cond := meta.FindStatusCondition(rb.Status.Conditions, workv1alpha2.Scheduled)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(cond.Reason).To(Equal(workv1alpha2.BindingReasonQuotaExceeded), cond.Message)
		g.Expect(rb.Spec.Clusters).To(BeEmpty(), "placed although refused")
		message = cond.Message
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "%s %s/%s refused with QuotaExceeded", kind, ns, name)
	return message
}

// expectHeld waits until the quota, with nothing reserved, uses total in all and perMember on each member cluster
// (a member not listed uses nothing). Zero amounts and absent ones are the same.
func expectHeld(ns, name string, total resources.List, perMember map[string]resources.List) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		checkHeld(g, ns, name, total, perMember)
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "quota %s/%s using %v", ns, name, total)
}

func checkHeld(g Gomega, ns, name string, total resources.List, perMember map[string]resources.List) {
	q := &quotav1alpha1.KarmadaQuota{}
	g.Expect(karmada.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, q)).To(Succeed())
	expectNothingReserved(g, ns, name)
	g.Expect(canonical(q.Status.Used)).To(Equal(total), "status.used")
	got := map[string]resources.List{}
	for _, c := range q.Status.Clusters {
		if used := nonZero(canonical(c.Used)); len(used) > 0 {
			got[c.Name] = used
		}
	}
	want := map[string]resources.List{}
	for member, l := range perMember {
		if l := nonZero(l); len(l) > 0 {
			want[member] = l
		}
	}
	g.Expect(got).To(Equal(want), "status.clusters[].used")
}

// checkHeldNow asserts what the quota uses right now, settled.
func checkHeldNow(ns, name string, total resources.List) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		status := quotaStatus(ns, name)
		expectNothingReserved(g, ns, name)
		g.Expect(canonical(status.Used)).To(Equal(total), "status.used")
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
}

func nonZero(l resources.List) resources.List {
	out := resources.List{}
	for name, v := range l {
		if v != 0 {
			out[name] = v
		}
	}
	return out
}

// everyMember is the same usage on each member cluster.
func everyMember(l resources.List) map[string]resources.List {
	out := map[string]resources.List{}
	for _, member := range memberNames() {
		out[member] = l
	}
	return out
}

// placedOn is a placement of the same replicas on each of the clusters.
func placedOn(clusters []string, replicas int32) map[string]int32 {
	out := map[string]int32{}
	for _, c := range clusters {
		out[c] = replicas
	}
	return out
}

func objectNames[T any, PT interface {
	*T
	client.Object
}](items []T) []string {
	var out []string
	for i := range items {
		out = append(out, PT(&items[i]).GetName())
	}
	return out
}

// claim is a PersistentVolumeClaim of the size given, in the cluster's default storage class (none is named).
func claim(ns, name, size string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
		},
	}
}

// statefulSet is a StatefulSet whose pods request cpu each and hold one claim of size from a volumeClaimTemplate.
func statefulSet(ns, name string, replicas int32, cpu, size string) *appsv1.StatefulSet {
	labels := map[string]string{"app": name}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "app", Image: "registry.k8s.io/pause:3.10",
					Resources:    corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}},
					VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
				}}},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{*claim("", "data", size)},
		},
	}
}

// setStatefulSetReplicas changes a StatefulSet's replicas on the karmada-apiserver as `kubectl edit` does: a read,
// then an update of the whole object. A conflict is retried; any other outcome is returned.
func setStatefulSetReplicas(ns, name string, replicas int32) error {
	for {
		set := &appsv1.StatefulSet{}
		if err := karmada.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, set); err != nil {
			return err
		}
		set.Spec.Replicas = ptr.To(replicas)
		if err := karmada.Update(ctx, set); !apierrors.IsConflict(err) {
			return err
		}
	}
}

// service is a Service of the type given with one port.
func service(ns, name string, serviceType corev1.ServiceType) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{
			Type:     serviceType,
			Selector: map[string]string{"app": name},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
		},
	}
}
