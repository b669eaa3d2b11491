package report

import (
	"strings"
	"testing"
	"time"

	"github.com/karmada-quota/karmada-quota/test/bench/internal/harness"
	"github.com/karmada-quota/karmada-quota/test/bench/internal/stats"
	"github.com/karmada-quota/karmada-quota/test/bench/internal/workload"
)

// isolationRun is a run of three rounds in which each configuration's quiet p99 alone is 10 ms and beside the hot
// namespace underLoad[key][round] ms; failed names a configuration whose round 1 had one quiet write fail beside hot.
func isolationRun(underLoad map[string][3]int, failed string, workloads ...string) *harness.Report {
	keys := []string{harness.ConfigNone, harness.ConfigAllowAll, harness.ConfigKarmadaQuota, harness.ConfigKarmadaQuotaClusterLimits, harness.ConfigKarmadaQuotaBusiness}
	r := &harness.Report{Options: harness.Options{Workloads: workloads, Workload: workload.Options{
		Writers: 64, HotBindings: 1024, IsolationNamespaces: 8, IsolationWrites: 100,
	}}}
	withHot := len(workloads) > 0 && workloads[0] == harness.WorkloadHot
	for round := 0; round < 3; round++ {
		var configs []*harness.ConfigResult
		for _, key := range keys {
			c := &harness.ConfigResult{Key: key, Name: "name of " + key, Round: round + 1, Enforcing: key != harness.ConfigNone && key != harness.ConfigAllowAll}
			if why := harness.NotRunBy(key, harness.WorkloadIsolation); why != "" {
				c.NotRun = append(c.NotRun, harness.NotRun{Workload: harness.WorkloadIsolation, Why: why})
			} else {
				iso := &workload.IsolationResult{
					Alone:               stats.Summary{Ops: 100, Admitted: 100, P50: 5 * time.Millisecond, P99: 10 * time.Millisecond},
					UnderLoad:           stats.Summary{Ops: 100, Admitted: 100, P50: 8 * time.Millisecond, P99: time.Duration(underLoad[key][round]) * time.Millisecond},
					Hot:                 stats.Summary{Ops: 900, Admitted: 600, Denied: 300, P50: 40 * time.Millisecond, P99: 90 * time.Millisecond},
					HotDecidedPerSecond: float64(300 + 100*round),
				}
				if key == failed && round == 0 {
					iso.UnderLoad.Admitted--
					iso.UnderLoad.Errors = map[string]int{"500 InternalError (webhook call timed out)": 1}
				}
				c.Workloads = append(c.Workloads, &harness.WorkloadResult{Name: harness.WorkloadIsolation, Summary: iso.Alone, Isolation: iso})
			}
			if withHot && c.NotRun == nil {
				c.Workloads = append([]*harness.WorkloadResult{{Name: "hot quota", Wall: time.Second,
					Summary: stats.Summary{Ops: 100, Admitted: 50, Denied: 50, P50: time.Millisecond, P99: 2 * time.Millisecond}}}, c.Workloads...)
			}
			configs = append(configs, c)
		}
		r.Rounds = append(r.Rounds, configs)
	}
	return r
}

// section is the part of md from heading to the next heading of its level or above.
func section(t *testing.T, md, heading string) string {
	t.Helper()
	i := strings.Index(md, heading+"\n")
	if i < 0 {
		t.Fatalf("no section %q in:\n%s", heading, md)
	}
	rest := md[i+len(heading):]
	if j := strings.Index(rest, "\n## "); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

// row is the table row of section whose first cell is first.
func row(t *testing.T, section, first string) string {
	t.Helper()
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "| "+first+" |") {
			return line
		}
	}
	t.Fatalf("no row %q in:\n%s", first, section)
	return ""
}

func TestIsolationHeadline(t *testing.T) {
	r := isolationRun(map[string][3]int{
		harness.ConfigNone:                      {12, 13, 17},
		harness.ConfigAllowAll:                  {14, 15, 18},
		harness.ConfigKarmadaQuota:              {13, 14, 20},
		harness.ConfigKarmadaQuotaClusterLimits: {16, 16, 17},
	}, harness.ConfigKarmadaQuotaClusterLimits, harness.WorkloadIsolation)
	md := Markdown(r, "go run ./test/bench --workloads isolation")
	head := section(t, md, "## Headline: isolation")

	// Medians over the rounds with their range; the ratios of ratios taken within each round (karmada-quota's
	// 1.3, 1.4, 2.0 over no webhook's 1.2, 1.3, 1.7 and allow-all's 1.4, 1.5, 1.8).
	want := map[string]string{
		harness.ConfigNone: "| name of none | 10.0 ms (10.0 ms to 10.0 ms) | 13.0 ms (12.0 ms to 17.0 ms) | 1.30× (1.20× to 1.70×) | — | " +
			"0.87× (0.86× to 0.94×) | 400 (300 to 500) | 0 |",
		harness.ConfigKarmadaQuota: "| name of karmada-quota | 10.0 ms (10.0 ms to 10.0 ms) | 14.0 ms (13.0 ms to 20.0 ms) | 1.40× (1.30× to 2.00×) ✓ | " +
			"1.08× (1.08× to 1.18×) | 0.93× (0.93× to 1.11×) | 400 (300 to 500) | 0 |",
		// Over the goal: no mark. A quiet write failed: counted, in bold.
		harness.ConfigKarmadaQuotaClusterLimits: "| name of karmada-quota-cluster-limits | 10.0 ms (10.0 ms to 10.0 ms) | 16.0 ms (16.0 ms to 17.0 ms) | 1.60× (1.60× to 1.70×) | " +
			"1.23× (1.00× to 1.33×) | 1.07× (0.94× to 1.14×) | 400 (300 to 500) | **1** (round 1's by kind under *Results*) |",
	}
	for key, line := range want {
		if got := row(t, head, "name of "+key); got != line {
			t.Errorf("%s:\ngot  %s\nwant %s", key, got, line)
		}
	}
	// The goal is karmada-quota's: no webhook's ratio meets it without a mark.
	if strings.Contains(row(t, head, "name of none"), "✓") {
		t.Errorf("no webhook's ratio is marked as meeting karmada-quota's goal")
	}
	business := "name of " + harness.ConfigKarmadaQuotaBusiness
	if got := row(t, head, business); got != "| "+business+" | n/a | n/a | n/a | n/a | n/a | n/a | n/a |" {
		t.Errorf("the business configuration, which does not run isolation: %s", got)
	}
	if !strings.Contains(head, "- "+business+": n/a: ") {
		t.Errorf("the headline does not say why %s does not run isolation:\n%s", business, head)
	}
	if !strings.Contains(head, "each p99 is the second slowest of them") {
		t.Errorf("the headline does not say what a p99 of 100 writes is:\n%s", head)
	}

	// Only isolation ran: no table of throughput, whose rows would be empty.
	for _, heading := range []string{"## Headline: ratios", "## Rounds", "| configuration | workload | writes |", "| configuration | workload | kube-apiserver |"} {
		if strings.Contains(md, heading) {
			t.Errorf("a run of isolation alone renders %q", heading)
		}
	}
	results := section(t, md, "## Results")
	if got := row(t, results, "name of karmada-quota-cluster-limits"); !strings.Contains(got, "| 0 | 1 × 500 InternalError (webhook call timed out) |") {
		t.Errorf("round 1's failed quiet write is not reported by kind: %s", got)
	}
	if got := row(t, results, "name of karmada-quota"); !strings.HasPrefix(got, "| name of karmada-quota | 5.0 ms / 10.0 ms | 8.0 ms / 13.0 ms | 0 | 0 | 300 | 40.0 ms / 90.0 ms | 600 / 300 / 0 |") {
		t.Errorf("round 1's details of karmada-quota: %s", got)
	}
}

func TestIsolationLeftOutOfThroughputTables(t *testing.T) {
	r := isolationRun(map[string][3]int{}, "", harness.WorkloadHot, harness.WorkloadIsolation)
	md := Markdown(r, "go run ./test/bench --workloads hot,isolation")
	for _, heading := range []string{"## Headline: ratios", "## Rounds", "## Where the time went"} {
		if s := section(t, md, heading); strings.Contains(s, "| "+harness.WorkloadIsolation+" |") || strings.Contains(s, " | "+harness.WorkloadIsolation+" | ") {
			t.Errorf("%s has a row of the isolation workload, which measures no throughput:\n%s", heading, s)
		}
	}
	results := section(t, md, "## Results")
	if strings.Contains(results, "| name of karmada-quota | isolation |") || strings.Contains(results, "| isolation | n/a") {
		t.Errorf("the results table of throughput has a row of the isolation workload:\n%s", results)
	}
	if !strings.Contains(results, "| name of karmada-quota | hot quota | 100 |") {
		t.Errorf("the hot quota's row is missing:\n%s", results)
	}
	// Zero latencies (a phase that timed nothing) give no ratio rather than a division by zero.
	if got := row(t, section(t, md, "## Headline: isolation"), "name of karmada-quota"); !strings.Contains(got, "| — | — | — |") {
		t.Errorf("ratios of phases that timed nothing: %s", got)
	}
}

func TestP99Rank(t *testing.T) {
	for n, want := range map[int]string{1: "slowest", 8: "slowest", 99: "slowest", 100: "second slowest", 200: "third slowest", 300: "4th slowest"} {
		if got := p99Rank(n); got != want {
			t.Errorf("p99Rank(%d) = %q, want %q", n, got, want)
		}
	}
}
