package report

import (
	"fmt"
	"math/big"
	"sort"
	"strings"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/quota"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
)

// Ledgers are the ledger objects of quotas, by namespace and name; nil when they could not be read.
type Ledgers map[types.NamespacedName]*quotav1alpha1.KarmadaQuotaLedger

// Of returns q's ledger object, nil when there is none (or it could not be read: the quota's status then shows what
// is reserved in sum, and no reservation one by one).
func (l Ledgers) Of(q *quotav1alpha1.KarmadaQuota) *quotav1alpha1.KarmadaQuotaLedger {
	return quota.LedgerOf(l[types.NamespacedName{Namespace: q.Namespace, Name: q.Name}], q)
}

// Describe reports one quota: its limits, use and currency, per member cluster, its reservations, and the
// namespace's bindings waiting on it. stored is the quota's ledger object (Ledgers.Of); bindings are the quota's
// namespace's ResourceBindings.
func Describe(q *quotav1alpha1.KarmadaQuota, stored *quotav1alpha1.KarmadaQuotaLedger, bindings []workv1alpha2.ResourceBinding) Quota {
	out := Quota{Namespace: q.Namespace, Name: q.Name, Scopes: scopes(q.Spec.ScopeSelector), Status: StatusOf(q)}
	ledger, err := quota.NewLedger(q, stored)
	if err != nil {
		// The webhook refuses every binding write under such a quota and the controller reports it NotReady
		// (InvalidSpec), which Status already says: show the limits as written.
		out.Resources = asWritten(q)
		out.Reservations, out.FoldedReservations = reservations(q, stored, nil)
		return out
	}
	hard, used, reserved := ledger.Hard(), ledger.Used(), ledger.Reserved()
	available := ledger.Headroom(used)
	if stored == nil {
		// Without the ledger (not written yet, or not readable by this user) the status's sum of the reservations
		// is what is known of them.
		shown := ledger.ParseStatus(q.Status.Reserved)
		for name := range hard {
			if extra := shown[name] - reserved[name]; extra > 0 {
				available[name] -= extra
				reserved[name] = shown[name]
			}
		}
	}
	for _, name := range hard.Names() {
		out.Resources = append(out.Resources, Resource{
			Name:        string(ledger.AuthorName(name)),
			Used:        resources.Human(name, used[name]),
			Reserved:    resources.Human(name, reserved[name]),
			Hard:        resources.Human(name, hard[name]),
			Available:   resources.Human(name, available[name]),
			UsedPercent: Percent(used[name], hard[name]),
		})
	}
	sort.Slice(out.Resources, func(i, j int) bool { return out.Resources[i].Name < out.Resources[j].Name })

	out.Clusters = clusterUsages(q, ledger)
	out.ClusterGroups = clusterGroups(q, ledger)

	for i := range bindings {
		rb := &bindings[i]
		// The controller's rule (Ledger.WaitsOn): the bindings it requeues when this quota gains headroom.
		if _, waits := ledger.WaitsOn(rb); !waits {
			continue
		}
		a, err := assess(ledger, rb)
		if err != nil {
			continue
		}
		w := Waiting{
			Binding:         rb.Name,
			Workload:        workloadOf(rb),
			Asks:            asksOf(rb),
			Needs:           render(ledger, a.need),
			Short:           append(a.short, limitShortfalls(q, ledger, scheduledMessage(rb))...),
			MissingRequests: a.missingRequests,
		}
		if q.Kind == KindBusinessQuota {
			// Its bindings are in every namespace of the business.
			w.Namespace = rb.Namespace
		}
		out.Waiting = append(out.Waiting, w)
	}
	sort.Slice(out.Waiting, func(i, j int) bool {
		a, b := out.Waiting[i], out.Waiting[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Binding < b.Binding
	})
	out.Reservations, out.FoldedReservations = reservations(q, stored, ledger)
	return out
}

// reservations lists a quota's outstanding reservations, from its ledger object (stored) and any an earlier
// release's webhook listed in its status: a binding's as the write of that binding, a Work's as what its member
// cluster runs beyond the binding's placement. Amounts in the author's names, rendered through the ledger when
// the quota parses, as written otherwise.
func reservations(q *quotav1alpha1.KarmadaQuota, stored *quotav1alpha1.KarmadaQuotaLedger, ledger *quota.Ledger) ([]Reservation, *FoldedReservations) {
	listed := q.Status.Reservations
	f := q.Status.FoldedReservations
	if stored != nil {
		listed = append(append([]quotav1alpha1.Reservation(nil), stored.Reservations...), listed...)
		if stored.FoldedReservations != nil {
			f = stored.FoldedReservations
		}
	}
	var out []Reservation
	seen := map[quota.Key]bool{}
	for _, r := range listed {
		// The controller moves a reservation from the status to the ledger: for a moment it is in both.
		if key := (quota.Key{UID: r.ReservedBy.UID, Generation: r.Generation}); seen[key] {
			continue
		} else {
			seen[key] = true
		}
		owner := r.ReservedBy
		res := Reservation{
			Kind: owner.Kind, APIVersion: owner.APIVersion, Namespace: owner.Namespace, Name: owner.Name,
			Generation: r.Generation, Reserved: reservedAmounts(ledger, r.Reserved), Clusters: reservationClusters(ledger, r.Clusters),
			Expires: timestamp(r.ExpirationTime.Time),
		}
		if owner.Kind == ReservedByWork {
			res.Cluster = clusterOf(owner.Namespace)
		}
		out = append(out, res)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if (a.Kind == ReservedByWork) != (b.Kind == ReservedByWork) {
			return b.Kind == ReservedByWork
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.Generation < b.Generation
	})
	var folded *FoldedReservations
	if f != nil && f.Count > 0 {
		folded = &FoldedReservations{Count: f.Count, Reserved: reservedAmounts(ledger, f.Reserved), Expires: timestamp(f.ExpirationTime.Time)}
	}
	return out, folded
}

// StatusOf says whether a quota's status is current.
func StatusOf(q *quotav1alpha1.KarmadaQuota) Status {
	s := Status{Ready: string(metav1.ConditionUnknown), Generation: q.Generation, ObservedGeneration: q.Status.ObservedGeneration}
	ready := meta.FindStatusCondition(q.Status.Conditions, quotav1alpha1.ConditionReady)
	if ready != nil {
		s.Ready, s.Reason, s.Message = string(ready.Status), ready.Reason, ready.Message
	}
	switch {
	case ready == nil:
		s.State = NoStatus
	case ready.Status != metav1.ConditionTrue:
		s.State = NotReady
	case q.Status.ObservedGeneration < q.Generation:
		s.State = Behind
	default:
		s.State = Current
	}
	return s
}

// Rows reports every limited resource of every quota, sorted by namespace, quota and resource, as their status
// last counted them.
func Rows(quotas []quotav1alpha1.KarmadaQuota) []Row {
	var rows []Row
	for i := range quotas {
		q := &quotas[i]
		state := StatusOf(q).State
		for _, r := range Describe(q, nil, nil).Resources {
			rows = append(rows, Row{
				Namespace: q.Namespace, Quota: q.Name, Resource: r.Name,
				Used: r.Used, Reserved: r.Reserved, Hard: r.Hard, UsedPercent: r.UsedPercent, Status: state,
			})
		}
	}
	SortByName(rows)
	return rows
}

// SortByName orders rows by namespace, quota and resource: `list`, where a quota's resources stay together.
func SortByName(rows []Row) {
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Quota != b.Quota {
			return a.Quota < b.Quota
		}
		return a.Resource < b.Resource
	})
}

// SortFullest orders rows fullest first, then by name: `top`, where what is about to refuse comes first
// whatever its namespace.
func SortFullest(rows []Row) {
	SortByName(rows)
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].UsedPercent > rows[j].UsedPercent })
}

// Percent is used / hard in whole percent, rounded down so that 100 means full. A hard of zero is full: nothing
// more fits.
func Percent(used, hard int64) int64 {
	if hard <= 0 {
		return 100
	}
	if used <= 0 {
		return 0
	}
	p := new(big.Int).Mul(big.NewInt(used), big.NewInt(100))
	return p.Quo(p, big.NewInt(hard)).Int64()
}

// AppliedBusinessQuotas are those of a namespace: the business quotas that apply to it, as it sees them.
type AppliedBusinessQuotas struct {
	Items []quotav1alpha1.AppliedBusinessQuota
	// Unknown says why they could not be read (no right to list them); empty when they were.
	Unknown string
}

// Explain says why a workload is or is not scheduled, as far as quotas go. rb is its binding, nil when it has
// none; quotas are its namespace's, applied the business quotas that apply to it; events are the binding's, which
// say whether quota refuses the Works of a placed workload (see worksRefused).
func Explain(workload Workload, rb *workv1alpha2.ResourceBinding, quotas []quotav1alpha1.KarmadaQuota, applied AppliedBusinessQuotas, ledgers Ledgers, events Events) Why {
	w := Why{Workload: workload}
	if rb == nil {
		w.Verdict = NoBinding
		return w
	}
	w.Binding = rb.Name
	asks := asksOf(rb)
	w.Asks = &asks
	if rr := rb.Spec.ReplicaRequirements; rr != nil {
		w.PriorityClass = rr.PriorityClassName
	}
	cond := meta.FindStatusCondition(rb.Status.Conditions, workv1alpha2.Scheduled)
	if cond != nil {
		w.Condition = &Condition{Status: string(cond.Status), Reason: cond.Reason, Message: cond.Message}
	}
	sorted := append([]quotav1alpha1.KarmadaQuota(nil), quotas...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	// Then the business quotas, by name, as admission decides on them.
	views := append([]quotav1alpha1.AppliedBusinessQuota(nil), applied.Items...)
	sort.Slice(views, func(i, j int) bool { return views[i].Name < views[j].Name })
	for i := range views {
		sorted = append(sorted, *appliedAsQuota(&views[i]))
	}
	switch {
	case cond == nil:
		w.Verdict = NotScheduledYet
	case usage.WaitingForQuota(rb):
		w.Verdict = QuotaExceeded
		for i := range sorted {
			if r, refused := refusal(&sorted[i], ledgers.Of(&sorted[i]), rb, cond.Message); refused {
				w.Refusals = append(w.Refusals, r)
			}
		}
		w.Refusals = append(w.Refusals, unreadBusinessRefusals(cond.Message, applied, rb.Namespace)...)
	case cond.Status == metav1.ConditionTrue:
		w.Verdict = Scheduled
		for i := range sorted {
			if c, ok := charge(&sorted[i], rb); ok {
				w.Charges = append(w.Charges, c)
			}
		}
		// Placed is not run: each member's Work is admitted on its own, and may be refused.
		if events.Unknown != "" {
			w.EventsUnknown = events.Unknown
		} else if refused := worksRefused(events.Items, workload.Kind); refused != nil {
			w.Verdict = WorkRefused
			w.WorksRefused = refused
		}
	default:
		w.Verdict = NotScheduled
	}
	return w
}

// refusal recomputes whether q refuses to place all of rb's replicas, and adds what q's cluster and group limits
// lack that message (the binding's Scheduled condition's) names.
func refusal(q *quotav1alpha1.KarmadaQuota, stored *quotav1alpha1.KarmadaQuotaLedger, rb *workv1alpha2.ResourceBinding, message string) (Refusal, bool) {
	ledger, err := quota.NewLedger(q, stored)
	if err != nil {
		// The webhook refuses every binding write in the namespace while a quota is invalid.
		return Refusal{Quota: q.Name, Invalid: err.Error()}, true
	}
	a, err := assess(ledger, rb)
	if err != nil {
		return Refusal{}, false
	}
	limits := limitShortfalls(q, ledger, message)
	if !a.refused && len(limits) == 0 {
		return Refusal{}, false
	}
	return Refusal{Quota: q.Name, Business: ledger.Business(), Short: append(a.short, limits...), MissingRequests: a.missingRequests}, true
}

// unreadBusinessRefusals are the business quotas a refusal message names that none of the namespace's
// AppliedBusinessQuotas shows (they could not be read; or the business quota no longer selects the namespace, or
// the controller has not written its view there yet), with what the message said of each: the scheduler's last
// attempt, named rather than lost.
func unreadBusinessRefusals(message string, applied AppliedBusinessQuotas, namespace string) []Refusal {
	read := map[string]bool{}
	for i := range applied.Items {
		read[applied.Items[i].Name] = true
	}
	var out []Refusal
	for _, d := range messageDenials(message) {
		if !d.business || read[d.quota] {
			continue
		}
		read[d.quota] = true
		unknown := applied.Unknown
		if unknown == "" {
			unknown = fmt.Sprintf("namespace %s has no AppliedBusinessQuota %s: the business quota no longer selects it, "+
				"or the controller has not written it there yet", namespace, d.quota)
		}
		out = append(out, Refusal{Quota: d.quota, Business: true, Unknown: unknown, Short: d.short, MissingRequests: d.missing})
	}
	return out
}

// scheduledMessage is the message of rb's Scheduled condition: the refusal, when a quota refused it.
func scheduledMessage(rb *workv1alpha2.ResourceBinding) string {
	if c := meta.FindStatusCondition(rb.Status.Conditions, workv1alpha2.Scheduled); c != nil {
		return c.Message
	}
	return ""
}

// charge is what q counts for a scheduled binding; false when q cannot be parsed (Status says so elsewhere).
func charge(q *quotav1alpha1.KarmadaQuota, rb *workv1alpha2.ResourceBinding) (Charge, bool) {
	// What a binding is charged depends on the quota's spec alone.
	ledger, err := quota.NewLedger(q, nil)
	if err != nil {
		return Charge{}, false
	}
	u, err := usage.Of(rb)
	if err != nil {
		return Charge{}, false
	}
	c := Charge{Quota: q.Name, Business: ledger.Business(), Selected: !ledger.Selector.Scoped()}
	for _, p := range u.Placed {
		if ledger.Selector.Matches(p.PriorityClass) {
			c.Selected = true
		}
	}
	counted := u.Charge(ledger.Selector)
	if total := ledger.Limited(counted.Total); len(total) > 0 {
		c.Total = render(ledger, total)
	}
	held := map[string]bool{}
	for _, e := range u.Evictions {
		if e.Held {
			held[e.Cluster] = true
		}
	}
	for _, cluster := range sortedKeys(counted.Clusters) {
		used := ledger.OnCluster(counted.Clusters[cluster])
		if len(used) == 0 {
			continue
		}
		cu := ClusterUsage{Cluster: cluster, Used: renderOnCluster(ledger, used)}
		if evicting := ledger.Limited(counted.Evicting[cluster]).Positive(); len(evicting) > 0 {
			cu.Evicting, cu.EvictingHeld = render(ledger, evicting), held[cluster]
		}
		c.Clusters = append(c.Clusters, cu)
	}
	return c, true
}

// assessment is what placing all of a binding's replicas asks of one quota, decided as the webhook decides.
type assessment struct {
	need            resources.List
	refused         bool
	short           []Shortfall
	missingRequests []string
}

// assess runs the webhook's decision (Ledger.Demand and Ledger.Check) on the write that would place all of rb's
// replicas, and adds the figures a person needs: what is available and how much is missing.
func assess(ledger *quota.Ledger, rb *workv1alpha2.ResourceBinding) (assessment, error) {
	need, err := ledger.StillNeeded(rb)
	if err != nil {
		return assessment{}, err
	}
	current, err := usage.Of(rb)
	if err != nil {
		return assessment{}, err
	}
	wanted, err := usage.Wanted(rb)
	if err != nil {
		return assessment{}, err
	}
	// The key of a write not made yet: no reservation of its own is discounted.
	key := quota.Key{UID: rb.UID, Generation: rb.Generation + 1}
	owner := quotav1alpha1.ReservationOwner{APIVersion: workv1alpha2.SchemeGroupVersion.String(), Kind: "ResourceBinding", Name: rb.Name, UID: rb.UID}
	demand := ledger.Demand(key, owner, wanted, &current)
	a := assessment{need: need}
	denial := ledger.Check(demand)
	if denial == nil {
		return a, nil
	}
	hard, available := ledger.Hard(), ledger.Headroom(ledger.Used())
	for _, e := range denial.Exceeded {
		if e.Where != "" {
			// All replicas placed on no cluster in particular: where the scheduler would place them is not known
			// here, so a cluster's or a group's limit is read from its refusal instead (limitShortfalls).
			continue
		}
		a.refused = true
		name, _, err := resources.Canonical(e.Resource)
		if err != nil {
			continue
		}
		inc := demand.Increase[name]
		a.short = append(a.short, Shortfall{
			Resource:  string(e.Resource),
			Need:      resources.Human(name, inc),
			Available: resources.Human(name, available[name]),
			ShortBy:   resources.Human(name, resources.Sub(inc, available[name])),
			Hard:      resources.Human(name, hard[name]),
			NeverFits: e.NeverFits,
		})
	}
	for _, m := range denial.Missing {
		a.refused = true
		a.missingRequests = append(a.missingRequests, string(m))
	}
	return a, nil
}

func workloadOf(rb *workv1alpha2.ResourceBinding) Workload {
	r := rb.Spec.Resource
	return Workload{APIVersion: r.APIVersion, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}
}

// asksOf reads what a binding's workload asks for. Requests are rendered under their request names so that
// 1500m of CPU and 1536Mi of memory print as they do in a quota.
func asksOf(rb *workv1alpha2.ResourceBinding) Asks {
	a := Asks{Replicas: rb.Spec.Replicas}
	for _, c := range rb.Spec.Clusters {
		a.Placed += c.Replicas
	}
	if rr := rb.Spec.ReplicaRequirements; rr != nil {
		a.PerReplica = requests(rr.ResourceRequest)
	}
	for _, c := range rb.Spec.Components {
		comp := Component{Name: c.Name, Replicas: c.Replicas}
		if c.ReplicaRequirements != nil {
			comp.PerReplica = requests(c.ReplicaRequirements.ResourceRequest)
		}
		a.Components = append(a.Components, comp)
	}
	return a
}

func requests(list corev1.ResourceList) map[string]string {
	if len(list) == 0 {
		return nil
	}
	out := make(map[string]string, len(list))
	for name, q := range list {
		canonical := resources.RequestName(name)
		out[string(name)] = resources.Human(canonical, resources.Value(canonical, q))
	}
	return out
}

// render converts canonical amounts to the quota author's names, as people read them.
func render(ledger *quota.Ledger, list resources.List) map[string]string {
	out := make(map[string]string, len(list))
	for name, v := range list {
		out[string(ledger.AuthorName(name))] = resources.Human(name, v)
	}
	return out
}

// asWritten lists a quota's limits as written, for a quota the accounting cannot parse.
func asWritten(q *quotav1alpha1.KarmadaQuota) []Resource {
	var out []Resource
	for name, hard := range q.Spec.Hard {
		used, reserved := q.Status.Used[name], q.Status.Reserved[name]
		out = append(out, Resource{Name: string(name), Used: used.String(), Reserved: reserved.String(), Hard: hard.String()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// scopes explains a scope selector's expressions.
func scopes(sel *quotav1alpha1.ScopeSelector) []Scope {
	if sel == nil {
		return nil
	}
	var out []Scope
	for _, e := range sel.MatchExpressions {
		values := append([]string(nil), e.Values...)
		sort.Strings(values)
		out = append(out, Scope{
			ScopeName: string(e.ScopeName), Operator: string(e.Operator), Values: values,
			Meaning: scopeMeaning(e.ScopeName, e.Operator, values),
		})
	}
	return out
}

func scopeMeaning(scope corev1.ResourceQuotaScope, op corev1.ScopeSelectorOperator, values []string) string {
	if scope != corev1.ResourceQuotaScopePriorityClass {
		return fmt.Sprintf("Scope %s %s %s: not one a ResourceBinding carries.", scope, op, strings.Join(values, ", "))
	}
	switch op {
	case corev1.ScopeSelectorOpIn:
		if len(values) == 1 {
			return fmt.Sprintf("Matches replicas whose PriorityClass is %s.", values[0])
		}
		return fmt.Sprintf("Matches replicas whose PriorityClass is one of %s.", strings.Join(values, ", "))
	case corev1.ScopeSelectorOpNotIn:
		return fmt.Sprintf("Matches replicas whose PriorityClass is not %s (including replicas that name none).", strings.Join(values, " or "))
	case corev1.ScopeSelectorOpExists:
		return "Matches replicas that name a PriorityClass."
	case corev1.ScopeSelectorOpDoesNotExist:
		return "Matches replicas that name no PriorityClass."
	}
	return fmt.Sprintf("PriorityClass %s %s: an operator no quota accepts.", op, strings.Join(values, ", "))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
