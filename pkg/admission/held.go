package admission

import (
	"context"
	"errors"
	"fmt"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/karmada-quota/karmada-quota/pkg/resources"
	"github.com/karmada-quota/karmada-quota/pkg/templates"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
)

// The templates the webhook reads what a binding's object holds on members from (interpreter.NewHeldReader): a GET
// per new template version, and a LIST of one template at one past revision when the template changed
// (templates.Reader.Previous). StatefulSets are read for their priority class already.
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims;services,verbs=get;list

// holdings reads what a write's bindings hold on members besides their pods (claims, storage, load balancers, node
// ports), in namespaces with a quota that limits any of it; elsewhere it changes no decision, and the write costs
// nothing more.
type holdings struct {
	reader *templates.Reader[usage.Held]
}

// knows reports whether rb's template is of a kind that may hold something on members. It reads nothing.
func (h *holdings) knows(rb *workv1alpha2.ResourceBinding) bool {
	return h != nil && h.reader.Knows(rb.Spec.Resource)
}

// of returns what the templates of rb and old (nil for a create) hold. Made from one template version, both hold
// the same. When the template changed in between, old's version is read as it was (Reader.Previous); when that
// version is out of reach, old is taken to hold what rb holds: the template webhook decided the change at its
// write, and this write is then charged no growth of holdings (README, "What a binding uses").
func (h *holdings) of(ctx context.Context, rb, old *workv1alpha2.ResourceBinding) (now, before usage.Held, err error) {
	now, err = h.reader.Current(ctx, rb.Spec.Resource)
	if errors.Is(err, templates.ErrGone) {
		// The binding follows its template out: it holds nothing more on members than it did.
		return usage.Held{}, usage.Held{}, nil
	}
	if err != nil {
		return usage.Held{}, usage.Held{}, apierrors.NewInternalError(fmt.Errorf(
			"what %s %s/%s holds on member clusters could not be read, so the write is refused (fail closed): %w",
			rb.Spec.Resource.Kind, rb.Namespace, rb.Spec.Resource.Name, err))
	}
	if old == nil || templates.SameTemplate(old, rb) {
		return now, now, nil
	}
	if previous, ok := h.reader.Previous(ctx, old.Spec.Resource, rb.Spec.Resource); ok {
		return now, previous, nil
	}
	return now, now, nil
}

// LimitHeld reports whether some quota limits what objects hold on members (resources.Held): only then are
// templates read for it.
func (q *Quotas) LimitHeld() bool {
	for _, kq := range q.items {
		for name := range kq.Spec.Hard {
			if _, class, err := resources.Canonical(name); err == nil && class == resources.Held {
				return true
			}
		}
	}
	return false
}
