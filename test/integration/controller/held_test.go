package controller

import (
	"time"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/internal/testenv"
	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/controller"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
	"github.com/karmada-quota/karmada-quota/test/integration/framework"
)

var _ = Describe("What members hold, and failover, in status", func() {
	It("counts a claim on each member from its template, and shows replicas kept through an eviction until they go", func() {
		startController(controller.Options{EvictionTimeout: 5 * time.Minute}, 0)
		ns := newNamespace()
		Expect(k8s.Create(ctx, testenv.Quota(ns, "team", list("cpu", "10", "requests.storage", "10Gi", "persistentvolumeclaims", "10")))).To(Succeed())

		pvc := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data"},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("3Gi")}},
			},
		}
		Expect(k8s.Create(ctx, pvc)).To(Succeed())
		b := utiltesting.MakeBinding(ns, "data-persistentvolumeclaim").Resource("v1", "PersistentVolumeClaim")
		b.Spec.Resource.Name, b.Spec.Resource.UID, b.Spec.Resource.ResourceVersion = pvc.Name, pvc.UID, pvc.ResourceVersion
		claim := mustCreate(b)
		Expect(place(claim, cluster("member1", 0), cluster("member2", 0))).To(Succeed())

		web := mustCreate(utiltesting.MakeBinding(ns, "web").Replicas(4).Requests(list("cpu", "500m")))
		Expect(place(web, cluster("member1", 2), cluster("member2", 2))).To(Succeed())
		Eventually(func(g Gomega) {
			q := getQuota(ns, "team")
			g.Expect(framework.Canonical(q.Status.Used)).To(Equal(framework.Canonical(list("cpu", "2", "requests.storage", "6Gi", "persistentvolumeclaims", "2"))))
			g.Expect(clustersOf(q)).To(Equal(map[string]string{
				"member1": framework.Canonical(list("cpu", "1", "requests.storage", "3Gi", "persistentvolumeclaims", "1")),
				"member2": framework.Canonical(list("cpu", "1", "requests.storage", "3Gi", "persistentvolumeclaims", "1")),
			}))
		}).WithTimeout(10 * time.Second).Should(Succeed())

		// member1 is evicted gracefully with a grace period of 2 minutes, and the replicas replaced on member2.
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(web), web)).To(Succeed())
		evicted := utiltesting.MakeBinding(ns, web.Name).Cluster("member1", 2).Cluster("member2", 2).Evict("member1", ptr.To[int32](120), false).Obj()
		made := metav1.NewTime(time.Now().UTC().Truncate(time.Second))
		evicted.Spec.GracefulEvictionTasks[0].CreationTimestamp = &made
		web.Spec.GracefulEvictionTasks = evicted.Spec.GracefulEvictionTasks
		web.Spec.Clusters = []workv1alpha2.TargetCluster{cluster("member2", 4)}
		Expect(k8s.Update(ctx, web)).To(Succeed())
		Eventually(func(g Gomega) {
			q := getQuota(ns, "team")
			g.Expect(q.Status.Used.Cpu().String()).To(Equal("3"), "what runs: 2 on member2 replaced, 1 kept on member1")
			m1 := clusterStatus(q, "member1")
			g.Expect(m1).NotTo(BeNil())
			g.Expect(framework.Canonical(m1.Evicting)).To(Equal(framework.Canonical(list("cpu", "1"))))
			g.Expect(m1.EvictingUntil).NotTo(BeNil())
			g.Expect(m1.EvictingUntil.Time).To(BeTemporally("==", made.Add(2*time.Minute)))
			g.Expect(clusterStatus(q, "member2").Evicting).To(BeNil())
		}).WithTimeout(10 * time.Second).Should(Succeed())
		// Exported as the recount that wrote the status is recorded, a moment after the write.
		Eventually(scrape).WithTimeout(2 * time.Second).Should(ContainSubstring(`karmada_quota_cluster_evicting{cluster="member1",namespace="` + ns + `",quota="team",resource="cpu"} 1`))

		// The task ends: the evicting replicas leave the status.
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(web), web)).To(Succeed())
		web.Spec.GracefulEvictionTasks = nil
		Expect(k8s.Update(ctx, web)).To(Succeed())
		Eventually(func(g Gomega) {
			q := getQuota(ns, "team")
			g.Expect(q.Status.Used.Cpu().String()).To(Equal("2"))
			g.Expect(clusterStatus(q, "member1").Evicting).To(BeNil())
			g.Expect(clusterStatus(q, "member1").EvictingUntil).To(BeNil())
		}).WithTimeout(10 * time.Second).Should(Succeed())
	})
})

func clusterStatus(q *quotav1alpha1.KarmadaQuota, name string) *quotav1alpha1.ClusterUsage {
	for i := range q.Status.Clusters {
		if q.Status.Clusters[i].Name == name {
			return &q.Status.Clusters[i]
		}
	}
	return nil
}
