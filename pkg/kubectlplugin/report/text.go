package report

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"k8s.io/cli-runtime/pkg/printers"
)

// The text below follows kubectl's conventions: `describe` blocks as kubectl/pkg/describe writes them ("Name:"
// fields, two-space indentation levels, capitalised table headers over dashes, a tabwriter with minimum width 0,
// tab width 8 and padding 2), and `list` tables as `kubectl get` writes them (upper-case headers,
// printers.GetNewTabWriter). Everything the API returned goes through printers.WriteEscaped, as in kubectl, so
// a condition message cannot move the terminal's cursor. kubectl's describe package itself is not imported: it
// links every typed client of Kubernetes (7 MB) for a ten-line writer.

// describeWriter writes one describe block; Flush aligns its columns.
type describeWriter struct {
	tw *tabwriter.Writer
}

func newDescribeWriter(out io.Writer) *describeWriter {
	return &describeWriter{tw: tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)}
}

// line writes one line at an indentation level (two spaces each), as describe.PrefixWriter does.
func (w *describeWriter) line(level int, format string, a ...any) {
	_ = printers.WriteEscaped(w.tw, strings.Repeat("  ", level)+fmt.Sprintf(format, a...))
}

func (w *describeWriter) flush() error {
	return w.tw.Flush()
}

// WriteQuotas renders quotas one after the other, separated as `kubectl describe` separates objects.
func WriteQuotas(out io.Writer, quotas []Quota) error {
	for i, q := range quotas {
		if i > 0 {
			if _, err := io.WriteString(out, "\n\n"); err != nil {
				return err
			}
		}
		if err := WriteQuota(out, q); err != nil {
			return err
		}
	}
	return nil
}

// WriteQuota renders a quota in the shape of `kubectl describe resourcequota`: Name, Namespace, Scopes with their
// meaning, then a Resource / Used / Reserved / Hard table sorted by resource name, then Karmada's additions: the
// status's currency, use per member cluster (with each cluster's own limit) and what graceful evictions keep there,
// the limits on groups of member clusters, and the bindings waiting on the quota.
//
// A business quota says so under its name, and that its figures are the business's: as a cluster admin reads it,
// with its selector and each namespace's part; as a namespace sees it, with that namespace's part in a last column,
// and no word of the business's other namespaces.
func WriteQuota(out io.Writer, q Quota) error {
	w := newDescribeWriter(out)
	w.line(0, "Name:\t%s\n", q.Name)
	switch q.Kind {
	case KindBusinessQuota:
		w.line(0, "Kind:\tbusiness quota, over the namespaces it selects together\n")
		if b := q.Business; b != nil {
			w.line(0, "Namespaces:\t%s\n", namespacesLine(*b))
		}
	case KindAppliedBusinessQuota:
		w.line(0, "Namespace:\t%s\n", q.Namespace)
		w.line(0, "Kind:\tbusiness quota, over the namespaces of a business together: Used and Reserved are the business's\n")
	default:
		w.line(0, "Namespace:\t%s\n", q.Namespace)
	}
	if len(q.Scopes) > 0 {
		names := map[string]bool{}
		var list []string
		for _, s := range q.Scopes {
			if !names[s.ScopeName] {
				names[s.ScopeName] = true
				list = append(list, s.ScopeName)
			}
		}
		sort.Strings(list)
		w.line(0, "Scopes:\t%s\n", strings.Join(list, ", "))
		for _, s := range q.Scopes {
			w.line(0, " * %s\n", s.Meaning)
		}
	}
	w.line(0, "Status:\t%s\n", statusLine(q.Status))
	if q.Kind == KindAppliedBusinessQuota {
		// The namespace's part, next to the business's figures.
		own := "Used by " + q.Namespace
		w.line(0, "Resource\tUsed\tReserved\tHard\t%s\n", own)
		w.line(0, "--------\t----\t--------\t----\t%s\n", strings.Repeat("-", len(own)))
		for _, r := range q.Resources {
			w.line(0, "%s\t%s\t%s\t%s\t%s\n", r.Name, r.Used, r.Reserved, r.Hard, r.NamespaceUsed)
		}
	} else {
		w.line(0, "Resource\tUsed\tReserved\tHard\n")
		w.line(0, "--------\t----\t--------\t----\n")
		for _, r := range q.Resources {
			w.line(0, "%s\t%s\t%s\t%s\n", r.Name, r.Used, r.Reserved, r.Hard)
		}
	}
	if err := w.flush(); err != nil {
		return err
	}

	if q.Business != nil {
		if err := writeNamespaces(out, q.Business.Namespaces, q.Resources); err != nil {
			return err
		}
	}
	if q.MemberUsageUnknown != "" {
		if err := writeMemberLimits(out, q); err != nil {
			return err
		}
	} else {
		if err := writeClusters(out, q.Clusters, len(q.ClusterGroups) > 0); err != nil {
			return err
		}
		if err := writeEvicting(out, q.Clusters); err != nil {
			return err
		}
		if err := writeGroups(out, q.ClusterGroups); err != nil {
			return err
		}
	}

	w = newDescribeWriter(out)
	switch {
	case q.WaitingUnknown != "":
		w.line(0, "Bindings waiting on this quota:\t<unknown: %s>\n", q.WaitingUnknown)
	case len(q.Waiting) == 0:
		w.line(0, "Bindings waiting on this quota:\t<none>\n")
	default:
		w.line(0, "Bindings waiting on this quota:\n")
		w.line(1, "Binding\tWorkload\tAsks for\tMissing here\n")
		w.line(1, "-------\t--------\t--------\t------------\n")
		for _, b := range q.Waiting {
			binding := b.Binding
			if b.Namespace != "" {
				binding = b.Namespace + "/" + binding
			}
			w.line(1, "%s\t%s/%s\t%s\t%s\n", binding, b.Workload.Kind, b.Workload.Name, asksText(b.Asks, b.Needs), missingText(b.Short, b.MissingRequests))
		}
	}
	if err := w.flush(); err != nil {
		return err
	}
	return writeReservations(out, q)
}

// namespacesLine says which namespaces a business quota selects: by which labels, and how many.
func namespacesLine(b Business) string {
	switch b.NamespaceCount {
	case 0:
		return b.NamespaceSelector + " (none selected)"
	case 1:
		return b.NamespaceSelector + " (1 selected)"
	}
	return fmt.Sprintf("%s (%d selected)", b.NamespaceSelector, b.NamespaceCount)
}

// writeNamespaces renders what each namespace of a business uses of its business quota: a row per namespace, a
// column per limited resource (in the order of resources), since a business has more namespaces than limits.
func writeNamespaces(out io.Writer, namespaces []NamespaceUsage, resources []Resource) error {
	w := newDescribeWriter(out)
	if len(namespaces) == 0 {
		w.line(0, "Usage per namespace:\t<none>\n")
		return w.flush()
	}
	names := make([]string, len(resources))
	for i, r := range resources {
		names[i] = r.Name
	}
	w.line(0, "Usage per namespace:\n")
	header, dashes := "Namespace", "---------"
	for _, name := range names {
		header += "\t" + name
		dashes += "\t" + strings.Repeat("-", len(name))
	}
	w.line(1, "%s\n", header)
	w.line(1, "%s\n", dashes)
	for _, n := range namespaces {
		row := n.Namespace
		for _, name := range names {
			row += "\t" + orDefault(n.Used[name], "0")
		}
		w.line(1, "%s\n", row)
	}
	return w.flush()
}

// writeMemberLimits renders, for a quota whose use per member cluster is not known (a namespace's view of a
// business quota), why, and its limits on member clusters and groups of them, which still refuse placements.
func writeMemberLimits(out io.Writer, q Quota) error {
	w := newDescribeWriter(out)
	w.line(0, "Usage per member cluster:\t<not shown: %s>\n", q.MemberUsageUnknown)
	if len(q.Clusters) > 0 || len(q.ClusterGroups) > 0 {
		w.line(0, "Limits on member clusters:\n")
		w.line(1, "Where\tResource\tHard\n")
		w.line(1, "-----\t--------\t----\n")
		for _, c := range q.Clusters {
			for _, name := range sortedKeys(c.Hard) {
				w.line(1, "%s\t%s\t%s\n", limitPlace(c.Cluster, ""), name, c.Hard[name])
			}
		}
		for _, g := range q.ClusterGroups {
			for _, name := range sortedKeys(g.Hard) {
				w.line(1, "%s\t%s\t%s\n", limitPlace("", g.Group), name, g.Hard[name])
			}
		}
	}
	return w.flush()
}

// writeClusters renders the use per member cluster: a row per cluster and resource, Used as the quota charges it
// there; on a quota with limits on member clusters or groups of them (groups), Reserved there and the cluster's own
// Hard ("-" where it has none), a cluster that has not joined marked as such; and, when the members were read, what
// their pods request.
func writeClusters(out io.Writer, clusters []ClusterUsage, groups bool) error {
	w := newDescribeWriter(out)
	if len(clusters) == 0 {
		w.line(0, "Usage per member cluster:\t<none>\n")
		return w.flush()
	}
	w.line(0, "Usage per member cluster:\n")
	read := slices.ContainsFunc(clusters, func(c ClusterUsage) bool { return c.Running != nil })
	limits := groups || slices.ContainsFunc(clusters, func(c ClusterUsage) bool { return c.Hard != nil || c.Reserved != nil })
	header, dashes := "Cluster\tResource\tUsed", "-------\t--------\t----"
	if limits {
		header, dashes = header+"\tReserved\tHard", dashes+"\t--------\t----"
	}
	if read {
		// What the member's pods request, read from the member, next to what the quota charges there.
		header, dashes = header+"\tRunning", dashes+"\t-------"
	}
	w.line(1, "%s\n", header)
	w.line(1, "%s\n", dashes)
	for _, c := range clusters {
		names := map[string]bool{}
		for _, m := range []map[string]string{c.Used, c.Running, c.Reserved, c.Hard} {
			for name := range m {
				names[name] = true
			}
		}
		cluster := c.Cluster
		if c.NotJoined {
			cluster += " (not joined)"
		}
		for _, name := range sortedKeys(names) {
			row := cluster + "\t" + name + "\t" + orDefault(c.Used[name], "0")
			if limits {
				hard := "-"
				if c.Hard != nil {
					hard = orDefault(c.Hard[name], "-")
				}
				row += "\t" + orDefault(c.Reserved[name], "0") + "\t" + hard
			}
			if read {
				running := c.Running[name]
				if c.Running == nil {
					running = "<not read>"
				}
				row += "\t" + running
			}
			w.line(1, "%s\n", row)
		}
	}
	return w.flush()
}

// writeGroups lists the quota's limits on groups of member clusters, when it has any: each group's clusters, and
// per resource what they use and reserve together against the group's hard.
func writeGroups(out io.Writer, groups []ClusterGroup) error {
	if len(groups) == 0 {
		return nil
	}
	w := newDescribeWriter(out)
	w.line(0, "Cluster groups:\n")
	w.line(1, "Group\tClusters\tResource\tUsed\tReserved\tHard\n")
	w.line(1, "-----\t--------\t--------\t----\t--------\t----\n")
	for _, g := range groups {
		clusters := strings.Join(g.Clusters, ", ")
		switch {
		case g.NotCounted:
			clusters = "<not counted yet>"
		case len(g.Clusters) == 0:
			clusters = "<none>"
		}
		for _, name := range sortedKeys(g.Hard) {
			used, reserved := orDefault(g.Used[name], "0"), orDefault(g.Reserved[name], "0")
			if g.NotCounted {
				used, reserved = "<unknown>", "<unknown>"
			}
			w.line(1, "%s\t%s\t%s\t%s\t%s\t%s\n", g.Group, clusters, name, used, reserved, g.Hard[name])
		}
	}
	return w.flush()
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// writeEvicting lists, when a failover runs, what Karmada's graceful eviction keeps on each member cluster it moved
// workloads away from: part of Used there, charged until the eviction ends, and when that is at the latest.
func writeEvicting(out io.Writer, clusters []ClusterUsage) error {
	if !slices.ContainsFunc(clusters, func(c ClusterUsage) bool { return len(c.Evicting) > 0 }) {
		return nil
	}
	w := newDescribeWriter(out)
	w.line(0, "Evicting (part of Used, kept through a failover until Karmada's graceful eviction ends):\n")
	w.line(1, "Cluster\tEvicting\tUntil\n")
	w.line(1, "-------\t--------\t-----\n")
	for _, c := range clusters {
		if len(c.Evicting) > 0 {
			w.line(1, "%s\t%s\t%s\n", c.Cluster, amounts(c.Evicting), evictingUntil(c))
		}
	}
	return w.flush()
}

// evictingUntil says when what a graceful eviction keeps on a cluster goes.
func evictingUntil(c ClusterUsage) string {
	switch {
	case c.EvictingHeld:
		return "held until released"
	case c.EvictingUntil != "":
		return c.EvictingUntil + " at the latest"
	}
	return "<unknown>"
}

// writeReservations lists what the Reserved column sums, when anything is reserved: who holds each reservation
// and what it stands for. A binding's is a write of the binding; a Work's is what a member cluster runs beyond
// its binding's placement, named by the Work, never as if it were a binding.
func writeReservations(out io.Writer, q Quota) error {
	if len(q.Reservations) == 0 && q.FoldedReservations == nil {
		return nil
	}
	w := newDescribeWriter(out)
	w.line(0, "Reservations (admitted, not yet observed):\n")
	w.line(1, "Held by\tReserved\tExpires\tFor\n")
	w.line(1, "-------\t--------\t-------\t---\n")
	for _, r := range q.Reservations {
		w.line(1, "%s\t%s\t%s\t%s\n", heldBy(r), reservedText(r), r.Expires, reservedFor(r))
	}
	if f := q.FoldedReservations; f != nil {
		w.line(1, "%d older, folded\t%s\t%s\t%s\n", f.Count, amounts(f.Reserved), f.Expires,
			"writes admitted before the list reached its bound, charged until the last of them expires")
	}
	return w.flush()
}

// reservedText renders what a reservation holds, and on a quota with limits on member clusters, where.
func reservedText(r Reservation) string {
	s := amounts(r.Reserved)
	if len(r.Clusters) == 0 {
		return s
	}
	parts := make([]string, 0, len(r.Clusters))
	for _, cluster := range sortedKeys(r.Clusters) {
		parts = append(parts, cluster+": "+amounts(r.Clusters[cluster]))
	}
	return s + " (" + strings.Join(parts, "; ") + ")"
}

func heldBy(r Reservation) string {
	if r.Namespace != "" {
		return fmt.Sprintf("%s %s/%s", r.Kind, r.Namespace, r.Name)
	}
	return fmt.Sprintf("%s %s", r.Kind, r.Name)
}

// reservedFor says what a reservation charges for.
func reservedFor(r Reservation) string {
	switch r.Kind {
	case ReservedByWork:
		member := "its member cluster"
		if r.Cluster != "" {
			member = "member cluster " + r.Cluster
		}
		return fmt.Sprintf("what %s runs beyond its binding's placement (Work generation %d)", member, r.Generation)
	case ReservedByBinding:
		return fmt.Sprintf("the binding's placement (generation %d)", r.Generation)
	}
	return fmt.Sprintf("a write of %s (generation %d)", r.Kind, r.Generation)
}

// statusLine says in words whether the figures are current.
func statusLine(s Status) string {
	switch s.State {
	case Current:
		return fmt.Sprintf("status is current (Ready, observed generation %d)", s.ObservedGeneration)
	case Behind:
		return fmt.Sprintf("status is behind spec: the controller has not caught up (observed generation %d, spec generation %d)",
			s.ObservedGeneration, s.Generation)
	case NotReady:
		return fmt.Sprintf("status is not ready (%s): %s", s.Reason, s.Message)
	case Applied:
		return fmt.Sprintf("as the controller last counted the business quota, at its generation %d", s.ObservedGeneration)
	}
	return "no status yet: the controller has not computed one (is quota-controller running?)"
}

// asksText renders what a waiting binding asks for: replicas × each replica's requests, and what is placed
// already; a workload without replicas (a Service, a ConfigMap) by what it needs.
func asksText(a Asks, needs map[string]string) string {
	var s string
	switch {
	case len(a.Components) > 0:
		parts := make([]string, len(a.Components))
		for i, c := range a.Components {
			parts[i] = fmt.Sprintf("%s %d × (%s)", c.Name, c.Replicas, amounts(c.PerReplica))
		}
		s = strings.Join(parts, " + ")
	case a.Replicas > 0 && len(a.PerReplica) > 0:
		s = fmt.Sprintf("%d × (%s)", a.Replicas, amounts(a.PerReplica))
	case a.Replicas > 0:
		s = fmt.Sprintf("%d × (no requests)", a.Replicas)
	default:
		return amounts(needs)
	}
	if a.Placed > 0 {
		s += fmt.Sprintf(", %d placed", a.Placed)
	}
	return s
}

// missingText renders what a quota lacks for a binding: each short resource by how much, whether it can ever
// fit, and any request a limited resource needs.
func missingText(short []Shortfall, missingRequests []string) string {
	var parts []string
	for _, s := range short {
		p := fmt.Sprintf("%s %s", s.Resource, s.ShortBy)
		place := where(s)
		if place != "" {
			p += " in " + place
		}
		switch {
		case s.NeverFits && place != "":
			p += fmt.Sprintf(" (never as placed: needs %s there, hard %s)", s.Need, s.Hard)
		case s.NeverFits:
			p += fmt.Sprintf(" (can never fit: needs %s, hard %s)", s.Need, s.Hard)
		}
		parts = append(parts, p)
	}
	if len(missingRequests) > 0 {
		parts = append(parts, "requests for "+strings.Join(missingRequests, ", "))
	}
	if len(parts) == 0 {
		return "nothing: fits here (another quota refuses it, or it is about to be requeued)"
	}
	return strings.Join(parts, ", ")
}

// where names the limit a shortfall is under: "cluster member1", "cluster group eu", or "" for the namespace-wide
// hard, as the webhook's refusal names them.
func where(s Shortfall) string {
	return limitPlace(s.Cluster, s.Group)
}

func amounts(m map[string]string) string {
	parts := make([]string, 0, len(m))
	for _, name := range sortedKeys(m) {
		parts = append(parts, name+" "+m[name])
	}
	return strings.Join(parts, ", ")
}

// WriteRows renders `list` and `top` as `kubectl get` renders a table; the namespace column only across
// namespaces, as kubectl does. A business quota is marked "(business)" after its name; one read as cluster admins
// read it (a KarmadaBusinessQuota, over several namespaces) has "*" for its namespace.
func WriteRows(out io.Writer, rows []Row, withNamespace bool) error {
	tw := printers.GetNewTabWriter(out)
	header := "QUOTA\tRESOURCE\tUSED\tHARD\tUSED%\tSTATUS\n"
	if withNamespace {
		header = "NAMESPACE\t" + header
	}
	if _, err := io.WriteString(tw, header); err != nil {
		return err
	}
	for _, r := range rows {
		name, namespace := r.Quota, r.Namespace
		if r.Kind != "" {
			name += " (business)"
		}
		if r.Kind == KindBusinessQuota {
			namespace = "*"
		}
		line := fmt.Sprintf("%s\t%s\t%s\t%s\t%d%%\t%s\n", name, r.Resource, r.Used, r.Hard, r.UsedPercent, r.Status)
		if withNamespace {
			line = namespace + "\t" + line
		}
		if err := printers.WriteEscaped(tw, line); err != nil {
			return err
		}
	}
	return tw.Flush()
}

// WriteWhy renders what `why` found: a describe block about the workload and its binding, a verdict in one
// line, then a table per refusing quota (or per charging quota).
func WriteWhy(out io.Writer, why Why) error {
	w := newDescribeWriter(out)
	wl := why.Workload
	w.line(0, "Workload:\t%s %s/%s\n", wl.Kind, wl.Namespace, wl.Name)
	if why.Binding != "" {
		w.line(0, "Binding:\t%s\n", why.Binding)
	} else {
		w.line(0, "Binding:\t<none>\n")
	}
	if c := why.Condition; c != nil {
		w.line(0, "Scheduled:\t%s (%s)\n", c.Status, c.Reason)
		if c.Message != "" {
			w.line(0, "Message:\t%s\n", c.Message)
		}
	} else if why.Binding != "" {
		w.line(0, "Scheduled:\t<no condition>\n")
	}
	if why.Asks != nil {
		w.line(0, "Asks for:\t%s\n", asksLine(*why.Asks))
	}
	w.line(0, "Verdict:\t%s\n", verdictLine(why))
	if why.EventsUnknown != "" {
		w.line(0, "Works:\t<unknown: %s, so whether quota refuses what a member cluster would run is not known>\n", why.EventsUnknown)
	}
	if r := why.WorksRefused; r != nil {
		w.line(0, "Works:\t%s\n", refusedLine(*r))
	}
	if err := w.flush(); err != nil {
		return err
	}

	if r := why.WorksRefused; r != nil {
		for _, m := range r.Members {
			w := newDescribeWriter(out)
			w.line(0, "\n")
			who := "Quota"
			if len(m.Quotas)+len(m.BusinessQuotas) > 0 {
				who = capitalised(quotasPhrase(m.Quotas, m.BusinessQuotas))
			}
			if m.Cluster != "" {
				w.line(0, "%s refuses what member cluster %s would run:\n", who, m.Cluster)
			} else {
				w.line(0, "%s refuses what member clusters would run:\n", who)
			}
			if m.Work != "" {
				w.line(1, "Work:\t%s\n", m.Work)
			}
			w.line(1, "Message:\t%s\n", m.Message)
			w.line(1, "Fix:\t%s\n", m.Fix)
			if err := w.flush(); err != nil {
				return err
			}
		}
	}

	for _, r := range why.Refusals {
		w := newDescribeWriter(out)
		w.line(0, "\n")
		title := quotaTitle(r.Quota, r.Business)
		if r.Invalid != "" {
			w.line(0, "%s is invalid, so every binding write in the namespace is refused: %s\n", title, r.Invalid)
			if err := w.flush(); err != nil {
				return err
			}
			continue
		}
		if r.Unknown != "" {
			// Named by the refusal, not readable now: what the refusal said, said as such.
			w.line(0, "%s refused it at the scheduler's last attempt, with these figures (what it has available now is unknown: %s):\n", title, r.Unknown)
		} else {
			w.line(0, "%s refuses it:\n", title)
		}
		if slices.ContainsFunc(r.Short, func(s Shortfall) bool { return where(s) != "" }) {
			// A cluster's or a group's limit: what the refused placement asked there, against that limit.
			w.line(1, "Resource\tWhere\tNeed\tAvailable\tShort by\tHard\tCan fit\n")
			w.line(1, "--------\t-----\t----\t---------\t--------\t----\t-------\n")
			for _, s := range r.Short {
				place, fit := where(s), "once usage drops by "+s.ShortBy
				switch {
				case place == "":
					place = "all clusters"
					if s.NeverFits {
						fit = "never: the need alone exceeds hard"
					}
				case s.NeverFits:
					fit = "not as placed: the need there alone exceeds hard"
				default:
					fit = "once usage there drops by " + s.ShortBy
				}
				w.line(1, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Resource, place, s.Need, s.Available, s.ShortBy, s.Hard, fit)
			}
		} else if len(r.Short) > 0 {
			w.line(1, "Resource\tNeed\tAvailable\tShort by\tHard\tCan fit\n")
			w.line(1, "--------\t----\t---------\t--------\t----\t-------\n")
			for _, s := range r.Short {
				fit := "once usage drops by " + s.ShortBy
				if s.NeverFits {
					fit = "never: the need alone exceeds hard"
				}
				w.line(1, "%s\t%s\t%s\t%s\t%s\t%s\n", s.Resource, s.Need, s.Available, s.ShortBy, s.Hard, fit)
			}
		}
		if len(r.MissingRequests) > 0 {
			w.line(1, "It places replicas without requests for %s, which the quota limits: set them in the workload's pod template.\n",
				strings.Join(r.MissingRequests, ", "))
		}
		if err := w.flush(); err != nil {
			return err
		}
	}

	for _, c := range why.Charges {
		w := newDescribeWriter(out)
		w.line(0, "\n")
		title := quotaTitle(c.Quota, c.Business)
		switch {
		case !c.Selected:
			class := "none"
			if why.PriorityClass != "" {
				class = why.PriorityClass
			}
			w.line(0, "%s does not charge it: its scope does not select the workload's priority class (%s).\n", title, class)
		case len(c.Total) == 0:
			w.line(0, "%s charges its placement nothing: it limits nothing its binding places.\n", title)
		default:
			w.line(0, "%s charges it:\n", title)
			header, dashes := "Resource\tTotal", "--------\t-----"
			for _, cl := range c.Clusters {
				header += "\t" + cl.Cluster
				dashes += "\t" + strings.Repeat("-", len(cl.Cluster))
			}
			w.line(1, "%s\n", header)
			w.line(1, "%s\n", dashes)
			// The namespace-wide limits, and what only a cluster's or a group's limit counts ("-" in Total).
			names := map[string]bool{}
			for name := range c.Total {
				names[name] = true
			}
			for _, cl := range c.Clusters {
				for name := range cl.Used {
					names[name] = true
				}
			}
			for _, name := range sortedKeys(names) {
				row := name + "\t" + orDefault(c.Total[name], "-")
				for _, cl := range c.Clusters {
					v, ok := cl.Used[name]
					if !ok {
						// Object counts are federation-wide, not per cluster.
						v = "-"
					}
					row += "\t" + v
				}
				w.line(1, "%s\n", row)
			}
			for _, cl := range c.Clusters {
				if len(cl.Evicting) == 0 {
					continue
				}
				until := "until their replacement is healthy or the grace period ends"
				if cl.EvictingHeld {
					until = "until someone releases them (held)"
				}
				w.line(1, "On %s, Karmada's graceful eviction keeps %s of it %s.\n", cl.Cluster, amounts(cl.Evicting), until)
			}
		}
		if err := w.flush(); err != nil {
			return err
		}
	}
	return nil
}

// asksLine renders what a workload asks for, and what is placed.
func asksLine(a Asks) string {
	var s string
	switch {
	case len(a.Components) > 0:
		parts := make([]string, len(a.Components))
		for i, c := range a.Components {
			parts[i] = fmt.Sprintf("%s %d × (%s)", c.Name, c.Replicas, amounts(c.PerReplica))
		}
		s = strings.Join(parts, " + ") + " on each cluster"
	case len(a.PerReplica) > 0:
		s = fmt.Sprintf("%s × (%s)", replicas(a.Replicas), amounts(a.PerReplica))
	default:
		s = replicas(a.Replicas) + ", no requests"
	}
	if a.Placed == 0 {
		return s + ", none placed"
	}
	return s + fmt.Sprintf(", %d placed", a.Placed)
}

func replicas(n int32) string {
	if n == 1 {
		return "1 replica"
	}
	return fmt.Sprintf("%d replicas", n)
}

// verdictLine answers the question in one line.
func verdictLine(why Why) string {
	switch why.Verdict {
	case NoBinding:
		return "no ResourceBinding binds it: no PropagationPolicy selects it, so Karmada does not schedule it and no quota is involved"
	case NotScheduledYet:
		return "not scheduled yet: the scheduler has not acted on its binding"
	case NotScheduled:
		return "not scheduled, for a reason other than quota (see Scheduled and Message)"
	case WorkRefused:
		var members []string
		if r := why.WorksRefused; r != nil {
			for _, m := range r.Members {
				if m.Cluster != "" {
					members = append(members, m.Cluster)
				}
			}
		}
		switch len(members) {
		case 0:
			return "scheduled, but quota refuses what member clusters would run: Karmada cannot sync its Works and retries; the members keep what they ran before"
		case 1:
			return fmt.Sprintf("scheduled, but quota refuses what member cluster %s would run: Karmada cannot sync its Work there and retries; the member keeps what it ran before", members[0])
		}
		return fmt.Sprintf("scheduled, but quota refuses what member clusters %s would run: Karmada cannot sync its Works there and retries; the members keep what they ran before", strings.Join(members, ", "))
	case Scheduled:
		var charging, business []string
		for _, c := range why.Charges {
			if !c.Selected || len(c.Total) == 0 {
				continue
			}
			if c.Business {
				business = append(business, c.Quota)
			} else {
				charging = append(charging, c.Quota)
			}
		}
		if len(charging)+len(business) == 0 {
			return "scheduled; no quota charges its placement"
		}
		return "scheduled; charged by " + quotasPhrase(charging, business)
	}
	// QuotaExceeded.
	if len(why.Refusals) == 0 {
		return "refused by quota at the scheduler's last attempt, but no quota refuses it now: usage dropped since, and the controller requeues it"
	}
	// The quotas that refuse it now; then those named by the refusal whose state now is unknown.
	var names, business, said []string
	for _, r := range why.Refusals {
		switch {
		case r.Unknown != "":
			said = append(said, r.Quota+limitsPhrase(r))
		case r.Business:
			business = append(business, r.Quota+limitsPhrase(r))
		default:
			names = append(names, r.Quota+limitsPhrase(r))
		}
	}
	var parts []string
	if refusing := len(names) + len(business); refusing > 0 {
		verb := "refuses"
		if refusing > 1 {
			verb = "refuse"
		}
		parts = append(parts, fmt.Sprintf("%s %s it", quotasPhrase(names, business), verb))
	}
	if len(said) > 0 {
		parts = append(parts, quotasPhrase(nil, said)+" refused it at the scheduler's last attempt")
	}
	return fmt.Sprintf("not scheduled: %s; %s", strings.Join(parts, ", and "), outlook(why.Refusals))
}

// refusedLine says when Karmada reported the refusal, and when it last synced the binding's Works.
func refusedLine(r WorksRefused) string {
	s := "refused"
	switch {
	case r.Count > 1 && r.FirstSeen != "" && r.FirstSeen != r.LastSeen:
		s += fmt.Sprintf(" %d times from %s to %s", r.Count, r.FirstSeen, r.LastSeen)
	case r.Count > 1:
		s += fmt.Sprintf(" %d times, last at %s", r.Count, r.LastSeen)
	case r.LastSeen != "":
		s += " at " + r.LastSeen
	}
	s += fmt.Sprintf(" (event %s, SyncWorkFailed)", r.Event)
	if r.LastSynced != "" {
		return s + "; last synced " + r.LastSynced
	}
	return s + "; no successful sync recorded"
}

// limitsPhrase says, after a refusing quota's name, which of its cluster and group limits refuse: "" when only its
// namespace-wide hard does.
func limitsPhrase(r Refusal) string {
	var places []string
	total := len(r.MissingRequests) > 0
	for _, s := range r.Short {
		place := where(s)
		if place == "" {
			total = true
		} else if !slices.Contains(places, place) {
			places = append(places, place)
		}
	}
	if len(places) == 0 {
		return ""
	}
	if total {
		return " (namespace-wide and in " + strings.Join(places, ", ") + ")"
	}
	return " (in " + strings.Join(places, ", ") + ")"
}

// outlook says what it takes for a refused workload to fit, the hardest obstacle first.
func outlook(refusals []Refusal) string {
	var invalid, never, unrequested, neverThere []string
	for _, r := range refusals {
		name := r.Quota
		if r.Business {
			name = "business quota " + r.Quota
		}
		if r.Invalid != "" {
			invalid = append(invalid, name)
		}
		if len(r.MissingRequests) > 0 {
			unrequested = append(unrequested, name)
		}
		neverInAll := false
		for _, s := range r.Short {
			if !s.NeverFits {
				continue
			}
			if place := where(s); place == "" {
				neverInAll = true
			} else if there := name + " in " + place; !slices.Contains(neverThere, there) {
				neverThere = append(neverThere, there)
			}
		}
		if neverInAll {
			never = append(never, name)
		}
	}
	switch {
	case len(invalid) > 0:
		return "nothing fits until " + strings.Join(invalid, ", ") + " is fixed"
	case len(never) > 0:
		return "it can never fit under " + strings.Join(never, ", ") + ": its need alone exceeds hard"
	case len(unrequested) > 0:
		return "its replicas must request what " + strings.Join(unrequested, ", ") + " limits"
	case len(neverThere) > 0:
		return "as the scheduler placed it, it can never fit under " + strings.Join(neverThere, ", ") +
			": what it places there alone exceeds the limit there"
	}
	return "it fits once usage drops"
}

// quotasPhrase names quotas of the namespace, then business quotas: "quota a", "quotas a, b", "quota a and business
// quota shop".
func quotasPhrase(quotas, business []string) string {
	var parts []string
	switch len(quotas) {
	case 0:
	case 1:
		parts = append(parts, "quota "+quotas[0])
	default:
		parts = append(parts, "quotas "+strings.Join(quotas, ", "))
	}
	switch len(business) {
	case 0:
	case 1:
		parts = append(parts, "business quota "+business[0])
	default:
		parts = append(parts, "business quotas "+strings.Join(business, ", "))
	}
	return strings.Join(parts, " and ")
}

// quotaTitle names one quota at the start of a sentence: "Quota a", "Business quota shop".
func quotaTitle(name string, business bool) string {
	if business {
		return "Business quota " + name
	}
	return "Quota " + name
}

func capitalised(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// WriteBusinessQuotas renders `business` without a name as `kubectl get` renders a table: each business quota,
// how many namespaces it selects, used against hard per limited resource, its status and its selector.
func WriteBusinessQuotas(out io.Writer, business []BusinessQuota) error {
	tw := printers.GetNewTabWriter(out)
	if _, err := io.WriteString(tw, "NAME\tNAMESPACES\tUSED/HARD\tSTATUS\tSELECTOR\n"); err != nil {
		return err
	}
	for _, b := range business {
		parts := make([]string, len(b.Resources))
		for i, r := range b.Resources {
			parts[i] = fmt.Sprintf("%s %s/%s", r.Name, r.Used, r.Hard)
		}
		line := fmt.Sprintf("%s\t%d\t%s\t%s\t%s\n", b.Name, b.NamespaceCount, orDefault(strings.Join(parts, ", "), "<none>"), b.Status, b.NamespaceSelector)
		if err := printers.WriteEscaped(tw, line); err != nil {
			return err
		}
	}
	return tw.Flush()
}
