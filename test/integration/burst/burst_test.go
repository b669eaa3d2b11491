package burst

import (
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/internal/testenv"
	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/controller"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
	"github.com/karmada-quota/karmada-quota/test/integration/framework"
)

var _ = Describe("A burst while the controller is away", func() {
	It("gets only admissions and QuotaExceeded, keeps the status bounded, and settles exactly once the controller is back", func() {
		// Each placement asks for 1 CPU (2 replicas of 500m); the quota fits half of them, so the list of
		// reservations grows to placements/2, far past its bound, with no controller to settle any.
		fit := placements / 2
		writes := unthrottled()
		ns := newNamespace()
		Expect(k8s.Create(ctx, testenv.Quota(ns, "team", framework.List("cpu", fmt.Sprint(fit))))).To(Succeed())

		bindings := make([]*workv1alpha2.ResourceBinding, placements)
		parallel(placements, writers, func(i int) {
			rb, err := testenv.CreateBinding(ctx, writes, utiltesting.MakeBinding(ns, fmt.Sprintf("rb-%05d", i)).
				Requests(framework.List("cpu", "500m", "memory", "64Mi")))
			Expect(err).NotTo(HaveOccurred())
			bindings[i] = rb
		})

		// Sampled throughout: the list never grows past the bound, and the ledger object, which every admission
		// writes, stays small.
		var (
			stop                  atomic.Bool
			samples               int
			longestList, largestQ int
		)
		sampler := make(chan struct{})
		go func() {
			defer close(sampler)
			defer GinkgoRecover()
			for !stop.Load() {
				stored := getLedger(ns, "team")
				raw, err := json.Marshal(stored)
				Expect(err).NotTo(HaveOccurred())
				samples++
				longestList = max(longestList, len(stored.Reservations))
				largestQ = max(largestQ, len(raw))
				time.Sleep(50 * time.Millisecond)
			}
		}()

		var (
			mu       sync.Mutex
			admitted int
			exceeded int
			others   []error
		)
		started := time.Now()
		parallel(placements, writers, func(i int) {
			err := framework.Place(ctx, writes, bindings[i], nil, framework.Cluster("member1", 1), framework.Cluster("member2", 1))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				admitted++
			case apierrors.IsForbidden(err) && apierrors.ReasonForError(err) == "QuotaExceeded":
				exceeded++
			default:
				others = append(others, err)
			}
		})
		burst := time.Since(started)
		stop.Store(true)
		<-sampler

		Expect(others).To(BeEmpty(), "every answer is an admission or QuotaExceeded")
		Expect(admitted).To(Equal(fit), "the quota fits exactly half the placements")
		Expect(exceeded).To(Equal(placements - fit))
		truth := trueCPU(ns)
		Expect(truth).To(Equal(int64(fit)*1000), "stored placements use exactly hard")

		q := getQuota(ns, "team")
		stored := getLedger(ns, "team")
		Expect(len(stored.Reservations)).To(BeNumerically("<=", maxReservations))
		Expect(longestList).To(BeNumerically("<=", maxReservations), "the list grew past its bound")
		Expect(stored.FoldedReservations).NotTo(BeNil(), "the burst went past the bound: the oldest were folded")
		Expect(int(stored.FoldedReservations.Count)+len(stored.Reservations)).To(Equal(admitted), "one charge per admission, folded or listed")
		Expect(reservedCPU(q)).To(Equal(truth), "reserved charges every admission, no more")
		Expect(q.Status.Used.Cpu().IsZero()).To(BeTrue(), "nothing observed while the controller is away")
		AddReportEntry("burst", fmt.Sprintf("%d placements by %d writers in %s: %d admitted, %d QuotaExceeded, 0 other errors; "+
			"at most %d reservations listed (bound %d), %d folded; largest ledger object %d bytes over %d samples",
			placements, writers, burst.Round(time.Millisecond), admitted, exceeded, longestList, maxReservations,
			stored.FoldedReservations.Count, largestQ, samples))

		// The controller comes back: it settles what it observes at once, and keeps the folded sum until the last
		// folded write can no longer happen.
		clock := clocktesting.NewFakeClock(time.Now())
		back := time.Now()
		c, err := framework.StartController(ctx, cfg, controller.Options{
			Workers: 4, ResyncPeriod: 2 * time.Second, SettleInterval: controller.DefaultSettleInterval, Clock: clock,
		}, framework.Lag{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(c.Stop()).To(Succeed()) })
		Eventually(func(g Gomega) {
			q := getQuota(ns, "team")
			g.Expect(q.Status.Used.Cpu().MilliValue()).To(Equal(truth))
			g.Expect(getLedger(ns, "team").Reservations).To(BeEmpty())
		}).WithTimeout(time.Minute).WithPolling(100 * time.Millisecond).Should(Succeed())
		settled := time.Since(back)
		stored = getLedger(ns, "team")
		Expect(stored.FoldedReservations).NotTo(BeNil(), "the folded sum is kept until it expires")
		Eventually(func() int64 { return getQuota(ns, "team").Status.Reserved.Cpu().MilliValue() }).
			Should(Equal(stored.FoldedReservations.Reserved.Cpu().MilliValue()), "status shows the folded sum reserved")
		// While it is kept, the folded writes are charged twice, in used and folded: a placement that would fit
		// is refused, never one that does not.
		expires := stored.FoldedReservations.ExpirationTime.Time

		clock.SetTime(expires.Add(time.Second))
		Eventually(func(g Gomega) {
			q := getQuota(ns, "team")
			g.Expect(getLedger(ns, "team").FoldedReservations).To(BeNil())
			g.Expect(q.Status.Reserved.Cpu().IsZero()).To(BeTrue())
			g.Expect(q.Status.Used.Cpu().MilliValue()).To(Equal(truth))
		}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
		AddReportEntry("settling", fmt.Sprintf("used exact and every listed reservation settled %s after the controller started; "+
			"the folded sum dropped at its expiry", settled.Round(time.Millisecond)))
	})
})

// unthrottled is an administrator's client without client-side rate limiting: the burst must not wait on the
// test's own client.
func unthrottled() client.Client {
	c := rest.CopyConfig(cfg)
	c.QPS, c.Burst = -1, 0
	out, err := client.New(c, client.Options{Scheme: k8s.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	return out
}

func newNamespace() string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "burst-"}}
	Expect(k8s.Create(ctx, ns)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, ns))).To(Succeed()) })
	return ns.Name
}

// getLedger reads the quota's ledger object, where the webhook lists its reservations.
func getLedger(ns, name string) *quotav1alpha1.KarmadaQuotaLedger {
	GinkgoHelper()
	stored, err := framework.Ledger(ctx, k8s, ns, name)
	Expect(err).NotTo(HaveOccurred())
	return stored
}

// reservedCPU is the millicores q holds reserved, from its ledger.
func reservedCPU(q *quotav1alpha1.KarmadaQuota) int64 {
	GinkgoHelper()
	reserved, err := framework.Reserved(ctx, k8s, q)
	Expect(err).NotTo(HaveOccurred())
	return reserved.Cpu().MilliValue()
}

func getQuota(ns, name string) *quotav1alpha1.KarmadaQuota {
	GinkgoHelper()
	var q quotav1alpha1.KarmadaQuota
	Expect(k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &q)).To(Succeed())
	return &q
}

// trueCPU is the CPU the namespace's stored bindings use, in milli-cores.
func trueCPU(ns string) int64 {
	GinkgoHelper()
	var list workv1alpha2.ResourceBindingList
	Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	var total resource.Quantity
	for i := range list.Items {
		u, err := usage.Of(&list.Items[i])
		Expect(err).NotTo(HaveOccurred())
		total.Add(*resource.NewMilliQuantity(u.Charge(usage.Selector{}).Total["requests.cpu"], resource.DecimalSI))
	}
	return total.MilliValue()
}

// parallel runs fn for every index in [0, n) on workers goroutines.
func parallel(n, workers int, fn func(i int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				// A failing call ends that call, not the worker: a worker gone would leave the sender blocked for good.
				func() {
					defer GinkgoRecover()
					fn(i)
				}()
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}
