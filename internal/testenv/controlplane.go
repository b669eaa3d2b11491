package testenv

import (
	"fmt"
	"os"
	"path/filepath"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
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

// NewEnvironment describes a control plane with Karmada's and the project's CRDs: etcd and kube-apiserver from
// KUBEBUILDER_ASSETS (built by `make envtest-assets`). Start it with Start() and stop it with Stop(); it fails
// early with a clear message when the binaries were not built.
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
	clusterCRD, err := KarmadaClusterCRDDir(assets)
	if err != nil {
		return nil, err
	}
	karmadaCRDs = append(karmadaCRDs, clusterCRD)
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
