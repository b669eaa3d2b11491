package e2e

import (
	"fmt"
	"time"

	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/hack/localkarmada"
	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/estimator/discovery"
)

// quotaCapping creates a quota of 20 CPU in ns that limits each member named in perMember to its CPU there.
func quotaCapping(ns string, perMember map[string]string) {
	GinkgoHelper()
	q := &quotav1alpha1.KarmadaQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "team"},
		Spec:       quotav1alpha1.KarmadaQuotaSpec{Hard: list("cpu", "20")},
	}
	for _, member := range memberNames() {
		if cpus, capped := perMember[member]; capped {
			q.Spec.Clusters = append(q.Spec.Clusters, quotav1alpha1.ClusterLimit{Name: member, Hard: list("cpu", cpus)})
		}
	}
	Expect(karmada.Create(ctx, q)).To(Succeed())
}

// restartGrace is how long a restarted Karmada component may take to stop.
const restartGrace = 10 * time.Second

// Karmada's scheduler places within the limits on member clusters: it asks karmada-quota's estimator how many
// replicas each member has room for (pkg/estimator), through the Services the controller keeps, and divides a
// dynamic-weight workload by the answers. The placements it cannot steer (static weights, Duplicated) are refused
// with a message that says so.
var _ = Describe("Scheduling within the limits on member clusters", Serial, Ordered, func() {
	BeforeAll(func() {
		// The local Karmada runs as most do, without estimators: these specs run it as the chart tells admins to.
		scheduler, controllerManager := localkarmada.EstimatorArgs(true)
		Expect(env.RestartWith(ctx, "karmada-controller-manager", restartGrace, controllerManager)).To(Succeed())
		Expect(env.RestartWith(ctx, "karmada-scheduler", restartGrace, scheduler)).To(Succeed())
		DeferCleanup(func() {
			scheduler, controllerManager := localkarmada.EstimatorArgs(false)
			Expect(env.RestartWith(ctx, "karmada-scheduler", restartGrace, scheduler)).To(Succeed())
			Expect(env.RestartWith(ctx, "karmada-controller-manager", restartGrace, controllerManager)).To(Succeed())
		})
	})

	BeforeEach(func() {
		// The controller keeps one estimator Service per member from the start; karmada-scheduler dials them.
		for _, m := range memberNames() {
			Eventually(func() error {
				return karmada.Get(ctx, client.ObjectKey{Namespace: "karmada-system", Name: discovery.Lookup{Prefix: "karmada-quota-estimator"}.ServiceName(m)}, &corev1.Service{})
			}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "the estimator Service of %s", m)
		}
	})

	It("divides a dynamic-weight workload by the room each member has, and leaves to Karmada what fits nowhere", func() {
		members := memberNames()
		Expect(members).To(HaveLen(2))
		capped, roomy := members[0], members[1]
		ns := newNamespace("steer")
		// Room for 2 replicas of 500m on one member and 4 on the other: the members' own capacity would split 6
		// replicas evenly, 3 and 3, past the first member's limit.
		quotaCapping(ns, map[string]string{capped: "1", roomy: "2"})

		deploy(ns, "web", 6, "500m", "16Mi", divided())
		expectScheduled(ns, "web", 6)
		rb, err := binding(ns, "web", "Deployment")
		Expect(err).NotTo(HaveOccurred())
		Expect(rb.Spec.Clusters).To(ConsistOf(
			workv1alpha2.TargetCluster{Name: capped, Replicas: 2},
			workv1alpha2.TargetCluster{Name: roomy, Replicas: 4},
		), "placed within each member's limit")
		Eventually(func(g Gomega) {
			used := clusterUsage(quotaStatus(ns, "team"))
			g.Expect(used[capped]).To(HaveKeyWithValue(corev1.ResourceName("requests.cpu"), int64(1000)))
			g.Expect(used[roomy]).To(HaveKeyWithValue(corev1.ResourceName("requests.cpu"), int64(2000)))
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())

		By("a seventh replica: no member has room for it, though the namespace has")
		scale(ns, "web", 7)
		Eventually(func(g Gomega) {
			rb, err := binding(ns, "web", "Deployment")
			g.Expect(err).NotTo(HaveOccurred())
			cond := meta.FindStatusCondition(rb.Status.Conditions, workv1alpha2.Scheduled)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(rb.Spec.Replicas).To(Equal(int32(7)))
			g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
			// Karmada's own verdict, the estimators' room summing below the new replica (it sets no observed
			// generation for a failed attempt): "failed to scale up: Clusters available replicas 0 are not enough".
			g.Expect(cond.Reason).To(Equal(workv1alpha2.BindingReasonUnschedulable), cond.Message)
			g.Expect(cond.Message).To(ContainSubstring("Clusters available replicas 0 are not enough to schedule"))
			g.Expect(placedReplicas(rb)).To(Equal(int32(6)), "what was placed stays")
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
		// The controller counts it as waiting on the quota, and must leave it to Karmada while no member has room:
		// requeued (rescheduleTriggeredAt), Karmada would recompute the whole placement and fail it again, saying
		// "failed to do fresh scale" instead. Longer than a status interval and a recount or two.
		Consistently(func(g Gomega) {
			rb, err := binding(ns, "web", "Deployment")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(rb.Spec.RescheduleTriggeredAt).To(BeNil(), "requeued while no member has room")
			cond := meta.FindStatusCondition(rb.Status.Conditions, workv1alpha2.Scheduled)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Message).To(ContainSubstring("Clusters available replicas 0 are not enough to schedule"))
		}).WithTimeout(12 * time.Second).WithPolling(poll).Should(Succeed())
	})

	It("aggregates a workload on as few members as their room allows", func() {
		members := memberNames()
		capped, roomy := members[0], members[1]
		ns := newNamespace("aggregated")
		quotaCapping(ns, map[string]string{capped: "1", roomy: "2"})
		aggregated := divided()
		aggregated.ReplicaScheduling.ReplicaDivisionPreference = policyv1alpha1.ReplicaDivisionPreferenceAggregated
		aggregated.ReplicaScheduling.WeightPreference = nil
		// The members' capacity alone would put all 6 on one member, past either limit.
		deploy(ns, "batch", 6, "500m", "16Mi", aggregated)
		expectScheduled(ns, "batch", 6)
		rb, err := binding(ns, "batch", "Deployment")
		Expect(err).NotTo(HaveOccurred())
		Expect(rb.Spec.Clusters).To(ConsistOf(
			workv1alpha2.TargetCluster{Name: roomy, Replicas: 4},
			workv1alpha2.TargetCluster{Name: capped, Replicas: 2},
		), "the roomiest member first, the rest where room is left")
	})

	It("refuses a placement it cannot steer past a member's limit, saying why and what to change", func() {
		members := memberNames()
		capped := members[0]
		ns := newNamespace("unsteered")
		quotaCapping(ns, map[string]string{capped: "1"})

		static := policyv1alpha1.Placement{
			ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: members},
			ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
				ReplicaSchedulingType:     policyv1alpha1.ReplicaSchedulingTypeDivided,
				ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted,
				WeightPreference: &policyv1alpha1.ClusterPreferences{StaticWeightList: []policyv1alpha1.StaticClusterWeight{
					{TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{members[0]}}, Weight: 1},
					{TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{members[1]}}, Weight: 1},
				}},
			},
		}
		// 3 replicas of 500m on each member by the weights: 1.5 CPU on the capped one.
		deploy(ns, "weighted", 6, "500m", "16Mi", static)
		message := expectRefused(ns, "weighted")
		AddReportEntry("static weights past a member's limit", message)
		Expect(message).To(ContainSubstring(fmt.Sprintf("cpu in cluster %s: requested 1500m, used 0, reserved 0, hard 1", capped)))
		Expect(message).To(ContainSubstring("divides replicas by static weights alone"))
		Expect(message).To(ContainSubstring("dynamicWeight: AvailableReplicas"))

		deploy(ns, "everywhere", 3, "500m", "16Mi", duplicated())
		message = expectRefused(ns, "everywhere")
		AddReportEntry("Duplicated past a member's limit", message)
		Expect(message).To(ContainSubstring(fmt.Sprintf("cpu in cluster %s: requested 1500m", capped)))
		Expect(message).To(ContainSubstring("all replicas of a Duplicated workload"))
	})
})
