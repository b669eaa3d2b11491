package kubectlplugin

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// krewPlugin is the part of krew's index.Plugin (sigs.k8s.io/krew/pkg/index) its validation reads.
type krewPlugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string `json:"version"`
		ShortDescription string `json:"shortDescription"`
		Platforms        []struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			URI    string `json:"uri"`
			Sha256 string `json:"sha256"`
			Bin    string `json:"bin"`
		} `json:"platforms"`
	} `json:"spec"`
}

// TestKrewManifest renders the manifest as a release would and checks it against the rules krew's own validation
// applies (internal/index/validation), plus what a release must provide: an archive per platform at the tag.
func TestKrewManifest(t *testing.T) {
	path := filepath.Join("..", "..", "deploy", "krew", "karmada-quota.yaml")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rendered := string(raw)
	for _, p := range []string{"linux_amd64", "linux_arm64", "darwin_amd64", "darwin_arm64"} {
		rendered = strings.ReplaceAll(rendered, "{{sha256_"+p+"}}", strings.Repeat("ab", 32))
	}
	rendered = strings.ReplaceAll(rendered, "{{version}}", "1.2.3")
	if strings.Contains(rendered, "{{") {
		t.Fatalf("placeholders a release does not render are left in %s", path)
	}
	var p krewPlugin
	if err := yaml.Unmarshal([]byte(rendered), &p); err != nil {
		t.Fatal(err)
	}

	if p.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || p.Kind != "Plugin" {
		t.Errorf("apiVersion/kind = %s/%s, want krew.googlecontainertools.github.com/v1alpha2/Plugin", p.APIVersion, p.Kind)
	}
	if want := strings.TrimSuffix(filepath.Base(path), ".yaml"); p.Metadata.Name != want {
		t.Errorf("metadata.name = %q, want the file's name %q", p.Metadata.Name, want)
	}
	if !regexp.MustCompile(`^[\w-]+$`).MatchString(p.Metadata.Name) {
		t.Errorf("metadata.name %q is not a name krew accepts", p.Metadata.Name)
	}
	if p.Spec.Version != "v1.2.3" {
		t.Errorf("spec.version renders to %q, want v1.2.3", p.Spec.Version)
	}
	if d := p.Spec.ShortDescription; d == "" || strings.ContainsAny(d, "\r\n") {
		t.Errorf("shortDescription %q must be one non-empty line", d)
	}
	var platforms []string
	for _, pl := range p.Spec.Platforms {
		os, arch := pl.Selector.MatchLabels["os"], pl.Selector.MatchLabels["arch"]
		platforms = append(platforms, os+"/"+arch)
		if len(pl.Selector.MatchLabels) != 2 {
			t.Errorf("%s/%s: a selector on os and arch only, got %v", os, arch, pl.Selector.MatchLabels)
		}
		wantURI := "https://github.com/karmada-quota/karmada-quota/releases/download/v1.2.3/kubectl-karmada-quota_v1.2.3_" + os + "_" + arch + ".tar.gz"
		if pl.URI != wantURI {
			t.Errorf("%s/%s: uri = %s, want %s", os, arch, pl.URI, wantURI)
		}
		if !regexp.MustCompile(`^[a-f0-9]{64}$`).MatchString(pl.Sha256) {
			t.Errorf("%s/%s: sha256 %q renders to no checksum krew accepts", os, arch, pl.Sha256)
		}
		if pl.Bin != "kubectl-karmada-quota" {
			t.Errorf("%s/%s: bin = %q, want the binary go install makes, kubectl-karmada-quota", os, arch, pl.Bin)
		}
	}
	sort.Strings(platforms)
	if diff := cmp.Diff([]string{"darwin/amd64", "darwin/arm64", "linux/amd64", "linux/arm64"}, platforms); diff != "" {
		t.Errorf("platforms (-want +got):\n%s", diff)
	}
}
