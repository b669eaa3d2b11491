package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/karmada-quota/karmada-quota/internal/testenv"
	"github.com/karmada-quota/karmada-quota/test/bench/internal/harness"
	"github.com/karmada-quota/karmada-quota/test/bench/internal/workload"
)

// DefaultOptions are the sizes `make bench` runs: about 20 minutes on a 2-core machine for three rounds of
// every configuration.
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
			Seed:             1,
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

// defaultKarmadaBin is $KARMADA_BIN, else the Makefile's cache folder for the Karmada version this module
// requires.
func defaultKarmadaBin() string {
	if dir := os.Getenv("KARMADA_BIN"); dir != "" {
		return dir
	}
	root := testenv.RepoRoot()
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "github.com/karmada-io/karmada")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return filepath.Join(root, ".cache", "karmada")
	}
	return filepath.Join(root, ".cache", "karmada-"+strings.TrimSpace(string(out)))
}
