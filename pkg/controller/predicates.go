package controller

import (
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/quota"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
)

// settleableReservation passes a write of a quota's ledger (or, from a webhook of an earlier release, of the
// quota's status) that adds a reservation the controller can settle at once (quota.Observed.Settles, the rule the
// recount applies).
//
// This happens when an admitted write loses a race after admission: a requeue (or any other spec write) lands
// first, the apiserver re-runs admission for its retry under a new generation, and the first attempt's
// reservation arrives after the controller recounted for that binding's event. It happens too when the webhook
// creates a quota's ledger (the controller makes none for a quota that reserves nothing) and the binding's event
// was recounted before the controller saw the ledger. No binding event follows, because every later placement is
// refused on that very reservation; without this, it would hold the quota until it expires. Other writes, the
// webhook's reservations for writes still in flight, pass nothing: they are settled by the binding event their
// write causes.
func settleableReservation(bindings bindingReader) predicate.Funcs {
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool {
			return settlesAny(bindings, e.Object, nil)
		},
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			old := reservationsOf(e.ObjectOld)
			seen := make(map[reservationKey]bool, len(old))
			for _, r := range old {
				seen[keyOf(r)] = true
			}
			return settlesAny(bindings, e.ObjectNew, seen)
		},
	}
}

// settlesAny reports whether obj holds a reservation, not among seen, whose binding write has been observed.
func settlesAny(bindings bindingReader, obj client.Object, seen map[reservationKey]bool) bool {
	for _, r := range reservationsOf(obj) {
		if seen[keyOf(r)] {
			continue
		}
		if r.ReservedBy.Kind == quota.KindWork {
			continue // a Work's: settled by the Work's own event
		}
		// A business quota's reservation names its binding's namespace; a namespace's quota's is its own.
		namespace := r.ReservedBy.Namespace
		if namespace == "" {
			namespace = obj.GetNamespace()
		}
		rb, err := bindings.Meta(types.NamespacedName{Namespace: namespace, Name: r.ReservedBy.Name})
		if err != nil || rb == nil {
			continue // not observed yet: its own event will settle it
		}
		if (quota.Observed{UID: rb.GetUID(), Generation: rb.GetGeneration()}).Settles(quota.Key{UID: r.ReservedBy.UID, Generation: r.Generation}) {
			return true
		}
	}
	return false
}

// reservationsOf lists the reservations a ledger, or a quota's status, holds.
func reservationsOf(obj client.Object) []quotav1alpha1.Reservation {
	switch o := obj.(type) {
	case *quotav1alpha1.KarmadaQuotaLedger:
		return o.Reservations
	case *quotav1alpha1.KarmadaBusinessQuotaLedger:
		return o.Reservations
	case *quotav1alpha1.KarmadaQuota:
		return o.Status.Reservations
	}
	return nil
}

type reservationKey struct {
	uid        types.UID
	generation int64
}

func keyOf(r quotav1alpha1.Reservation) reservationKey {
	return reservationKey{uid: r.ReservedBy.UID, generation: r.Generation}
}

// waitChanged passes a binding update that starts or ends a wait for quota (usage.WaitingForQuota) or for room on
// member clusters (usage.WaitingForMemberRoom). The
// scheduler's refusal changes only the binding's status, which the generation predicate filters out, yet it
// changes karmada_quota_bindings_waiting; without this the gauge would lag by up to a resync period.
func waitChanged() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldRB, ok1 := bindingOf(e.ObjectOld)
			newRB, ok2 := bindingOf(e.ObjectNew)
			return ok1 && ok2 && (usage.WaitingForQuota(oldRB) != usage.WaitingForQuota(newRB) ||
				usage.WaitingForMemberRoom(oldRB) != usage.WaitingForMemberRoom(newRB))
		},
	}
}

// unreadable passes a ledger write that lists, or stops listing, an entry the ledger's readers cannot read (hand-
// edited: the schema takes any entry, to serve what earlier releases wrote unpruned). The webhook fails the quota's
// admissions closed on it; the recount writes an observed usage anew, and says in the quota's status which
// reservation is at fault, or that none is any more.
func unreadable() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return listsUnreadable(e.Object) },
		UpdateFunc:  func(e event.UpdateEvent) bool { return listsUnreadable(e.ObjectOld) || listsUnreadable(e.ObjectNew) },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// listsUnreadable reports whether obj is a ledger listing an entry that could not be read.
func listsUnreadable(obj client.Object) bool {
	switch o := obj.(type) {
	case *quotav1alpha1.KarmadaQuotaLedger:
		return o.Unreadable()
	case *quotav1alpha1.KarmadaBusinessQuotaLedger:
		return o.Unreadable()
	}
	return false
}

// deleted passes deletions only.
func deleted() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}
