package admission

import (
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
)

// placementNotSteered says why karmada-scheduler does not divide a placement's replicas by the room each member
// cluster has, as karmada-quota's estimator tells it (pkg/estimator, which lists what Karmada v1.18.2 consults by
// replica scheduling type); empty for the placements it does divide so.
func placementNotSteered(p *policyv1alpha1.Placement) string {
	const change = "to have it place replicas where member limits leave room, use replicaScheduling Divided with " +
		"weightPreference.dynamicWeight: AvailableReplicas (or Aggregated), or keep the full cluster out through clusterAffinity"
	if p == nil {
		return ""
	}
	switch {
	case p.ReplicaSchedulingType() == policyv1alpha1.ReplicaSchedulingTypeDuplicated:
		return "karmada-scheduler cannot steer this placement: it gives every selected cluster all replicas of a Duplicated workload, " +
			"without asking estimators; " + change
	case p.ReplicaScheduling.ReplicaDivisionPreference == policyv1alpha1.ReplicaDivisionPreferenceWeighted &&
		(p.ReplicaScheduling.WeightPreference == nil || p.ReplicaScheduling.WeightPreference.DynamicWeight == ""):
		return "karmada-scheduler cannot steer this placement: it divides replicas by static weights alone, without asking estimators; " + change
	}
	return ""
}
