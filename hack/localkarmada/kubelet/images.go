package kubelet

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// errImageNotFound is what a missing image reports: the kubelet's ErrImagePull.
var errImageNotFound = errors.New("image not found")

// imageStore plays the container runtime's image service: images are docker-archive tarballs (what `docker
// save` and `make images` write) in a list of folders, found by the RepoTags their manifest.json names. The
// folders are read again when an image is not found, so an archive written after the kubelet started is
// "pulled" on the next try.
type imageStore struct {
	dirs []string
	// cache holds the files taken out of images, by image digest.
	cache string

	mu       sync.Mutex
	archives map[string]*archive // by file path
}

type archive struct {
	modTime time.Time
	size    int64
	// tags are the archive's RepoTags, normalised (see normalizeReference).
	tags  []string
	image v1.Image
}

// image is a resolved image reference.
type image struct {
	// Digest is the image's manifest digest ("sha256:..."), reported as the container's imageID.
	Digest string
	// ID is the hex digest of the image's configuration, which a container runtime names a loaded image by.
	ID string
	// Archive is the file the image is in.
	Archive string
	Config  v1.Config
	store   *imageStore
	img     v1.Image
}

func newImageStore(dirs []string, cache string) *imageStore {
	return &imageStore{dirs: dirs, cache: cache, archives: map[string]*archive{}}
}

// normalizeReference spells an image reference the way its archive's RepoTags are compared: registry and
// repository with Docker's defaults made explicit (busybox is index.docker.io/library/busybox:latest), and the
// tag, or the digest.
func normalizeReference(ref string) (string, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return "", fmt.Errorf("invalid image reference %q: %w", ref, err)
	}
	return r.Name(), nil
}

// resolve finds the image a container names. A tag matches an archive's RepoTag exactly; a digest reference
// matches an archive of that repository whose image has that digest.
func (s *imageStore) resolve(ref string) (*image, error) {
	parsed, err := name.ParseReference(ref)
	if err != nil {
		return nil, fmt.Errorf("invalid image reference %q: %w", ref, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if img, err := s.find(parsed); err == nil || !errors.Is(err, errImageNotFound) {
		return img, err
	}
	if err := s.rescan(); err != nil {
		return nil, err
	}
	return s.find(parsed)
}

func (s *imageStore) find(ref name.Reference) (*image, error) {
	for file, a := range s.archives {
		for _, tag := range a.tags {
			switch r := ref.(type) {
			case name.Tag:
				if tag != r.Name() {
					continue
				}
			case name.Digest:
				t, err := name.NewTag(tag)
				if err != nil || t.Repository.Name() != r.Repository.Name() {
					continue
				}
				d, err := a.image.Digest()
				if err != nil || d.String() != r.DigestStr() {
					continue
				}
			}
			return s.imageOf(file, a)
		}
	}
	return nil, fmt.Errorf("%w: no archive in %s has the tag %s", errImageNotFound, strings.Join(s.dirs, ", "), ref.Name())
}

func (s *imageStore) imageOf(file string, a *archive) (*image, error) {
	digest, err := a.image.Digest()
	if err != nil {
		return nil, err
	}
	id, err := a.image.ConfigName()
	if err != nil {
		return nil, err
	}
	cfg, err := a.image.ConfigFile()
	if err != nil {
		return nil, err
	}
	return &image{Digest: digest.String(), ID: id.Hex, Archive: file, Config: cfg.Config, store: s, img: a.image}, nil
}

// rescan reads the manifests of archives that are new or changed since the last scan.
func (s *imageStore) rescan() error {
	seen := map[string]bool{}
	for _, dir := range s.dirs {
		entries, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		for _, e := range entries {
			if e.IsDir() || !strings.HasSuffix(e.Name(), ".tar") {
				continue
			}
			p := filepath.Join(dir, e.Name())
			info, err := e.Info()
			if err != nil {
				continue
			}
			seen[p] = true
			if a, ok := s.archives[p]; ok && a.modTime.Equal(info.ModTime()) && a.size == info.Size() {
				continue
			}
			a, err := loadArchive(p)
			if err != nil {
				// A half-written archive is read again on the next scan.
				delete(s.archives, p)
				continue
			}
			a.modTime, a.size = info.ModTime(), info.Size()
			s.archives[p] = a
		}
	}
	for p := range s.archives {
		if !seen[p] {
			delete(s.archives, p)
		}
	}
	return nil
}

func loadArchive(p string) (*archive, error) {
	opener := func() (io.ReadCloser, error) { return os.Open(p) }
	manifest, err := tarball.LoadManifest(opener)
	if err != nil {
		return nil, err
	}
	if len(manifest) != 1 {
		return nil, fmt.Errorf("%s holds %d images; one per archive is supported", p, len(manifest))
	}
	img, err := tarball.Image(opener, nil)
	if err != nil {
		return nil, err
	}
	a := &archive{image: img}
	for _, t := range manifest[0].RepoTags {
		n, err := normalizeReference(t)
		if err != nil {
			return nil, err
		}
		a.tags = append(a.tags, n)
	}
	return a, nil
}

// user is the image's configured user, "" for root.
func (img *image) user() string { return img.Config.User }

// file returns a local copy of the file at p inside the image, following symbolic links inside the image, taken
// out of the image's layers once and cached by image digest. It never falls back to a file of the machine: a
// path the image does not have is an error, as exec in a container would report.
func (img *image) file(p string) (string, fs.FileMode, error) {
	cleaned := strings.TrimPrefix(path.Clean("/"+p), "/")
	local := filepath.Join(img.store.cache, strings.ReplaceAll(img.Digest, ":", "-"), "rootfs", cleaned)
	if info, err := os.Stat(local); err == nil && info.Mode().IsRegular() {
		return local, info.Mode().Perm(), nil
	}
	target, mode, err := img.extract(cleaned, local)
	if err != nil {
		return "", 0, err
	}
	return target, mode, nil
}

// extract copies one file out of the flattened image into local.
func (img *image) extract(want, local string) (string, fs.FileMode, error) {
	for hops := 0; hops < 16; hops++ {
		rc := mutate.Extract(img.img)
		tr := tar.NewReader(rc)
		var link string
		for {
			hdr, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				rc.Close()
				return "", 0, fmt.Errorf("reading the image's layers: %w", err)
			}
			entry := strings.TrimPrefix(path.Clean("/"+hdr.Name), "/")
			if entry != want {
				// A file under a symlinked folder: follow the folder's link.
				if hdr.Typeflag == tar.TypeSymlink && strings.HasPrefix(want, entry+"/") {
					link = path.Join(resolveLink(entry, hdr.Linkname), strings.TrimPrefix(want, entry+"/"))
				}
				continue
			}
			switch hdr.Typeflag {
			case tar.TypeReg:
				err := writeExtracted(local, tr, hdr.FileInfo().Mode().Perm())
				rc.Close()
				if err != nil {
					return "", 0, err
				}
				return local, hdr.FileInfo().Mode().Perm(), nil
			case tar.TypeSymlink:
				link = resolveLink(entry, hdr.Linkname)
			case tar.TypeLink:
				link = strings.TrimPrefix(path.Clean("/"+hdr.Linkname), "/")
			case tar.TypeDir:
				rc.Close()
				return "", 0, fmt.Errorf("%s is a directory in the image", "/"+want)
			default:
				rc.Close()
				return "", 0, fmt.Errorf("%s is not a regular file in the image", "/"+want)
			}
			if link != "" {
				break
			}
		}
		rc.Close()
		if link == "" {
			return "", 0, fmt.Errorf("%s: no such file or directory in the image", "/"+want)
		}
		want = link
	}
	return "", 0, fmt.Errorf("too many levels of symbolic links resolving %s in the image", "/"+want)
}

// resolveLink is where a symlink at entry pointing to target leads, inside the image.
func resolveLink(entry, target string) string {
	if path.IsAbs(target) {
		return strings.TrimPrefix(path.Clean(target), "/")
	}
	return strings.TrimPrefix(path.Clean("/"+path.Join(path.Dir(entry), target)), "/")
}

func writeExtracted(local string, r io.Reader, mode fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(local), ".extract-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, r); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), mode); err != nil {
		return err
	}
	// Renamed into place, so a concurrent start never runs a half-written binary.
	return os.Rename(tmp.Name(), local)
}

// defaultPath is the PATH a container runtime sets when the image sets none.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// executable finds the program a container runs, as the runtime does: a name with a slash is a path (relative to
// the working folder), any other name is looked up in the container's PATH, inside the image.
func (img *image) executable(program, workingDir, pathEnv string) (string, error) {
	if program == "" {
		return "", errors.New("no command specified")
	}
	var candidates []string
	switch {
	case strings.Contains(program, "/"):
		if !path.IsAbs(program) {
			program = path.Join("/", workingDir, program)
		}
		candidates = []string{program}
	default:
		if pathEnv == "" {
			pathEnv = defaultPath
		}
		for _, dir := range filepath.SplitList(pathEnv) {
			if path.IsAbs(dir) {
				candidates = append(candidates, path.Join(dir, program))
			}
		}
	}
	var lastErr error
	for _, c := range candidates {
		local, mode, err := img.file(c)
		if err != nil {
			lastErr = err
			continue
		}
		if mode&0o111 == 0 {
			return "", fmt.Errorf("exec: %q: permission denied", c)
		}
		return local, nil
	}
	if !strings.Contains(program, "/") {
		return "", fmt.Errorf("exec: %q: executable file not found in $PATH", program)
	}
	return "", fmt.Errorf("exec: %q: %v", program, lastErr)
}
