package usage

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

// fuzzAPIVersions are picked by index: fuzzing free text here would almost never produce a valid apiVersion, and
// the invalid forms worth trying are few.
var fuzzAPIVersions = []struct {
	apiVersion string
	valid      bool
}{
	{"apps/v1", true},
	{"v1", true},
	{"batch/v1", true},
	{"flink.apache.org/v1beta1", true},
	{"", false},
	{"apps/v1/extra", false},
	{"apps/", false},
	{"/", false},
}

// FuzzUsage builds a binding from fuzzed replica counts, quantities, components and priority classes and checks
// what must hold of any binding: Of refuses exactly the impossible ones with a field error and never panics, and
// what it accepts is counted consistently, per cluster and in total, under every scope.
func FuzzUsage(f *testing.F) {
	type seed struct {
		apiVersion             uint8
		kind                   string
		clusters               uint8
		r1, r2, r3             int32
		cpu, memory, gpu       string
		components             uint8
		c1, c2                 int32
		priorityClass          string
		componentPriorityClass string
		deleting               bool
	}
	for _, s := range []seed{
		// Divided Deployment.
		{0, "Deployment", 2, 2, 1, 0, "100m", "1Gi", "", 0, 0, 0, "", "", false},
		// Duplicated Deployment with a priority class, being deleted.
		{0, "Deployment", 3, 3, 3, 3, "250m", "512Mi", "", 0, 0, 0, "high", "", true},
		// Unscheduled.
		{0, "Deployment", 0, 0, 0, 0, "1", "1Gi", "", 0, 0, 0, "", "", false},
		// Non-workload object on two clusters.
		{1, "ConfigMap", 2, 0, 0, 0, "", "", "", 0, 0, 0, "", "", false},
		// Job requesting a GPU.
		{2, "Job", 1, 1, 0, 0, "4", "16Gi", "2", 0, 0, 0, "batch", "", false},
		// FlinkDeployment: two components on two clusters, the task managers at another class.
		{3, "FlinkDeployment", 2, 0, 0, 0, "1", "2Gi", "1", 2, 1, 3, "low", "high", false},
		// One component without requirements on its class.
		{3, "FlinkDeployment", 1, 0, 0, 0, "", "", "", 1, 2, 0, "", "", false},
		// Zero requests and zero replicas.
		{0, "Deployment", 3, 0, 0, 0, "0", "0", "0", 0, 0, 0, "", "", false},
		// Saturation: huge requests on the most replicas a cluster can list.
		{0, "Deployment", 3, math.MaxInt32, math.MaxInt32, math.MaxInt32, "1e15", "8Ei", "1e30", 0, 0, 0, "", "", false},
		{3, "FlinkDeployment", 3, 0, 0, 0, "1e16", "1Ei", "", 2, math.MaxInt32, math.MaxInt32, "", "", false},
		// Refused: negative replicas, negative request, negative component replicas, empty kind, bad apiVersions.
		{0, "Deployment", 2, 1, -1, 0, "100m", "", "", 0, 0, 0, "", "", false},
		{0, "Deployment", 1, 1, 0, 0, "-100m", "", "", 0, 0, 0, "", "", false},
		{3, "FlinkDeployment", 1, 0, 0, 0, "1", "", "", 2, 1, math.MinInt32, "", "", false},
		{3, "FlinkDeployment", 1, 0, 0, 0, "1", "", "-1", 2, 1, 1, "", "", false},
		{0, "", 1, 1, 0, 0, "", "", "", 0, 0, 0, "", "", false},
		{5, "Deployment", 1, 1, 0, 0, "", "", "", 0, 0, 0, "", "", false},
		{7, "Deployment", 1, 1, 0, 0, "", "", "", 0, 0, 0, "", "", false},
	} {
		f.Add(s.apiVersion, s.kind, s.clusters, s.r1, s.r2, s.r3, s.cpu, s.memory, s.gpu, s.components, s.c1, s.c2,
			s.priorityClass, s.componentPriorityClass, s.deleting)
	}

	f.Fuzz(func(t *testing.T, apiVersionIndex uint8, kind string, clusterCount uint8, r1, r2, r3 int32,
		cpu, memory, gpu string, componentCount uint8, c1, c2 int32, priorityClass, componentPriorityClass string,
		deleting bool) {
		cpuRequest, ok1 := parseRequest(cpu)
		memoryRequest, ok2 := parseRequest(memory)
		gpuRequest, ok3 := parseRequest(gpu)
		if !ok1 || !ok2 || !ok3 {
			t.Skip("not a quantity")
		}
		apiVersion := fuzzAPIVersions[int(apiVersionIndex)%len(fuzzAPIVersions)]
		clusterReplicas := []int32{r1, r2, r3}[:clusterCount%4]
		componentReplicas := []int32{c1, c2}[:componentCount%3]
		// The first component requests cpu and memory, the second a GPU; a single-template workload all three.
		componentRequests := []corev1.ResourceList{
			requestList(map[corev1.ResourceName]*resource.Quantity{corev1.ResourceCPU: cpuRequest, corev1.ResourceMemory: memoryRequest}),
			requestList(map[corev1.ResourceName]*resource.Quantity{"nvidia.com/gpu": gpuRequest}),
		}
		bindingRequests := requestList(map[corev1.ResourceName]*resource.Quantity{
			corev1.ResourceCPU: cpuRequest, corev1.ResourceMemory: memoryRequest, "nvidia.com/gpu": gpuRequest,
		})

		b := utiltesting.MakeBinding("ns", "fuzzed").Resource(apiVersion.apiVersion, kind)
		if priorityClass != "" {
			b.PriorityClass(priorityClass)
		}
		for i, replicas := range clusterReplicas {
			b.Cluster(fmt.Sprintf("member%d", i), replicas)
		}
		for i, replicas := range componentReplicas {
			b.Component(fmt.Sprintf("component%d", i), replicas, componentRequests[i])
		}
		if len(componentReplicas) == 2 && componentPriorityClass != "" {
			b.ComponentPriorityClass("component1", componentPriorityClass)
		}
		if len(componentReplicas) == 0 && bindingRequests != nil {
			b.Requests(bindingRequests)
		}
		if deleting {
			b.Deleting()
		}
		rb := b.Obj()

		// What the design refuses, derived from the inputs rather than from the code under test.
		wantErr := kind == "" || !apiVersion.valid
		if len(componentReplicas) > 0 {
			for i, replicas := range componentReplicas {
				wantErr = wantErr || replicas < 0 || hasNegative(componentRequests[i])
			}
		} else {
			wantErr = wantErr || hasNegative(bindingRequests)
			for _, replicas := range clusterReplicas {
				wantErr = wantErr || replicas < 0
			}
		}

		u, err := Of(rb)
		if err != nil {
			var fieldErr *field.Error
			if !errors.As(err, &fieldErr) || !strings.HasPrefix(fieldErr.Field, "spec.") {
				t.Errorf("Of() error %v is not a field error under spec", err)
			}
			if !wantErr {
				t.Fatalf("Of() refused a valid binding: %v\n%+v", err, rb.Spec)
			}
			return
		}
		if wantErr {
			t.Fatalf("Of() accepted an invalid binding:\n%+v", rb.Spec)
		}

		unscoped := u.Charge(Selector{})
		checkNonNegative(t, "objects", u.Objects)
		checkNonNegative(t, "total", unscoped.Total)
		for cluster, l := range unscoped.Clusters {
			checkNonNegative(t, "cluster "+cluster, l)
		}
		checkObjectCount(t, u.Objects, apiVersion.apiVersion)

		// Replicas and requests as the design places them: one full component set per listed cluster, or
		// each cluster's own replicas.
		wantPods := new(big.Int)
		wantCompute := map[corev1.ResourceName]*big.Int{}
		place := func(replicas int32, requests corev1.ResourceList) {
			wantPods.Add(wantPods, big.NewInt(int64(replicas)))
			for name, q := range requests {
				canonical := resources.RequestName(name)
				if wantCompute[canonical] == nil {
					wantCompute[canonical] = new(big.Int)
				}
				perReplica := resources.Value(canonical, q)
				wantCompute[canonical].Add(wantCompute[canonical], new(big.Int).Mul(big.NewInt(perReplica), big.NewInt(int64(replicas))))
			}
		}
		for _, clusterReplica := range clusterReplicas {
			if len(componentReplicas) == 0 {
				if clusterReplica > 0 {
					place(clusterReplica, bindingRequests)
				}
				continue
			}
			for i, replicas := range componentReplicas {
				place(replicas, componentRequests[i])
			}
		}
		if got, want := unscoped.Total[corev1.ResourcePods], clamp(wantPods); got != want {
			t.Errorf("pods total = %d, want %d", got, want)
		}
		for name, want := range wantCompute {
			if got := unscoped.Total[name]; got != clamp(want) {
				t.Errorf("%s total = %d, want %d", name, got, clamp(want))
			}
		}

		// The total is the clusters plus the object count, whatever saturated on the way.
		sumOfClusters := resources.List{}
		for _, l := range unscoped.Clusters {
			sumOfClusters.Add(l)
		}
		sumOfClusters.Add(u.Objects)
		if !unscoped.Total.Equal(sumOfClusters) {
			t.Errorf("total %v is not the sum of clusters and objects %v", unscoped.Total, sumOfClusters)
		}

		// Exists and DoesNotExist split every replica set between them, and neither counts objects.
		named := u.Charge(mustSelector(t, corev1.ScopeSelectorOpExists))
		unnamed := u.Charge(mustSelector(t, corev1.ScopeSelectorOpDoesNotExist))
		split := named.Total.Clone()
		split.Add(unnamed.Total)
		split.Add(u.Objects)
		if !unscoped.Total.Equal(split) {
			t.Errorf("Exists %v + DoesNotExist %v + objects %v != unscoped %v", named.Total, unnamed.Total, u.Objects, unscoped.Total)
		}

		if d := Delta(unscoped, &unscoped); !d.Equal(nil) || d.Positive() != nil {
			t.Errorf("Delta(c, &c) = %v, want all zeros", d)
		}
		if d := Delta(unscoped, nil); !d.Equal(unscoped.Total) {
			t.Errorf("Delta(c, nil) = %v, want the total %v", d, unscoped.Total)
		}
	})
}

// parseRequest parses a fuzzed quantity; "" is no request, and false means the string is not a quantity.
func parseRequest(s string) (*resource.Quantity, bool) {
	if s == "" {
		return nil, true
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return nil, false
	}
	return &q, true
}

// requestList keeps the requests that were made; nil when none was.
func requestList(requests map[corev1.ResourceName]*resource.Quantity) corev1.ResourceList {
	var l corev1.ResourceList
	for name, q := range requests {
		if q == nil {
			continue
		}
		if l == nil {
			l = corev1.ResourceList{}
		}
		l[name] = *q
	}
	return l
}

func hasNegative(l corev1.ResourceList) bool {
	for _, q := range l {
		if q.Sign() < 0 {
			return true
		}
	}
	return false
}

func checkNonNegative(t *testing.T, what string, l resources.List) {
	t.Helper()
	for name, v := range l {
		if v < 0 {
			t.Errorf("%s: %s = %d, want >= 0", what, name, v)
		}
	}
}

func clamp(x *big.Int) int64 {
	if x.Cmp(big.NewInt(math.MaxInt64)) > 0 {
		return math.MaxInt64
	}
	return x.Int64()
}

func mustSelector(t *testing.T, op corev1.ScopeSelectorOperator) Selector {
	t.Helper()
	sel, err := NewSelector(&quotav1alpha1.ScopeSelector{
		MatchExpressions: []quotav1alpha1.ScopedResourceSelectorRequirement{priorityClass(op)},
	})
	if err != nil {
		t.Fatalf("NewSelector: %v", err)
	}
	return sel
}

// checkObjectCount checks that objects holds one bound object, counted under its API group.
func checkObjectCount(t *testing.T, objects resources.List, apiVersion string) {
	t.Helper()
	if len(objects) != 1 {
		t.Fatalf("objects = %v, want exactly one object count", objects)
	}
	wantSuffix := ""
	if group, _, grouped := strings.Cut(apiVersion, "/"); grouped {
		wantSuffix = "." + group
	}
	for name, n := range objects {
		if n != 1 || !strings.HasPrefix(string(name), "count/") || !strings.HasSuffix(string(name), wantSuffix) {
			t.Errorf("objects = %v, want 1 of count/<resource>%s", objects, wantSuffix)
		}
	}
}
