package controller

import (
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/internal/testenv"
	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/controller"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
	"github.com/karmada-quota/karmada-quota/test/integration/framework"
)

var _ = Describe("Cluster and group limits, in status", func() {
	It("shows each limited cluster's hard beside its use, whether it joined, and each group's clusters, following relabels", func() {
		startController(controller.Options{}, 0)
		ns := newNamespace()
		for name, region := range map[string]string{"member1": "eu", "member2": "eu", "member3": "us"} {
			c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"region": region}},
				Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push}}
			Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, c))).To(Succeed())
			DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, c))).To(Succeed()) })
		}
		q := testenv.Quota(ns, "team", list("cpu", "100"))
		q.Spec.Clusters = []quotav1alpha1.ClusterLimit{
			{Name: "member1", Hard: list("cpu", "2")},
			{Name: "member9", Hard: list("cpu", "1")},
		}
		q.Spec.ClusterGroups = []quotav1alpha1.ClusterGroupLimit{{Name: "eu",
			ClusterSelector: metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}}, Hard: list("cpu", "10")}}
		Expect(k8s.Create(ctx, q)).To(Succeed())
		web := mustCreate(utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")))
		Expect(place(web, cluster("member1", 2), cluster("member2", 1), cluster("member3", 4))).To(Succeed())

		Eventually(func(g Gomega) {
			q := getQuota(ns, "team")
			m1, m9 := clusterStatus(q, "member1"), clusterStatus(q, "member9")
			g.Expect(m1).NotTo(BeNil())
			g.Expect(framework.Canonical(m1.Hard)).To(Equal(framework.Canonical(list("cpu", "2"))))
			g.Expect(framework.Canonical(m1.Used)).To(Equal(framework.Canonical(list("cpu", "2"))))
			g.Expect(m1.NotJoined).To(BeFalse())
			g.Expect(m9).NotTo(BeNil(), "a limited cluster is listed though nothing runs there")
			g.Expect(m9.NotJoined).To(BeTrue())
			g.Expect(q.Status.ClusterGroups).To(HaveLen(1))
			eu := q.Status.ClusterGroups[0]
			g.Expect(eu.Clusters).To(Equal([]string{"member1", "member2"}))
			g.Expect(framework.Canonical(eu.Used)).To(Equal(framework.Canonical(list("cpu", "3"))))
		}).WithTimeout(10 * time.Second).Should(Succeed())

		By("member3 relabelled into the EU: the group counts it, without any binding changing")
		c := &clusterv1alpha1.Cluster{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: "member3"}, c)).To(Succeed())
		c.Labels["region"] = "eu"
		Expect(k8s.Update(ctx, c)).To(Succeed())
		Eventually(func(g Gomega) {
			eu := getQuota(ns, "team").Status.ClusterGroups[0]
			g.Expect(eu.Clusters).To(Equal([]string{"member1", "member2", "member3"}))
			g.Expect(framework.Canonical(eu.Used)).To(Equal(framework.Canonical(list("cpu", "7"))))
		}).WithTimeout(10 * time.Second).Should(Succeed())
	})
})

var _ = Describe("A ledger whose observed cluster usage cannot be read", func() {
	It("is recounted and written anew, the quota staying ready", func() {
		startController(controller.Options{}, 0)
		ns := newNamespace()
		q := testenv.Quota(ns, "team", list("cpu", "100"))
		q.Spec.Clusters = []quotav1alpha1.ClusterLimit{{Name: "member1", Hard: list("cpu", "4")}}
		Expect(k8s.Create(ctx, q)).To(Succeed())
		web := mustCreate(utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")))
		Expect(place(web, cluster("member1", 2))).To(Succeed())

		ledger := &unstructured.Unstructured{}
		ledger.SetGroupVersionKind(quotav1alpha1.GroupVersion.WithKind("KarmadaQuotaLedger"))
		key := client.ObjectKey{Namespace: ns, Name: q.Name}
		observedOnClusters := func(g Gomega) []any {
			g.Expect(k8s.Get(ctx, key, ledger)).To(Succeed())
			clusters, _, err := unstructured.NestedSlice(ledger.Object, "observed", "clusters")
			g.Expect(err).NotTo(HaveOccurred())
			return clusters
		}
		Eventually(observedOnClusters).WithTimeout(10*time.Second).Should(Equal([]any{"member1:cpu=2"}), "written as one string")

		By("member1's observed usage made no quantity (hand-edited: the schema takes any entry there)")
		Eventually(func(g Gomega) {
			observedOnClusters(g)
			g.Expect(unstructured.SetNestedSlice(ledger.Object, []any{"member1:cpu=lots"}, "observed", "clusters")).To(Succeed())
			g.Expect(k8s.Update(ctx, ledger)).To(Succeed())
		}).Should(Succeed())
		Eventually(observedOnClusters).WithTimeout(10*time.Second).Should(Equal([]any{"member1:cpu=2"}), "recounted and written anew")
		ready := meta.FindStatusCondition(getQuota(ns, "team").Status.Conditions, quotav1alpha1.ConditionReady)
		Expect(ready).NotTo(BeNil())
		Expect(ready.Status).To(Equal(metav1.ConditionTrue), "%+v", ready)
	})
})
