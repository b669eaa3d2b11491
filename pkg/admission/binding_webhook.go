package admission

import (
	"context"
	"errors"
	"time"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/metrics"
	"github.com/karmada-quota/karmada-quota/pkg/quota"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
)

// BindingValidator admits ResourceBinding creates and updates against the namespace's quotas.
type BindingValidator struct {
	admitter *Admitter
	quotas   *QuotaReader
	// classes fills in the priority class bindings lack (priority_class.go); nil takes bindings as they are.
	classes *classifier
	// holdings reads what bindings' objects hold on members (held.go); nil counts none.
	holdings *holdings
}

var _ admission.Validator[*workv1alpha2.ResourceBinding] = &BindingValidator{}

// ValidateCreate charges a new binding: its object count, and its placed replicas if it is created scheduled.
func (v *BindingValidator) ValidateCreate(ctx context.Context, rb *workv1alpha2.ResourceBinding) (admission.Warnings, error) {
	return nil, v.validate(ctx, admissionv1.Create, rb, nil)
}

// ValidateUpdate charges what an update adds; decreases and unrelated changes are always admitted.
func (v *BindingValidator) ValidateUpdate(ctx context.Context, oldRB, newRB *workv1alpha2.ResourceBinding) (admission.Warnings, error) {
	return nil, v.validate(ctx, admissionv1.Update, newRB, oldRB)
}

// ValidateDelete admits every delete: a deleting binding keeps counting until it is gone.
func (v *BindingValidator) ValidateDelete(context.Context, *workv1alpha2.ResourceBinding) (admission.Warnings, error) {
	return nil, nil
}

func (v *BindingValidator) validate(ctx context.Context, op admissionv1.Operation, rb, old *workv1alpha2.ResourceBinding) error {
	start := time.Now()
	err := v.decide(ctx, op, rb, old)
	observe(metrics.KindResourceBinding, op, start, err)
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Binding write refused", "binding", klog.KObj(rb), "operation", op, "reason", apierrors.ReasonForError(err), "message", err.Error())
	}
	return err
}

func (v *BindingValidator) decide(ctx context.Context, op admissionv1.Operation, rb, old *workv1alpha2.ResourceBinding) error {
	// The namespace's quotas are read once, when first needed: to tell the class of replicas placed without one,
	// what the object holds on members where a quota limits it, or to decide a write that grows.
	var quotas *Quotas
	read := func() error {
		if quotas != nil {
			return nil
		}
		var err error
		if quotas, err = v.quotas.Read(ctx, rb.Namespace); err != nil {
			return quotasNotListed(rb.Namespace, err)
		}
		return nil
	}
	var err error
	if v.classes.needed(rb) {
		if err := read(); err != nil {
			return err
		}
		if rb, old, err = v.classes.classify(ctx, quotas, rb, old); err != nil {
			return err
		}
	}
	var held, wasHeld usage.Held
	if v.holdings.knows(rb) {
		if err := read(); err != nil {
			return err
		}
		if quotas.LimitHeld() {
			if held, wasHeld, err = v.holdings.of(ctx, rb, old); err != nil {
				return err
			}
		}
	}
	newUsage, err := usage.With(rb, held)
	if err != nil {
		return invalidBinding(rb, err)
	}
	var oldUsage *usage.Usage
	if old != nil {
		u, err := usage.With(old, wasHeld)
		if err != nil {
			// The stored binding is one no quota could have counted; charge the new one in full rather than refuse
			// the write that may be repairing it.
			u = usage.Usage{}
		}
		oldUsage = &u
	}
	if !usage.Grows(newUsage, oldUsage) {
		// A move between clusters grows nothing federation-wide, but may grow what a cluster or group limit counts.
		if !usage.GrowsOnACluster(newUsage, oldUsage) {
			return nil
		}
		if err := read(); err != nil {
			return err
		}
		if !quotas.LimitMembers() {
			return nil
		}
	}
	if err := read(); err != nil {
		return err
	}
	// A namespace without a quota needs no batch. The batch reads the quotas again: each of its attempts decides on
	// the newest copies (Admitter.readNewest).
	if !quotas.Governed() {
		return nil
	}

	dryRun := false
	if req, err := admission.RequestFromContext(ctx); err == nil && req.DryRun != nil {
		dryRun = *req.DryRun
	}
	var base string
	if old != nil {
		base = old.ResourceVersion
	}
	return v.admitter.Admit(ctx, Request{
		Namespace: rb.Namespace,
		Queue:     quotas.Queue(),
		Key:       quota.Key{UID: rb.UID, Generation: admittedGeneration(op, rb)},
		Owner: quotav1alpha1.ReservationOwner{
			APIVersion: workv1alpha2.SchemeGroupVersion.String(),
			Kind:       quota.KindResourceBinding,
			Name:       rb.Name,
			UID:        rb.UID,
		},
		New:    newUsage,
		Old:    oldUsage,
		DryRun: dryRun,
		// An attempt built on a stale copy of the binding cannot commit (Admitter.cannotCommit).
		BaseResourceVersion: base,
		NotSteered:          placementNotSteered(rb.Spec.Placement),
	})
}

// admittedGeneration is the generation the admitted write produces. Validating admission runs after the
// apiserver has set it: 1 on create, bumped on update when the spec changed (test/integration proves both).
func admittedGeneration(op admissionv1.Operation, rb *workv1alpha2.ResourceBinding) int64 {
	if op == admissionv1.Create && rb.Generation == 0 {
		return 1
	}
	return rb.Generation
}

func invalidBinding(rb *workv1alpha2.ResourceBinding, err error) error {
	var fe *field.Error
	if errors.As(err, &fe) {
		return apierrors.NewInvalid(workv1alpha2.SchemeGroupVersion.WithKind(quota.KindResourceBinding).GroupKind(), rb.Name, field.ErrorList{fe})
	}
	return apierrors.NewBadRequest(err.Error())
}

// observe records a decision's result, reason and latency.
func observe(kind string, op admissionv1.Operation, start time.Time, err error) {
	result, reason := metrics.ResultAllowed, ""
	if err != nil {
		result, reason = metrics.ResultDenied, string(apierrors.ReasonForError(err))
		if apierrors.IsInternalError(err) || apierrors.IsTimeout(err) {
			result = metrics.ResultError
		}
	}
	metrics.ObserveAdmission(kind, string(op), result, reason, time.Since(start))
}
