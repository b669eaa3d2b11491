package utiltesting

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// List builds a resource list from name, quantity pairs: List("cpu", "500m", "memory", "1Gi").
func List(pairs ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i+1 < len(pairs); i += 2 {
		l[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return l
}
