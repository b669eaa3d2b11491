package usage

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"

	"github.com/karmada-quota/karmada-quota/pkg/resources"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

func TestWanted(t *testing.T) {
	cases := map[string]struct {
		binding *workv1alpha2.ResourceBinding
		want    resources.List
	}{
		"every replica placed once, whatever is placed now": {
			binding: utiltesting.MakeBinding("ns", "web").Replicas(4).Requests(requests("cpu", "500m", "memory", "1Gi")).
				Cluster("member1", 1).Cluster("member2", 1).Obj(),
			want: resources.List{requestsCPU: 2000, requestsMemory: 4 * gi, pods: 4, deployments: 1},
		},
		"a multi-component workload: one full set": {
			binding: utiltesting.MakeBinding("ns", "job").Component("leader", 1, requests("cpu", "1")).
				Component("worker", 3, requests("cpu", "2")).Obj(),
			want: resources.List{requestsCPU: 7000, pods: 4, deployments: 1},
		},
		"no replicas: only the object": {
			binding: utiltesting.MakeBinding("ns", "web").Obj(),
			want:    resources.List{deployments: 1},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			u, err := Wanted(tc.binding)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, u.Charge(Selector{}).Total); diff != "" {
				t.Errorf("Wanted (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWaitingForQuota(t *testing.T) {
	base := utiltesting.MakeBinding("ns", "web")
	cases := map[string]struct {
		binding *workv1alpha2.ResourceBinding
		want    bool
	}{
		"refused by a quota":         {binding: base.Clone().Scheduled(false, workv1alpha2.BindingReasonQuotaExceeded).Obj(), want: true},
		"scheduled":                  {binding: base.Clone().Scheduled(true, workv1alpha2.BindingReasonSuccess).Obj()},
		"not placed, another reason": {binding: base.Clone().Scheduled(false, workv1alpha2.BindingReasonNoClusterFit).Obj()},
		"not acted on yet":           {binding: base.Obj()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := WaitingForQuota(tc.binding); got != tc.want {
				t.Errorf("WaitingForQuota = %v, want %v", got, tc.want)
			}
		})
	}
}
