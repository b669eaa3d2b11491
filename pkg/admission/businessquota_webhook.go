package admission

import (
	"context"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/apis/quota/validation"
	"github.com/karmada-quota/karmada-quota/pkg/metrics"
)

// BusinessQuotaValidator is QuotaValidator for KarmadaBusinessQuotas: it refuses one that could be stored and then
// not enforced (an empty namespace selector among the rest), and fences the admissions of one whose spec changes.
type BusinessQuotaValidator struct {
	// reader reads ledger objects from the apiserver, writer writes them; nil fences nothing (unit tests of
	// validation alone).
	reader client.Reader
	writer client.Writer
}

var _ admission.Validator[*quotav1alpha1.KarmadaBusinessQuota] = BusinessQuotaValidator{}

// ValidateCreate validates a new business quota.
func (BusinessQuotaValidator) ValidateCreate(_ context.Context, q *quotav1alpha1.KarmadaBusinessQuota) (admission.Warnings, error) {
	return nil, validateBusiness(admissionv1.Create, q)
}

// ValidateUpdate validates a changed business quota and, when its spec changed, fences its ledger at the new
// generation before the apiserver stores it (fence has the reason). A new namespace selector is a new spec: an
// admission decided on the namespaces the old one chose loses its write.
func (v BusinessQuotaValidator) ValidateUpdate(ctx context.Context, old, q *quotav1alpha1.KarmadaBusinessQuota) (admission.Warnings, error) {
	if err := validateBusiness(admissionv1.Update, q); err != nil {
		return nil, err
	}
	return nil, fenceNewSpec(ctx, v.reader, v.writer, old.Generation, q.AsKarmadaQuota())
}

// ValidateDelete admits every delete.
func (BusinessQuotaValidator) ValidateDelete(context.Context, *quotav1alpha1.KarmadaBusinessQuota) (admission.Warnings, error) {
	return nil, nil
}

func validateBusiness(op admissionv1.Operation, q *quotav1alpha1.KarmadaBusinessQuota) error {
	start := time.Now()
	var err error
	if errs := validation.ValidateKarmadaBusinessQuota(q); len(errs) > 0 {
		err = apierrors.NewInvalid(quotav1alpha1.GroupVersion.WithKind(metrics.KindBusinessQuota).GroupKind(), q.Name, errs)
	}
	observe(metrics.KindBusinessQuota, op, start, err)
	return err
}

// businessQuotaWebhook is the KarmadaBusinessQuota webhook, guarded as the KarmadaQuota one is.
func businessQuotaWebhook(s *runtime.Scheme, v BusinessQuotaValidator) *admission.Webhook {
	wh := admission.WithValidator[*quotav1alpha1.KarmadaBusinessQuota](s, v)
	wh.Handler = quantityGuard{Handler: wh.Handler, fields: quotaQuantityFields}
	return wh
}
