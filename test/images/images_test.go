// Package images checks the image archives `make images` writes to bin/images, as a user of them would see them:
// one tag, a non-root config with the OCI labels of the build, nothing executable but a static binary, and that
// binary answering --version with the build it is. `make test-images` runs it after `make images`, passing the
// build's VERSION, REVISION and SOURCE_DATE_EPOCH; run directly, it works them out as the Makefile does.
package images

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/buildinfo"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"sigs.k8s.io/yaml"
)

const (
	karmadaModule = "github.com/karmada-io/karmada"
	nonRoot       = "65532"
)

// build is what every archive must say about the build that made it.
type build struct {
	dir      string
	names    []string
	registry string
	version  string
	revision string
	created  time.Time
	// karmada is the version of the Karmada module in go.mod's module graph.
	karmada string
}

func TestImages(t *testing.T) {
	want := expectedBuild(t)
	found, err := filepath.Glob(filepath.Join(want.dir, "*.tar"))
	if err != nil {
		t.Fatal(err)
	}
	names := slices.Clone(want.names)
	for _, archive := range found {
		// Every archive present is checked, not only the expected ones: none may be published unchecked.
		if n := strings.TrimSuffix(filepath.Base(archive), ".tar"); !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			archive := filepath.Join(want.dir, name+".tar")
			if _, err := os.Stat(archive); err != nil {
				t.Fatalf("%v: build the image archives first with `make images` (`make test-images` does)", err)
			}
			checkArchive(t, want, name, archive)
		})
	}
}

func checkArchive(t *testing.T, want build, name, archive string) {
	manifest, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(archive) })
	if err != nil {
		t.Fatalf("reading manifest.json of %s: %v", archive, err)
	}
	wantTag := want.registry + "/" + name + ":" + want.version
	if len(manifest) != 1 || !cmp.Equal(manifest[0].RepoTags, []string{wantTag}) {
		t.Errorf("archive manifest: %+v, want one image tagged only %s", manifest, wantTag)
	}
	img, err := tarball.ImageFromPath(archive, nil)
	if err != nil {
		t.Fatalf("opening %s: %v", archive, err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	checkConfig(t, want, name, cfg)

	files := readFilesystem(t, img, want.created)
	binaryPath := "usr/local/bin/" + name
	checkFiles(t, files, binaryPath)
	checkIdentity(t, files)

	binary := files[binaryPath]
	if binary == nil {
		t.Fatalf("no /%s in the image", binaryPath)
	}
	goVersion := checkBinary(t, want, cfg, binary.content)
	runVersion(t, want, name, cfg, binary.content, goVersion)
}

func checkConfig(t *testing.T, want build, name string, cfg *v1.ConfigFile) {
	t.Helper()
	if cfg.Config.User != nonRoot+":"+nonRoot {
		t.Errorf("User %q, want %s:%s (non-root, user and group)", cfg.Config.User, nonRoot, nonRoot)
	}
	if want := []string{"/usr/local/bin/" + name}; !cmp.Equal(cfg.Config.Entrypoint, want) {
		t.Errorf("Entrypoint %q, want %q", cfg.Config.Entrypoint, want)
	}
	if cfg.Config.Cmd != nil {
		t.Errorf("Cmd %q, want none: the chart passes every argument", cfg.Config.Cmd)
	}
	if cfg.Config.WorkingDir != "/" {
		t.Errorf("WorkingDir %q, want /", cfg.Config.WorkingDir)
	}
	if cfg.OS != "linux" || cfg.Architecture == "" {
		t.Errorf("platform %s/%s, want linux/<arch>", cfg.OS, cfg.Architecture)
	}
	if !cfg.Created.Time.Equal(want.created) {
		t.Errorf("created %s, want the commit time %s", cfg.Created.Time, want.created)
	}
	labels := cfg.Config.Labels
	if labels["org.opencontainers.image.description"] == "" {
		t.Errorf("no org.opencontainers.image.description label")
	}
	wantLabels := map[string]string{
		"org.opencontainers.image.title":       name,
		"org.opencontainers.image.description": labels["org.opencontainers.image.description"],
		"org.opencontainers.image.version":     want.version,
		"org.opencontainers.image.revision":    want.revision,
		"org.opencontainers.image.source":      "https://github.com/karmada-quota/karmada-quota",
		"org.opencontainers.image.created":     want.created.UTC().Format(time.RFC3339),
		"org.opencontainers.image.licenses":    "Apache-2.0",
	}
	if diff := cmp.Diff(wantLabels, labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
}

// entry is one path of an image's flattened filesystem.
type entry struct {
	header  *tar.Header
	content []byte
}

// readFilesystem returns the image's filesystem as a container sees it (layers applied in order), by path without
// the leading "/" or "./"; folders end without "/". Every entry must carry the commit time and no later one.
func readFilesystem(t *testing.T, img v1.Image, created time.Time) map[string]*entry {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	files := map[string]*entry{}
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("reading the image's filesystem: %v", err)
		}
		p := strings.TrimPrefix(path.Clean("/"+hdr.Name), "/")
		e := &entry{header: hdr}
		if hdr.Typeflag == tar.TypeReg {
			if e.content, err = io.ReadAll(tr); err != nil {
				t.Fatal(err)
			}
		}
		files[p] = e
		if !hdr.ModTime.Equal(created) {
			t.Errorf("/%s modified %s, want the commit time %s (reproducible builds)", p, hdr.ModTime, created)
		}
	}
	return files
}

// checkFiles fails on anything that could run besides the binary: no shell, no other executable, no links (a link
// named sh would be a shell), no devices.
func checkFiles(t *testing.T, files map[string]*entry, binaryPath string) {
	t.Helper()
	for p, e := range files {
		hdr := e.header
		switch hdr.Typeflag {
		case tar.TypeDir:
		case tar.TypeReg:
			if p == binaryPath {
				if hdr.Mode&0o7777 != 0o755 || hdr.Uid != 0 || hdr.Gid != 0 {
					t.Errorf("/%s: mode %o owner %d:%d, want 755 owned by root (the user cannot replace it)",
						p, hdr.Mode&0o7777, hdr.Uid, hdr.Gid)
				}
				continue
			}
			if hdr.Mode&0o111 != 0 {
				t.Errorf("/%s is executable (mode %o): the image must hold no program but /%s", p, hdr.Mode, binaryPath)
			}
			if hdr.Mode&0o6000 != 0 {
				t.Errorf("/%s is setuid or setgid (mode %o)", p, hdr.Mode)
			}
		default:
			t.Errorf("/%s is of tar type %q: only folders and regular files are expected", p, hdr.Typeflag)
		}
	}
	for _, shell := range []string{"bin/sh", "bin/bash", "bin/busybox", "usr/bin/sh"} {
		if files[shell] != nil {
			t.Errorf("the image has a shell: /%s", shell)
		}
	}
}

// checkIdentity checks that /etc/passwd and /etc/group name the user and group the image runs as, and that the
// user's home folder exists and is theirs.
func checkIdentity(t *testing.T, files map[string]*entry) {
	t.Helper()
	var home string
	if f := files["etc/passwd"]; f == nil {
		t.Errorf("no /etc/passwd")
	} else {
		for _, line := range strings.Split(string(f.content), "\n") {
			fields := strings.Split(line, ":")
			if len(fields) == 7 && fields[2] == nonRoot {
				if fields[0] != "nonroot" || fields[3] != nonRoot {
					t.Errorf("/etc/passwd: %q, want user nonroot with uid and gid %s", line, nonRoot)
				}
				home = strings.TrimPrefix(path.Clean(fields[5]), "/")
			}
		}
		if home == "" {
			t.Errorf("/etc/passwd names no uid %s:\n%s", nonRoot, f.content)
		}
	}
	if f := files["etc/group"]; f == nil || !slices.Contains(strings.Split(string(f.content), "\n"), "nonroot:x:"+nonRoot+":") {
		t.Errorf("/etc/group names no group nonroot with gid %s", nonRoot)
	}
	if home != "" {
		if h := files[home]; h == nil || h.header.Typeflag != tar.TypeDir || strconv.Itoa(h.header.Uid) != nonRoot {
			t.Errorf("the home folder /%s of nonroot is missing or not owned by %s", home, nonRoot)
		}
	}
}

// checkBinary checks that the binary is static and was built as `make build` builds, and returns the Go version
// that built it.
func checkBinary(t *testing.T, want build, cfg *v1.ConfigFile, binary []byte) string {
	t.Helper()
	exe, err := elf.NewFile(bytes.NewReader(binary))
	if err != nil {
		t.Fatalf("the binary is not an ELF file: %v", err)
	}
	defer exe.Close()
	for _, prog := range exe.Progs {
		if prog.Type == elf.PT_INTERP {
			t.Errorf("the binary is dynamically linked (it has a PT_INTERP program header): the image has no loader")
		}
	}
	if libs, err := exe.ImportedLibraries(); err != nil || len(libs) != 0 {
		t.Errorf("the binary needs shared libraries %q (%v)", libs, err)
	}

	info, err := buildinfo.Read(bytes.NewReader(binary))
	if err != nil {
		t.Fatalf("the binary has no Go build information: %v", err)
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	for key, value := range map[string]string{"CGO_ENABLED": "0", "-trimpath": "true", "GOOS": cfg.OS, "GOARCH": cfg.Architecture} {
		if settings[key] != value {
			t.Errorf("the binary was built with %s=%q, want %q", key, settings[key], value)
		}
	}
	// -trimpath keeps -ldflags out of the build information; runVersion checks what they set.
	if got := linkedKarmada(info); got != want.karmada {
		t.Errorf("the binary links Karmada %s, go.mod says %s", got, want.karmada)
	}
	return info.GoVersion
}

func linkedKarmada(info *buildinfo.BuildInfo) string {
	for _, dep := range info.Deps {
		if dep.Path == karmadaModule {
			if dep.Replace != nil {
				return dep.Replace.Version
			}
			return dep.Version
		}
	}
	return "none"
}

// runVersion runs the binary taken out of the image with --version: it must start with nothing but what the image
// holds (a static binary needs no file of the host) and say which build it is.
func runVersion(t *testing.T, want build, name string, cfg *v1.ConfigFile, binary []byte, goVersion string) {
	t.Helper()
	if cfg.OS != goruntime.GOOS || cfg.Architecture != goruntime.GOARCH {
		t.Skipf("not running --version: the image is for %s/%s, this machine is %s/%s",
			cfg.OS, cfg.Architecture, goruntime.GOOS, goruntime.GOARCH)
	}
	exe := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(exe, binary, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "--version")
	// An empty environment: the answer must not depend on the host's (no KUBECONFIG, no HOME).
	cmd.Env = []string{}
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s --version: %v\n%s", name, err, out)
	}
	wantOut := fmt.Sprintf("%s %s (revision %s, %s, built against Karmada %s)", name, want.version, want.revision,
		goVersion, want.karmada)
	if got := strings.TrimSpace(string(out)); got != wantOut {
		t.Errorf("%s --version printed\n  %q\nwant\n  %q", name, got, wantOut)
	}
	if !regexp.MustCompile(`^go1\.\d+`).MatchString(goVersion) {
		t.Errorf("Go version %q, want go1.x", goVersion)
	}
}

// expectedBuild reads what the Makefile passes, and works out the rest as the Makefile does.
func expectedBuild(t *testing.T) build {
	t.Helper()
	root := repoRoot()
	b := build{
		dir:      envOr("IMAGES_DIR", filepath.Join(root, "bin", "images")),
		registry: envOr("IMAGE_REGISTRY", "ghcr.io/karmada-quota"),
		version:  os.Getenv("VERSION"),
		revision: os.Getenv("REVISION"),
		names:    strings.Fields(os.Getenv("IMAGE_NAMES")),
	}
	if len(b.names) == 0 {
		b.names = []string{"quota-webhook", "quota-controller"}
		if _, err := os.Stat(filepath.Join(root, "operator", "cmd", "karmada-quota-operator")); err == nil {
			b.names = append(b.names, "karmada-quota-operator")
		}
	}
	if b.version == "" {
		chart, err := os.ReadFile(filepath.Join(root, "deploy", "charts", "karmada-quota", "Chart.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var meta struct {
			AppVersion string `json:"appVersion"`
		}
		if err := yaml.Unmarshal(chart, &meta); err != nil {
			t.Fatal(err)
		}
		b.version = "v" + meta.AppVersion
	}
	if b.revision == "" {
		b.revision = gitOr(root, "unknown", "rev-parse", "HEAD")
	}
	epoch, err := strconv.ParseInt(envOr("SOURCE_DATE_EPOCH", gitOr(root, "0", "log", "-1", "--format=%ct")), 10, 64)
	if err != nil {
		t.Fatalf("SOURCE_DATE_EPOCH: %v", err)
	}
	b.created = time.Unix(epoch, 0).UTC()
	b.karmada = karmadaInGoMod(t, root)
	return b
}

// karmadaInGoMod is the Karmada version the module builds against: go.mod's requirement after replacements, as
// the go command resolves it.
func karmadaInGoMod(t *testing.T, root string) string {
	t.Helper()
	cmd := exec.Command("go", "list", "-m", "-json", karmadaModule)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -m %s: %v", karmadaModule, err)
	}
	var mod struct {
		Version string
		Replace *struct{ Version string }
	}
	if err := json.Unmarshal(out, &mod); err != nil {
		t.Fatal(err)
	}
	if mod.Replace != nil && mod.Replace.Version != "" {
		return mod.Replace.Version
	}
	return mod.Version
}

func repoRoot() string {
	_, file, _, _ := goruntime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

func envOr(key, fallback string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return fallback
}

func gitOr(dir, fallback string, args ...string) string {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return fallback
	}
	return strings.TrimSpace(string(out))
}
