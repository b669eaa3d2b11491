package interpreter

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"

	"github.com/karmada-quota/karmada-quota/pkg/resources"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

func TestBound(t *testing.T) {
	list := utiltesting.List
	rb := utiltesting.MakeBinding("ns", "web").Replicas(4).Requests(list("cpu", "2")).PriorityClass("high").
		Cluster("member1", 2).Cluster("member2", 2).Obj()
	three := Workload{Replicas: 4, Requirements: &workv1alpha2.ReplicaRequirements{ResourceRequest: list("cpu", "3")}}
	perCluster := func(u usage.Usage) map[string]resources.List {
		out := map[string]resources.List{}
		for _, p := range u.Placed {
			if p.PriorityClass != "high" {
				t.Errorf("%s lost the binding's class: %q", p.Cluster, p.PriorityClass)
			}
			out[p.Cluster] = resources.List{"pods": p.Replicas, "requests.cpu": resources.Mul(p.PerReplica["requests.cpu"], p.Replicas)}
		}
		return out
	}

	t.Run("the template's new requests on the binding's placement", func(t *testing.T) {
		u, err := usage.Of(three.Bound(rb, nil))
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]resources.List{"member1": {"pods": 2, "requests.cpu": 6000}, "member2": {"pods": 2, "requests.cpu": 6000}}
		if diff := cmp.Diff(want, perCluster(u)); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("a Work's replicas on its member", func(t *testing.T) {
		w := Workload{Replicas: 3, Requirements: &workv1alpha2.ReplicaRequirements{ResourceRequest: list("cpu", "2")}}
		u, err := usage.Of(w.Bound(rb, []workv1alpha2.TargetCluster{{Name: "member1", Replicas: w.Replicas}}))
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]resources.List{"member1": {"pods": 3, "requests.cpu": 6000}}
		if diff := cmp.Diff(want, perCluster(u)); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("the binding is left as it was", func(t *testing.T) {
		before := rb.DeepCopy()
		three.Bound(rb, []workv1alpha2.TargetCluster{{Name: "member3", Replicas: 9}})
		if diff := cmp.Diff(before, rb); diff != "" {
			t.Errorf("asking changed its binding (-before +after):\n%s", diff)
		}
	})
	t.Run("components read as the binding was made", func(t *testing.T) {
		multi := utiltesting.MakeBinding("ns", "job").Component("driver", 1, list("cpu", "1")).
			ComponentPriorityClass("driver", "high").Cluster("member1", 1).Obj()
		w := Workload{Components: []workv1alpha2.Component{{Name: "driver", Replicas: 2,
			ReplicaRequirements: &workv1alpha2.ComponentReplicaRequirements{ResourceRequest: list("cpu", "1")}}}}
		u, err := usage.Of(w.Bound(multi, nil))
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]resources.List{"member1": {"pods": 2, "requests.cpu": 2000}}
		if diff := cmp.Diff(want, perCluster(u)); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		// A manifest read without components, of a binding made with them, is read as one template.
		single, err := usage.Of(three.Bound(multi, nil))
		if err != nil {
			t.Fatal(err)
		}
		if len(single.Placed) != 1 || single.Placed[0].PerReplica["requests.cpu"] != 3000 {
			t.Errorf("read as %+v, want one replica set at 3 CPU", single.Placed)
		}
	})
	t.Run("components naming no class run at the binding's, as the binding's own do", func(t *testing.T) {
		multi := utiltesting.MakeBinding("ns", "job").PriorityClass("low").
			Component("jobmanager", 1, list("cpu", "1")).ComponentPriorityClass("jobmanager", "high").
			Component("taskmanager", 2, list("cpu", "2")).Cluster("member1", 1).Obj()
		w := Workload{Components: []workv1alpha2.Component{
			{Name: "jobmanager", Replicas: 1, ReplicaRequirements: &workv1alpha2.ComponentReplicaRequirements{ResourceRequest: list("cpu", "1")}},
			{Name: "taskmanager", Replicas: 2, ReplicaRequirements: &workv1alpha2.ComponentReplicaRequirements{ResourceRequest: list("cpu", "3")}},
		}}
		sets, err := w.OnMember(multi, "member1")
		if err != nil {
			t.Fatal(err)
		}
		classes := map[string]string{}
		for _, p := range sets {
			classes[fmt.Sprint(p.PerReplica["requests.cpu"])] = p.PriorityClass
		}
		if diff := cmp.Diff(map[string]string{"1000": "high", "3000": "low"}, classes); diff != "" {
			t.Errorf("classes by per-replica cpu (-want +got):\n%s", diff)
		}
		placed, err := usage.Of(multi)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range placed.Placed {
			if p.PerReplica["requests.cpu"] == 2000 && p.PriorityClass != "low" {
				t.Errorf("the binding itself reads taskmanager at %q, the Work's reading must agree", p.PriorityClass)
			}
		}
	})
}
