package controller

import (
	"encoding/json"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/karmada-quota/karmada-quota/pkg/resources"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
	"github.com/karmada-quota/karmada-quota/pkg/util/kindjson"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

// withEverythingElse adds to a binding what Karmada writes on it and the controller never reads.
func withEverythingElse(rb *workv1alpha2.ResourceBinding) *workv1alpha2.ResourceBinding {
	rb.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "karmada-scheduler", Operation: metav1.ManagedFieldsOperationUpdate,
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:clusters":{}}}`)}}}
	rb.Annotations = map[string]string{"policy.karmada.io/applied-placement": `{"clusterAffinity":{"clusterNames":["member1","member2"]}}`}
	rb.Finalizers = []string{"karmada.io/binding-controller"}
	rb.Spec.Placement = &policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1", "member2"}}}
	rb.Spec.GracefulEvictionTasks = []workv1alpha2.GracefulEvictionTask{{FromCluster: "member3", Replicas: ptr.To[int32](1), Reason: "TaintUntolerated"}}
	rb.Spec.RequiredBy = []workv1alpha2.BindingSnapshot{
		{Namespace: rb.Namespace, Name: "parent", Clusters: []workv1alpha2.TargetCluster{{Name: "member1", Replicas: 2}, {Name: "member4"}}},
		{Namespace: rb.Namespace, Name: "sibling", Clusters: []workv1alpha2.TargetCluster{{Name: "member4"}}},
	}
	rb.Spec.SchedulerName = "default-scheduler"
	rb.Spec.Resource.UID = "uid-of-the-template"
	rb.Status.SchedulerObservedGeneration = rb.Generation
	rb.Status.Conditions = append(rb.Status.Conditions, metav1.Condition{Type: workv1alpha2.FullyApplied, Status: metav1.ConditionTrue,
		Reason: "FullyAppliedSuccess", Message: "All works have been successfully applied"})
	rb.Status.AggregatedStatus = []workv1alpha2.AggregatedStatusItem{{ClusterName: "member1", Applied: true,
		Status: &runtime.RawExtension{Raw: []byte(`{"readyReplicas":2,"replicas":2}`)}}}
	return rb
}

func TestTrimBindingKeepsWhatTheControllerReads(t *testing.T) {
	requests := list("cpu", "500m", "memory", "64Mi")
	for name, rb := range map[string]*workv1alpha2.ResourceBinding{
		"placed on two members": utiltesting.MakeBinding(ns, "web").Replicas(3).Requests(requests).PriorityClass("high").
			Cluster("member1", 2).Cluster("member2", 1).Scheduled(true, workv1alpha2.BindingReasonSuccess).Obj(),
		"waiting for quota": utiltesting.MakeBinding(ns, "web").Replicas(3).Requests(requests).
			Scheduled(false, workv1alpha2.BindingReasonQuotaExceeded).Obj(),
		"multi-component": utiltesting.MakeBinding(ns, "job").Component("driver", 1, requests).Component("worker", 4, requests).
			ComponentPriorityClass("worker", "batch").Cluster("member1", 1).Obj(),
		"being deleted":          utiltesting.MakeBinding(ns, "web").Replicas(1).Requests(requests).Cluster("member1", 1).Deleting().Obj(),
		"a CRD with no replicas": utiltesting.MakeBinding(ns, "config").Resource("v1", "ConfigMap").Cluster("member1", 0).Obj(),
	} {
		t.Run(name, func(t *testing.T) {
			rb.CreationTimestamp = utiltesting.FixedTime
			rb.ResourceVersion = "42"
			rb.Labels = map[string]string{"app": "web", workv1alpha2.ResourceBindingPermanentIDLabel: "id-web"}
			rb.Spec.SchedulePriority = &workv1alpha2.SchedulePriority{Priority: 7}
			full := withEverythingElse(rb)
			obj, err := TrimBinding(full.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			cached := obj.(*CachedBinding)
			trimmed := cached.Binding()

			// Held on each member the object is on: the clusters of its dependents count when it has none of its own.
			held := usage.Held{PerCluster: resources.List{corev1.ResourcePersistentVolumeClaims: 1}}
			want, wantErr := usage.With(full, held)
			got, gotErr := usage.With(trimmed, held)
			if diff := cmp.Diff(want, got); diff != "" || (wantErr == nil) != (gotErr == nil) {
				t.Errorf("usage of the trimmed binding differs (-full +trimmed):\n%s\nerrors: %v, %v", diff, wantErr, gotErr)
			}
			if usage.WaitingForQuota(trimmed) != usage.WaitingForQuota(full) {
				t.Errorf("WaitingForQuota: trimmed %v, full %v", usage.WaitingForQuota(trimmed), usage.WaitingForQuota(full))
			}
			kept := func(rb *workv1alpha2.ResourceBinding) any {
				var scheduled []any
				if c := meta.FindStatusCondition(rb.Status.Conditions, workv1alpha2.Scheduled); c != nil {
					scheduled = []any{c.Status, c.Reason, c.ObservedGeneration, c.LastTransitionTime}
				}
				return []any{rb.Name, rb.Namespace, rb.UID, rb.ResourceVersion, rb.Generation, rb.CreationTimestamp,
					rb.DeletionTimestamp, rb.Labels[workv1alpha2.ResourceBindingPermanentIDLabel], rb.Spec.SchedulePriority, scheduled,
					rb.Spec.Resource.APIVersion, rb.Spec.Resource.Kind, rb.Spec.Resource.Namespace, rb.Spec.Resource.Name, rb.Spec.Resource.ResourceVersion}
			}
			if diff := cmp.Diff(kept(full), kept(trimmed)); diff != "" {
				t.Errorf("identity, timestamps, priority, the Scheduled condition or the template lost (-full +trimmed):\n%s", diff)
			}
			if len(trimmed.Labels) != 1 || len(trimmed.Status.Conditions) > 1 ||
				len(trimmed.Status.Conditions) == 1 && trimmed.Status.Conditions[0].Message != "" {
				t.Errorf("labels or conditions the controller never reads kept: %v, %+v", trimmed.Labels, trimmed.Status.Conditions)
			}

			if trimmed.ManagedFields != nil || trimmed.Annotations != nil || trimmed.Finalizers != nil ||
				trimmed.Spec.Placement != nil || trimmed.Spec.GracefulEvictionTasks[0].Reason != "" ||
				(trimmed.Spec.RequiredBy != nil && (len(trimmed.Spec.Clusters) > 0 || len(trimmed.Spec.RequiredBy) != 1 || trimmed.Spec.RequiredBy[0].Name != "")) ||
				trimmed.Spec.SchedulerName != "" || trimmed.Status.AggregatedStatus != nil || trimmed.Status.SchedulerObservedGeneration != 0 {
				t.Errorf("the trimmed binding still holds what the controller never reads: %+v", trimmed)
			}

			again, err := TrimBinding(trimmed.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(trimmed, again.(*CachedBinding).Binding()); diff != "" {
				t.Errorf("trimming twice changed the binding (-once +twice):\n%s", diff)
			}
			if again, err := TrimBinding(cached); err != nil || again != any(cached) {
				t.Errorf("trimming a CachedBinding gave %v, %v; want it as it came", again, err)
			}

			// A deep copy is the same binding and shares nothing with the cache's.
			copied := cached.DeepCopyObject().(*CachedBinding)
			if diff := cmp.Diff(cached, copied); diff != "" {
				t.Errorf("the deep copy differs (-cached +copy):\n%s", diff)
			}
			if copied.ReplicaRequirements != nil && copied.ReplicaRequirements == cached.ReplicaRequirements ||
				len(copied.Clusters) > 0 && &copied.Clusters[0] == &cached.Clusters[0] ||
				copied.Scheduled != nil && copied.Scheduled == cached.Scheduled ||
				copied.Rare != nil && copied.Rare == cached.Rare {
				t.Error("the deep copy shares what the cached binding holds")
			}
		})
	}
}

// TestTrimBindingHoldsRareFieldsOnlyWhenThere: a binding without components, priority, eviction tasks or
// dependents holds no rareFields; one with any of them holds it, and gives it back.
func TestTrimBindingHoldsRareFieldsOnlyWhenThere(t *testing.T) {
	requests := list("cpu", "500m")
	plain := utiltesting.MakeBinding(ns, "web").Replicas(2).Requests(requests).Cluster("member1", 2).Obj()
	obj, err := TrimBinding(plain)
	if err != nil {
		t.Fatal(err)
	}
	if rare := obj.(*CachedBinding).Rare; rare != nil {
		t.Errorf("a plain binding holds rare fields: %+v", rare)
	}
	prioritized := plain.DeepCopy()
	prioritized.Spec.SchedulePriority = &workv1alpha2.SchedulePriority{Priority: 7}
	obj, err = TrimBinding(prioritized)
	if err != nil {
		t.Fatal(err)
	}
	if got := obj.(*CachedBinding).Binding().Spec.SchedulePriority; got == nil || got.Priority != 7 {
		t.Errorf("the schedule priority given back is %+v, want priority 7", got)
	}
}

// A binding as Karmada writes it (testdata) keeps its usage, and its JSON shrinks to what the controller reads.
func TestTrimBindingOfKarmadasBinding(t *testing.T) {
	full := &workv1alpha2.ResourceBinding{}
	if err := json.Unmarshal(karmadaBinding(t), full); err != nil {
		t.Fatal(err)
	}
	obj, err := TrimBinding(full.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	trimmed := obj.(*CachedBinding).Binding()
	want, err := usage.Of(full)
	if err != nil {
		t.Fatal(err)
	}
	got, err := usage.Of(trimmed)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" || len(want.Placed) != 2 {
		t.Errorf("usage of the trimmed binding differs (-full +trimmed), or the testdata is not placed on two members:\n%s", diff)
	}
	fullJSON, _ := json.Marshal(full)
	trimmedJSON, _ := json.Marshal(trimmed)
	if len(trimmedJSON)*2 > len(fullJSON) {
		t.Errorf("trimmed to %d bytes of JSON from %d; what the controller does not read is most of a binding", len(trimmedJSON), len(fullJSON))
	}
}

// heldRequirements is how many distinct requirements the cached bindings share.
func heldRequirements() int {
	requirements.mu.Lock()
	defer requirements.mu.Unlock()
	return len(requirements.byKey)
}

// Bindings that ask alike share one copy of their replica requirements while any of them is cached, and the copy
// is let go with the last of them.
func TestTrimBindingSharesRequirements(t *testing.T) {
	trim := func(rb *utiltesting.BindingWrapper) *workv1alpha2.ResourceBinding {
		t.Helper()
		obj, err := TrimBinding(rb.Obj())
		if err != nil {
			t.Fatal(err)
		}
		return obj.(*CachedBinding).Binding()
	}
	web := trim(utiltesting.MakeBinding(ns, "web").Replicas(2).Requests(list("cpu", "500m", "memory", "64Mi")))
	api := trim(utiltesting.MakeBinding(ns, "api").Replicas(5).Requests(list("memory", "64Mi", "cpu", "0.5")))
	big := trim(utiltesting.MakeBinding(ns, "big").Replicas(2).Requests(list("cpu", "1", "memory", "64Mi")))
	if web.Spec.ReplicaRequirements != api.Spec.ReplicaRequirements {
		t.Error("two bindings asking 500m and 64Mi each hold their own requirements")
	}
	if big.Spec.ReplicaRequirements == web.Spec.ReplicaRequirements {
		t.Error("a binding asking 1 CPU shares the requirements of one asking 500m")
	}
	if got := web.Spec.ReplicaRequirements.ResourceRequest[corev1.ResourceCPU]; got.MilliValue() != 500 {
		t.Errorf("shared requirements ask %s CPU, want 500m", got.String())
	}
	if heldRequirements() == 0 {
		t.Fatal("nothing held")
	}
	web, api, big = nil, nil, nil
	deadline := time.Now().Add(10 * time.Second)
	for heldRequirements() > 0 && time.Now().Before(deadline) {
		goruntime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if n := heldRequirements(); n > 0 {
		t.Errorf("%d requirements still held after every binding asking them is gone", n)
	}
}

func TestTrimBindingLeavesOtherObjects(t *testing.T) {
	tombstone := toolscache.DeletedFinalStateUnknown{Key: ns + "/web", Obj: utiltesting.MakeBinding(ns, "web").Obj()}
	got, err := TrimBinding(tombstone)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(tombstone, got); diff != "" {
		t.Errorf("a tombstone was changed (-want +got):\n%s", diff)
	}
}

// TestCacheReadsByKindJSONWhole: the controller's cache options narrow none of the types kindjson's informers read
// whole (kindjson.ReadWhole refuses them otherwise, and the controller would not start).
func TestCacheReadsByKindJSONWhole(t *testing.T) {
	opts, err := CacheOptions(kindjson.Clients{})
	if err != nil {
		t.Fatal(err)
	}
	if opts.NewInformer == nil {
		t.Fatal("CacheOptions builds no informer on kindjson's serializer")
	}
}
