package harness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/karmada-quota/karmada-quota/internal/testenv"
	"github.com/karmada-quota/karmada-quota/test/bench/internal/controlplane"
	"github.com/karmada-quota/karmada-quota/test/bench/internal/proc"
	"github.com/karmada-quota/karmada-quota/test/bench/internal/promtext"
	"github.com/karmada-quota/karmada-quota/test/bench/internal/systems"
)

// Roles whose CPU the report splits: the control plane, the configuration's components, and the harness itself
// (the 64 writers and their client).
const (
	RoleAPIServer  = "kube-apiserver"
	RoleEtcd       = "etcd"
	RoleWebhook    = "webhook"
	RoleController = "controller"
	RoleHarness    = "harness"
	// RoleOthers is every other process on the machine: machine-wide busy time minus the roles above.
	RoleOthers = "others"
)

// Roles lists them in report order.
var Roles = []string{RoleAPIServer, RoleEtcd, RoleWebhook, RoleController, RoleHarness, RoleOthers}

type snap struct {
	cpu     map[string]float64
	machine float64
	metrics map[string]promtext.Metrics // by role; "apiserver" for kube-apiserver
}

// snapshot reads CPU times and metrics. Scraping /metrics costs the apiserver CPU, so a snapshot taken before a
// phase scrapes first and reads CPU last, and one taken after reads CPU first: no scrape is charged to the phase.
func snapshot(ctx context.Context, cp *controlplane.ControlPlane, sys systems.System, beforePhase bool) snap {
	s := snap{cpu: map[string]float64{}, metrics: map[string]promtext.Metrics{}}
	readCPU := func() {
		pids := map[string]int{RoleAPIServer: cp.PIDs["kube-apiserver"], RoleEtcd: cp.PIDs["etcd"], RoleHarness: os.Getpid()}
		for _, c := range sys.Processes() {
			pids[c.Role] = c.Proc.PID()
		}
		for role, pid := range pids {
			if pid == 0 {
				continue
			}
			if v, err := proc.CPUSeconds(pid); err == nil {
				s.cpu[role] = v
			}
		}
		if v, err := proc.MachineBusySeconds(); err == nil {
			s.machine = v
		}
	}
	if !beforePhase {
		readCPU()
	}
	if text, err := cp.Metrics(ctx); err == nil {
		s.metrics[RoleAPIServer] = promtext.Parse(text)
	}
	for _, c := range sys.Processes() {
		if text, err := c.Scrape(ctx); err == nil {
			s.metrics[c.Role] = promtext.Parse(text)
		}
	}
	if beforePhase {
		readCPU()
	}
	return s
}

// cpuCores is each role's CPU time over the phase, divided by the phase's wall time: 1.0 is one core busy.
func cpuCores(before, after snap, wall time.Duration) map[string]float64 {
	out := map[string]float64{}
	if wall <= 0 {
		return out
	}
	ours := 0.0
	for role, v := range after.cpu {
		if b, ok := before.cpu[role]; ok {
			out[role] = (v - b) / wall.Seconds()
			ours += out[role]
		}
	}
	if after.machine > 0 && before.machine > 0 {
		out[RoleOthers] = max(0, (after.machine-before.machine)/wall.Seconds()-ours)
	}
	return out
}

// Evidence is one number that says where a configuration's time went.
type Evidence struct {
	What, Value string
}

// evidence reads the metrics that explain a configuration's throughput: how long the apiserver waited on the
// webhook and on the whole PATCH, and inside each webhook how long a decision took and how often its status
// writes lost a race.
func evidence(key string, before, after snap, wall time.Duration) []Evidence {
	var out []Evidence
	ms := func(seconds float64) string { return fmt.Sprintf("%.1f ms", seconds*1000) }
	ab, aa := before.metrics[RoleAPIServer], after.metrics[RoleAPIServer]
	if m, n := promtext.Mean(ab, aa, "apiserver_request_duration_seconds", map[string]string{"verb": "PATCH", "resource": "resourcebindings"}); n > 0 {
		out = append(out, Evidence{"apiserver: mean PATCH resourcebindings", ms(m)})
	}
	if m, n := promtext.Mean(ab, aa, "apiserver_request_duration_seconds", map[string]string{"verb": "PUT", "resource": "karmadaquotas", "subresource": "status"}); n > 0 {
		out = append(out, Evidence{"apiserver: mean PUT karmadaquotas/status", ms(m)})
	}
	if m, n := promtext.Mean(ab, aa, "apiserver_request_duration_seconds", map[string]string{"verb": "PUT", "resource": "karmadaquotaledgers", "subresource": ""}); n > 0 {
		out = append(out, Evidence{"apiserver: mean PUT karmadaquotaledgers", ms(m)})
	}
	if m, n := promtext.Mean(ab, aa, "apiserver_request_duration_seconds", map[string]string{"verb": "PUT", "resource": "karmadabusinessquotas", "subresource": "status"}); n > 0 {
		out = append(out, Evidence{"apiserver: mean PUT karmadabusinessquotas/status", ms(m)})
	}
	if m, n := promtext.Mean(ab, aa, "apiserver_request_duration_seconds", map[string]string{"verb": "PUT", "resource": "karmadabusinessquotaledgers", "subresource": ""}); n > 0 {
		out = append(out, Evidence{"apiserver: mean PUT karmadabusinessquotaledgers", ms(m)})
	}
	if rates := requestRates(ab, aa, wall); rates != "" {
		out = append(out, Evidence{"apiserver: requests/s", rates})
	}
	webhookName := map[string]string{
		ConfigAllowAll:                  "resourcebinding.quota.karmada.io",
		ConfigKarmadaQuota:              "resourcebinding.quota.karmada.io",
		ConfigKarmadaQuotaClusterLimits: "resourcebinding.quota.karmada.io",
		ConfigKarmadaQuotaBusiness:      "resourcebinding.quota.karmada.io",
		ConfigFRQ:                       "resourcebinding.karmada.io",
		ConfigFRQRaised:                 "resourcebinding.karmada.io",
	}[key]
	if webhookName != "" {
		if m, n := promtext.Mean(ab, aa, "apiserver_admission_webhook_admission_duration_seconds", map[string]string{"name": webhookName, "operation": "UPDATE"}); n > 0 {
			out = append(out, Evidence{"apiserver: mean call to the webhook (UPDATE)", fmt.Sprintf("%s over %.0f calls", ms(m), n)})
		}
	}
	wb, wa := before.metrics[RoleWebhook], after.metrics[RoleWebhook]
	switch key {
	case ConfigKarmadaQuota, ConfigKarmadaQuotaClusterLimits, ConfigKarmadaQuotaBusiness:
		if m, n := promtext.Mean(wb, wa, "karmada_quota_admission_duration_seconds", map[string]string{"kind": "ResourceBinding", "operation": "UPDATE"}); n > 0 {
			out = append(out, Evidence{"webhook: mean decision (UPDATE)", ms(m)})
		}
		if m, n := promtext.Mean(wb, wa, "karmada_quota_admission_batch_size", nil); n > 0 {
			out = append(out, Evidence{"webhook: batches, mean size", fmt.Sprintf("%.0f batches of %.1f", n, m)})
		}
		out = append(out,
			Evidence{"webhook: status write conflicts", fmt.Sprintf("%.0f", promtext.Delta(wb, wa, "karmada_quota_status_write_conflicts_total", map[string]string{"writer": "webhook"}))},
			Evidence{"controller: status write conflicts", fmt.Sprintf("%.0f", promtext.Delta(before.metrics[RoleController], after.metrics[RoleController], "karmada_quota_status_write_conflicts_total", nil))},
		)
	case ConfigAllowAll:
		if m, n := promtext.Mean(wb, wa, "controller_runtime_webhook_latency_seconds", map[string]string{"webhook": "/validate-resourcebinding"}); n > 0 {
			out = append(out, Evidence{"webhook: mean handling", fmt.Sprintf("%s over %.0f requests", ms(m), n)})
		}
	case ConfigFRQ, ConfigFRQRaised:
		if m, n := promtext.Mean(wb, wa, "controller_runtime_webhook_latency_seconds", map[string]string{"webhook": "/validate-resourcebinding"}); n > 0 {
			out = append(out, Evidence{"webhook: mean handling", fmt.Sprintf("%s over %.0f requests", ms(m), n)})
		}
		out = append(out, Evidence{"webhook: FRQ status writes refused with 409", fmt.Sprintf("%.0f", promtext.Delta(wb, wa, "rest_client_requests_total", map[string]string{"code": "409"}))})
	}
	for _, role := range []string{RoleWebhook, RoleController} {
		b, a := before.metrics[role], after.metrics[role]
		if m, n := promtext.Mean(b, a, "rest_client_rate_limiter_duration_seconds", nil); n > 0 {
			out = append(out, Evidence{role + ": mean wait in client-side rate limiter", fmt.Sprintf("%s over %.0f requests", ms(m), n)})
		}
	}
	return out
}

// Machine describes where a run ran.
type Machine struct {
	CPUs        int
	CPUModel    string
	MemTotal    string
	Kernel      string
	Go          string
	KubeVersion string
	Etcd        string
	Karmada     string
	Commit      string
	LoadBefore  string
}

func describeMachine(ctx context.Context, cp *controlplane.ControlPlane, karmadaBin string) Machine {
	m := Machine{CPUs: runtime.NumCPU(), Go: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "model name") {
				m.CPUModel = strings.TrimSpace(strings.SplitN(line, ":", 2)[1])
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "MemTotal:") {
				var kb int64
				fmt.Sscanf(strings.TrimPrefix(line, "MemTotal:"), "%d", &kb)
				m.MemTotal = fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		m.LoadBefore = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	if v, err := cp.Kube.Discovery().ServerVersion(); err == nil {
		m.KubeVersion = v.GitVersion
	}
	run := func(name string, args ...string) string {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = testenv.RepoRoot()
		out, err := cmd.Output()
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(out))
	}
	if assets := os.Getenv("KUBEBUILDER_ASSETS"); assets != "" {
		if out := run(filepath.Join(assets, "etcd"), "--version"); out != "" {
			m.Etcd = strings.TrimPrefix(strings.SplitN(out, "\n", 2)[0], "etcd Version: ")
		}
	}
	if out := run(filepath.Join(karmadaBin, "karmada-webhook"), "version"); out != "" {
		m.Karmada = out
	}
	m.Commit = run("git", "rev-parse", "--short", "HEAD")
	// Untracked files count: a harness or page not yet committed is part of what ran.
	if run("git", "status", "--porcelain") != "" {
		m.Commit += " (with uncommitted changes)"
	}
	return m
}

// rated are the requests whose rate shows what a quota system asks of the apiserver per admission.
var rated = []struct{ verb, resource, subresource string }{
	{"PATCH", "resourcebindings", ""},
	{"GET", "resourcebindings", ""},
	{"GET", "karmadaquotas", ""},
	{"PUT", "karmadaquotas", "status"},
	{"GET", "karmadaquotaledgers", ""},
	{"POST", "karmadaquotaledgers", ""},
	{"PUT", "karmadaquotaledgers", ""},
	{"PATCH", "karmadaquotaledgers", ""},
	{"GET", "karmadabusinessquotas", ""},
	{"PUT", "karmadabusinessquotas", "status"},
	{"GET", "karmadabusinessquotaledgers", ""},
	{"POST", "karmadabusinessquotaledgers", ""},
	{"PUT", "karmadabusinessquotaledgers", ""},
	{"PATCH", "karmadabusinessquotaledgers", ""},
	{"PUT", "appliedbusinessquotas", ""},
	{"PUT", "federatedresourcequotas", "status"},
}

// ledgerResources are karmada-quota's ledgers: a KarmadaQuota's and a KarmadaBusinessQuota's.
var ledgerResources = []string{"karmadaquotaledgers", "karmadabusinessquotaledgers"}

// ledgerWrites counts the writes of ledgers, of both kinds, that the apiserver served during the phase: creates and
// updates, each compare-and-swap admission makes and the controller's, and the controller's settle patches, those
// refused with 409 Conflict or 422 (a patch's failed test) included (requestRates shows their share).
func ledgerWrites(before, after snap) float64 {
	ab, aa := before.metrics[RoleAPIServer], after.metrics[RoleAPIServer]
	writes := 0.0
	for _, resource := range ledgerResources {
		for _, verb := range []string{"POST", "PUT", "PATCH"} {
			writes += promtext.Delta(ab, aa, "apiserver_request_total", map[string]string{"verb": verb, "resource": resource, "subresource": ""})
		}
	}
	return writes
}

// requestRates renders the rate of each rated request during the phase, with the share the apiserver refused
// with 409 Conflict (a compare-and-swap that lost) or 422 (a settle patch whose test failed).
func requestRates(before, after promtext.Metrics, wall time.Duration) string {
	if wall <= 0 {
		return ""
	}
	var parts []string
	for _, r := range rated {
		match := map[string]string{"verb": r.verb, "resource": r.resource, "subresource": r.subresource}
		n := promtext.Delta(before, after, "apiserver_request_total", match)
		if n <= 0 {
			continue
		}
		name := r.verb + " " + r.resource
		if r.subresource != "" {
			name += "/" + r.subresource
		}
		part := fmt.Sprintf("%s %.0f", name, n/wall.Seconds())
		for _, code := range []string{"409", "422"} {
			match["code"] = code
			if c := promtext.Delta(before, after, "apiserver_request_total", match); c > 0 {
				part += fmt.Sprintf(" (%.0f%% %s)", 100*c/n, code)
			}
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, ", ")
}
