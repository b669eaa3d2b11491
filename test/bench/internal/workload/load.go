package workload

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/test/bench/internal/stats"
)

// PlaceOneByOne places each binding at 2 replicas, one write after another, and returns what each write saw: the
// latency of one admission at a time, which no other write of its own queues behind.
func PlaceOneByOne(ctx context.Context, c client.Client, bindings []*workv1alpha2.ResourceBinding) *stats.Recorder {
	rec := stats.NewRecorder()
	for _, rb := range bindings {
		if ctx.Err() != nil {
			// A write made with a cancelled context fails at once; counting it would blame the system measured.
			break
		}
		began := time.Now()
		err := Place(ctx, c, rb, Divide(2))
		rec.Observe(time.Since(began), err)
	}
	return rec
}

// Flip is the placement that changes rb's: 1 replica where it has none or 2 (on two clusters), 2 where it has 1.
// Re-placing by Flip always writes a change, which a webhook must decide, and a scale-up alternates with the
// scale-down that makes room for it.
func Flip(rb *workv1alpha2.ResourceBinding) []workv1alpha2.TargetCluster {
	return Divide(int32(1 + len(rb.Spec.Clusters)%2))
}

// churnRampUp is how long StartChurn lets its writers run before it returns: what is timed next meets them at
// their pace, not starting (the first writes are first placements, and the clients' connections are still opening).
const churnRampUp = time.Second

// Churn is writers re-placing one namespace's bindings continuously, each binding by Flip: a hot namespace, beside
// which other namespaces' admissions are timed. Each writer owns its own bindings (every writers-th), so that no
// binding is written by two at once, as the scheduler writes one binding at a time.
type Churn struct {
	stop, timing atomic.Bool
	wg           sync.WaitGroup
	// timed are the writes that completed while During ran.
	timed  *stats.Recorder
	failed atomic.Int64
}

// StartChurn starts min(writers, len(bindings)) writers re-placing bindings, and returns once they have run for
// churnRampUp. Stop must be called.
func StartChurn(ctx context.Context, c client.Client, bindings []*workv1alpha2.ResourceBinding, writers int) *Churn {
	ch := &Churn{timed: stats.NewRecorder()}
	writers = min(writers, len(bindings))
	for w := 0; w < writers; w++ {
		var owned []*workv1alpha2.ResourceBinding
		for i := w; i < len(bindings); i += writers {
			owned = append(owned, bindings[i])
		}
		ch.wg.Add(1)
		go func() {
			defer ch.wg.Done()
			for i := 0; !ch.stop.Load() && ctx.Err() == nil; i++ {
				rb := owned[i%len(owned)]
				began := time.Now()
				err := Place(ctx, c, rb, Flip(rb))
				if ch.timing.Load() {
					ch.timed.Observe(time.Since(began), err)
				}
				if err != nil && !isQuotaExceeded(err) {
					ch.failed.Add(1)
					// The write may have committed although the client saw an error: re-read it, as the scheduler's
					// informer would tell it, so that the next Flip changes what is stored.
					_ = c.Get(ctx, client.ObjectKeyFromObject(rb), rb)
				}
			}
		}()
	}
	time.Sleep(churnRampUp)
	return ch
}

// During runs fn, and returns the churn's writes that completed meanwhile and how many of them were decided
// (admitted or refused by quota) per second: the load fn met. Call it once.
func (ch *Churn) During(fn func()) (stats.Summary, float64) {
	start := time.Now()
	ch.timing.Store(true)
	fn()
	ch.timing.Store(false)
	wall := time.Since(start)
	s := ch.timed.Summary()
	if wall <= 0 {
		return s, 0
	}
	return s, float64(s.Admitted+s.Denied) / wall.Seconds()
}

// Stop stops the writers and waits for their last writes, and returns how many writes failed (other than a quota
// denial) over the whole churn: each may have left a reservation behind. They stop at a flag, not by cancelling: a
// write cut off after its admission would leave a reservation that only its TTL releases.
func (ch *Churn) Stop() int {
	ch.stop.Store(true)
	ch.wg.Wait()
	return int(ch.failed.Load())
}
