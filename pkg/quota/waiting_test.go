package quota

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

func TestWaitsOn(t *testing.T) {
	refused := func(name string) *utiltesting.BindingWrapper {
		return utiltesting.MakeBinding("ns", name).Requests(list("cpu", "1")).Replicas(2).
			Scheduled(false, workv1alpha2.BindingReasonQuotaExceeded)
	}
	cpuQuota := utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "4"))
	memberLimited := cpuQuota.Clone()
	memberLimited.Spec.Clusters = []quotav1alpha1.ClusterLimit{{Name: "member1", Hard: list("cpu", "1")}}
	// Karmada's scheduler found too little room on the members (Unschedulable), as with karmada-quota's estimator.
	noRoom := utiltesting.MakeBinding("ns", "web").Requests(list("cpu", "1")).Replicas(2).Scheduled(false, workv1alpha2.BindingReasonUnschedulable)
	cases := map[string]struct {
		quota    *utiltesting.QuotaWrapper
		binding  *utiltesting.BindingWrapper
		wantNeed resources.List
		want     bool
	}{
		"refused by a quota, needs what this one limits": {
			quota:    cpuQuota,
			binding:  refused("web"),
			wantNeed: resources.List{"requests.cpu": 2000},
			want:     true,
		},
		"partly placed: needs the rest": {
			quota:    cpuQuota,
			binding:  refused("web").Cluster("member1", 1),
			wantNeed: resources.List{"requests.cpu": 1000},
			want:     true,
		},
		"scheduled": {
			quota:   cpuQuota,
			binding: utiltesting.MakeBinding("ns", "web").Requests(list("cpu", "1")).Replicas(2).Scheduled(true, workv1alpha2.BindingReasonSuccess),
		},
		"refused for another reason": {
			quota:   cpuQuota,
			binding: utiltesting.MakeBinding("ns", "web").Requests(list("cpu", "1")).Replicas(2).Scheduled(false, workv1alpha2.BindingReasonNoClusterFit),
		},
		"no member had room: waits on a quota with member limits": {
			quota:    memberLimited,
			binding:  noRoom.Clone().Cluster("member1", 1),
			wantNeed: resources.List{"requests.cpu": 1000},
			want:     true,
		},
		"no member had room: not on a quota without member limits (the members' capacity can say that too)": {
			quota:   cpuQuota,
			binding: noRoom,
		},
		"being deleted": {
			quota:   cpuQuota,
			binding: refused("web").Deleting(),
		},
		"needs nothing this quota limits: it waits on another quota": {
			quota:   utiltesting.MakeQuota("ns", "gpus").Hard(list("nvidia.com/gpu", "4")),
			binding: refused("web"),
		},
		"outside the quota's scope": {
			quota:   utiltesting.MakeQuota("ns", "high").Hard(list("cpu", "4")).Scope(corev1.ScopeSelectorOpIn, "high"),
			binding: refused("web").PriorityClass("low"),
		},
		"no quota can count it": {
			quota:   cpuQuota,
			binding: utiltesting.MakeBinding("ns", "web").Requests(list("cpu", "-1")).Replicas(2).Scheduled(false, workv1alpha2.BindingReasonQuotaExceeded),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			need, got := newLedger(t, tc.quota.Obj()).WaitsOn(tc.binding.Obj())
			if got != tc.want {
				t.Errorf("WaitsOn = %v, want %v", got, tc.want)
			}
			if diff := cmp.Diff(tc.wantNeed, need, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("need (-want +got):\n%s", diff)
			}
		})
	}
}
