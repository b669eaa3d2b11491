package workload

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/test/bench/internal/stats"
)

// Options size the workloads.
type Options struct {
	// Writers is how many placement writes are in flight at once.
	Writers int
	// HotBindings are placed in one namespace under one quota that fits half of them.
	HotBindings int
	// SpreadNamespaces each get SpreadBindings bindings and a quota that fits half of them.
	SpreadNamespaces, SpreadBindings int
	// StormNamespaces each get StormBindings bindings placed at 2 replicas, then StormOps scale writes in all
	// move them between 1 and 4 replicas under a quota that fits 2.5 replicas per binding on average.
	StormNamespaces, StormBindings, StormOps int
	// IsolationNamespaces are the isolation workload's quiet namespaces, and IsolationWrites the quiet placements
	// it times in each of its two phases, alone and beside the hot namespace (whose HotBindings Writers−1 writers
	// re-place).
	IsolationNamespaces, IsolationWrites int
	// Seed makes the order of writes and the storm's replica counts the same in every configuration.
	Seed uint64
}

// QuotaSystem creates quotas; nil for the configuration without one.
type QuotaSystem interface {
	CreateQuota(ctx context.Context, ns string, limits Limits) error
}

// SharedQuotaSystem is a quota system that can put a workload's namespaces under one quota together instead of one
// each: karmada-quota's business quotas (KarmadaBusinessQuota), which choose their namespaces by label.
type SharedQuotaSystem interface {
	QuotaSystem
	// SharesQuotas says whether a workload's namespaces share one quota, instead of one quota each.
	SharesQuotas() bool
	// SharedLabels are the labels that put a namespace under the shared quota named group.
	SharedLabels(group string) map[string]string
	// CreateSharedQuota creates the quota named group over namespaces, which carry SharedLabels(group) already.
	CreateSharedQuota(ctx context.Context, group string, namespaces []string, limits Limits) error
}

// Shares says whether quotas, which may be nil, put a workload's namespaces under one quota together.
func Shares(quotas QuotaSystem) (SharedQuotaSystem, bool) {
	shared, ok := quotas.(SharedQuotaSystem)
	return shared, ok && shared.SharesQuotas()
}

// Limits are what one namespace's quota allows. Hard is the namespace-wide limit every configuration sets.
// PerCluster is the most the workload's placements put on one member cluster while the namespace stays within
// Hard: a configuration that limits member clusters sets it on each of Clusters, and Hard on a group of them all,
// so that those limits bind when Hard does or just after. Their checks then run on every admission while what is
// admitted and refused stays what Hard alone admits and refuses, or nearly, and the two configurations compare.
type Limits struct {
	Hard, PerCluster corev1.ResourceList
}

// LimitsOf are the limits for cpuMilli of CPU in the namespace and perClusterMilli on each member cluster.
func LimitsOf(cpuMilli, perClusterMilli int64) Limits {
	return Limits{Hard: Hard(cpuMilli), PerCluster: Hard(perClusterMilli)}
}

// Times is what n namespaces with these limits each allow together: what a quota shared by them allows, so that
// it admits as many writes as their quotas would, one each.
func (l Limits) Times(n int) Limits {
	times := func(list corev1.ResourceList) corev1.ResourceList {
		out := corev1.ResourceList{}
		for name, q := range list {
			switch name {
			case corev1.ResourceCPU:
				out[name] = *resource.NewMilliQuantity(q.MilliValue()*int64(n), q.Format)
			default:
				out[name] = *resource.NewQuantity(q.Value()*int64(n), q.Format)
			}
		}
		return out
	}
	return Limits{Hard: times(l.Hard), PerCluster: times(l.PerCluster)}
}

// Workload is one measured scenario. Prepare builds its namespaces, quotas and bindings (not timed); Run makes the
// timed placement writes.
type Workload interface {
	Name() string
	Namespaces() []string
	Prepare(ctx context.Context) error
	Run(ctx context.Context) (stats.Summary, time.Duration, error)
}

// Hard is the quota for cpuMilli of CPU requests, with memory in the same proportion as the bindings request it,
// so memory binds exactly when CPU does: both quota systems check every limited resource.
func Hard(cpuMilli int64) corev1.ResourceList {
	replicas := cpuMilli / ReplicaCPU.MilliValue()
	return corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(cpuMilli, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(replicas*ReplicaMemory.Value(), resource.BinarySI),
	}
}

type base struct {
	c          client.Client
	quotas     QuotaSystem
	opts       Options
	namespaces []string
	// group names the quota the namespaces share where the quota system shares one (prefix-workload): unique in
	// the run, since a shared quota is cluster-scoped.
	group string
}

func (b *base) Namespaces() []string { return b.namespaces }

// setup creates the namespaces and, when there is a quota system, one quota each with limits; or, where the quota
// system shares quotas, the namespaces labelled into one quota over them all that allows what theirs would
// together.
func (b *base) setup(ctx context.Context, limits Limits) error {
	shared, shares := Shares(b.quotas)
	for _, ns := range b.namespaces {
		namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
		if shares {
			namespace.Labels = shared.SharedLabels(b.group)
		}
		if err := b.c.Create(ctx, namespace); err != nil {
			return err
		}
		if b.quotas != nil && !shares {
			if err := b.quotas.CreateQuota(ctx, ns, limits); err != nil {
				return fmt.Errorf("creating the quota of %s: %w", ns, err)
			}
		}
	}
	if shares {
		if err := shared.CreateSharedQuota(ctx, b.group, b.namespaces, limits.Times(len(b.namespaces))); err != nil {
			return fmt.Errorf("creating the quota %s shared by %d namespaces: %w", b.group, len(b.namespaces), err)
		}
	}
	return nil
}

// placeAll is the timed part of the hot and spread workloads: every binding placed once, 1 replica on each
// member cluster, in a shuffled order, by Writers concurrent writers.
func placeAll(ctx context.Context, c client.Client, bindings []*workv1alpha2.ResourceBinding, o Options) (stats.Summary, time.Duration, error) {
	order := rand.New(rand.NewPCG(o.Seed, 1)).Perm(len(bindings))
	rec := stats.NewRecorder()
	start := time.Now()
	err := parallel(ctx, len(order), o.Writers, func(ctx context.Context, i int) error {
		rb := bindings[order[i]]
		began := time.Now()
		err := Place(ctx, c, rb, Divide(2))
		rec.Observe(time.Since(began), err)
		return ctx.Err()
	})
	return rec.Summary(), time.Since(start), err
}

// halfFits are the limits of the hot and spread workloads, whose quota fits half of a namespace's bindings at 2
// replicas. Each placement puts 1 replica on each member cluster, so each cluster holds half of what the namespace
// does.
func halfFits(bindings int) Limits {
	return fitsAll(bindings / 2)
}

// Hot places bindings in one namespace under one quota that fits half of them: every write contends for the
// same quota.
type Hot struct {
	base
	bindings []*workv1alpha2.ResourceBinding
}

// NewHot returns the hot-quota workload in namespace prefix-hot.
func NewHot(c client.Client, quotas QuotaSystem, prefix string, o Options) *Hot {
	return &Hot{base: base{c: c, quotas: quotas, opts: o, namespaces: []string{prefix + "-hot"}, group: prefix + "-hot"}}
}

// Name implements Workload.
func (*Hot) Name() string { return "hot quota" }

// Prepare implements Workload.
func (h *Hot) Prepare(ctx context.Context) error {
	if err := h.setup(ctx, halfFits(h.opts.HotBindings)); err != nil {
		return err
	}
	var err error
	h.bindings, err = createBindings(ctx, h.c, h.namespaces, h.opts.HotBindings, h.opts.Writers, 2)
	return err
}

// Run implements Workload.
func (h *Hot) Run(ctx context.Context) (stats.Summary, time.Duration, error) {
	return placeAll(ctx, h.c, h.bindings, h.opts)
}

// Spread places bindings across many namespaces, one quota each fitting half of its bindings: the common case
// of many teams, where writes rarely contend for one quota.
type Spread struct {
	base
	bindings []*workv1alpha2.ResourceBinding
}

// NewSpread returns the spread workload in namespaces prefix-spread-NN.
func NewSpread(c client.Client, quotas QuotaSystem, prefix string, o Options) *Spread {
	s := &Spread{base: base{c: c, quotas: quotas, opts: o, group: prefix + "-spread"}}
	for i := 0; i < o.SpreadNamespaces; i++ {
		s.namespaces = append(s.namespaces, fmt.Sprintf("%s-spread-%02d", prefix, i))
	}
	return s
}

// Name implements Workload.
func (*Spread) Name() string { return "spread" }

// Prepare implements Workload.
func (s *Spread) Prepare(ctx context.Context) error {
	if err := s.setup(ctx, halfFits(s.opts.SpreadBindings)); err != nil {
		return err
	}
	var err error
	s.bindings, err = createBindings(ctx, s.c, s.namespaces, s.opts.SpreadBindings, s.opts.Writers, 2)
	return err
}

// Run implements Workload.
func (s *Spread) Run(ctx context.Context) (stats.Summary, time.Duration, error) {
	return placeAll(ctx, s.c, s.bindings, s.opts)
}

// ScaleDownsDenied counts scale-downs refused with QuotaExceeded.
const ScaleDownsDenied = "scale-downs denied"

// Storm scales existing, placed bindings up and down at once, as a burst of HPA decisions does: each write moves
// a binding to a new replica count between 1 and 4, and the quota fits 2.5 replicas per binding on average, so a
// namespace runs at its limit and scale-ups compete with the scale-downs that make room. Each binding has one
// writer, which makes its writes one after another, as the scheduler does for one binding.
type Storm struct {
	base
	bindings []*workv1alpha2.ResourceBinding
}

// NewStorm returns the scale-storm workload in namespaces prefix-storm-N.
func NewStorm(c client.Client, quotas QuotaSystem, prefix string, o Options) *Storm {
	s := &Storm{base: base{c: c, quotas: quotas, opts: o, group: prefix + "-storm"}}
	for i := 0; i < o.StormNamespaces; i++ {
		s.namespaces = append(s.namespaces, fmt.Sprintf("%s-storm-%d", prefix, i))
	}
	return s
}

// Name implements Workload.
func (*Storm) Name() string { return "scale storm" }

// Prepare implements Workload: the bindings are created and placed at 2 replicas, which every quota admits.
//
// The quota fits 2.5 replicas per binding. Divide puts the odd replica on the first cluster, so that cluster holds
// the most when bindings sit at 1 or 3 replicas: with x of n bindings at 3 and the rest at 1 it holds n + x
// replicas of n + 2x, and x is at most 0.75n under the 2.5n of hard, so each cluster gets 1.75 replicas per
// binding. (Before the controller settles them, reservations count what a run of scale writes grew on a cluster,
// not where it ended, so now and then a cluster limit may refuse a write the namespace's hard would admit.)
func (s *Storm) Prepare(ctx context.Context) error {
	bindings := int64(s.opts.StormBindings)
	perBinding := 5 * ReplicaCPU.MilliValue() / 2          // 2.5 replicas
	perBindingOnCluster := 7 * ReplicaCPU.MilliValue() / 4 // 1.75 replicas
	if err := s.setup(ctx, LimitsOf(bindings*perBinding, bindings*perBindingOnCluster)); err != nil {
		return err
	}
	var err error
	if s.bindings, err = createBindings(ctx, s.c, s.namespaces, s.opts.StormBindings, s.opts.Writers, 2); err != nil {
		return err
	}
	return parallel(ctx, len(s.bindings), s.opts.Writers, func(ctx context.Context, i int) error {
		rb := s.bindings[i]
		return retry(ctx, "placing "+rb.Namespace+"/"+rb.Name, func() error {
			err := Place(ctx, s.c, rb, Divide(2))
			if err != nil {
				// The write may have committed even though the client saw an error.
				_ = s.c.Get(ctx, client.ObjectKeyFromObject(rb), rb)
				if placed(rb) == 2 {
					return nil
				}
			}
			return err
		})
	})
}

// Run implements Workload.
func (s *Storm) Run(ctx context.Context) (stats.Summary, time.Duration, error) {
	rec := stats.NewRecorder()
	writers := min(s.opts.Writers, len(s.bindings))
	perWriter := s.opts.StormOps / writers
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		var owned []*workv1alpha2.ResourceBinding
		for i := w; i < len(s.bindings); i += writers {
			owned = append(owned, s.bindings[i])
		}
		wg.Add(1)
		go func(w int, owned []*workv1alpha2.ResourceBinding) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(s.opts.Seed, uint64(w)+2))
			for op := 0; op < perWriter && ctx.Err() == nil; op++ {
				rb := owned[op%len(owned)]
				current := placed(rb)
				next := int32(rng.IntN(3)) + 1 // 1..3, shifted past the current count: a real change
				if next >= current {
					next++
				}
				began := time.Now()
				err := Place(ctx, s.c, rb, Divide(next))
				rec.Observe(time.Since(began), err)
				if next < current && isQuotaExceeded(err) {
					// Quota must never stand in the way of giving resources back.
					rec.Count(ScaleDownsDenied)
				}
				if err != nil && !isQuotaExceeded(err) {
					// Did it commit? Re-read, as the scheduler's informer would tell it.
					_ = s.c.Get(ctx, client.ObjectKeyFromObject(rb), rb)
				}
			}
		}(w, owned)
	}
	wg.Wait()
	return rec.Summary(), time.Since(start), ctx.Err()
}

func placed(rb *workv1alpha2.ResourceBinding) int32 {
	var n int32
	for _, tc := range rb.Spec.Clusters {
		n += tc.Replicas
	}
	return n
}
