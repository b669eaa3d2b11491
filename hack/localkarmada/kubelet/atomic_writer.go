package kubelet

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// fileProjection is one file of a volume built from API objects: its content and its mode.
type fileProjection struct {
	Data []byte
	Mode int32
}

// Kubelet's AtomicWriter layout (pkg/volume/util/atomic_writer.go), which readers of mounted Secrets depend on:
//
//	<dir>/..2026_01_02_15_04_05.123456789/<files>   the current content, a fresh folder per update
//	<dir>/..data -> ..2026_01_02_15_04_05.123456789  swapped atomically by renaming ..data_tmp over it
//	<dir>/<name> -> ..data/<name>                    one symlink per top-level name of the payload
//
// A reader that opens <dir>/tls.crt sees either the whole old or the whole new content, never a mix, and a
// watcher of the file (fsnotify through the symlink, as controller-runtime's certwatcher does) sees the old
// file removed when the previous folder is deleted after the swap.
const (
	dataDirName    = "..data"
	newDataDirName = "..data_tmp"
)

// writeAtomically makes dir hold exactly payload, and reports whether anything changed.
func writeAtomically(dir string, payload map[string]fileProjection) (bool, error) {
	for p := range payload {
		if err := validatePayloadPath(p); err != nil {
			return false, err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, err
	}
	oldDataDir, err := os.Readlink(filepath.Join(dir, dataDirName))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	var oldPaths map[string]bool
	if oldDataDir != "" {
		oldPaths, err = filesUnder(filepath.Join(dir, oldDataDir))
		if err != nil {
			return false, err
		}
		if same, err := holds(filepath.Join(dir, oldDataDir), oldPaths, payload); err != nil || same {
			return false, err
		}
	}

	tsDir, err := os.MkdirTemp(dir, time.Now().UTC().Format("..2006_01_02_15_04_05."))
	if err != nil {
		return false, err
	}
	if err := os.Chmod(tsDir, 0o755); err != nil {
		return false, err
	}
	for p, f := range payload {
		full := filepath.Join(tsDir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return false, err
		}
		if err := os.WriteFile(full, f.Data, fs.FileMode(f.Mode)&0o777); err != nil {
			return false, err
		}
		// WriteFile applies the umask; the mode asked for is the mode wanted.
		if err := os.Chmod(full, fs.FileMode(f.Mode)&0o777); err != nil {
			return false, err
		}
	}
	tmpLink := filepath.Join(dir, newDataDirName)
	_ = os.Remove(tmpLink)
	if err := os.Symlink(filepath.Base(tsDir), tmpLink); err != nil {
		return false, err
	}
	if err := os.Rename(tmpLink, filepath.Join(dir, dataDirName)); err != nil {
		return false, err
	}

	visible := topLevelNames(payload)
	for name := range visible {
		link := filepath.Join(dir, name)
		if _, err := os.Lstat(link); err == nil {
			continue
		}
		if err := os.Symlink(filepath.Join(dataDirName, name), link); err != nil {
			return false, err
		}
	}
	for p := range oldPaths {
		name := strings.SplitN(p, "/", 2)[0]
		if !visible[name] {
			if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return false, err
			}
		}
	}
	if oldDataDir != "" {
		if err := os.RemoveAll(filepath.Join(dir, oldDataDir)); err != nil {
			return false, err
		}
	}
	return true, nil
}

// validatePayloadPath refuses what the API server refuses in a key-to-path item: absolute paths, ".." elements,
// and names that would collide with the writer's own "..data" entries.
func validatePayloadPath(p string) error {
	switch {
	case p == "":
		return errors.New("invalid path: must not be empty")
	case filepath.IsAbs(p):
		return fmt.Errorf("invalid path %q: must be relative", p)
	case strings.HasPrefix(p, ".."):
		return fmt.Errorf("invalid path %q: must not start with '..'", p)
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return fmt.Errorf("invalid path %q: must not contain '..'", p)
		}
	}
	return nil
}

func topLevelNames(payload map[string]fileProjection) map[string]bool {
	names := map[string]bool{}
	for p := range payload {
		names[strings.SplitN(filepath.Clean(p), "/", 2)[0]] = true
	}
	return names
}

// filesUnder lists the regular files under dir, by slash-separated relative path.
func filesUnder(dir string) (map[string]bool, error) {
	files := map[string]bool{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, err := filepath.Rel(dir, path)
			if err != nil {
				return err
			}
			files[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	return files, err
}

// holds reports whether dir, which holds exactly the files in existing, has payload's content and modes.
func holds(dir string, existing map[string]bool, payload map[string]fileProjection) (bool, error) {
	if len(existing) != len(payload) {
		return false, nil
	}
	for p, f := range payload {
		if !existing[filepath.ToSlash(filepath.Clean(p))] {
			return false, nil
		}
		full := filepath.Join(dir, p)
		info, err := os.Stat(full)
		if err != nil {
			return false, err
		}
		if info.Mode().Perm() != fs.FileMode(f.Mode)&0o777 {
			return false, nil
		}
		data, err := os.ReadFile(full)
		if err != nil {
			return false, err
		}
		if !bytes.Equal(data, f.Data) {
			return false, nil
		}
	}
	return true, nil
}

// sortedKeys returns a map's keys in order, for stable output.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
