package usage

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
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

// NewSelector compiles a quota's scope selector. It refuses what validation refuses, so a quota that bypassed
// validation (written before the webhook existed) is reported rather than silently counting the wrong bindings.
func NewSelector(s *quotav1alpha1.ScopeSelector) (Selector, error) {
	if s == nil {
		return Selector{}, nil
	}
	sel := Selector{requirements: make([]requirement, 0, len(s.MatchExpressions))}
	for i, e := range s.MatchExpressions {
		if e.ScopeName != corev1.ResourceQuotaScopePriorityClass {
			return Selector{}, fmt.Errorf("scopeSelector.matchExpressions[%d]: unsupported scope %q", i, e.ScopeName)
		}
		switch e.Operator {
		case corev1.ScopeSelectorOpIn, corev1.ScopeSelectorOpNotIn:
			if len(e.Values) == 0 {
				return Selector{}, fmt.Errorf("scopeSelector.matchExpressions[%d]: operator %s needs values", i, e.Operator)
			}
		case corev1.ScopeSelectorOpExists, corev1.ScopeSelectorOpDoesNotExist:
			if len(e.Values) != 0 {
				return Selector{}, fmt.Errorf("scopeSelector.matchExpressions[%d]: operator %s takes no values", i, e.Operator)
			}
		default:
			return Selector{}, fmt.Errorf("scopeSelector.matchExpressions[%d]: unsupported operator %q", i, e.Operator)
		}
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
