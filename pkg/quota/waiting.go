package quota

import (
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"

	"github.com/karmada-quota/karmada-quota/pkg/resources"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
)

// WaitsOn reports whether rb waits on this quota, and what it still needs of it (StillNeeded): a quota refused
// Karmada's scheduler (usage.WaitingForQuota), rb is not being deleted, and placing all its replicas would add
// something this quota limits. A binding that needs nothing of this quota waits on another one, and a binding no
// quota can count waits on none.
//
// This is the one rule for "waits on this quota": the controller requeues such bindings when the quota gains
// headroom and counts them in karmada_quota_bindings_waiting.
func (l *Ledger) WaitsOn(rb *workv1alpha2.ResourceBinding) (resources.List, bool) {
	if !usage.WaitingForQuota(rb) || rb.DeletionTimestamp != nil {
		return nil, false
	}
	need, err := l.StillNeeded(rb)
	if err != nil || len(need) == 0 {
		return nil, false
	}
	return need, true
}
