package controller

import (
	"encoding/json"
	goruntime "runtime"
	"sync"
	"unique"
	"weak"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/members"
	"github.com/karmada-quota/karmada-quota/pkg/quotaio"
	"github.com/karmada-quota/karmada-quota/pkg/scheme"
	"github.com/karmada-quota/karmada-quota/pkg/util/kindjson"
)

// CacheOptions are the cache options the controller's manager must be built with, on clients (whose mapper the
// manager is given too): its cache keeps of every ResourceBinding only what the controller reads (TrimBinding), of
// every member cluster its name, labels and readiness (members.TrimCluster), of every quota one resource list where
// spec and status hold the same (quotaio.TrimQuota), and of everything (ledgers, Services) all but the managed
// fields, which nothing here reads. An update of an object read without them keeps the stored ones. The informers of
// what comes by the thousand (bindings, quotas, their ledgers; the status writes of a recount come back as quota
// events) decode it with kindjson's serializer, which reads each object's kind without a pass of its own over the
// object.
func CacheOptions(clients kindjson.Clients) (cache.Options, error) {
	return kindjson.ReadWhole(cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&workv1alpha2.ResourceBinding{}:       {Transform: TrimBinding},
			&clusterv1alpha1.Cluster{}:            {Transform: members.TrimCluster},
			&quotav1alpha1.KarmadaQuota{}:         {Transform: quotaio.TrimQuota},
			&quotav1alpha1.KarmadaBusinessQuota{}: {Transform: quotaio.TrimQuota},
		},
	}, clients, scheme.Scheme, &workv1alpha2.ResourceBinding{}, &quotav1alpha1.KarmadaQuota{}, &quotav1alpha1.KarmadaQuotaLedger{},
		&quotav1alpha1.KarmadaBusinessQuota{}, &quotav1alpha1.KarmadaBusinessQuotaLedger{})
}

// TrimBinding is the transform of the controller's ResourceBinding informer: it keeps a CachedBinding. The
// informer holds every binding of the Karmada control plane, and the controller's memory grows with them
// (docs/performance.md, at scale); most of a binding is of no use to a recount: managed fields, annotations
// (Karmada's applied-placement copies the placement policy), labels but the permanent ID its Works are labelled
// with, the placement policy itself, most of the eviction tasks and dependents, conditions but Scheduled (without
// its message), and the status aggregated from every member. What stays is what counting usage (pkg/usage: of an
// eviction task, its cluster, replicas and how long it lasts; of the dependents, only the clusters they place an
// object on that has none of its own), settling reservations (uid and generation), matching Works (the permanent
// ID), and finding bindings that wait for quota and requeueing them in order (the Scheduled condition, priority,
// creation time) read.
//
// What many bindings hold alike is held once (interned): the replica requirements, which the workloads of one
// team tend to repeat and whose decoded resource list outweighs the rest of a trimmed binding, and the names
// every binding repeats (namespace, kinds, member clusters). The cache's objects are only ever read (a binding
// changed by the controller is a copy), so they may share them. Anything that is not a ResourceBinding, a
// CachedBinding included, is returned as it came.
func TrimBinding(obj any) (any, error) {
	rb, ok := obj.(*workv1alpha2.ResourceBinding)
	if !ok {
		return obj, nil
	}
	return &CachedBinding{
		ObjectMeta: metav1.ObjectMeta{
			Name:              rb.Name,
			Namespace:         intern(rb.Namespace),
			UID:               rb.UID,
			ResourceVersion:   rb.ResourceVersion,
			Generation:        rb.Generation,
			CreationTimestamp: rb.CreationTimestamp,
			DeletionTimestamp: rb.DeletionTimestamp,
		},
		PermanentID:         rb.Labels[workv1alpha2.ResourceBindingPermanentIDLabel],
		Resource:            trimResource(rb.Spec.Resource),
		ReplicaRequirements: requirements.share(rb.Spec.ReplicaRequirements),
		Replicas:            rb.Spec.Replicas,
		Clusters:            internClusters(rb.Spec.Clusters),
		Scheduled:           trimScheduled(rb.Status.Conditions),
		Rare: rareOf(rareFields{
			Components:            rb.Spec.Components,
			SchedulePriority:      rb.Spec.SchedulePriority,
			GracefulEvictionTasks: trimTasks(rb.Spec.GracefulEvictionTasks),
			RequiredBy:            trimDependents(rb),
		}),
	}, nil
}

// CachedBinding is what the controller's informer keeps of a ResourceBinding (TrimBinding): its identity and what
// a recount reads, in a struct of its own. A ResourceBinding takes 704 bytes of heap with every field empty, and
// the one label kept a map of 384 more; this holds the same in about half the bytes
// (BenchmarkCachedBinding), and the controller keeps one per binding of the control plane. Readers get the
// binding back (Binding) for as long as they read it.
type CachedBinding struct {
	// ObjectMeta holds the name, namespace, UID, resourceVersion, generation, and creation and deletion
	// timestamps; nothing else.
	metav1.ObjectMeta
	// PermanentID is Karmada's permanent ID label (workv1alpha2.ResourceBindingPermanentIDLabel), which the
	// binding's Works carry too; empty when the binding has none.
	PermanentID string
	// What TrimBinding keeps of the binding's spec.
	Resource            cachedResource
	ReplicaRequirements *workv1alpha2.ReplicaRequirements
	Replicas            int32
	Clusters            []workv1alpha2.TargetCluster
	// Scheduled is the binding's Scheduled condition without its message; nil when it has none.
	Scheduled *metav1.Condition
	// Rare is what few bindings hold, nil when a binding holds none of it: every field in the struct itself costs
	// each binding its bytes, held or not, and the struct fits the 384-byte size class of Go's allocator with them
	// out of it (480 with them in).
	Rare *rareFields
}

// cachedResource is what TrimBinding keeps of spec.resource: all but the template's UID, which nothing here reads.
type cachedResource struct {
	APIVersion, Kind, Namespace, Name, ResourceVersion string
}

// rareFields are the parts of a binding's spec TrimBinding keeps that few bindings have: the components of a
// multi-component workload, a scheduling priority, graceful eviction tasks (during a failover), and the dependents
// of a binding placed only through them.
type rareFields struct {
	Components            []workv1alpha2.Component
	SchedulePriority      *workv1alpha2.SchedulePriority
	GracefulEvictionTasks []workv1alpha2.GracefulEvictionTask
	RequiredBy            []workv1alpha2.BindingSnapshot
}

// rareOf is r to keep, nil when it holds nothing (an empty list is nothing: every reader ranges over them).
func rareOf(r rareFields) *rareFields {
	if len(r.Components) == 0 && r.SchedulePriority == nil && len(r.GracefulEvictionTasks) == 0 && len(r.RequiredBy) == 0 {
		return nil
	}
	return &r
}

var bindingAPIVersion = workv1alpha2.SchemeGroupVersion.String()

// Binding is the ResourceBinding that c keeps: what TrimBinding kept of it, where the binding it came from holds
// it. It shares what c holds (the requirements, the clusters, the tasks) and so is only to be read, like c; a
// binding to change is a copy of it (DeepCopy).
func (c *CachedBinding) Binding() *workv1alpha2.ResourceBinding {
	rb := &workv1alpha2.ResourceBinding{}
	c.fill(rb)
	return rb
}

// fill makes rb the binding c keeps (Binding), in place: a list of them is one allocation.
func (c *CachedBinding) fill(rb *workv1alpha2.ResourceBinding) {
	*rb = workv1alpha2.ResourceBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: bindingAPIVersion, Kind: workv1alpha2.ResourceKindResourceBinding},
		ObjectMeta: c.ObjectMeta,
		Spec: workv1alpha2.ResourceBindingSpec{
			Resource: workv1alpha2.ObjectReference{
				APIVersion: c.Resource.APIVersion, Kind: c.Resource.Kind, Namespace: c.Resource.Namespace,
				Name: c.Resource.Name, ResourceVersion: c.Resource.ResourceVersion,
			},
			ReplicaRequirements: c.ReplicaRequirements,
			Replicas:            c.Replicas,
			Clusters:            c.Clusters,
		},
	}
	if r := c.Rare; r != nil {
		rb.Spec.Components, rb.Spec.SchedulePriority = r.Components, r.SchedulePriority
		rb.Spec.GracefulEvictionTasks, rb.Spec.RequiredBy = r.GracefulEvictionTasks, r.RequiredBy
	}
	if c.PermanentID != "" {
		rb.Labels = map[string]string{workv1alpha2.ResourceBindingPermanentIDLabel: c.PermanentID}
	}
	if c.Scheduled != nil {
		rb.Status.Conditions = []metav1.Condition{*c.Scheduled}
	}
}

// GetObjectKind implements runtime.Object. A CachedBinding carries no type meta: it is always a ResourceBinding's.
func (c *CachedBinding) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object.
func (c *CachedBinding) DeepCopyObject() runtime.Object {
	if c == nil {
		return nil
	}
	// The spec's generated deep copy copies every field of it c keeps.
	spec := c.Binding().Spec.DeepCopy()
	return &CachedBinding{
		ObjectMeta: *c.ObjectMeta.DeepCopy(), PermanentID: c.PermanentID, Resource: c.Resource,
		ReplicaRequirements: spec.ReplicaRequirements, Replicas: spec.Replicas, Clusters: spec.Clusters,
		Scheduled: c.Scheduled.DeepCopy(),
		Rare: rareOf(rareFields{
			Components: spec.Components, SchedulePriority: spec.SchedulePriority,
			GracefulEvictionTasks: spec.GracefulEvictionTasks, RequiredBy: spec.RequiredBy,
		}),
	}
}

// bindingOf is the ResourceBinding an informer event carries: the one a CachedBinding keeps, or the binding itself
// (an event made by hand), also when a tombstone wraps it.
func bindingOf(obj any) (*workv1alpha2.ResourceBinding, bool) {
	if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	switch b := obj.(type) {
	case *CachedBinding:
		return b.Binding(), true
	case *workv1alpha2.ResourceBinding:
		return b, true
	}
	return nil, false
}

// intern returns the one copy of s the process keeps while any is in use (unique.Make).
func intern(s string) string {
	if s == "" {
		return s
	}
	return unique.Make(s).Value()
}

// trimResource keeps of the template's reference what names it and its version (the template readers cache by
// it), without its UID.
func trimResource(ref workv1alpha2.ObjectReference) cachedResource {
	return cachedResource{
		APIVersion: intern(ref.APIVersion), Kind: intern(ref.Kind), Namespace: intern(ref.Namespace), Name: ref.Name,
		ResourceVersion: ref.ResourceVersion,
	}
}

// internClusters interns the cluster names of a placement, in place: the slice is the decoded object's own.
func internClusters(clusters []workv1alpha2.TargetCluster) []workv1alpha2.TargetCluster {
	for i := range clusters {
		clusters[i].Name = intern(clusters[i].Name)
	}
	return clusters
}

// trimScheduled keeps the Scheduled condition, all the controller reads (usage.WaitingForQuota, the time a binding
// began to wait), without its message.
func trimScheduled(conditions []metav1.Condition) *metav1.Condition {
	c := meta.FindStatusCondition(conditions, workv1alpha2.Scheduled)
	if c == nil {
		return nil
	}
	return &metav1.Condition{
		Type: workv1alpha2.Scheduled, Status: metav1.ConditionStatus(intern(string(c.Status))), Reason: intern(c.Reason),
		ObservedGeneration: c.ObservedGeneration, LastTransitionTime: c.LastTransitionTime,
	}
}

// requirements are the replica requirements the cached bindings share.
var requirements = newSharedRequirements()

// sharedRequirements holds one copy of each distinct spec.replicaRequirements in use, by its JSON, weakly: a copy
// no cached binding points to any more is collected, and its entry goes with it.
type sharedRequirements struct {
	mu    sync.Mutex
	byKey map[string]weak.Pointer[workv1alpha2.ReplicaRequirements]
}

func newSharedRequirements() *sharedRequirements {
	return &sharedRequirements{byKey: map[string]weak.Pointer[workv1alpha2.ReplicaRequirements]{}}
}

// share returns the copy in use equal to r, or makes r that copy.
func (s *sharedRequirements) share(r *workv1alpha2.ReplicaRequirements) *workv1alpha2.ReplicaRequirements {
	if r == nil {
		return nil
	}
	raw, err := json.Marshal(r)
	if err != nil {
		return r
	}
	key := string(raw)
	s.mu.Lock()
	defer s.mu.Unlock()
	if shared := s.byKey[key].Value(); shared != nil {
		return shared
	}
	s.byKey[key] = weak.Make(r)
	goruntime.AddCleanup(r, s.forget, key)
	return r
}

// forget drops the entry of a collected copy. Another copy may hold the key by then; it stays.
func (s *sharedRequirements) forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byKey[key].Value() == nil {
		delete(s.byKey, key)
	}
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

var (
	_ toolscache.TransformFunc = TrimBinding
	_ client.Object            = &CachedBinding{}
)
