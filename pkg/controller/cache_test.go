package controller

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/karmada-quota/karmada-quota/pkg/resources"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
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
	rb.Status.SchedulerObservedGeneration = rb.Generation
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
			rb.Labels = map[string]string{"app": "web"}
			rb.Spec.SchedulePriority = &workv1alpha2.SchedulePriority{Priority: 7}
			full := withEverythingElse(rb)
			obj, err := TrimBinding(full.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			trimmed := obj.(*workv1alpha2.ResourceBinding)

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
				return []any{rb.Name, rb.Namespace, rb.UID, rb.ResourceVersion, rb.Generation, rb.CreationTimestamp,
					rb.DeletionTimestamp, rb.Labels, rb.Spec.SchedulePriority, rb.Status.Conditions}
			}
			if diff := cmp.Diff(kept(full), kept(trimmed)); diff != "" {
				t.Errorf("identity, timestamps, priority or conditions lost (-full +trimmed):\n%s", diff)
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
			if diff := cmp.Diff(trimmed, again); diff != "" {
				t.Errorf("trimming twice changed the binding (-once +twice):\n%s", diff)
			}
		})
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
	trimmed := obj.(*workv1alpha2.ResourceBinding)
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
