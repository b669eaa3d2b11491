package e2e

import (
	"errors"
	"fmt"
	"math/rand/v2"
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
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/pkg/admission"
)

// writerScheduler is the scheduler name of the writer's bindings: Karmada's scheduler leaves bindings of another
// scheduler alone, so the writer alone decides their placements.
const writerScheduler = "karmada-quota-e2e-writer"

// writerStats is how the writer's binding writes ended.
type writerStats struct {
	Writes, Admitted, Refused, Failed int64
	// Failures are the first messages of the writes that failed for another reason than the quota.
	Failures []string
}

func (s writerStats) String() string {
	return fmt.Sprintf("%d writes: %d admitted, %d refused by quota, %d failed", s.Writes, s.Admitted, s.Refused, s.Failed)
}

// bindingWriter writes placements the way Karmada's scheduler does (a merge patch of spec.clusters) on bindings
// of its own, as fast as a few workers can, and counts how each write ended. Run through an upgrade or a
// certificate renewal, it shows whether any binding write failed for a reason other than the quota.
type bindingWriter struct {
	ns       string
	bindings []string
	writes   atomic.Int64
	admitted atomic.Int64
	refused  atomic.Int64
	failed   atomic.Int64

	mu       sync.Mutex
	failures []string

	stop chan struct{}
	done sync.WaitGroup
}

// startWriter creates count bindings of 100m CPU per replica in ns and starts writing placements of 1 to 4
// replicas on the first member until Stop.
func startWriter(ns string, count, workers int) *bindingWriter {
	GinkgoHelper()
	w := &bindingWriter{ns: ns, stop: make(chan struct{})}
	for i := range count {
		name := fmt.Sprintf("writer-%d", i)
		rb := &workv1alpha2.ResourceBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: workv1alpha2.ResourceBindingSpec{
				Resource: workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: name},
				Replicas: 4,
				ReplicaRequirements: &workv1alpha2.ReplicaRequirements{ResourceRequest: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("100m"),
				}},
				SchedulerName: writerScheduler,
			},
		}
		Expect(karmada.Create(ctx, rb)).To(Succeed())
		w.bindings = append(w.bindings, name)
	}
	member := memberNames()[0]
	for range workers {
		w.done.Add(1)
		go func() {
			defer w.done.Done()
			defer GinkgoRecover()
			for {
				select {
				case <-w.stop:
					return
				default:
				}
				name := w.bindings[rand.IntN(len(w.bindings))]
				patch := fmt.Sprintf(`{"spec":{"clusters":[{"name":%q,"replicas":%d}]}}`, member, 1+rand.IntN(4))
				rb := &workv1alpha2.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
				w.record(karmada.Patch(ctx, rb, client.RawPatch(types.MergePatchType, []byte(patch))))
			}
		}()
	}
	return w
}

func (w *bindingWriter) record(err error) {
	w.writes.Add(1)
	var status apierrors.APIStatus
	switch {
	case err == nil:
		w.admitted.Add(1)
	case errors.As(err, &status) && status.Status().Code == 403 && status.Status().Reason == admission.ReasonQuotaExceeded:
		w.refused.Add(1)
	default:
		w.failed.Add(1)
		w.mu.Lock()
		if len(w.failures) < 10 {
			w.failures = append(w.failures, time.Now().Format("15:04:05.000")+" "+err.Error())
		}
		w.mu.Unlock()
	}
}

// Stats returns the counts so far.
func (w *bindingWriter) Stats() writerStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return writerStats{
		Writes: w.writes.Load(), Admitted: w.admitted.Load(), Refused: w.refused.Load(), Failed: w.failed.Load(),
		Failures: append([]string(nil), w.failures...),
	}
}

// Stop stops the writer and returns its counts.
func (w *bindingWriter) Stop() writerStats {
	close(w.stop)
	w.done.Wait()
	return w.Stats()
}
