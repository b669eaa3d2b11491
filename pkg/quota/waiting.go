package quota

import (
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"

	"github.com/karmada-quota/karmada-quota/pkg/resources"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
)

// WaitsOn reports whether rb waits on this quota, and what it still needs of it (StillNeeded): a quota refused
// Karmada's scheduler (usage.WaitingForQuota), or, for a quota with cluster or group limits, the scheduler found no
// member with room (usage.WaitingForMemberRoom); rb is not being deleted; and placing all its replicas would add
// something this quota limits. A binding that needs nothing of this quota waits on another one, and a binding no
// quota can count waits on none.
//
// This is the one rule for "waits on this quota": the controller requeues such bindings when the quota gains
// headroom and counts them in karmada_quota_bindings_waiting.
func (l *Ledger) WaitsOn(rb *workv1alpha2.ResourceBinding) (resources.List, bool) {
	return l.waitsOn(rb, nil)
}

// waitsOn is WaitsOn given rb's current charge on this quota when the caller has it already (Recount), nil
// otherwise: most bindings wait on nothing, and are told so without their usage being read.
func (l *Ledger) waitsOn(rb *workv1alpha2.ResourceBinding, current *usage.Charge) (resources.List, bool) {
	waiting := usage.WaitingForQuota(rb) || l.onMembers != nil && usage.WaitingForMemberRoom(rb)
	if !waiting || rb.DeletionTimestamp != nil {
		return nil, false
	}
	if current == nil {
		u, err := usage.Of(rb)
		if err != nil {
			return nil, false
		}
		charge := u.Charge(l.Selector)
		current = &charge
	}
	need, err := l.stillNeeded(rb, *current)
	if err != nil || len(need) == 0 {
		return nil, false
	}
	return need, true
}
