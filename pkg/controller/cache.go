package controller

import (
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CacheOptions are the cache options the controller's manager must be built with: its cache keeps of every
// ResourceBinding only what the controller reads (TrimBinding).
func CacheOptions() cache.Options {
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		&workv1alpha2.ResourceBinding{}: {Transform: TrimBinding},
	}}
}

// TrimBinding is the transform of the controller's ResourceBinding informer. The informer holds every binding
// of the Karmada control plane, and the controller's memory grows with them (docs/performance.md, at scale);
// most of a binding is of no use to a recount: managed fields, annotations (Karmada's applied-placement copies
// the placement policy), the placement policy itself, eviction tasks, dependents and the status aggregated from
// every member. What stays is what counting usage (pkg/usage), settling reservations (uid and generation),
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
			Resource:            rb.Spec.Resource,
			ReplicaRequirements: rb.Spec.ReplicaRequirements,
			Replicas:            rb.Spec.Replicas,
			Components:          rb.Spec.Components,
			Clusters:            rb.Spec.Clusters,
			SchedulePriority:    rb.Spec.SchedulePriority,
		},
		Status: workv1alpha2.ResourceBindingStatus{Conditions: rb.Status.Conditions},
	}, nil
}

var _ toolscache.TransformFunc = TrimBinding
