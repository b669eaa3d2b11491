package interpreter

import (
	"context"
	"fmt"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"

	"github.com/karmada-quota/karmada-quota/pkg/usage"
)

// Bound returns rb as it would be if its replicas asked what w asks: w's per-replica requirements (or its
// components), under rb's priority class, placed on clusters, or where rb places them when clusters is nil. The
// gates beyond the binding and the controller's count of Works read it with usage.With and w.Held, so that one pure
// function says what a binding and what it makes members run and hold use. A cluster of no replicas is kept: a
// PersistentVolumeClaim's or a Service's Work lists its member so.
func (w Workload) Bound(rb *workv1alpha2.ResourceBinding, clusters []workv1alpha2.TargetCluster) *workv1alpha2.ResourceBinding {
	out := rb.DeepCopy()
	class := ""
	if rr := rb.Spec.ReplicaRequirements; rr != nil {
		class = rr.PriorityClassName
	}
	out.Spec.ReplicaRequirements = nil
	if w.Requirements != nil {
		rr := *w.Requirements.DeepCopy()
		if rr.PriorityClassName == "" {
			rr.PriorityClassName = class
		}
		out.Spec.ReplicaRequirements = &rr
	} else if class != "" {
		// No requirements (the components carry them, or the pods request nothing): the class still holds for
		// every replica set that names none.
		out.Spec.ReplicaRequirements = &workv1alpha2.ReplicaRequirements{PriorityClassName: class}
	}
	// Components are read as the binding was made: Karmada fills them in only with its multi-template scheduling on.
	out.Spec.Components = nil
	if len(rb.Spec.Components) > 0 && len(w.Components) > 0 {
		classes := map[string]string{}
		for _, c := range rb.Spec.Components {
			if c.ReplicaRequirements != nil {
				classes[c.Name] = c.ReplicaRequirements.PriorityClassName
			}
		}
		out.Spec.Components = make([]workv1alpha2.Component, len(w.Components))
		for i, c := range w.Components {
			c = *c.DeepCopy()
			if c.ReplicaRequirements != nil && c.ReplicaRequirements.PriorityClassName == "" {
				c.ReplicaRequirements.PriorityClassName = classes[c.Name]
			}
			out.Spec.Components[i] = c
		}
	}
	if clusters != nil {
		out.Spec.Clusters = clusters
	}
	return out
}

// NodeLister reads a member cluster's nodes (members.Nodes), for the workloads that run a pod per node.
type NodeLister interface {
	Of(ctx context.Context, cluster string) ([]corev1.Node, error)
}

// OnMember is what w, one workload of a Work for rb, makes member cluster run and hold, as usage sets: w's replicas
// (a per-node workload counted on the member's nodes as nodes lists them now) at its requirements, at rb's priority
// class where w names none, and what w holds there (its claims per replica, what it holds once per member). The
// Work webhook and the controller's count read a Work through it alike.
func (w Workload) OnMember(ctx context.Context, rb *workv1alpha2.ResourceBinding, cluster string, nodes NodeLister) ([]usage.Placed, error) {
	if w.PerNode != nil {
		list, err := nodes.Of(ctx, cluster)
		if err != nil {
			return nil, fmt.Errorf("%s %s/%s runs a pod per node, and the nodes of member cluster %s could not be read: %w",
				rb.Spec.Resource.Kind, rb.Spec.Resource.Namespace, rb.Spec.Resource.Name, cluster, err)
		}
		w = w.OnNodes(list)
	}
	u, err := usage.With(w.Bound(rb, []workv1alpha2.TargetCluster{{Name: cluster, Replicas: w.Replicas}}), w.Held)
	return u.Placed, err
}
