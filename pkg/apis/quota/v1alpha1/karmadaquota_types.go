package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// KarmadaQuota sets hard limits on what one namespace may use across every member cluster of the federation,
// enforced when Karmada's ResourceBindings are admitted.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=kq,categories=karmada-io
// +kubebuilder:printcolumn:name="Used/Hard",type=string,JSONPath=`.status.summary`,description="Used against hard, per limited resource"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type KarmadaQuota struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec KarmadaQuotaSpec `json:"spec,omitempty"`
	// +optional
	Status KarmadaQuotaStatus `json:"status,omitempty"`
}

// KarmadaQuotaSpec is what the federation as a whole may use in the quota's namespace.
type KarmadaQuotaSpec struct {
	// Hard maps a resource name to the most the namespace may use across all member clusters.
	// Bare compute names (cpu, memory, ephemeral-storage, hugepages-*, extended resources) mean their requests.
	// form; pods counts replicas placed on member clusters; requests.storage, persistentvolumeclaims (and their
	// <class>.storageclass.storage.k8s.io/ forms), services.loadbalancers and services.nodeports count what the
	// members hold: each claim, load balancer and node port once per member cluster it is on;
	// count/<resource>.<group>, services, secrets and configmaps count bound objects. limits.* is refused: a
	// ResourceBinding carries requests only, and a limit that cannot be enforced is never accepted.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('limits.'))",message="limits.* cannot be enforced: a ResourceBinding carries resource requests only; use requests.<name> or the bare name"
	Hard corev1.ResourceList `json:"hard,omitempty"`

	// ScopeSelector restricts the quota to the bindings whose PriorityClass matches every expression.
	// Without it, the quota applies to every binding in the namespace.
	// +optional
	ScopeSelector *ScopeSelector `json:"scopeSelector,omitempty"`

	// Clusters limits what the namespace uses in single member clusters, each by name, on top of hard: a small or
	// expensive cluster, a regulated one, one being drained. A cluster that has not joined yet is accepted, and its
	// limit applies from the moment it does.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=256
	Clusters []ClusterLimit `json:"clusters,omitempty"`

	// ClusterGroups limits what the namespace uses in groups of member clusters chosen by their labels (a region, a
	// provider), on top of hard: each group's limit applies to the sum over the clusters it selects now, as clusters
	// join, leave and are relabelled.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	ClusterGroups []ClusterGroupLimit `json:"clusterGroups,omitempty"`
}

// ClusterLimit limits what the quota's namespace uses in one member cluster.
type ClusterLimit struct {
	// Name of the member cluster: its Cluster object's name in the karmada-apiserver.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Hard maps a resource name to the most the namespace may use in that cluster: what a binding places or keeps
	// there, and what its Work there asks or holds (compute, pods, storage, claims, load balancers, node ports).
	// Object counts are federation-wide, and refused here.
	// (The webhook refuses limits.* here, as in spec.hard; a CEL rule on the key of every cluster's and group's list
	// would exceed the apiserver's cost budget for one schema.)
	Hard corev1.ResourceList `json:"hard"`
}

// ClusterGroupLimit limits what the quota's namespace uses, in all, in the member clusters a label selector chooses.
type ClusterGroupLimit struct {
	// Name of the group, for status and refusals.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`

	// ClusterSelector chooses the group's clusters by the labels of their Cluster objects. It must not be empty: a
	// group of every cluster is spec.hard.
	ClusterSelector metav1.LabelSelector `json:"clusterSelector"`

	// Hard maps a resource name to the most the namespace may use in the group's clusters together, in the
	// resource names of a cluster's limit.
	// (The webhook refuses limits.* here, as in spec.hard; a CEL rule on the key of every cluster's and group's list
	// would exceed the apiserver's cost budget for one schema.)
	Hard corev1.ResourceList `json:"hard"`
}

// ScopeSelector selects bindings by scope; all expressions must match (they are ANDed).
type ScopeSelector struct {
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	MatchExpressions []ScopedResourceSelectorRequirement `json:"matchExpressions,omitempty"`
}

// ScopedResourceSelectorRequirement is one expression over a scope, as in a Kubernetes ResourceQuota.
// +kubebuilder:validation:XValidation:rule="!(self.operator in ['In', 'NotIn']) || (has(self.values) && size(self.values) > 0)",message="values must be non-empty when operator is In or NotIn"
// +kubebuilder:validation:XValidation:rule="!(self.operator in ['Exists', 'DoesNotExist']) || !has(self.values) || size(self.values) == 0",message="values must be empty when operator is Exists or DoesNotExist"
type ScopedResourceSelectorRequirement struct {
	// ScopeName is the scope the expression reads. Only PriorityClass applies to ResourceBindings: a binding
	// carries its workload's priority class name and nothing else that a ResourceQuota scope reads.
	// +kubebuilder:validation:Enum=PriorityClass
	ScopeName corev1.ResourceQuotaScope `json:"scopeName"`

	// Operator relates the scope to the values.
	// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist
	Operator corev1.ScopeSelectorOperator `json:"operator"`

	// Values for In and NotIn; empty for Exists and DoesNotExist.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	Values []string `json:"values,omitempty"`
}

// KarmadaQuotaStatus is what is enforced and what is used, federation-wide and per member cluster.
type KarmadaQuotaStatus struct {
	// ObservedGeneration is the spec generation the controller last computed this status for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Hard is the enforced limit set, mirrored from spec.hard by the controller.
	// +optional
	Hard corev1.ResourceList `json:"hard,omitempty"`

	// Used is what the namespace's matching bindings use, as observed by the controller; keys mirror spec.hard.
	// +optional
	Used corev1.ResourceList `json:"used,omitempty"`

	// Reserved is the sum of the reservations: admitted by the webhook, not yet observed by the controller.
	// +optional
	Reserved corev1.ResourceList `json:"reserved,omitempty"`

	// Reservations held the admissions the controller had not observed yet in releases before KarmadaQuotaLedger
	// (they are in the quota's ledger now). Those left here when such a release was upgraded still count, until the
	// controller moves them into the ledger; the schema takes no new ones (maxItems 0), so that a webhook replica
	// of such a release, still running during the rollout, fails closed instead of admitting beside this one on a
	// count that misses the ledger's reservations.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=0
	Reservations []Reservation `json:"reservations,omitempty"`

	// FoldedReservations is the sum of the reservations a release before KarmadaQuotaLedger folded out of its list
	// once it reached its bound; it charges the quota until it expires, and is then dropped.
	// +optional
	FoldedReservations *FoldedReservations `json:"foldedReservations,omitempty"`

	// Clusters is what the namespace uses in each member cluster (compute and pods; object counts are
	// federation-wide).
	// +optional
	// +listType=map
	// +listMapKey=name
	Clusters []ClusterUsage `json:"clusters,omitempty"`

	// ClusterGroups is what the namespace uses in each group of spec.clusterGroups, and which clusters it selects
	// now.
	// +optional
	// +listType=map
	// +listMapKey=name
	ClusterGroups []ClusterGroupUsage `json:"clusterGroups,omitempty"`

	// Summary is a one-line "used/hard" rendering of the limited resources, for printer columns.
	// +optional
	Summary string `json:"summary,omitempty"`

	// Conditions report whether the status is current (Ready) and, on a quota scoped by PriorityClass, whether
	// every binding's priority class is known (PriorityClassesKnown).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Reservation charges one admitted write (a binding's, or a Work's) until the controller observes it. It is written
// as one string (reservation_encoding.go has the format and why); the schema also takes the object the fields
// below make, which releases before wrote, so that what they stored is served as it is, not pruned.
//
// +kubebuilder:validation:Type=""
// +kubebuilder:pruning:PreserveUnknownFields
type Reservation struct {
	// ReservedBy is the binding, or the Work, whose admission made the reservation.
	ReservedBy ReservationOwner `json:"reservedBy"`

	// Generation is the generation the admitted write produces (1 for a create). The reservation is settled once
	// the controller observes its owner at this generation or later.
	Generation int64 `json:"generation"`

	// Reserved is the increase the admission allowed, for the resources this quota limits.
	Reserved corev1.ResourceList `json:"reserved"`

	// Clusters splits the increase by member cluster, where a cluster or group limit counts it: on each cluster the
	// write grows, what it grows there (a move between clusters reserves its arrival, never its departure).
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=256
	Clusters []ClusterReservation `json:"clusters,omitempty"`

	// ExpirationTime is when the reservation lapses if its write never happened.
	ExpirationTime metav1.Time `json:"expirationTime"`

	// Malformed, never stored, says why an entry read is not a reservation (UnmarshalJSON); empty for one that is.
	Malformed string `json:"-"`
}

// FoldedReservations is what remains of reservations folded out of the list: their number, their sum, and when
// the last of them expires.
type FoldedReservations struct {
	// Count is how many reservations were folded in.
	Count int64 `json:"count"`

	// Reserved is their sum, for the resources this quota limits.
	Reserved corev1.ResourceList `json:"reserved"`

	// Clusters is their sum by member cluster (Reservation.clusters).
	// +optional
	// +listType=map
	// +listMapKey=name
	Clusters []ClusterReservation `json:"clusters,omitempty"`

	// ExpirationTime is the latest expiry among them: the reservation TTL after the newest was admitted.
	ExpirationTime metav1.Time `json:"expirationTime"`
}

// ReservationOwner identifies the write a reservation belongs to: a ResourceBinding of the quota's namespace, or a
// Work (what one member cluster is sent for such a binding) when the member runs more than the binding places.
type ReservationOwner struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Namespace is the owner's namespace when it is not the quota's: a Work lives in its member cluster's
	// execution namespace (karmada-es-<cluster>).
	// +optional
	Namespace string    `json:"namespace,omitempty"`
	Name      string    `json:"name"`
	UID       types.UID `json:"uid"`
}

// ClusterUsage is what the namespace uses in one member cluster.
type ClusterUsage struct {
	// Name of the member cluster.
	Name string `json:"name"`
	// Hard is the cluster's own limit (spec.clusters), when it has one.
	// +optional
	Hard corev1.ResourceList `json:"hard,omitempty"`
	// NotJoined is set for a cluster with a limit that no member cluster of that name has joined Karmada as: the
	// limit holds from the moment one does.
	// +optional
	NotJoined bool `json:"notJoined,omitempty"`
	// Used in that cluster; keys mirror spec.hard and the cluster and group limits.
	// +optional
	Used corev1.ResourceList `json:"used,omitempty"`
	// Reserved in that cluster: admitted there, not yet observed, for the resources a cluster or group limit counts.
	// +optional
	Reserved corev1.ResourceList `json:"reserved,omitempty"`
	// Evicting is the part of Used that runs there only until Karmada's graceful eviction from that cluster ends:
	// replicas, claims and load balancers of bindings that left the cluster (a taint-based or application
	// failover), kept until their replacement is healthy or the grace period ends. They are charged while they run;
	// their replacement elsewhere is admitted as a move, even in a namespace at its limit. Keys mirror spec.hard.
	// +optional
	Evicting corev1.ResourceList `json:"evicting,omitempty"`
	// EvictingUntil is when the last of them goes at the latest: the end of the longest grace period. Absent
	// while one of them is kept until someone releases it (a failover with purgeMode Never).
	// +optional
	EvictingUntil *metav1.Time `json:"evictingUntil,omitempty"`
	// Running is what the namespace's pods in that cluster request, read from the member itself through Karmada's
	// cluster proxy: the pods that have not terminated, counted as the member's own ResourceQuota would count them,
	// those Karmada did not put there included. Keys mirror spec.hard; absent when the member was not read.
	// +optional
	Running corev1.ResourceList `json:"running,omitempty"`
}

// ClusterGroupUsage is what the namespace uses in one group of member clusters.
type ClusterGroupUsage struct {
	// Name of the group (spec.clusterGroups).
	Name string `json:"name"`
	// Clusters are the member clusters its selector chooses now.
	// +optional
	// +listType=atomic
	Clusters []string `json:"clusters,omitempty"`
	// Hard is the group's limit.
	// +optional
	Hard corev1.ResourceList `json:"hard,omitempty"`
	// Used in the group's clusters together.
	// +optional
	Used corev1.ResourceList `json:"used,omitempty"`
	// Reserved in the group's clusters together.
	// +optional
	Reserved corev1.ResourceList `json:"reserved,omitempty"`
}

// ClusterReservation is the part of a reservation admitted in one member cluster, for the resources a cluster or
// group limit counts.
type ClusterReservation struct {
	// Name of the member cluster.
	Name string `json:"name"`
	// Reserved there.
	Reserved corev1.ResourceList `json:"reserved"`
}

// KarmadaQuotaList is a list of KarmadaQuota.
//
// +kubebuilder:object:root=true
type KarmadaQuotaList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KarmadaQuota `json:"items"`
}

// ConditionReady reports whether the status reflects the current spec and the observed bindings.
const ConditionReady = "Ready"

// ConditionPriorityClassesKnown, on a quota scoped by PriorityClass, reports whether the priority class of every
// binding of the namespace is known. False names the bindings whose class could not be read (Karmada without its
// ResourceQuotaEstimate feature gate, and a kind whose pod template karmada-quota cannot read): the quota counts
// them nowhere rather than under a guessed class, and the webhook refuses their growth.
const ConditionPriorityClassesKnown = "PriorityClassesKnown"

// ReasonPriorityClassUnknown is the one word for a binding whose priority class cannot be read, wherever a user
// meets it: the reason of ConditionPriorityClassesKnown when False, and the status reason of the webhook's 403
// refusing such a binding's growth. It is not QuotaExceeded: no quota is full, and Karmada's scheduler must not
// report one.
const ReasonPriorityClassUnknown = "PriorityClassUnknown"

// ConditionMembersWithinQuota reports whether the member clusters run no more than the quota charges there. False
// names each cluster whose pods have requested more than its status.clusters[].used for longer than the controller's
// grace (a rolling update runs its surge pods for a while): pods created in a member outside Karmada, or a workload
// Karmada left behind. Unknown while the members have not been read.
const ConditionMembersWithinQuota = "MembersWithinQuota"
