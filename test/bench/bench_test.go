package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/karmada-quota/karmada-quota/test/bench/internal/harness"
	"github.com/karmada-quota/karmada-quota/test/bench/internal/report"
	"github.com/karmada-quota/karmada-quota/test/bench/internal/workload"
)

// TestBenchCorrectness runs every configuration and workload at a tiny size and checks only what must hold on
// any machine; timings are never asserted.
//
//   - karmada-quota never admits past hard, and once its controller has caught up every status's used is exact
//     (in all, and on each member cluster) and no reservation is left, except those of writes that failed after it
//     admitted them, which expire with its reservation TTL: that is its design (README).
//   - karmada-quota with limits on member clusters holds the same, and never places past a cluster's limit or a
//     cluster group's, whose used in the status is exact too; every quota has those limits.
//   - karmada-quota with one business quota over each workload's namespaces (spread and storm; the hot quota's one
//     namespace is n/a) holds the same over them together: the bindings stored across the namespaces never exceed
//     its hard, and its status settles to the truth, its used over them all and each namespace's part; it is the only
//     quota of the workload, and governs every namespace of it.
//   - Karmada's FRQ never admits past hard when each binding is placed once (hot quota, spread): its webhook
//     charges status.overallUsed by compare-and-swap before a write commits, nothing else writes these bindings,
//     and its recount (which could undercount from a lagging cache) runs only when the quota is created, before
//     any placement, so its count can only be too high, never too low. In the scale storm a scale-down it
//     charges may never commit (the apiserver re-runs admission when it retries a write, and times out slow
//     webhooks), which undercounts; and its controller recounts only every 5 minutes or on a binding delete. So
//     its storm over-admission and its drift are findings the report shows, not failures here.
//   - The report has a row for every configuration and workload.
func TestBenchCorrectness(t *testing.T) {
	opts := DefaultOptions()
	opts.Workload.Writers = 16
	opts.Workload.HotBindings = 64
	opts.Workload.SpreadNamespaces = 8
	opts.Workload.SpreadBindings = 4
	opts.Workload.StormNamespaces = 4
	opts.Workload.StormBindings = 8
	opts.Workload.StormOps = 128
	opts.SettleTimeout = 20 * time.Second
	// Two rounds: the second runs every configuration again in namespaces of its own, in another order, on a
	// control plane that already holds the first round's objects.
	opts.Rounds = 2
	opts.WorkDir = t.TempDir()
	opts.Progress = testWriter{t}

	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	rep, err := harness.Run(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "performance.md")
	if err := report.Write(out, rep, "go test ./test/bench"); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + string(md))

	if len(rep.Rounds) != opts.Rounds {
		t.Fatalf("%d rounds measured, want %d", len(rep.Rounds), opts.Rounds)
	}
	for round, configs := range rep.Rounds {
		if len(configs) != len(harness.AllConfigs) {
			t.Fatalf("round %d: %d configurations measured, want %d", round+1, len(configs), len(harness.AllConfigs))
		}
		for i, c := range configs {
			if c == nil || c.Key != harness.AllConfigs[i] || c.Round != round+1 {
				t.Fatalf("round %d: result %d is %+v, want configuration %s of that round", round+1, i, c, harness.AllConfigs[i])
			}
			checkConfig(t, c, opts, string(md))
		}
	}
}

// checkConfig checks one configuration's results in one round, and that the report shows them.
func checkConfig(t *testing.T, c *harness.ConfigResult, opts harness.Options, md string) {
	t.Helper()
	if c.Err != nil {
		t.Errorf("round %d: %s could not be measured: %v", c.Round, c.Name, c.Err)
		return
	}
	var want, notRun []string
	for _, w := range harness.AllWorkloads {
		if harness.NotRunBy(c.Key, w) != "" {
			notRun = append(notRun, w)
		} else {
			want = append(want, w)
		}
	}
	if len(c.Workloads) != len(want) || len(c.NotRun) != len(notRun) {
		t.Errorf("round %d: %s: %d workloads measured and %d not run, want %d (%s) and %d (%s)", c.Round, c.Name,
			len(c.Workloads), len(c.NotRun), len(want), strings.Join(want, ", "), len(notRun), strings.Join(notRun, ", "))
	}
	// A workload not run says so in the results, n/a, never as a zero.
	for _, n := range c.NotRun {
		if row := "| " + c.Name + " | " + n.Workload + " | n/a"; c.Round == 1 && !strings.Contains(md, row) {
			t.Errorf("the report has no n/a row for %s, %s", c.Name, n.Workload)
		}
	}
	for _, w := range c.Workloads {
		// Round 1 has the full tables; every round has its figures in the table of rounds.
		row := "| " + c.Name + " | " + w.Name + " | "
		if n := strings.Count(md, row); n < 2 && c.Round == 1 {
			t.Errorf("the report has %d rows for %s, %s; want one in the results and one in the table of rounds at least", n, c.Name, w.Name)
		}
		if w.Summary.Ops == 0 {
			t.Errorf("round %d: %s, %s: no write was made", c.Round, c.Name, w.Name)
		}
		a := w.Audit
		if c.Enforcing && a.Ungoverned != 0 {
			t.Errorf("round %d: %s, %s: %d of %d namespaces governed by no quota", c.Round, c.Name, w.Name, a.Ungoverned, a.Namespaces)
		}
		// The business quota must be what was audited: one quota, shared by every namespace of the workload.
		if c.Key == harness.ConfigKarmadaQuotaBusiness && (a.SharedQuotas != 1 || a.Quotas != 1 || a.SharedNamespaces != a.Namespaces || a.Namespaces < 2) {
			t.Errorf("round %d: %s, %s: %d quotas audited, %d of them shared, governing %d of the %d namespaces; want one business quota over them all",
				c.Round, c.Name, w.Name, a.Quotas, a.SharedQuotas, a.SharedNamespaces, a.Namespaces)
		}
		switch c.Key {
		case harness.ConfigKarmadaQuota, harness.ConfigKarmadaQuotaClusterLimits, harness.ConfigKarmadaQuotaBusiness:
			if a.OverQuotas != 0 {
				t.Errorf("round %d: %s, %s: admitted past hard in %d quotas (%d milli-CPU over)", c.Round, c.Name, w.Name, a.OverQuotas, a.Over)
			}
			if a.MemberOverLimits != 0 {
				t.Errorf("round %d: %s, %s: placed past %d cluster and group limits (%d milli-CPU over)", c.Round, c.Name, w.Name, a.MemberOverLimits, a.MemberOver)
			}
			// Each cluster's limit and the group's, in every quota: or the configuration measures nothing more
			// than karmada-quota alone.
			if want := a.Quotas * (len(workload.Clusters) + 1); c.Key == harness.ConfigKarmadaQuotaClusterLimits && a.MemberLimits != want {
				t.Errorf("round %d: %s, %s: %d cluster and group limits audited, want %d", c.Round, c.Name, w.Name, a.MemberLimits, want)
			}
			if a.DriftQuotas != 0 {
				t.Errorf("round %d: %s, %s: after settling, %d quotas drift (↑%dm ↓%dm; %d namespaces' parts of a business quota off)",
					c.Round, c.Name, w.Name, a.DriftQuotas, a.DriftUp, a.DriftDown, a.DriftParts)
			}
			// A write the apiserver gave up on after the webhook admitted it keeps its reservation until the
			// TTL expires (by design: it can only refuse, never admit). Anything else must be settled.
			if maxPending := int64(w.Summary.Failed()) * maxWriteMilliCPU; a.Pending > maxPending {
				t.Errorf("round %d: %s, %s: %dm CPU still reserved after settling, more than the %d failed writes explain",
					c.Round, c.Name, w.Name, a.Pending, w.Summary.Failed())
			}
		case harness.ConfigFRQ, harness.ConfigFRQRaised:
			if w.Name != "scale storm" && a.OverQuotas != 0 {
				t.Errorf("round %d: %s, %s: admitted past hard in %d quotas with one placement per binding", c.Round, c.Name, w.Name, a.OverQuotas)
			}
			if a.OverQuotas != 0 || !a.Settled() {
				t.Logf("finding, not a failure: round %d: %s, %s: %d quotas over hard (%dm CPU), %d drifting (↑%dm ↓%dm)",
					c.Round, c.Name, w.Name, a.OverQuotas, a.Over, a.DriftQuotas, a.DriftUp, a.DriftDown)
			}
		}
	}
	if harness.IsKarmadaQuota(c.Key) && !c.Settling.Exact {
		t.Errorf("round %d: %s: the statuses did not become exact within %s", c.Round, c.Name, opts.SettleTimeout)
	}
}

// maxWriteMilliCPU is the most CPU one write of the workloads adds: a storm scale-up from 1 to 4 replicas of
// 500m.
const maxWriteMilliCPU = 3 * 500

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestScaleCorrectness runs the scale measurement at a tiny size and checks only that it measures what it says:
// every recount finished, every quiet admission was answered, and the audited statuses are exact.
func TestScaleCorrectness(t *testing.T) {
	opts := DefaultScaleOptions()
	opts.Sizes = []int{40, 120}
	opts.HotBindings, opts.HotWriters, opts.QuietWrites = 32, 8, 20
	opts.SetupWriters = 16
	opts.WorkDir = t.TempDir()
	opts.Progress = testWriter{t}

	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	rep, err := harness.RunScale(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + report.ScaleMarkdown(rep, "go test ./test/bench"))
	if len(rep.Steps) != len(opts.Sizes) {
		t.Fatalf("%d steps measured, want %d", len(rep.Steps), len(opts.Sizes))
	}
	for _, s := range rep.Steps {
		if s.WarmRecount <= 0 || s.ColdRecount <= 0 || s.ControllerReady <= 0 || s.WebhookReady <= 0 {
			t.Errorf("%d bindings: a time was not measured: %+v", s.Bindings, s)
		}
		if s.ControllerRSS <= 0 || s.WebhookRSS <= 0 || s.ControllerHeap <= 0 || s.WebhookHeap <= 0 {
			t.Errorf("%d bindings: a memory was not measured: %+v", s.Bindings, s)
		}
		for name, sum := range map[string]interface{ Failed() int }{"alone": s.QuietAlone, "under load": s.QuietUnderLoad} {
			if sum.Failed() != 0 {
				t.Errorf("%d bindings: %d quiet admissions %s failed", s.Bindings, sum.Failed(), name)
			}
		}
		if s.Exact != s.Audited || s.Audited == 0 {
			t.Errorf("%d bindings: %d of %d audited quotas exact", s.Bindings, s.Exact, s.Audited)
		}
	}
}
