// Package framework runs the project's binaries in the integration tests' process against the real control plane
// they share with the benchmark (internal/testenv: etcd and kube-apiserver from KUBEBUILDER_ASSETS, built by
// `make envtest-assets`, with Karmada's CRDs from the pinned Karmada module and the project's own CRDs installed):
// it starts that control plane, the quota webhook's replicas and the quota controller, and builds the objects the
// tests write. Only the integration tests (test/integration) import it.
package framework

import (
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/karmada-quota/karmada-quota/internal/testenv"
)

// Start starts the control plane and returns a client for it; stop it with env.Stop().
func Start() (*envtest.Environment, *rest.Config, client.Client, error) {
	env, err := testenv.NewEnvironment()
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
