package admission

import (
	"context"
	"fmt"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/apis/quota/validation"
	"github.com/karmada-quota/karmada-quota/pkg/metrics"
	"github.com/karmada-quota/karmada-quota/pkg/quota"
	"github.com/karmada-quota/karmada-quota/pkg/quotaio"
)

const kindKarmadaQuota = "KarmadaQuota"

// QuotaValidator refuses a KarmadaQuota that could be stored and then not enforced, and fences the admissions of
// a quota whose spec changes (fence).
type QuotaValidator struct {
	// reader reads ledger objects from the apiserver, writer writes them; nil fences nothing (unit tests of
	// validation alone).
	reader client.Reader
	writer client.Writer
}

var _ admission.Validator[*quotav1alpha1.KarmadaQuota] = QuotaValidator{}

// ValidateCreate validates a new quota.
func (QuotaValidator) ValidateCreate(_ context.Context, q *quotav1alpha1.KarmadaQuota) (admission.Warnings, error) {
	return nil, validate(admissionv1.Create, q)
}

// ValidateUpdate validates a changed quota and, when its spec changed, fences its ledger at the new generation
// before the apiserver stores it.
func (v QuotaValidator) ValidateUpdate(ctx context.Context, old, q *quotav1alpha1.KarmadaQuota) (admission.Warnings, error) {
	if err := validate(admissionv1.Update, q); err != nil {
		return nil, err
	}
	return nil, fenceNewSpec(ctx, v.reader, v.writer, old.Generation, q)
}

// fenceNewSpec fences the ledger of q (a KarmadaQuota, or a business quota read as one) when its update changes the
// spec (from generation oldGeneration): nothing for a dry run, nor without a writer (unit tests of validation).
func fenceNewSpec(ctx context.Context, reader client.Reader, writer client.Writer, oldGeneration int64, q *quotav1alpha1.KarmadaQuota) error {
	if q.Generation == oldGeneration || writer == nil {
		return nil
	}
	if req, err := admission.RequestFromContext(ctx); err == nil && req.DryRun != nil && *req.DryRun {
		return nil
	}
	if err := fence(ctx, reader, writer, q); err != nil {
		return apierrors.NewInternalError(fmt.Errorf("the admissions of %s %s could not be fenced for its new "+
			"spec, so the change is refused (try again): %w", quota.Noun(q.IsBusiness()), q.Name, err))
	}
	return nil
}

// fence raises the quotaGeneration of q's ledger to q's new generation. From then on an admission deciding on an
// older spec loses its write of the ledger and reads the quota again, so that once the new spec is stored no
// admission is decided on the old one (the exactness a compare-and-swap of the quota itself would give). A quota
// without a ledger needs none: whoever creates it reads the quota from the apiserver first.
func fence(ctx context.Context, reader client.Reader, writer client.Writer, q *quotav1alpha1.KarmadaQuota) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		stored, err := quotaio.GetLedger(ctx, reader, client.ObjectKeyFromObject(q))
		if err != nil {
			return client.IgnoreNotFound(err)
		}
		if quota.LedgerOf(stored, q) == nil || stored.QuotaGeneration >= q.Generation {
			return nil
		}
		stored.QuotaGeneration = q.Generation
		return quotaio.WriteLedger(ctx, writer, stored, false)
	})
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
