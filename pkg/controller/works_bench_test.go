package controller

import (
	"encoding/json"
	"testing"

	workv1alpha1 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"github.com/karmada-io/karmada/pkg/resourceinterpreter/default/native"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/karmada-quota/karmada-quota/pkg/interpreter"
)

// karmadaWork is a Work as Karmada v1.18's binding controller writes it for one member of a Deployment: the
// rendered manifest with the labels and annotations Karmada adds, its own labels, annotations and finalizer.
func karmadaWork(tb testing.TB) []byte {
	tb.Helper()
	labels := map[string]string{"app": "web", "team": "shop"}
	karmadaAnnotations := map[string]string{
		"propagationpolicy.karmada.io/permanent-id": "0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d",
		"resourcebinding.karmada.io/permanent-id":   "1b2c3d4e-5f6a-7b8c-9d0e-1f2a3b4c5d6e",
		"work.karmada.io/permanent-id":              "2c3d4e5f-6a7b-8c9d-0e1f-2a3b4c5d6e7f",
		"app.kubernetes.io/managed-by":              "karmada",
		"resourcetemplate.karmada.io/managed-by":    "karmada",
		"karmada.io/managed":                        "true",
		"propagationpolicy.karmada.io/name":         "web",
		"propagationpolicy.karmada.io/namespace":    "shop",
		"resourcebinding.karmada.io/name":           "web-deployment",
		"resourcebinding.karmada.io/namespace":      "shop",
		"resourcetemplate.karmada.io/uid":           "3d4e5f6a-7b8c-9d0e-1f2a-3b4c5d6e7f8a",
		"resourcetemplate.karmada.io/generation":    "7",
	}
	d := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Labels: labels, Annotations: karmadaAnnotations},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "web", Image: "registry.example.com/shop/web:1.42.0",
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
					Env:   []corev1.EnvVar{{Name: "MODE", Value: "production"}, {Name: "REGION", Value: "eu-west"}},
					Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi")},
						Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("2Gi")},
					},
					ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready"}}},
				}}},
			},
		},
	}
	manifest, err := json.Marshal(d)
	if err != nil {
		tb.Fatal(err)
	}
	w := &workv1alpha1.Work{
		TypeMeta: metav1.TypeMeta{APIVersion: "work.karmada.io/v1alpha1", Kind: "Work"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "karmada-es-member1", Name: "web-6d4f8b9c7", UID: "4e5f6a7b-8c9d-0e1f-2a3b-4c5d6e7f8a9b",
			ResourceVersion: "123456", Generation: 3, Finalizers: []string{"karmada.io/execution-controller"},
			Labels: map[string]string{"work.karmada.io/permanent-id": "2c3d4e5f-6a7b-8c9d-0e1f-2a3b4c5d6e7f", "resourcebinding.karmada.io/permanent-id": "1b2c3d4e-5f6a-7b8c-9d0e-1f2a3b4c5d6e"},
			Annotations: map[string]string{
				workv1alpha2.ResourceBindingNamespaceAnnotationKey: "shop",
				workv1alpha2.ResourceBindingNameAnnotationKey:      "web-deployment",
				"policy.karmada.io/applied-overrides":              `[{"policyName":"bigger-on-member1","overriders":{"plaintext":[{"path":"/spec/template/spec/containers/0/resources/requests/cpu","operator":"replace","value":"2"}]}}]`,
			},
		},
		Spec: workv1alpha1.WorkSpec{Workload: workv1alpha1.WorkloadTemplate{Manifests: []workv1alpha1.Manifest{{RawExtension: k8sruntime.RawExtension{Raw: manifest}}}}},
	}
	raw, err := json.Marshal(w)
	if err != nil {
		tb.Fatal(err)
	}
	return raw
}

// BenchmarkCachedWork reports the heap one Work holds in the controller's informer, kept as it came and kept as
// what it asks (workView.trim). The controller holds every Work of the control plane: one per binding and member.
func BenchmarkCachedWork(b *testing.B) {
	raw := karmadaWork(b)
	view := &workView{interpreter: interpreter.NewStarted(native.NewDefaultInterpreter())}
	for _, c := range []struct {
		name      string
		transform func(any) (any, error)
	}{
		{"as stored", func(obj any) (any, error) { return obj, nil }},
		{"asking", view.trim},
	} {
		b.Run(c.name, func(b *testing.B) {
			heapPerObject(b, "work", func() (any, error) {
				w := &workv1alpha1.Work{}
				if err := json.Unmarshal(raw, w); err != nil {
					return nil, err
				}
				return c.transform(w)
			})
		})
	}
}
