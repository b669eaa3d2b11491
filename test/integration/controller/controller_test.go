package controller

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	workv1alpha1 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"github.com/karmada-io/karmada/pkg/util/names"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/karmada-quota/karmada-quota/internal/testenv"
	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/controller"
	"github.com/karmada-quota/karmada-quota/pkg/metrics"
	"github.com/karmada-quota/karmada-quota/pkg/quota"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
	"github.com/karmada-quota/karmada-quota/pkg/webhookconfig"
	"github.com/karmada-quota/karmada-quota/test/integration/framework"
)

var (
	list    = framework.List
	cluster = framework.Cluster
)

func newNamespace() string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "controller-"}}
	Expect(k8s.Create(ctx, ns)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, ns))).To(Succeed()) })
	return ns.Name
}

// requestsCPU is the name the quota ledger counts cpu under, in millicores.
const requestsCPU corev1.ResourceName = "requests.cpu"

func getQuota(ns, name string) *quotav1alpha1.KarmadaQuota {
	GinkgoHelper()
	var q quotav1alpha1.KarmadaQuota
	Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &q)).To(Succeed())
	return &q
}

// reservationsListed is how many reservations the quota's ledger lists (the webhook adds them, the controller
// settles them).
func reservationsListed(ns, name string) int {
	GinkgoHelper()
	stored, err := framework.Ledger(ctx, k8s, ns, name)
	Expect(err).NotTo(HaveOccurred())
	return len(stored.Reservations)
}

// createRecounted creates a quota of hardCPU CPU and waits until the controller has recounted it (its Ready
// condition is set).
func createRecounted(ns, name string, hardCPU int) {
	GinkgoHelper()
	Expect(k8s.Create(ctx, testenv.Quota(ns, name, list("cpu", fmt.Sprint(hardCPU))))).To(Succeed())
	Eventually(func() *metav1.Condition {
		return meta.FindStatusCondition(getQuota(ns, name).Status.Conditions, quotav1alpha1.ConditionReady)
	}).WithTimeout(10 * time.Second).ShouldNot(BeNil())
}

func mustCreate(b *utiltesting.BindingWrapper) *workv1alpha2.ResourceBinding {
	GinkgoHelper()
	rb, err := testenv.CreateBinding(ctx, k8s, b)
	Expect(err).NotTo(HaveOccurred())
	return rb
}

func place(rb *workv1alpha2.ResourceBinding, clusters ...workv1alpha2.TargetCluster) error {
	return framework.Place(ctx, k8s, rb, nil, clusters...)
}

// trueUsage is what the namespace's bindings use under an unscoped quota, computed by the design's usage
// function from a direct read of the apiserver: the reference the quota's status must agree with.
func trueUsage(ns string, hard corev1.ResourceList) (corev1.ResourceList, map[string]corev1.ResourceList) {
	GinkgoHelper()
	var bindings workv1alpha2.ResourceBindingList
	Expect(k8s.List(ctx, &bindings, client.InNamespace(ns))).To(Succeed())
	total, clusters := resources.List{}, map[string]resources.List{}
	for i := range bindings.Items {
		u, err := usage.Of(&bindings.Items[i])
		Expect(err).NotTo(HaveOccurred())
		c := u.Charge(usage.Selector{})
		total.Add(c.Total)
		for name, l := range c.Clusters {
			if clusters[name] == nil {
				clusters[name] = resources.List{}
			}
			clusters[name].Add(l)
		}
	}
	render := func(l resources.List) corev1.ResourceList {
		out := corev1.ResourceList{}
		for name := range hard {
			canonical, _, err := resources.Canonical(name)
			Expect(err).NotTo(HaveOccurred())
			out[name] = resources.Quantity(canonical, l[canonical])
		}
		return out
	}
	// Per cluster, what is placed there: compute and pods, not the federation-wide object counts.
	perCluster := map[string]corev1.ResourceList{}
	for name, l := range clusters {
		perCluster[name] = corev1.ResourceList{}
		for resourceName := range hard {
			canonical, _, _ := resources.Canonical(resourceName)
			if v, ok := l[canonical]; ok {
				perCluster[name][resourceName] = resources.Quantity(canonical, v)
			}
		}
	}
	return render(total), perCluster
}

func clustersOf(q *quotav1alpha1.KarmadaQuota) map[string]string {
	out := map[string]string{}
	for _, c := range q.Status.Clusters {
		out[c.Name] = framework.Canonical(c.Used)
	}
	return out
}

var _ = Describe("Usage", func() {
	It("equals the usage function summed over the namespace's bindings, total and per member cluster", func() {
		startController(controller.Options{}, 0)
		ns := newNamespace()
		hard := list("cpu", "100", "memory", "100Gi", "pods", "100", "count/deployments.apps", "20", "services", "5", "nvidia.com/gpu", "8")

		// Divided, Duplicated, a multi-component workload, an unscheduled one, and object counts.
		divided := mustCreate(utiltesting.MakeBinding(ns, "divided").Requests(list("cpu", "250m", "memory", "256Mi")))
		Expect(place(divided, cluster("member1", 3), cluster("member2", 1))).To(Succeed())
		duplicated := mustCreate(utiltesting.MakeBinding(ns, "duplicated").Requests(list("cpu", "1", "memory", "1Gi", "nvidia.com/gpu", "1")))
		Expect(place(duplicated, cluster("member1", 2), cluster("member2", 2), cluster("member3", 2))).To(Succeed())
		flink := mustCreate(utiltesting.MakeBinding(ns, "flink").Resource("flink.apache.org/v1beta1", "FlinkDeployment").
			Component("jobmanager", 1, list("cpu", "1", "memory", "2Gi")).Component("taskmanager", 3, list("cpu", "2", "memory", "4Gi")))
		Expect(place(flink, cluster("member2", 0), cluster("member3", 0))).To(Succeed())
		mustCreate(utiltesting.MakeBinding(ns, "unscheduled").Requests(list("cpu", "8", "memory", "1Gi")))
		mustCreate(utiltesting.MakeBinding(ns, "svc").Resource("v1", "Service"))

		// The quota comes after the workloads: it must count them at once.
		Expect(k8s.Create(ctx, testenv.Quota(ns, "team", hard))).To(Succeed())

		wantUsed, wantClusters := trueUsage(ns, hard)
		Expect(framework.Canonical(wantUsed)).To(Equal(framework.Canonical(list(
			"cpu", "21", "memory", "35Gi", "pods", "18", "count/deployments.apps", "3", "services", "1", "nvidia.com/gpu", "6",
		))), "the reference itself: cpu 4×250m + 6×1 + 2×(1+3×2); 3 deployments, the unscheduled one included")
		Eventually(func(g Gomega) {
			q := getQuota(ns, "team")
			g.Expect(framework.Canonical(q.Status.Used)).To(Equal(framework.Canonical(wantUsed)))
			g.Expect(framework.Canonical(q.Status.Hard)).To(Equal(framework.Canonical(hard)))
			want := map[string]string{}
			for name, l := range wantClusters {
				want[name] = framework.Canonical(l)
			}
			// Object counts are federation-wide; per cluster the compute and pods.
			g.Expect(clustersOf(q)).To(HaveLen(3))
			for name, got := range clustersOf(q) {
				g.Expect(got).To(Equal(want[name]), "cluster %s", name)
			}
			g.Expect(reservationsListed(ns, "team")).To(BeZero(), "every admitted write was observed")
			g.Expect(q.Status.ObservedGeneration).To(Equal(q.Generation))
			ready := meta.FindStatusCondition(q.Status.Conditions, quotav1alpha1.ConditionReady)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(q.Status.Summary).To(ContainSubstring("cpu: 21/100"))
			g.Expect(q.Status.Summary).To(ContainSubstring("memory: 35Gi/100Gi"))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		// Nothing was admitted: the quota's first count is its status alone. It has no ledger; the webhook decides
		// on the status until the first admission that reserves creates one.
		var ledger quotav1alpha1.KarmadaQuotaLedger
		Expect(apierrors.IsNotFound(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "team"}, &ledger))).
			To(BeTrue(), "a ledger was made for a quota nothing is reserved on")

		// Nothing changed: a recount writes nothing.
		rv := getQuota(ns, "team").ResourceVersion
		patch := []byte(`{"spec":{"schedulerName":"default-scheduler"}}`)
		Expect(k8s.Patch(ctx, divided, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
		Consistently(func() string { return getQuota(ns, "team").ResourceVersion }).
			WithTimeout(2*time.Second).Should(Equal(rv), "a recount that changes nothing must not write")

		// The quota's series are exported at scrape time, and vanish with it.
		// Exported as the recount that wrote the status is recorded, a moment after the write.
		Eventually(scrape).WithTimeout(2 * time.Second).Should(ContainSubstring(`karmada_quota_used{namespace="` + ns + `",quota="team",resource="cpu"} 21`))
		Expect(scrape()).To(ContainSubstring(`karmada_quota_cluster_used{cluster="member1",namespace="` + ns + `",quota="team",resource="cpu"} 2.75`))
		Expect(k8s.Delete(ctx, getQuota(ns, "team"))).To(Succeed())
		Eventually(func() string { return scrape() }).WithTimeout(5*time.Second).ShouldNot(ContainSubstring(`namespace="`+ns+`"`),
			"a deleted quota leaves no series behind")
	})

	It("frees a deleted binding's usage in seconds, without waiting for the resync", func() {
		startController(controller.Options{}, 0)
		ns := newNamespace()
		Expect(k8s.Create(ctx, testenv.Quota(ns, "team", list("cpu", "10")))).To(Succeed())
		rb := mustCreate(utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")))
		Expect(place(rb, cluster("member1", 4))).To(Succeed())
		Eventually(func() string { return getQuota(ns, "team").Status.Used.Cpu().String() }).WithTimeout(5 * time.Second).Should(Equal("4"))

		deleted := time.Now()
		Expect(k8s.Delete(ctx, rb)).To(Succeed())
		Eventually(func() string { return getQuota(ns, "team").Status.Used.Cpu().String() }).
			WithTimeout(5 * time.Second).WithPolling(10 * time.Millisecond).Should(Equal("0"))
		AddReportEntry("binding delete to freed usage", time.Since(deleted).String())
		GinkgoWriter.Println("binding delete to freed usage:", time.Since(deleted))
	})

	It("tells when it has recounted every quota it found on starting, once", func() {
		ns := newNamespace()
		Expect(k8s.Create(ctx, testenv.Quota(ns, "team", list("cpu", "10")))).To(Succeed())
		rb := mustCreate(utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")))
		Expect(place(rb, cluster("member1", 3))).To(Succeed())

		var calls atomic.Int32
		var usedThen atomic.Value
		startController(controller.Options{FirstPassDone: func() {
			// Read past any cache: what the first pass wrote. Counted after, so that the spec reads what was read.
			defer calls.Add(1)
			var q quotav1alpha1.KarmadaQuota
			if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "team"}, &q); err != nil {
				usedThen.Store(err.Error())
				return
			}
			usedThen.Store(q.Status.Used.Cpu().String())
		}}, 0)
		Eventually(calls.Load).WithTimeout(10 * time.Second).Should(Equal(int32(1)))
		Expect(usedThen.Load()).To(Equal("3"), "the quota found at the start was recounted before")

		// Later recounts call nothing more.
		Expect(place(rb, cluster("member1", 4))).To(Succeed())
		Eventually(func() string { return getQuota(ns, "team").Status.Used.Cpu().String() }).WithTimeout(5 * time.Second).Should(Equal("4"))
		Consistently(calls.Load).WithTimeout(time.Second).Should(Equal(int32(1)))
	})

	It("repairs a hand-edited status at the periodic resync and counts the repair", func() {
		startController(controller.Options{ResyncPeriod: time.Second}, 0)
		ns := newNamespace()
		Expect(k8s.Create(ctx, testenv.Quota(ns, "team", list("cpu", "10")))).To(Succeed())
		rb := mustCreate(utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")))
		Expect(place(rb, cluster("member1", 2))).To(Succeed())
		Eventually(func() string { return getQuota(ns, "team").Status.Used.Cpu().String() }).WithTimeout(5 * time.Second).Should(Equal("2"))

		repairedBefore := testutil.ToFloat64(metrics.DriftRepaired)
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			q := getQuota(ns, "team")
			q.Status.Used = list("cpu", "7")
			return k8s.Status().Update(ctx, q)
		})).To(Succeed())
		Eventually(func() string { return getQuota(ns, "team").Status.Used.Cpu().String() }).WithTimeout(5 * time.Second).Should(Equal("2"))
		Eventually(func() float64 { return testutil.ToFloat64(metrics.DriftRepaired) - repairedBefore }).
			WithTimeout(2 * time.Second).Should(BeNumerically(">=", 1))
	})
})

var _ = Describe("Reservations", func() {
	It("are settled in the same write that counts the binding", func() {
		startController(controller.Options{}, 0)
		ns := newNamespace()
		Expect(k8s.Create(ctx, testenv.Quota(ns, "team", list("cpu", "10", "count/deployments.apps", "5")))).To(Succeed())
		rb := mustCreate(utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "500m")))
		Expect(place(rb, cluster("member1", 2), cluster("member2", 2))).To(Succeed())
		Eventually(func(g Gomega) {
			q := getQuota(ns, "team")
			g.Expect(reservationsListed(ns, "team")).To(BeZero())
			g.Expect(framework.Canonical(q.Status.Used)).To(Equal(framework.Canonical(list("cpu", "2", "count/deployments.apps", "1"))))
			g.Expect(framework.Canonical(q.Status.Reserved)).To(Equal(framework.Canonical(list("cpu", "0", "count/deployments.apps", "0"))))
		}).WithTimeout(5 * time.Second).Should(Succeed())
	})

	It("of a Work asking more than its binding places are settled in the write that charges the Work", func() {
		startController(controller.Options{}, 0)
		// What Karmada's binding controller renders for member1 under an OverridePolicy setting 2 CPU there.
		ns, _, work := webWithWork("2")

		// member1 runs 4 CPU where 2 are placed, member2 the 2 placed: 6 used, nothing left reserved.
		Eventually(func(g Gomega) {
			q := getQuota(ns, "team")
			g.Expect(reservationsListed(ns, "team")).To(BeZero())
			g.Expect(framework.Canonical(q.Status.Used)).To(Equal(framework.Canonical(list("cpu", "6"))))
			g.Expect(clustersOf(q)).To(Equal(map[string]string{
				"member1": framework.Canonical(list("cpu", "4")), "member2": framework.Canonical(list("cpu", "2")),
			}))
		}).WithTimeout(5 * time.Second).Should(Succeed())

		// Gone, the Work is charged no more: its binding's placement is.
		Expect(k8s.Delete(ctx, work)).To(Succeed())
		Eventually(func() string { return getQuota(ns, "team").Status.Used.Cpu().String() }).WithTimeout(5 * time.Second).Should(Equal("4"))
	})

	It("of a binding back on a member before Karmada rewrote its old Work there charge the placement, not the old Work", func() {
		startController(controller.Options{}, 0)
		ns, rb, work := webWithWork("1")
		usedCPU := func() string { return getQuota(ns, "team").Status.Used.Cpu().String() }
		Eventually(usedCPU).WithTimeout(5 * time.Second).Should(Equal("4"))

		By("the binding leaves member1; Karmada has not deleted the Work there yet: its room is given back")
		Expect(place(rb, cluster("member2", 2))).To(Succeed())
		Eventually(usedCPU).WithTimeout(5 * time.Second).Should(Equal("2"))

		By("back on member1 with 1 replica before Karmada deleted or rewrote that Work: charged the placement")
		Expect(place(rb, cluster("member1", 1), cluster("member2", 2))).To(Succeed())
		Eventually(usedCPU).WithTimeout(5 * time.Second).Should(Equal("3"))
		Consistently(usedCPU).WithTimeout(2 * time.Second).Should(Equal("3"))

		By("not rewritten within the bound, the old Work is charged as it asks: the member runs it")
		clock.Step(11 * time.Second)
		touch(ns, "team")
		Eventually(usedCPU).WithTimeout(5 * time.Second).Should(Equal("4"))

		By("rewritten by Karmada to the placement, it asks no more than that")
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			current := &workv1alpha1.Work{}
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(work), current); err != nil {
				return err
			}
			current.Spec = renderedWork(ns, rb, work.Namespace, 1, "1").Spec
			return k8s.Update(ctx, current)
		})).To(Succeed())
		Eventually(usedCPU).WithTimeout(5 * time.Second).Should(Equal("3"))
	})

	It("of a write that failed after admission are held until they expire, then dropped", func() {
		startController(controller.Options{}, 0)
		ns := newNamespace()
		Expect(k8s.Create(ctx, testenv.Quota(ns, "team", list("count/deployments.apps", "5")))).To(Succeed())
		// A second validating webhook that fails every binding write in this namespace: the apiserver calls it
		// alongside ours, so our reservation is written and the write is refused anyway.
		failing := webhookconfig.Configuration(webhooks.URL+"/nothing-here", webhooks.CA, webhookconfig.DefaultTimeoutSeconds)
		failing.Name = "fails-after-quota-" + ns
		failing.Webhooks = failing.Webhooks[:1]
		failing.Webhooks[0].Name = "fails.example.io"
		failing.Webhooks[0].NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}}
		Expect(k8s.Create(ctx, failing)).To(Succeed())
		DeferCleanup(func() { Expect(k8s.Delete(ctx, failing)).To(Succeed()) })
		attempt := 0
		Eventually(func() error {
			attempt++
			_, err := testenv.CreateBinding(ctx, k8s, utiltesting.MakeBinding(ns, fmt.Sprintf("never-%d", attempt)))
			return err
		}).WithTimeout(10*time.Second).Should(HaveOccurred(), "the failing webhook takes effect")
		Expect(apierrors.IsNotFound(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: fmt.Sprintf("never-%d", attempt)}, &workv1alpha2.ResourceBinding{}))).To(BeTrue())
		// Writes admitted before the failing webhook took effect were stored and are counted, not reserved.
		Eventually(func() int { return reservationsListed(ns, "team") }).WithTimeout(5 * time.Second).Should(Equal(1))
		// Recounts before expiry keep it: the write might still be in flight.
		touch(ns, "team")
		Consistently(func() int { return reservationsListed(ns, "team") }).WithTimeout(2 * time.Second).Should(Equal(1))

		expiredBefore := testutil.ToFloat64(metrics.ReservationsExpired)
		clock.Step(3 * time.Minute)
		touch(ns, "team")
		Eventually(func() int { return reservationsListed(ns, "team") }).WithTimeout(5 * time.Second).Should(Equal(0))
		// Counted right after the write that dropped it lands.
		Eventually(func() float64 { return testutil.ToFloat64(metrics.ReservationsExpired) - expiredBefore }).
			WithTimeout(2 * time.Second).Should(Equal(1.0))
	})

	// The reservations proposal's race: a controller recounting from a lagging cache must never erase an
	// admission. Bindings are admitted and scaled up concurrently while the controller's binding informer lags;
	// at every sample, what the bindings use is within hard and within what the quota counts (used + reserved).
	It("are never lost to a lagging informer: the admitted sum stays within hard and within used + reserved", func() {
		// Every binding event is held 20ms before the controller's cache sees it, so during the burst the cache
		// falls seconds behind; the controller recounts every 100ms on top of the events, on that stale cache.
		// (A controller that dropped reservations without seeing their write fails this at once.)
		startController(controller.Options{Workers: 4, ResyncPeriod: 100 * time.Millisecond}, 20*time.Millisecond)
		ns := newNamespace()
		const hardCPU = 40
		// The burst starts once the controller is recounting this quota.
		createRecounted(ns, "team", hardCPU)

		var (
			stop     atomic.Bool
			samples  atomic.Int64
			failures []string
			mu       sync.Mutex
		)
		sampler := make(chan struct{})
		go func() {
			defer close(sampler)
			defer GinkgoRecover()
			for !stop.Load() {
				// Bindings first, ledger second: every binding in the list was admitted before it was stored, so
				// by the time the ledger is read its reservation is still there or already counted in used (the
				// ledger holds both, written together).
				admitted, _ := trueUsage(ns, list("cpu", "0"))
				q := getQuota(ns, "team")
				stored, err := framework.Ledger(ctx, k8s, ns, "team")
				Expect(err).NotTo(HaveOccurred())
				l, err := quota.NewLedger(q, quota.LedgerOf(stored, q))
				Expect(err).NotTo(HaveOccurred())
				used, reserved := l.Used()[requestsCPU], l.Reserved()[requestsCPU]
				samples.Add(1)
				if admitted.Cpu().MilliValue() > int64(hardCPU)*1000 || admitted.Cpu().MilliValue() > used+reserved {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("admitted %s, used %dm + reserved %dm, hard %d",
						admitted.Cpu(), used, reserved, hardCPU))
					mu.Unlock()
				}
			}
		}()

		recountsBefore := recounts()
		var writers sync.WaitGroup
		for w := 0; w < 8; w++ {
			writers.Add(1)
			go func(w int) {
				defer writers.Done()
				defer GinkgoRecover()
				for i := 0; i < 4; i++ {
					rb, err := testenv.CreateBinding(ctx, k8s, utiltesting.MakeBinding(ns, fmt.Sprintf("w%d-%d", w, i)).Requests(list("cpu", "500m")))
					Expect(err).NotTo(HaveOccurred())
					// Only ever up: the invariant compares a binding list read before the quota.
					for replicas := int32(1); replicas <= 3; replicas++ {
						// Paced, so that the controller's status writes get between the webhook's.
						time.Sleep(50 * time.Millisecond)
						err := place(rb, cluster("member1", replicas))
						if err != nil {
							Expect(apierrors.ReasonForError(err)).To(Equal(metav1.StatusReason("QuotaExceeded")), "%v", err)
							break
						}
					}
				}
			}(w)
		}
		writers.Wait()
		stop.Store(true)
		<-sampler
		Expect(failures).To(BeEmpty(), "an admission went uncounted or over hard")
		recountsDuring := recounts() - recountsBefore
		Expect(recountsDuring).To(BeNumerically(">=", 5), "the controller hardly recounted during the burst: the race was never exercised")
		Expect(samples.Load()).To(BeNumerically(">", 10))

		admitted, _ := trueUsage(ns, list("cpu", "0"))
		Expect(admitted.Cpu().Value()).To(BeNumerically(">=", hardCPU-1), "the quota filled up (to within one 500m step)")
		Eventually(func(g Gomega) {
			q := getQuota(ns, "team")
			g.Expect(reservationsListed(ns, "team")).To(BeZero())
			g.Expect(q.Status.Used.Cpu().Cmp(*admitted.Cpu())).To(Equal(0), "settled: used equals what the bindings use")
		}).WithTimeout(15 * time.Second).Should(Succeed())
		AddReportEntry("lagging informer", fmt.Sprintf("%d samples, %d recounts during the burst, admitted %s of %d", samples.Load(), recountsDuring, admitted.Cpu(), hardCPU))
	})

	// The other order: the controller sees a binding write before the reservation its admission wrote a moment
	// earlier (the informers of bindings and of ledgers are not ordered with each other; a karmada-apiserver
	// restart re-lists them one after the other). A settle that counts that write and keeps the reservation it did
	// not read charges the admission twice, and a full quota reads over hard.
	It("are never charged beside the usage they reserved when the ledger informer lags: used + reserved stays within hard", func() {
		startLagging(controller.Options{Workers: 4}, framework.Lag{Ledgers: 100 * time.Millisecond})
		ns := newNamespace()
		const hardCPU = 10
		createRecounted(ns, "team", hardCPU)

		var (
			stop          atomic.Bool
			samples, over atomic.Int64
			firstOver     string
			burstStart    = time.Now()
		)
		sampler := make(chan struct{})
		go func() {
			defer close(sampler)
			defer GinkgoRecover()
			for !stop.Load() {
				q := getQuota(ns, "team")
				stored, err := framework.Ledger(ctx, k8s, ns, "team")
				Expect(err).NotTo(HaveOccurred())
				l, err := quota.NewLedger(q, quota.LedgerOf(stored, q))
				Expect(err).NotTo(HaveOccurred())
				samples.Add(1)
				if sum := l.Used()[requestsCPU] + l.Reserved()[requestsCPU]; sum > hardCPU*1000 && over.Add(1) == 1 {
					firstOver = fmt.Sprintf("ledger resourceVersion %s: used %dm + reserved %dm (%d reservations), hard %d, %s into the burst",
						stored.ResourceVersion, l.Used()[requestsCPU], l.Reserved()[requestsCPU], len(stored.Reservations), hardCPU,
						time.Since(burstStart).Round(time.Millisecond))
				}
				time.Sleep(5 * time.Millisecond)
			}
		}()

		var writers sync.WaitGroup
		for w := 0; w < 4; w++ {
			writers.Add(1)
			go func(w int) {
				defer writers.Done()
				defer GinkgoRecover()
				for i := 0; i < 3; i++ {
					rb := mustCreate(utiltesting.MakeBinding(ns, fmt.Sprintf("w%d-%d", w, i)).Requests(list("cpu", "500m")))
					for replicas := int32(1); replicas <= 3; replicas++ {
						// Paced past the controller's settle interval, so that it recounts between admissions.
						time.Sleep(150 * time.Millisecond)
						if err := place(rb, cluster("member1", replicas)); err != nil {
							Expect(apierrors.ReasonForError(err)).To(Equal(metav1.StatusReason("QuotaExceeded")), "%v", err)
							break
						}
					}
				}
			}(w)
		}
		writers.Wait()
		// The last admissions' settles, while the ledger informer catches up.
		time.Sleep(2 * time.Second)
		stop.Store(true)
		<-sampler
		Expect(samples.Load()).To(BeNumerically(">", 100))
		Expect(over.Load()).To(BeZero(), "a reservation was charged beside the usage it reserved; first: %s", firstOver)

		admitted, _ := trueUsage(ns, list("cpu", "0"))
		Expect(admitted.Cpu().Value()).To(BeNumerically(">=", hardCPU-1), "the quota filled up (to within one 500m step)")
		Eventually(func(g Gomega) {
			g.Expect(reservationsListed(ns, "team")).To(BeZero())
			g.Expect(getQuota(ns, "team").Status.Used.Cpu().Cmp(*admitted.Cpu())).To(Equal(0), "settled: used equals what the bindings use")
		}).WithTimeout(15 * time.Second).Should(Succeed())
	})
})

var _ = Describe("Waiting bindings", func() {
	It("are requeued when usage drops, higher priority first, only as many as now fit", func() {
		startController(controller.Options{RequeueCooldown: time.Minute}, 0)
		ns := newNamespace()
		Expect(k8s.Create(ctx, testenv.Quota(ns, "team", list("cpu", "2")))).To(Succeed())
		big := mustCreate(utiltesting.MakeBinding(ns, "big").Requests(list("cpu", "1")))
		Expect(place(big, cluster("member1", 2))).To(Succeed())

		waiting := map[string]int32{"high": 100, "middle": 50, "low": 1}
		for name, priority := range waiting {
			rb := mustCreate(utiltesting.MakeBinding(ns, name).Requests(list("cpu", "1")).Replicas(1))
			rb.Spec.SchedulePriority = &workv1alpha2.SchedulePriority{Priority: priority}
			Expect(k8s.Update(ctx, rb)).To(Succeed())
			// What Karmada's scheduler records when our webhook refuses its placement.
			Expect(expectRefused(place(rb.DeepCopy(), cluster("member1", 1)))).To(Succeed())
			rb.Status.Conditions = []metav1.Condition{{
				Type: workv1alpha2.Scheduled, Status: metav1.ConditionFalse, Reason: workv1alpha2.BindingReasonQuotaExceeded,
				Message: "exceeded quota: team", LastTransitionTime: metav1.Now(),
			}}
			Expect(k8s.Status().Update(ctx, rb)).To(Succeed())
		}
		requeuedBefore := testutil.ToFloat64(metrics.BindingsRequeued)

		Expect(k8s.Delete(ctx, big)).To(Succeed())
		Eventually(func() []string { return requeued(ns) }).WithTimeout(5*time.Second).Should(ConsistOf("high", "middle"),
			"two CPUs freed: the two highest priorities, not the third")
		Consistently(func() []string { return requeued(ns) }).WithTimeout(2 * time.Second).Should(ConsistOf("high", "middle"))
		Expect(testutil.ToFloat64(metrics.BindingsRequeued)-requeuedBefore).To(Equal(2.0), "no requeue storm")
	})
})

func requeued(ns string) []string {
	var bindings workv1alpha2.ResourceBindingList
	Expect(k8s.List(ctx, &bindings, client.InNamespace(ns))).To(Succeed())
	var names []string
	for _, rb := range bindings.Items {
		if rb.Spec.RescheduleTriggeredAt != nil {
			names = append(names, rb.Name)
		}
	}
	return names
}

func expectRefused(err error) error {
	if apierrors.ReasonForError(err) != "QuotaExceeded" {
		return fmt.Errorf("want QuotaExceeded, got %v", err)
	}
	return nil
}

// touch changes the quota's spec without changing its limits, so the controller reconciles it now.
// The controller may write the quota's status between the read and the update, so a conflict reads again.
// webWithWork creates, in a new namespace under a quota of 10 CPU, a Deployment of 1 CPU per pod whose binding places
// 2 replicas on member1 and 2 on member2, and member1's Work asking 2 pods of cpu each.
func webWithWork(cpu string) (string, *workv1alpha2.ResourceBinding, *workv1alpha1.Work) {
	GinkgoHelper()
	ns := newNamespace()
	execution := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: names.GenerateExecutionSpaceName("member1")}}
	Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, execution))).To(Succeed())
	Expect(k8s.Create(ctx, testenv.Quota(ns, "team", list("cpu", "10")))).To(Succeed())
	d, err := framework.CreateDeployment(ctx, k8s, ns, "web", "", "1")
	Expect(err).NotTo(HaveOccurred())
	rb := mustCreate(framework.BindingOf(d))
	Expect(place(rb, cluster("member1", 2), cluster("member2", 2))).To(Succeed())
	work := renderedWork(ns, rb, execution.Name, 2, cpu)
	DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, work))).To(Succeed()) })
	Expect(k8s.Create(ctx, work)).To(Succeed())
	return ns, rb, work
}

// renderedWork is the Work Karmada's binding controller renders from rb's Deployment for the member of the
// execution namespace: replicas pods requesting cpu each.
func renderedWork(ns string, rb *workv1alpha2.ResourceBinding, execution string, replicas int, cpu string) *workv1alpha1.Work {
	GinkgoHelper()
	manifest, err := json.Marshal(map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"namespace": ns, "name": rb.Spec.Resource.Name},
		"spec": map[string]any{"replicas": replicas, "template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "web", "image": "web",
				"resources": map[string]any{"requests": map[string]any{"cpu": cpu}}}},
		}}},
	})
	Expect(err).NotTo(HaveOccurred())
	return &workv1alpha1.Work{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: execution, Name: names.GenerateWorkName("Deployment", rb.Spec.Resource.Name, ns),
			Annotations: map[string]string{
				workv1alpha2.ResourceBindingNamespaceAnnotationKey: ns,
				workv1alpha2.ResourceBindingNameAnnotationKey:      rb.Name,
			},
		},
		Spec: workv1alpha1.WorkSpec{Workload: workv1alpha1.WorkloadTemplate{Manifests: []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: manifest}}}}},
	}
}

func touch(ns, name string) {
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		q := getQuota(ns, name)
		q.Spec.Hard = q.Spec.Hard.DeepCopy()
		if _, ok := q.Spec.Hard["count/touches.example.io"]; ok {
			delete(q.Spec.Hard, "count/touches.example.io")
		} else {
			q.Spec.Hard["count/touches.example.io"] = *resourceQuantity("1000")
		}
		return k8s.Update(ctx, q)
	})).To(Succeed())
}

func resourceQuantity(s string) *resource.Quantity {
	q := resource.MustParse(s)
	return &q
}

// scrape is what the controller serves on /metrics (metrics.Handler), its karmada_quota_* series only.
func scrape() string {
	rec := httptest.NewRecorder()
	metrics.Handler(ctrlmetrics.Registry).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	Expect(rec.Code).To(Equal(http.StatusOK), rec.Body.String())
	var b strings.Builder
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if strings.HasPrefix(line, "karmada_quota_") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// recounts is how many reconciles the controller has run.
func recounts() uint64 {
	var m dto.Metric
	Expect(metrics.ReconcileDuration.Write(&m)).To(Succeed())
	return m.GetHistogram().GetSampleCount()
}
