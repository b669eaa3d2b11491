package kubelet

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// ImageFile is one file of an image built by WriteImage.
type ImageFile struct {
	// Path inside the image, absolute.
	Path string
	Data []byte
	Mode int64
	// Link, when set, makes the entry a symbolic link to Link instead of a file.
	Link string
}

// WriteImage writes a one-layer image holding files, with config, as a docker-archive tarball at archivePath
// with the single RepoTag tag, the shape `make images` writes. Tests use it to make images the local kubelet
// runs; it is written to a temporary name and renamed, so the kubelet never reads half an archive.
func WriteImage(archivePath, tag string, config v1.Config, files ...ImageFile) error {
	ref, err := name.NewTag(tag)
	if err != nil {
		return err
	}
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	dirs := map[string]bool{}
	for _, f := range files {
		rel := strings.TrimPrefix(filepath.Clean(f.Path), "/")
		// Parent folders first, as image builders write them.
		parts := strings.Split(rel, "/")
		for i := 1; i < len(parts); i++ {
			dir := strings.Join(parts[:i], "/")
			if !dirs[dir] {
				dirs[dir] = true
				if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir + "/", Mode: 0o755, ModTime: time.Unix(0, 0)}); err != nil {
					return err
				}
			}
		}
		hdr := &tar.Header{Name: rel, Mode: f.Mode, ModTime: time.Unix(0, 0)}
		if f.Link != "" {
			hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, f.Link
		} else {
			hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(f.Data))
			if hdr.Mode == 0 {
				hdr.Mode = 0o644
			}
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(f.Data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	raw := layer.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(raw)), nil })
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, l)
	if err != nil {
		return err
	}
	if img, err = mutate.Config(img, config); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(archivePath), 0o755); err != nil {
		return err
	}
	tmp := archivePath + ".tmp"
	if err := tarball.WriteToFile(tmp, ref, img); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, archivePath)
}
