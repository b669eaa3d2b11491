package usage

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/karmada-quota/karmada-quota/pkg/resources"
)

// Grows reports whether moving a binding from old (nil for a create) to new could raise what any quota counts or
// holds it to, whatever its scope and limits: an increase of objects, or of replicas or requests under some
// priority class (placed, or asked for during a failover), or
// a cpu or memory request dropped from placed replicas. When it is false no quota can refuse the write, so
// admission needs no quota read at all; Karmada rewrites bindings often for reasons unrelated to quota.
func Grows(newUsage Usage, old *Usage) bool {
	if old == nil {
		return len(newUsage.Objects) > 0 || len(newUsage.Placed) > 0
	}
	if positive(newUsage.Objects, old.Objects) {
		return true
	}
	classes := sets.New[string]()
	for _, p := range newUsage.Placed {
		classes.Insert(p.PriorityClass)
	}
	for class := range classes {
		sel := exactly(class)
		newCharge, oldCharge := newUsage.Charge(sel), old.Charge(sel)
		// What the binding is entitled to grows without what runs growing when a binding under eviction asks for
		// more replicas before the scheduler places them (Charge.Entitled): that write is the growth to check.
		if positive(newCharge.Total, oldCharge.Total) || positive(newCharge.Admitted(), oldCharge.Admitted()) {
			return true
		}
		// Per class, as a scoped quota sees it: a request dropped in one class is not excused by another class
		// (outside the quota's scope) having lacked it before.
		wasMissing := sets.New(old.MissingRequests(sel, mustBeRequestedNames)...)
		for _, name := range newUsage.MissingRequests(sel, mustBeRequestedNames) {
			if !wasMissing.Has(name) {
				return true
			}
		}
	}
	return false
}

// exactly selects one priority class ("" selects replica sets that name none).
func exactly(class string) Selector {
	if class == "" {
		return Selector{requirements: []requirement{{operator: corev1.ScopeSelectorOpDoesNotExist}}}
	}
	return Selector{requirements: []requirement{{operator: corev1.ScopeSelectorOpIn, values: sets.New(class)}}}
}

func positive(newList, oldList resources.List) bool {
	for name, v := range newList {
		if v > oldList[name] {
			return true
		}
	}
	return false
}

// GrowsOnACluster reports whether moving a binding from old (nil for a create) to new raises what it uses on some
// member cluster, in any resource, under any priority class: a move between clusters, which Grows does not see, is
// growth where it arrives, and a cluster or group limit there may refuse it.
func GrowsOnACluster(newUsage Usage, old *Usage) bool {
	newCharge := newUsage.Charge(Selector{})
	if old == nil {
		return len(newCharge.Clusters) > 0
	}
	oldCharge := old.Charge(Selector{})
	for cluster, l := range newCharge.Clusters {
		if positive(l, oldCharge.Clusters[cluster]) {
			return true
		}
	}
	return false
}

// Releases reports whether moving a binding from old to new lowers what it uses anywhere: an object fewer, or less
// of some resource in all or on some member cluster, under any priority class. A write that releases nothing frees
// no room for any quota, so recounting it at once gives nothing back to waiting bindings.
func Releases(newUsage, old Usage) bool {
	if positive(old.Objects, newUsage.Objects) {
		return true
	}
	newCharge, oldCharge := newUsage.Charge(Selector{}), old.Charge(Selector{})
	if positive(oldCharge.Total, newCharge.Total) {
		return true
	}
	for cluster, l := range oldCharge.Clusters {
		if positive(l, newCharge.Clusters[cluster]) {
			return true
		}
	}
	return false
}
