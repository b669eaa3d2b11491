package interpreter

import (
	"context"
	"testing"

	"github.com/karmada-io/karmada/pkg/resourceinterpreter/default/native"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func zoneIn(zones ...string) *corev1.NodeSelector {
	return &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: zones},
	}}}}
}

type nodeOption func(*corev1.Node)

func node(name string, options ...nodeOption) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
	for _, option := range options {
		option(&n)
	}
	return n
}

func label(key, value string) nodeOption {
	return func(n *corev1.Node) { n.Labels[key] = value }
}

func taint(key string, effect corev1.TaintEffect) nodeOption {
	return func(n *corev1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Value: "true", Effect: effect})
	}
}

// cordoned is a node as kubectl cordon leaves it: unschedulable, and tainted so by the node lifecycle controller.
func cordoned(n *corev1.Node) {
	n.Spec.Unschedulable = true
	taint(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule)(n)
}

func TestDaemonSetOnNodes(t *testing.T) {
	gpuToleration := corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule}
	tests := []struct {
		name  string
		pod   func(*corev1.PodSpec)
		nodes []corev1.Node
		want  int32
	}{
		{
			name:  "every node without constraints",
			nodes: []corev1.Node{node("n1"), node("n2"), node("n3")},
			want:  3,
		},
		{
			name:  "no nodes, no pods",
			nodes: nil,
			want:  0,
		},
		{
			name:  "the nodes its nodeSelector selects",
			pod:   func(spec *corev1.PodSpec) { spec.NodeSelector = map[string]string{"disk": "ssd"} },
			nodes: []corev1.Node{node("n1", label("disk", "ssd")), node("n2", label("disk", "hdd")), node("n3", label("disk", "ssd")), node("n4")},
			want:  2,
		},
		{
			name: "the nodes its required affinity matches, whatever it prefers",
			pod: func(spec *corev1.PodSpec) {
				spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution: zoneIn("a", "b"),
					PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{
						{Weight: 1, Preference: zoneIn("c").NodeSelectorTerms[0]},
					},
				}}
			},
			nodes: []corev1.Node{node("n1", label("zone", "a")), node("n2", label("zone", "b")), node("n3", label("zone", "c")), node("n4")},
			want:  2,
		},
		{
			name: "nodeSelector and affinity both hold",
			pod: func(spec *corev1.PodSpec) {
				spec.NodeSelector = map[string]string{"disk": "ssd"}
				spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: zoneIn("a")}}
			},
			nodes: []corev1.Node{node("n1", label("zone", "a"), label("disk", "ssd")), node("n2", label("zone", "a")), node("n3", label("disk", "ssd"))},
			want:  1,
		},
		{
			name:  "not on a node whose NoSchedule taint it does not tolerate",
			nodes: []corev1.Node{node("n1"), node("n2", taint("dedicated", corev1.TaintEffectNoSchedule))},
			want:  1,
		},
		{
			name:  "on a node whose NoSchedule taint it tolerates",
			pod:   func(spec *corev1.PodSpec) { spec.Tolerations = []corev1.Toleration{gpuToleration} },
			nodes: []corev1.Node{node("n1"), node("n2", taint("dedicated", corev1.TaintEffectNoSchedule))},
			want:  2,
		},
		{
			name:  "not on a node whose NoExecute taint it does not tolerate, even when it tolerates the NoSchedule one",
			pod:   func(spec *corev1.PodSpec) { spec.Tolerations = []corev1.Toleration{gpuToleration} },
			nodes: []corev1.Node{node("n1"), node("n2", taint("dedicated", corev1.TaintEffectNoExecute))},
			want:  1,
		},
		{
			name:  "on a node tainted PreferNoSchedule",
			nodes: []corev1.Node{node("n1"), node("n2", taint("dedicated", corev1.TaintEffectPreferNoSchedule))},
			want:  2,
		},
		{
			name:  "on a cordoned node: the DaemonSet controller tolerates it",
			nodes: []corev1.Node{node("n1"), node("n2", cordoned)},
			want:  2,
		},
		{
			name: "on nodes not ready, unreachable or under pressure: the DaemonSet controller tolerates them",
			nodes: []corev1.Node{
				node("n1", taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute)),
				node("n2", taint(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute)),
				node("n3", taint(corev1.TaintNodeMemoryPressure, corev1.TaintEffectNoSchedule), taint(corev1.TaintNodeDiskPressure, corev1.TaintEffectNoSchedule)),
				node("n4", taint(corev1.TaintNodePIDPressure, corev1.TaintEffectNoSchedule)),
			},
			want: 4,
		},
		{
			name:  "not on a node without network, unless on the host's network",
			nodes: []corev1.Node{node("n1"), node("n2", taint(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule))},
			want:  1,
		},
		{
			name:  "on a node without network when on the host's network",
			pod:   func(spec *corev1.PodSpec) { spec.HostNetwork = true },
			nodes: []corev1.Node{node("n1"), node("n2", taint(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule))},
			want:  2,
		},
		{
			name:  "only on the node it names",
			pod:   func(spec *corev1.PodSpec) { spec.NodeName = "n2" },
			nodes: []corev1.Node{node("n1"), node("n2"), node("n3")},
			want:  1,
		},
		{
			name:  "nowhere when the node it names is not a member's",
			pod:   func(spec *corev1.PodSpec) { spec.NodeName = "elsewhere" },
			nodes: []corev1.Node{node("n1"), node("n2")},
			want:  0,
		},
		{
			name: "not on the node it names when that node does not fit",
			pod: func(spec *corev1.PodSpec) {
				spec.NodeName = "n2"
				spec.NodeSelector = map[string]string{"disk": "ssd"}
			},
			nodes: []corev1.Node{node("n1", label("disk", "ssd")), node("n2", label("disk", "hdd"))},
			want:  0,
		},
	}
	interpreter := NewStarted(native.NewDefaultInterpreter())
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, ok, err := interpreter.Workload(context.Background(), daemonSet(t, tc.pod))
			if err != nil || !ok {
				t.Fatalf("ok = %v, err = %v", ok, err)
			}
			if w.Replicas != 0 {
				t.Errorf("Replicas = %d before the nodes are counted, want 0", w.Replicas)
			}
			if got := w.OnNodes(tc.nodes).Replicas; got != tc.want {
				t.Errorf("OnNodes: %d pods, want %d", got, tc.want)
			}
			var fitting int32
			for i := range tc.nodes {
				if w.PerNode.Fits(&tc.nodes[i]) {
					fitting++
				}
			}
			if fitting != tc.want {
				t.Errorf("Fits: %d nodes, want %d", fitting, tc.want)
			}
		})
	}
}

func TestOnNodesLeavesOtherWorkloads(t *testing.T) {
	deployment := unstructuredOf(t, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](4), Template: podTemplate()},
	}, appsv1.SchemeGroupVersion.WithKind("Deployment"))
	w, _, err := NewStarted(native.NewDefaultInterpreter()).Workload(context.Background(), deployment)
	if err != nil {
		t.Fatal(err)
	}
	if got := w.OnNodes([]corev1.Node{node("n1")}).Replicas; got != 4 {
		t.Errorf("a Deployment on one node runs %d pods, want its 4 replicas", got)
	}
}
