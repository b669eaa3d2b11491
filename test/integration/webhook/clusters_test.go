package webhook

import (
	"fmt"
	"sync"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

// Limits on member clusters and on groups of them, decided by two webhook replicas that read the clusters' labels
// from their own informers.
var _ = Describe("Cluster and group limits", func() {
	var ns string

	// joined registers member clusters as Karmada's Cluster objects, with labels.
	joined := func(region map[string]string) {
		for name, r := range region {
			c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"region": r}},
				Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push}}
			Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, c))).To(Succeed())
			DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, c))).To(Succeed()) })
		}
	}
	capped := func() *quotav1alpha1.KarmadaQuota {
		q := quota(ns, "team", list("cpu", "100"))
		q.Spec.Clusters = []quotav1alpha1.ClusterLimit{{Name: "member1", Hard: list("cpu", "2")}}
		q.Spec.ClusterGroups = []quotav1alpha1.ClusterGroupLimit{{Name: "eu",
			ClusterSelector: metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}}, Hard: list("cpu", "3")}}
		return q
	}
	BeforeEach(func() {
		ns = newNamespace()
		joined(map[string]string{"member1": "eu", "member2": "eu", "member3": "us"})
	})

	It("refuses what a cluster or a group cannot take, naming it, and admits moves to clusters with room", func() {
		createQuota(capped())
		web := mustCreateBinding(utiltesting.MakeBinding(ns, "web").Requests(requests("1", "")))
		status := expectQuotaExceeded(place(web, cluster("member1", 3)))
		Expect(status.ErrStatus.Message).To(ContainSubstring("cpu in cluster member1: requested 3, used 0, reserved 0, hard 2"))
		status = expectQuotaExceeded(place(web, cluster("member1", 2), cluster("member2", 2)))
		Expect(status.ErrStatus.Message).To(ContainSubstring("cpu in cluster group eu: requested 4, used 0, reserved 0, hard 3"))
		Expect(place(web, cluster("member1", 2), cluster("member3", 10))).To(Succeed(), "room on member1 and outside the group")
		Expect(place(web, cluster("member1", 1), cluster("member3", 11))).To(Succeed(), "a move off the capped cluster")
		// A move onto it grows nothing federation-wide, and is growth there.
		status = expectQuotaExceeded(place(web, cluster("member1", 3), cluster("member3", 9)))
		Expect(status.ErrStatus.Message).To(ContainSubstring("cpu in cluster member1: requested 2"))
	})

	It("never places more on a capped cluster than its limit under a concurrent burst", func() {
		createQuota(capped())
		const writers = 24
		bindings := make([]*workv1alpha2.ResourceBinding, writers)
		for i := range bindings {
			bindings[i] = mustCreateBinding(utiltesting.MakeBinding(ns, fmt.Sprintf("web-%02d", i)).Requests(requests("500m", "")))
		}
		var (
			wg                 sync.WaitGroup
			mu                 sync.Mutex
			admitted, exceeded int
			others             []error
		)
		start := make(chan struct{})
		for _, rb := range bindings {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer GinkgoRecover()
				<-start
				err := place(rb, cluster("member1", 1))
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					admitted++
				case apierrors.ReasonForError(err) == "QuotaExceeded":
					exceeded++
				default:
					others = append(others, err)
				}
			}()
		}
		close(start)
		wg.Wait()
		Expect(others).To(BeEmpty())
		Expect(admitted).To(Equal(4), "2 CPU on member1 at 500m each")
		Expect(exceeded).To(Equal(writers - 4))
		q := getQuota(ns, "team")
		var onMember1 int64
		for _, r := range getLedger(q.Namespace, q.Name).Reservations {
			for _, c := range r.Clusters {
				if c.Name == "member1" {
					onMember1 += c.Reserved.Cpu().MilliValue()
				}
			}
		}
		Expect(onMember1).To(Equal(int64(2000)), "what the admitted writes reserved on member1")
	})

	It("follows a cluster relabelled into a group", func() {
		createQuota(capped())
		api := mustCreateBinding(utiltesting.MakeBinding(ns, "api").Requests(requests("1", "")))
		Expect(place(api, cluster("member3", 4))).To(Succeed(), "member3 is not in the EU group")
		c := &clusterv1alpha1.Cluster{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: "member3"}, c)).To(Succeed())
		c.Labels["region"] = "eu"
		Expect(k8s.Update(ctx, c)).To(Succeed())
		web := mustCreateBinding(utiltesting.MakeBinding(ns, "web").Requests(requests("1", "")))
		Eventually(func() error { return place(web, cluster("member3", 1)) }).Should(MatchError(ContainSubstring("cpu in cluster group eu")),
			"4 reserved on member3, now in the EU group of 3")
	})
})
