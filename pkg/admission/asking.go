package admission

import (
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"

	"github.com/karmada-quota/karmada-quota/pkg/interpreter"
)

// asking returns rb as it would be if its replicas asked what w asks: w's per-replica requirements (or its
// components), under rb's priority class, placed on clusters, or where rb places them when clusters is nil. Both
// gates beyond the binding compare it with rb, so that one pure function (usage.Of) says what both use.
func asking(rb *workv1alpha2.ResourceBinding, w interpreter.Workload, clusters []workv1alpha2.TargetCluster) *workv1alpha2.ResourceBinding {
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
