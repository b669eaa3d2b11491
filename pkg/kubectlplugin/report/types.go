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
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Scopes are the scope selector's expressions, each with its meaning; none for a quota over every binding.
	Scopes []Scope `json:"scopes,omitempty"`
	// Status says whether the figures below are current.
	Status Status `json:"status"`
	// Resources lists every limited resource, sorted by name.
	Resources []Resource `json:"resources"`
	// Clusters is what the namespace uses in each member cluster, sorted by cluster name.
	Clusters []ClusterUsage `json:"clusters,omitempty"`
	// Waiting lists the namespace's bindings the scheduler could not place because a quota refused them, whose
	// needs this quota limits, sorted by binding name.
	Waiting []Waiting `json:"waiting,omitempty"`
	// WaitingUnknown says why Waiting could not be read (no right to list ResourceBindings); empty when it was.
	WaitingUnknown string `json:"waitingUnknown,omitempty"`
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
)

// Status is a quota's currency.
type Status struct {
	// State is Current, Behind, NotReady or NoStatus.
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
}

// ClusterUsage is what the namespace uses in one member cluster, by resource.
type ClusterUsage struct {
	Cluster string            `json:"cluster"`
	Used    map[string]string `json:"used"`
	// Running is what the namespace's pods there request, read from the member; absent when it was not read.
	Running map[string]string `json:"running,omitempty"`
}

// Waiting is a binding the scheduler could not place because a quota refused it, as one quota sees it.
type Waiting struct {
	Binding  string   `json:"binding"`
	Workload Workload `json:"workload"`
	Asks     Asks     `json:"asks"`
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

// Shortfall is one resource a binding needs more of than a quota has available.
type Shortfall struct {
	Resource string `json:"resource"`
	Need     string `json:"need"`
	// Available is hard - used - reserved.
	Available string `json:"available"`
	// ShortBy is need - available: how much usage must drop before it fits.
	ShortBy string `json:"shortBy"`
	Hard    string `json:"hard"`
	// NeverFits is set when the need alone exceeds hard: waiting cannot help; hard must rise or the workload
	// shrink.
	NeverFits bool `json:"neverFits,omitempty"`
}

// Row is one limited resource of one quota, as `list` and `top` print it. `-o json` prints a RowList.
type Row struct {
	Namespace   string `json:"namespace"`
	Quota       string `json:"quota"`
	Resource    string `json:"resource"`
	Used        string `json:"used"`
	Reserved    string `json:"reserved"`
	Hard        string `json:"hard"`
	UsedPercent int64  `json:"usedPercent"`
	// Status is the quota's currency: Current, Behind, NotReady or NoStatus.
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
)

// Why is what `why` finds out about one workload.
type Why struct {
	Workload Workload `json:"workload"`
	// Binding is the name of the workload's ResourceBinding, if it has one.
	Binding string `json:"binding,omitempty"`
	// Verdict is NoBinding, NotScheduledYet, NotScheduled, QuotaExceeded or Scheduled.
	Verdict string `json:"verdict"`
	// Condition is the binding's Scheduled condition, as the scheduler last wrote it.
	Condition *Condition `json:"condition,omitempty"`
	Asks      *Asks      `json:"asks,omitempty"`
	// PriorityClass is the workload's priority class (spec.replicaRequirements.priorityClassName), which scoped
	// quotas select by; empty when it names none.
	PriorityClass string `json:"priorityClass,omitempty"`
	// Refusals are the quotas that refuse to place all of its replicas now, recomputed from their status with
	// the webhook's arithmetic. For QuotaExceeded only.
	Refusals []Refusal `json:"refusals,omitempty"`
	// Charges say, for each quota of the namespace, what it counts for the workload. For Scheduled only.
	Charges []Charge `json:"charges,omitempty"`
}

// Condition is a binding's Scheduled condition.
type Condition struct {
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// Refusal is one quota refusing a workload's placement.
type Refusal struct {
	Quota string      `json:"quota"`
	Short []Shortfall `json:"short,omitempty"`
	// Invalid is set for a quota whose spec cannot be enforced: the webhook refuses every binding write in its
	// namespace until it is fixed.
	Invalid string `json:"invalid,omitempty"`
	// MissingRequests are limited resources the workload places replicas without requesting.
	MissingRequests []string `json:"missingRequests,omitempty"`
}

// Charge is what one quota counts for a scheduled workload.
type Charge struct {
	Quota string `json:"quota"`
	// Selected is false when the quota's scope does not select the workload's priority class.
	Selected bool `json:"selected"`
	// Total is what the quota counts for it, by limited resource; empty when it limits nothing it uses.
	Total map[string]string `json:"total,omitempty"`
	// Clusters split compute and pods by member cluster.
	Clusters []ClusterUsage `json:"clusters,omitempty"`
}
