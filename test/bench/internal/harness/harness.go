// Package harness runs the side-by-side benchmark: one fresh control plane, then each configuration in turn
// (started, warmed up, every workload prepared and measured, statuses settled and audited, stopped), each in
// its own namespaces; in as many rounds as asked, the order of the configurations rotated each round.
package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/internal/testenv"
	"github.com/karmada-quota/karmada-quota/test/bench/internal/audit"
	"github.com/karmada-quota/karmada-quota/test/bench/internal/controlplane"
	"github.com/karmada-quota/karmada-quota/test/bench/internal/proc"
	"github.com/karmada-quota/karmada-quota/test/bench/internal/promtext"
	"github.com/karmada-quota/karmada-quota/test/bench/internal/stats"
	"github.com/karmada-quota/karmada-quota/test/bench/internal/systems"
	"github.com/karmada-quota/karmada-quota/test/bench/internal/workload"
)

// Configuration names, as --configs takes them.
const (
	ConfigNone         = "none"
	ConfigAllowAll     = "allow-all"
	ConfigKarmadaQuota = "karmada-quota"
	// ConfigKarmadaQuotaClusterLimits is karmada-quota whose every quota also limits each member cluster and a
	// group of them (issue 25), sized to bind when the namespace-wide hard does or just after.
	ConfigKarmadaQuotaClusterLimits = "karmada-quota-cluster-limits"
	// ConfigKarmadaQuotaBusiness is karmada-quota with one business quota (KarmadaBusinessQuota) over each
	// workload's namespaces instead of a quota each (issue 26), allowing what theirs would together.
	ConfigKarmadaQuotaBusiness = "karmada-quota-business"
	ConfigFRQ                  = "frq"
	// ConfigFRQRaised is Karmada's FRQ at its best: webhook and controller manager at 25 times their client QPS.
	ConfigFRQRaised = "frq-raised-qps"
)

// AllConfigs is the order configurations run in.
var AllConfigs = []string{ConfigNone, ConfigAllowAll, ConfigKarmadaQuota, ConfigKarmadaQuotaClusterLimits, ConfigKarmadaQuotaBusiness, ConfigFRQ, ConfigFRQRaised}

// Workload names, as --workloads takes them.
const (
	WorkloadHot    = "hot"
	WorkloadSpread = "spread"
	WorkloadStorm  = "storm"
	// WorkloadIsolation times quiet namespaces' placements alone and beside a hot namespace (issue 28): latency
	// beside load, not throughput, so the report gives it tables of its own.
	WorkloadIsolation = workload.IsolationName
)

// AllWorkloads is the order workloads run in.
var AllWorkloads = []string{WorkloadHot, WorkloadSpread, WorkloadStorm, WorkloadIsolation}

// IsKarmadaQuota says whether configuration key runs karmada-quota, in any of its shapes.
func IsKarmadaQuota(key string) bool {
	return key == ConfigKarmadaQuota || key == ConfigKarmadaQuotaClusterLimits || key == ConfigKarmadaQuotaBusiness
}

// NotRunBy says why configuration key does not run workload, or "" when it does. A business quota over the hot
// quota's one namespace would be that namespace's quota under another name: what karmada-quota measures. The
// isolation workload's hot namespace is one namespace too, and its quiet namespaces are written one write at a
// time, so one business quota over them would decide the same writes against one ledger, never two at once.
func NotRunBy(key, workload string) string {
	if key != ConfigKarmadaQuotaBusiness {
		return ""
	}
	switch workload {
	case WorkloadHot:
		return "n/a: one namespace, and a business quota over one namespace is its namespace's quota (karmada-quota's row)"
	case WorkloadIsolation:
		return "n/a: the hot namespace is one namespace, whose business quota is its namespace's quota, and the quiet " +
			"namespaces are written one write at a time, never two together (karmada-quota's row)"
	}
	return ""
}

// Options are a run's settings.
type Options struct {
	Workload workload.Options
	Configs  []string
	// Workloads are the workloads each configuration runs (AllWorkloads when empty), always in AllWorkloads' order.
	Workloads []string
	// SettleTimeout bounds the wait for the quota controllers to make every status exact.
	SettleTimeout time.Duration
	// FRQSyncPeriod is karmada-controller-manager's --federated-resource-quota-sync-period; 0 keeps its default.
	FRQSyncPeriod time.Duration
	// KarmadaBin holds karmada-webhook and karmada-controller-manager.
	KarmadaBin string
	// QuotaWebhookArgs and FRQWebhookArgs are extra flags for quota-webhook and karmada-webhook, to study a
	// setting; none by default, so each product runs as it ships.
	QuotaWebhookArgs, FRQWebhookArgs []string
	// QuotaControllerArgs are extra flags for quota-controller.
	QuotaControllerArgs []string
	// WorkDir holds the kubeconfig, the built binaries and the components' logs (WorkDir/logs).
	WorkDir string
	// Rounds is how many times every configuration is measured, each round in fresh namespaces. One run of a
	// configuration decides little: its throughput moves by a quarter between runs minutes apart on a quiet
	// machine (docs/performance.md). The order rotates each round, so that no configuration always runs first,
	// on the emptiest etcd, or right after the same neighbour. 0 or 1: once.
	Rounds int
	// Progress receives one line per step.
	Progress io.Writer
}

// Report is everything a run measured.
type Report struct {
	Options Options
	Machine Machine
	Started time.Time
	Took    time.Duration
	// Rounds are every round's results, each in the order of Options.Configs whatever the order they ran in.
	Rounds [][]*ConfigResult
	LogDir string
}

// FirstRound is the first round's results, which the report details; nil before any round ran.
func (r *Report) FirstRound() []*ConfigResult {
	if len(r.Rounds) == 0 {
		return nil
	}
	return r.Rounds[0]
}

// ConfigResult is one configuration's results.
type ConfigResult struct {
	Key, Name, Description string
	Enforcing              bool
	// Round counts from 1.
	Round     int
	Workloads []*WorkloadResult
	// NotRun are the workloads of the run this configuration does not run, and why (NotRunBy).
	NotRun []NotRun
	// Settling says how long the statuses took to become exact after the last workload, and whether they did
	// within the timeout.
	Settling audit.Settling
	// Err is why the configuration could not be measured, if it could not.
	Err error
}

// NotRun is a workload a configuration does not run.
type NotRun struct {
	Workload, Why string
}

// WorkloadResult is one workload under one configuration.
type WorkloadResult struct {
	Name    string
	Summary stats.Summary
	Wall    time.Duration
	// Audit compares the quotas with the stored bindings after settling.
	Audit audit.Result
	// CPU is the cores each process used during the timed writes, by role.
	CPU      map[string]float64
	Evidence []Evidence
	// Isolation is the isolation workload's own measures (its Summary holds its quiet writes of both phases); nil
	// for the other workloads.
	Isolation *workload.IsolationResult
	// LedgerWrites counts the writes (POST and PUT, 409 Conflicts included) of karmada-quota's ledgers, of namespace
	// quotas and of business quotas, that the apiserver served during the timed writes: from its metrics. Zero for
	// the other configurations.
	LedgerWrites float64
}

// OpsPerSecond is placement writes completed per second of the timed phase, whatever their outcome.
func (w *WorkloadResult) OpsPerSecond() float64 {
	if w.Wall <= 0 {
		return 0
	}
	return float64(w.Summary.Ops) / w.Wall.Seconds()
}

// DecidedPerSecond is writes per second that got an answer, admitted or refused by quota: the throughput a
// scheduler sees, since a failed write (a webhook timeout, a 500) must be made again.
func (w *WorkloadResult) DecidedPerSecond() float64 {
	if w.Wall <= 0 {
		return 0
	}
	return float64(w.Summary.Admitted+w.Summary.Denied) / w.Wall.Seconds()
}

// Run runs the benchmark. It always stops what it started, also when ctx is cancelled.
func Run(ctx context.Context, opts Options) (*Report, error) {
	if len(opts.Configs) == 0 {
		opts.Configs = AllConfigs
	}
	if len(opts.Workloads) == 0 {
		opts.Workloads = AllWorkloads
	}
	for _, w := range opts.Workloads {
		if !contains(AllWorkloads, w) {
			return nil, fmt.Errorf("unknown workload %q (want %s)", w, strings.Join(AllWorkloads, ", "))
		}
	}
	// In AllWorkloads' order, whatever the order asked.
	opts.Workloads = slices.DeleteFunc(slices.Clone(AllWorkloads), func(w string) bool { return !contains(opts.Workloads, w) })
	logDir := filepath.Join(opts.WorkDir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, err
	}
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	say := func(format string, args ...any) {
		fmt.Fprintf(progress, "%s bench: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
	}
	report := &Report{Options: opts, Started: time.Now(), LogDir: logDir}

	reg, err := proc.NewRegistry(opts.WorkDir)
	if err != nil {
		return nil, err
	}
	defer reg.Close()

	var webhookBin, controllerBin, allowAllBin string
	if slices.ContainsFunc(opts.Configs, IsKarmadaQuota) || contains(opts.Configs, ConfigAllowAll) {
		say("building cmd/quota-webhook, cmd/quota-controller and test/bench/cmd/allow-all-webhook")
		if webhookBin, controllerBin, allowAllBin, err = buildQuotaBinaries(ctx, filepath.Join(opts.WorkDir, "bin")); err != nil {
			return nil, err
		}
	}
	if contains(opts.Configs, ConfigFRQ) || contains(opts.Configs, ConfigFRQRaised) {
		for _, b := range []string{"karmada-webhook", "karmada-controller-manager"} {
			if _, err := os.Stat(filepath.Join(opts.KarmadaBin, b)); err != nil {
				return nil, fmt.Errorf("%s not found in %s: build it with `make %s/%s`", b, opts.KarmadaBin, opts.KarmadaBin, b)
			}
		}
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
	report.Machine = describeMachine(ctx, cp, opts.KarmadaBin)
	if err := workload.JoinClusters(ctx, cp.Client); err != nil {
		return nil, err
	}

	env := systems.Env{CP: cp, Reg: reg, LogDir: logDir}
	rounds := max(opts.Rounds, 1)
	for round := 1; round <= rounds; round++ {
		results := make([]*ConfigResult, len(opts.Configs))
		report.Rounds = append(report.Rounds, results)
		for k := range opts.Configs {
			// Rotated: round 2 starts with the second configuration, and so on.
			at := (k + round - 1) % len(opts.Configs)
			key := opts.Configs[at]
			sys, err := newSystem(key, env, opts, webhookBin, controllerBin, allowAllBin)
			if err != nil {
				return nil, err
			}
			say("round %d of %d, configuration %s: starting", round, rounds, sys.Name())
			res := runConfig(ctx, cp, sys, key, namespacePrefix(key, round), opts, say)
			res.Round = round
			results[at] = res
			if res.Err != nil {
				say("configuration %s failed: %v", sys.Name(), res.Err)
			}
			if ctx.Err() != nil {
				return report, ctx.Err()
			}
		}
	}
	report.Took = time.Since(report.Started)
	return report, nil
}

// namespacePrefix names the namespaces of a configuration's round: the configuration's key in the first round,
// so that a one-round report reads as before, and the round appended after it.
func namespacePrefix(key string, round int) string {
	if round == 1 {
		return key
	}
	return fmt.Sprintf("%s-r%d", key, round)
}

func newSystem(key string, env systems.Env, opts Options, webhookBin, controllerBin, allowAllBin string) (systems.System, error) {
	switch key {
	case ConfigNone:
		return systems.None{}, nil
	case ConfigAllowAll:
		return &systems.AllowAll{Env: env, Bin: allowAllBin}, nil
	case ConfigKarmadaQuota, ConfigKarmadaQuotaClusterLimits, ConfigKarmadaQuotaBusiness:
		return &systems.KarmadaQuota{Env: env, WebhookBin: webhookBin, ControllerBin: controllerBin,
			ExtraWebhookArgs: opts.QuotaWebhookArgs, ExtraControllerArgs: opts.QuotaControllerArgs,
			LimitMembers: key == ConfigKarmadaQuotaClusterLimits, Business: key == ConfigKarmadaQuotaBusiness}, nil
	case ConfigFRQ:
		return &systems.FRQ{Env: env, Bin: opts.KarmadaBin, SyncPeriod: opts.FRQSyncPeriod, ExtraWebhookArgs: opts.FRQWebhookArgs}, nil
	case ConfigFRQRaised:
		return &systems.FRQ{Env: env, Bin: opts.KarmadaBin, SyncPeriod: opts.FRQSyncPeriod, Label: "Karmada FRQ, raised QPS",
			ExtraWebhookArgs:    append(slices.Clone(systems.RaisedQPS), opts.FRQWebhookArgs...),
			ExtraControllerArgs: systems.RaisedQPS}, nil
	default:
		return nil, fmt.Errorf("unknown configuration %q (want %s)", key, strings.Join(AllConfigs, ", "))
	}
}

// runConfig measures one configuration, key, in namespaces named after prefix.
func runConfig(ctx context.Context, cp *controlplane.ControlPlane, sys systems.System, key, prefix string, opts Options, say func(string, ...any)) (res *ConfigResult) {
	res = &ConfigResult{Key: key, Name: sys.Name(), Enforcing: sys.Enforcing()}
	defer func() {
		// Stopping must not depend on the run's context: an interrupted run still unregisters and stops.
		stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := sys.Stop(stopCtx); err != nil {
			res.Err = errors.Join(res.Err, fmt.Errorf("stopping: %w", err))
		}
		res.Description = sys.Describe()
	}()
	if err := sys.Start(ctx); err != nil {
		res.Err = err
		return res
	}
	var quotas workload.QuotaSystem
	if sys.Enforcing() {
		quotas = sys
	}
	if err := warmUp(ctx, cp.Client, sys, prefix); err != nil {
		res.Err = fmt.Errorf("warming up: %w", err)
		return res
	}
	// The recount controller must be seen working before its results are trusted.
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return sys.ControllerWrote(ctx, prefix+"-warmup")
	}); err != nil {
		res.Err = fmt.Errorf("the quota controller never wrote the warm-up quota's status: %w", err)
		return res
	}
	var workloads []workload.Workload
	for _, name := range opts.Workloads {
		var w workload.Workload
		switch name {
		case WorkloadHot:
			w = workload.NewHot(cp.Client, quotas, prefix, opts.Workload)
		case WorkloadSpread:
			w = workload.NewSpread(cp.Client, quotas, prefix, opts.Workload)
		case WorkloadStorm:
			w = workload.NewStorm(cp.Client, quotas, prefix, opts.Workload)
		case WorkloadIsolation:
			w = workload.NewIsolation(cp.Client, quotas, prefix, opts.Workload)
		}
		if why := NotRunBy(key, name); why != "" {
			res.NotRun = append(res.NotRun, NotRun{Workload: w.Name(), Why: why})
			continue
		}
		workloads = append(workloads, w)
	}
	var all []string
	for _, w := range workloads {
		say("configuration %s: preparing %s", sys.Name(), w.Name())
		if err := w.Prepare(ctx); err != nil {
			res.Err = fmt.Errorf("preparing %s: %w", w.Name(), err)
			return res
		}
		if err := processesAlive(sys); err != nil {
			res.Err = err
			return res
		}
		say("configuration %s: running %s", sys.Name(), w.Name())
		before := snapshot(ctx, cp, sys, true)
		// One namespace per workload: reading more would load the apiserver being measured.
		stopSampling := sampleLists(ctx, sys, w.Namespaces()[:1])
		summary, wall, err := w.Run(ctx)
		lists := stopSampling()
		after := snapshot(ctx, cp, sys, false)
		if err != nil {
			res.Err = fmt.Errorf("running %s: %w", w.Name(), err)
			return res
		}
		wr := &WorkloadResult{Name: w.Name(), Summary: summary, Wall: wall, CPU: cpuCores(before, after, wall), Evidence: evidence(key, before, after, wall)}
		wr.LedgerWrites = ledgerWrites(before, after)
		if lists != nil {
			wr.Evidence = append(wr.Evidence, *lists)
		}
		if iso, ok := w.(*workload.Isolation); ok {
			result := iso.Result()
			wr.Isolation = &result
			ratio, _ := result.P99Ratio()
			say("configuration %s: %s: quiet p50 / p99 %s / %s alone, %s / %s beside the hot namespace (%.2f×, %.0f hot writes decided/s); %d quiet writes failed",
				sys.Name(), w.Name(), roundMs(result.Alone.P50), roundMs(result.Alone.P99), roundMs(result.UnderLoad.P50), roundMs(result.UnderLoad.P99),
				ratio, result.HotDecidedPerSecond, summary.Failed())
		} else {
			say("configuration %s: %s: %d writes in %s (%.0f/s), p50 %s, p99 %s, %d admitted, %d QuotaExceeded, %d failed",
				sys.Name(), w.Name(), summary.Ops, wall.Round(time.Millisecond), wr.OpsPerSecond(), roundMs(summary.P50),
				roundMs(summary.P99), summary.Admitted, summary.Denied, summary.Failed())
		}
		res.Workloads = append(res.Workloads, wr)
		all = append(all, w.Namespaces()...)
	}
	if sys.Enforcing() {
		say("configuration %s: waiting up to %s for the statuses to settle", sys.Name(), opts.SettleTimeout)
		var err error
		if res.Settling, err = audit.Settle(ctx, cp.Client, sys, all, opts.SettleTimeout); err != nil {
			res.Err = err
			return res
		}
	}
	for i, w := range workloads {
		r, err := audit.Audit(ctx, cp.Client, sys, w.Namespaces())
		if err != nil {
			res.Err = err
			return res
		}
		res.Workloads[i].Audit = r
	}
	if err := processesAlive(sys); err != nil {
		res.Err = err
	}
	return res
}

// warmUp makes sure the configuration's webhook is the one the apiserver calls, and that the caches behind it
// are filled, before anything is measured: in namespace prefix-warmup, a placement past the quota must be refused
// (the apiserver picks up a new webhook configuration asynchronously) and one within it admitted. Where the quota
// limits member clusters, the refusal must name each cluster and the group as well: the webhook checks them, and
// reads the clusters' labels. Where quotas are shared (business quotas), the warm-up quota is a business quota over
// the warm-up namespace, and the refusal must name it. Without a quota system a placement is simply written.
func warmUp(ctx context.Context, c client.Client, sys systems.System, prefix string) error {
	ns := prefix + "-warmup"
	// Where quotas are shared, the warm-up's is shared too, by its one namespace: its webhook must then have
	// read the namespace's labels and the business quota selecting it.
	shared, shares := workload.Shares(sys)
	namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	if shares {
		namespace.Labels = shared.SharedLabels(ns)
	}
	if err := c.Create(ctx, namespace); err != nil {
		return err
	}
	rb := &workv1alpha2.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "warmup"},
		Spec: workv1alpha2.ResourceBindingSpec{
			Resource: workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: "warmup"},
			Replicas: 4,
			ReplicaRequirements: &workv1alpha2.ReplicaRequirements{
				ResourceRequest: corev1.ResourceList{corev1.ResourceCPU: workload.ReplicaCPU, corev1.ResourceMemory: workload.ReplicaMemory},
			},
		},
	}
	if sys.Enforcing() {
		// 2 replicas, 1 on each member cluster.
		limits := workload.LimitsOf(2*workload.ReplicaCPU.MilliValue(), workload.ReplicaCPU.MilliValue())
		create := func() error { return sys.CreateQuota(ctx, ns, limits) }
		if shares {
			create = func() error { return shared.CreateSharedQuota(ctx, ns, []string{ns}, limits) }
		}
		if err := create(); err != nil {
			return err
		}
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := c.Create(ctx, rb)
		if apierrors.IsAlreadyExists(err) {
			return true, c.Get(ctx, client.ObjectKeyFromObject(rb), rb)
		}
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("creating the warm-up binding: %w", err)
	}
	if !sys.Enforcing() {
		if len(sys.Processes()) == 0 {
			return workload.Place(ctx, c, rb, workload.Divide(2))
		}
		// A webhook that enforces nothing: placements go through until the apiserver calls it.
		return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			if err := workload.Place(ctx, c, rb, workload.Flip(rb)); err != nil {
				return false, nil
			}
			return webhookCalled(ctx, sys), nil
		})
	}
	var last error
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		last = workload.Place(ctx, c, rb.DeepCopy(), workload.Divide(4))
		return stats.Classify(last) == stats.QuotaExceeded, nil
	})
	if err != nil {
		return fmt.Errorf("the webhook never refused a placement past the quota (last answer: %v)", last)
	}
	if shares && !strings.Contains(last.Error(), "exceeded business quota: "+ns) {
		return fmt.Errorf("the webhook's refusal of a placement past the business quota does not name it: %v", last)
	}
	if k, ok := sys.(*systems.KarmadaQuota); ok && k.LimitMembers {
		for _, where := range append(slices.Clone(workload.Clusters), "group "+systems.ClusterGroupName) {
			if !strings.Contains(last.Error(), "in cluster "+where+":") {
				return fmt.Errorf("the webhook's refusal of a placement past every limit does not name cluster %s: %v", where, last)
			}
		}
	}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		last = workload.Place(ctx, c, rb.DeepCopy(), workload.Divide(2))
		return last == nil, nil
	})
}

// roundMs rounds a latency to a tenth of a millisecond, for the progress lines.
func roundMs(d time.Duration) time.Duration { return d.Round(100 * time.Microsecond) }

func processesAlive(sys systems.System) error {
	for _, c := range sys.Processes() {
		if exited, err := c.Proc.Exited(); exited {
			return fmt.Errorf("%s exited during the run: %v (see its log)", c.Proc.Name, err)
		}
	}
	return nil
}

func buildQuotaBinaries(ctx context.Context, dir string) (string, string, string, error) {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", dir+string(os.PathSeparator), "./cmd/quota-webhook", "./cmd/quota-controller", "./test/bench/cmd/allow-all-webhook")
	cmd.Dir = testenv.RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", "", "", fmt.Errorf("building the quota binaries: %w: %s", err, out)
	}
	return filepath.Join(dir, "quota-webhook"), filepath.Join(dir, "quota-controller"), filepath.Join(dir, "allow-all-webhook"), nil
}

// webhookCalled says whether the configuration's webhook has answered a ResourceBinding review.
func webhookCalled(ctx context.Context, sys interface{ Processes() []*systems.Component }) bool {
	for _, c := range sys.Processes() {
		if c.Role != RoleWebhook {
			continue
		}
		text, err := c.Scrape(ctx)
		if err != nil {
			return false
		}
		m := promtext.Parse(text)
		return promtext.Delta(promtext.Metrics{}, m, "controller_runtime_webhook_requests_total", map[string]string{"webhook": "/validate-resourcebinding"}) > 0
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// reservationLister is a configuration whose quotas list reservations (karmada-quota).
type reservationLister interface {
	Reservations(ctx context.Context, ns string) (listed int, folded int64, err error)
}

// sampleLists reads the quotas of namespaces every 200ms while a workload runs, when the configuration lists
// reservations, and returns a function that stops and reports the longest list seen and any folds: every status
// write carries the list, so its length is a cost.
func sampleLists(ctx context.Context, sys systems.System, namespaces []string) func() *Evidence {
	lister, ok := sys.(reservationLister)
	if !ok {
		return func() *Evidence { return nil }
	}
	var (
		longest int
		folded  int64
		stop    = make(chan struct{})
		done    = make(chan struct{})
	)
	go func() {
		defer close(done)
		for {
			for _, ns := range namespaces {
				if n, f, err := lister.Reservations(ctx, ns); err == nil {
					longest, folded = max(longest, n), max(folded, f)
				}
			}
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return func() *Evidence {
		close(stop)
		<-done
		return &Evidence{"quota status: longest reservation list sampled (first namespace)", fmt.Sprintf("%d (%d folded)", longest, folded)}
	}
}
