package quota

import (
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"

	"github.com/karmada-quota/karmada-quota/pkg/resources"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
)

// This file reads a ledger for people: what it limits, under which names, and what a waiting binding still needs.
// Callers get copies; nothing here changes the ledger.

// Hard returns the limits in accounting units, by canonical name.
func (l *Ledger) Hard() resources.List {
	return l.hard.Clone()
}

// Used returns status.used as read, for the resources the quota limits.
func (l *Ledger) Used() resources.List {
	return l.used.Clone()
}

// Reserved returns the sum of the reservations, for the resources the quota limits.
func (l *Ledger) Reserved() resources.List {
	return l.reserved.Clone()
}

// AuthorName returns the key the quota's author wrote for a canonical name (cpu for requests.cpu), or the
// canonical name itself when the quota does not limit it.
func (l *Ledger) AuthorName(canonical corev1.ResourceName) corev1.ResourceName {
	if name, ok := l.userName[canonical]; ok {
		return name
	}
	return canonical
}

// LimitsHeld reports whether the quota limits anything objects hold on members (resources.Held): claims, storage,
// load balancers, node ports. Only then are templates read for it.
func (l *Ledger) LimitsHeld() bool {
	for name := range l.hard {
		if _, class, err := resources.Canonical(name); err == nil && class == resources.Held {
			return true
		}
	}
	return false
}

// ParseStatus converts a list from the quota's status (used, a cluster's used) to canonical amounts of the
// resources the quota limits; anything else no longer counts here.
func (l *Ledger) ParseStatus(list corev1.ResourceList) resources.List {
	return l.parse(list)
}

// StillNeeded is what placing all of rb's replicas would add to this quota, at the least: the increase, in the
// resources the quota limits, from what rb has placed now to Wanted. It fails for a binding no quota can count.
func (l *Ledger) StillNeeded(rb *workv1alpha2.ResourceBinding) (resources.List, error) {
	current, err := usage.Of(rb)
	if err != nil {
		return nil, err
	}
	return l.stillNeeded(rb, current.Charge(l.Selector))
}

// stillNeeded is StillNeeded given rb's current charge on this quota.
func (l *Ledger) stillNeeded(rb *workv1alpha2.ResourceBinding, current usage.Charge) (resources.List, error) {
	wanted, err := usage.Wanted(rb)
	if err != nil {
		return nil, err
	}
	return l.OnCluster(usage.Delta(wanted.Charge(l.Selector), &current)).Positive(), nil
}
