package admission

import (
	"strings"
	"testing"

	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"

	"github.com/karmada-quota/karmada-quota/pkg/quota"
)

func TestPlacementNotSteered(t *testing.T) {
	divided := func(preference policyv1alpha1.ReplicaDivisionPreference, weights *policyv1alpha1.ClusterPreferences) *policyv1alpha1.Placement {
		return &policyv1alpha1.Placement{ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
			ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDivided, ReplicaDivisionPreference: preference, WeightPreference: weights,
		}}
	}
	cases := map[string]struct {
		placement *policyv1alpha1.Placement
		// want is a part of the explanation; empty: steered, no explanation.
		want string
	}{
		"no replica scheduling: Duplicated": {placement: &policyv1alpha1.Placement{}, want: "all replicas of a Duplicated workload"},
		"Duplicated": {placement: &policyv1alpha1.Placement{ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
			ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDuplicated}}, want: "all replicas of a Duplicated workload"},
		"Divided, weighted without weights": {placement: divided(policyv1alpha1.ReplicaDivisionPreferenceWeighted, nil), want: "static weights alone"},
		"Divided, static weights": {placement: divided(policyv1alpha1.ReplicaDivisionPreferenceWeighted, &policyv1alpha1.ClusterPreferences{
			StaticWeightList: []policyv1alpha1.StaticClusterWeight{{TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1"}}, Weight: 1}}}),
			want: "static weights alone"},
		"Divided, dynamic weights": {placement: divided(policyv1alpha1.ReplicaDivisionPreferenceWeighted, &policyv1alpha1.ClusterPreferences{
			DynamicWeight: policyv1alpha1.DynamicWeightByAvailableReplicas})},
		"Divided, aggregated":                      {placement: divided(policyv1alpha1.ReplicaDivisionPreferenceAggregated, nil)},
		"no placement (not scheduled by a policy)": {},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := placementNotSteered(tc.placement)
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("placementNotSteered = %q, want it to say %q", got, tc.want)
			}
		})
	}
}

// TestRefusalSaysWhyNotSteered: the explanation follows a refusal by a member limit, never one by the namespace's.
func TestRefusalSaysWhyNotSteered(t *testing.T) {
	const why = "karmada-scheduler cannot steer this placement"
	onCluster := &quota.Denial{Quota: "team", Exceeded: []quota.Exceeded{{Where: "cluster member1", Resource: "cpu", Requested: "3", Used: "0", Reserved: "0", Hard: "2"}}}
	inAll := &quota.Denial{Quota: "team", Exceeded: []quota.Exceeded{{Resource: "cpu", Requested: "3", Used: "0", Reserved: "0", Hard: "2"}}}
	if msg := quotaExceeded([]*quota.Denial{onCluster}, why).Error(); !strings.HasSuffix(msg, "hard 2; "+why) {
		t.Errorf("refused on a cluster: %q, want the explanation after the limit", msg)
	}
	if msg := quotaExceeded([]*quota.Denial{inAll}, why).Error(); strings.Contains(msg, why) {
		t.Errorf("refused by the namespace-wide hard: %q, want no word of steering", msg)
	}
	if msg := quotaExceeded([]*quota.Denial{onCluster}, "").Error(); msg != "exceeded quota: team, cpu in cluster member1: requested 3, used 0, reserved 0, hard 2" {
		t.Errorf("a steered placement refused: %q", msg)
	}
}
