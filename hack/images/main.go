// Command images builds the container images of karmada-quota's binaries without Docker: for each name, an image
// holding the static binary bin/<name> at /usr/local/bin/<name>, run as uid/gid 65532, written as a docker-archive
// tarball (what `docker save` writes) to <out-dir>/<name>.tar. `make images` runs it.
//
//	images --bin-dir bin --out-dir bin/images --version v0.1.0 --revision <sha> [--registry R] [--source-date-epoch S] NAME...
//
// Everything in an image comes from its binary and the flags, and every timestamp from --source-date-epoch (the
// commit time), so two builds of one commit write byte-identical archives with one digest.
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// descriptions are the org.opencontainers.image.description of each image; a name missing here is refused, so every
// published image says what it is.
var descriptions = map[string]string{
	"quota-webhook":          "karmada-quota's validating webhooks: admits Karmada ResourceBindings against KarmadaQuotas",
	"quota-controller":       "karmada-quota's controller: counts what ResourceBindings use into KarmadaQuota status and settles reservations",
	"karmada-quota-operator": "karmada-quota's operator: installs and upgrades karmada-quota onto a Karmada control plane",
}

func main() {
	err := run(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fset := flag.NewFlagSet("images", flag.ContinueOnError)
	fset.Usage = func() {
		fmt.Fprintf(fset.Output(), "Usage: images [flags] NAME...\n\nBuilds <out-dir>/NAME.tar for each NAME in %s.\n\n",
			strings.Join(knownNames(), ", "))
		fset.PrintDefaults()
	}
	binDir := fset.String("bin-dir", "bin", "Folder holding the static binaries (make build writes them).")
	outDir := fset.String("out-dir", "bin/images", "Folder the image archives are written to.")
	registry := fset.String("registry", "ghcr.io/karmada-quota", "Registry and path prefix of the images' tag: <registry>/<name>:<version>.")
	version := fset.String("version", "", "Release the binaries were built as: the images' tag and version label (required).")
	revision := fset.String("revision", "", "Commit the binaries were built from: the revision label (required).")
	epoch := fset.String("source-date-epoch", os.Getenv("SOURCE_DATE_EPOCH"),
		"Unix time of the commit: the images' creation time and every file's modification time (default $SOURCE_DATE_EPOCH, else 0).")
	if err := fset.Parse(args); err != nil {
		return err
	}
	if *version == "" || *revision == "" {
		return errors.New("--version and --revision are required (`make images` sets them)")
	}
	if fset.NArg() == 0 {
		return fmt.Errorf("name at least one image: %s", strings.Join(knownNames(), ", "))
	}
	created := time.Unix(0, 0).UTC()
	if *epoch != "" {
		seconds, err := strconv.ParseInt(*epoch, 10, 64)
		if err != nil {
			return fmt.Errorf("--source-date-epoch %q: not a Unix time in seconds", *epoch)
		}
		created = time.Unix(seconds, 0).UTC()
	}
	if err := os.MkdirAll(*outDir, 0o755); err != nil {
		return err
	}
	for _, imageName := range fset.Args() {
		description, ok := descriptions[imageName]
		if !ok {
			return fmt.Errorf("unknown image %q: known are %s", imageName, strings.Join(knownNames(), ", "))
		}
		tag, err := name.NewTag(*registry + "/" + imageName + ":" + *version)
		if err != nil {
			return fmt.Errorf("image reference of %s: %w", imageName, err)
		}
		spec := Spec{Name: imageName, Description: description, Version: *version, Revision: *revision, Created: created,
			Binary: filepath.Join(*binDir, imageName)}
		out := filepath.Join(*outDir, imageName+".tar")
		key, err := inputsKey(spec, tag)
		if err != nil {
			return fmt.Errorf("%s: %w", imageName, err)
		}
		if unchanged(out, key) {
			// The image is reproducible, so the same inputs give the same archive: `make up` and `make test` build
			// images on every run, and compressing three 40 MB binaries again took 4 of make up's seconds.
			fmt.Printf("%s  %s  unchanged\n", out, tag)
			continue
		}
		if err := write(spec, tag, out, key); err != nil {
			return fmt.Errorf("%s: %w", imageName, err)
		}
	}
	return nil
}

// write builds spec's image and writes it to path as a docker-archive with the one tag, through a temporary file so
// an interrupted build never leaves an archive that looks complete. It prints what it wrote.
func write(spec Spec, tag name.Tag, path, key string) error {
	img, err := Build(spec)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := tarball.WriteToFile(tmp, tag, img); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if err := os.WriteFile(path+inputsSuffix, []byte(key), 0o644); err != nil {
		return err
	}
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	id, err := img.ConfigName()
	if err != nil {
		return err
	}
	fmt.Printf("%s  %s  %.1f MiB  digest %s  id %s\n", path, tag, float64(info.Size())/(1<<20), digest, id)
	return nil
}

// inputsSuffix names the file next to an archive recording the inputs it was built from.
const inputsSuffix = ".inputs"

// inputsKey sums everything an archive is built from: the binary's bytes, this program's own (which lays the image
// out), the spec and the tag.
func inputsKey(spec Spec, tag name.Tag) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, path := range []string{spec.Binary, self} {
		if err := hashFile(h, path); err != nil {
			return "", err
		}
	}
	fmt.Fprintf(h, "\x00%s\x00%s\x00%s\x00%s\x00%s\x00%d", tag, spec.Name, spec.Description, spec.Version, spec.Revision, spec.Created.Unix())
	return hex.EncodeToString(h.Sum(nil)), nil
}

func hashFile(w io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}

// unchanged reports whether the archive at path exists and was built from inputs with this key.
func unchanged(path, key string) bool {
	recorded, err := os.ReadFile(path + inputsSuffix)
	if err != nil || string(recorded) != key {
		return false
	}
	_, err = os.Stat(path)
	return err == nil
}

func knownNames() []string {
	names := make([]string, 0, len(descriptions))
	for n := range descriptions {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
