// Package version says which build a binary is: the release and commit it was built from (set by the build with
// -ldflags), the Go toolchain, and the Karmada API it speaks (read from the module graph it was linked with).
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// karmadaModule is the module whose API types every binary is compiled against.
const karmadaModule = "github.com/karmada-io/karmada"

// Set by `make build` through -ldflags "-X github.com/karmada-quota/karmada-quota/pkg/version.version=...".
var (
	version  = devVersion
	revision = ""
)

// devVersion is the version of a build that was told none.
const devVersion = "v0.0.0-dev"

// Info identifies a build.
type Info struct {
	Version   string `json:"version"`
	Revision  string `json:"revision"`
	GoVersion string `json:"goVersion"`
	// Karmada is the version of the Karmada module the binary was built against.
	Karmada string `json:"karmada"`
}

// Get returns the running binary's build information.
func Get() Info {
	build, _ := debug.ReadBuildInfo()
	return fromBuild(version, revision, build)
}

// fromBuild completes what the linker was told with what the toolchain recorded: a binary built without
// -ldflags (go run) still names its commit, and the Karmada version always comes from the linked module graph.
// Test binaries record no dependencies, so only a built binary can name its Karmada version.
func fromBuild(version, revision string, build *debug.BuildInfo) Info {
	info := Info{Version: version, Revision: revision, GoVersion: runtime.Version(), Karmada: "unknown"}
	if build != nil {
		// `go install <module>/cmd/...@v0.3.0` (how the kubectl plugin is installed) sets no -ldflags, but the
		// toolchain records the module version it built (in a checkout, a pseudo-version when it stamps VCS
		// information, else "(devel)", which says nothing).
		if version == devVersion && build.Main.Version != "" && build.Main.Version != "(devel)" {
			info.Version = build.Main.Version
		}
		for _, dep := range build.Deps {
			if dep.Path != karmadaModule {
				continue
			}
			info.Karmada = dep.Version
			if dep.Replace != nil {
				info.Karmada = dep.Replace.Version
			}
		}
		for _, s := range build.Settings {
			if s.Key == "vcs.revision" && info.Revision == "" {
				info.Revision = s.Value
			}
		}
	}
	if info.Revision == "" {
		info.Revision = "unknown"
	}
	return info
}

// String renders the information on one line, as `--version` prints it.
func (i Info) String() string {
	return fmt.Sprintf("%s (revision %s, %s, built against Karmada %s)", i.Version, i.Revision, i.GoVersion, i.Karmada)
}
