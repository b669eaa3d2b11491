package quota

import (
	"iter"
	"time"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
)

// This file is the controller's recount of one quota, as Decide is admission's decision: what the namespace's
// bindings use, which reservations no longer need to hold quota, and which bindings wait on the quota. It reads
// the bindings and changes only the ledger; the controller lists and classifies the bindings before it, and
// writes the status and requeues the waiting bindings after it.

// Observed is the binding a controller observes under a name.
type Observed struct {
	UID        types.UID
	Generation int64
}

// Settles reports whether the reservation for the binding write key no longer needs to hold quota, given o, the
// binding observed under its owner's name: either that write is observed, counted in used from now on, or another
// binding holds the name, so the write never committed (Karmada's detector races itself creating a binding, and the
// loser's create fails with AlreadyExists after admission) or its binding is gone. Waiting for the expiry would
// hold the reservation, a whole object count on a tight quota, for minutes.
func (o Observed) Settles(key Key) bool {
	return o.UID != key.UID || o.Generation >= key.Generation
}

// Observation is what the controller observes of the namespaces a quota governs, for Recount: its own namespace's,
// or those a business quota selects.
type Observation struct {
	// Bindings are the namespaces' bindings, from a synced cache. They are only read: they may be the cache's own
	// objects.
	Bindings []workv1alpha2.ResourceBinding
	// Unclassified names the bindings whose priority class a scoped quota could not read: observed, so their
	// reservations settle, but neither counted nor waiting.
	Unclassified map[types.NamespacedName]bool
	// Works are the Works rendered from the namespace's bindings, from a synced cache: what each asks its member
	// to run is charged where it is more than its binding places there (usage.Usage.Works), and a Work observed
	// settles the reservation its admission made.
	Works []ObservedWork
	// Held is, by binding, what the bindings' templates hold on members besides their pods (usage.Held): read only
	// for a quota that limits any of it; a binding absent holds nothing this quota counts.
	Held map[types.NamespacedName]usage.Held
	// EvictionTimeout is how long Karmada keeps evicting replicas when a task names no grace period of its own
	// (karmada-controller-manager's --graceful-eviction-timeout).
	EvictionTimeout time.Duration
	// Gone reports whether a binding or Work UID was deleted, to settle its reservations at once; nil knows of none.
	Gone func(types.UID) bool
	// LeftBehind reports whether an earlier recount saw this Work, at its generation, left behind on a cluster its
	// binding had left (Tally.LeftBehind), not long ago: back on that cluster, the binding is charged there what it
	// places, not what that Work still asks. nil knows of none.
	LeftBehind func(w *ObservedWork) bool
	// Now decides what has expired.
	Now time.Time
}

// ObservedWork is a Work the controller observes for one of the namespace's bindings.
type ObservedWork struct {
	// Namespace (the member's execution namespace), Name, UID and Generation identify the Work.
	Namespace, Name string
	UID             types.UID
	Generation      int64
	// BindingNamespace and Binding name the binding it was rendered from, and BindingID is that binding's
	// permanent ID as Karmada labels the Work with it (RenderedFrom).
	BindingNamespace, Binding, BindingID string
	// Cluster is the member cluster it is sent to.
	Cluster string
	// Asks is what it asks that member to run, read for its binding (interpreter.Workload.OnMember): sets that
	// name no priority class are at their binding's.
	Asks []usage.Placed
	// Deleting says Karmada is deleting it (Recount charges it nothing beyond its binding's placement).
	Deleting bool
}

// Tally is what a recount found, and did to the ledger.
type Tally struct {
	// Used is what the bindings use that the quota counts.
	Used resources.List
	// Clusters splits Used by member cluster, with what the quota limits on that cluster or a group besides
	// (Ledger.OnCluster); a cluster using nothing the quota limits is absent.
	Clusters map[string]resources.List
	// Evicting is the part of Clusters kept there only through a graceful eviction (usage.Charge.Evicting).
	Evicting map[string]resources.List
	// EvictingUntil is, per cluster in Evicting, when the last eviction there ends at the latest; nil while one is
	// held until released, or its start is unknown.
	EvictingUntil map[string]*time.Time
	// Settled are the reservations dropped; Expired of them expired without their write being observed.
	Settled []Reservation
	Expired int
	// FoldedExpired is the folded sum dropped at its expiry; its Count is 0 when none was.
	FoldedExpired Folded
	// Malformed are the bindings no quota can count.
	Malformed []Malformed
	// LeftBehind are the Works on clusters their binding no longer targets that Karmada has not begun deleting yet:
	// what they ask was not charged, and the room they held is given back. The controller remembers them for the
	// recounts that follow (Observation.LeftBehind).
	LeftBehind []WorkVersion
	// Namespaces splits Used by namespace, for a business quota (nil for a namespace's own quota, whose Used is
	// its namespace's); a namespace using nothing the quota limits is absent.
	Namespaces map[string]resources.List
	// Headroom is what each limited resource can still take, with Used and what stays reserved (Ledger.Headroom).
	Headroom resources.List
	// MemberRoom is, for each resource limited on member clusters, the most room one of those limits has left
	// (Ledger.MemberRoom): what a binding the scheduler found no member room for can hope for. Nil without limits
	// on members.
	MemberRoom resources.List
	// Waiting are the bindings that wait on the quota (Ledger.WaitsOn), with what each still needs.
	Waiting Waiting
	// UntilExpiry is when the first reservation left, or the folded sum, expires; 0 when none is left. A write that
	// never happens produces no event, so the controller comes back by itself to release what it held.
	UntilExpiry time.Duration
}

// WorkVersion is a Work at one generation.
type WorkVersion struct {
	UID        types.UID
	Generation int64
}

// Malformed is a binding no quota can count, and why (usage.Of).
type Malformed struct {
	Namespace, Binding string
	Err                error
}

// Waiting is what waits on one quota.
type Waiting struct {
	// Bindings are in the order of Observation.Bindings.
	Bindings []WaitingBinding
	// Since is the earliest lastTransitionTime of their Scheduled conditions: when the scheduler was first refused.
	// Karmada keeps it while its retries are refused again (the condition stays False).
	Since time.Time
}

// WaitingBinding is a binding waiting on a quota and what it still needs of it (Ledger.StillNeeded).
type WaitingBinding struct {
	// Binding points into Observation.Bindings, and is only read.
	Binding *workv1alpha2.ResourceBinding
	Need    resources.List
	// ForMemberRoom says the scheduler found no member with room for it (usage.WaitingForMemberRoom): it needs room
	// on members (Tally.MemberRoom) as well as headroom. Scheduling it again before either grew only has Karmada
	// recompute the whole placement and fail again.
	ForMemberRoom bool
}

// Recount counts what the bindings use, total and per member cluster, and settles the ledger's reservations
// against them: a reservation goes once its write is observed (Observed.Settles), once its binding is gone, or once
// it expired. The bindings come from a synced cache, so an expired reservation whose write the cache does not show
// is a write that never happened; the same holds for the folded sum once the last of its reservations expired. A
// list longer than MaxReservations is folded back within it. Each binding's usage is read once, for the count and
// for what it still needs if it waits.
func Recount(l *Ledger, o Observation) Tally {
	t := Tally{Used: resources.List{}, Clusters: map[string]resources.List{}}
	if l.Business() {
		t.Namespaces = map[string]resources.List{}
	}
	observed := make(map[owner]Observed, len(o.Bindings)+len(o.Works))
	worksOf := map[types.NamespacedName][]*ObservedWork{}
	for i := range o.Works {
		w := &o.Works[i]
		observed[owner{kind: KindWork, namespace: w.Namespace, name: w.Name}] = Observed{UID: w.UID, Generation: w.Generation}
		of := types.NamespacedName{Namespace: w.BindingNamespace, Name: w.Binding}
		worksOf[of] = append(worksOf[of], w)
	}
	for i := range o.Bindings {
		rb := &o.Bindings[i]
		id := types.NamespacedName{Namespace: rb.Namespace, Name: rb.Name}
		observed[owner{kind: KindResourceBinding, namespace: rb.Namespace, name: rb.Name}] = Observed{UID: rb.UID, Generation: rb.Generation}
		if o.Unclassified[id] {
			continue
		}
		u, err := usage.With(rb, o.Held[id])
		if err != nil {
			t.Malformed = append(t.Malformed, Malformed{Namespace: rb.Namespace, Binding: rb.Name, Err: err})
			continue
		}
		for _, w := range worksOf[id] {
			// A Work being deleted is on its way out, as one of a cluster the binding left (Targets): Karmada does
			// not update it, and sends the binding's placement there in a new Work once it is gone. A binding that
			// left a cluster and comes back while its old Work is still being deleted (the member unreachable) is
			// admitted what it places there, and charging the old Work's ask would take more than was admitted.
			if w.Deleting || !RenderedFrom(rb, w.BindingID) {
				continue
			}
			if !Targets(rb, w.Cluster) {
				t.LeftBehind = append(t.LeftBehind, WorkVersion{UID: w.UID, Generation: w.Generation})
				continue
			}
			// The same holds for a Work left behind that Karmada has neither deleted nor rewritten yet when its
			// binding comes back: the room it held was given back when the binding left, the return was admitted
			// what it places, and Karmada rewrites that Work to it. Charging the old ask meanwhile would count, for
			// the moment of Karmada's lag, more than any admission allowed (measured in the fault suite: a quota
			// at hard read 500m over it for a scale down and up within Karmada's lag).
			if o.LeftBehind != nil && o.LeftBehind(w) {
				continue
			}
			if u.Works == nil {
				u.Works = map[string][]usage.Placed{}
			}
			u.Works[w.Cluster] = append(u.Works[w.Cluster], w.Asks...)
		}
		charge := u.Charge(l.Selector)
		// Added in place, resource by resource: a recount does this for every binding, and a list kept per binding
		// and cluster would be garbage at once.
		for name, v := range charge.Total {
			if _, limited := l.hard[name]; limited {
				t.Used[name] = resources.Add(t.Used[name], v)
				if t.Namespaces != nil {
					t.addToNamespace(rb.Namespace, name, v)
				}
			}
		}
		for cluster, used := range charge.Clusters {
			for name, v := range used {
				if !l.limitsOnCluster(name) {
					continue
				}
				sum := t.Clusters[cluster]
				if sum == nil {
					sum = resources.List{}
					t.Clusters[cluster] = sum
				}
				sum[name] = resources.Add(sum[name], v)
			}
		}
		t.addEvicting(l, u, charge, o.EvictionTimeout)
		if need, ok := l.waitsOn(rb, &charge); ok {
			t.Waiting.add(rb, need)
		}
	}

	t.Settled = l.Settle(func(res Reservation) bool {
		if seen, ok := observed[l.ownerOf(res.Owner)]; ok && seen.Settles(res.Key()) {
			return true
		}
		if o.Gone != nil && o.Gone(res.Owner.UID) {
			return true
		}
		if l.Business() && l.selects != nil && res.Owner.Kind != KindWork && !l.Governs(res.Owner.Namespace) {
			// Its namespace left the business (relabelled, or deleted): its usage is no longer counted here, and
			// neither is what it reserved.
			return true
		}
		if o.Now.After(res.Expires) {
			t.Expired++
			return true
		}
		return false
	})
	t.FoldedExpired, _ = l.ExpireFolded(o.Now)
	// The webhook keeps the list within its bound; a list longer than that is brought within it here.
	l.Fold(MaxReservations)
	if l.onMembers != nil {
		// What the clusters use now, for the room their limits have left (Headroom).
		l.onMembers.used = map[string]resources.List{}
		for cluster, used := range t.Clusters {
			l.onMembers.used[cluster] = l.onMembers.limited(used)
		}
	}
	t.MemberRoom = l.MemberRoom()
	t.Headroom = l.headroom(t.Used, t.MemberRoom)
	t.UntilExpiry = l.untilFirstExpiry(o.Now)
	return t
}

// RenderedFrom reports whether a Work naming rb (by its binding name annotations) was rendered from rb itself, by
// the binding's permanent ID Karmada labels the Work with: a Work Karmada left behind for an earlier binding of the
// same name (its binding controller can create one after the binding's cleanup ran) was admitted nothing of rb's.
// A Work or binding without the ID (written by hand) is taken at its name.
func RenderedFrom(rb *workv1alpha2.ResourceBinding, workBindingID string) bool {
	id := rb.Labels[workv1alpha2.ResourceBindingPermanentIDLabel]
	return workBindingID == "" || id == "" || workBindingID == id
}

// Targets reports whether rb still lists cluster among its targets, or keeps running there through a graceful
// eviction. A Work of a cluster the binding left otherwise (its replicas moved, the cluster unjoined) is on its way
// out with Karmada, and charging it would keep the move's replicas charged twice, where the binding write that
// moved them was admitted as moving, not growing. An object pulled in by its dependents is on their clusters.
func Targets(rb *workv1alpha2.ResourceBinding, cluster string) bool {
	for c := range TargetClusters(rb) {
		if c == cluster {
			return true
		}
	}
	return false
}

// TargetClusters yields the clusters rb targets (Targets), a cluster more than once when it is both placed on and
// evicted from.
func TargetClusters(rb *workv1alpha2.ResourceBinding) iter.Seq[string] {
	return func(yield func(string) bool) {
		for _, tc := range rb.Spec.Clusters {
			if !yield(tc.Name) {
				return
			}
		}
		for _, task := range rb.Spec.GracefulEvictionTasks {
			if !yield(task.FromCluster) {
				return
			}
		}
		if len(rb.Spec.Clusters) == 0 {
			for _, by := range rb.Spec.RequiredBy {
				for _, tc := range by.Clusters {
					if !yield(tc.Name) {
						return
					}
				}
			}
		}
	}
}

// addEvicting records what charge keeps on clusters through u's graceful evictions, and until when.
func (t *Tally) addEvicting(l *Ledger, u usage.Usage, charge usage.Charge, timeout time.Duration) {
	for cluster, kept := range charge.Evicting {
		limited := l.OnCluster(kept)
		if len(limited) == 0 {
			continue
		}
		if t.Evicting == nil {
			t.Evicting, t.EvictingUntil = map[string]resources.List{}, map[string]*time.Time{}
		}
		until, seen := t.EvictingUntil[cluster]
		if t.Evicting[cluster] == nil {
			t.Evicting[cluster] = resources.List{}
		}
		t.Evicting[cluster].Add(limited)
		for _, e := range u.Evictions {
			if e.Cluster != cluster {
				continue
			}
			end, ok := e.Until(timeout)
			switch {
			case !ok:
				until = nil
			case !seen || (until != nil && end.After(*until)):
				until = &end
			}
			seen = true
		}
		t.EvictingUntil[cluster] = until
	}
}

// Kinds of the writes a reservation can belong to.
const (
	KindResourceBinding = "ResourceBinding"
	KindWork            = "Work"
)

// owner identifies a reservation's owner by name: a binding, or a Work of an execution namespace.
type owner struct {
	kind, namespace, name string
}

// ownerOf is the owner of a reservation of l. A binding's namespace is the quota's, unless the reservation names
// it (a business quota's reservations do).
func (l *Ledger) ownerOf(o quotav1alpha1.ReservationOwner) owner {
	if o.Kind == KindWork {
		return owner{kind: KindWork, namespace: o.Namespace, name: o.Name}
	}
	namespace := o.Namespace
	if namespace == "" {
		namespace = l.Namespace
	}
	// Any other kind is a binding's: every reservation was, before Works were charged.
	return owner{kind: KindResourceBinding, namespace: namespace, name: o.Name}
}

// addToNamespace adds v of resource name to what namespace uses.
func (t *Tally) addToNamespace(namespace string, name corev1.ResourceName, v int64) {
	used := t.Namespaces[namespace]
	if used == nil {
		used = resources.List{}
		t.Namespaces[namespace] = used
	}
	used[name] = resources.Add(used[name], v)
}

func (w *Waiting) add(rb *workv1alpha2.ResourceBinding, need resources.List) {
	w.Bindings = append(w.Bindings, WaitingBinding{Binding: rb, Need: need, ForMemberRoom: usage.WaitingForMemberRoom(rb)})
	// Set: waitsOn found the binding refused by a quota.
	since := meta.FindStatusCondition(rb.Status.Conditions, workv1alpha2.Scheduled).LastTransitionTime.Time
	if !since.IsZero() && (w.Since.IsZero() || since.Before(w.Since)) {
		w.Since = since
	}
}

// untilFirstExpiry is how long from now until the first reservation, or the folded sum, expires; 0 when none is.
func (l *Ledger) untilFirstExpiry(now time.Time) time.Duration {
	var first time.Time
	for _, res := range l.reservations {
		first = earlier(first, res.Expires)
	}
	for _, f := range []Folded{l.folded, l.statusFolded} {
		if f.Count > 0 {
			first = earlier(first, f.Expires)
		}
	}
	return until(first, now)
}

// UntilFirstExpiry is untilFirstExpiry of a ledger object as stored: after a settle that kept what admissions
// reserved since its recount read the ledger (quotaio.SettleLedger), the recount is due at the first of those
// expiries too, for an admission whose write never lands.
func UntilFirstExpiry(obj *quotav1alpha1.KarmadaQuotaLedger, now time.Time) time.Duration {
	var first time.Time
	for _, res := range obj.Reservations {
		first = earlier(first, res.ExpirationTime.Time)
	}
	if f := obj.FoldedReservations; f != nil && f.Count > 0 {
		first = earlier(first, f.ExpirationTime.Time)
	}
	return until(first, now)
}

// earlier is the earlier of first and t, first being unset when zero.
func earlier(first, t time.Time) time.Time {
	if first.IsZero() || t.Before(first) {
		return t
	}
	return first
}

// until is how long from now until first, a second past it, since expiry times are whole seconds and "after" is
// strict; 0 when first is unset.
func until(first, now time.Time) time.Duration {
	if first.IsZero() {
		return 0
	}
	return first.Sub(now) + time.Second
}
