package systems

import (
	"context"
	"errors"

	"github.com/karmada-quota/karmada-quota/test/bench/internal/workload"
)

// None is the apiserver with no quota webhook: the physical limit of ResourceBinding writes on this machine.
type None struct{}

// Name implements System.
func (None) Name() string { return "no quota webhook" }

// Enforcing implements System.
func (None) Enforcing() bool { return false }

// Start implements System.
func (None) Start(context.Context) error { return nil }

// CreateQuota implements System.
func (None) CreateQuota(context.Context, string, workload.Limits) error {
	return errors.New("no quota system is installed")
}

// Status implements System.
func (None) Status(context.Context, string) (Status, error) {
	return Status{}, errors.New("no quota system is installed")
}

// ControllerWrote implements System.
func (None) ControllerWrote(context.Context, string) (bool, error) { return true, nil }

// Processes implements System.
func (None) Processes() []*Component { return nil }

// Stop implements System.
func (None) Stop(context.Context) error { return nil }

// Describe implements System.
func (None) Describe() string {
	return "kube-apiserver with Karmada's CRDs and no validating webhook for ResourceBindings."
}
