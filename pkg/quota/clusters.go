package quota

import (
	"fmt"
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/apis/quota/validation"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
)

// This file is the ledger's limits on member clusters: one cluster's (spec.clusters), a group's over the clusters a
// label selector chooses (spec.clusterGroups). They hold on top of the namespace-wide hard, with the same rule:
// used + reserved + increase <= hard, where. A write's increase on a cluster is what it adds to the cluster's charge
// (usage.Charge.Clusters); on a group, what it adds to the sum over the group's clusters, so that a move between two
// clusters of one group is no growth of the group. Reservations keep, for the resources some cluster or group
// limits, what they reserved on each cluster they grow: the arrival of a move, never its departure (the write may not
// commit), so a group's reservations can only overstate a move inside it until the controller settles it.

// ClusterLabels reads a member cluster's labels from its Cluster object; ok is false for a cluster that has not
// joined (it belongs to no group).
type ClusterLabels func(cluster string) (labels.Set, bool)

// memberLimits are a quota's limits on member clusters.
type memberLimits struct {
	clusters map[string]resources.List
	groups   []groupLimit
	// userName maps canonical names to the author's spelling in the cluster and group limits.
	userName map[corev1.ResourceName]corev1.ResourceName
	// used is status.clusters[].used, by cluster, for the resources limited on members.
	used map[string]resources.List
	// reserved sums, by cluster, what the reservations and the folded sum hold there.
	reserved map[string]resources.List
	// labelsOf tells group membership; nil knows of no cluster's labels (every group empty).
	labelsOf ClusterLabels
}

type groupLimit struct {
	name     string
	selector labels.Selector
	hard     resources.List
}

// newMemberLimits parses the quota's cluster and group limits; nil when it has none.
func newMemberLimits(q *quotav1alpha1.KarmadaQuota) (*memberLimits, error) {
	if len(q.Spec.Clusters) == 0 && len(q.Spec.ClusterGroups) == 0 {
		return nil, nil
	}
	keys, err := validation.EnforceableClusterLimits(&q.Spec)
	if err != nil {
		return nil, fmt.Errorf("quota %s is invalid: %w", q.Name, err)
	}
	m := &memberLimits{
		clusters: make(map[string]resources.List, len(q.Spec.Clusters)),
		userName: map[corev1.ResourceName]corev1.ResourceName{},
		used:     map[string]resources.List{},
		reserved: map[string]resources.List{},
	}
	hardOf := func(hard corev1.ResourceList, names map[corev1.ResourceName]corev1.ResourceName) resources.List {
		out := make(resources.List, len(names))
		for canonical, name := range names {
			out[canonical] = resources.Value(canonical, hard[name])
			if _, seen := m.userName[canonical]; !seen {
				m.userName[canonical] = name
			}
		}
		return out
	}
	for _, c := range q.Spec.Clusters {
		m.clusters[c.Name] = hardOf(c.Hard, keys.Clusters[c.Name])
	}
	for i, g := range q.Spec.ClusterGroups {
		sel, err := metav1.LabelSelectorAsSelector(&g.ClusterSelector)
		if err != nil {
			return nil, fmt.Errorf("quota %s is invalid: spec.clusterGroups[%d].clusterSelector: %w", q.Name, i, err)
		}
		m.groups = append(m.groups, groupLimit{name: g.Name, selector: sel, hard: hardOf(g.Hard, keys.Groups[i])})
	}
	return m, nil
}

// parse keeps, of a status list, the resources limited on members, in canonical amounts.
func (m *memberLimits) parse(list corev1.ResourceList) resources.List {
	out := make(resources.List, len(list))
	for name, qty := range list {
		canonical, _, err := resources.Canonical(name)
		if err != nil {
			continue
		}
		if _, limited := m.userName[canonical]; limited {
			out[canonical] = resources.Value(canonical, qty)
		}
	}
	return out
}

// limited keeps, of list, the resources limited on members.
func (m *memberLimits) limited(list resources.List) resources.List {
	out := resources.List{}
	for name, v := range list {
		if _, ok := m.userName[name]; ok {
			out[name] = v
		}
	}
	return out
}

// deltas are what moving a binding from old to new changes on each cluster, signed, for the resources limited on
// members: nil when nothing changes there.
func (m *memberLimits) deltas(newCharge usage.Charge, oldCharge *usage.Charge) map[string]resources.List {
	out := map[string]resources.List{}
	add := func(cluster string, list resources.List, sign int64) {
		for name, v := range m.limited(list) {
			if out[cluster] == nil {
				out[cluster] = resources.List{}
			}
			if sign > 0 {
				out[cluster][name] = resources.Add(out[cluster][name], v)
			} else {
				out[cluster][name] = resources.Sub(out[cluster][name], v)
			}
		}
	}
	for cluster, l := range newCharge.Clusters {
		add(cluster, l, 1)
	}
	if oldCharge != nil {
		for cluster, l := range oldCharge.Clusters {
			add(cluster, l, -1)
		}
	}
	for cluster, l := range out {
		if zero(l) {
			delete(out, cluster)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// zero reports whether l changes nothing.
func zero(l resources.List) bool {
	for _, v := range l {
		if v != 0 {
			return false
		}
	}
	return true
}

// arrivals are the positive parts of deltas: what a write reserves on each cluster.
func arrivals(deltas map[string]resources.List) map[string]resources.List {
	var out map[string]resources.List
	for cluster, l := range deltas {
		if p := l.Positive(); len(p) > 0 {
			if out == nil {
				out = map[string]resources.List{}
			}
			out[cluster] = p
		}
	}
	return out
}

// members lists the clusters a group chooses now, among those named.
func (m *memberLimits) members(g groupLimit, clusters []string) []string {
	var out []string
	if m.labelsOf == nil {
		return nil
	}
	for _, c := range clusters {
		if set, ok := m.labelsOf(c); ok && g.selector.Matches(set) {
			out = append(out, c)
		}
	}
	return out
}

// known lists every cluster the ledger knows of: used, reserved, or touched by deltas, sorted.
func (m *memberLimits) known(deltas map[string]resources.List) []string {
	seen := map[string]bool{}
	for c := range m.used {
		seen[c] = true
	}
	for c := range m.reserved {
		seen[c] = true
	}
	for c := range deltas {
		seen[c] = true
	}
	out := make([]string, 0, len(seen))
	for c := range seen {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// check appends to denial what d exceeds on the limited clusters and groups. prior is d's own earlier reservation
// (the same write admitted before), which is not counted twice.
func (m *memberLimits) check(l *Ledger, d Demand, prior *Reservation, denial *Denial) {
	already := func(cluster string, name corev1.ResourceName) int64 {
		if prior == nil {
			return 0
		}
		return prior.Clusters[cluster][name]
	}
	for _, cluster := range sortedClusters(d.Clusters) {
		hard, limited := m.clusters[cluster]
		if !limited {
			continue
		}
		for _, name := range d.Clusters[cluster].Names() {
			h, ok := hard[name]
			inc := d.Clusters[cluster][name]
			if !ok || inc <= 0 || inc <= already(cluster, name) {
				continue
			}
			mine := already(cluster, name)
			others := resources.Sub(m.reserved[cluster][name], mine)
			if resources.Add(resources.Add(m.used[cluster][name], others), inc) <= h {
				continue
			}
			denial.Exceeded = append(denial.Exceeded, Exceeded{
				Where: "cluster " + cluster, Resource: m.userName[name], Requested: l.format(name, inc),
				Used: l.format(name, m.used[cluster][name]), Reserved: l.format(name, others), Hard: l.format(name, h),
				NeverFits: inc > h,
			})
		}
	}
	if len(m.groups) == 0 || len(d.Clusters) == 0 {
		return
	}
	known := m.known(d.Clusters)
	for _, g := range m.groups {
		inGroup := m.members(g, known)
		if len(inGroup) == 0 {
			continue
		}
		net, used, reserved, mine := resources.List{}, resources.List{}, resources.List{}, resources.List{}
		for _, c := range inGroup {
			net.Add(d.Clusters[c])
			used.Add(m.used[c])
			reserved.Add(m.reserved[c])
			if prior != nil {
				mine.Add(prior.Clusters[c])
			}
		}
		for _, name := range g.hard.Names() {
			inc := net[name]
			if inc <= 0 || inc <= mine[name] {
				continue
			}
			others := resources.Sub(reserved[name], mine[name])
			if resources.Add(resources.Add(used[name], others), inc) <= g.hard[name] {
				continue
			}
			denial.Exceeded = append(denial.Exceeded, Exceeded{
				Where: "cluster group " + g.name, Resource: m.userName[name], Requested: l.format(name, inc),
				Used: l.format(name, used[name]), Reserved: l.format(name, others), Hard: l.format(name, g.hard[name]),
				NeverFits: inc > g.hard[name],
			})
		}
	}
}

func sortedClusters(m map[string]resources.List) []string {
	out := make([]string, 0, len(m))
	for c := range m {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// addReserved adds (sign 1) or removes (sign -1) a reservation's clusters from the sums.
func (m *memberLimits) addReserved(clusters map[string]resources.List, sign int) {
	for c, l := range clusters {
		if m.reserved[c] == nil {
			m.reserved[c] = resources.List{}
		}
		if sign > 0 {
			m.reserved[c].Add(l)
		} else {
			m.reserved[c].Sub(l)
		}
	}
}

// render converts canonical amounts limited on members to a status list in the authors' names.
func (m *memberLimits) render(l *Ledger, list resources.List) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, v := range list {
		user, ok := l.userName[name]
		if !ok {
			user, ok = m.userName[name]
		}
		if ok {
			out[user] = resources.Quantity(name, v)
		}
	}
	return out
}

// renderClusters renders a reservation's clusters for status, sorted by name.
func (m *memberLimits) renderClusters(l *Ledger, clusters map[string]resources.List) []quotav1alpha1.ClusterReservation {
	var out []quotav1alpha1.ClusterReservation
	for _, c := range sortedClusters(clusters) {
		out = append(out, quotav1alpha1.ClusterReservation{Name: c, Reserved: m.render(l, clusters[c])})
	}
	return out
}

// SetClusterLabels tells the ledger the labels of member clusters, for its group limits.
func (l *Ledger) SetClusterLabels(labelsOf ClusterLabels) {
	if l.onMembers != nil {
		l.onMembers.labelsOf = labelsOf
	}
}

// OnCluster keeps, of what is used on one cluster, the resources this quota limits there: in all, on that
// cluster, or in some group.
func (l *Ledger) OnCluster(list resources.List) resources.List {
	out := l.Limited(list)
	if l.onMembers != nil {
		for name, v := range l.onMembers.limited(list) {
			out[name] = v
		}
	}
	return out
}

// limitsOnCluster reports whether the quota limits name on a cluster: in all, on that cluster, or in some group.
func (l *Ledger) limitsOnCluster(name corev1.ResourceName) bool {
	if _, ok := l.hard[name]; ok {
		return true
	}
	if l.onMembers == nil {
		return false
	}
	_, ok := l.onMembers.userName[name]
	return ok
}

// RenderOnCluster is Render for a list OnCluster kept.
func (l *Ledger) RenderOnCluster(list resources.List) corev1.ResourceList {
	if l.onMembers == nil {
		return l.Render(list)
	}
	return l.onMembers.render(l, list)
}

// ClusterLimit is what cluster may use at most, and what is reserved there now; ok is false for a cluster without
// a limit of its own.
func (l *Ledger) ClusterLimit(cluster string) (hard, reserved resources.List, ok bool) {
	if l.onMembers == nil {
		return nil, nil, false
	}
	hard, ok = l.onMembers.clusters[cluster]
	return hard, l.onMembers.reserved[cluster], ok
}

// LimitedClusters names the clusters with a limit of their own, sorted.
func (l *Ledger) LimitedClusters() []string {
	if l.onMembers == nil {
		return nil
	}
	out := make([]string, 0, len(l.onMembers.clusters))
	for c := range l.onMembers.clusters {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// ClusterReserved is what is reserved on cluster for the resources limited on members.
func (l *Ledger) ClusterReserved(cluster string) resources.List {
	if l.onMembers == nil {
		return nil
	}
	return l.onMembers.reserved[cluster]
}

// GroupUsage is what one cluster group of the quota uses, by the clusters it chooses now.
type GroupUsage struct {
	Name                 string
	Clusters             []string
	Hard, Used, Reserved resources.List
}

// Groups sums, for each cluster group in spec order, what used (by cluster) and the reservations hold on the
// clusters it chooses among candidates (every cluster known), by the labels SetClusterLabels gave.
func (l *Ledger) Groups(used map[string]resources.List, candidates []string) []GroupUsage {
	if l.onMembers == nil || len(l.onMembers.groups) == 0 {
		return nil
	}
	out := make([]GroupUsage, 0, len(l.onMembers.groups))
	for _, g := range l.onMembers.groups {
		gu := GroupUsage{Name: g.name, Hard: g.hard, Used: resources.List{}, Reserved: resources.List{}}
		gu.Clusters = l.onMembers.members(g, candidates)
		for _, c := range gu.Clusters {
			for name := range g.hard {
				gu.Used[name] = resources.Add(gu.Used[name], used[c][name])
				gu.Reserved[name] = resources.Add(gu.Reserved[name], l.onMembers.reserved[c][name])
			}
		}
		out = append(out, gu)
	}
	return out
}

// LimitsMembers reports whether the quota has cluster or group limits.
func (l *Ledger) LimitsMembers() bool {
	return l.onMembers != nil
}

// bestRoom is, for each resource limited on members, the most room one of its limits has left (hard - used -
// reserved there): the best any placement limited there could find. A cluster's own limit counts with the groups it
// belongs to (roomOn), and not at all for a cluster known not to have joined: nothing can be placed there. A group
// counts as a whole, as if one of its clusters had no limit of its own, so the answer may overstate but never
// understates what is left.
func (m *memberLimits) bestRoom() resources.List {
	out := resources.List{}
	consider := func(name corev1.ResourceName, room int64) {
		if v, seen := out[name]; !seen || room > v {
			out[name] = room
		}
	}
	for cluster := range m.clusters {
		if m.labelsOf != nil {
			if _, joined := m.labelsOf(cluster); !joined {
				continue
			}
		}
		room := resources.List{}
		m.roomOn(cluster, room)
		for name, v := range room {
			consider(name, v)
		}
	}
	known := m.known(nil)
	for _, g := range m.groups {
		for name, room := range m.groupRoom(g, known) {
			consider(name, room)
		}
	}
	return out
}

// MemberRoom is, for each resource limited on member clusters, the most room one of those limits has left
// (bestRoom); nil without limits on members. A binding the scheduler found no member room for is requeued only
// once it fits there: requeued sooner, Karmada recomputes its whole placement and fails again.
func (l *Ledger) MemberRoom() resources.List {
	if l.onMembers == nil {
		return nil
	}
	return l.onMembers.bestRoom()
}

// RoomOn is what one more placement on cluster can still take, by the limits on member clusters alone: for each
// resource limited there, the least room (hard - used - reserved) the cluster's own limit and every group it belongs
// to leave; empty when none applies. Karmada's scheduler learns it through the estimator (pkg/estimator) and divides
// replicas by it. The namespace-wide hard is not in it: no placement changes what that can take, and admission's
// refusal by it is the one the controller requeues on. Room may be negative: a cluster over its limit.
func (l *Ledger) RoomOn(cluster string) resources.List {
	room := resources.List{}
	if l.onMembers != nil {
		l.onMembers.roomOn(cluster, room)
	}
	return room
}

// roomOn lowers room to what cluster's own limit and its groups leave.
func (m *memberLimits) roomOn(cluster string, room resources.List) {
	least := func(name corev1.ResourceName, v int64) {
		if cur, seen := room[name]; !seen || v < cur {
			room[name] = v
		}
	}
	for name, h := range m.clusters[cluster] {
		least(name, m.clusterRoom(cluster, name, h))
	}
	if len(m.groups) == 0 || m.labelsOf == nil {
		return
	}
	set, joined := m.labelsOf(cluster)
	if !joined {
		return
	}
	var known []string
	for _, g := range m.groups {
		if !g.selector.Matches(set) {
			continue
		}
		if known == nil {
			known = m.known(nil)
		}
		for name, room := range m.groupRoom(g, known) {
			least(name, room)
		}
	}
}

// clusterRoom is what cluster's own limit h on name can still take: h less what is used and reserved there.
func (m *memberLimits) clusterRoom(cluster string, name corev1.ResourceName, h int64) int64 {
	return resources.Sub(resources.Sub(h, m.used[cluster][name]), m.reserved[cluster][name])
}

// groupRoom is, for each resource g limits, what it can still take: its hard less what is used and reserved on the
// clusters it chooses among known.
func (m *memberLimits) groupRoom(g groupLimit, known []string) resources.List {
	inGroup := m.members(g, known)
	room := make(resources.List, len(g.hard))
	for name, h := range g.hard {
		var used, reserved int64
		for _, c := range inGroup {
			used = resources.Add(used, m.used[c][name])
			reserved = resources.Add(reserved, m.reserved[c][name])
		}
		room[name] = resources.Sub(resources.Sub(h, used), reserved)
	}
	return room
}

// ReplicasThatFit is how many replicas, each charging perReplica, room takes: the least, over the resources room
// limits that a replica charges, of room / charge, never below zero. A resource a replica does not charge does not
// bound it; no bound at all is math.MaxInt64.
func ReplicasThatFit(room, perReplica resources.List) int64 {
	fit := int64(math.MaxInt64)
	for name, charge := range perReplica {
		left, limited := room[name]
		if !limited || charge <= 0 {
			continue
		}
		if left <= 0 {
			return 0
		}
		if n := left / charge; n < fit {
			fit = n
		}
	}
	return fit
}
