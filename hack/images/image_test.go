package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// staticBinary builds a tiny static Go program the way `make build` builds the real ones, since the test binary
// itself may be built with -race and so with cgo.
func staticBinary(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range map[string]string{
		"go.mod":  "module example.com/tiny\n\ngo 1.25\n",
		"main.go": "package main\n\nfunc main() {}\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "quota-webhook")
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOFLAGS=")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	return out
}

func TestBuildIsReproducible(t *testing.T) {
	spec := Spec{Name: "quota-webhook", Description: "d", Version: "v0.1.0", Revision: "abc123",
		Created: time.Unix(1700000000, 0).UTC(), Binary: staticBinary(t)}
	tag, err := name.NewTag("ghcr.io/karmada-quota/quota-webhook:v0.1.0")
	if err != nil {
		t.Fatal(err)
	}
	var archives [2][]byte
	var digests [2]v1.Hash
	for i := range archives {
		img, err := Build(spec)
		if err != nil {
			t.Fatal(err)
		}
		if digests[i], err = img.Digest(); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := tarball.Write(tag, img, &buf); err != nil {
			t.Fatal(err)
		}
		archives[i] = buf.Bytes()
	}
	if digests[0] != digests[1] {
		t.Errorf("two builds of one spec: digests %s and %s", digests[0], digests[1])
	}
	if !bytes.Equal(archives[0], archives[1]) {
		t.Errorf("two builds of one spec wrote different archives")
	}

	// The digest printed is the one `crane push` of the archive gives the manifest.
	path := filepath.Join(t.TempDir(), "image.tar")
	if err := os.WriteFile(path, archives[0], 0o644); err != nil {
		t.Fatal(err)
	}
	loaded, err := tarball.ImageFromPath(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := loaded.Digest(); err != nil || got != digests[0] {
		t.Errorf("digest of the archive read back: %s (%v), want %s", got, err, digests[0])
	}

	cfg, err := loaded.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	want := v1.Config{
		Entrypoint: []string{"/usr/local/bin/quota-webhook"},
		User:       "65532:65532",
		WorkingDir: "/",
		Env:        []string{searchPath},
		Labels:     Labels(spec),
	}
	if diff := cmp.Diff(want, cfg.Config); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	if cfg.OS != "linux" || cfg.Architecture != runtime.GOARCH || !cfg.Created.Time.Equal(spec.Created) {
		t.Errorf("platform %s/%s created %s, want linux/%s created %s", cfg.OS, cfg.Architecture, cfg.Created.Time,
			runtime.GOARCH, spec.Created)
	}
	if got := Labels(spec)["org.opencontainers.image.created"]; got != "2023-11-14T22:13:20Z" {
		t.Errorf("created label %q", got)
	}
}

func TestBuildRefusesWhatCannotRun(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "quota-webhook")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for path, why := range map[string]string{
		filepath.Join(dir, "missing"): "a binary that was not built",
		script:                        "a script: no Go build information",
	} {
		if _, err := Build(Spec{Name: "quota-webhook", Binary: path}); err == nil {
			t.Errorf("Build accepted %s", why)
		}
	}
}
