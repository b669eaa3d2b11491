package e2e

import (
	"encoding/json"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
)

// Issue 25's limits on member clusters, on the local Karmada: what one member may run (spec.clusters), and what a
// group of members chosen by the labels of their Cluster objects may run together (spec.clusterGroups), on top of
// the namespace-wide hard. The scheduler places as it would without them; a placement past one is refused, naming
// the cluster or the group, and nothing past it reaches the member.
var _ = Describe("Limits on member clusters", func() {
	It("caps one member: placed and run within its limit, refused past it naming the cluster, never run past it", func() {
		ns := newNamespace("capped")
		capped, other := memberNames()[0], memberNames()[1]
		createMemberQuota(ns, "compute", list("cpu", "20", "pods", "40"),
			[]quotav1alpha1.ClusterLimit{{Name: capped, Hard: list("cpu", "2")}}, nil)
		Eventually(func(g Gomega) {
			g.Expect(clusterStatuses(quotaStatus(ns, "compute"))).To(Equal(map[string]shownCluster{
				capped: {Hard: canonical(list("cpu", "2"))},
			}), "a limited cluster is listed, with its limit, before anything runs there")
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())

		By("2 replicas of 500m on every member: 1 CPU on " + capped + ", within its 2")
		deploy(ns, "web", 2, "500m", "64Mi", duplicated())
		expectPlaced(ns, "web", "Deployment", map[string]int32{capped: 2, other: 2})
		expectClusters(ns, "compute", canonical(list("cpu", "2", "pods", "4")), map[string]shownCluster{
			capped: {Hard: canonical(list("cpu", "2")), Used: canonical(list("cpu", "1", "pods", "2"))},
			other:  {Used: canonical(list("cpu", "1", "pods", "2"))},
		})

		By("scaling to 4: 2 CPU on " + capped + ", its limit exactly")
		scale(ns, "web", 4)
		expectPlaced(ns, "web", "Deployment", map[string]int32{capped: 4, other: 4})
		atLimit := map[string]shownCluster{
			capped: {Hard: canonical(list("cpu", "2")), Used: canonical(list("cpu", "2", "pods", "4"))},
			other:  {Used: canonical(list("cpu", "2", "pods", "4"))},
		}
		expectClusters(ns, "compute", canonical(list("cpu", "4", "pods", "8")), atLimit)
		expectMemberRuns(ns, capped, 4, "500m", "64Mi")
		expectMemberRuns(ns, other, 4, "500m", "64Mi")

		By("scaling to 5: 2.5 CPU on " + capped + " is refused, though the namespace has 16 CPU left")
		scale(ns, "web", 5)
		message := expectRefused(ns, "web")
		AddReportEntry("Duplicated workload scaled past a member's limit", message)
		Expect(message).To(ContainSubstring("exceeded quota: compute, cpu in cluster " + capped + ": requested 500m, used 2, reserved 0, hard 2"))
		Expect(message).NotTo(ContainSubstring("cpu: requested"), "the namespace-wide hard is not exceeded")
		Expect(message).NotTo(ContainSubstring("pods"), "pods are limited namespace-wide only, and fit")
		Expect(message).NotTo(ContainSubstring("in cluster "+other), "%s has no limit of its own", other)
		Eventually(func() []string {
			var messages []string
			for _, e := range eventsOf(ns, "Deployment", "web") {
				if e.Type == corev1.EventTypeWarning {
					messages = append(messages, e.Reason+": "+e.Message)
				}
			}
			return messages
		}).WithTimeout(timeout).WithPolling(poll).Should(ContainElement(ContainSubstring("cpu in cluster "+capped+": requested 500m")),
			"the Deployment carries an event naming the cluster")

		By("a workload placed only on " + capped + " is refused there; one placed only on " + other + " is admitted")
		deploy(ns, "pinned", 1, "500m", "64Mi", onlyOn(capped))
		message = expectBindingRefused(ns, "pinned", "Deployment")
		Expect(message).To(ContainSubstring("exceeded quota: compute, cpu in cluster " + capped + ": requested 500m, used 2, reserved 0, hard 2"))
		deploy(ns, "elsewhere", 1, "500m", "64Mi", onlyOn(other))
		expectPlaced(ns, "elsewhere", "Deployment", map[string]int32{other: 1})
		atLimit[other] = shownCluster{Used: canonical(list("cpu", "2.5", "pods", "5"))}
		expectClusters(ns, "compute", canonical(list("cpu", "4.5", "pods", "9")), atLimit)

		By(capped + " never runs more than its limit: the refused placements never reach it")
		Consistently(func(g Gomega) {
			rb, err := binding(ns, "web", "Deployment")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(rb.Spec.Replicas).To(Equal(int32(5)))
			g.Expect(placements(rb)).To(Equal(map[string]int32{capped: 4, other: 4}), "the refused placement was never written")
			g.Expect(memberRunningRequests(g, ns, capped)).To(Equal(canonical(list("cpu", "2", "memory", "256Mi", "pods", "4"))),
				"pods running in %s", capped)
			checkClusters(g, ns, "compute", canonical(list("cpu", "4.5", "pods", "9")), atLimit)
		}).WithTimeout(10 * time.Second).WithPolling(time.Second).Should(Succeed())
	})

	It("limits a group of members chosen by their labels, and follows the members relabelled out of and into it", func() {
		ns := newNamespace("group")
		m1, m2 := memberNames()[0], memberNames()[1]
		key := groupLabel(ns)
		labelCluster(m1, key, "in")
		labelCluster(m2, key, "in")
		createMemberQuota(ns, "compute", list("cpu", "20"), nil, []quotav1alpha1.ClusterGroupLimit{{
			Name: "pair", ClusterSelector: metav1.LabelSelector{MatchLabels: map[string]string{key: "in"}}, Hard: list("cpu", "3"),
		}})
		groupHard := canonical(list("cpu", "3"))
		expectGroups(ns, "compute", map[string]shownGroup{"pair": {Clusters: []string{m1, m2}, Hard: groupHard}})

		By("3 replicas of 500m on both members: 3 CPU in the group, its limit exactly")
		deploy(ns, "web", 3, "500m", "64Mi", duplicated())
		expectPlaced(ns, "web", "Deployment", map[string]int32{m1: 3, m2: 3})
		expectClusters(ns, "compute", canonical(list("cpu", "3")), map[string]shownCluster{
			m1: {Used: canonical(list("cpu", "1.5"))}, m2: {Used: canonical(list("cpu", "1.5"))},
		})
		expectGroups(ns, "compute", map[string]shownGroup{"pair": {Clusters: []string{m1, m2}, Hard: groupHard, Used: canonical(list("cpu", "3"))}})

		By("scaling to 4: 1 CPU more in the group is refused, naming it")
		scale(ns, "web", 4)
		message := expectRefused(ns, "web")
		AddReportEntry("Duplicated workload scaled past a group's limit", message)
		Expect(message).To(ContainSubstring("exceeded quota: compute, cpu in cluster group pair: requested 1, used 3, reserved 0, hard 3"))
		Expect(message).NotTo(ContainSubstring("cpu: requested"), "the namespace-wide hard is not exceeded")
		Expect(message).NotTo(ContainSubstring("in cluster member"), "no cluster has a limit of its own")
		Consistently(func(g Gomega) {
			rb, err := binding(ns, "web", "Deployment")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(placements(rb)).To(Equal(map[string]int32{m1: 3, m2: 3}), "the refused placement was never written")
			for _, m := range []string{m1, m2} {
				g.Expect(memberRunningRequests(g, ns, m)).To(Equal(canonical(list("cpu", "1.5", "memory", "192Mi", "pods", "3"))),
					"pods running in %s", m)
			}
		}).WithTimeout(5 * time.Second).WithPolling(time.Second).Should(Succeed())
		scale(ns, "web", 3)
		expectPlaced(ns, "web", "Deployment", map[string]int32{m1: 3, m2: 3})

		By("relabelling " + m2 + " out of the group: the group is " + m1 + " alone, and 5 replicas fit it")
		unlabelCluster(m2, key)
		expectGroups(ns, "compute", map[string]shownGroup{"pair": {Clusters: []string{m1}, Hard: groupHard, Used: canonical(list("cpu", "1.5"))}})
		scale(ns, "web", 5)
		expectPlaced(ns, "web", "Deployment", map[string]int32{m1: 5, m2: 5})
		expectClusters(ns, "compute", canonical(list("cpu", "5")), map[string]shownCluster{
			m1: {Used: canonical(list("cpu", "2.5"))}, m2: {Used: canonical(list("cpu", "2.5"))},
		})
		expectGroups(ns, "compute", map[string]shownGroup{"pair": {Clusters: []string{m1}, Hard: groupHard, Used: canonical(list("cpu", "2.5"))}})
		expectMemberRuns(ns, m2, 5, "500m", "64Mi")

		By("relabelling " + m2 + " into the group again: it brings its usage, 5 CPU against 3, and growth is refused")
		labelCluster(m2, key, "in")
		expectGroups(ns, "compute", map[string]shownGroup{"pair": {Clusters: []string{m1, m2}, Hard: groupHard, Used: canonical(list("cpu", "5"))}})
		scale(ns, "web", 6)
		message = expectRefused(ns, "web")
		AddReportEntry("growth in a group a member was relabelled into", message)
		Expect(message).To(ContainSubstring("exceeded quota: compute, cpu in cluster group pair: requested 1, used 5, reserved 0, hard 3"))
		Consistently(func(g Gomega) {
			rb, err := binding(ns, "web", "Deployment")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(placements(rb)).To(Equal(map[string]int32{m1: 5, m2: 5}), "the refused placement was never written")
		}).WithTimeout(5 * time.Second).WithPolling(time.Second).Should(Succeed())

		By("shrinking is admitted although the group stays over its limit")
		scale(ns, "web", 4)
		expectPlaced(ns, "web", "Deployment", map[string]int32{m1: 4, m2: 4})
		expectGroups(ns, "compute", map[string]shownGroup{"pair": {Clusters: []string{m1, m2}, Hard: groupHard, Used: canonical(list("cpu", "4"))}})
	})
})

// The unjoin deletes a member's Cluster object, which Karmada keeps until nothing is placed there, in any namespace:
// the spec runs alone, after the others (as the fault suite's unjoin), and joins the member again.
var _ = Describe("Limits on member clusters: a member unjoined", Label("unjoin"), Serial, SpecPriority(-1), func() {
	It("keeps the limit of a member that left, shows it not joined, admits on the others, and counts the member again once it is back", func() {
		expectNoNamespaceDeleting()
		ns := newNamespace("unjoined")
		stays, gone := memberNames()[0], memberNames()[1]
		key := groupLabel(ns)
		labelCluster(stays, key, "in")
		labelCluster(gone, key, "in")
		createMemberQuota(ns, "compute", list("cpu", "20"),
			[]quotav1alpha1.ClusterLimit{{Name: stays, Hard: list("cpu", "2")}, {Name: gone, Hard: list("cpu", "1")}},
			[]quotav1alpha1.ClusterGroupLimit{{
				Name: "pair", ClusterSelector: metav1.LabelSelector{MatchLabels: map[string]string{key: "in"}}, Hard: list("cpu", "3"),
			}})
		staysHard, goneHard, groupHard := canonical(list("cpu", "2")), canonical(list("cpu", "1")), canonical(list("cpu", "3"))

		By("web on " + stays + " only, edge on " + gone + " only: 1 CPU each")
		deploy(ns, "web", 2, "500m", "64Mi", onlyOn(stays))
		deploy(ns, "edge", 2, "500m", "64Mi", onlyOn(gone))
		expectPlaced(ns, "web", "Deployment", map[string]int32{stays: 2})
		expectPlaced(ns, "edge", "Deployment", map[string]int32{gone: 2})
		expectClusters(ns, "compute", canonical(list("cpu", "2")), map[string]shownCluster{
			stays: {Hard: staysHard, Used: canonical(list("cpu", "1"))},
			gone:  {Hard: goneHard, Used: canonical(list("cpu", "1"))},
		})
		expectGroups(ns, "compute", map[string]shownGroup{"pair": {Clusters: []string{stays, gone}, Hard: groupHard, Used: canonical(list("cpu", "2"))}})

		By("unjoining " + gone + " as `karmadactl unjoin` does: Karmada drops edge's placement, and the Cluster goes")
		DeferCleanup(func() { rejoin(ns, gone) })
		Expect(env.Unjoin(ctx, gone)).To(Succeed())
		Eventually(func(g Gomega) {
			rb, err := binding(ns, "edge", "Deployment")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(rb.Spec.Clusters).To(BeEmpty(), "edge may only run on %s: Karmada drops its placement", gone)
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
		// Other namespaces' bindings still there (Karmada moves most by itself) are asked to move, as an admin would.
		unblockUnjoin(ns, gone)
		Eventually(func(g Gomega) {
			unjoined, err := env.Unjoined(ctx, gone)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(unjoined).To(BeTrue(), "the Cluster object is gone; what still holds it: %s", unjoinBlockers(g, gone))
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())

		By("the quota keeps " + gone + "'s limit, not joined, and the group is " + stays + " alone")
		expectClusters(ns, "compute", canonical(list("cpu", "1")), map[string]shownCluster{
			stays: {Hard: staysHard, Used: canonical(list("cpu", "1"))},
			gone:  {Hard: goneHard, NotJoined: true},
		})
		expectGroups(ns, "compute", map[string]shownGroup{"pair": {Clusters: []string{stays}, Hard: groupHard, Used: canonical(list("cpu", "1"))}})

		By("admission goes on for " + stays + ": scaling web to 4 fits its 2 CPU, to 5 is refused naming it")
		scale(ns, "web", 4)
		expectPlaced(ns, "web", "Deployment", map[string]int32{stays: 4})
		staysFull := map[string]shownCluster{
			stays: {Hard: staysHard, Used: canonical(list("cpu", "2"))},
			gone:  {Hard: goneHard, NotJoined: true},
		}
		expectClusters(ns, "compute", canonical(list("cpu", "2")), staysFull)
		scale(ns, "web", 5)
		message := expectRefused(ns, "web")
		AddReportEntry("growth on a member while another is unjoined", message)
		Expect(message).To(ContainSubstring("exceeded quota: compute, cpu in cluster " + stays + ": requested 500m, used 2, reserved 0, hard 2"))
		Expect(message).NotTo(ContainSubstring("cluster group"), "the group holds %s alone: 2.5 CPU fit its 3", stays)
		scale(ns, "web", 4)
		expectPlaced(ns, "web", "Deployment", map[string]int32{stays: 4})
		expectClusters(ns, "compute", canonical(list("cpu", "2")), staysFull)
		expectMemberRuns(ns, stays, 4, "500m", "64Mi")

		By("joining " + gone + " again: Karmada places edge there again, within its limit, and the quota counts it")
		Expect(env.Join(ctx, gone)).To(Succeed())
		expectPlaced(ns, "edge", "Deployment", map[string]int32{gone: 2})
		expectClusters(ns, "compute", canonical(list("cpu", "3")), map[string]shownCluster{
			stays: {Hard: staysHard, Used: canonical(list("cpu", "2"))},
			gone:  {Hard: goneHard, Used: canonical(list("cpu", "1"))},
		})
		expectMemberRuns(ns, gone, 2, "500m", "64Mi")
		// A member joins with the labels its Cluster object is created with: none of the group's.
		expectGroups(ns, "compute", map[string]shownGroup{"pair": {Clusters: []string{stays}, Hard: groupHard, Used: canonical(list("cpu", "2"))}})

		By("labelling " + gone + " into the group again: 3 CPU in it, and edge's growth is refused by both limits")
		labelCluster(gone, key, "in")
		expectGroups(ns, "compute", map[string]shownGroup{"pair": {Clusters: []string{stays, gone}, Hard: groupHard, Used: canonical(list("cpu", "3"))}})
		scale(ns, "edge", 3)
		message = expectRefused(ns, "edge")
		AddReportEntry("growth on a member joined again", message)
		Expect(message).To(ContainSubstring("cpu in cluster " + gone + ": requested 500m, used 1, reserved 0, hard 1"))
		Expect(message).To(ContainSubstring("cpu in cluster group pair: requested 500m, used 3, reserved 0, hard 3"))
		Consistently(func(g Gomega) {
			rb, err := binding(ns, "edge", "Deployment")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(placements(rb)).To(Equal(map[string]int32{gone: 2}), "the refused placement was never written")
			g.Expect(memberRunningRequests(g, ns, gone)).To(Equal(canonical(list("cpu", "1", "memory", "128Mi", "pods", "2"))),
				"pods running in %s", gone)
		}).WithTimeout(5 * time.Second).WithPolling(time.Second).Should(Succeed())
	})
})

// createMemberQuota creates a quota with a namespace-wide hard and limits on member clusters and groups of them.
func createMemberQuota(ns, name string, hard corev1.ResourceList, clusters []quotav1alpha1.ClusterLimit,
	groups []quotav1alpha1.ClusterGroupLimit) {
	GinkgoHelper()
	q := &quotav1alpha1.KarmadaQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       quotav1alpha1.KarmadaQuotaSpec{Hard: hard, Clusters: clusters, ClusterGroups: groups},
	}
	Expect(karmada.Create(ctx, q)).To(Succeed())
}

// groupLabel is a label key of the spec's own, so that its group chooses no cluster another spec labels.
func groupLabel(ns string) string { return "e2e.karmada-quota.io/" + ns }

// labelCluster sets a label on a member's Cluster object on the karmada-apiserver, and takes it off after the spec.
func labelCluster(name, key, value string) {
	GinkgoHelper()
	patchClusterLabel(name, key, &value)
	DeferCleanup(func() {
		var cluster clusterv1alpha1.Cluster
		if err := karmada.Get(ctx, client.ObjectKey{Name: name}, &cluster); err == nil {
			if _, ok := cluster.Labels[key]; ok {
				patchClusterLabel(name, key, nil)
			}
		}
	})
}

func unlabelCluster(name, key string) {
	GinkgoHelper()
	patchClusterLabel(name, key, nil)
}

// patchClusterLabel sets a Cluster's label (nil removes it) with a merge patch, as `kubectl label` does.
func patchClusterLabel(name, key string, value *string) {
	GinkgoHelper()
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]*string{key: value}}})
	Expect(err).NotTo(HaveOccurred())
	cluster := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
	Expect(karmada.Patch(ctx, cluster, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
}

// shownCluster is a quota's status.clusters[] entry in accounting units, zero amounts left out.
type shownCluster struct {
	Hard, Used, Reserved resources.List
	NotJoined            bool
}

// clusterStatuses is status.clusters by cluster, leaving out the entries that show nothing: no limit, no use.
func clusterStatuses(status quotav1alpha1.KarmadaQuotaStatus) map[string]shownCluster {
	GinkgoHelper()
	out := map[string]shownCluster{}
	for _, c := range status.Clusters {
		shown := shownCluster{Hard: nonZeroOrNil(canonical(c.Hard)), Used: nonZeroOrNil(canonical(c.Used)),
			Reserved: nonZeroOrNil(canonical(c.Reserved)), NotJoined: c.NotJoined}
		if shown.Hard != nil || shown.Used != nil || shown.Reserved != nil || shown.NotJoined {
			out[c.Name] = shown
		}
	}
	return out
}

// shownGroup is a quota's status.clusterGroups[] entry in accounting units, zero amounts left out.
type shownGroup struct {
	Clusters             []string
	Hard, Used, Reserved resources.List
}

func groupStatuses(status quotav1alpha1.KarmadaQuotaStatus) map[string]shownGroup {
	GinkgoHelper()
	out := map[string]shownGroup{}
	for _, g := range status.ClusterGroups {
		out[g.Name] = shownGroup{Clusters: g.Clusters, Hard: nonZeroOrNil(canonical(g.Hard)),
			Used: nonZeroOrNil(canonical(g.Used)), Reserved: nonZeroOrNil(canonical(g.Reserved))}
	}
	return out
}

func nonZeroOrNil(l resources.List) resources.List {
	if out := nonZero(l); len(out) > 0 {
		return out
	}
	return nil
}

// expectClusters waits until the quota, with nothing reserved, uses total in all and shows exactly clusters in
// status.clusters (entries that show nothing left out).
func expectClusters(ns, name string, total resources.List, clusters map[string]shownCluster) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		checkClusters(g, ns, name, total, clusters)
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "quota %s/%s using %v, by cluster %v", ns, name, total, clusters)
}

func checkClusters(g Gomega, ns, name string, total resources.List, clusters map[string]shownCluster) {
	q := &quotav1alpha1.KarmadaQuota{}
	g.Expect(karmada.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, q)).To(Succeed())
	expectNothingReserved(g, ns, name)
	g.Expect(q.Status.ObservedGeneration).To(Equal(q.Generation))
	g.Expect(nonZero(canonical(q.Status.Used))).To(Equal(nonZero(total)), "status.used")
	g.Expect(clusterStatuses(q.Status)).To(Equal(clusters), "status.clusters")
}

// expectGroups waits until the quota, with nothing reserved, shows exactly groups in status.clusterGroups.
func expectGroups(ns, name string, groups map[string]shownGroup) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		q := &quotav1alpha1.KarmadaQuota{}
		g.Expect(karmada.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, q)).To(Succeed())
		expectNothingReserved(g, ns, name)
		g.Expect(groupStatuses(q.Status)).To(Equal(groups), "status.clusterGroups")
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "quota %s/%s groups %v", ns, name, groups)
}

// expectMemberRuns waits until a member runs, in the namespace, exactly replicas pods of the given requests.
func expectMemberRuns(ns, member string, replicas int64, cpu, memory string) {
	GinkgoHelper()
	want := resources.List{"pods": replicas}
	for _, r := range []struct {
		name corev1.ResourceName
		per  string
	}{{corev1.ResourceCPU, cpu}, {corev1.ResourceMemory, memory}} {
		one := canonical(list(string(r.name), r.per))
		for n, v := range one {
			want[n] = v * replicas
		}
	}
	Eventually(func(g Gomega) {
		g.Expect(memberRunningRequests(g, ns, member)).To(Equal(want), "pods running in %s", member)
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "%s runs %d pods of %s/%s in %s", member, replicas, cpu, memory, ns)
}

// placements are a binding's replicas by member cluster.
func placements(rb *workv1alpha2.ResourceBinding) map[string]int32 {
	out := map[string]int32{}
	for _, tc := range rb.Spec.Clusters {
		out[tc.Name] = tc.Replicas
	}
	return out
}
