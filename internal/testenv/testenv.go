// Package testenv is the ground every environment that runs the project's code stands on, whichever tier it
// serves: where the repository is; what the pinned Karmada module ships and a Karmada installation applies (its
// CRDs, its own webhook configurations); a control plane of etcd and kube-apiserver from KUBEBUILDER_ASSETS with
// Karmada's and the project's CRDs installed; and quotas and bindings created on it as their real writers create
// them. Package loopback, beside it, finds free ports on 127.0.0.1 and tells when a server there serves TLS.
//
// The integration tests (test/integration/framework), the e2e suite (test/e2e), the benchmark (test/bench) and the
// local Karmada of `make up` and `make demo` (hack/localkarmada) import it; it imports none of them.
package testenv

import (
	"path/filepath"
	goruntime "runtime"
)

// RepoRoot is the repository root, found from this file's location so that tests run from any package directory
// and commands from any working directory.
func RepoRoot() string {
	_, file, _, _ := goruntime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}
