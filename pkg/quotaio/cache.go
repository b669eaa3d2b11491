package quotaio

import (
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
)

// stripManagedFields is the cache's transform of every object nothing here reads the managed fields of.
var stripManagedFields = cache.TransformStripManagedFields()

// TrimQuota is the transform of the quota informers of the controller and the webhook, which hold every quota of
// the control plane. It drops the managed fields, as of every object they cache, and a status whose hard limits
// are the spec's (the controller writes them as a copy of it) holds the spec's resource list instead of a copy: a
// decoded resource list takes some 700 bytes of heap whatever it holds, a tenth of a decoded quota and its ledger.
// The cache's objects are only read; a reader that changes one changes a deep copy, whose lists are its own.
// Anything but a quota loses its managed fields only.
func TrimQuota(obj any) (any, error) {
	obj, err := stripManagedFields(obj)
	if err != nil {
		return obj, err
	}
	switch q := obj.(type) {
	case *quotav1alpha1.KarmadaQuota:
		shareHard(&q.Spec, &q.Status)
	case *quotav1alpha1.KarmadaBusinessQuota:
		shareHard(&q.Spec.KarmadaQuotaSpec, &q.Status.KarmadaQuotaStatus)
	}
	return obj, nil
}

// shareHard points status.hard at spec.hard when they hold the same quantities, each in the same format: then
// every reader, a status's fingerprint included, reads the same either way.
func shareHard(spec *quotav1alpha1.KarmadaQuotaSpec, status *quotav1alpha1.KarmadaQuotaStatus) {
	if len(spec.Hard) == 0 || !sameQuantities(spec.Hard, status.Hard) {
		return
	}
	status.Hard = spec.Hard
}

// sameQuantities reports whether a and b list the same resources at the same quantities, each written in the
// same format.
func sameQuantities(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for name, qa := range a {
		qb, ok := b[name]
		if !ok || qa.Format != qb.Format || qa.Cmp(qb) != 0 {
			return false
		}
	}
	return true
}
