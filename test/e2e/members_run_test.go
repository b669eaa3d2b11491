package e2e

import (
	"strings"
	"time"

	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/hack/localkarmada"
	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
)

// What the members run is what is charged, whatever Karmada's binding says: a DaemonSet's pod per node, a
// CronJob's Jobs, and a template an OverridePolicy changes for one member. Karmada's bindings carry no replicas
// for the first two, and the template's requests for the third; the quota charges each member what its Work makes
// it run.
var _ = Describe("What the members run", func() {
	onEveryMember := func() policyv1alpha1.Placement {
		return policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: memberNames()}}
	}
	cpu := func(quantity string) resources.List { return canonical(list("cpu", quantity)) }

	// expectCharged waits until the quota, with nothing reserved, charges cpu in all and perMember on each member.
	expectCharged := func(ns, name, total string, perMember map[string]string) {
		GinkgoHelper()
		Eventually(func(g Gomega) {
			status := quotaStatus(ns, name)
			expectNothingReserved(g, ns, name)
			g.Expect(canonical(status.Used)).To(Equal(cpu(total)))
			got := map[string]resources.List{}
			for _, c := range status.Clusters {
				got[c.Name] = canonical(c.Used)
			}
			want := map[string]resources.List{}
			for member, quantity := range perMember {
				want[member] = cpu(quantity)
			}
			g.Expect(got).To(Equal(want))
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "quota %s/%s charging %s", ns, name, total)
	}
	// expectWorkRefused waits until Karmada reports on the binding that a member's Work was refused, and returns
	// the message.
	expectWorkRefused := func(ns, bindingName string, says ...string) string {
		GinkgoHelper()
		var message string
		Eventually(func(g Gomega) {
			var found []string
			for _, e := range eventsOf(ns, "ResourceBinding", bindingName) {
				if e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, "would have member cluster") {
					found = append(found, e.Message)
				}
			}
			g.Expect(found).NotTo(BeEmpty(), "no Work refusal reported on binding %s", bindingName)
			message = found[len(found)-1]
			for _, s := range says {
				g.Expect(message).To(ContainSubstring(s))
			}
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
		return message
	}

	// expectMembersRunWhatIsCharged waits until every member's pods of the namespace request, in CPU, what the
	// quota charges there, and the quota's own view of the members (its sampler) agrees: MembersWithinQuota True.
	expectMembersRunWhatIsCharged := func(ns, name string) {
		GinkgoHelper()
		Eventually(func(g Gomega) {
			status := quotaStatus(ns, name)
			charged := clusterUsage(status)
			for member := range members {
				running := memberRunningRequests(g, ns, member)
				g.Expect(running[resources.RequestName(corev1.ResourceCPU)]).To(Equal(charged[member][resources.RequestName(corev1.ResourceCPU)]),
					"%s runs %v, the quota charges %v there", member, running, charged[member])
			}
			cond := meta.FindStatusCondition(status.Conditions, quotav1alpha1.ConditionMembersWithinQuota)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionTrue), "%s: %s", cond.Reason, cond.Message)
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	}

	daemonSet := func(ns, name, cpu string) *appsv1.DaemonSet {
		labels := map[string]string{"app": name}
		return &appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
			Spec: appsv1.DaemonSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{
						Name: "agent", Image: "registry.k8s.io/pause:3.10",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}},
					}}},
				},
			},
		}
	}

	It("charges a DaemonSet a pod per node on each member, and keeps it off the members where that does not fit", func() {
		perMember := localkarmada.NodesPerMember

		tight := newNamespace("daemon-tight")
		createQuota(tight, "team", list("cpu", "2"))
		Expect(karmada.Create(ctx, daemonSet(tight, "agent", "3"))).To(Succeed())
		Expect(karmada.Create(ctx, propagation(tight, "agent", "apps/v1", "DaemonSet", onEveryMember()))).To(Succeed())
		message := expectWorkRefused(tight, bindingName("agent", "DaemonSet"), "quota", "cpu")
		AddReportEntry("DaemonSet under cpu: 2", message)
		Consistently(func(g Gomega) {
			for member, c := range members {
				var sets appsv1.DaemonSetList
				g.Expect(c.List(ctx, &sets, client.InNamespace(tight))).To(Succeed())
				g.Expect(sets.Items).To(BeEmpty(), "member %s runs the DaemonSet the quota refused", member)
			}
			g.Expect(canonical(quotaStatus(tight, "team").Used)).To(Equal(cpu("0")))
		}).WithTimeout(5 * time.Second).WithPolling(poll).Should(Succeed())

		roomy := newNamespace("daemon-roomy")
		createQuota(roomy, "team", list("cpu", "20"))
		Expect(karmada.Create(ctx, daemonSet(roomy, "agent", "3"))).To(Succeed())
		Expect(karmada.Create(ctx, propagation(roomy, "agent", "apps/v1", "DaemonSet", onEveryMember()))).To(Succeed())
		expectInEveryMember(roomy, &appsv1.DaemonSetList{}, "agent")
		each := resource.MustParse("3")
		each.Mul(int64(perMember))
		all := each.DeepCopy()
		all.Mul(int64(len(members)))
		byMember := map[string]string{}
		for _, member := range memberNames() {
			byMember[member] = each.String()
		}
		expectCharged(roomy, "team", all.String(), byMember)
		expectMembersRunWhatIsCharged(roomy, "team")
	})

	It("charges a CronJob the Jobs it runs at once, and refuses one whose Jobs have no bound", func() {
		ns := newNamespace("cron")
		createQuota(ns, "team", list("cpu", "20"))
		cronJob := func(name string, policy batchv1.ConcurrencyPolicy) *batchv1.CronJob {
			return &batchv1.CronJob{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: batchv1.CronJobSpec{
					Schedule: "*/1 * * * *", ConcurrencyPolicy: policy,
					JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
						Parallelism: ptr.To[int32](2),
						Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
							RestartPolicy: corev1.RestartPolicyNever,
							Containers: []corev1.Container{{
								Name: "report", Image: "registry.k8s.io/pause:3.10",
								Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
							}},
						}},
					}},
				},
			}
		}
		Expect(karmada.Create(ctx, cronJob("unbounded", batchv1.AllowConcurrent))).To(Succeed())
		Expect(karmada.Create(ctx, propagation(ns, "unbounded", "batch/v1", "CronJob", onEveryMember()))).To(Succeed())
		message := expectWorkRefused(ns, bindingName("unbounded", "CronJob"), "concurrencyPolicy", "Forbid or Replace")
		AddReportEntry("CronJob allowing concurrent Jobs", message)

		Expect(karmada.Create(ctx, cronJob("report", batchv1.ForbidConcurrent))).To(Succeed())
		Expect(karmada.Create(ctx, propagation(ns, "report", "batch/v1", "CronJob", onEveryMember()))).To(Succeed())
		Eventually(func(g Gomega) {
			for member, c := range members {
				var jobs batchv1.CronJobList
				g.Expect(c.List(ctx, &jobs, client.InNamespace(ns))).To(Succeed())
				var names []string
				for _, j := range jobs.Items {
					names = append(names, j.Name)
				}
				g.Expect(names).To(ConsistOf("report"), "CronJobs in %s", member)
			}
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
		// One Job of 2 pods at 1 CPU at a time, on each member.
		byMember := map[string]string{}
		for _, member := range memberNames() {
			byMember[member] = "2"
		}
		expectCharged(ns, "team", "4", byMember)
	})

	It("charges a member what an OverridePolicy makes it run, and holds an override raised past the quota at the Work", func() {
		ns := newNamespace("override")
		createQuota(ns, "team", list("cpu", "20"))
		first, second := memberNames()[0], memberNames()[1]
		override := func(cpu string) *policyv1alpha1.OverridePolicy {
			return &policyv1alpha1.OverridePolicy{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bigger-on-" + first},
				Spec: policyv1alpha1.OverrideSpec{
					ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}},
					OverrideRules: []policyv1alpha1.RuleWithCluster{{
						TargetCluster: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{first}},
						Overriders: policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{{
							Path: "/spec/template/spec/containers/0/resources/requests/cpu", Operator: policyv1alpha1.OverriderOpReplace,
							Value: apiextensionsv1.JSON{Raw: []byte(`"` + cpu + `"`)},
						}}},
					}},
				},
			}
		}
		op := override("2")
		Expect(karmada.Create(ctx, op)).To(Succeed())
		// 4 replicas at 1 CPU, 2 on each member by static weights.
		halves := policyv1alpha1.Placement{
			ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{first, second}},
			ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
				ReplicaSchedulingType:     policyv1alpha1.ReplicaSchedulingTypeDivided,
				ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted,
				WeightPreference: &policyv1alpha1.ClusterPreferences{StaticWeightList: []policyv1alpha1.StaticClusterWeight{
					{TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{first}}, Weight: 1},
					{TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{second}}, Weight: 1},
				}},
			},
		}
		deploy(ns, "web", 4, "1", "64Mi", halves)

		// The first member runs its two replicas at 2 CPU, as the override says, charged so: 4 + 2.
		requestOn := func(g Gomega, member string) string {
			d := &appsv1.Deployment{}
			g.Expect(members[member].Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, d)).To(Succeed())
			return d.Spec.Template.Spec.Containers[0].Resources.Requests.Cpu().String()
		}
		Eventually(func(g Gomega) {
			g.Expect(requestOn(g, first)).To(Equal("2"))
			g.Expect(requestOn(g, second)).To(Equal("1"))
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
		expectCharged(ns, "team", "6", map[string]string{first: "4", second: "2"})
		expectMembersRunWhatIsCharged(ns, "team")

		// Raised to 10 CPU there: 20 where 4 run, 16 more, past the 20. The member keeps what it runs.
		Expect(karmada.Get(ctx, client.ObjectKeyFromObject(op), op)).To(Succeed())
		op.Spec = override("10").Spec
		Expect(karmada.Update(ctx, op)).To(Succeed())
		message := expectWorkRefused(ns, bindingName("web", "Deployment"), "member cluster "+first, "exceeded quota: team, cpu: requested 16, used 6, reserved 0, hard 20")
		AddReportEntry("OverridePolicy raised past the quota", message)
		Expect(message).To(ContainSubstring("with OverridePolicy " + op.Name))
		// Its author reads why on the policy too.
		Eventually(func(g Gomega) {
			var reasons []string
			for _, e := range eventsOf(ns, "OverridePolicy", op.Name) {
				if e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, "member cluster "+first) {
					reasons = append(reasons, e.Reason)
				}
			}
			g.Expect(reasons).To(ContainElement("QuotaExceeded"))
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(requestOn(g, first)).To(Equal("2"))
		}).WithTimeout(5 * time.Second).WithPolling(poll).Should(Succeed())
		expectCharged(ns, "team", "6", map[string]string{first: "4", second: "2"})
	})
})
