package admission

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/priorityclass"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
)

// The templates the webhook reads the priority class from when a binding lacks it (priorityclass.Resolver): a GET
// per new template version, and a LIST of one template at one past revision when a template's class may have
// changed (Resolver.Previous).
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets;replicasets;daemonsets,verbs=get;list
// +kubebuilder:rbac:groups=batch,resources=jobs;cronjobs,verbs=get;list
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list

// classifier fills in the priority class of a write's bindings when they lack it (Karmada without its
// ResourceQuotaEstimate feature gate), in namespaces with a quota scoped by PriorityClass; elsewhere the class
// changes no decision, and the write costs nothing more.
type classifier struct {
	resolver *priorityclass.Resolver
}

// needed reports whether classify has anything to do for rb. Only placed replicas are charged by class: a create,
// or any write placing nothing, is decided the same whatever the class.
func (c *classifier) needed(rb *workv1alpha2.ResourceBinding) bool {
	return c != nil && priorityclass.PlacesUnclassified(rb)
}

// classify returns the write's bindings with their class filled in, copies where it was missing; quotas are the
// namespace's, as the request read them. It refuses, with quotav1alpha1.ReasonPriorityClassUnknown, a write that
// places replicas whose class cannot be read and that could raise what a scoped quota counts; and fails closed
// when the template cannot be read.
func (c *classifier) classify(ctx context.Context, quotas *Quotas, rb, old *workv1alpha2.ResourceBinding) (*workv1alpha2.ResourceBinding, *workv1alpha2.ResourceBinding, error) {
	if !c.needed(rb) {
		return rb, old, nil
	}
	scoped := quotas.ScopedByPriorityClass()
	if len(scoped) == 0 {
		return rb, old, nil
	}
	class, err := c.resolver.Class(ctx, rb.Spec.Resource)
	if priorityclass.IsUnclassifiable(err) {
		// Made from the same template version, old and new share their class, whichever it is: a write that grows
		// nothing under any one class is admitted as it would be with the class known (a scale-down, say).
		if old != nil && priorityclass.SameTemplate(old, rb) && !grows(rb, old) {
			return rb, old, nil
		}
		return nil, nil, priorityClassUnknown(rb, scoped, err)
	}
	if err != nil {
		return nil, nil, apierrors.NewInternalError(fmt.Errorf("the priority class of binding %s/%s could not be read, so the write is refused (fail closed): %w", rb.Namespace, rb.Name, err))
	}
	classified := priorityclass.WithClass(rb, class)
	if old == nil || !priorityclass.Lacks(old) {
		return classified, old, nil
	}
	// The stored binding's class is the one of the template version it was made from. When the template changed
	// since (this write is the detector's), that version is read as it was (Resolver.Previous). Should it be out of
	// reach, it is taken to be unchanged: charging the write in full instead would refuse every template change of
	// a workload in a full quota. The controller's recount then counts the binding under its new class.
	oldClass := class
	if !priorityclass.SameTemplate(old, rb) {
		if previous, ok := c.resolver.Previous(ctx, old.Spec.Resource, rb.Spec.Resource); ok {
			oldClass = previous
		}
	}
	return classified, priorityclass.WithClass(old, oldClass), nil
}

// grows is usage.Grows of the write; a binding no quota can count is left for decide to refuse.
func grows(rb, old *workv1alpha2.ResourceBinding) bool {
	newUsage, err := usage.Of(rb)
	if err != nil {
		return true
	}
	oldUsage, err := usage.Of(old)
	if err != nil {
		return true
	}
	return usage.Grows(newUsage, &oldUsage)
}

// priorityClassUnknown is the refusal of a write whose class cannot be told: a 403 saying which binding, which
// kind, why, which quotas needed it, and what to do.
func priorityClassUnknown(rb *workv1alpha2.ResourceBinding, scoped []string, cause error) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure,
		Code:   http.StatusForbidden,
		Reason: metav1.StatusReason(quotav1alpha1.ReasonPriorityClassUnknown),
		Message: fmt.Sprintf("binding %s/%s places replicas of %s %s whose priority class is unknown, and quota(s) %s of the namespace "+
			"are scoped by PriorityClass: the write is refused rather than counted under a guessed class. The binding names no "+
			"class (spec.replicaRequirements.priorityClassName) and %v. Run karmada-controller-manager with "+
			"--feature-gates=ResourceQuotaEstimate=true and name a priorityClassName in the workload's pod template, so that "+
			"Karmada copies it into the binding.",
			rb.Namespace, rb.Name, rb.Spec.Resource.Kind, rb.Spec.Resource.Name, strings.Join(scoped, ", "), cause),
		Details: &metav1.StatusDetails{Name: rb.Name, Group: workv1alpha2.SchemeGroupVersion.Group, Kind: "resourcebindings"},
	}}
}
