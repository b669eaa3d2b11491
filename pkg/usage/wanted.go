package usage

import (
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Wanted is what rb would use with every replica it asks for (spec.replicas) placed as one set on one cluster: a
// Divided placement, the cheapest Karmada can choose. A Duplicated placement uses this on every cluster it lists,
// and its admission decides. A multi-component binding places one full set of its components.
func Wanted(rb *workv1alpha2.ResourceBinding) (Usage, error) {
	wanted := rb.DeepCopy()
	wanted.Spec.Clusters = []workv1alpha2.TargetCluster{{Name: "any", Replicas: rb.Spec.Replicas}}
	return Of(wanted)
}

// WaitingForQuota reports whether the scheduler's last placement attempt for rb was refused by a quota: Karmada's
// scheduler turns a 403 QuotaExceeded into Scheduled=False with reason QuotaExceeded.
func WaitingForQuota(rb *workv1alpha2.ResourceBinding) bool {
	return unscheduledFor(rb, workv1alpha2.BindingReasonQuotaExceeded)
}

// WaitingForMemberRoom reports whether Karmada's scheduler found too little room on the member clusters for rb's
// replicas: Scheduled=False with reason Unschedulable ("Clusters available replicas N are not enough to schedule").
// With karmada-quota's estimator (pkg/estimator) that is how a binding ends up waiting on cluster and group limits,
// as QuotaExceeded is on the namespace-wide hard; the members' own capacity gives the same verdict, so only a quota
// with such limits counts it as waiting on it (quota.Ledger.WaitsOn).
func WaitingForMemberRoom(rb *workv1alpha2.ResourceBinding) bool {
	return unscheduledFor(rb, workv1alpha2.BindingReasonUnschedulable)
}

// unscheduledFor reports whether the scheduler's last attempt for rb ended Scheduled=False with reason.
func unscheduledFor(rb *workv1alpha2.ResourceBinding, reason string) bool {
	c := meta.FindStatusCondition(rb.Status.Conditions, workv1alpha2.Scheduled)
	return c != nil && c.Status == metav1.ConditionFalse && c.Reason == reason
}
