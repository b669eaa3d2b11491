package quota

import (
	"time"

	"k8s.io/apimachinery/pkg/types"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
)

// This file is admission's decision over a batch of binding writes and the ledgers of their namespace's quotas:
// all or nothing per write, in the order of the batch, with the rollback of what earlier attempts of the batch
// reserved for a write now refused. It reads and changes only ledgers; the webhook reads the quotas before it and
// writes the changed ones after it with a compare-and-swap, and decides again on a lost race.

// Write is one binding write to decide against every quota that governs its namespace.
type Write struct {
	// Namespace is the binding's: the write is decided against the ledgers that govern it (Ledger.Governs). Empty
	// decides it against every ledger, for a batch of one namespace's quotas.
	Namespace string
	Key       Key
	Owner     quotav1alpha1.ReservationOwner
	New       usage.Usage
	// Old is nil for a create.
	Old *usage.Usage
	// DryRun writes are decided and reserve nothing.
	DryRun bool
	// CannotCommit marks an attempt built on a stale copy of the binding (see Freshness): etcd will refuse it and
	// the apiserver will retry it with the current object, asking again. It is admitted and reserves nothing.
	CannotCommit bool
}

// Undo is what rolling back a key in one quota needs: the reservation before the batch first touched the key (nil
// if there was none), and what the batch last wrote there.
type Undo struct {
	Prior *Reservation
	Wrote Reservation
}

// Written remembers, per quota (Ledger.ID) and key, what the batch's earlier attempts reserved and wrote, so that a
// write refused on a later attempt (after a lost race, its quotas re-read) gets its reservations back in the quotas
// that had admitted it.
type Written map[types.NamespacedName]map[Key]Undo

// Landed records that the write of quota name, carrying undo (Decision.Undo of that quota), succeeded.
func (w Written) Landed(name types.NamespacedName, undo map[Key]Undo) {
	if len(undo) == 0 {
		return
	}
	if w[name] == nil {
		w[name] = map[Key]Undo{}
	}
	for key, u := range undo {
		w[name][key] = u
	}
}

// Decision is the outcome of deciding a batch.
type Decision struct {
	// Denials holds, per write, the quotas that refuse it; empty when admitted.
	Denials [][]*Denial
	// Changed says, per ledger, whether it must be written.
	Changed []bool
	// Undo holds, per ledger, the keys this attempt reserved, for Written.Landed once that ledger's write landed.
	Undo []map[Key]Undo
	// RolledBack counts the reservations given back for refused writes.
	RolledBack int
	// Folded counts the reservations folded out of the lists to keep them within the bound.
	Folded int
}

// Policy is what a decision needs besides the ledgers: when its reservations expire, and how many a quota lists one
// by one before it folds the oldest (MaxReservations; tests lower it).
type Policy struct {
	Expires         time.Time
	MaxReservations int
}

// Decide decides writes in order against every ledger: a write is admitted iff every ledger admits it (Check), and
// then reserved in each (Reserve). A refused write gets back what an earlier attempt of the batch reserved for it
// (written), unless a write with the same key is admitted in this attempt: two writes can share a key (two
// writers racing from the same binding version), and the one admitted must keep its charge. Changed ledgers are
// folded to the policy's bound.
func Decide(ledgers []*Ledger, writes []Write, written Written, p Policy) Decision {
	d := Decision{
		Denials: make([][]*Denial, len(writes)),
		Changed: make([]bool, len(ledgers)),
		Undo:    make([]map[Key]Undo, len(ledgers)),
	}
	admitted := map[Key]bool{}
	for i, w := range writes {
		if w.CannotCommit {
			continue
		}
		demands := make([]Demand, len(ledgers))
		for j, l := range ledgers {
			if !w.governedBy(l) {
				continue
			}
			demands[j] = l.Demand(w.Key, w.ownerIn(l), w.New, w.Old)
			if denial := l.Check(demands[j]); denial != nil {
				d.Denials[i] = append(d.Denials[i], denial)
			}
		}
		if len(d.Denials[i]) > 0 {
			if admitted[w.Key] {
				continue
			}
			// All or nothing: a quota that admitted this write on an earlier attempt gets its reservation back.
			for j, l := range ledgers {
				if u, ok := written[l.ID()][w.Key]; ok && l.RestoreIf(w.Key, u.Wrote, u.Prior) {
					d.Changed[j] = true
					d.RolledBack++
				}
			}
			continue
		}
		admitted[w.Key] = true
		if w.DryRun {
			continue
		}
		for j, l := range ledgers {
			if !w.governedBy(l) {
				continue
			}
			prior, changed := l.Reserve(demands[j], p.Expires)
			if !changed {
				continue
			}
			d.Changed[j] = true
			if d.Undo[j] == nil {
				d.Undo[j] = map[Key]Undo{}
			}
			// The state to roll back to is the one before the batch first touched the key: on an earlier attempt,
			// or earlier in this one when the batch holds the same key twice.
			u, seen := d.Undo[j][w.Key]
			if !seen {
				u, seen = written[l.ID()][w.Key]
			}
			if !seen {
				u.Prior = prior
			}
			u.Wrote = *l.Find(w.Key)
			d.Undo[j][w.Key] = u
		}
	}
	if p.MaxReservations > 0 {
		for j, l := range ledgers {
			if d.Changed[j] {
				d.Folded += l.Fold(p.MaxReservations)
			}
		}
	}
	return d
}

// ownerIn is the owner of w's reservation in l: a business quota's reservations name their binding's namespace,
// which is not the quota's (a Work's name its execution namespace already).
func (w Write) ownerIn(l *Ledger) quotav1alpha1.ReservationOwner {
	owner := w.Owner
	if l.Business() && owner.Kind != KindWork && owner.Namespace == "" {
		owner.Namespace = w.Namespace
	}
	return owner
}

// governedBy reports whether l decides w.
func (w Write) governedBy(l *Ledger) bool {
	return w.Namespace == "" || l.Governs(w.Namespace)
}

// Freshness says what admission can tell, from the quotas alone, about whether an update attempt can commit.
type Freshness int

const (
	// Fresh: nothing suggests the attempt is stale, or reserving for it changes nothing; decide it.
	Fresh Freshness = iota
	// Stale: the attempt cannot commit. A reservation of the same binding for a later generation exists, so the
	// binding was written past the version the attempt is built on, and etcd refuses a write built on it.
	Stale
	// Ambiguous: the attempt's key already holds a reservation that this attempt would raise. Either it is a second
	// writer racing from the same version (at most one of them commits), or it is built on the apiserver's stale
	// copy of a binding whose write under that key already committed. Only a read of the binding tells.
	Ambiguous
)

// Freshness classifies an update attempt (w.Old set, not dry-run) against the ledgers.
//
// The apiserver makes its first attempt at an update on its watch cache's copy of the object, which can be a
// generation behind; admission then sees a stale old object, a larger delta, and the key of a write that already
// committed. Such an attempt cannot commit (etcd's write is conditional on the revision of that copy) and the
// apiserver retries it with the current object. Reserving for it would charge the earlier key with the stale delta
// until the controller settles it. Most attempts are not stale, and their key holds no reservation yet: they need
// no read of the binding.
func (w Write) Freshness(ledgers []*Ledger) Freshness {
	if w.Old == nil || w.DryRun {
		return Fresh
	}
	ambiguous := false
	for _, l := range ledgers {
		if !w.governedBy(l) {
			continue
		}
		for _, r := range l.reservations {
			if r.Owner.UID == w.Key.UID && r.Generation > w.Key.Generation {
				// Admitted from a version at generation r.Generation-1 >= w.Key.Generation, a version this attempt's
				// base (generation w.Key.Generation-1) no longer is.
				return Stale
			}
		}
		prior := l.Find(w.Key)
		if prior == nil {
			continue
		}
		d := l.Demand(w.Key, w.Owner, w.New, w.Old)
		for name, v := range d.Increase {
			if v > prior.Amount[name] {
				ambiguous = true
			}
		}
		for cluster, arrived := range arrivals(d.Clusters) {
			for name, v := range arrived {
				if v > prior.Clusters[cluster][name] {
					ambiguous = true
				}
			}
		}
	}
	if ambiguous {
		return Ambiguous
	}
	return Fresh
}
