package admission

import (
	"context"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/apis/quota/validation"
	"github.com/karmada-quota/karmada-quota/pkg/metrics"
)

const kindKarmadaQuota = "KarmadaQuota"

// QuotaValidator refuses a KarmadaQuota that could be stored and then not enforced.
type QuotaValidator struct{}

var _ admission.Validator[*quotav1alpha1.KarmadaQuota] = QuotaValidator{}

// ValidateCreate validates a new quota.
func (QuotaValidator) ValidateCreate(_ context.Context, q *quotav1alpha1.KarmadaQuota) (admission.Warnings, error) {
	return nil, validate(admissionv1.Create, q)
}

// ValidateUpdate validates a changed quota.
func (QuotaValidator) ValidateUpdate(_ context.Context, _, q *quotav1alpha1.KarmadaQuota) (admission.Warnings, error) {
	return nil, validate(admissionv1.Update, q)
}

// ValidateDelete admits every delete.
func (QuotaValidator) ValidateDelete(context.Context, *quotav1alpha1.KarmadaQuota) (admission.Warnings, error) {
	return nil, nil
}

func validate(op admissionv1.Operation, q *quotav1alpha1.KarmadaQuota) error {
	start := time.Now()
	var err error
	if errs := validation.ValidateKarmadaQuota(q); len(errs) > 0 {
		err = apierrors.NewInvalid(quotav1alpha1.GroupVersion.WithKind(kindKarmadaQuota).GroupKind(), q.Name, errs)
	}
	observe(metrics.KindKarmadaQuota, op, start, err)
	return err
}
