// Package framework starts the real control plane the integration tests run against: etcd and kube-apiserver
// from KUBEBUILDER_ASSETS (built by `make envtest-assets`), with Karmada's CRDs from the pinned Karmada module and
// the project's own CRDs installed.
package framework

import (
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/karmada-quota/karmada-quota/pkg/scheme"
)

// Scheme knows every type the tests read and write: the binaries' types, and CRDs.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		scheme.AddToScheme,
		apiextensionsv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// RepoRoot is the repository root, found from this file's location so tests run from any package directory.
func RepoRoot() string {
	_, file, _, _ := goruntime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// NewEnvironment describes a control plane with Karmada's and the project's CRDs. Start it with Start() and stop
// it with Stop(); it fails early with a clear message when the binaries were not built.
func NewEnvironment() (*envtest.Environment, error) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		return nil, fmt.Errorf("KUBEBUILDER_ASSETS is not set: run the integration tests with `make test-integration`, " +
			"which builds etcd and kube-apiserver and sets it")
	}
	for _, bin := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(assets, bin)); err != nil {
			return nil, fmt.Errorf("%s not found in KUBEBUILDER_ASSETS=%s: run `make envtest-assets`", bin, assets)
		}
	}
	karmadaCRDs, err := KarmadaCRDDirs()
	if err != nil {
		return nil, err
	}
	s, err := Scheme()
	if err != nil {
		return nil, err
	}
	return &envtest.Environment{
		Scheme:                s,
		BinaryAssetsDirectory: assets,
		CRDInstallOptions: envtest.CRDInstallOptions{
			Scheme:             s,
			Paths:              append([]string{filepath.Join(RepoRoot(), "deploy", "charts", "karmada-quota", "files", "crds")}, karmadaCRDs...),
			ErrorIfPathMissing: true,
		},
		ErrorIfCRDPathMissing: true,
	}, nil
}

// Start starts the control plane and returns a client for it; stop it with env.Stop().
func Start() (*envtest.Environment, *rest.Config, client.Client, error) {
	env, err := NewEnvironment()
	if err != nil {
		return nil, nil, nil, err
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, nil, nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		_ = env.Stop()
		return nil, nil, nil, err
	}
	return env, cfg, c, nil
}
