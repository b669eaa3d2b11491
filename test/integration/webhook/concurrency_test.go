package webhook

import (
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/pkg/metrics"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

var _ = Describe("Idempotent admission", func() {
	// The apiserver re-runs validating admission when it retries a write that lost a race in etcd, here against
	// a status writer busier than Karmada's (50 writes/s on one binding; unpaced, it starves the spec writes of
	// any validating webhook for tens of seconds). Every retry of a write must land on that write's reservation.
	It("charges a write the apiserver retried exactly once", func() {
		const scaleUps = 100
		ns := newNamespace()
		createQuota(quota(ns, "team", list("cpu", "1000")))
		rb := mustCreateBinding(utiltesting.MakeBinding(ns, "web").Requests(requests("100m", "")))

		updatesBefore := testutil.ToFloat64(metrics.AdmissionRequests.WithLabelValues("ResourceBinding", "UPDATE", "allowed", ""))
		stop := make(chan struct{})
		var statusWrites sync.WaitGroup
		statusWrites.Add(1)
		go func() {
			defer statusWrites.Done()
			defer GinkgoRecover()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				patch := fmt.Sprintf(`{"status":{"schedulerObservedGeneration":%d}}`, i)
				Expect(k8s.Status().Patch(ctx, rb.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
				time.Sleep(20 * time.Millisecond)
			}
		}()
		for i := 1; i <= scaleUps; i++ {
			Expect(place(rb.DeepCopy(), cluster("member1", int32(i)))).To(Succeed())
		}
		close(stop)
		statusWrites.Wait()

		calls := testutil.ToFloat64(metrics.AdmissionRequests.WithLabelValues("ResourceBinding", "UPDATE", "allowed", "")) - updatesBefore
		retries := int(calls) - scaleUps
		AddReportEntry("admission calls for retried writes", fmt.Sprintf("%d scale-ups, %d webhook calls: %d re-run by the apiserver", scaleUps, int(calls), retries))
		Expect(retries).To(BeNumerically(">", 0), "the status writer never made the apiserver retry a write; the test proves nothing")

		q := getQuota(ns, "team")
		reservations := reservationsOf(q, rb)
		Expect(reservations).To(HaveLen(scaleUps), "one reservation per admitted write")
		for gen := int64(2); gen <= scaleUps+1; gen++ {
			Expect(reservations).To(HaveKeyWithValue(gen, equalQuantities(list("cpu", "100m"))), "generation %d", gen)
		}
		Expect(reservedOf(q)).To(equalQuantities(list("cpu", fmt.Sprintf("%dm", 100*scaleUps))), "retried writes were charged twice")
	})
})

var _ = Describe("Concurrent admission", func() {
	// 64 writers place bindings at once, as Karmada's scheduler does, through two webhook replicas. The quota fits
	// exactly half. Nothing may be over-admitted, and contention must never reach a client as an error.
	It("never admits past hard, and clients only ever see QuotaExceeded", func() {
		const writers = 64
		ns := newNamespace()
		createQuota(quota(ns, "team", list("cpu", fmt.Sprint(writers/2))))
		bindings := make([]*workv1alpha2.ResourceBinding, writers)
		for i := range bindings {
			bindings[i] = mustCreateBinding(utiltesting.MakeBinding(ns, fmt.Sprintf("web-%02d", i)).Requests(requests("500m", "64Mi")))
		}

		batchesBefore := histogram(metrics.AdmissionBatchSize)
		decisionsBefore := histogram(metrics.AdmissionDuration.WithLabelValues("ResourceBinding", "UPDATE").(prometheus.Histogram))
		callsBefore := webhooks.Calls()
		var (
			wg        sync.WaitGroup
			mu        sync.Mutex
			admitted  int
			exceeded  int
			others    []error
			latencies []time.Duration
		)
		start := make(chan struct{})
		for i := range bindings {
			wg.Add(1)
			go func(rb *workv1alpha2.ResourceBinding) {
				defer wg.Done()
				defer GinkgoRecover()
				<-start
				began := time.Now()
				err := place(rb, cluster("member1", 1), cluster("member2", 1))
				took := time.Since(began)
				mu.Lock()
				defer mu.Unlock()
				latencies = append(latencies, took)
				switch {
				case err == nil:
					admitted++
				case apierrors.ReasonForError(err) == "QuotaExceeded" && apierrors.IsForbidden(err):
					exceeded++
				default:
					others = append(others, err)
				}
			}(bindings[i])
		}
		close(start)
		wg.Wait()

		Expect(others).To(BeEmpty(), "contention reached clients as errors")
		Expect(admitted).To(Equal(writers/2), "the quota fits exactly half of the writers")
		Expect(exceeded).To(Equal(writers / 2))

		q := getQuota(ns, "team")
		reserved := reservedOf(q)
		Expect(reserved.Cpu().Cmp(resource.MustParse(fmt.Sprint(writers/2)))).To(Equal(0), "reserved %s", reserved.Cpu())
		var placed int
		for _, rb := range bindings {
			var back workv1alpha2.ResourceBinding
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(rb), &back)).To(Succeed())
			if len(back.Spec.Clusters) > 0 {
				placed++
				Expect(reservationsOf(q, &back)).To(HaveKeyWithValue(back.Generation, equalQuantities(list("cpu", "1")))) // memory is not limited
			}
		}
		Expect(placed).To(Equal(writers/2), "exactly the admitted writes are stored, each with its reservation")

		batches := histogram(metrics.AdmissionBatchSize)
		multi := (batches.count - batches.le1) - (batchesBefore.count - batchesBefore.le1)
		Expect(multi).To(BeNumerically(">", 0), "concurrent writes for one namespace were never decided together")
		calls := webhooks.Calls()
		for i := range calls {
			Expect(calls[i]).To(BeNumerically(">", callsBefore[i]), "replica %d served nothing", i)
		}

		decisions := histogram(metrics.AdmissionDuration.WithLabelValues("ResourceBinding", "UPDATE").(prometheus.Histogram))
		sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
		report, _ := json.Marshal(map[string]any{
			"writers": writers, "admitted": admitted, "quotaExceeded": exceeded, "otherErrors": len(others),
			"reservedCPU": reserved.Cpu().String(), "hardCPU": writers / 2,
			"batches": batches.count - batchesBefore.count, "batchesOfMoreThanOne": multi,
			"placementP50": percentile(latencies, 50).String(), "placementP99": percentile(latencies, 99).String(),
			"callsPerReplica":          calls,
			"webhookDecisionMean":      decisions.meanSince(decisionsBefore).String(),
			"webhookDecisionP50AtMost": decisions.quantileSince(decisionsBefore, 0.50).String(),
			"webhookDecisionP99AtMost": decisions.quantileSince(decisionsBefore, 0.99).String(),
		})
		AddReportEntry("concurrent admission", string(report))
		GinkgoWriter.Println("concurrent admission:", string(report))
	})
})

type histogramSample struct {
	count, le1 uint64
	sum        float64
	buckets    []*dto.Bucket
}

func histogram(h prometheus.Histogram) histogramSample {
	var m dto.Metric
	Expect(h.Write(&m)).To(Succeed())
	s := histogramSample{count: m.GetHistogram().GetSampleCount(), sum: m.GetHistogram().GetSampleSum(), buckets: m.GetHistogram().GetBucket()}
	for _, b := range s.buckets {
		if b.GetUpperBound() == 1 {
			s.le1 = b.GetCumulativeCount()
		}
	}
	return s
}

func (s histogramSample) meanSince(before histogramSample) time.Duration {
	n := s.count - before.count
	if n == 0 {
		return 0
	}
	return time.Duration((s.sum - before.sum) / float64(n) * float64(time.Second)).Round(100 * time.Microsecond)
}

// quantileSince is the upper bound of the bucket holding quantile q of the observations since before.
func (s histogramSample) quantileSince(before histogramSample, q float64) time.Duration {
	n := s.count - before.count
	for i, b := range s.buckets {
		if float64(b.GetCumulativeCount()-before.buckets[i].GetCumulativeCount()) >= q*float64(n) {
			return time.Duration(b.GetUpperBound() * float64(time.Second))
		}
	}
	return time.Duration(-1)
}

func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	if i > 0 {
		i--
	}
	return sorted[i].Round(100 * time.Microsecond)
}
