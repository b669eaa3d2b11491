// Package report turns KarmadaQuotas and ResourceBindings into what `kubectl karmada quota` prints: the output
// types below, which `-o json` and `-o yaml` print as they are, and their text rendering. It does no I/O and
// reuses the accounting of the webhook and the controller (pkg/usage, pkg/quota), so what the plugin says is
// what admission decides.
//
// The output types are a stable interface for scripts: fields are only ever added. Every amount is a string in
// Kubernetes quantity syntax, exact and readable by resource.ParseQuantity: CPU as Kubernetes prints it (1500m,
// 2), bytes in binary units when they divide evenly (1536Mi), counts as plain integers. Resource names are the
// ones the quota's author wrote in spec.hard (cpu or requests.cpu).
package report

// Quota is one KarmadaQuota as `describe` shows it. `describe NAME -o json` prints one; `describe -o json`
// prints a QuotaList.
type Quota struct {
	// Kind is empty for a KarmadaQuota, the namespace's own. A business quota, which limits the namespaces of a
	// business together, is KindBusinessQuota as cluster admins read it, or KindAppliedBusinessQuota as a namespace
	// sees it: its figures are then the business's, and Resources[].NamespaceUsed the namespace's part.
	Kind string `json:"kind,omitempty"`
	// Namespace is the quota's; for an AppliedBusinessQuota the namespace it applies to; empty for a
	// KarmadaBusinessQuota.
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Business is what only a KarmadaBusinessQuota has: the namespaces it selects and what each uses.
	Business *Business `json:"business,omitempty"`
	// Scopes are the scope selector's expressions, each with its meaning; none for a quota over every binding.
	Scopes []Scope `json:"scopes,omitempty"`
	// Status says whether the figures below are current.
	Status Status `json:"status"`
	// Resources lists every limited resource, sorted by name.
	Resources []Resource `json:"resources"`
	// Clusters is what the namespace uses in each member cluster, sorted by cluster name, with each cluster's own
	// limit where it has one (spec.clusters): a limited cluster is listed whether it uses anything or not.
	Clusters []ClusterUsage `json:"clusters,omitempty"`
	// ClusterGroups are the quota's limits on groups of member clusters (spec.clusterGroups), in spec order, each
	// with the clusters it selects and what they use together.
	ClusterGroups []ClusterGroup `json:"clusterGroups,omitempty"`
	// MemberUsageUnknown says why use per member cluster is not known, for an AppliedBusinessQuota: it carries the
	// business's totals, not its use in each member cluster. Clusters and ClusterGroups then hold the limits only
	// (Hard), and no Used. Empty when use per member cluster is known.
	MemberUsageUnknown string `json:"memberUsageUnknown,omitempty"`
	// Waiting lists the namespace's bindings the scheduler could not place because a quota refused them, whose
	// needs this quota limits, sorted by binding name.
	Waiting []Waiting `json:"waiting,omitempty"`
	// WaitingUnknown says why Waiting could not be read (no right to list ResourceBindings); empty when it was.
	WaitingUnknown string `json:"waitingUnknown,omitempty"`
	// Reservations are the admissions the controller has not observed yet (the ledger's reservations), which Reserved
	// sums: ResourceBindings first, then Works, each by namespace, name and generation.
	Reservations []Reservation `json:"reservations,omitempty"`
	// FoldedReservations sums the older reservations folded out of the list once it reached its bound.
	FoldedReservations *FoldedReservations `json:"foldedReservations,omitempty"`
}

// Kinds of business quota a Quota (or a Row) can be read from; a namespace's KarmadaQuota has none.
const (
	// KindBusinessQuota is a KarmadaBusinessQuota, cluster-scoped, read by cluster admins: it names every namespace
	// of the business and what each uses.
	KindBusinessQuota = "KarmadaBusinessQuota"
	// KindAppliedBusinessQuota is the AppliedBusinessQuota the controller keeps in each namespace a business quota
	// selects: the business's limits and totals, and that namespace's part, nothing of the others. The stock view
	// role reads it.
	KindAppliedBusinessQuota = "AppliedBusinessQuota"
)

// Business is what a KarmadaBusinessQuota has beyond a quota: the namespaces it selects and what each uses.
type Business struct {
	// NamespaceSelector chooses the business's namespaces by their labels, as kubectl writes a label selector.
	NamespaceSelector string `json:"namespaceSelector"`
	// NamespaceCount is how many namespaces the selector chose at the controller's last recount.
	NamespaceCount int32 `json:"namespaceCount"`
	// Namespaces is what each of them uses of what the quota limits (what is reserved is the business's, in
	// Resources), sorted by namespace.
	Namespaces []NamespaceUsage `json:"namespaces,omitempty"`
}

// NamespaceUsage is one namespace's part of a business quota.
type NamespaceUsage struct {
	Namespace string `json:"namespace"`
	// Used lists every resource the quota limits, 0 included.
	Used map[string]string `json:"used"`
}

// Reservation kinds: what made the admitted write a reservation charges for.
const (
	// ReservedByBinding: a write of a ResourceBinding of the quota's namespace, placing more replicas or bigger ones.
	ReservedByBinding = "ResourceBinding"
	// ReservedByWork: a write of a Work (work.karmada.io/v1alpha1) asking its member cluster to run more than its
	// binding places there (an OverridePolicy raising requests on that member, a DaemonSet's pod per node, a
	// CronJob's Jobs). A Work lives in its member's execution namespace, karmada-es-<cluster>, not in the quota's.
	ReservedByWork = "Work"
)

// Reservation is one admission the controller has not observed yet: it counts against hard until it is, or until
// it expires.
type Reservation struct {
	// Kind is ResourceBinding or Work (ReservedByBinding, ReservedByWork): the kind each ledger reservation names.
	Kind       string `json:"kind"`
	APIVersion string `json:"apiVersion"`
	// Namespace is the Work's execution namespace (karmada-es-<cluster>); empty for a binding, which is in the
	// quota's namespace.
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Cluster is, for a Work, the member cluster it is sent to, read from its execution namespace: the reservation
	// charges what that member runs beyond what the Work's binding places there.
	Cluster string `json:"cluster,omitempty"`
	// Generation is the generation of the admitted write; the reservation is settled once the controller observes
	// its owner at this generation or later.
	Generation int64 `json:"generation"`
	// Reserved is the increase admitted, by limited resource.
	Reserved map[string]string `json:"reserved"`
	// Clusters splits it by member cluster, for the resources a cluster or group limit counts: on each cluster the
	// write grows, what it grows there (a ledger reservation's <cluster>:<reserved> parts); absent on a quota without
	// such limits.
	Clusters map[string]map[string]string `json:"clusters,omitempty"`
	// Expires is when the reservation lapses if its write never happened (RFC 3339).
	Expires string `json:"expires"`
}

// FoldedReservations are reservations folded out of the ledger's reservations: how many, their sum, and when the last
// of them expires (RFC 3339).
type FoldedReservations struct {
	Count    int64             `json:"count"`
	Reserved map[string]string `json:"reserved"`
	Expires  string            `json:"expires"`
}

// QuotaList is what `describe -o json` prints without a name.
type QuotaList struct {
	Items []Quota `json:"items"`
}

// Scope is one expression of a quota's scope selector.
type Scope struct {
	ScopeName string   `json:"scopeName"`
	Operator  string   `json:"operator"`
	Values    []string `json:"values,omitempty"`
	// Meaning says which replicas the expression selects, in words.
	Meaning string `json:"meaning"`
}

// Currency values: whether a quota's status reflects its spec and the bindings the controller observed.
const (
	// Current: Ready=True, computed for the quota's current generation.
	Current = "Current"
	// Behind: the spec changed since the controller last computed the status.
	Behind = "Behind"
	// NotReady: Ready=False, for example a spec the controller cannot enforce (reason InvalidSpec).
	NotReady = "NotReady"
	// NoStatus: the controller has never computed a status for this quota.
	NoStatus = "NoStatus"
	// Applied: a business quota as its AppliedBusinessQuota shows it in a namespace: what the controller last
	// counted, for the business quota's generation ObservedGeneration. Whether the business quota is Ready, or
	// changed since, is in the KarmadaBusinessQuota, which only cluster admins read.
	Applied = "Applied"
)

// Status is a quota's currency.
type Status struct {
	// State is Current, Behind, NotReady or NoStatus; Applied for an AppliedBusinessQuota.
	State string `json:"state"`
	// Ready is the status of the Ready condition: True, False, or Unknown when there is none.
	Ready   string `json:"ready"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Generation is the spec's generation; ObservedGeneration the one the controller last computed status for.
	Generation         int64 `json:"generation"`
	ObservedGeneration int64 `json:"observedGeneration"`
}

// Resource is one limited resource of a quota.
type Resource struct {
	Name string `json:"name"`
	// Used is what the namespace's bindings use, as the controller observed it (status.used).
	Used string `json:"used"`
	// Reserved is admitted but not yet observed (status.reserved): it counts against hard until it is.
	Reserved string `json:"reserved"`
	Hard     string `json:"hard"`
	// Available is hard - used - reserved: what an admission can still take. Negative when over hard.
	Available string `json:"available"`
	// UsedPercent is used / hard in whole percent, rounded down; 100 for a hard of zero.
	UsedPercent int64 `json:"usedPercent"`
	// NamespaceUsed is, for an AppliedBusinessQuota, what its namespace uses of it: its part of Used, which is the
	// business's. Empty for any other quota.
	NamespaceUsed string `json:"namespaceUsed,omitempty"`
}

// ClusterUsage is what the namespace uses in one member cluster, by resource.
type ClusterUsage struct {
	Cluster string `json:"cluster"`
	// NotJoined is set for a cluster with a limit of its own that no member cluster of that name has joined Karmada
	// as (status.clusters[].notJoined): the limit holds from the moment one does.
	NotJoined bool              `json:"notJoined,omitempty"`
	Used      map[string]string `json:"used"`
	// Reserved is what is admitted there and not yet observed, for the resources a cluster or group limit counts
	// (the reservations' clusters): every resource of Hard, 0 included, on a cluster with a limit of its own; what
	// is above 0 on another. Absent when nothing is.
	Reserved map[string]string `json:"reserved,omitempty"`
	// Hard is the cluster's own limit (spec.clusters), what is enforced there on top of the namespace-wide hard;
	// absent for a cluster without one.
	Hard map[string]string `json:"hard,omitempty"`
	// Running is what the namespace's pods there request, read from the member; absent when it was not read.
	Running map[string]string `json:"running,omitempty"`
	// Evicting is the part of Used that runs there only until Karmada's graceful eviction from that cluster ends:
	// a failover moved bindings away, and Karmada keeps what they ran there until their replacement is healthy or
	// the grace period ends. Only the resources some of which is evicting; absent when nothing is.
	Evicting map[string]string `json:"evicting,omitempty"`
	// EvictingUntil is when the last of them goes at the latest (RFC 3339), from the quota's status; empty while
	// EvictingHeld, and in `why`, which cannot know karmada-controller-manager's default grace period.
	EvictingUntil string `json:"evictingUntil,omitempty"`
	// EvictingHeld is set while one of them is kept until someone releases it (a failover with purgeMode Never):
	// nothing ends it by itself, and it is charged until then.
	EvictingHeld bool `json:"evictingHeld,omitempty"`
}

// ClusterGroup is one limit of a quota on a group of member clusters: what the clusters its selector chooses use
// together, against the group's hard.
type ClusterGroup struct {
	Group string `json:"group"`
	// Clusters are the member clusters the group's selector chose at the controller's last recount
	// (status.clusterGroups[].clusters), sorted; empty when it chooses none.
	Clusters []string `json:"clusters,omitempty"`
	// NotCounted is set while the controller has not counted the group yet (a spec change it has not caught up
	// with): Clusters and Used are then unknown, not empty.
	NotCounted bool `json:"notCounted,omitempty"`
	// Used is what the namespace uses in the group's clusters together, as the controller observed it; Reserved what
	// the reservations hold there; both list every resource of Hard, 0 included, and are absent while NotCounted.
	Used     map[string]string `json:"used,omitempty"`
	Reserved map[string]string `json:"reserved,omitempty"`
	// Hard is the group's limit, as enforced now.
	Hard map[string]string `json:"hard"`
}

// Waiting is a binding the scheduler could not place because a quota refused it, as one quota sees it.
type Waiting struct {
	// Namespace is the binding's, for a business quota, whose bindings are in several namespaces; empty for a
	// namespace's quota, whose bindings are in its namespace.
	Namespace string   `json:"namespace,omitempty"`
	Binding   string   `json:"binding"`
	Workload  Workload `json:"workload"`
	Asks      Asks     `json:"asks"`
	// Needs is what placing all its replicas adds to this quota, at the least (all of them placed once; a
	// Duplicated placement asks for this on every cluster it lists).
	Needs map[string]string `json:"needs"`
	// Short lists the resources whose need exceeds what the quota has available; empty when it fits this
	// quota (another quota of the namespace refuses it, or usage dropped since and it is about to be requeued).
	Short []Shortfall `json:"short,omitempty"`
	// MissingRequests are limited resources (cpu, memory) it places replicas without requesting: no quota that
	// limits them admits such replicas.
	MissingRequests []string `json:"missingRequests,omitempty"`
}

// Workload is the object a binding binds: its spec.resource.
type Workload struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
}

// Asks is what a binding's workload asks for: replicas and what each requests.
type Asks struct {
	// Replicas is spec.replicas, the replicas the workload wants.
	Replicas int32 `json:"replicas"`
	// Placed is how many are placed on member clusters now (the sum of spec.clusters).
	Placed int32 `json:"placed"`
	// PerReplica is each replica's requests, in the workload's names (cpu, memory, ...).
	PerReplica map[string]string `json:"perReplica,omitempty"`
	// Components are the parts of a multi-component workload, each placed as a whole set on every cluster.
	Components []Component `json:"components,omitempty"`
}

// Component is one part of a multi-component workload.
type Component struct {
	Name       string            `json:"name"`
	Replicas   int32             `json:"replicas"`
	PerReplica map[string]string `json:"perReplica,omitempty"`
}

// Shortfall is one resource a binding needs more of than a quota has available: under the namespace-wide hard,
// or under the limit of one member cluster (Cluster) or one group of them (Group).
//
// A binding keeps no trace of the placement the scheduler tried and the webhook refused (spec.clusters holds the
// last one admitted), so a cluster's or a group's shortfall is read from the refusal the scheduler copied into the
// binding's Scheduled condition, which names the cluster or group and what the placement asked there; Available and
// Hard are the quota's now. One whose limit is gone, or which fits now, is not listed.
type Shortfall struct {
	Resource string `json:"resource"`
	// Cluster is the member cluster whose own limit (spec.clusters) is short; Group the cluster group whose limit
	// (spec.clusterGroups) is. Both empty for the namespace-wide hard.
	Cluster string `json:"cluster,omitempty"`
	Group   string `json:"group,omitempty"`
	// Need is what placing the workload adds: in all; or, for a cluster or a group, what the refused placement
	// added there.
	Need string `json:"need"`
	// Available is hard - used - reserved, there.
	Available string `json:"available"`
	// ShortBy is need - available: how much usage must drop before it fits.
	ShortBy string `json:"shortBy"`
	Hard    string `json:"hard"`
	// NeverFits is set when the need alone exceeds hard: waiting cannot help; hard must rise or the workload
	// shrink (for a cluster or a group: or be placed elsewhere).
	NeverFits bool `json:"neverFits,omitempty"`
}

// Row is one limited resource of one quota, as `list` and `top` print it. `-o json` prints a RowList.
type Row struct {
	// Namespace is the quota's; empty for a KarmadaBusinessQuota, and for an AppliedBusinessQuota the namespace it
	// applies to.
	Namespace string `json:"namespace"`
	Quota     string `json:"quota"`
	// Kind is empty for a namespace's KarmadaQuota; KindBusinessQuota or KindAppliedBusinessQuota for a business
	// quota, whose Used and Reserved are the business's.
	Kind        string `json:"kind,omitempty"`
	Resource    string `json:"resource"`
	Used        string `json:"used"`
	Reserved    string `json:"reserved"`
	Hard        string `json:"hard"`
	UsedPercent int64  `json:"usedPercent"`
	// Status is the quota's currency: Current, Behind, NotReady or NoStatus; Applied for an AppliedBusinessQuota.
	Status string `json:"status"`
}

// RowList is what `list -o json` and `top -o json` print.
type RowList struct {
	Items []Row `json:"items"`
}

// Verdicts of `why`.
const (
	// NoBinding: Karmada has no ResourceBinding for the workload (no PropagationPolicy selects it), so no quota
	// is involved.
	NoBinding = "NoBinding"
	// NotScheduledYet: the binding has no Scheduled condition: the scheduler has not acted on it yet.
	NotScheduledYet = "NotScheduledYet"
	// NotScheduled: the scheduler could not place it for a reason other than quota.
	NotScheduled = "NotScheduled"
	// QuotaExceeded: a quota refused its last placement.
	QuotaExceeded = "QuotaExceeded"
	// Scheduled: it is placed; Charges say what each quota counts for it.
	Scheduled = "Scheduled"
	// WorkRefused: it is placed, but quota refuses the Work Karmada renders for at least one member cluster: that
	// member would run more than the quota allows (an OverridePolicy raising requests there, a DaemonSet's pod per
	// node, a CronJob's Jobs). Karmada reports it as a SyncWorkFailed event on the binding and retries; the member
	// keeps what it ran before. WorksRefused says which members and why; Charges what each quota counts for it.
	WorkRefused = "WorkRefused"
)

// Why is what `why` finds out about one workload.
type Why struct {
	Workload Workload `json:"workload"`
	// Binding is the name of the workload's ResourceBinding, if it has one.
	Binding string `json:"binding,omitempty"`
	// Verdict is NoBinding, NotScheduledYet, NotScheduled, QuotaExceeded, Scheduled or WorkRefused.
	Verdict string `json:"verdict"`
	// Condition is the binding's Scheduled condition, as the scheduler last wrote it.
	Condition *Condition `json:"condition,omitempty"`
	Asks      *Asks      `json:"asks,omitempty"`
	// PriorityClass is the workload's priority class (spec.replicaRequirements.priorityClassName), which scoped
	// quotas select by; empty when it names none.
	PriorityClass string `json:"priorityClass,omitempty"`
	// Refusals are the quotas that refuse to place all of its replicas now, recomputed from their status with
	// the webhook's arithmetic; a cluster's or a group's limit as the Scheduled condition's message names it (see
	// Shortfall), with its figures now. For QuotaExceeded only.
	Refusals []Refusal `json:"refusals,omitempty"`
	// Charges say, for each quota of the namespace, what it counts for the workload. For Scheduled and WorkRefused.
	Charges []Charge `json:"charges,omitempty"`
	// WorksRefused says which member clusters' Works quota refuses, read from the binding's events. For
	// WorkRefused only.
	WorksRefused *WorksRefused `json:"worksRefused,omitempty"`
	// EventsUnknown, for a placed workload, says why the binding's events could not be read (no right to list
	// events): whether quota refuses its Works is then unknown, and the verdict says Scheduled. Empty when they
	// were read.
	EventsUnknown string `json:"eventsUnknown,omitempty"`
}

// WorksRefused is Karmada's last report of quota refusing a binding's Works: the binding's newest Warning event
// of reason SyncWorkFailed carrying the Work webhook's refusal, with no SyncWorkSucceed recorded since.
type WorksRefused struct {
	// Event is the event's name, in the binding's namespace (`kubectl get event NAME -o yaml` shows it whole).
	Event string `json:"event"`
	// Count is how many times Karmada recorded this message; FirstSeen and LastSeen when it first and last did
	// (RFC 3339).
	Count     int32  `json:"count,omitempty"`
	FirstSeen string `json:"firstSeen,omitempty"`
	LastSeen  string `json:"lastSeen,omitempty"`
	// LastSynced is when Karmada last reported syncing all of the binding's Works (SyncWorkSucceed), before the
	// refusal; empty when no such event is left.
	LastSynced string `json:"lastSynced,omitempty"`
	// Members are the refusals, one per member cluster, in the order Karmada joined them in the event.
	Members []WorkRefusal `json:"members"`
}

// WorkRefusal is quota refusing the Work of one member cluster.
type WorkRefusal struct {
	// Cluster is the member cluster. Empty when the event's message could not be split per member: Message then
	// holds it whole.
	Cluster string `json:"cluster,omitempty"`
	// Work is the refused Work, <execution namespace>/<name>.
	Work string `json:"work,omitempty"`
	// Quotas are the quotas of the namespace the message names as refusing it; BusinessQuotas the business quotas.
	Quotas         []string `json:"quotas,omitempty"`
	BusinessQuotas []string `json:"businessQuotas,omitempty"`
	// Message is the Work webhook's refusal, as Karmada recorded it.
	Message string `json:"message"`
	// Fix says what lets Karmada write the Work.
	Fix string `json:"fix"`
}

// Condition is a binding's Scheduled condition.
type Condition struct {
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// Refusal is one quota refusing a workload's placement.
type Refusal struct {
	Quota string `json:"quota"`
	// Business is set for a business quota, which limits the namespaces of a business together: its figures are
	// the business's.
	Business bool        `json:"business,omitempty"`
	Short    []Shortfall `json:"short,omitempty"`
	// Unknown is set for a business quota the refusal message names whose AppliedBusinessQuota could not be read,
	// and says why: Short then holds the figures of the refusal message, as they were at the scheduler's last
	// attempt, not now.
	Unknown string `json:"unknown,omitempty"`
	// Invalid is set for a quota whose spec cannot be enforced: the webhook refuses every binding write in its
	// namespace until it is fixed.
	Invalid string `json:"invalid,omitempty"`
	// MissingRequests are limited resources the workload places replicas without requesting.
	MissingRequests []string `json:"missingRequests,omitempty"`
}

// Charge is what one quota counts for a scheduled workload.
type Charge struct {
	Quota string `json:"quota"`
	// Business is set for a business quota: it charges the workload against what the business's namespaces use
	// together.
	Business bool `json:"business,omitempty"`
	// Selected is false when the quota's scope does not select the workload's priority class.
	Selected bool `json:"selected"`
	// Total is what the quota counts for it, by limited resource; empty when it limits nothing it uses.
	Total map[string]string `json:"total,omitempty"`
	// Clusters split what the quota counts by member cluster (all but object counts), with what a graceful
	// eviction keeps there.
	Clusters []ClusterUsage `json:"clusters,omitempty"`
}

// BusinessQuota is one KarmadaBusinessQuota as `business` lists it. `business -o json` prints a BusinessQuotaList.
type BusinessQuota struct {
	Name string `json:"name"`
	// NamespaceSelector chooses the business's namespaces by their labels, as kubectl writes a label selector.
	NamespaceSelector string `json:"namespaceSelector"`
	// NamespaceCount is how many namespaces the selector chose at the controller's last recount.
	NamespaceCount int32 `json:"namespaceCount"`
	// Resources lists every limited resource, sorted by name: used and reserved over the business's namespaces.
	Resources []Resource `json:"resources"`
	// Status is the quota's currency: Current, Behind, NotReady or NoStatus.
	Status string `json:"status"`
}

// BusinessQuotaList is what `business -o json` prints without a name.
type BusinessQuotaList struct {
	Items []BusinessQuota `json:"items"`
}
