// Package utiltesting builds the Karmada objects that the quota's tests feed to the usage functions, the webhook
// and the controller, so a test states only what it is about.
package utiltesting

import (
	"fmt"
	"time"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// bindingControllerFinalizer is the finalizer Karmada's binding controller puts on every ResourceBinding
// (karmada.io/pkg/util.BindingControllerFinalizer). It is spelled out so this package does not pull in Karmada's
// controller dependencies.
const bindingControllerFinalizer = "karmada.io/binding-controller"

// FixedTime is the time stamped on deletion timestamps and conditions. It is fixed so that objects built twice
// compare equal.
var FixedTime = metav1.NewTime(time.Date(2025, time.January, 1, 0, 0, 0, 0, time.UTC))

// BindingWrapper builds a ResourceBinding step by step.
type BindingWrapper struct {
	workv1alpha2.ResourceBinding
}

// MakeBinding starts a ResourceBinding for a Deployment of the same name: it has a UID and generation 1 as the
// API server would give it, is unscheduled and requests nothing.
func MakeBinding(namespace, name string) *BindingWrapper {
	return &BindingWrapper{workv1alpha2.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:  namespace,
			Name:       name,
			UID:        types.UID(fmt.Sprintf("uid-%s-%s", namespace, name)),
			Generation: 1,
		},
		Spec: workv1alpha2.ResourceBindingSpec{
			Resource: workv1alpha2.ObjectReference{
				APIVersion: "apps/v1",
				Kind:       "Deployment",
				Namespace:  namespace,
				Name:       name,
			},
		},
	}}
}

// Obj returns a copy of the binding built so far; later changes to the wrapper do not reach it, so one wrapper
// can produce both the old and the new object of an update.
func (w *BindingWrapper) Obj() *workv1alpha2.ResourceBinding {
	return w.ResourceBinding.DeepCopy()
}

// Clone returns an independent wrapper to build a variant from.
func (w *BindingWrapper) Clone() *BindingWrapper {
	return &BindingWrapper{*w.ResourceBinding.DeepCopy()}
}

// UID sets the binding's UID.
func (w *BindingWrapper) UID(uid types.UID) *BindingWrapper {
	w.ObjectMeta.UID = uid
	return w
}

// Generation sets metadata.generation.
func (w *BindingWrapper) Generation(generation int64) *BindingWrapper {
	w.ObjectMeta.Generation = generation
	return w
}

// ResourceVersion sets metadata.resourceVersion.
func (w *BindingWrapper) ResourceVersion(resourceVersion string) *BindingWrapper {
	w.ObjectMeta.ResourceVersion = resourceVersion
	return w
}

// Label sets one label.
func (w *BindingWrapper) Label(key, value string) *BindingWrapper {
	if w.Labels == nil {
		w.Labels = map[string]string{}
	}
	w.Labels[key] = value
	return w
}

// Annotation sets one annotation.
func (w *BindingWrapper) Annotation(key, value string) *BindingWrapper {
	if w.Annotations == nil {
		w.Annotations = map[string]string{}
	}
	w.Annotations[key] = value
	return w
}

// Deleting marks the binding as being deleted. It also adds Karmada's finalizer, because only an object with a
// finalizer can carry a deletion timestamp (fake clients refuse anything else).
func (w *BindingWrapper) Deleting() *BindingWrapper {
	deleted := FixedTime
	w.DeletionTimestamp = &deleted
	if len(w.Finalizers) == 0 {
		w.Finalizers = []string{bindingControllerFinalizer}
	}
	return w
}

// Resource sets the bound object's apiVersion and kind; its name stays the binding's.
func (w *BindingWrapper) Resource(apiVersion, kind string) *BindingWrapper {
	w.Spec.Resource.APIVersion = apiVersion
	w.Spec.Resource.Kind = kind
	return w
}

// Replicas sets spec.replicas, the replicas the workload asks for (not where they are placed: see Cluster).
func (w *BindingWrapper) Replicas(replicas int32) *BindingWrapper {
	w.Spec.Replicas = replicas
	return w
}

// Requests sets the per-replica requests of a single-template workload.
func (w *BindingWrapper) Requests(requests corev1.ResourceList) *BindingWrapper {
	w.replicaRequirements().ResourceRequest = requests.DeepCopy()
	return w
}

// PriorityClass sets the priority class of a single-template workload, which multi-component workloads inherit
// for components that name none.
func (w *BindingWrapper) PriorityClass(priorityClass string) *BindingWrapper {
	w.replicaRequirements().PriorityClassName = priorityClass
	return w
}

func (w *BindingWrapper) replicaRequirements() *workv1alpha2.ReplicaRequirements {
	if w.Spec.ReplicaRequirements == nil {
		w.Spec.ReplicaRequirements = &workv1alpha2.ReplicaRequirements{}
	}
	return w.Spec.ReplicaRequirements
}

// Cluster places replicas on a member cluster, as the Karmada scheduler does by appending to spec.clusters.
func (w *BindingWrapper) Cluster(name string, replicas int32) *BindingWrapper {
	w.Spec.Clusters = append(w.Spec.Clusters, workv1alpha2.TargetCluster{Name: name, Replicas: replicas})
	return w
}

// Evict moves a cluster's replicas into a graceful eviction task, as Karmada's GracefulEvictCluster does: the
// cluster leaves spec.clusters and a task from it keeps its replicas (none for a cluster listed without). The task
// is stamped at FixedTime with grace (nil: Karmada's timeout), held until released when held is set.
func (w *BindingWrapper) Evict(cluster string, grace *int32, held bool) *BindingWrapper {
	task := workv1alpha2.GracefulEvictionTask{FromCluster: cluster, Reason: "TaintUntolerated", Producer: "TaintManager",
		GracePeriodSeconds: grace, CreationTimestamp: &FixedTime}
	if held {
		task.SuppressDeletion = &held
	}
	for i, tc := range w.Spec.Clusters {
		if tc.Name == cluster {
			if tc.Replicas > 0 {
				replicas := tc.Replicas
				task.Replicas = &replicas
			}
			w.Spec.Clusters = append(w.Spec.Clusters[:i:i], w.Spec.Clusters[i+1:]...)
			break
		}
	}
	w.Spec.GracefulEvictionTasks = append(w.Spec.GracefulEvictionTasks, task)
	return w
}

// RequiredBy records that a binding placed on clusters depends on this one's object (propagateDeps): Karmada sends
// the object wherever its dependents are, and lists them here instead of in spec.clusters.
func (w *BindingWrapper) RequiredBy(dependent string, clusters ...string) *BindingWrapper {
	snapshot := workv1alpha2.BindingSnapshot{Namespace: w.Namespace, Name: dependent}
	for _, c := range clusters {
		snapshot.Clusters = append(snapshot.Clusters, workv1alpha2.TargetCluster{Name: c})
	}
	w.Spec.RequiredBy = append(w.Spec.RequiredBy, snapshot)
	return w
}

// Component adds a component of a multi-component workload. Nil requests leave the component without
// replicaRequirements, as Karmada does when an interpreter reports none.
func (w *BindingWrapper) Component(name string, replicas int32, requests corev1.ResourceList) *BindingWrapper {
	c := workv1alpha2.Component{Name: name, Replicas: replicas}
	if requests != nil {
		c.ReplicaRequirements = &workv1alpha2.ComponentReplicaRequirements{ResourceRequest: requests.DeepCopy()}
	}
	w.Spec.Components = append(w.Spec.Components, c)
	return w
}

// ComponentPriorityClass sets the priority class of a component added before. It panics on an unknown component:
// a test that silently configured nothing would pass for the wrong reason.
func (w *BindingWrapper) ComponentPriorityClass(component, priorityClass string) *BindingWrapper {
	for i := range w.Spec.Components {
		c := &w.Spec.Components[i]
		if c.Name != component {
			continue
		}
		if c.ReplicaRequirements == nil {
			c.ReplicaRequirements = &workv1alpha2.ComponentReplicaRequirements{}
		}
		c.ReplicaRequirements.PriorityClassName = priorityClass
		return w
	}
	panic(fmt.Sprintf("ComponentPriorityClass: binding %s/%s has no component %q", w.Namespace, w.Name, component))
}

// Scheduled sets the Scheduled condition as the Karmada scheduler reports it, observed at the current generation
// (call Generation first to change it). Reasons are Karmada's: workv1alpha2.BindingReasonSuccess,
// BindingReasonQuotaExceeded, ...
func (w *BindingWrapper) Scheduled(scheduled bool, reason string) *BindingWrapper {
	status := metav1.ConditionFalse
	if scheduled {
		status = metav1.ConditionTrue
	}
	apimeta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{
		Type:               workv1alpha2.Scheduled,
		Status:             status,
		Reason:             reason,
		ObservedGeneration: w.ObjectMeta.Generation,
		LastTransitionTime: FixedTime,
	})
	return w
}

// SchedulerObservedGeneration sets the generation the scheduler last acted on.
func (w *BindingWrapper) SchedulerObservedGeneration(generation int64) *BindingWrapper {
	w.Status.SchedulerObservedGeneration = generation
	return w
}
