package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KarmadaBusinessQuota sets hard limits on what a business's namespaces, chosen by their labels, use together
// across every member cluster of the federation: one quota for shop-dev, shop-staging and shop-prod. It is enforced
// when Karmada's ResourceBindings are admitted, beside each namespace's own KarmadaQuotas: a placement must fit all
// of them.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=kbq,categories=karmada-io
// +kubebuilder:printcolumn:name="Namespaces",type=integer,JSONPath=`.status.namespaceCount`,description="Namespaces the selector chooses"
// +kubebuilder:printcolumn:name="Used/Hard",type=string,JSONPath=`.status.summary`,description="Used against hard, per limited resource, over the business's namespaces"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type KarmadaBusinessQuota struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec KarmadaBusinessQuotaSpec `json:"spec"`
	// +optional
	Status KarmadaBusinessQuotaStatus `json:"status,omitempty"`
}

// KarmadaBusinessQuotaSpec is what the namespaces a selector chooses may use together: the limits of a
// KarmadaQuota, over all of them.
type KarmadaBusinessQuotaSpec struct {
	// NamespaceSelector chooses the business's namespaces by the labels of their Namespace objects in the
	// karmada-apiserver, as they are at each admission: a namespace labelled in brings its usage along, one
	// labelled out takes it away. It must not be empty: a quota over every namespace would silently govern
	// namespaces created later by anyone.
	// +kubebuilder:validation:XValidation:rule="(has(self.matchLabels) && size(self.matchLabels) > 0) || (has(self.matchExpressions) && size(self.matchExpressions) > 0)",message="namespaceSelector must not be empty: it would select every namespace, those created later included; select the business's namespaces by a label"
	NamespaceSelector metav1.LabelSelector `json:"namespaceSelector"`

	// The limits, scope and cluster limits, as in a KarmadaQuota, over the selected namespaces together.
	KarmadaQuotaSpec `json:",inline"`
}

// KarmadaBusinessQuotaStatus is what is enforced and what the selected namespaces use: together, per member
// cluster, and per namespace. Only admins read it: a team reads its own namespace's part in its
// AppliedBusinessQuota.
type KarmadaBusinessQuotaStatus struct {
	// Totals over the selected namespaces, as in a KarmadaQuota's status.
	KarmadaQuotaStatus `json:",inline"`

	// NamespaceCount is how many namespaces the selector chooses now.
	// +optional
	NamespaceCount int32 `json:"namespaceCount,omitempty"`

	// Namespaces is what each selected namespace uses of what the quota limits (what is reserved is the business's,
	// in reserved). A namespace labelled out, or deleted, leaves the list with its usage.
	// +optional
	// +listType=map
	// +listMapKey=name
	Namespaces []NamespaceUsage `json:"namespaces,omitempty"`
}

// NamespaceUsage is one namespace's part of a business quota.
type NamespaceUsage struct {
	// Name of the namespace.
	Name string `json:"name"`
	// Used by the namespace's bindings that the quota counts; keys mirror spec.hard.
	// +optional
	Used corev1.ResourceList `json:"used,omitempty"`
}

// KarmadaBusinessQuotaList is a list of KarmadaBusinessQuota.
//
// +kubebuilder:object:root=true
type KarmadaBusinessQuotaList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KarmadaBusinessQuota `json:"items"`
}

// KarmadaBusinessQuotaLedger is what admission decides against for the KarmadaBusinessQuota of the same name, as a
// KarmadaQuotaLedger is for a KarmadaQuota. Its reservations name bindings of every selected namespace, so it is
// cluster-scoped, readable by admins only. karmada-quota writes it alone; it goes with its quota (an owner
// reference).
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=kbqledger
// +kubebuilder:printcolumn:name="Reservations",type=integer,JSONPath=`.reservationCount`,description="Admitted writes not yet observed"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type KarmadaBusinessQuotaLedger struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	LedgerState `json:",inline"`
}

// KarmadaBusinessQuotaLedgerList is a list of KarmadaBusinessQuotaLedger.
//
// +kubebuilder:object:root=true
type KarmadaBusinessQuotaLedgerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KarmadaBusinessQuotaLedger `json:"items"`
}

// AsKarmadaQuota is the business quota as admission and the recount read a quota: its limits, its status totals and
// its identity (namespace empty). It shares the business quota's maps and slices: read it, do not change it.
func (q *KarmadaBusinessQuota) AsKarmadaQuota() *KarmadaQuota {
	return &KarmadaQuota{
		TypeMeta:   metav1.TypeMeta{APIVersion: GroupVersion.String(), Kind: "KarmadaBusinessQuota"},
		ObjectMeta: q.ObjectMeta,
		Spec:       q.Spec.KarmadaQuotaSpec,
		Status:     q.Status.KarmadaQuotaStatus,
	}
}

// IsBusiness reports whether q is a KarmadaBusinessQuota read as a KarmadaQuota (AsKarmadaQuota): the only quota
// without a namespace.
func (q *KarmadaQuota) IsBusiness() bool {
	return q.Namespace == ""
}

// AsKarmadaQuotaLedger is the ledger as admission and the recount read a quota's. It shares the ledger's contents.
func (l *KarmadaBusinessQuotaLedger) AsKarmadaQuotaLedger() *KarmadaQuotaLedger {
	return &KarmadaQuotaLedger{ObjectMeta: l.ObjectMeta, LedgerState: l.LedgerState}
}

// BusinessLedgerFrom is the business quota's ledger object holding what l holds: what a write of a business quota's
// ledger sends. It shares l's contents.
func BusinessLedgerFrom(l *KarmadaQuotaLedger) *KarmadaBusinessQuotaLedger {
	return &KarmadaBusinessQuotaLedger{ObjectMeta: l.ObjectMeta, LedgerState: l.LedgerState}
}

// AppliedBusinessQuota is a team's view of a KarmadaBusinessQuota that applies to its namespace: the limits, what
// the business uses in all, and what this namespace uses, and nothing about the business's other namespaces (not
// their names, not their usage). The controller keeps one, named after the business quota, in each namespace the
// quota selects, and removes it when the namespace leaves; the stock view role reads it. It is read-only: editing
// it changes nothing, and the controller writes it back.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=abq,categories=karmada-io
// +kubebuilder:printcolumn:name="Used/Hard",type=string,JSONPath=`.status.summary`,description="The business's use against hard, per limited resource"
// +kubebuilder:printcolumn:name="This namespace",type=string,JSONPath=`.status.namespaceSummary`,description="What this namespace uses of it"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type AppliedBusinessQuota struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the business quota's spec, without its namespace selector.
	// +optional
	Spec KarmadaQuotaSpec `json:"spec,omitempty"`
	// +optional
	Status AppliedBusinessQuotaStatus `json:"status,omitempty"`
}

// AppliedBusinessQuotaStatus is what a team may know of its business quota's status.
type AppliedBusinessQuotaStatus struct {
	// Hard is what is enforced over the business's namespaces together.
	// +optional
	Hard corev1.ResourceList `json:"hard,omitempty"`
	// Used is what the business's namespaces use together.
	// +optional
	Used corev1.ResourceList `json:"used,omitempty"`
	// Reserved is what is admitted across the business and not yet observed.
	// +optional
	Reserved corev1.ResourceList `json:"reserved,omitempty"`
	// NamespaceUsed is what this namespace uses of it.
	// +optional
	NamespaceUsed corev1.ResourceList `json:"namespaceUsed,omitempty"`
	// Summary renders used/hard, NamespaceSummary this namespace's part, for printer columns.
	// +optional
	Summary string `json:"summary,omitempty"`
	// +optional
	NamespaceSummary string `json:"namespaceSummary,omitempty"`
	// ObservedGeneration is the business quota's generation this was written for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// AppliedBusinessQuotaList is a list of AppliedBusinessQuota.
//
// +kubebuilder:object:root=true
type AppliedBusinessQuotaList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AppliedBusinessQuota `json:"items"`
}
