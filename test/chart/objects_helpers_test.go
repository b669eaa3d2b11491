package chart

import (
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// Helm's hook annotations.
const (
	hookAnnotation       = "helm.sh/hook"
	hookWeightAnnotation = "helm.sh/hook-weight"
	hookDeleteAnnotation = "helm.sh/hook-delete-policy"
	componentLabel       = "app.kubernetes.io/component"
)

// typed converts an object the chart rendered into its Go type (the schema test has checked it decodes strictly).
func typed[T any](t reporter, obj *unstructured.Unstructured) *T {
	t.Helper()
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, out); err != nil {
		t.Fatalf("%s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
	return out
}

// runtimeConvert decodes an unstructured map into a Go type.
func runtimeConvert(m map[string]any, into any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(m, into)
}

// ofKind are the objects of a kind among objects.
func ofKind(objects []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, obj := range objects {
		if obj.GetKind() == kind {
			out = append(out, obj)
		}
	}
	return out
}

// workload is a Deployment or a Job the chart renders, seen through its pod template.
type workload struct {
	kind, name, namespace string
	// component is the app.kubernetes.io/component label of its pods: webhook, controller or installer.
	component string
	replicas  int32
	template  corev1.PodTemplateSpec
	obj       *unstructured.Unstructured
}

func (w workload) String() string { return w.kind + " " + w.name }

// workloads are the chart's Deployments and Jobs, hooks included.
func (r *rendering) workloads(t reporter) []workload {
	t.Helper()
	var out []workload
	for _, obj := range r.all() {
		switch obj.GetKind() {
		case "Deployment":
			d := typed[appsv1.Deployment](t, obj)
			replicas := int32(1)
			if d.Spec.Replicas != nil {
				replicas = *d.Spec.Replicas
			}
			out = append(out, workload{kind: "Deployment", name: d.Name, namespace: d.Namespace,
				component: d.Spec.Template.Labels[componentLabel], replicas: replicas, template: d.Spec.Template, obj: obj})
		case "Job":
			j := typed[batchv1.Job](t, obj)
			out = append(out, workload{kind: "Job", name: j.Name, namespace: j.Namespace,
				component: j.Spec.Template.Labels[componentLabel], replicas: 1, template: j.Spec.Template, obj: obj})
		case "Pod", "ReplicaSet", "StatefulSet", "DaemonSet", "CronJob":
			t.Errorf("%s %s: the checks here only know Deployments and Jobs; teach them this kind", obj.GetKind(), obj.GetName())
		}
	}
	if len(out) == 0 {
		t.Fatal("the chart renders no workloads")
	}
	return out
}

// deployment is the Deployment of a component.
func (r *rendering) deployment(t reporter, component string) workload {
	t.Helper()
	for _, w := range r.workloads(t) {
		if w.kind == "Deployment" && w.component == component {
			return w
		}
	}
	t.Fatalf("no Deployment of the %s", component)
	return workload{}
}

// selects says whether a label selector picks pods with the given labels; an empty selector picks nothing here,
// since the chart never means "everything".
func selects(selector *metav1.LabelSelector, podLabels map[string]string) bool {
	if selector == nil || (len(selector.MatchLabels) == 0 && len(selector.MatchExpressions) == 0) {
		return false
	}
	s, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return false
	}
	return s.Matches(labels.Set(podLabels))
}

// hook describes an object's Helm hook annotations.
type hook struct {
	events []string
	weight int
	delete []string
}

func hookOf(t reporter, obj *unstructured.Unstructured) (hook, bool) {
	t.Helper()
	a := obj.GetAnnotations()
	events, ok := a[hookAnnotation]
	if !ok {
		return hook{}, false
	}
	h := hook{events: splitList(events), delete: splitList(a[hookDeleteAnnotation])}
	if w := a[hookWeightAnnotation]; w != "" {
		weight, err := strconv.Atoi(w)
		if err != nil {
			t.Errorf("%s %s: hook weight %q is not an integer", obj.GetKind(), obj.GetName(), w)
		}
		h.weight = weight
	}
	return h, true
}

func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// containers are a pod's init and regular containers.
func containers(spec *corev1.PodSpec) []corev1.Container {
	return append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...)
}

// flags reads a container's "--name=value" arguments; a flag given twice keeps every value.
func flags(c corev1.Container) map[string][]string {
	out := map[string][]string{}
	for _, arg := range c.Args {
		if !strings.HasPrefix(arg, "-") {
			continue
		}
		name, value, _ := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		out[name] = append(out[name], value)
	}
	return out
}
