package usage

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

const (
	requestsCPU    corev1.ResourceName = "requests.cpu"
	requestsMemory corev1.ResourceName = "requests.memory"
	requestsGPU    corev1.ResourceName = "requests.nvidia.com/gpu"
	pods           corev1.ResourceName = corev1.ResourcePods
	deployments    corev1.ResourceName = "count/deployments.apps"
)

const gi = 1 << 30

// requests spells a per-replica request the way a binding carries it: cpu "100m", memory "1Gi".
func requests(nameValues ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(nameValues); i += 2 {
		l[corev1.ResourceName(nameValues[i])] = resource.MustParse(nameValues[i+1])
	}
	return l
}

// selector compiles a PriorityClass scope selector; none is unscoped.
func selector(t *testing.T, exprs ...quotav1alpha1.ScopedResourceSelectorRequirement) Selector {
	t.Helper()
	if len(exprs) == 0 {
		return Selector{}
	}
	sel, err := NewSelector(&quotav1alpha1.ScopeSelector{MatchExpressions: exprs})
	if err != nil {
		t.Fatalf("NewSelector: %v", err)
	}
	return sel
}

func priorityClass(op corev1.ScopeSelectorOperator, values ...string) quotav1alpha1.ScopedResourceSelectorRequirement {
	return quotav1alpha1.ScopedResourceSelectorRequirement{
		ScopeName: corev1.ResourceQuotaScopePriorityClass,
		Operator:  op,
		Values:    values,
	}
}

func TestOf(t *testing.T) {
	deployment := func() *utiltesting.BindingWrapper {
		return utiltesting.MakeBinding("ns", "web").Requests(requests("cpu", "100m", "memory", "1Gi"))
	}
	webPerReplica := resources.List{requestsCPU: 100, requestsMemory: gi}
	oneDeployment := resources.List{deployments: 1}

	cases := map[string]struct {
		binding   *workv1alpha2.ResourceBinding
		wantUsage Usage
		// wantErrField and wantErrType identify the refused field; wantErrField empty means no error.
		wantErrField string
		wantErrType  field.ErrorType
	}{
		"divided placement splits replicas across clusters": {
			binding: deployment().Replicas(3).Cluster("member1", 2).Cluster("member2", 1).Obj(),
			wantUsage: Usage{
				Objects: oneDeployment,
				Placed: []Placed{
					{Cluster: "member1", Replicas: 2, PerReplica: webPerReplica},
					{Cluster: "member2", Replicas: 1, PerReplica: webPerReplica},
				},
			},
		},
		"duplicated placement runs every replica on every cluster": {
			binding: deployment().Replicas(3).Cluster("member1", 3).Cluster("member2", 3).Obj(),
			wantUsage: Usage{
				Objects: oneDeployment,
				Placed: []Placed{
					{Cluster: "member1", Replicas: 3, PerReplica: webPerReplica},
					{Cluster: "member2", Replicas: 3, PerReplica: webPerReplica},
				},
			},
		},
		"unscheduled binding uses only its object count": {
			binding:   deployment().Replicas(3).Obj(),
			wantUsage: Usage{Objects: oneDeployment},
		},
		"workload scaled to zero places nothing": {
			binding:   deployment().Replicas(0).Cluster("member1", 0).Obj(),
			wantUsage: Usage{Objects: oneDeployment},
		},
		"non-workload object on clusters with no replicas": {
			binding: utiltesting.MakeBinding("ns", "settings").Resource("v1", "ConfigMap").
				Cluster("member1", 0).Cluster("member2", 0).Obj(),
			wantUsage: Usage{Objects: resources.List{"count/configmaps": 1}},
		},
		"clusters with no replicas are skipped among placed ones": {
			binding: deployment().Replicas(2).Cluster("member1", 0).Cluster("member2", 2).Obj(),
			wantUsage: Usage{
				Objects: oneDeployment,
				Placed:  []Placed{{Cluster: "member2", Replicas: 2, PerReplica: webPerReplica}},
			},
		},
		"workload without replicaRequirements counts pods but no compute": {
			binding: utiltesting.MakeBinding("ns", "web").Replicas(2).Cluster("member1", 2).Obj(),
			wantUsage: Usage{
				Objects: oneDeployment,
				Placed:  []Placed{{Cluster: "member1", Replicas: 2}},
			},
		},
		"zero request is kept as made": {
			binding: utiltesting.MakeBinding("ns", "web").Requests(requests("cpu", "0")).Cluster("member1", 1).Obj(),
			wantUsage: Usage{
				Objects: oneDeployment,
				Placed:  []Placed{{Cluster: "member1", Replicas: 1, PerReplica: resources.List{requestsCPU: 0}}},
			},
		},
		"extended resource and hugepages requests": {
			binding: utiltesting.MakeBinding("ns", "train").
				Requests(requests("nvidia.com/gpu", "2", "hugepages-2Mi", "4Mi")).Cluster("member1", 1).Obj(),
			wantUsage: Usage{
				Objects: oneDeployment,
				Placed: []Placed{{Cluster: "member1", Replicas: 1, PerReplica: resources.List{
					requestsGPU: 2, "requests.hugepages-2Mi": 4 << 20,
				}}},
			},
		},
		"priority class is carried to placed replicas": {
			binding: deployment().PriorityClass("high").Cluster("member1", 1).Obj(),
			wantUsage: Usage{
				Objects: oneDeployment,
				Placed:  []Placed{{Cluster: "member1", PriorityClass: "high", Replicas: 1, PerReplica: webPerReplica}},
			},
		},
		"binding being deleted still counts": {
			binding: deployment().Cluster("member1", 2).Deleting().Obj(),
			wantUsage: Usage{
				Objects: oneDeployment,
				Placed:  []Placed{{Cluster: "member1", Replicas: 2, PerReplica: webPerReplica}},
			},
		},
		"components run as a full set on every placed cluster": {
			binding: utiltesting.MakeBinding("ns", "flink").Resource("flink.apache.org/v1beta1", "FlinkDeployment").
				Component("jobmanager", 1, requests("cpu", "1", "memory", "2Gi")).
				Component("taskmanager", 3, requests("cpu", "2")).
				Cluster("member1", 0).Cluster("member2", 0).Obj(),
			wantUsage: Usage{
				Objects: resources.List{"count/flinkdeployments.flink.apache.org": 1},
				Placed: []Placed{
					{Cluster: "member1", Replicas: 1, PerReplica: resources.List{requestsCPU: 1000, requestsMemory: 2 * gi}},
					{Cluster: "member1", Replicas: 3, PerReplica: resources.List{requestsCPU: 2000}},
					{Cluster: "member2", Replicas: 1, PerReplica: resources.List{requestsCPU: 1000, requestsMemory: 2 * gi}},
					{Cluster: "member2", Replicas: 3, PerReplica: resources.List{requestsCPU: 2000}},
				},
			},
		},
		// Karmada leaves the cluster replicas of a multi-component binding at 0; a full set runs regardless.
		"cluster replicas do not scale a component set": {
			binding: utiltesting.MakeBinding("ns", "flink").Component("jobmanager", 2, requests("cpu", "1")).
				Cluster("member1", 5).Obj(),
			wantUsage: Usage{
				Objects: oneDeployment,
				Placed:  []Placed{{Cluster: "member1", Replicas: 2, PerReplica: resources.List{requestsCPU: 1000}}},
			},
		},
		"component priority class overrides the binding's": {
			binding: utiltesting.MakeBinding("ns", "flink").PriorityClass("low").
				Component("jobmanager", 1, requests("cpu", "1")).
				Component("taskmanager", 2, requests("cpu", "2")).
				ComponentPriorityClass("jobmanager", "high").
				Cluster("member1", 0).Obj(),
			wantUsage: Usage{
				Objects: oneDeployment,
				Placed: []Placed{
					{Cluster: "member1", PriorityClass: "high", Replicas: 1, PerReplica: resources.List{requestsCPU: 1000}},
					{Cluster: "member1", PriorityClass: "low", Replicas: 2, PerReplica: resources.List{requestsCPU: 2000}},
				},
			},
		},
		"component without requirements counts pods only": {
			binding: utiltesting.MakeBinding("ns", "ray").
				Component("head", 1, requests("cpu", "1")).
				Component("sidecar", 2, nil).
				Cluster("member1", 0).Obj(),
			wantUsage: Usage{
				Objects: oneDeployment,
				Placed: []Placed{
					{Cluster: "member1", Replicas: 1, PerReplica: resources.List{requestsCPU: 1000}},
					{Cluster: "member1", Replicas: 2},
				},
			},
		},
		"components ignore the binding's requests": {
			binding: utiltesting.MakeBinding("ns", "flink").Requests(requests("cpu", "8")).
				Component("jobmanager", 1, requests("cpu", "1")).Cluster("member1", 0).Obj(),
			wantUsage: Usage{
				Objects: oneDeployment,
				Placed:  []Placed{{Cluster: "member1", Replicas: 1, PerReplica: resources.List{requestsCPU: 1000}}},
			},
		},
		"unscheduled components place nothing": {
			binding:   utiltesting.MakeBinding("ns", "flink").Component("jobmanager", 1, requests("cpu", "1")).Obj(),
			wantUsage: Usage{Objects: oneDeployment},
		},
		"core Service has no group suffix": {
			binding:   utiltesting.MakeBinding("ns", "front").Resource("v1", "Service").Cluster("member1", 0).Obj(),
			wantUsage: Usage{Objects: resources.List{"count/services": 1}},
		},
		"batch Job": {
			binding: utiltesting.MakeBinding("ns", "migrate").Resource("batch/v1", "Job").
				Requests(requests("cpu", "500m")).Cluster("member1", 1).Obj(),
			wantUsage: Usage{
				Objects: resources.List{"count/jobs.batch": 1},
				Placed:  []Placed{{Cluster: "member1", Replicas: 1, PerReplica: resources.List{requestsCPU: 500}}},
			},
		},
		"kind ending in s": {
			binding:   utiltesting.MakeBinding("ns", "ing").Resource("networking.k8s.io/v1", "Ingress").Obj(),
			wantUsage: Usage{Objects: resources.List{"count/ingresses.networking.k8s.io": 1}},
		},
		"kind ending in y": {
			binding:   utiltesting.MakeBinding("ns", "deny").Resource("networking.k8s.io/v1", "NetworkPolicy").Obj(),
			wantUsage: Usage{Objects: resources.List{"count/networkpolicies.networking.k8s.io": 1}},
		},
		"negative cluster replicas": {
			binding:      deployment().Cluster("member1", 1).Cluster("member2", -1).Obj(),
			wantErrField: "spec.clusters[1].replicas",
			wantErrType:  field.ErrorTypeInvalid,
		},
		"negative component replicas": {
			binding: utiltesting.MakeBinding("ns", "flink").
				Component("jobmanager", 1, nil).Component("taskmanager", -3, nil).Cluster("member1", 0).Obj(),
			wantErrField: "spec.components[1].replicas",
			wantErrType:  field.ErrorTypeInvalid,
		},
		"negative request, even unscheduled": {
			binding:      utiltesting.MakeBinding("ns", "web").Requests(requests("cpu", "-100m")).Obj(),
			wantErrField: "spec.replicaRequirements.resourceRequest[cpu]",
			wantErrType:  field.ErrorTypeInvalid,
		},
		"negative component request": {
			binding: utiltesting.MakeBinding("ns", "flink").
				Component("jobmanager", 1, requests("cpu", "1")).
				Component("taskmanager", 1, requests("memory", "-1Gi")).Cluster("member1", 0).Obj(),
			wantErrField: "spec.components[1].replicaRequirements.resourceRequest[memory]",
			wantErrType:  field.ErrorTypeInvalid,
		},
		"empty kind": {
			binding:      deployment().Resource("apps/v1", "").Obj(),
			wantErrField: "spec.resource.kind",
			wantErrType:  field.ErrorTypeRequired,
		},
		"apiVersion with two slashes": {
			binding:      deployment().Resource("apps/v1/extra", "Deployment").Obj(),
			wantErrField: "spec.resource.apiVersion",
			wantErrType:  field.ErrorTypeInvalid,
		},
		"empty apiVersion": {
			binding:      deployment().Resource("", "Deployment").Obj(),
			wantErrField: "spec.resource.apiVersion",
			wantErrType:  field.ErrorTypeInvalid,
		},
		"apiVersion without a version": {
			binding:      deployment().Resource("apps/", "Deployment").Obj(),
			wantErrField: "spec.resource.apiVersion",
			wantErrType:  field.ErrorTypeInvalid,
		},
		"apiVersion of a lone slash": {
			binding:      deployment().Resource("/", "Deployment").Obj(),
			wantErrField: "spec.resource.apiVersion",
			wantErrType:  field.ErrorTypeInvalid,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Of(tc.binding)
			if tc.wantErrField != "" {
				var fieldErr *field.Error
				if !errors.As(err, &fieldErr) {
					t.Fatalf("Of() error = %v, want a field error at %s", err, tc.wantErrField)
				}
				if fieldErr.Field != tc.wantErrField || fieldErr.Type != tc.wantErrType {
					t.Errorf("Of() error at %s (%s), want %s (%s): %v", fieldErr.Field, fieldErr.Type, tc.wantErrField, tc.wantErrType, err)
				}
				if diff := cmp.Diff(Usage{}, got); diff != "" {
					t.Errorf("Of() returned usage with an error (-want +got):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatalf("Of() unexpected error: %v", err)
			}
			if diff := cmp.Diff(tc.wantUsage, got); diff != "" {
				t.Errorf("Of() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOfDoesNotModifyTheBinding(t *testing.T) {
	rb := utiltesting.MakeBinding("ns", "flink").PriorityClass("low").
		Component("jobmanager", 1, requests("cpu", "1")).Component("taskmanager", 2, nil).
		Cluster("member1", 0).Cluster("member2", 0).Obj()
	before := rb.DeepCopy()
	if _, err := Of(rb); err != nil {
		t.Fatalf("Of: %v", err)
	}
	if diff := cmp.Diff(before, rb); diff != "" {
		t.Errorf("Of modified the binding (-before +after):\n%s", diff)
	}
}

func TestCharge(t *testing.T) {
	web := utiltesting.MakeBinding("ns", "web").Requests(requests("cpu", "100m", "memory", "1Gi"))
	flink := utiltesting.MakeBinding("ns", "flink").Resource("flink.apache.org/v1beta1", "FlinkDeployment").
		PriorityClass("low").
		Component("jobmanager", 1, requests("cpu", "1")).
		Component("taskmanager", 2, requests("cpu", "2")).
		ComponentPriorityClass("jobmanager", "high").
		Cluster("member1", 0).Cluster("member2", 0)

	cases := map[string]struct {
		binding    *workv1alpha2.ResourceBinding
		scope      []quotav1alpha1.ScopedResourceSelectorRequirement
		wantCharge Charge
	}{
		"unscoped counts compute, pods and the object, split by cluster": {
			binding: web.Clone().Cluster("member1", 2).Cluster("member2", 1).Obj(),
			wantCharge: Charge{
				Total: resources.List{deployments: 1, pods: 3, requestsCPU: 300, requestsMemory: 3 * gi},
				Clusters: map[string]resources.List{
					"member1": {pods: 2, requestsCPU: 200, requestsMemory: 2 * gi},
					"member2": {pods: 1, requestsCPU: 100, requestsMemory: gi},
				},
			},
		},
		"duplicated placement is charged on every cluster": {
			binding: web.Clone().Cluster("member1", 2).Cluster("member2", 2).Obj(),
			wantCharge: Charge{
				Total: resources.List{deployments: 1, pods: 4, requestsCPU: 400, requestsMemory: 4 * gi},
				Clusters: map[string]resources.List{
					"member1": {pods: 2, requestsCPU: 200, requestsMemory: 2 * gi},
					"member2": {pods: 2, requestsCPU: 200, requestsMemory: 2 * gi},
				},
			},
		},
		"unscheduled binding is charged its object only": {
			binding:    web.Obj(),
			wantCharge: Charge{Total: resources.List{deployments: 1}, Clusters: map[string]resources.List{}},
		},
		"a selector without expressions is unscoped": {
			binding: web.Clone().Cluster("member1", 1).Obj(),
			scope:   []quotav1alpha1.ScopedResourceSelectorRequirement{},
			wantCharge: Charge{
				Total:    resources.List{deployments: 1, pods: 1, requestsCPU: 100, requestsMemory: gi},
				Clusters: map[string]resources.List{"member1": {pods: 1, requestsCPU: 100, requestsMemory: gi}},
			},
		},
		"In selects the class and leaves out the object count": {
			binding: web.Clone().PriorityClass("high").Cluster("member1", 1).Obj(),
			scope:   []quotav1alpha1.ScopedResourceSelectorRequirement{priorityClass(corev1.ScopeSelectorOpIn, "high")},
			wantCharge: Charge{
				Total:    resources.List{pods: 1, requestsCPU: 100, requestsMemory: gi},
				Clusters: map[string]resources.List{"member1": {pods: 1, requestsCPU: 100, requestsMemory: gi}},
			},
		},
		"In does not select another class": {
			binding:    web.Clone().PriorityClass("low").Cluster("member1", 1).Obj(),
			scope:      []quotav1alpha1.ScopedResourceSelectorRequirement{priorityClass(corev1.ScopeSelectorOpIn, "high")},
			wantCharge: Charge{Total: resources.List{}, Clusters: map[string]resources.List{}},
		},
		"NotIn selects a binding without a class": {
			binding: web.Clone().Cluster("member1", 1).Obj(),
			scope:   []quotav1alpha1.ScopedResourceSelectorRequirement{priorityClass(corev1.ScopeSelectorOpNotIn, "high")},
			wantCharge: Charge{
				Total:    resources.List{pods: 1, requestsCPU: 100, requestsMemory: gi},
				Clusters: map[string]resources.List{"member1": {pods: 1, requestsCPU: 100, requestsMemory: gi}},
			},
		},
		"NotIn leaves out a listed class": {
			binding:    web.Clone().PriorityClass("high").Cluster("member1", 1).Obj(),
			scope:      []quotav1alpha1.ScopedResourceSelectorRequirement{priorityClass(corev1.ScopeSelectorOpNotIn, "high", "critical")},
			wantCharge: Charge{Total: resources.List{}, Clusters: map[string]resources.List{}},
		},
		"Exists selects any named class": {
			binding: web.Clone().PriorityClass("low").Cluster("member1", 1).Obj(),
			scope:   []quotav1alpha1.ScopedResourceSelectorRequirement{priorityClass(corev1.ScopeSelectorOpExists)},
			wantCharge: Charge{
				Total:    resources.List{pods: 1, requestsCPU: 100, requestsMemory: gi},
				Clusters: map[string]resources.List{"member1": {pods: 1, requestsCPU: 100, requestsMemory: gi}},
			},
		},
		"Exists leaves out a binding without a class": {
			binding:    web.Clone().Cluster("member1", 1).Obj(),
			scope:      []quotav1alpha1.ScopedResourceSelectorRequirement{priorityClass(corev1.ScopeSelectorOpExists)},
			wantCharge: Charge{Total: resources.List{}, Clusters: map[string]resources.List{}},
		},
		"DoesNotExist selects a binding without a class": {
			binding: web.Clone().Cluster("member1", 1).Obj(),
			scope:   []quotav1alpha1.ScopedResourceSelectorRequirement{priorityClass(corev1.ScopeSelectorOpDoesNotExist)},
			wantCharge: Charge{
				Total:    resources.List{pods: 1, requestsCPU: 100, requestsMemory: gi},
				Clusters: map[string]resources.List{"member1": {pods: 1, requestsCPU: 100, requestsMemory: gi}},
			},
		},
		"DoesNotExist leaves out a named class": {
			binding:    web.Clone().PriorityClass("low").Cluster("member1", 1).Obj(),
			scope:      []quotav1alpha1.ScopedResourceSelectorRequirement{priorityClass(corev1.ScopeSelectorOpDoesNotExist)},
			wantCharge: Charge{Total: resources.List{}, Clusters: map[string]resources.List{}},
		},
		"a scoped quota counts nothing of an unscheduled binding": {
			binding:    web.Clone().PriorityClass("high").Obj(),
			scope:      []quotav1alpha1.ScopedResourceSelectorRequirement{priorityClass(corev1.ScopeSelectorOpIn, "high")},
			wantCharge: Charge{Total: resources.List{}, Clusters: map[string]resources.List{}},
		},
		"unscoped components: one full set per cluster": {
			binding: flink.Obj(),
			wantCharge: Charge{
				Total: resources.List{"count/flinkdeployments.flink.apache.org": 1, pods: 6, requestsCPU: 10000},
				Clusters: map[string]resources.List{
					"member1": {pods: 3, requestsCPU: 5000},
					"member2": {pods: 3, requestsCPU: 5000},
				},
			},
		},
		"scoped to the class a component overrides to": {
			binding: flink.Obj(),
			scope:   []quotav1alpha1.ScopedResourceSelectorRequirement{priorityClass(corev1.ScopeSelectorOpIn, "high")},
			wantCharge: Charge{
				Total: resources.List{pods: 2, requestsCPU: 2000},
				Clusters: map[string]resources.List{
					"member1": {pods: 1, requestsCPU: 1000},
					"member2": {pods: 1, requestsCPU: 1000},
				},
			},
		},
		"scoped to the class components inherit": {
			binding: flink.Obj(),
			scope:   []quotav1alpha1.ScopedResourceSelectorRequirement{priorityClass(corev1.ScopeSelectorOpIn, "low")},
			wantCharge: Charge{
				Total: resources.List{pods: 4, requestsCPU: 8000},
				Clusters: map[string]resources.List{
					"member1": {pods: 2, requestsCPU: 4000},
					"member2": {pods: 2, requestsCPU: 4000},
				},
			},
		},
		"expressions are ANDed": {
			binding: flink.Obj(),
			scope: []quotav1alpha1.ScopedResourceSelectorRequirement{
				priorityClass(corev1.ScopeSelectorOpExists),
				priorityClass(corev1.ScopeSelectorOpNotIn, "low"),
			},
			wantCharge: Charge{
				Total: resources.List{pods: 2, requestsCPU: 2000},
				Clusters: map[string]resources.List{
					"member1": {pods: 1, requestsCPU: 1000},
					"member2": {pods: 1, requestsCPU: 1000},
				},
			},
		},
		"a component of zero replicas is charged zero on its cluster": {
			binding: utiltesting.MakeBinding("ns", "flink").Component("jobmanager", 0, requests("cpu", "1")).
				Cluster("member1", 0).Obj(),
			wantCharge: Charge{
				Total:    resources.List{deployments: 1, pods: 0, requestsCPU: 0},
				Clusters: map[string]resources.List{"member1": {pods: 0, requestsCPU: 0}},
			},
		},
		// An absurd request must look huge, never wrap around to something small or negative.
		"huge requests saturate": {
			binding: utiltesting.MakeBinding("ns", "huge").Requests(requests("cpu", "1e15", "memory", "1Ei")).
				Cluster("member1", math.MaxInt32).Cluster("member2", 3).Obj(),
			wantCharge: Charge{
				Total: resources.List{deployments: 1, pods: math.MaxInt32 + 3, requestsCPU: math.MaxInt64, requestsMemory: math.MaxInt64},
				Clusters: map[string]resources.List{
					"member1": {pods: math.MaxInt32, requestsCPU: math.MaxInt64, requestsMemory: math.MaxInt64},
					"member2": {pods: 3, requestsCPU: 3e18, requestsMemory: 3 << 60},
				},
			},
		},
		"a request beyond int64 saturates per replica": {
			binding: utiltesting.MakeBinding("ns", "huge").Requests(requests("cpu", "1e16")).Cluster("member1", 1).Obj(),
			wantCharge: Charge{
				Total:    resources.List{deployments: 1, pods: 1, requestsCPU: math.MaxInt64},
				Clusters: map[string]resources.List{"member1": {pods: 1, requestsCPU: math.MaxInt64}},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			u, err := Of(tc.binding)
			if err != nil {
				t.Fatalf("Of: %v", err)
			}
			sel := Selector{}
			if tc.scope != nil {
				if sel, err = NewSelector(&quotav1alpha1.ScopeSelector{MatchExpressions: tc.scope}); err != nil {
					t.Fatalf("NewSelector: %v", err)
				}
			}
			if diff := cmp.Diff(tc.wantCharge, u.Charge(sel)); diff != "" {
				t.Errorf("Charge() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDelta(t *testing.T) {
	web := utiltesting.MakeBinding("ns", "web").Requests(requests("cpu", "100m", "memory", "1Gi"))
	charge := func(b *utiltesting.BindingWrapper) Charge {
		t.Helper()
		u, err := Of(b.Obj())
		if err != nil {
			t.Fatalf("Of: %v", err)
		}
		return u.Charge(Selector{})
	}
	twoReplicas := charge(web.Clone().Cluster("member1", 2))

	cases := map[string]struct {
		newCharge    Charge
		oldCharge    *Charge
		wantDelta    resources.List
		wantIncrease resources.List
	}{
		"create charges everything": {
			newCharge:    twoReplicas,
			wantDelta:    resources.List{deployments: 1, pods: 2, requestsCPU: 200, requestsMemory: 2 * gi},
			wantIncrease: resources.List{deployments: 1, pods: 2, requestsCPU: 200, requestsMemory: 2 * gi},
		},
		"scheduling an unscheduled binding adds its compute, not its object again": {
			newCharge:    twoReplicas,
			oldCharge:    ptr(charge(web.Clone())),
			wantDelta:    resources.List{deployments: 0, pods: 2, requestsCPU: 200, requestsMemory: 2 * gi},
			wantIncrease: resources.List{pods: 2, requestsCPU: 200, requestsMemory: 2 * gi},
		},
		"scale up adds the difference": {
			newCharge:    charge(web.Clone().Cluster("member1", 3).Cluster("member2", 2)),
			oldCharge:    &twoReplicas,
			wantDelta:    resources.List{deployments: 0, pods: 3, requestsCPU: 300, requestsMemory: 3 * gi},
			wantIncrease: resources.List{pods: 3, requestsCPU: 300, requestsMemory: 3 * gi},
		},
		"scale down gives back": {
			newCharge:    charge(web.Clone().Cluster("member1", 1)),
			oldCharge:    &twoReplicas,
			wantDelta:    resources.List{deployments: 0, pods: -1, requestsCPU: -100, requestsMemory: -gi},
			wantIncrease: nil,
		},
		"moving replicas between clusters changes no total": {
			newCharge:    charge(web.Clone().Cluster("member2", 2)),
			oldCharge:    &twoReplicas,
			wantDelta:    resources.List{deployments: 0, pods: 0, requestsCPU: 0, requestsMemory: 0},
			wantIncrease: nil,
		},
		"raising a request while shrinking memory": {
			newCharge:    charge(utiltesting.MakeBinding("ns", "web").Requests(requests("cpu", "1", "memory", "512Mi")).Cluster("member1", 2)),
			oldCharge:    &twoReplicas,
			wantDelta:    resources.List{deployments: 0, pods: 0, requestsCPU: 1800, requestsMemory: -gi},
			wantIncrease: resources.List{requestsCPU: 1800},
		},
		"dropping a request gives it all back": {
			newCharge:    charge(utiltesting.MakeBinding("ns", "web").Requests(requests("cpu", "100m")).Cluster("member1", 2)),
			oldCharge:    &twoReplicas,
			wantDelta:    resources.List{deployments: 0, pods: 0, requestsCPU: 0, requestsMemory: -2 * gi},
			wantIncrease: nil,
		},
		// A charge nobody computed (the zero value) is nothing: the delta to it gives everything back.
		"to the zero charge": {
			newCharge:    Charge{},
			oldCharge:    &twoReplicas,
			wantDelta:    resources.List{deployments: -1, pods: -2, requestsCPU: -200, requestsMemory: -2 * gi},
			wantIncrease: nil,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var oldBefore Charge
			if tc.oldCharge != nil {
				oldBefore = Charge{Total: tc.oldCharge.Total.Clone()}
			}
			newBefore := tc.newCharge.Total.Clone()

			got := Delta(tc.newCharge, tc.oldCharge)
			if diff := cmp.Diff(tc.wantDelta, got); diff != "" {
				t.Errorf("Delta() (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantIncrease, got.Positive()); diff != "" {
				t.Errorf("Delta().Positive() (-want +got):\n%s", diff)
			}
			// The charges are the webhook's and controller's records: computing a delta must not change them.
			if diff := cmp.Diff(newBefore, tc.newCharge.Total); diff != "" {
				t.Errorf("Delta modified the new charge (-before +after):\n%s", diff)
			}
			if tc.oldCharge != nil {
				if diff := cmp.Diff(oldBefore.Total, tc.oldCharge.Total); diff != "" {
					t.Errorf("Delta modified the old charge (-before +after):\n%s", diff)
				}
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestMissingRequests(t *testing.T) {
	cases := map[string]struct {
		binding     *workv1alpha2.ResourceBinding
		scope       []quotav1alpha1.ScopedResourceSelectorRequirement
		limited     []corev1.ResourceName
		wantMissing []corev1.ResourceName
	}{
		"cpu quota, binding requests memory only": {
			binding:     utiltesting.MakeBinding("ns", "web").Requests(requests("memory", "1Gi")).Cluster("member1", 1).Obj(),
			limited:     []corev1.ResourceName{requestsCPU, requestsMemory},
			wantMissing: []corev1.ResourceName{requestsCPU},
		},
		"a zero request is a request": {
			binding: utiltesting.MakeBinding("ns", "web").Requests(requests("cpu", "0", "memory", "0")).Cluster("member1", 1).Obj(),
			limited: []corev1.ResourceName{requestsCPU, requestsMemory},
		},
		"no requirements at all misses every limited compute resource, in the quota's order": {
			binding:     utiltesting.MakeBinding("ns", "web").Cluster("member1", 1).Obj(),
			limited:     []corev1.ResourceName{requestsMemory, requestsCPU},
			wantMissing: []corev1.ResourceName{requestsMemory, requestsCPU},
		},
		"an unplaced binding runs nothing unlimited": {
			binding: utiltesting.MakeBinding("ns", "web").Obj(),
			limited: []corev1.ResourceName{requestsCPU},
		},
		"clusters with no replicas run nothing unlimited": {
			binding: utiltesting.MakeBinding("ns", "web").Cluster("member1", 0).Obj(),
			limited: []corev1.ResourceName{requestsCPU},
		},
		"pods and object counts need no request": {
			binding: utiltesting.MakeBinding("ns", "web").Cluster("member1", 1).Obj(),
			limited: []corev1.ResourceName{pods, deployments, "count/services"},
		},
		// Kubernetes requires explicit requests for cpu and memory only: a replica that requests no GPU gets no
		// GPU, so a GPU quota must not refuse every workload that does not use one.
		"extended resources, hugepages and ephemeral storage need no request": {
			binding: utiltesting.MakeBinding("ns", "web").Requests(requests("cpu", "1")).Cluster("member1", 1).Obj(),
			limited: []corev1.ResourceName{requestsGPU, "requests.hugepages-2Mi", "requests.ephemeral-storage", requestsCPU},
		},
		"a scoped quota ignores classes it does not select": {
			binding: utiltesting.MakeBinding("ns", "web").PriorityClass("low").Requests(requests("memory", "1Gi")).Cluster("member1", 1).Obj(),
			scope:   []quotav1alpha1.ScopedResourceSelectorRequirement{priorityClass(corev1.ScopeSelectorOpIn, "high")},
			limited: []corev1.ResourceName{requestsCPU},
		},
		"a scoped quota checks the class it selects": {
			binding:     utiltesting.MakeBinding("ns", "web").PriorityClass("high").Requests(requests("memory", "1Gi")).Cluster("member1", 1).Obj(),
			scope:       []quotav1alpha1.ScopedResourceSelectorRequirement{priorityClass(corev1.ScopeSelectorOpIn, "high")},
			limited:     []corev1.ResourceName{requestsCPU},
			wantMissing: []corev1.ResourceName{requestsCPU},
		},
		"a component missing a request on several clusters is reported once": {
			binding: utiltesting.MakeBinding("ns", "flink").
				Component("jobmanager", 1, requests("cpu", "1", "memory", "1Gi")).
				Component("taskmanager", 2, requests("memory", "1Gi")).
				Cluster("member1", 0).Cluster("member2", 0).Obj(),
			limited:     []corev1.ResourceName{requestsCPU, requestsMemory},
			wantMissing: []corev1.ResourceName{requestsCPU},
		},
		"a component without requirements misses its requests": {
			binding: utiltesting.MakeBinding("ns", "ray").
				Component("head", 1, requests("cpu", "1", "memory", "1Gi")).
				Component("sidecar", 1, nil).
				Cluster("member1", 0).Obj(),
			limited:     []corev1.ResourceName{requestsCPU, requestsMemory},
			wantMissing: []corev1.ResourceName{requestsCPU, requestsMemory},
		},
		"a component of zero replicas runs nothing unlimited": {
			binding: utiltesting.MakeBinding("ns", "flink").
				Component("jobmanager", 1, requests("cpu", "1")).
				Component("standby", 0, nil).
				Cluster("member1", 0).Obj(),
			limited: []corev1.ResourceName{requestsCPU},
		},
		"scoped to the class of the component that misses a request": {
			binding: utiltesting.MakeBinding("ns", "flink").PriorityClass("low").
				Component("jobmanager", 1, nil).
				Component("taskmanager", 2, requests("cpu", "2")).
				ComponentPriorityClass("jobmanager", "high").
				Cluster("member1", 0).Obj(),
			scope:       []quotav1alpha1.ScopedResourceSelectorRequirement{priorityClass(corev1.ScopeSelectorOpIn, "high")},
			limited:     []corev1.ResourceName{requestsCPU},
			wantMissing: []corev1.ResourceName{requestsCPU},
		},
		"scoped away from the component that misses a request": {
			binding: utiltesting.MakeBinding("ns", "flink").PriorityClass("low").
				Component("jobmanager", 1, nil).
				Component("taskmanager", 2, requests("cpu", "2")).
				ComponentPriorityClass("jobmanager", "high").
				Cluster("member1", 0).Obj(),
			scope:   []quotav1alpha1.ScopedResourceSelectorRequirement{priorityClass(corev1.ScopeSelectorOpIn, "low")},
			limited: []corev1.ResourceName{requestsCPU},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			u, err := Of(tc.binding)
			if err != nil {
				t.Fatalf("Of: %v", err)
			}
			got := u.MissingRequests(selector(t, tc.scope...), tc.limited)
			if diff := cmp.Diff(tc.wantMissing, got); diff != "" {
				t.Errorf("MissingRequests(%v) (-want +got):\n%s", tc.limited, diff)
			}
		})
	}
}

// TestOfBoundsReplicaSets: a binding crafted with thousands of components on thousands of clusters is refused
// with a field error before anything is allocated for it; as many components or clusters alone are counted.
func TestOfBoundsReplicaSets(t *testing.T) {
	many := func(components, clusters int) *utiltesting.BindingWrapper {
		b := utiltesting.MakeBinding("ns", "crafted").Resource("flink.apache.org/v1beta1", "FlinkDeployment")
		for i := range components {
			b.Component(fmt.Sprintf("c%d", i), 1, utiltesting.List("cpu", "1"))
		}
		for i := range clusters {
			b.Cluster(fmt.Sprintf("member%d", i), 0)
		}
		return b
	}
	_, err := Of(many(2000, 5000).Obj())
	var fe *field.Error
	if !errors.As(err, &fe) || fe.Field != "spec.components" || !strings.Contains(fe.Detail, "2000 components on 5000 clusters make 10000000 replica sets") {
		t.Errorf("Of(2000 components on 5000 clusters) error = %v, want a field error on spec.components", err)
	}
	u, err := Of(many(MaxPlacedSets/1000, 1000).Obj())
	if err != nil || len(u.Placed) != MaxPlacedSets {
		t.Errorf("Of(at the bound) = %d sets, %v; want %d", len(u.Placed), err, MaxPlacedSets)
	}
}

// TestReplicasCharge: replicas asked about are charged as placed ones are, so the estimator's room and admission
// agree; a negative request is refused as a binding's is.
func TestReplicasCharge(t *testing.T) {
	got, err := ReplicasCharge(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), "nvidia.com/gpu": resource.MustParse("1")}, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := resources.List{pods: 3, requestsCPU: 1500, requestsGPU: 3}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ReplicasCharge (-want +got):\n%s", diff)
	}
	rb := utiltesting.MakeBinding("ns", "web").Replicas(3).Requests(utiltesting.List("cpu", "500m", "nvidia.com/gpu", "1")).Cluster("member1", 3).Obj()
	u, err := Of(rb)
	if err != nil {
		t.Fatal(err)
	}
	all, err := NewSelector(nil)
	if err != nil {
		t.Fatal(err)
	}
	placed := u.Charge(all).Total
	delete(placed, deployments)
	if diff := cmp.Diff(placed, got); diff != "" {
		t.Errorf("3 replicas asked about against 3 placed (-placed +asked):\n%s", diff)
	}
	if _, err := ReplicasCharge(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("-1")}, 1); err == nil {
		t.Error("a negative request was charged")
	}
}
