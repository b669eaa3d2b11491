package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/internal/testenv"
	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
	"github.com/karmada-quota/karmada-quota/test/bench/internal/audit"
	"github.com/karmada-quota/karmada-quota/test/bench/internal/controlplane"
	"github.com/karmada-quota/karmada-quota/test/bench/internal/proc"
	"github.com/karmada-quota/karmada-quota/test/bench/internal/promtext"
	"github.com/karmada-quota/karmada-quota/test/bench/internal/stats"
	"github.com/karmada-quota/karmada-quota/test/bench/internal/systems"
	"github.com/karmada-quota/karmada-quota/test/bench/internal/workload"
)

// ScaleOptions size the scale run: karmada-quota over many quotas and bindings, grown step by step on one control
// plane.
type ScaleOptions struct {
	// Sizes are the binding counts measured, increasing; each step adds namespaces (one quota each) to reach the
	// next.
	Sizes []int
	// PerNamespace is how many placed bindings each namespace holds.
	PerNamespace int
	// HotBindings are placed and re-placed by HotWriters in one namespace while the quiet admissions are timed.
	HotBindings, HotWriters int
	// QuietWrites are the placements timed in a quiet namespace, one after another: half alone, half while
	// the hot namespace is loaded.
	QuietWrites int
	// SetupWriters create the namespaces, quotas and bindings of each step.
	SetupWriters int
	// SettleTimeout bounds the wait for the audited statuses to be exact.
	SettleTimeout time.Duration
	// ControllerArgs and WebhookArgs are extra flags for every quota-controller and quota-webhook started (to study
	// a setting); the report says the defaults were used only when there are none.
	ControllerArgs, WebhookArgs []string
	WorkDir                     string
	Progress                    io.Writer
}

// ScaleReport is what a scale run measured.
type ScaleReport struct {
	Options ScaleOptions
	Machine Machine
	Started time.Time
	Took    time.Duration
	Steps   []ScaleStep
}

// ScaleStep is one size.
type ScaleStep struct {
	Bindings, Quotas int
	// Grow is how long creating what the step added took (setup, not a measure of karmada-quota).
	Grow time.Duration
	// ControllerReady and WebhookReady are the times from process start to /readyz (caches synced).
	ControllerReady, WebhookReady time.Duration
	// ColdRecount is the first controller's pass over every quota, writing the status of the quotas new in this
	// step; WarmRecount a restarted controller's pass over exact statuses, which reads, recounts and writes
	// nothing. Both are timed from ready to the last reconcile.
	ColdRecount, WarmRecount time.Duration
	// ControllerRSS is measured after the warm recount, WebhookRSS once ready; the After values after the
	// admission phase.
	ControllerRSS, WebhookRSS, ControllerRSSAfter, WebhookRSSAfter int64
	// WarmWrites are the quotas and ledgers the warm recount wrote (their resourceVersion changed): none, over
	// exact statuses.
	WarmWrites int
	// ControllerHeap and WebhookHeap are the live heaps (QuotaProcess.LiveHeap) right after ControllerRSS and
	// WebhookRSSAfter: what the processes hold, without the collector's headroom.
	ControllerHeap, WebhookHeap int64
	// QuietAlone and QuietUnderLoad time placements in a quiet namespace, without and with the hot namespace loaded.
	QuietAlone, QuietUnderLoad stats.Summary
	// HotPerSecond is the hot namespace's placements decided per second meanwhile (its quota refuses none, so all
	// admitted, failures left out), and Hot their latencies.
	HotPerSecond float64
	Hot          stats.Summary
	// Audited quotas and how many of them were exact after settling.
	Audited, Exact int
}

// RunScale runs the scale measurement. It always stops what it started.
func RunScale(ctx context.Context, opts ScaleOptions) (*ScaleReport, error) {
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	say := func(format string, args ...any) {
		fmt.Fprintf(progress, "%s bench --scale: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
	}
	logDir := filepath.Join(opts.WorkDir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, err
	}
	rep := &ScaleReport{Options: opts, Started: time.Now()}
	reg, err := proc.NewRegistry(opts.WorkDir)
	if err != nil {
		return nil, err
	}
	defer reg.Close()
	say("building cmd/quota-webhook and cmd/quota-controller")
	webhookBin, controllerBin, _, err := buildQuotaBinaries(ctx, filepath.Join(opts.WorkDir, "bin"))
	if err != nil {
		return nil, err
	}
	say("starting etcd and kube-apiserver")
	cp, err := controlplane.Start(ctx, reg, opts.WorkDir)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := cp.Stop(); err != nil {
			say("stopping the control plane: %v", err)
		}
	}()
	rep.Machine = describeMachine(ctx, cp, "")
	env := systems.Env{CP: cp, Reg: reg, LogDir: logDir}

	quiet := scaleNamespace(0)
	have := 0
	for i, size := range opts.Sizes {
		step := ScaleStep{Bindings: size, Quotas: size / opts.PerNamespace}
		say("step %d: growing to %d bindings in %d namespaces", i+1, size, step.Quotas)
		start := time.Now()
		if err := growScale(ctx, cp.Client, have/opts.PerNamespace, step.Quotas, opts); err != nil {
			return rep, fmt.Errorf("growing to %d bindings: %w", size, err)
		}
		step.Grow = time.Since(start)
		have = size
		if err := measureScale(ctx, env, cp, &step, i, quiet, webhookBin, controllerBin, opts, say); err != nil {
			return rep, fmt.Errorf("at %d bindings: %w", size, err)
		}
		rep.Steps = append(rep.Steps, step)
		say("step %d: controller ready %s, cold recount %s, warm recount %s, RSS %d MiB; webhook ready %s, RSS %d MiB; "+
			"quiet admissions p99 %s alone, %s under load (%.0f hot writes/s); %d of %d audited quotas exact",
			i+1, step.ControllerReady.Round(time.Millisecond), step.ColdRecount.Round(time.Millisecond), step.WarmRecount.Round(time.Millisecond),
			step.ControllerRSSAfter>>20, step.WebhookReady.Round(time.Millisecond), step.WebhookRSSAfter>>20,
			step.QuietAlone.P99.Round(100*time.Microsecond), step.QuietUnderLoad.P99.Round(100*time.Microsecond), step.HotPerSecond, step.Exact, step.Audited)
	}
	rep.Took = time.Since(rep.Started)
	return rep, nil
}

func scaleNamespace(i int) string { return fmt.Sprintf("scale-%05d", i) }

// scaleHard is every scale quota's limit: far above what its namespace uses, so nothing is refused and every
// placement is decided and reserved.
func scaleHard() corev1.ResourceList {
	return workload.Hard(1_000_000 * workload.ReplicaCPU.MilliValue())
}

// growScale creates namespaces [from, to), each with its quota and PerNamespace bindings placed at 2 replicas. No
// webhook is registered while it runs: the statuses are the controller's to fill.
func growScale(ctx context.Context, c client.Client, from, to int, opts ScaleOptions) error {
	if err := parallelDo(ctx, to-from, opts.SetupWriters, func(ctx context.Context, i int) error {
		ns := scaleNamespace(from + i)
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		q := testenv.Quota(ns, systems.QuotaName, scaleHard())
		if err := c.Create(ctx, q); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		return nil
	}); err != nil {
		return err
	}
	n := (to - from) * opts.PerNamespace
	return parallelDo(ctx, n, opts.SetupWriters, func(ctx context.Context, i int) error {
		ns := scaleNamespace(from + i/opts.PerNamespace)
		b := utiltesting.MakeBinding(ns, fmt.Sprintf("rb-%03d", i%opts.PerNamespace)).
			Requests(corev1.ResourceList{corev1.ResourceCPU: workload.ReplicaCPU, corev1.ResourceMemory: workload.ReplicaMemory}).
			Cluster(workload.Clusters[0], 1).Cluster(workload.Clusters[1], 1)
		if _, err := testenv.CreateBinding(ctx, c, b); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		return nil
	})
}

func measureScale(ctx context.Context, env systems.Env, cp *controlplane.ControlPlane, step *ScaleStep, index int, quiet string,
	webhookBin, controllerBin string, opts ScaleOptions, say func(string, ...any)) error {
	// Each controller takes a lease of its own, so none waits for the previous one's to lapse.
	lease := func(kind string) string { return fmt.Sprintf("--leader-elect-resource-name=scale-%d-%s", index, kind) }

	say("step %d: starting a controller over statuses %d quotas do not have yet", index+1, step.Quotas-countBefore(index, opts))
	cold, err := systems.StartQuotaController(ctx, env, fmt.Sprintf("quota-controller-%d-cold", index), controllerBin, append([]string{lease("cold")}, opts.ControllerArgs...)...)
	if err != nil {
		return err
	}
	if step.ColdRecount, err = waitRecount(ctx, cold, step.Quotas); err != nil {
		_ = cold.Stop(ctx)
		return fmt.Errorf("cold recount: %w", err)
	}
	_ = cold.Stop(ctx)

	say("step %d: restarting the controller over exact statuses", index+1)
	before, err := storedVersions(ctx, cp.Client)
	if err != nil {
		return err
	}
	ctrl, err := systems.StartQuotaController(ctx, env, fmt.Sprintf("quota-controller-%d", index), controllerBin, append([]string{lease("warm")}, opts.ControllerArgs...)...)
	if err != nil {
		return err
	}
	defer func() { _ = ctrl.Stop(context.WithoutCancel(ctx)) }()
	step.ControllerReady = ctrl.Ready
	if step.WarmRecount, err = waitRecount(ctx, ctrl, step.Quotas); err != nil {
		return fmt.Errorf("warm recount: %w", err)
	}
	after, err := storedVersions(ctx, cp.Client)
	if err != nil {
		return err
	}
	for key, version := range after {
		if before[key] != version {
			step.WarmWrites++
		}
	}
	step.ControllerRSS, _ = ctrl.RSS()
	if step.ControllerHeap, err = ctrl.LiveHeap(ctx, filepath.Join(env.LogDir, fmt.Sprintf("quota-controller-%d.heap.pprof", step.Bindings))); err != nil {
		return fmt.Errorf("the controller's heap: %w", err)
	}

	say("step %d: starting the webhook", index+1)
	hook, err := systems.StartQuotaWebhook(ctx, env, fmt.Sprintf("quota-webhook-%d", index), webhookBin, opts.WebhookArgs...)
	if err != nil {
		return err
	}
	defer func() { _ = hook.Stop(context.WithoutCancel(ctx)) }()
	step.WebhookReady = hook.Ready
	step.WebhookRSS, _ = hook.RSS()
	if err := hook.Register(ctx); err != nil {
		return err
	}

	// The quiet namespace's new bindings, and a hot namespace of this step's own.
	hot := fmt.Sprintf("scale-hot-%d", index)
	if err := cp.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: hot}}); err != nil {
		return err
	}
	if err := cp.Client.Create(ctx, testenv.Quota(hot, systems.QuotaName, scaleHard())); err != nil {
		return err
	}
	quietBindings, err := createUnplaced(ctx, cp.Client, quiet, fmt.Sprintf("quiet-%d", index), opts.QuietWrites, opts.SetupWriters)
	if err != nil {
		return err
	}
	hotBindings, err := createUnplaced(ctx, cp.Client, hot, "hot", opts.HotBindings, opts.SetupWriters)
	if err != nil {
		return err
	}
	// The apiserver takes the registration up asynchronously: place until the webhook has been called.
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		rb := hotBindings[0]
		_ = workload.Place(ctx, cp.Client, rb, workload.Flip(rb))
		return webhookCalled(ctx, hookSystem{hook}), nil
	}); err != nil {
		return fmt.Errorf("the webhook was never called: %w", err)
	}

	half := opts.QuietWrites / 2
	say("step %d: %d quiet placements alone", index+1, half)
	step.QuietAlone = workload.PlaceOneByOne(ctx, cp.Client, quietBindings[:half]).Summary()

	say("step %d: %d quiet placements while %d writers load %s", index+1, opts.QuietWrites-half, opts.HotWriters, hot)
	load := workload.StartChurn(ctx, cp.Client, hotBindings, opts.HotWriters)
	step.Hot, step.HotPerSecond = load.During(func() {
		step.QuietUnderLoad = workload.PlaceOneByOne(ctx, cp.Client, quietBindings[half:]).Summary()
	})
	load.Stop()
	step.ControllerRSSAfter, _ = ctrl.RSS()
	step.WebhookRSSAfter, _ = hook.RSS()
	if step.WebhookHeap, err = hook.LiveHeap(ctx, filepath.Join(env.LogDir, fmt.Sprintf("quota-webhook-%d.heap.pprof", step.Bindings))); err != nil {
		return fmt.Errorf("the webhook's heap: %w", err)
	}

	// Audited: the quiet and hot namespaces, and a sample of the others.
	audited := []string{quiet, hot}
	for i := 1; i < step.Quotas && len(audited) < 52; i += max(1, step.Quotas/50) {
		audited = append(audited, scaleNamespace(i))
	}
	sys := &systems.KarmadaQuota{Env: env}
	if _, err := audit.Settle(ctx, cp.Client, sys, audited, opts.SettleTimeout); err != nil {
		return err
	}
	res, err := audit.Audit(ctx, cp.Client, sys, audited)
	if err != nil {
		return err
	}
	step.Audited, step.Exact = res.Quotas, res.Quotas-res.DriftQuotas
	return nil
}

// countBefore is how many quotas the steps before index created.
func countBefore(index int, opts ScaleOptions) int {
	if index == 0 {
		return 0
	}
	return opts.Sizes[index-1] / opts.PerNamespace
}

// storedVersions maps every quota and ledger object, by kind and key, to its resourceVersion.
func storedVersions(ctx context.Context, c client.Client) (map[string]string, error) {
	out := map[string]string{}
	var quotas quotav1alpha1.KarmadaQuotaList
	if err := c.List(ctx, &quotas); err != nil {
		return nil, err
	}
	for _, q := range quotas.Items {
		out["quota "+q.Namespace+"/"+q.Name] = q.ResourceVersion
	}
	var ledgers quotav1alpha1.KarmadaQuotaLedgerList
	if err := c.List(ctx, &ledgers); err != nil {
		return nil, err
	}
	for _, l := range ledgers.Items {
		out["ledger "+l.Namespace+"/"+l.Name] = l.ResourceVersion
	}
	return out, nil
}

// hookSystem lets webhookCalled read one webhook process.
type hookSystem struct{ p *systems.QuotaProcess }

func (h hookSystem) Processes() []*systems.Component { return []*systems.Component{h.p.Component} }

// waitRecount waits until the controller has reconciled at least quotas quotas and has nothing queued or in
// flight, and returns how long that took after it was ready.
//
// It reads the controller's metrics, whose every scrape lists each quota's series: at 10,000 quotas a scrape costs
// the controller some 25 ms of CPU and the bench as much to parse, so polled every 100 ms the measurement took some
// 0.6 of a core of a 2-core machine from the recount it timed (the controller's CPU profile of a cold recount: 47% of its
// CPU serving scrapes). The poll waits scrapeShare times what the last scrape took, which holds the measurement to
// a few percent of a core; what that costs in resolution, one interval, is small beside a recount that long.
func waitRecount(ctx context.Context, p *systems.QuotaProcess, quotas int) (time.Duration, error) {
	const scrapeShare = 20
	start := time.Now()
	deadline := start.Add(30 * time.Minute)
	queue := map[string]string{"name": "karmada-quota"}
	for {
		if exited, err := p.Proc.Exited(); exited {
			return time.Since(start), fmt.Errorf("%s exited: %v", p.Proc.Name, err)
		}
		asked := time.Now()
		if text, err := p.Scrape(ctx); err == nil {
			m := promtext.Parse(text)
			// The controller exports its first recount's duration once it has recounted every quota of its start,
			// after returning that start's garbage to the system: RSS read before would count it.
			if m.Sum("karmada_quota_reconcile_duration_seconds_count", nil) >= float64(quotas) &&
				m.Has("karmada_quota_first_recount_seconds") &&
				m.Has("workqueue_depth") && m.Sum("workqueue_depth", queue) == 0 && m.Sum("workqueue_unfinished_work_seconds", queue) == 0 {
				return asked.Sub(start), nil
			}
		}
		if time.Now().After(deadline) {
			return time.Since(start), fmt.Errorf("not recounted after %s", deadline.Sub(start))
		}
		interval := min(max(scrapeShare*time.Since(asked), 100*time.Millisecond), 2*time.Second)
		select {
		case <-ctx.Done():
			return time.Since(start), context.Cause(ctx)
		case <-time.After(interval):
		}
	}
}

// createUnplaced creates n unscheduled bindings name-NNNN in ns.
func createUnplaced(ctx context.Context, c client.Client, ns, name string, n, workers int) ([]*workv1alpha2.ResourceBinding, error) {
	out := make([]*workv1alpha2.ResourceBinding, n)
	err := parallelDo(ctx, n, workers, func(ctx context.Context, i int) error {
		rb, err := testenv.CreateBinding(ctx, c, utiltesting.MakeBinding(ns, fmt.Sprintf("%s-%04d", name, i)).Replicas(2).
			Requests(corev1.ResourceList{corev1.ResourceCPU: workload.ReplicaCPU, corev1.ResourceMemory: workload.ReplicaMemory}))
		out[i] = rb
		return err
	})
	return out, err
}

// parallelDo runs fn for every index in [0, n) on workers goroutines, and returns the first error.
func parallelDo(ctx context.Context, n, workers int, fn func(ctx context.Context, i int) error) error {
	var (
		next atomic.Int64
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	for w := 0; w < max(1, workers); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := fn(ctx, i); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return errors.Join(errs[0], ctx.Err())
	}
	return ctx.Err()
}
