package quota

import (
	"sort"
	"time"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
)

// MaxReservations is the most reservations a quota's ledger lists one by one; the CRD schema holds the list to it
// (maxItems). Beyond it the webhook folds the oldest into one sum (Folded), so a burst into one namespace while the
// controller is away keeps the object far below what the apiserver stores: etcd refuses a request over 1.5 MiB, and
// a ledger that can no longer be written refuses every admission in its namespace with an error that is not
// QuotaExceeded.
//
// Sized from measurement (test/integration/burst; docs/performance.md, "How big a quota's ledger gets"):
//   - Bytes: a reservation takes 241 bytes of JSON for a short binding name and two resources, 633 at worst (a
//     253-character name, eight limited resources); the apiserver stored 6,523 of the first kind in one quota and
//     refused one more ("etcdserver: request is too large", at 1.5 MiB). 250 of the worst kind, with a hundred
//     member clusters in the same object, take an eighth of that (194,741 bytes).
//   - CPU, which binds first: every write of the list carries all of it, and the apiserver spends about a quarter
//     of a millisecond of CPU per listed reservation on each (3.6 ms for the write itself, 2-core machine). At 1000
//     listed, a burst of 10,000 placements into one namespace with the controller away timed out hundreds of
//     admissions on their write; at 250 every one was answered.
//   - Headroom: the longest list the benchmark's hot quota reached with the controller running, at 200
//     admissions per second into one namespace on a saturated machine, was about 100.
const MaxReservations = 250

// Folded is the sum of reservations folded out of the list: it charges the quota until the last of them expires.
// A folded reservation can no longer be settled one by one (its binding and generation are gone), so once its
// write is observed it is charged twice, in used and here, until the sum expires: conservative, never an
// over-admission. At expiry every folded write has either been observed or can no longer happen, the same
// reasoning by which a single reservation expires.
type Folded struct {
	// Count is how many reservations were folded in.
	Count  int64
	Amount resources.List
	// Clusters sums the folded reservations' clusters (Reservation.Clusters).
	Clusters map[string]resources.List
	Expires  time.Time
}

// Folded returns the folded sum, the ledger's and the quota status's together; Count is 0 when nothing is folded.
func (l *Ledger) Folded() Folded {
	out := Folded{Count: l.folded.Count + l.statusFolded.Count, Amount: l.folded.Amount.Clone(),
		Clusters: cloneClusters(l.folded.Clusters), Expires: maxTime(l.folded.Expires, l.statusFolded.Expires)}
	if l.statusFolded.Count > 0 {
		if out.Amount == nil {
			out.Amount = resources.List{}
		}
		out.Amount.Add(l.statusFolded.Amount)
		if out.Clusters == nil && l.statusFolded.Clusters != nil {
			out.Clusters = map[string]resources.List{}
		}
		for c, amount := range l.statusFolded.Clusters {
			if out.Clusters[c] == nil {
				out.Clusters[c] = resources.List{}
			}
			out.Clusters[c].Add(amount)
		}
	}
	return out
}

// Fold folds the oldest reservations (earliest expiry) into the folded sum until at most max remain listed, and
// returns how many it folded. The oldest go first because a repeated admission of the same write (the apiserver
// retrying it) comes within seconds and should find its key; a repeated admission of a folded key charges again,
// which is conservative.
func (l *Ledger) Fold(max int) int {
	n := len(l.reservations) - max
	if n <= 0 {
		return 0
	}
	sort.SliceStable(l.reservations, func(i, j int) bool {
		a, b := l.reservations[i], l.reservations[j]
		if !a.Expires.Equal(b.Expires) {
			return a.Expires.Before(b.Expires)
		}
		if a.Owner.UID != b.Owner.UID {
			return a.Owner.UID < b.Owner.UID
		}
		return a.Generation < b.Generation
	})
	if l.folded.Amount == nil {
		l.folded.Amount = resources.List{}
	}
	for _, r := range l.reservations[:n] {
		l.folded.Count++
		l.folded.Amount.Add(r.Amount)
		for c, amount := range r.Clusters {
			if l.folded.Clusters == nil {
				l.folded.Clusters = map[string]resources.List{}
			}
			if l.folded.Clusters[c] == nil {
				l.folded.Clusters[c] = resources.List{}
			}
			l.folded.Clusters[c].Add(amount)
		}
		if r.Expires.After(l.folded.Expires) {
			l.folded.Expires = r.Expires
		}
	}
	// The sum moves from the list to folded; reserved, their total, stays the same.
	l.reservations = append(l.reservations[:0:0], l.reservations[n:]...)
	return n
}

// ExpireFolded drops the folded sums (the ledger's, and one left in the quota's status) once expired (strictly
// after their expiry, as a single reservation), and returns what it dropped. Call it only with a synced binding
// cache behind used: the folded writes that happened must be counted there before their charge goes.
func (l *Ledger) ExpireFolded(now time.Time) (Folded, bool) {
	var dropped Folded
	for _, f := range []*Folded{&l.folded, &l.statusFolded} {
		if f.Count == 0 || !now.After(f.Expires) {
			continue
		}
		l.reserved.Sub(f.Amount)
		if l.onMembers != nil {
			l.onMembers.addReserved(f.Clusters, -1)
		}
		dropped.Count += f.Count
		if dropped.Amount == nil {
			dropped.Amount = resources.List{}
		}
		dropped.Amount.Add(f.Amount)
		dropped.Expires = maxTime(dropped.Expires, f.Expires)
		*f = Folded{}
	}
	return dropped, dropped.Count > 0
}

// StatusFolded renders the folded sum a webhook of an earlier release left in the quota's status, until it expires;
// nil once it has.
func (l *Ledger) StatusFolded() *quotav1alpha1.FoldedReservations {
	return l.renderFolded(l.statusFolded)
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
