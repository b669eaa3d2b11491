// Command bench measures ResourceBinding placement writes side by side on one freshly started kube-apiserver
// with Karmada's CRDs: with no quota webhook (the apiserver's own write rate), with karmada-quota, and with
// Karmada's own FederatedResourceQuota enforcement (karmada-webhook with FederatedQuotaEnforcement), and writes
// the tables to a markdown file. `make bench` runs it at the default sizes; `go run ./test/bench --help` lists
// the flags. Timings are reported, never asserted: bench_test.go runs it tiny and checks only correctness.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/karmada-quota/karmada-quota/test/bench/internal/harness"
	"github.com/karmada-quota/karmada-quota/test/bench/internal/report"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	opts := DefaultOptions()
	var (
		configs  = fs.String("configs", strings.Join(harness.AllConfigs, ","), "Configurations to run, in order: "+strings.Join(harness.AllConfigs, ", ")+".")
		loads    = fs.String("workloads", strings.Join(harness.AllWorkloads, ","), "Workloads each configuration runs (always in this order): "+strings.Join(harness.AllWorkloads, ", ")+".")
		out      = fs.String("out", "", "Markdown file to write the report to; empty prints it.")
		command  = fs.String("command", "", "The command line to record in the report; empty records this one.")
		keepLogs = fs.Bool("keep-logs", false, "Keep the work folder (component logs, kubeconfig) instead of deleting it.")
		webhook  = fs.String("quota-webhook-args", "", "Extra flags for quota-webhook, space separated (to study a setting).")
		ctrlArgs = fs.String("quota-controller-args", "", "Extra flags for quota-controller, space separated (to study a setting).")
		frqHook  = fs.String("frq-webhook-args", "", "Extra flags for karmada-webhook, space separated (to study a setting).")
		scale    = fs.Bool("scale", false, "Instead of the side-by-side comparison, measure karmada-quota at growing sizes (--scale-sizes) and write its own section.")
		sizes    = fs.String("scale-sizes", "1000,10000,100000", "Bindings at each step of --scale, increasing, comma separated.")
	)
	scaleOpts := DefaultScaleOptions()
	fs.IntVar(&scaleOpts.PerNamespace, "scale-bindings-per-namespace", scaleOpts.PerNamespace, "Bindings per namespace (one quota each) in --scale.")
	fs.IntVar(&opts.Rounds, "rounds", opts.Rounds, "Times every configuration is measured, in fresh namespaces, the order rotated each round; the headline ratios are medians over the rounds.")
	fs.IntVar(&opts.Workload.Writers, "writers", opts.Workload.Writers, "Concurrent placement writers.")
	fs.IntVar(&opts.Workload.HotBindings, "hot-bindings", opts.Workload.HotBindings, "Bindings placed in the hot-quota namespace (the quota fits half).")
	fs.IntVar(&opts.Workload.SpreadNamespaces, "spread-namespaces", opts.Workload.SpreadNamespaces, "Namespaces of the spread workload, one quota each.")
	fs.IntVar(&opts.Workload.SpreadBindings, "spread-bindings", opts.Workload.SpreadBindings, "Bindings per spread namespace (each quota fits half).")
	fs.IntVar(&opts.Workload.StormNamespaces, "storm-namespaces", opts.Workload.StormNamespaces, "Namespaces of the scale storm.")
	fs.IntVar(&opts.Workload.StormBindings, "storm-bindings", opts.Workload.StormBindings, "Placed bindings per storm namespace.")
	fs.IntVar(&opts.Workload.StormOps, "storm-ops", opts.Workload.StormOps, "Scale writes in the storm, over all writers.")
	fs.IntVar(&opts.Workload.IsolationNamespaces, "isolation-namespaces", opts.Workload.IsolationNamespaces, "Quiet namespaces of the isolation workload, one quota each with room for all their placements.")
	fs.IntVar(&opts.Workload.IsolationWrites, "isolation-writes", opts.Workload.IsolationWrites, "Quiet placements the isolation workload times in each phase: alone, then while writers − 1 writers re-place the hot-bindings of its hot namespace.")
	fs.Uint64Var(&opts.Workload.Seed, "seed", opts.Workload.Seed, "Seed of the write order and the storm's replica counts.")
	fs.DurationVar(&opts.SettleTimeout, "settle-timeout", opts.SettleTimeout, "How long to wait for the quota controllers to make every status exact.")
	fs.DurationVar(&opts.FRQSyncPeriod, "frq-sync-period", opts.FRQSyncPeriod, "karmada-controller-manager's --federated-resource-quota-sync-period; 0 keeps Karmada's default (5m).")
	fs.StringVar(&opts.KarmadaBin, "karmada-bin", opts.KarmadaBin, "Folder with karmada-webhook and karmada-controller-manager (default: $KARMADA_BIN, else .cache/karmada-<version>).")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if *command == "" {
		*command = "go run ./test/bench " + strings.Join(args, " ")
	}
	if *scale {
		var err error
		if scaleOpts.Sizes, err = parseSizes(*sizes); err != nil {
			return err
		}
		scaleOpts.ControllerArgs, scaleOpts.WebhookArgs = strings.Fields(*ctrlArgs), strings.Fields(*webhook)
		return runScale(scaleOpts, *out, *command, *keepLogs)
	}
	opts.Configs = strings.Split(*configs, ",")
	opts.Workloads = strings.Split(*loads, ",")
	opts.QuotaWebhookArgs = strings.Fields(*webhook)
	opts.QuotaControllerArgs = strings.Fields(*ctrlArgs)
	opts.FRQWebhookArgs = strings.Fields(*frqHook)

	work, err := os.MkdirTemp("", "karmada-quota-bench-")
	if err != nil {
		return err
	}
	if *keepLogs {
		fmt.Fprintln(os.Stderr, "bench: work folder", work)
	} else {
		defer os.RemoveAll(work)
	}
	opts.WorkDir = work
	opts.Progress = os.Stderr

	// An interrupt cancels the run; the harness then unregisters webhooks and stops every process it started.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := harness.Run(ctx, opts)
	if err != nil {
		return err
	}
	if *out == "" {
		fmt.Print(report.Markdown(rep, *command))
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
		return err
	}
	if err := report.Write(*out, rep, *command); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "bench: wrote %s (%s)\n", *out, rep.Took.Round(time.Second))
	return nil
}

func runScale(opts harness.ScaleOptions, out, command string, keepLogs bool) error {
	work, err := os.MkdirTemp("", "karmada-quota-scale-")
	if err != nil {
		return err
	}
	if keepLogs {
		fmt.Fprintln(os.Stderr, "bench: work folder", work)
	} else {
		defer os.RemoveAll(work)
	}
	opts.WorkDir = work
	opts.Progress = os.Stderr
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := harness.RunScale(ctx, opts)
	if err != nil {
		return err
	}
	if out == "" {
		fmt.Print(report.ScaleMarkdown(rep, command))
		return nil
	}
	if err := report.WriteScale(out, rep, command); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "bench: wrote %s (%s)\n", out, rep.Took.Round(time.Second))
	return nil
}

func parseSizes(s string) ([]int, error) {
	var sizes []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 || (len(sizes) > 0 && n <= sizes[len(sizes)-1]) {
			return nil, fmt.Errorf("--scale-sizes must be increasing positive numbers, got %q", s)
		}
		sizes = append(sizes, n)
	}
	return sizes, nil
}
