package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"debug/buildinfo"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

const (
	// nonRoot is the user and group every image runs as: distroless's "nonroot", so an image built here and one built
	// from the Dockerfile (on distroless's static nonroot image) run as the same identity, and the chart's
	// runAsUser/runAsGroup 65532 name a user the image knows.
	nonRoot = 65532
	// Source is the repository every image is built from (org.opencontainers.image.source).
	Source = "https://github.com/karmada-quota/karmada-quota"
	// License of every image (org.opencontainers.image.licenses, SPDX).
	License = "Apache-2.0"
	// binaryDir is where the binary lives in the image; the Dockerfile copies it to the same place.
	binaryDir = "usr/local/bin/"
	// searchPath is distroless's PATH, so the two builds agree on it.
	searchPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)

// The identity files of the base layer. HOME is /home/nonroot, as in distroless: a program that writes under $HOME
// (Helm's cache and config paths, in the operator) gets a folder of its own when the root filesystem is writable,
// instead of "/", which the non-root user cannot write.
const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group = "root:x:0:\n" +
		"nonroot:x:65532:\n"
)

// Spec says which image to build.
type Spec struct {
	// Name of the binary and of the image (its title).
	Name        string
	Description string
	Version     string
	Revision    string
	// Created is the commit time: the image's creation time and every file's modification time.
	Created time.Time
	// Binary is the path of the static binary to put in the image.
	Binary string
}

// Build returns the image of spec: a base layer with /etc/passwd, /etc/group, /home/nonroot and /tmp, and a layer
// with the binary. The platform is the one the binary was built for, read from its build information, so an image
// can never claim an architecture its binary does not run on.
func Build(spec Spec) (v1.Image, error) {
	binary, err := os.ReadFile(spec.Binary)
	if err != nil {
		return nil, fmt.Errorf("reading the binary (run `make build`): %w", err)
	}
	goos, goarch, err := platform(spec.Binary, binary)
	if err != nil {
		return nil, err
	}
	base, err := layer(spec.Created, []file{
		{name: "etc/", mode: 0o755},
		{name: "etc/group", mode: 0o644, content: []byte(group)},
		{name: "etc/passwd", mode: 0o644, content: []byte(passwd)},
		{name: "home/", mode: 0o755},
		{name: "home/nonroot/", mode: 0o700, owner: nonRoot},
		// Sticky and world-writable, as in every Linux image, for programs that write to os.TempDir().
		{name: "tmp/", mode: 0o1777},
	})
	if err != nil {
		return nil, err
	}
	app, err := layer(spec.Created, []file{
		{name: "usr/", mode: 0o755},
		{name: "usr/local/", mode: 0o755},
		{name: binaryDir, mode: 0o755},
		// Owned by root and not writable by the user it runs as: a compromised process cannot replace its binary.
		{name: binaryDir + spec.Name, mode: 0o755, content: binary},
	})
	if err != nil {
		return nil, err
	}

	created := v1.Time{Time: spec.Created}
	img, err := mutate.ConfigFile(empty.Image, &v1.ConfigFile{
		Architecture: goarch,
		OS:           goos,
		Created:      created,
		Config: v1.Config{
			Entrypoint: []string{"/" + binaryDir + spec.Name},
			User:       fmt.Sprintf("%d:%d", nonRoot, nonRoot),
			WorkingDir: "/",
			Env:        []string{searchPath},
			Labels:     Labels(spec),
		},
		RootFS: v1.RootFS{Type: "layers"},
	})
	if err != nil {
		return nil, err
	}
	return mutate.Append(img,
		mutate.Addendum{Layer: base, History: v1.History{Created: created, Author: "hack/images",
			CreatedBy: "/etc/passwd, /etc/group: user and group 65532 nonroot; /home/nonroot; /tmp"}},
		mutate.Addendum{Layer: app, History: v1.History{Created: created, Author: "hack/images",
			CreatedBy: "/" + binaryDir + spec.Name + " (static, " + spec.Version + ")"}},
	)
}

// Labels are the OCI annotations of the image's config (github.com/opencontainers/image-spec, annotations.md).
func Labels(spec Spec) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":       spec.Name,
		"org.opencontainers.image.description": spec.Description,
		"org.opencontainers.image.version":     spec.Version,
		"org.opencontainers.image.revision":    spec.Revision,
		"org.opencontainers.image.source":      Source,
		"org.opencontainers.image.created":     spec.Created.UTC().Format(time.RFC3339),
		"org.opencontainers.image.licenses":    License,
	}
}

// platform returns the GOOS and GOARCH path was built for, and refuses a binary that needs a dynamic loader: the
// image has no libc and no loader, so such a binary could not start in it.
func platform(path string, binary []byte) (goos, goarch string, err error) {
	info, err := buildinfo.Read(bytes.NewReader(binary))
	if err != nil {
		return "", "", fmt.Errorf("%s is not a Go binary: %w", path, err)
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "GOOS":
			goos = s.Value
		case "GOARCH":
			goarch = s.Value
		}
	}
	if goos != "linux" {
		return "", "", fmt.Errorf("%s is built for GOOS=%q: images run Linux binaries", path, goos)
	}
	exe, err := elf.NewFile(bytes.NewReader(binary))
	if err != nil {
		return "", "", fmt.Errorf("%s: %w", path, err)
	}
	defer exe.Close()
	for _, prog := range exe.Progs {
		if prog.Type == elf.PT_INTERP {
			return "", "", fmt.Errorf("%s is dynamically linked: build it with CGO_ENABLED=0 (`make build`)", path)
		}
	}
	return goos, goarch, nil
}

// file is one entry of a layer: a folder when its name ends with "/", else a regular file.
type file struct {
	name    string
	mode    int64
	owner   int // uid and gid; 0 (root) unless set
	content []byte
}

// layer returns a gzip-compressed layer holding files in order, each with modification time mtime and no other
// time, so its digest depends on the content only.
func layer(mtime time.Time, files []file) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		hdr := &tar.Header{
			Name:    f.name,
			Mode:    f.mode,
			Uid:     f.owner,
			Gid:     f.owner,
			Uname:   userName(f.owner),
			Gname:   userName(f.owner),
			ModTime: mtime,
		}
		if f.name[len(f.name)-1] == '/' {
			hdr.Typeflag = tar.TypeDir
		} else {
			hdr.Typeflag = tar.TypeReg
			hdr.Size = int64(len(f.content))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.content); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	content := buf.Bytes()
	// Compressed once and kept: the digest, the manifest and the archive all read the compressed blob. gzip's default
	// level: on a 41 MB binary, 13.4 MB in 1.3 s, where the best level saves 0.4% in 5 s and ggcr's default (the
	// fastest) gives 15.3 MB.
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(content)), nil },
		tarball.WithCompressionLevel(gzip.DefaultCompression), tarball.WithCompressedCaching)
}

func userName(id int) string {
	if id == nonRoot {
		return "nonroot"
	}
	return "root"
}
