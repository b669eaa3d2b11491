package controller

import (
	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/pkg/members"
)

// CacheOptions are the cache options the controller's manager must be built with: its cache keeps of every
// ResourceBinding only what the controller reads (TrimBinding), and of every member cluster its name, labels and
// readiness (members.TrimCluster).
func CacheOptions() cache.Options {
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		&workv1alpha2.ResourceBinding{}: {Transform: TrimBinding},
		&clusterv1alpha1.Cluster{}:      {Transform: members.TrimCluster},
	}}
}

// TrimBinding is the transform of the controller's ResourceBinding informer. The informer holds every binding
// of the Karmada control plane, and the controller's memory grows with them (docs/performance.md, at scale);
// most of a binding is of no use to a recount: managed fields, annotations (Karmada's applied-placement copies
// the placement policy), the placement policy itself, most of the eviction tasks and dependents, and the status
// aggregated from every member. What stays is what counting usage (pkg/usage: of an eviction task, its cluster,
// replicas and how long it lasts; of the dependents, only the clusters they place an object on that has none of
// its own), settling reservations (uid and generation),
// finding bindings that wait for quota and requeueing them in order (conditions, priority, creation time) read.
// Trimming a trimmed binding changes nothing; anything that is not a binding is returned as it came.
func TrimBinding(obj any) (any, error) {
	rb, ok := obj.(*workv1alpha2.ResourceBinding)
	if !ok {
		return obj, nil
	}
	return &workv1alpha2.ResourceBinding{
		TypeMeta: rb.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name:              rb.Name,
			Namespace:         rb.Namespace,
			UID:               rb.UID,
			ResourceVersion:   rb.ResourceVersion,
			Generation:        rb.Generation,
			CreationTimestamp: rb.CreationTimestamp,
			DeletionTimestamp: rb.DeletionTimestamp,
			Labels:            rb.Labels,
		},
		Spec: workv1alpha2.ResourceBindingSpec{
			Resource:              rb.Spec.Resource,
			ReplicaRequirements:   rb.Spec.ReplicaRequirements,
			Replicas:              rb.Spec.Replicas,
			Components:            rb.Spec.Components,
			Clusters:              rb.Spec.Clusters,
			SchedulePriority:      rb.Spec.SchedulePriority,
			GracefulEvictionTasks: trimTasks(rb.Spec.GracefulEvictionTasks),
			RequiredBy:            trimDependents(rb),
		},
		Status: workv1alpha2.ResourceBindingStatus{Conditions: rb.Status.Conditions},
	}, nil
}

// trimTasks keeps of each graceful eviction task what usage.With reads.
func trimTasks(tasks []workv1alpha2.GracefulEvictionTask) []workv1alpha2.GracefulEvictionTask {
	if len(tasks) == 0 {
		return nil
	}
	out := make([]workv1alpha2.GracefulEvictionTask, len(tasks))
	for i, t := range tasks {
		out[i] = workv1alpha2.GracefulEvictionTask{
			FromCluster: t.FromCluster, Replicas: t.Replicas, CreationTimestamp: t.CreationTimestamp,
			GracePeriodSeconds: t.GracePeriodSeconds, SuppressDeletion: t.SuppressDeletion,
		}
	}
	return out
}

// trimDependents keeps, of a binding placed only through its dependents (no clusters of its own), the clusters
// they place it on, once each, in one entry: a ConfigMap many Deployments depend on lists each of them.
func trimDependents(rb *workv1alpha2.ResourceBinding) []workv1alpha2.BindingSnapshot {
	if len(rb.Spec.Clusters) > 0 || len(rb.Spec.RequiredBy) == 0 {
		return nil
	}
	var clusters []workv1alpha2.TargetCluster
	seen := map[string]bool{}
	for _, by := range rb.Spec.RequiredBy {
		for _, tc := range by.Clusters {
			if !seen[tc.Name] {
				seen[tc.Name] = true
				clusters = append(clusters, workv1alpha2.TargetCluster{Name: tc.Name})
			}
		}
	}
	return []workv1alpha2.BindingSnapshot{{Clusters: clusters}}
}

var _ toolscache.TransformFunc = TrimBinding
