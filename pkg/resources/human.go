package resources

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Human renders an amount of a canonical resource as people read it, exactly, and in a form
// resource.ParseQuantity reads back: CPU as Kubernetes prints it (1500m, 2); bytes in binary units when they
// divide evenly (1536Mi), else in decimal ones (1G), else as plain bytes; everything else as a plain integer
// (5000 pods, not the 5k a decimal quantity would print).
func Human(name corev1.ResourceName, v int64) string {
	switch {
	case isMilli(name):
		q := resource.NewMilliQuantity(v, resource.DecimalSI)
		return q.String()
	case isBytes(name) && v%1024 == 0:
		q := resource.NewQuantity(v, resource.BinarySI)
		return q.String()
	case isBytes(name) && v%1000 == 0:
		q := resource.NewQuantity(v, resource.DecimalSI)
		return q.String()
	}
	return strconv.FormatInt(v, 10)
}
