package testenv

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

const karmadaModule = "github.com/karmada-io/karmada"

// karmadaModuleDir is the pinned Karmada module in the module cache: its CRDs and webhook configurations are
// what a Karmada installation applies.
func karmadaModuleDir() (string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", karmadaModule)
	cmd.Dir = RepoRoot()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("locating %s in the module cache: %w: %s", karmadaModule, err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}

// KarmadaClusterCRDDir returns where `make envtest-assets` writes the pinned Karmada's Cluster type as a CRD: next to
// assets (KUBEBUILDER_ASSETS), in the Makefile's cache. Karmada serves Clusters from its aggregated apiserver; the
// test apiserver serves them from this CRD, so that what reads member clusters (the quotas' cluster groups) runs
// against a real apiserver too.
func KarmadaClusterCRDDir(assets string) (string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Version}}", karmadaModule)
	cmd.Dir = RepoRoot()
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("reading the version of %s: %w", karmadaModule, err)
	}
	dir := filepath.Join(filepath.Dir(assets), "karmada-"+strings.TrimSpace(string(out))+"-cluster-crd")
	if _, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("Karmada's Cluster CRD not found (%w): run `make envtest-assets`", err)
	}
	return dir, nil
}

// KarmadaCRDDirs returns the folders of Karmada's CRD bases in the pinned Karmada module: the same CRDs a
// Karmada installation applies, without the conversion-webhook patches (the test apiserver has no webhook for
// them).
func KarmadaCRDDirs() ([]string, error) {
	module, err := karmadaModuleDir()
	if err != nil {
		return nil, err
	}
	bases := filepath.Join(module, "charts", "karmada", "_crds", "bases")
	entries, err := os.ReadDir(bases)
	if err != nil {
		return nil, fmt.Errorf("reading Karmada CRDs: %w", err)
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() {
			dirs = append(dirs, filepath.Join(bases, e.Name()))
		}
	}
	return dirs, nil
}

// KarmadaWebhookConfigurations returns Karmada's own webhook configurations as its installer registers them
// (artifacts/deploy/webhook-configuration.yaml of the pinned module), with the CA bundle filled in and the
// in-cluster Service address replaced by addr, where karmada-webhook listens.
func KarmadaWebhookConfigurations(addr string, ca []byte) (*admissionregistrationv1.MutatingWebhookConfiguration,
	*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	module, err := karmadaModuleDir()
	if err != nil {
		return nil, nil, err
	}
	raw, err := os.ReadFile(filepath.Join(module, "artifacts", "deploy", "webhook-configuration.yaml"))
	if err != nil {
		return nil, nil, err
	}
	manifest := strings.NewReplacer(
		"{{caBundle}}", base64.StdEncoding.EncodeToString(ca),
		"karmada-webhook.karmada-system.svc:443", addr,
	).Replace(string(raw))
	if strings.Contains(manifest, "{{") || !strings.Contains(manifest, addr) {
		return nil, nil, errors.New("karmada's webhook-configuration.yaml has changed shape: unexpected placeholders or no Service URL")
	}
	var mutating *admissionregistrationv1.MutatingWebhookConfiguration
	var validating *admissionregistrationv1.ValidatingWebhookConfiguration
	docs := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(manifest)))
	for {
		doc, err := docs.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, err
		}
		var kind struct{ Kind string }
		if err := yaml.Unmarshal(doc, &kind); err != nil {
			return nil, nil, err
		}
		switch kind.Kind {
		case "MutatingWebhookConfiguration":
			mutating = &admissionregistrationv1.MutatingWebhookConfiguration{}
			err = yaml.UnmarshalStrict(doc, mutating)
		case "ValidatingWebhookConfiguration":
			validating = &admissionregistrationv1.ValidatingWebhookConfiguration{}
			err = yaml.UnmarshalStrict(doc, validating)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("decoding Karmada's %s: %w", kind.Kind, err)
		}
	}
	if mutating == nil || validating == nil {
		return nil, nil, errors.New("karmada's webhook-configuration.yaml lacks its mutating or validating configuration")
	}
	return mutating, validating, nil
}
