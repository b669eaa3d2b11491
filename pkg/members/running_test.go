package members

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/karmada-quota/karmada-quota/pkg/resources"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
)

func container(cpu string) corev1.Container {
	return corev1.Container{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}
}

func pod(ns, class string, phase corev1.PodPhase, containers ...corev1.Container) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns},
		Spec:       corev1.PodSpec{PriorityClassName: class, Containers: containers},
		Status:     corev1.PodStatus{Phase: phase},
	}
}

func TestRequests(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  corev1.Pod
		want resources.List
	}{
		{name: "containers summed", pod: pod("a", "", corev1.PodRunning, container("1"), container("500m")),
			want: resources.List{"pods": 1, "requests.cpu": 1500}},
		{name: "pending counts", pod: pod("a", "", corev1.PodPending, container("1")),
			want: resources.List{"pods": 1, "requests.cpu": 1000}},
		{name: "succeeded counts nothing", pod: pod("a", "", corev1.PodSucceeded, container("1"))},
		{name: "failed counts nothing", pod: pod("a", "", corev1.PodFailed, container("1"))},
		{
			name: "an init container larger than the containers",
			pod: func() corev1.Pod {
				p := pod("a", "", corev1.PodRunning, container("1"))
				p.Spec.InitContainers = []corev1.Container{container("3")}
				return p
			}(),
			want: resources.List{"pods": 1, "requests.cpu": 3000},
		},
		{
			name: "overhead on top",
			pod: func() corev1.Pod {
				p := pod("a", "", corev1.PodRunning, container("1"))
				p.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}
				return p
			}(),
			want: resources.List{"pods": 1, "requests.cpu": 1250},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Requests(&tc.pod)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestSumAndCharge(t *testing.T) {
	pods := []corev1.Pod{
		pod("team", "high", corev1.PodRunning, container("2")),
		pod("team", "", corev1.PodRunning, container("1")),
		pod("team", "", corev1.PodSucceeded, container("8")),
		pod("other", "", corev1.PodRunning, container("4")),
	}
	got := Sum(pods, func(ns string) bool { return ns == "team" })
	want := map[string]Running{"team": {
		"high": {"pods": 1, "requests.cpu": 2000},
		"":     {"pods": 1, "requests.cpu": 1000},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Sum (-want +got):\n%s", diff)
	}
	all, err := usage.NewSelector(nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(resources.List{"pods": 2, "requests.cpu": 3000}, got["team"].Charge(all)); diff != "" {
		t.Errorf("Charge, unscoped (-want +got):\n%s", diff)
	}
}

// BenchmarkSum is the controller's work per member per sample on a member running 100,000 pods in 1,000
// namespaces, every one governed: what it costs beyond the list itself.
func BenchmarkSum(b *testing.B) {
	pods := make([]corev1.Pod, 100_000)
	for i := range pods {
		p := pod(fmt.Sprintf("team-%d", i%1000), "", corev1.PodRunning, container("250m"), container("100m"))
		p.Spec.InitContainers = []corev1.Container{container("500m")}
		pods[i] = p
	}
	b.ReportAllocs()
	for b.Loop() {
		if got := Sum(pods, func(string) bool { return true }); len(got) != 1000 {
			b.Fatalf("%d namespaces", len(got))
		}
	}
}
