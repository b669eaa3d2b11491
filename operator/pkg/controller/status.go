package controller

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	operatorv1alpha1 "github.com/karmada-quota/karmada-quota/operator/api/v1alpha1"
)

// status accumulates what one reconcile learnt, to be written once at its end.
type status struct {
	inst *operatorv1alpha1.KarmadaQuotaInstallation
}

func newStatus(inst *operatorv1alpha1.KarmadaQuotaInstallation) *status {
	return &status{inst: inst}
}

func (s *status) set(conditionType string, state metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&s.inst.Status.Conditions, metav1.Condition{
		Type: conditionType, Status: state, Reason: reason, Message: message, ObservedGeneration: s.inst.Generation,
	})
}

// observed says the status is about the current spec.
func (s *status) observed() { s.inst.Status.ObservedGeneration = s.inst.Generation }

func (s *status) suspended() {
	s.observed()
	s.set(operatorv1alpha1.ConditionProgressing, metav1.ConditionFalse, ReasonSuspended, "spec.suspend is set: the operator changes and repairs nothing")
}

// invalid: nothing was changed, and nothing will be until the spec changes.
func (s *status) invalid(message string) {
	s.observed()
	s.set(operatorv1alpha1.ConditionReady, metav1.ConditionFalse, ReasonInvalidSpec, message)
	s.set(operatorv1alpha1.ConditionProgressing, metav1.ConditionFalse, ReasonInvalidSpec, "the spec is invalid; nothing was changed")
	s.set(operatorv1alpha1.ConditionDegraded, metav1.ConditionTrue, ReasonInvalidSpec, message)
}

// degraded: the operator cannot go on; Ready keeps telling whether what runs still serves.
func (s *status) degraded(reason, message string) {
	s.observed()
	s.set(operatorv1alpha1.ConditionDegraded, metav1.ConditionTrue, reason, message)
	if !meta.IsStatusConditionTrue(s.inst.Status.Conditions, operatorv1alpha1.ConditionReady) {
		s.set(operatorv1alpha1.ConditionReady, metav1.ConditionFalse, reason, message)
	}
}

func (s *status) progressing(reason, message string) {
	s.observed()
	s.set(operatorv1alpha1.ConditionProgressing, metav1.ConditionTrue, reason, message)
	s.set(operatorv1alpha1.ConditionDegraded, metav1.ConditionFalse, ReasonAsExpected, "")
	// During an upgrade the previous version still serves: Ready stays as it was, except on a first install.
	if meta.FindStatusCondition(s.inst.Status.Conditions, operatorv1alpha1.ConditionReady) == nil ||
		!meta.IsStatusConditionTrue(s.inst.Status.Conditions, operatorv1alpha1.ConditionReady) {
		s.set(operatorv1alpha1.ConditionReady, metav1.ConditionFalse, reason, message)
	}
}

func (s *status) installed(version string) {
	s.observed()
	s.inst.Status.Version = version
	s.set(operatorv1alpha1.ConditionReady, metav1.ConditionTrue, ReasonInstalled, "karmada-quota "+version+" is installed and registered in the karmada-apiserver")
	s.set(operatorv1alpha1.ConditionProgressing, metav1.ConditionFalse, ReasonComplete, "rollouts complete, webhook registered")
	s.set(operatorv1alpha1.ConditionDegraded, metav1.ConditionFalse, ReasonAsExpected, "")
}

func (s *status) component(c operatorv1alpha1.ComponentStatus) {
	list := s.inst.Status.Components
	if i := slices.IndexFunc(list, func(o operatorv1alpha1.ComponentStatus) bool { return o.Name == c.Name }); i >= 0 {
		list[i] = c
	} else {
		list = append(list, c)
	}
	slices.SortFunc(list, func(a, b operatorv1alpha1.ComponentStatus) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	s.inst.Status.Components = list
}

// writeStatus patches the status when the reconcile changed it.
func (r *Reconciler) writeStatus(ctx context.Context, original, inst *operatorv1alpha1.KarmadaQuotaInstallation, _ *status) error {
	if equality.Semantic.DeepEqual(original.Status, inst.Status) {
		return nil
	}
	return r.Client.Status().Patch(ctx, inst, client.MergeFrom(original))
}
