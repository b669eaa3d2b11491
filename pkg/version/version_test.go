package version

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFromBuild(t *testing.T) {
	karmada := &debug.Module{Path: karmadaModule, Version: "v1.18.2"}
	cases := map[string]struct {
		version, revision string
		build             *debug.BuildInfo
		want              Info
	}{
		"a release build": {
			version: "v0.2.0", revision: "abc123",
			build: &debug.BuildInfo{Deps: []*debug.Module{{Path: "k8s.io/api", Version: "v0.35.3"}, karmada},
				Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "def456"}}},
			want: Info{Version: "v0.2.0", Revision: "abc123", GoVersion: runtime.Version(), Karmada: "v1.18.2"},
		},
		"go run in a checkout: the toolchain's commit": {
			version: "v0.0.0-dev",
			build: &debug.BuildInfo{Deps: []*debug.Module{karmada},
				Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "def456"}}},
			want: Info{Version: "v0.0.0-dev", Revision: "def456", GoVersion: runtime.Version(), Karmada: "v1.18.2"},
		},
		"go install <module>@<version>: the module version the toolchain recorded": {
			version: "v0.0.0-dev",
			build:   &debug.BuildInfo{Main: debug.Module{Path: "github.com/karmada-quota/karmada-quota", Version: "v0.3.0"}, Deps: []*debug.Module{karmada}},
			want:    Info{Version: "v0.3.0", Revision: "unknown", GoVersion: runtime.Version(), Karmada: "v1.18.2"},
		},
		"go build in a checkout: the toolchain records (devel), which says nothing": {
			version: "v0.0.0-dev",
			build:   &debug.BuildInfo{Main: debug.Module{Path: "github.com/karmada-quota/karmada-quota", Version: "(devel)"}, Deps: []*debug.Module{karmada}},
			want:    Info{Version: "v0.0.0-dev", Revision: "unknown", GoVersion: runtime.Version(), Karmada: "v1.18.2"},
		},
		"-ldflags win over the recorded module version": {
			version: "v0.2.0", revision: "abc123",
			build: &debug.BuildInfo{Main: debug.Module{Path: "github.com/karmada-quota/karmada-quota", Version: "v0.3.0"}, Deps: []*debug.Module{karmada}},
			want:  Info{Version: "v0.2.0", Revision: "abc123", GoVersion: runtime.Version(), Karmada: "v1.18.2"},
		},
		"a replaced Karmada module": {
			version: "v0.2.0", revision: "abc123",
			build: &debug.BuildInfo{Deps: []*debug.Module{{Path: karmadaModule, Version: "v1.18.2",
				Replace: &debug.Module{Path: "example.com/fork", Version: "v1.18.3-fork"}}}},
			want: Info{Version: "v0.2.0", Revision: "abc123", GoVersion: runtime.Version(), Karmada: "v1.18.3-fork"},
		},
		"no build information": {
			version: "v0.0.0-dev",
			want:    Info{Version: "v0.0.0-dev", Revision: "unknown", GoVersion: runtime.Version(), Karmada: "unknown"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, fromBuild(tc.version, tc.revision, tc.build)); diff != "" {
				t.Errorf("fromBuild (-want +got):\n%s", diff)
			}
		})
	}
}

func TestString(t *testing.T) {
	got := Info{Version: "v0.2.0", Revision: "abc123", GoVersion: "go1.26.8", Karmada: "v1.18.2"}.String()
	want := "v0.2.0 (revision abc123, go1.26.8, built against Karmada v1.18.2)"
	if got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
