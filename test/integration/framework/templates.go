package framework

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

// CreateDeployment creates a resource template as a user does: a Deployment whose pods request cpu and run at
// priorityClass ("" for none).
func CreateDeployment(ctx context.Context, c client.Client, ns, name, priorityClass, cpu string) (*appsv1.Deployment, error) {
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{PriorityClassName: priorityClass, Containers: []corev1.Container{{
					Name: "app", Image: "app",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}},
				}}},
			},
		},
	}
	return d, c.Create(ctx, d)
}

// BindingOf starts the binding Karmada's detector makes for a Deployment without its ResourceQuotaEstimate feature
// gate: it names the template's version, and its replica requirements carry the requests but no priority class.
func BindingOf(d *appsv1.Deployment) *utiltesting.BindingWrapper {
	b := utiltesting.MakeBinding(d.Namespace, d.Name).Replicas(ptr.Deref(d.Spec.Replicas, 1)).
		Requests(d.Spec.Template.Spec.Containers[0].Resources.Requests)
	b.Spec.Resource.UID = d.UID
	b.Spec.Resource.ResourceVersion = d.ResourceVersion
	return b
}
