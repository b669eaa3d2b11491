package main

import (
	"os"
	"path/filepath"
	"time"

	"github.com/karmada-quota/karmada-quota/internal/testenv"
	"github.com/karmada-quota/karmada-quota/test/bench/internal/harness"
	"github.com/karmada-quota/karmada-quota/test/bench/internal/workload"
)

// DefaultOptions are the sizes `make bench` runs: about 20 minutes on a 2-core machine for three rounds of
// every configuration before the isolation workload, which adds about 20 s per configuration and round (2 min 6 s
// for three configurations, two rounds).
func DefaultOptions() harness.Options {
	return harness.Options{
		Workload: workload.Options{
			Writers:          64,
			HotBindings:      1024,
			SpreadNamespaces: 64,
			SpreadBindings:   16,
			StormNamespaces:  8,
			StormBindings:    32,
			StormOps:         1024,
			// 100 quiet writes a phase: their p99 is the second slowest, the fewest writes whose p99 is not simply
			// the slowest.
			IsolationNamespaces: 8,
			IsolationWrites:     100,
			Seed:                1,
		},
		SettleTimeout: 30 * time.Second,
		// Three rounds: the median of three is the fewest that one disturbed round cannot move.
		Rounds:     3,
		KarmadaBin: defaultKarmadaBin(),
	}
}

// DefaultScaleOptions are what `make bench` measures with --scale, besides the sizes: ten bindings per namespace,
// so the largest step is 10,000 quotas over 100,000 bindings.
func DefaultScaleOptions() harness.ScaleOptions {
	return harness.ScaleOptions{
		PerNamespace:  10,
		HotBindings:   256,
		HotWriters:    32,
		QuietWrites:   200,
		SetupWriters:  64,
		SettleTimeout: time.Minute,
	}
}

// defaultKarmadaBin is $KARMADA_BIN, else the Makefile's cache folder of the Karmada it builds.
func defaultKarmadaBin() string {
	if dir := os.Getenv("KARMADA_BIN"); dir != "" {
		return dir
	}
	dir, err := testenv.ToolDir("karmada", "github.com/karmada-io/karmada")
	if err != nil {
		// Run reports the binaries missing from wherever this points, which names the folder looked in.
		return filepath.Join(testenv.RepoRoot(), ".cache", "karmada")
	}
	return dir
}
