package report

import (
	"regexp"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/quota"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
)

// A quota may limit what its namespace uses in single member clusters (spec.clusters) and in groups of them chosen
// by their labels (spec.clusterGroups), on top of its namespace-wide hard. This file reads them for people: each
// cluster's and group's limit next to what is used and reserved there, and which of them refused a placement.
//
// What the scheduler tried to place, and where, is not kept: the webhook refused the write, so spec.clusters still
// holds the last placement admitted. Only the refusal says which cluster or group was short, and the scheduler
// copies it into the binding's Scheduled condition: Denial.Error in pkg/quota writes, per quota,
//
//	exceeded quota: <quota>, <resource>[ in cluster <name>| in cluster group <name>]: requested <q>, used <q>, reserved <q>, hard <q>[ (can never fit: ...)], ...
//
// and the webhook joins the quotas refusing one write with "; ". Names of clusters (DNS subdomains), groups (DNS
// labels), quotas and resources hold no space, comma or colon, and quantities no space or comma.

// limitExceeded finds each resource of a denial that names a cluster or a group.
var limitExceeded = regexp.MustCompile(`(?:^|, )([^\s,:]+) in cluster (?:group ([^\s,:]+)|([^\s,:]+)): requested ([^\s,]+), used ([^\s,]+), reserved ([^\s,]+), hard ([^\s,;()]+)`)

// totalExceeded finds each resource of a denial under the quota's hard over all clusters: one naming no cluster
// and no group, its name right after the ", " that separates it from what precedes.
var totalExceeded = regexp.MustCompile(`(?:^|, )([^\s,:]+): requested ([^\s,]+), used ([^\s,]+), reserved ([^\s,]+), hard ([^\s,;()]+)`)

// missingRequests finds a denial's requests the binding lacks: "must specify requests for cpu,memory: ...".
var missingRequests = regexp.MustCompile(`must specify requests for ([^\s:]+):`)

// neverFitsMarker follows the figures of a resource the request alone exceeds.
const neverFitsMarker = " (can never fit"

// limitDenial is one resource a refusal says a quota lacked: under a cluster's or a group's limit, or (both
// empty) under its hard over all clusters.
type limitDenial struct {
	quota string
	// business says quota is a business quota ("exceeded business quota: NAME").
	business                        bool
	resource, cluster, group        string
	requested, used, reserved, hard string
	neverFits                       bool
}

// denialOwner finds whose denial the text at pos is part of: the last "exceeded [business ]quota: NAME" before it
// (quotas, exceededQuota's matches in message); false when none is.
func denialOwner(message string, quotas [][]int, pos int) (name string, business bool, found bool) {
	for _, q := range quotas {
		if q[0] < pos {
			name, business, found = message[q[4]:q[5]], q[2] >= 0, true
		}
	}
	return name, business, found
}

// submatch returns group i of match m in message, "" when it did not take part.
func submatch(message string, m []int, i int) string {
	if m[2*i] < 0 {
		return ""
	}
	return message[m[2*i]:m[2*i+1]]
}

// limitDenials reads the cluster and group limits a refusal message names, in its order, each under the quota
// whose denial it is part of.
func limitDenials(message string) []limitDenial {
	quotas := exceededQuota.FindAllStringSubmatchIndex(message, -1)
	var out []limitDenial
	for _, m := range limitExceeded.FindAllStringSubmatchIndex(message, -1) {
		owner, business, found := denialOwner(message, quotas, m[0])
		if !found {
			continue
		}
		out = append(out, limitDenial{
			quota: owner, business: business, resource: submatch(message, m, 1), group: submatch(message, m, 2), cluster: submatch(message, m, 3),
			requested: submatch(message, m, 4), used: submatch(message, m, 5), reserved: submatch(message, m, 6),
			hard: strings.TrimRight(submatch(message, m, 7), "."), neverFits: strings.HasPrefix(message[m[1]:], neverFitsMarker),
		})
	}
	return out
}

// messageDenial is what a refusal message says of one quota: each resource it lacked, with the figures of that
// moment, and the requests it requires that the binding lacks.
type messageDenial struct {
	quota    string
	business bool
	short    []Shortfall
	missing  []string
}

// messageDenials reads every quota's denial a refusal message holds, in its order: what is known of a quota
// whose state cannot be read now.
func messageDenials(message string) []messageDenial {
	quotas := exceededQuota.FindAllStringSubmatchIndex(message, -1)
	var out []messageDenial
	for k, q := range quotas {
		end := len(message)
		if k+1 < len(quotas) {
			end = quotas[k+1][0]
		}
		segment := message[q[1]:end]
		d := messageDenial{quota: message[q[4]:q[5]], business: q[2] >= 0}
		type found struct {
			at int
			limitDenial
		}
		var all []found
		for _, m := range totalExceeded.FindAllStringSubmatchIndex(segment, -1) {
			all = append(all, found{at: m[0], limitDenial: limitDenial{
				resource: submatch(segment, m, 1), requested: submatch(segment, m, 2), used: submatch(segment, m, 3),
				reserved: submatch(segment, m, 4), hard: strings.TrimRight(submatch(segment, m, 5), "."),
				neverFits: strings.HasPrefix(segment[m[1]:], neverFitsMarker),
			}})
		}
		for _, m := range limitExceeded.FindAllStringSubmatchIndex(segment, -1) {
			all = append(all, found{at: m[0], limitDenial: limitDenial{
				resource: submatch(segment, m, 1), group: submatch(segment, m, 2), cluster: submatch(segment, m, 3),
				requested: submatch(segment, m, 4), used: submatch(segment, m, 5), reserved: submatch(segment, m, 6),
				hard: strings.TrimRight(submatch(segment, m, 7), "."), neverFits: strings.HasPrefix(segment[m[1]:], neverFitsMarker),
			}})
		}
		sort.SliceStable(all, func(i, j int) bool { return all[i].at < all[j].at })
		for _, f := range all {
			if s, ok := shortfallAsSaid(f.limitDenial); ok {
				d.short = append(d.short, s)
			}
		}
		if m := missingRequests.FindStringSubmatch(segment); m != nil {
			d.missing = strings.Split(m[1], ",")
		}
		out = append(out, d)
	}
	return out
}

// shortfallAsSaid is the shortfall a denial's figures describe, as they were when it was written; false for
// figures it cannot read.
func shortfallAsSaid(d limitDenial) (Shortfall, bool) {
	name, _, err := resources.Canonical(corev1.ResourceName(d.resource))
	if err != nil {
		return Shortfall{}, false
	}
	var figures [4]int64
	for i, s := range []string{d.requested, d.used, d.reserved, d.hard} {
		v, ok := value(name, s)
		if !ok {
			return Shortfall{}, false
		}
		figures[i] = v
	}
	need, used, reserved, hard := figures[0], figures[1], figures[2], figures[3]
	available := resources.Sub(resources.Sub(hard, used), reserved)
	return Shortfall{
		Resource: d.resource, Cluster: d.cluster, Group: d.group,
		Need:      resources.Human(name, need),
		Available: resources.Human(name, available),
		ShortBy:   resources.Human(name, resources.Sub(need, available)),
		Hard:      resources.Human(name, hard),
		NeverFits: d.neverFits || need > hard,
	}, true
}

// limitPlace names a cluster's limit ("cluster member1") or a group's ("cluster group eu") as the webhook's
// refusal names them; "" for the namespace-wide hard (both empty).
func limitPlace(cluster, group string) string {
	switch {
	case cluster != "":
		return "cluster " + cluster
	case group != "":
		return "cluster group " + group
	}
	return ""
}

// limitShortfalls are the shortfalls of q's cluster and group limits that a refusal message names, with the need
// the refusal reported and availability from q now: a cluster's from its limit, its used in status.clusters and
// the reservations' clusters; a group's from its limit, the clusters status.clusterGroups says it selects, their
// used and their reservations (the message's own figures while the controller has not counted the group, and for
// a business quota read from its AppliedBusinessQuota, which carries no use per member cluster). A limit gone
// since, or one the need fits now, is left out.
func limitShortfalls(q *quotav1alpha1.KarmadaQuota, ledger *quota.Ledger, message string) []Shortfall {
	if !ledger.LimitsMembers() {
		return nil
	}
	groupHard := map[string]resources.List{}
	for _, g := range ledger.Groups(nil, nil) {
		groupHard[g.Name] = g.Hard
	}
	seen := map[string]bool{}
	var out []Shortfall
	// Use per member cluster is in a quota's status, but not in a namespace's view of a business quota.
	memberUsageKnown := q.Kind != KindAppliedBusinessQuota
	for _, d := range limitDenials(message) {
		// A namespace's quota and a business quota may share a name.
		if d.quota != q.Name || d.business != ledger.Business() {
			continue
		}
		key := d.resource + "\x00" + d.cluster + "\x00" + d.group
		if seen[key] {
			continue
		}
		seen[key] = true
		name, _, err := resources.Canonical(corev1.ResourceName(d.resource))
		if err != nil {
			continue
		}
		need, ok := value(name, d.requested)
		if !ok {
			continue
		}
		var hard, used, reserved int64
		asSaid := !memberUsageKnown
		if d.cluster != "" {
			limit, held, limited := ledger.ClusterLimit(d.cluster)
			if hard, ok = limit[name]; !limited || !ok {
				continue
			}
			if memberUsageKnown {
				used, reserved = clusterUsed(q, d.cluster)[name], held[name]
			}
		} else {
			if hard, ok = groupHard[d.group][name]; !ok {
				continue
			}
			members, counted := groupClusters(q, d.group)
			if memberUsageKnown && counted {
				inGroup, heldInGroup := groupSums(q, ledger, members)
				used, reserved = inGroup[name], heldInGroup[name]
			} else {
				asSaid = true
			}
		}
		if asSaid {
			u, okUsed := value(name, d.used)
			r, okReserved := value(name, d.reserved)
			if !okUsed || !okReserved {
				continue
			}
			used, reserved = u, r
		}
		available := resources.Sub(resources.Sub(hard, used), reserved)
		if need <= available {
			continue
		}
		out = append(out, Shortfall{
			Resource: d.resource, Cluster: d.cluster, Group: d.group,
			Need:      resources.Human(name, need),
			Available: resources.Human(name, available),
			ShortBy:   resources.Human(name, resources.Sub(need, available)),
			Hard:      resources.Human(name, hard),
			NeverFits: need > hard,
		})
	}
	return out
}

// value reads an amount of a refusal message in accounting units.
func value(name corev1.ResourceName, s string) (int64, bool) {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, false
	}
	return resources.Value(name, q), true
}

// clusterUsed is status.clusters[].used of one cluster, every resource it lists, in canonical amounts.
func clusterUsed(q *quotav1alpha1.KarmadaQuota, cluster string) resources.List {
	for _, c := range q.Status.Clusters {
		if c.Name == cluster {
			return parseAll(c.Used)
		}
	}
	return resources.List{}
}

// groupClusters are the clusters a group selected at the controller's last recount; false while it has not
// counted the group.
func groupClusters(q *quotav1alpha1.KarmadaQuota, group string) ([]string, bool) {
	for _, g := range q.Status.ClusterGroups {
		if g.Name == group {
			return g.Clusters, true
		}
	}
	return nil, false
}

// groupSums is what a group's clusters (members, as status.clusterGroups lists them) use together as observed, and
// what the reservations hold on them now.
func groupSums(q *quotav1alpha1.KarmadaQuota, ledger *quota.Ledger, members []string) (used, reserved resources.List) {
	used, reserved = resources.List{}, resources.List{}
	for _, c := range members {
		used.Add(clusterUsed(q, c))
		reserved.Add(ledger.ClusterReserved(c))
	}
	return used, reserved
}

// parseAll converts a status list to canonical amounts, every resource a quota could limit; names none could are
// left out.
func parseAll(list corev1.ResourceList) resources.List {
	out := make(resources.List, len(list))
	for name, q := range list {
		canonical, _, err := resources.Canonical(name)
		if err != nil {
			continue
		}
		out[canonical] = resources.Value(canonical, q)
	}
	return out
}

// onCluster reads a list of status.clusters[] (or a group's, or a reservation's cluster) as the ledger counts what
// is used on members: the resources the quota limits in all, on a cluster, or in a group.
func onCluster(ledger *quota.Ledger, list corev1.ResourceList) resources.List {
	return ledger.OnCluster(parseAll(list))
}

// renderOnCluster converts canonical amounts kept by onCluster to the names the quota's author wrote (in spec.hard,
// or else in a cluster's or a group's hard), as people read them.
func renderOnCluster(ledger *quota.Ledger, list resources.List) map[string]string {
	out := make(map[string]string, len(list))
	for name, v := range list {
		for user := range ledger.RenderOnCluster(resources.List{name: v}) {
			out[string(user)] = resources.Human(name, v)
		}
	}
	return out
}

// withZeros is list with a 0 for every resource of hard it lacks.
func withZeros(list, hard resources.List) resources.List {
	out := list.Clone()
	if out == nil {
		out = resources.List{}
	}
	for name := range hard {
		if _, ok := out[name]; !ok {
			out[name] = 0
		}
	}
	return out
}

// clusterUsages lists what the namespace uses in each member cluster the status lists, and each cluster with a
// limit of its own, listed or not (a limit added since the last recount), sorted by name: used as observed, the
// cluster's limit and what the reservations hold there as enforced now (spec, the ledger's reservations).
func clusterUsages(q *quotav1alpha1.KarmadaQuota, ledger *quota.Ledger) []ClusterUsage {
	byName := map[string]quotav1alpha1.ClusterUsage{}
	for _, c := range q.Status.Clusters {
		byName[c.Name] = c
	}
	for _, name := range ledger.LimitedClusters() {
		if _, ok := byName[name]; !ok {
			byName[name] = quotav1alpha1.ClusterUsage{Name: name}
		}
	}
	names := make([]string, 0, len(byName))
	for name := range byName {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []ClusterUsage
	for _, name := range names {
		c := byName[name]
		usage := ClusterUsage{Cluster: c.Name, NotJoined: c.NotJoined, Used: renderOnCluster(ledger, onCluster(ledger, c.Used))}
		if hard, reserved, limited := ledger.ClusterLimit(name); limited {
			usage.Hard = renderOnCluster(ledger, hard)
			usage.Reserved = renderOnCluster(ledger, withZeros(reserved, hard))
		} else if reserved := ledger.ClusterReserved(name).Positive(); len(reserved) > 0 {
			usage.Reserved = renderOnCluster(ledger, reserved)
		}
		if c.Running != nil {
			usage.Running = render(ledger, ledger.ParseStatus(c.Running))
		}
		if evicting := ledger.ParseStatus(c.Evicting).Positive(); len(evicting) > 0 {
			usage.Evicting = render(ledger, evicting)
			// The status leaves evictingUntil out while one of them waits for someone to release it.
			if c.EvictingUntil != nil {
				usage.EvictingUntil = timestamp(c.EvictingUntil.Time)
			} else {
				usage.EvictingHeld = true
			}
		}
		out = append(out, usage)
	}
	return out
}

// clusterGroups lists a quota's group limits in spec order: the limit as enforced now, the clusters the group
// selected and what they used at the controller's last recount, and what the reservations hold on those clusters.
func clusterGroups(q *quotav1alpha1.KarmadaQuota, ledger *quota.Ledger) []ClusterGroup {
	var out []ClusterGroup
	for _, g := range ledger.Groups(nil, nil) {
		group := ClusterGroup{Group: g.Name, Hard: renderOnCluster(ledger, g.Hard)}
		members, counted := groupClusters(q, g.Name)
		if !counted {
			group.NotCounted = true
			out = append(out, group)
			continue
		}
		group.Clusters = append([]string(nil), members...)
		sort.Strings(group.Clusters)
		used, reserved := groupSums(q, ledger, members)
		keep := func(list resources.List) resources.List {
			out := resources.List{}
			for name := range g.Hard {
				out[name] = list[name]
			}
			return out
		}
		group.Used = renderOnCluster(ledger, keep(used))
		group.Reserved = renderOnCluster(ledger, keep(reserved))
		out = append(out, group)
	}
	return out
}

// reservationClusters renders a reservation's split by cluster; nil when it has none.
func reservationClusters(ledger *quota.Ledger, list []quotav1alpha1.ClusterReservation) map[string]map[string]string {
	if len(list) == 0 {
		return nil
	}
	out := make(map[string]map[string]string, len(list))
	for _, c := range list {
		out[c.Name] = reservedAmounts(ledger, c.Reserved)
	}
	return out
}

// reservedAmounts renders what a reservation (or its part on one cluster) holds in the author's names: through the
// ledger when the quota parses (a limit on a cluster or a group may count a resource spec.hard does not), as
// written otherwise (ledger nil).
func reservedAmounts(ledger *quota.Ledger, list corev1.ResourceList) map[string]string {
	if ledger != nil && ledger.LimitsMembers() {
		return renderOnCluster(ledger, onCluster(ledger, list))
	}
	if ledger != nil {
		return render(ledger, ledger.ParseStatus(list))
	}
	out := make(map[string]string, len(list))
	for name, v := range list {
		out[string(name)] = v.String()
	}
	return out
}
