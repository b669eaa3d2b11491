package interpreter

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
		sets, err := w.OnMember(context.Background(), multi, "member1", nil)
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

// nodeList is a member's nodes, or the error reading them.
type nodeList struct {
	nodes []corev1.Node
	err   error
}

func (n nodeList) Of(context.Context, string) ([]corev1.Node, error) { return n.nodes, n.err }

func TestOnMemberCountsPerNodeWorkloadsOnTheMembersNodes(t *testing.T) {
	ds := utiltesting.MakeBinding("ns", "agent").Obj()
	ds.Spec.Resource.Kind = "DaemonSet"
	w := Workload{PerNode: &NodeFit{NodeSelector: map[string]string{"gpu": "yes"}},
		Requirements: &workv1alpha2.ReplicaRequirements{ResourceRequest: utiltesting.List("cpu", "3")}}
	node := func(name, gpu string) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"gpu": gpu}}}
	}
	sets, err := w.OnMember(context.Background(), ds, "member1", nodeList{nodes: []corev1.Node{node("a", "yes"), node("b", "no"), node("c", "yes")}})
	if err != nil {
		t.Fatal(err)
	}
	if len(sets) != 1 || sets[0].Replicas != 2 || sets[0].PerReplica["requests.cpu"] != 3000 || sets[0].Cluster != "member1" {
		t.Errorf("sets %+v, want 2 pods at 3 CPU on member1: the nodes the template fits", sets)
	}
	if _, err := w.OnMember(context.Background(), ds, "member1", nodeList{err: errors.New("member1 unreachable")}); err == nil ||
		!strings.Contains(err.Error(), "the nodes of member cluster member1 could not be read") {
		t.Errorf("err = %v, want the nodes' read failure, never a count of none", err)
	}
}

func TestOnMemberCountsWhatTheWorkloadHolds(t *testing.T) {
	list := utiltesting.List
	ctx := context.Background()
	onMember1 := func(t *testing.T, w Workload, rb *workv1alpha2.ResourceBinding) usage.Usage {
		t.Helper()
		sets, err := w.OnMember(ctx, rb, "member1", nil)
		if err != nil {
			t.Fatal(err)
		}
		return usage.Usage{Works: map[string][]usage.Placed{"member1": sets}}
	}

	t.Run("a claim's Work holds it on its member without replicas", func(t *testing.T) {
		// Karmada lists a PersistentVolumeClaim's clusters with no replicas, and reads none from its manifest.
		rb := utiltesting.MakeBinding("ns", "data").Resource("v1", "PersistentVolumeClaim").Cluster("member1", 0).Obj()
		w := Workload{Held: usage.Held{PerCluster: resources.List{"persistentvolumeclaims": 1, "requests.storage": 5 * gi}}}
		got := onMember1(t, w, rb).Charge(usage.Selector{}).Clusters
		want := map[string]resources.List{"member1": {"persistentvolumeclaims": 1, "requests.storage": 5 * gi}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("a StatefulSet's Work holds its claims per replica, beside its pods", func(t *testing.T) {
		rb := utiltesting.MakeBinding("ns", "db").Resource("apps/v1", "StatefulSet").Replicas(3).Requests(list("cpu", "1")).
			Cluster("member1", 3).Obj()
		w := Workload{Replicas: 2, Requirements: &workv1alpha2.ReplicaRequirements{ResourceRequest: list("cpu", "1")},
			Held: usage.Held{PerReplica: resources.List{"persistentvolumeclaims": 1, "requests.storage": gi}}}
		got := onMember1(t, w, rb).Charge(usage.Selector{}).Clusters
		want := map[string]resources.List{"member1": {"pods": 2, "requests.cpu": 2000, "persistentvolumeclaims": 2, "requests.storage": 2 * gi}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("a claim requesting no storage is missing its request under a storage quota", func(t *testing.T) {
		rb := utiltesting.MakeBinding("ns", "data").Resource("v1", "PersistentVolumeClaim").Cluster("member1", 0).Obj()
		w := Workload{Held: usage.Held{PerCluster: resources.List{"persistentvolumeclaims": 1}}}
		missing := onMember1(t, w, rb).MissingRequests(usage.Selector{}, []corev1.ResourceName{"requests.storage", "persistentvolumeclaims"})
		if diff := cmp.Diff([]corev1.ResourceName{"requests.storage"}, missing); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("a workload that holds nothing and has no replicas asks nothing", func(t *testing.T) {
		rb := utiltesting.MakeBinding("ns", "settings").Resource("v1", "ConfigMap").Cluster("member1", 0).Obj()
		sets, err := Workload{}.OnMember(ctx, rb, "member1", nil)
		if err != nil || len(sets) != 0 {
			t.Errorf("sets %+v, err %v, want none", sets, err)
		}
	})
}
