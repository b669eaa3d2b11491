package usage_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/quota"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

func resourceList(nameValues ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(nameValues); i += 2 {
		l[corev1.ResourceName(nameValues[i])] = resource.MustParse(nameValues[i+1])
	}
	return l
}

type growsCase struct {
	old  *workv1alpha2.ResourceBinding // nil for a create
	new  *workv1alpha2.ResourceBinding
	want bool
}

func growsCases() map[string]growsCase {
	web := utiltesting.MakeBinding("ns", "web").Requests(resourceList("cpu", "500m", "memory", "1Gi"))
	gpu := utiltesting.MakeBinding("ns", "train").Requests(resourceList("cpu", "1", "memory", "1Gi", "nvidia.com/gpu", "1"))
	noRequests := utiltesting.MakeBinding("ns", "web")
	twoComponents := func(leaderRequests corev1.ResourceList) *workv1alpha2.ResourceBinding {
		return utiltesting.MakeBinding("ns", "job").
			Component("driver", 1, nil).ComponentPriorityClass("driver", "low").
			Component("leader", 1, leaderRequests).ComponentPriorityClass("leader", "high").
			Cluster("member1", 0).Obj()
	}

	return map[string]growsCase{
		"create of a scheduled binding": {
			new:  web.Clone().Cluster("member1", 2).Obj(),
			want: true,
		},
		"create of an unscheduled binding still counts its object": {
			new:  web.Obj(),
			want: true,
		},
		"scheduling": {
			old:  web.Obj(),
			new:  web.Clone().Cluster("member1", 2).Obj(),
			want: true,
		},
		"scale up": {
			old:  web.Clone().Cluster("member1", 2).Obj(),
			new:  web.Clone().Cluster("member1", 3).Obj(),
			want: true,
		},
		"scale down": {
			old:  web.Clone().Cluster("member1", 3).Obj(),
			new:  web.Clone().Cluster("member1", 1).Obj(),
			want: false,
		},
		"label-only change": {
			old:  web.Clone().Cluster("member1", 2).Obj(),
			new:  web.Clone().Label("app", "web").Cluster("member1", 2).Obj(),
			want: false,
		},
		"replicas moved between clusters": {
			old:  web.Clone().Cluster("member1", 2).Obj(),
			new:  web.Clone().Cluster("member1", 1).Cluster("member2", 1).Obj(),
			want: false,
		},
		"replicas moved from class low to high with the same total": {
			old:  web.Clone().PriorityClass("low").Cluster("member1", 2).Obj(),
			new:  web.Clone().PriorityClass("high").Cluster("member1", 2).Obj(),
			want: true,
		},
		"a bigger request per replica": {
			old:  web.Clone().Cluster("member1", 2).Obj(),
			new:  web.Clone().Requests(resourceList("cpu", "501m", "memory", "1Gi")).Cluster("member1", 2).Obj(),
			want: true,
		},
		"a cpu request dropped": {
			old:  web.Clone().Cluster("member1", 2).Obj(),
			new:  web.Clone().Requests(resourceList("memory", "1Gi")).Cluster("member1", 2).Obj(),
			want: true,
		},
		"a gpu request dropped": {
			old:  gpu.Clone().Cluster("member1", 2).Obj(),
			new:  gpu.Clone().Requests(resourceList("cpu", "1", "memory", "1Gi")).Cluster("member1", 2).Obj(),
			want: false,
		},
		"a binding that already lacked requests is relabelled": {
			old:  noRequests.Clone().Cluster("member1", 2).Obj(),
			new:  noRequests.Clone().Label("app", "web").Cluster("member1", 2).Obj(),
			want: false,
		},
		"the bound object changes kind": {
			old:  web.Clone().Cluster("member1", 2).Obj(),
			new:  web.Clone().Resource("apps/v1", "StatefulSet").Cluster("member1", 2).Obj(),
			want: true,
		},
		"more clusters for a duplicated workload": {
			old:  web.Clone().Cluster("member1", 2).Obj(),
			new:  web.Clone().Cluster("member1", 2).Cluster("member2", 2).Obj(),
			want: true,
		},
		"a component drops a cpu request that another class already lacked": {
			old:  twoComponents(resourceList("cpu", "1")),
			new:  twoComponents(resourceList()),
			want: true,
		},
		"components that lacked requests are relabelled": {
			old:  twoComponents(nil),
			new:  twoComponents(nil),
			want: false,
		},
	}
}

func usageOf(t *testing.T, rb *workv1alpha2.ResourceBinding) usage.Usage {
	t.Helper()
	u, err := usage.Of(rb)
	if err != nil {
		t.Fatalf("usage.Of: %v", err)
	}
	return u
}

func TestGrows(t *testing.T) {
	for name, tc := range growsCases() {
		t.Run(name, func(t *testing.T) {
			var old *usage.Usage
			if tc.old != nil {
				u := usageOf(t, tc.old)
				old = &u
			}
			if diff := cmp.Diff(tc.want, usage.Grows(usageOf(t, tc.new), old)); diff != "" {
				t.Errorf("Grows (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGrowsAgreesWithTheLedger holds Grows to its promise: when it is false, no quota, whatever its scope, demands
// anything of the write, so skipping the quota read cannot admit what a quota would refuse.
func TestGrowsAgreesWithTheLedger(t *testing.T) {
	computeAndPods := resourceList("cpu", "1k", "memory", "1Ti", "nvidia.com/gpu", "100", "pods", "1k")
	quotas := []*quotav1alpha1.KarmadaQuota{
		utiltesting.MakeQuota("ns", "unscoped").Hard(resourceList(
			"cpu", "1k", "memory", "1Ti", "nvidia.com/gpu", "100", "pods", "1k", "count/deployments.apps", "100")).Obj(),
		utiltesting.MakeQuota("ns", "in-high").Hard(computeAndPods).Scope(corev1.ScopeSelectorOpIn, "high").Obj(),
		utiltesting.MakeQuota("ns", "in-low").Hard(computeAndPods).Scope(corev1.ScopeSelectorOpIn, "low").Obj(),
		utiltesting.MakeQuota("ns", "not-in-high").Hard(computeAndPods).Scope(corev1.ScopeSelectorOpNotIn, "high").Obj(),
		utiltesting.MakeQuota("ns", "exists").Hard(computeAndPods).Scope(corev1.ScopeSelectorOpExists).Obj(),
		utiltesting.MakeQuota("ns", "does-not-exist").Hard(computeAndPods).Scope(corev1.ScopeSelectorOpDoesNotExist).Obj(),
	}
	for name, tc := range growsCases() {
		t.Run(name, func(t *testing.T) {
			var old *usage.Usage
			if tc.old != nil {
				u := usageOf(t, tc.old)
				old = &u
			}
			newUsage := usageOf(t, tc.new)
			grows := usage.Grows(newUsage, old)
			demanded := false
			for _, q := range quotas {
				l, err := quota.NewLedger(q, nil)
				if err != nil {
					t.Fatalf("NewLedger(%s, nil): %v", q.Name, err)
				}
				d := l.Demand(quota.Key{UID: tc.new.UID, Generation: tc.new.Generation}, utiltesting.ReservationOwner(tc.new), newUsage, old)
				if len(d.Increase) == 0 && len(d.Missing) == 0 {
					continue
				}
				demanded = true
				if !grows {
					t.Errorf("Grows = false, but quota %s demands increase %v, missing %v", q.Name, d.Increase, d.Missing)
				}
			}
			if grows && !demanded {
				t.Logf("Grows = true although none of the test quotas demands anything (allowed: Grows may be conservative)")
			}
		})
	}
}

func TestGrowsOnACluster(t *testing.T) {
	of := func(b *utiltesting.BindingWrapper) usage.Usage { return usageOfBinding(t, b) }
	before := of(webAskingOneCPU().Cluster("member1", 2).Cluster("member2", 2))
	for name, tc := range map[string]struct {
		after usage.Usage
		want  bool
	}{
		"a move to member3":          {of(webAskingOneCPU().Cluster("member1", 2).Cluster("member3", 2)), true},
		"a move between two members": {of(webAskingOneCPU().Cluster("member1", 3).Cluster("member2", 1)), true},
		"a scale-down":               {of(webAskingOneCPU().Cluster("member1", 1).Cluster("member2", 2)), false},
		"no change":                  {of(webAskingOneCPU().Cluster("member2", 2).Cluster("member1", 2)), false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := usage.GrowsOnACluster(tc.after, &before); got != tc.want {
				t.Errorf("GrowsOnACluster = %v, want %v", got, tc.want)
			}
			if usage.Grows(tc.after, &before) {
				t.Error("Grows sees growth: the case proves nothing about moves")
			}
		})
	}
}

func TestReleases(t *testing.T) {
	of := func(b *utiltesting.BindingWrapper) usage.Usage { return usageOfBinding(t, b) }
	before := of(webAskingOneCPU().Cluster("member1", 2).Cluster("member2", 2))
	for name, tc := range map[string]struct {
		after usage.Usage
		want  bool
	}{
		"a scale-up":                  {of(webAskingOneCPU().Cluster("member1", 3).Cluster("member2", 2)), false},
		"no change":                   {of(webAskingOneCPU().Cluster("member2", 2).Cluster("member1", 2)), false},
		"a scale-down":                {of(webAskingOneCPU().Cluster("member1", 1).Cluster("member2", 2)), true},
		"a move between two members":  {of(webAskingOneCPU().Cluster("member1", 3).Cluster("member2", 1)), true},
		"a lower request":             {of(utiltesting.MakeBinding("ns", "web").Requests(utiltesting.List("cpu", "500m")).Cluster("member1", 2).Cluster("member2", 2)), true},
		"a higher request":            {of(utiltesting.MakeBinding("ns", "web").Requests(utiltesting.List("cpu", "2")).Cluster("member1", 2).Cluster("member2", 2)), false},
		"unscheduled from everywhere": {of(webAskingOneCPU()), true},
	} {
		t.Run(name, func(t *testing.T) {
			if got := usage.Releases(tc.after, before); got != tc.want {
				t.Errorf("Releases = %v, want %v", got, tc.want)
			}
		})
	}
}

// webAskingOneCPU is a binding whose replicas ask 1 cpu each, placed nowhere yet.
func webAskingOneCPU() *utiltesting.BindingWrapper {
	return utiltesting.MakeBinding("ns", "web").Requests(utiltesting.List("cpu", "1"))
}

func usageOfBinding(t *testing.T, b *utiltesting.BindingWrapper) usage.Usage {
	t.Helper()
	u, err := usage.Of(b.Obj())
	if err != nil {
		t.Fatal(err)
	}
	return u
}
