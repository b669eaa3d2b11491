package workload

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/test/bench/internal/stats"
)

// IsolationName is the isolation workload's name, in the report and in --workloads alike.
const IsolationName = "isolation"

// Isolation measures what a hot namespace does to its quiet neighbours (issue 28): placements in quiet namespaces,
// one at a time, round-robin over them, each namespace under a quota of its own with room for all its placements,
// timed first alone and then the same number while Writers−1 writers re-place the bindings of a hot namespace,
// whose quota fits half of them as the hot quota's does. Without a quota system the same writes are made without
// quotas. What it measures is latency beside load, not throughput: its Summary holds the quiet writes of both
// phases, and Result the rest.
type Isolation struct {
	hot, quiet                 base
	hotBindings, quietBindings []*workv1alpha2.ResourceBinding
	result                     IsolationResult
}

// IsolationResult is what the isolation workload measured.
type IsolationResult struct {
	// Alone and UnderLoad are the quiet placements, IsolationWrites each: without other writes, and while the hot
	// namespace was re-placed.
	Alone, UnderLoad stats.Summary
	// Hot are the hot namespace's writes that completed while UnderLoad was timed, and HotDecidedPerSecond how many
	// of them were decided (admitted or refused by quota) per second: the load the quiet writes met.
	Hot                 stats.Summary
	HotDecidedPerSecond float64
	// HotFailed counts the hot namespace's writes that failed, other than by a quota's refusal, over the whole load,
	// timed or not: each may have left a reservation that only its TTL releases.
	HotFailed int
}

// P99Ratio is the quiet p99 under load over the quiet p99 alone; false when either phase timed nothing.
func (r IsolationResult) P99Ratio() (float64, bool) {
	if r.Alone.P99 <= 0 || r.UnderLoad.P99 <= 0 {
		return 0, false
	}
	return float64(r.UnderLoad.P99) / float64(r.Alone.P99), true
}

// NewIsolation returns the isolation workload in namespaces prefix-isolation-hot and prefix-isolation-quiet-NN.
func NewIsolation(c client.Client, quotas QuotaSystem, prefix string, o Options) *Isolation {
	iso := &Isolation{
		hot:   base{c: c, quotas: quotas, opts: o, namespaces: []string{prefix + "-isolation-hot"}, group: prefix + "-isolation-hot"},
		quiet: base{c: c, quotas: quotas, opts: o, group: prefix + "-isolation-quiet"},
	}
	for i := 0; i < o.IsolationNamespaces; i++ {
		iso.quiet.namespaces = append(iso.quiet.namespaces, fmt.Sprintf("%s-isolation-quiet-%02d", prefix, i))
	}
	return iso
}

// Name implements Workload.
func (*Isolation) Name() string { return IsolationName }

// Namespaces implements Workload: the hot namespace first.
func (iso *Isolation) Namespaces() []string {
	return append(slices.Clone(iso.hot.namespaces), iso.quiet.namespaces...)
}

// quietPerNamespace is how many bindings each quiet namespace gets: both phases' writes, round-robin over them.
func (iso *Isolation) quietPerNamespace() int {
	o := iso.quiet.opts
	return (2*o.IsolationWrites + o.IsolationNamespaces - 1) / o.IsolationNamespaces
}

// Prepare implements Workload.
func (iso *Isolation) Prepare(ctx context.Context) error {
	o := iso.hot.opts
	if o.Writers < 2 || o.IsolationNamespaces < 1 || o.IsolationWrites < 1 || o.HotBindings < 1 {
		return fmt.Errorf("the isolation workload needs 2 writers at least (one quiet, the others hot), a quiet namespace, "+
			"a quiet write and a hot binding; got %d writers, %d namespaces, %d writes, %d bindings",
			o.Writers, o.IsolationNamespaces, o.IsolationWrites, o.HotBindings)
	}
	perNamespace := iso.quietPerNamespace()
	if err := iso.hot.setup(ctx, halfFits(o.HotBindings)); err != nil {
		return err
	}
	if err := iso.quiet.setup(ctx, fitsAll(perNamespace)); err != nil {
		return err
	}
	var err error
	if iso.hotBindings, err = createBindings(ctx, iso.hot.c, iso.hot.namespaces, o.HotBindings, o.Writers, 2); err != nil {
		return err
	}
	// createBindings orders them round-robin over the namespaces: consecutive quiet writes go to the next namespace.
	iso.quietBindings, err = createBindings(ctx, iso.quiet.c, iso.quiet.namespaces, perNamespace, o.Writers, 2)
	return err
}

// Run implements Workload. It fails when quota refused a quiet placement: each quiet quota has room for all its
// namespace's placements, so a refusal is a bug in that sizing, and the latencies would time refusals.
func (iso *Isolation) Run(ctx context.Context) (stats.Summary, time.Duration, error) {
	c, n := iso.quiet.c, iso.quiet.opts.IsolationWrites
	start := time.Now()
	// Prepare's writes wake the controllers (each new quota's first count, the bindings' events): let them finish,
	// so that the quiet placements timed alone meet no other work.
	time.Sleep(quietBeforeAlone)
	alone := PlaceOneByOne(ctx, c, iso.quietBindings[:n])
	churn := StartChurn(ctx, c, iso.hotBindings, iso.hot.opts.Writers-1)
	var underLoad *stats.Recorder
	hot, hotRate := churn.During(func() { underLoad = PlaceOneByOne(ctx, c, iso.quietBindings[n:2*n]) })
	hotFailed := churn.Stop()
	wall := time.Since(start)
	iso.result = IsolationResult{Alone: alone.Summary(), UnderLoad: underLoad.Summary(), Hot: hot, HotDecidedPerSecond: hotRate, HotFailed: hotFailed}
	summary := stats.Merge(alone, underLoad).Summary()
	var err error
	if summary.Denied > 0 {
		err = fmt.Errorf("quota refused %d of the %d quiet placements (%d alone, %d under load), though each quiet quota has room "+
			"for all its namespace's: the workload's sizing is wrong", summary.Denied, summary.Ops, iso.result.Alone.Denied, iso.result.UnderLoad.Denied)
	}
	return summary, wall, errors.Join(err, ctx.Err())
}

// quietBeforeAlone is how long Run waits before it times the quiet placements alone.
const quietBeforeAlone = time.Second

// Result is what Run measured besides its Summary.
func (iso *Isolation) Result() IsolationResult { return iso.result }

// fitsAll are the limits of a namespace whose bindings all fit at 2 replicas, 1 on each member cluster.
func fitsAll(bindings int) Limits {
	return LimitsOf(int64(bindings)*2*ReplicaCPU.MilliValue(), int64(bindings)*ReplicaCPU.MilliValue())
}
