package kubelet

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

func writeTestImages(t *testing.T, dir string) {
	t.Helper()
	if err := WriteImage(filepath.Join(dir, "app.tar"), "ghcr.io/karmada-quota/app:v1",
		v1.Config{Entrypoint: []string{"/usr/local/bin/app"}, User: "65532:65532", Env: []string{"PATH=/usr/local/bin:/bin"}},
		ImageFile{Path: "/usr/local/bin/app", Data: []byte("#!app v1"), Mode: 0o755},
		ImageFile{Path: "/usr/local/bin/link", Link: "app"},
		ImageFile{Path: "/opt/current", Link: "/usr/local/bin"},
		ImageFile{Path: "/etc/config", Data: []byte("not executable"), Mode: 0o644},
		ImageFile{Path: "/bin/tool", Data: []byte("#!tool"), Mode: 0o755},
	); err != nil {
		t.Fatal(err)
	}
	if err := WriteImage(filepath.Join(dir, "busybox.tar"), "busybox",
		v1.Config{Cmd: []string{"sh"}}, ImageFile{Path: "/bin/sh", Data: []byte("#!sh"), Mode: 0o755}); err != nil {
		t.Fatal(err)
	}
	// Not an image: ignored.
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestImageResolve(t *testing.T) {
	dir := t.TempDir()
	store := newImageStore([]string{filepath.Join(t.TempDir(), "absent"), dir}, t.TempDir())
	if _, err := store.resolve("ghcr.io/karmada-quota/app:v1"); !errors.Is(err, errImageNotFound) {
		t.Fatalf("before the archive exists: %v, want errImageNotFound", err)
	}
	// Written after the first lookup: found on the next, as a pull that succeeds on retry.
	writeTestImages(t, dir)
	app, err := store.resolve("ghcr.io/karmada-quota/app:v1")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		ref      string
		want     string // the image's entrypoint, to tell which one was found
		notFound bool
	}{
		{ref: "ghcr.io/karmada-quota/app:v1", want: "/usr/local/bin/app"},
		{ref: "ghcr.io/karmada-quota/app@" + app.Digest, want: "/usr/local/bin/app"},
		{ref: "busybox", want: ""},
		{ref: "busybox:latest", want: ""},
		{ref: "docker.io/library/busybox:latest", want: ""},
		{ref: "index.docker.io/library/busybox", want: ""},
		{ref: "ghcr.io/karmada-quota/app:v2", notFound: true},
		{ref: "ghcr.io/karmada-quota/app", notFound: true},
		{ref: "ghcr.io/other/app:v1", notFound: true},
		{ref: "ghcr.io/other/app@" + app.Digest, notFound: true},
	}
	for _, tc := range cases {
		t.Run(tc.ref, func(t *testing.T) {
			img, err := store.resolve(tc.ref)
			if tc.notFound {
				if !errors.Is(err, errImageNotFound) {
					t.Fatalf("error %v, want errImageNotFound", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, strings.Join(img.Config.Entrypoint, " ")); diff != "" {
				t.Errorf("entrypoint (-want +got):\n%s", diff)
			}
			if !strings.HasPrefix(img.Digest, "sha256:") {
				t.Errorf("digest %q", img.Digest)
			}
		})
	}
}

func TestImageExecutable(t *testing.T) {
	dir := t.TempDir()
	writeTestImages(t, dir)
	store := newImageStore([]string{dir}, t.TempDir())
	img, err := store.resolve("ghcr.io/karmada-quota/app:v1")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		program, workDir, pathEnv string
		wantContent               string
		wantErr                   string
	}{
		{program: "/usr/local/bin/app", wantContent: "#!app v1"},
		{program: "/usr/local/bin/link", wantContent: "#!app v1"},
		{program: "/opt/current/app", wantContent: "#!app v1"},
		{program: "app", pathEnv: "/usr/local/bin:/bin", wantContent: "#!app v1"},
		{program: "tool", pathEnv: "", wantContent: "#!tool"},
		{program: "./app", workDir: "/usr/local/bin", wantContent: "#!app v1"},
		{program: "/usr/bin/app", wantErr: `exec: "/usr/bin/app": /usr/bin/app: no such file or directory in the image`},
		{program: "missing", pathEnv: "/usr/local/bin", wantErr: `exec: "missing": executable file not found in $PATH`},
		{program: "/etc/config", wantErr: `exec: "/etc/config": permission denied`},
		{program: "/usr/local/bin", wantErr: `exec: "/usr/local/bin": /usr/local/bin is a directory in the image`},
		// Never a file of the machine, even one that exists there.
		{program: "/bin/sh", wantErr: `exec: "/bin/sh": /bin/sh: no such file or directory in the image`},
	}
	for _, tc := range cases {
		t.Run(tc.program, func(t *testing.T) {
			local, err := img.executable(tc.program, tc.workDir, tc.pathEnv)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(local)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantContent, string(data)); diff != "" {
				t.Errorf("content (-want +got):\n%s", diff)
			}
			if !strings.HasPrefix(local, store.cache) {
				t.Errorf("%s is outside the image cache %s", local, store.cache)
			}
		})
	}
}
