// Package quota is the ledger of one KarmadaQuota in accounting units: what it limits, what is used and reserved,
// and the admission decision for one binding write. It does no I/O; the webhook and the controller read and write
// the API objects around it.
package quota

import (
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/apis/quota/validation"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
)

// Key identifies a reservation: the binding and the generation its admitted write produces. Admission re-run for
// the same write (the apiserver retries a write after a conflict) lands on the same key.
type Key struct {
	UID        types.UID
	Generation int64
}

// Reservation charges one admitted binding write until the controller observes it.
type Reservation struct {
	Owner      quotav1alpha1.ReservationOwner
	Generation int64
	Amount     resources.List
	// Clusters holds what the write reserved on each cluster it grows, for the resources limited on members
	// (clusters.go); nil for a quota without cluster or group limits.
	Clusters map[string]resources.List
	Expires  time.Time
}

// Key returns the reservation's key.
func (r Reservation) Key() Key {
	return Key{UID: r.Owner.UID, Generation: r.Generation}
}

// Ledger is one quota's state, parsed once from its object.
type Ledger struct {
	// Namespace is the quota's; empty for a business quota (KarmadaBusinessQuota), which is cluster-scoped and
	// governs the namespaces its selector chooses (SetNamespaces).
	Namespace string
	Name      string
	Selector  usage.Selector

	hard resources.List
	// userName maps each canonical name back to the key the quota's author wrote (cpu, not requests.cpu), so
	// status and messages speak the author's language.
	userName map[corev1.ResourceName]corev1.ResourceName
	used     resources.List
	// reserved is the sum of the reservations and of folded.
	reserved     resources.List
	reservations []Reservation
	// folded is the ledger's folded sum; statusFolded the one a webhook of an earlier release left in the quota's
	// status, kept there until it expires.
	folded, statusFolded Folded
	// onMembers are the limits on member clusters and groups (clusters.go); nil when the quota has none.
	onMembers *memberLimits

	// quotaGeneration is the generation of the quota's spec parsed here; fence the ledger object's QuotaGeneration
	// (0 without one).
	quotaGeneration, fence int64

	// selects tells the namespaces a business quota governs; nil for a namespace's quota, and for a business quota
	// before SetNamespaces (it governs none then).
	selects func(namespace string) bool
}

// ID tells the ledger from every other a batch decides on: namespaces' quotas may share a name, and a business
// quota's namespace is empty.
func (l *Ledger) ID() types.NamespacedName {
	return types.NamespacedName{Namespace: l.Namespace, Name: l.Name}
}

// Business reports whether the ledger is a business quota's.
func (l *Ledger) Business() bool {
	return l.Namespace == ""
}

// SetNamespaces tells a business quota's ledger which namespaces its selector chooses now.
func (l *Ledger) SetNamespaces(selects func(namespace string) bool) {
	l.selects = selects
}

// Governs reports whether the quota limits writes in namespace: its own namespace's quota, or a business quota
// selecting it.
func (l *Ledger) Governs(namespace string) bool {
	if !l.Business() {
		return namespace == l.Namespace
	}
	return l.selects != nil && l.selects(namespace)
}

// NewLedger parses a quota and its ledger object (stored; nil before the first admission made one). It fails for a
// spec it could not enforce as written (validation.EnforceableHard, usage.NewSelector), so a quota that slipped
// past validation makes admission fail closed with a message instead of enforcing something other than what it
// says.
//
// Usage is the ledger's as the controller last observed it, or the quota status's before it has. Reservations are
// the ledger's, and those a webhook of an earlier release listed in the quota's status, which the controller
// moves into the ledger: during an upgrade both write, and a reservation in both is counted once. Folded sums
// count from both.
func NewLedger(q *quotav1alpha1.KarmadaQuota, stored *quotav1alpha1.KarmadaQuotaLedger) (*Ledger, error) {
	sel, err := usage.NewSelector(q.Spec.ScopeSelector)
	if err != nil {
		return nil, fmt.Errorf("quota %s is invalid: %w", q.Name, err)
	}
	userName, err := validation.EnforceableHard(&q.Spec)
	if err != nil {
		return nil, fmt.Errorf("quota %s is invalid: %w", q.Name, err)
	}
	l := &Ledger{
		Namespace:       q.Namespace,
		Name:            q.Name,
		Selector:        sel,
		hard:            make(resources.List, len(userName)),
		userName:        userName,
		reserved:        resources.List{},
		quotaGeneration: q.Generation,
	}
	for canonical, name := range userName {
		l.hard[canonical] = resources.Value(canonical, q.Spec.Hard[name])
	}
	if l.onMembers, err = newMemberLimits(q); err != nil {
		return nil, err
	}
	l.used = l.parse(q.Status.Used)
	if l.onMembers != nil {
		for _, c := range q.Status.Clusters {
			l.onMembers.used[c.Name] = l.onMembers.parse(c.Used)
		}
	}
	reservations, folded := q.Status.Reservations, q.Status.FoldedReservations
	if stored != nil {
		l.fence = stored.QuotaGeneration
		if o := stored.Observed; o != nil {
			l.used = l.parse(o.Used)
			if l.onMembers != nil {
				clear(l.onMembers.used)
				for _, c := range o.Clusters {
					if c.Malformed != "" {
						// What that cluster uses is unknown: deciding without it could admit beyond its limit.
						return nil, fmt.Errorf("the ledger of quota %s lists an observed usage that is not a cluster's (%s): %w",
							q.Name, c.Malformed, ErrObservedMalformed)
					}
					l.onMembers.used[c.Name] = l.onMembers.parse(c.Used)
				}
			}
		}
		if len(reservations) == 0 {
			reservations = stored.Reservations
		} else {
			reservations = append(append([]quotav1alpha1.Reservation(nil), stored.Reservations...), reservations...)
		}
	}
	for _, r := range reservations {
		if r.Malformed != "" {
			// What it charges is unknown: deciding without it could admit beyond the limit.
			return nil, fmt.Errorf("the ledger of quota %s lists an entry that is not a reservation (%s): remove it from the ledger's reservations",
				q.Name, r.Malformed)
		}
		res := Reservation{Owner: r.ReservedBy, Generation: r.Generation, Amount: l.parse(r.Reserved), Expires: r.ExpirationTime.Time}
		res.Clusters = l.parseClusters(r.Clusters)
		if prior := l.Find(res.Key()); prior != nil {
			// Listed by both the ledger and the quota's status (moved by the controller, not yet cleared there).
			l.reserved.Sub(prior.Amount)
			prior.Amount.Max(res.Amount)
			l.reserved.Add(prior.Amount)
			if l.onMembers != nil {
				l.onMembers.addReserved(prior.Clusters, -1)
				prior.Clusters = maxClusters(prior.Clusters, res.Clusters)
				l.onMembers.addReserved(prior.Clusters, 1)
			}
			continue
		}
		l.reservations = append(l.reservations, res)
		l.reserved.Add(res.Amount)
		if l.onMembers != nil {
			l.onMembers.addReserved(res.Clusters, 1)
		}
	}
	// The folded sum of the quota's status stays there until it expires: moving it into the ledger's could not be
	// told apart from a second move when the status write after the ledger's is lost and retried.
	l.statusFolded = l.parseFolded(folded)
	if stored != nil {
		l.folded = l.parseFolded(stored.FoldedReservations)
	}
	return l, nil
}

// CarryOver gives l what from was told after it was parsed (the namespaces a business quota governs, the member
// clusters' labels): l is the same quota's ledger parsed again from a newer object.
func (l *Ledger) CarryOver(from *Ledger) {
	l.selects = from.selects
	if l.onMembers != nil && from.onMembers != nil {
		l.onMembers.labelsOf = from.onMembers.labelsOf
	}
}

// ErrObservedMalformed is NewLedger's error for a ledger whose observed usage cannot be read: admission fails
// closed on it, and the controller, which counts that usage anew, recounts without it and writes it again.
var ErrObservedMalformed = errors.New("the controller's next recount writes it anew")

// LedgerOwner is the owner reference that makes a ledger object q's: it is deleted with q. It does not block
// q's deletion, which would take the right to set finalizers on quotas under the apiserver's
// OwnerReferencesPermissionEnforcement.
func LedgerOwner(q *quotav1alpha1.KarmadaQuota) []metav1.OwnerReference {
	kind := "KarmadaQuota"
	if q.IsBusiness() {
		// A business quota read as a KarmadaQuota (quotav1alpha1.AsKarmadaQuota): the garbage collector finds the
		// owner by its kind, and would delete a ledger whose owner it cannot find.
		kind = "KarmadaBusinessQuota"
	}
	return []metav1.OwnerReference{{
		APIVersion: quotav1alpha1.GroupVersion.String(), Kind: kind, Name: q.Name, UID: q.UID,
		Controller: ptr.To(true),
	}}
}

// LedgerOf returns stored if it is q's ledger object, nil if it is missing or was left by a deleted quota of the same
// name (the garbage collector has not removed it yet): a new quota starts with nothing reserved.
func LedgerOf(stored *quotav1alpha1.KarmadaQuotaLedger, q *quotav1alpha1.KarmadaQuota) *quotav1alpha1.KarmadaQuotaLedger {
	if stored == nil {
		return nil
	}
	if owner := metav1.GetControllerOf(stored); owner == nil || owner.UID != q.UID {
		return nil
	}
	return stored
}

// LedgerObject is the object a write of q's ledger starts from, for WriteTo (and WriteObserved) to fill: a copy of
// stored when it is q's; a new one owned by q when there is none; and for one a deleted quota of the same name left,
// a copy that keeps only its identity (the write replaces it, by its resourceVersion) and is owned by q.
func LedgerObject(q *quotav1alpha1.KarmadaQuota, stored *quotav1alpha1.KarmadaQuotaLedger) *quotav1alpha1.KarmadaQuotaLedger {
	if stored == nil {
		return &quotav1alpha1.KarmadaQuotaLedger{ObjectMeta: metav1.ObjectMeta{
			Namespace: q.Namespace, Name: q.Name, OwnerReferences: LedgerOwner(q),
		}}
	}
	obj := stored.DeepCopy()
	if LedgerOf(stored, q) == nil {
		obj.OwnerReferences = LedgerOwner(q)
		obj.Observed = nil
	}
	return obj
}

// parseFolded reads a folded sum, and adds it to what is reserved.
func (l *Ledger) parseFolded(f *quotav1alpha1.FoldedReservations) Folded {
	if f == nil || f.Count == 0 {
		return Folded{}
	}
	out := Folded{Count: f.Count, Amount: l.parse(f.Reserved), Clusters: l.parseClusters(f.Clusters), Expires: f.ExpirationTime.Time}
	l.reserved.Add(out.Amount)
	if l.onMembers != nil {
		l.onMembers.addReserved(out.Clusters, 1)
	}
	return out
}

// parseClusters reads a reservation's clusters; nil for a quota without cluster or group limits, or a reservation
// without clusters.
func (l *Ledger) parseClusters(list []quotav1alpha1.ClusterReservation) map[string]resources.List {
	if l.onMembers == nil || len(list) == 0 {
		return nil
	}
	out := make(map[string]resources.List, len(list))
	for _, c := range list {
		out[c.Name] = l.onMembers.parse(c.Reserved)
	}
	return out
}

// parse converts a status list to canonical amounts of the resources this quota limits; anything else (a limit
// removed since) no longer counts here.
func (l *Ledger) parse(list corev1.ResourceList) resources.List {
	out := make(resources.List, len(list))
	for name, qty := range list {
		canonical, _, err := resources.Canonical(name)
		if err != nil {
			continue
		}
		if _, limited := l.hard[canonical]; limited {
			out[canonical] = resources.Value(canonical, qty)
		}
	}
	return out
}

// Demand is what one binding write asks of this quota.
type Demand struct {
	Key   Key
	Owner quotav1alpha1.ReservationOwner
	// Increase holds the limited resources the write increases, by how much: what it reserves.
	Increase resources.List
	// Checked is the part of Increase checked against hard: all of it, but for the replicas replacing those a
	// graceful eviction keeps running (usage.Charge.Entitled), which are a move. Nil means all of Increase.
	Checked resources.List
	// Missing lists limited compute resources the binding places new replicas without requesting.
	Missing []corev1.ResourceName
	// Clusters holds what the write changes on each cluster, signed, for the resources limited on members; nil for a
	// quota without cluster or group limits.
	Clusters map[string]resources.List
}

// Demand computes what moving a binding from old (nil for a create) to new asks of this quota.
func (l *Ledger) Demand(key Key, owner quotav1alpha1.ReservationOwner, newUsage usage.Usage, oldUsage *usage.Usage) Demand {
	newCharge := newUsage.Charge(l.Selector)
	var oldCharge *usage.Charge
	if oldUsage != nil {
		c := oldUsage.Charge(l.Selector)
		oldCharge = &c
	}
	d := Demand{Key: key, Owner: owner, Increase: resources.List{}}
	for name, v := range usage.Delta(newCharge, oldCharge) {
		if _, limited := l.hard[name]; limited && v > 0 {
			d.Increase[name] = v
		}
	}
	if newCharge.Entitled != nil || (oldCharge != nil && oldCharge.Entitled != nil) {
		// A failover runs: what admission checks is the growth of what the binding is entitled to; what it
		// reserves, the larger of that and the growth of what runs, so that a concurrent admission sees the
		// replacement charged before the controller has observed it.
		d.Checked = resources.List{}
		for name, v := range usage.EntitledDelta(newCharge, oldCharge) {
			if _, limited := l.hard[name]; limited && v > 0 {
				d.Checked[name] = v
				if v > d.Increase[name] {
					d.Increase[name] = v
				}
			}
		}
	}

	if l.onMembers != nil {
		d.Clusters = l.onMembers.deltas(newCharge, oldCharge)
	}

	limited := l.hard.Names()
	missing := newUsage.MissingRequests(l.Selector, limited)
	if len(missing) == 0 {
		return d
	}
	// Only what the write makes worse is refused: more replicas placed without the request, or a request that
	// was there before and is now dropped. A binding that already lacked it and does not grow is left alone.
	morePods := newCharge.Total[corev1.ResourcePods] > 0 && (oldCharge == nil || newCharge.Total[corev1.ResourcePods] > oldCharge.Total[corev1.ResourcePods])
	var alreadyMissing map[corev1.ResourceName]bool
	if oldUsage != nil {
		alreadyMissing = map[corev1.ResourceName]bool{}
		for _, name := range oldUsage.MissingRequests(l.Selector, limited) {
			alreadyMissing[name] = true
		}
	}
	for _, name := range missing {
		if morePods || !alreadyMissing[name] {
			d.Missing = append(d.Missing, name)
		}
	}
	return d
}

// Denial says why a demand does not fit.
type Denial struct {
	Quota string
	// Business says Quota names a business quota (KarmadaBusinessQuota) rather than one of the namespace's.
	Business bool
	Exceeded []Exceeded
	Missing  []corev1.ResourceName
}

// Exceeded is one resource a demand would push over hard, in the quota author's names.
type Exceeded struct {
	// Where names the cluster or the group whose limit it is ("cluster member1", "cluster group eu"); empty for the
	// namespace-wide hard.
	Where                           string
	Resource                        corev1.ResourceName
	Requested, Used, Reserved, Hard string
	// NeverFits is set when the request alone exceeds hard: waiting for usage to drop cannot help.
	NeverFits bool
}

// Check decides whether d fits: for every resource it increases, used + reserved + increase <= hard. The
// demand's own earlier reservation (the same write admitted before) is not counted twice: it merges. Nil means
// admitted.
func (l *Ledger) Check(d Demand) *Denial {
	prior := l.Find(d.Key)
	checked := d.Increase
	if d.Checked != nil {
		checked = d.Checked
	}
	var denial Denial
	for _, name := range checked.Names() {
		inc := checked[name]
		var already int64
		if prior != nil {
			already = prior.Amount[name]
		}
		if inc <= already {
			continue
		}
		others := l.reserved[name] - already
		if sum := resources.Add(resources.Add(l.used[name], others), inc); sum <= l.hard[name] {
			continue
		}
		denial.Exceeded = append(denial.Exceeded, Exceeded{
			Resource:  l.userName[name],
			Requested: l.format(name, inc),
			Used:      l.format(name, l.used[name]),
			Reserved:  l.format(name, others),
			Hard:      l.format(name, l.hard[name]),
			NeverFits: inc > l.hard[name],
		})
	}
	if l.onMembers != nil {
		l.onMembers.check(l, d, prior, &denial)
	}
	for _, name := range d.Missing {
		denial.Missing = append(denial.Missing, l.userName[name])
	}
	if len(denial.Exceeded) == 0 && len(denial.Missing) == 0 {
		return nil
	}
	denial.Quota, denial.Business = l.Name, l.Business()
	return &denial
}

// Reserve records d as a reservation expiring at expires, merging into the same key's reservation (element-wise
// max) rather than charging twice. A merge keeps the first expiry: the apiserver gives up retrying a write within
// its request timeout, which the TTL exceeds, so a repeated admission needs no write unless it asks for more. It
// returns the reservation as it was before (nil if new) for RestoreIf, and whether anything changed.
func (l *Ledger) Reserve(d Demand, expires time.Time) (prior *Reservation, changed bool) {
	onClusters := arrivals(d.Clusters)
	if len(d.Increase) == 0 && len(onClusters) == 0 {
		return nil, false
	}
	if r := l.Find(d.Key); r != nil {
		merged := r.Amount.Clone()
		merged.Max(d.Increase)
		mergedClusters := maxClusters(r.Clusters, onClusters)
		if merged.Equal(r.Amount) && clustersEqual(mergedClusters, r.Clusters) {
			return nil, false
		}
		before := *r
		before.Amount = r.Amount.Clone()
		before.Clusters = cloneClusters(r.Clusters)
		l.reserved.Sub(r.Amount)
		l.reserved.Add(merged)
		r.Amount = merged
		if l.onMembers != nil {
			l.onMembers.addReserved(r.Clusters, -1)
			l.onMembers.addReserved(mergedClusters, 1)
		}
		r.Clusters = mergedClusters
		return &before, true
	}
	l.reservations = append(l.reservations, Reservation{
		Owner: d.Owner, Generation: d.Key.Generation, Amount: d.Increase.Clone(), Clusters: onClusters, Expires: expires,
	})
	l.reserved.Add(d.Increase)
	if l.onMembers != nil {
		l.onMembers.addReserved(onClusters, 1)
	}
	return nil, true
}

// maxClusters merges b into a copy of a, cluster by cluster, resource by resource (element-wise max).
func maxClusters(a, b map[string]resources.List) map[string]resources.List {
	if len(a) == 0 && len(b) == 0 {
		return nil
	}
	out := cloneClusters(a)
	if out == nil {
		out = map[string]resources.List{}
	}
	for c, l := range b {
		if out[c] == nil {
			out[c] = resources.List{}
		}
		out[c].Max(l)
	}
	return out
}

func cloneClusters(m map[string]resources.List) map[string]resources.List {
	if m == nil {
		return nil
	}
	out := make(map[string]resources.List, len(m))
	for c, l := range m {
		out[c] = l.Clone()
	}
	return out
}

func clustersEqual(a, b map[string]resources.List) bool {
	if len(a) != len(b) {
		return false
	}
	for c, l := range a {
		if !l.Equal(b[c]) {
			return false
		}
	}
	return true
}

// RestoreIf undoes a Reserve made by the caller: if the key's reservation is still exactly wrote, it puts back
// prior, or removes the key when there was none. If anyone merged into the reservation since (another replica
// admitting the same write), it is left alone: an extra charge settles or expires, a missing one would let a
// quota be exceeded. It reports whether the ledger changed.
func (l *Ledger) RestoreIf(key Key, wrote Reservation, prior *Reservation) bool {
	for i := range l.reservations {
		r := l.reservations[i]
		if r.Key() != key {
			continue
		}
		if !r.Amount.Equal(wrote.Amount) || !clustersEqual(r.Clusters, wrote.Clusters) || !r.Expires.Equal(wrote.Expires) {
			return false
		}
		l.reserved.Sub(r.Amount)
		if l.onMembers != nil {
			l.onMembers.addReserved(r.Clusters, -1)
		}
		if prior == nil {
			l.reservations = append(l.reservations[:i], l.reservations[i+1:]...)
			return true
		}
		l.reservations[i] = *prior
		l.reserved.Add(prior.Amount)
		if l.onMembers != nil {
			l.onMembers.addReserved(prior.Clusters, 1)
		}
		return true
	}
	return false
}

// Settle removes the reservations for which done returns true, and returns them.
func (l *Ledger) Settle(done func(Reservation) bool) []Reservation {
	var settled []Reservation
	kept := l.reservations[:0]
	for _, r := range l.reservations {
		if done(r) {
			settled = append(settled, r)
			l.reserved.Sub(r.Amount)
			if l.onMembers != nil {
				l.onMembers.addReserved(r.Clusters, -1)
			}
			continue
		}
		kept = append(kept, r)
	}
	l.reservations = kept
	return settled
}

// Limited keeps, of list, the resources this quota limits.
func (l *Ledger) Limited(list resources.List) resources.List {
	out := make(resources.List, len(l.hard))
	for name, v := range list {
		if _, ok := l.hard[name]; ok {
			out[name] = v
		}
	}
	return out
}

// Headroom is what each limited resource can still take: hard - used - reserved, with used as given. A resource
// limited only on member clusters can take, at best, what the roomiest of its cluster and group limits can
// (clusters.go): a waiting binding is requeued when that could fit it.
func (l *Ledger) Headroom(used resources.List) resources.List {
	return l.headroom(used, l.MemberRoom())
}

// headroom is Headroom given the room on members (MemberRoom), which a recount reads for itself too.
func (l *Ledger) headroom(used, memberRoom resources.List) resources.List {
	out := make(resources.List, len(l.hard))
	for name, hard := range l.hard {
		out[name] = resources.Sub(resources.Sub(hard, used[name]), l.reserved[name])
	}
	for name, room := range memberRoom {
		if _, limitedInAll := l.hard[name]; !limitedInAll {
			out[name] = room
		}
	}
	return out
}

// RenderAll is Render with every limited resource present, zero when list lacks it: status shows "0 used"
// rather than leaving a limit out.
func (l *Ledger) RenderAll(list resources.List) corev1.ResourceList {
	out := make(corev1.ResourceList, len(l.hard))
	for name, user := range l.userName {
		out[user] = resources.Quantity(name, list[name])
	}
	return out
}

// Reservations returns the current reservations, not counting those folded.
func (l *Ledger) Reservations() []Reservation {
	return l.reservations
}

// Reserves reports whether the ledger holds a reservation or a folded sum of its own (a folded sum the quota's
// status holds stays there).
func (l *Ledger) Reserves() bool {
	return len(l.reservations) > 0 || l.folded.Count > 0
}

// WriteTo renders the reservations into the ledger object, in the author's resource names, and raises its fence to
// the spec decided on. The list keeps the order it was read in, new reservations last: an unchanged ledger renders
// an unchanged object, and a reservation keeps its index until one before it goes, which the controller's settle
// patch relies on (quotaio.SettleLedger).
func (l *Ledger) WriteTo(obj *quotav1alpha1.KarmadaQuotaLedger) {
	obj.Reservations = nil
	for _, r := range l.reservations {
		res := quotav1alpha1.Reservation{
			ReservedBy:     r.Owner,
			Generation:     r.Generation,
			Reserved:       l.Render(r.Amount),
			ExpirationTime: metav1.NewTime(r.Expires),
		}
		if l.onMembers != nil {
			res.Clusters = l.onMembers.renderClusters(l, r.Clusters)
		}
		obj.Reservations = append(obj.Reservations, res)
	}
	obj.ReservationCount = int32(len(obj.Reservations))
	obj.FoldedReservations = l.renderFolded(l.folded)
	obj.QuotaGeneration = max(l.fence, l.quotaGeneration)
}

// renderFolded renders a folded sum; nil when nothing is folded.
func (l *Ledger) renderFolded(f Folded) *quotav1alpha1.FoldedReservations {
	if f.Count == 0 {
		return nil
	}
	out := &quotav1alpha1.FoldedReservations{Count: f.Count, Reserved: l.Render(f.Amount), ExpirationTime: metav1.NewTime(f.Expires)}
	if l.onMembers != nil {
		out.Clusters = l.onMembers.renderClusters(l, f.Clusters)
	}
	return out
}

// WriteObserved records in the ledger object what the controller counted: used federation-wide, and on each
// member cluster (for the resources limited on members) when the quota limits any.
func (l *Ledger) WriteObserved(obj *quotav1alpha1.KarmadaQuotaLedger, used resources.List, clusters map[string]resources.List) {
	observed := &quotav1alpha1.LedgerObserved{Used: l.RenderAll(used)}
	if l.onMembers != nil {
		for _, c := range sortedClusters(clusters) {
			if on := l.onMembers.limited(clusters[c]); len(on) > 0 {
				observed.Clusters = append(observed.Clusters, quotav1alpha1.ClusterUsed{Name: c, Used: l.onMembers.render(l, on)})
			}
		}
	}
	obj.Observed = observed
}

// Fenced reports whether the ledger object says a newer spec of the quota than the one parsed exists (or is
// about to be stored): a decision on this spec must not be written; the quota is to be read again.
func (l *Ledger) Fenced() bool {
	return l.fence > l.quotaGeneration
}

// Render converts canonical amounts of limited resources to a status list in the author's names; zero amounts of
// resources the quota limits are kept, so "0 used" reads as such.
func (l *Ledger) Render(list resources.List) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, v := range list {
		if user, ok := l.userName[name]; ok {
			out[user] = resources.Quantity(name, v)
		}
	}
	return out
}

// Find returns the reservation under key, or nil.
func (l *Ledger) Find(key Key) *Reservation {
	for i := range l.reservations {
		if l.reservations[i].Key() == key {
			return &l.reservations[i]
		}
	}
	return nil
}

func (l *Ledger) format(name corev1.ResourceName, v int64) string {
	q := resources.Quantity(name, v)
	return q.String()
}

// Noun names a quota's kind in messages: a business quota's (a KarmadaBusinessQuota), or a namespace's.
func Noun(business bool) string {
	if business {
		return "business quota"
	}
	return "quota"
}

// Error renders a denial as one message naming the quota and every exceeded resource.
func (d *Denial) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "exceeded %s: %s", Noun(d.Business), d.Quota)
	for _, e := range d.Exceeded {
		where := ""
		if e.Where != "" {
			where = " in " + e.Where
		}
		fmt.Fprintf(&b, ", %s%s: requested %s, used %s, reserved %s, hard %s", e.Resource, where, e.Requested, e.Used, e.Reserved, e.Hard)
		if e.NeverFits {
			b.WriteString(" (can never fit: the request alone exceeds hard)")
		}
	}
	if len(d.Missing) > 0 {
		names := make([]string, len(d.Missing))
		for i, n := range d.Missing {
			names[i] = string(n)
		}
		fmt.Fprintf(&b, ", must specify requests for %s: the quota limits them and the binding places replicas without them",
			strings.Join(names, ","))
	}
	return b.String()
}
