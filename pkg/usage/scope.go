package usage

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/apis/quota/validation"
)

// Selector decides which replica sets a quota counts, by priority class. The zero Selector is unscoped and
// selects everything.
type Selector struct {
	requirements []requirement
}

type requirement struct {
	operator corev1.ScopeSelectorOperator
	values   sets.Set[string]
}

// NewSelector compiles a quota's scope selector. It refuses a selector it could not evaluate as written
// (validation.EnforceableScopeSelector), so a quota that bypassed validation (written before the webhook existed)
// is reported rather than silently counting the wrong bindings.
func NewSelector(s *quotav1alpha1.ScopeSelector) (Selector, error) {
	if err := validation.EnforceableScopeSelector(s); err != nil {
		return Selector{}, err
	}
	if s == nil {
		return Selector{}, nil
	}
	sel := Selector{requirements: make([]requirement, 0, len(s.MatchExpressions))}
	for _, e := range s.MatchExpressions {
		sel.requirements = append(sel.requirements, requirement{operator: e.Operator, values: sets.New(e.Values...)})
	}
	return sel, nil
}

// Scoped reports whether the selector restricts anything.
func (s Selector) Scoped() bool {
	return len(s.requirements) > 0
}

// Matches reports whether a replica set running at priorityClass ("" for none) is selected: every expression
// must hold. Exists means a priority class is named; DoesNotExist means none is.
func (s Selector) Matches(priorityClass string) bool {
	for _, r := range s.requirements {
		var ok bool
		switch r.operator {
		case corev1.ScopeSelectorOpIn:
			ok = r.values.Has(priorityClass)
		case corev1.ScopeSelectorOpNotIn:
			ok = !r.values.Has(priorityClass)
		case corev1.ScopeSelectorOpExists:
			ok = priorityClass != ""
		case corev1.ScopeSelectorOpDoesNotExist:
			ok = priorityClass == ""
		}
		if !ok {
			return false
		}
	}
	return true
}
