package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ToolDir is the folder where the Makefile caches a tool it builds from a pinned module: <cache>/<tool>-<version>,
// with the version read from hack/tools/<tool>/go.mod as the Makefile's modversion reads it, and <cache> the
// Makefile's CACHE (the environment's, relative to the repository root, else .cache). Tests find the binaries
// `make` built there without being told.
func ToolDir(tool, module string) (string, error) {
	root := RepoRoot()
	version, err := requiredVersion(filepath.Join(root, "hack", "tools", tool, "go.mod"), module)
	if err != nil {
		return "", fmt.Errorf("reading the version of %s that make builds: %w", tool, err)
	}
	cache := os.Getenv("CACHE")
	switch {
	case cache == "":
		cache = filepath.Join(root, ".cache")
	case !filepath.IsAbs(cache):
		cache = filepath.Join(root, cache)
	}
	return filepath.Join(cache, tool+"-"+version), nil
}

// requiredVersion is the version at which goMod requires module: the first `require module version` line, or
// `module version` line in a require block, as the Makefile's modversion reads it.
func requiredVersion(goMod, module string) (string, error) {
	raw, err := os.ReadFile(goMod)
	if err != nil {
		return "", err
	}
	for line := range strings.Lines(string(raw)) {
		switch f := strings.Fields(line); {
		case len(f) >= 3 && f[0] == "require" && f[1] == module:
			return f[2], nil
		case len(f) >= 2 && f[0] == module:
			return f[1], nil
		}
	}
	return "", fmt.Errorf("%s does not require %s", goMod, module)
}
