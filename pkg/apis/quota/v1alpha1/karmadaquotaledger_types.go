package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KarmadaQuotaLedger is what admission decides against, for the KarmadaQuota of the same name: the usage the
// controller observed and the reservations of writes it has not observed yet. karmada-quota keeps it apart from the
// quota so that each admission compare-and-swaps only this small object, not the quota with its limits and its
// per-cluster view; the quota's status shows what is in here, summed. karmada-quota writes it alone; it goes with
// its quota (an owner reference).
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=kqledger
// +kubebuilder:printcolumn:name="Reservations",type=integer,JSONPath=`.reservationCount`,description="Admitted writes not yet observed"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type KarmadaQuotaLedger struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	LedgerState `json:",inline"`
}

// LedgerState is what a ledger holds, for a KarmadaQuota (KarmadaQuotaLedger) as for a KarmadaBusinessQuota
// (KarmadaBusinessQuotaLedger): admission decides the same way against both.
type LedgerState struct {
	// QuotaGeneration fences changes of the quota's spec: the newest generation of it an admission may decide on.
	// The webhook raises it before a new spec is stored, so an admission deciding on an older spec than one already
	// stored loses its compare-and-swap on this object and reads the quota again.
	// +optional
	QuotaGeneration int64 `json:"quotaGeneration,omitempty"`

	// Observed is the usage the controller counted when it last settled the reservations; absent until it has,
	// when the quota's own status.used and status.clusters[].used count instead.
	// +optional
	Observed *LedgerObserved `json:"observed,omitempty"`

	// Reservations are the admissions the controller has not yet observed, in the order they were admitted: added
	// by the webhook at the end, removed by the controller where they are, at most 250 (beyond that the oldest are
	// folded into foldedReservations). Each is one string, "<apiVersion> <kind> [<namespace>/]<name> <uid>
	// <generation> <expiry, seconds since the epoch> <reserved> [<cluster>:<reserved>]...", each <reserved> as
	// name=quantity pairs joined by commas ("-" for none); `kubectl karmada quota describe` shows them as a table.
	// An object in the form releases before wrote is read too.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=250
	Reservations []Reservation `json:"reservations,omitempty"`

	// ReservationCount is len(reservations), for the printer column: as the last writer counted it, which a
	// settle that lands over an admission corrects by a second write.
	// +optional
	ReservationCount int32 `json:"reservationCount,omitempty"`

	// FoldedReservations is the sum of the reservations folded out of the list once it reached its bound
	// (KarmadaQuotaStatus.foldedReservations has the rule).
	// +optional
	FoldedReservations *FoldedReservations `json:"foldedReservations,omitempty"`
}

// LedgerObserved is what the controller counted, in the quota's resource names: what a decision adds to.
type LedgerObserved struct {
	// Used federation-wide.
	// +optional
	Used corev1.ResourceList `json:"used,omitempty"`

	// Clusters is what is used in each member cluster, for the resources a cluster or group limit counts; absent for
	// a quota without such limits. Each is one string, "<cluster>:<used>", <used> as name=quantity pairs joined by
	// commas ("-" for none). An object in the form releases before wrote is read too.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1024
	Clusters []ClusterUsed `json:"clusters,omitempty"`
}

// ClusterUsed is what is used in one member cluster. It is written as one string, as a reservation is and for the
// same reason (reservation_encoding.go); the schema also takes the object the fields below make, which releases
// before wrote.
//
// +kubebuilder:validation:Type=""
// +kubebuilder:pruning:PreserveUnknownFields
type ClusterUsed struct {
	// Name of the member cluster.
	Name string `json:"name"`
	// Used there.
	Used corev1.ResourceList `json:"used"`

	// Malformed, never stored, says why an entry read is not a cluster's usage (UnmarshalJSON); empty for one that is.
	Malformed string `json:"-"`
}

// KarmadaQuotaLedgerList is a list of KarmadaQuotaLedger.
//
// +kubebuilder:object:root=true
type KarmadaQuotaLedgerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KarmadaQuotaLedger `json:"items"`
}
