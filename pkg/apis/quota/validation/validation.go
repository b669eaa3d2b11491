// Package validation is the one home of the rules for what a KarmadaQuota spec may say. It checks a quota the way
// Kubernetes checks a ResourceQuota, and also refuses whatever a ResourceBinding cannot be charged for: a quota
// that is accepted is a quota that can be enforced.
//
// The webhook reports every broken rule (ValidateKarmadaQuota). The ledger and the scope selector cannot count on
// the webhook, since a quota may predate it, so they refuse a spec they could not enforce as it reads
// (EnforceableHard, EnforceableScopeSelector), naming the first rule it breaks.
package validation

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
)

const notIntegerMsg = "must be an integer"

var supportedOperators = []corev1.ScopeSelectorOperator{
	corev1.ScopeSelectorOpIn, corev1.ScopeSelectorOpNotIn, corev1.ScopeSelectorOpExists, corev1.ScopeSelectorOpDoesNotExist,
}

// ValidateKarmadaQuota validates a new or updated quota (spec only; metadata is the apiserver's job).
func ValidateKarmadaQuota(q *quotav1alpha1.KarmadaQuota) field.ErrorList {
	if q == nil {
		return nil
	}
	return ValidateKarmadaQuotaSpec(&q.Spec, field.NewPath("spec"))
}

// ValidateKarmadaQuotaSpec validates spec at fldPath.
func ValidateKarmadaQuotaSpec(spec *quotav1alpha1.KarmadaQuotaSpec, fldPath *field.Path) field.ErrorList {
	if spec == nil {
		return nil
	}
	_, hardViolations := checkHard(spec.Hard, Scoped(spec), fldPath.Child("hard"), everyRule)
	allErrs := fieldErrors(hardViolations)
	return append(allErrs, fieldErrors(checkScopeSelector(spec.ScopeSelector, fldPath.Child("scopeSelector"), everyRule))...)
}

// Where the ledger's and the selector's refusals point: they read the spec, never a field of something else.
var (
	specHardPath          = field.NewPath("spec", "hard")
	specScopeSelectorPath = field.NewPath("spec", "scopeSelector")
)

// rules says which rules a check applies. The webhook applies every rule once per quota write. The ledger and the
// selector parse a quota on every admission attempt, so they apply only the rules they refuse on, and stop at the
// first refusal.
type rules int

const (
	everyRule rules = iota
	refusalsOnly
)

// EnforceableHard maps the canonical name of each spec.hard key (requests.cpu) to the key as its author wrote it
// (cpu). It fails with the first broken rule that leaves the ledger without a limit to enforce for a key: a name
// that cannot be charged, two keys for one resource (only one of their limits could hold), an object count under a
// scope (a scoped quota never counts objects). A limit the ledger can still read is left to the webhook: nothing
// fits a negative one, and a fraction of a whole-unit resource rounds up.
func EnforceableHard(spec *quotav1alpha1.KarmadaQuotaSpec) (map[corev1.ResourceName]corev1.ResourceName, error) {
	keys, violations := checkHard(spec.Hard, Scoped(spec), specHardPath, refusalsOnly)
	if err := firstRefusal(violations); err != nil {
		return nil, err
	}
	return keys, nil
}

// EnforceableScopeSelector fails with the first broken rule that leaves a selector no reading of sel, or one other
// than it says: a scope other than PriorityClass, an unknown operator, In or NotIn without values, Exists or
// DoesNotExist with values (which they would ignore). A value that is no PriorityClass name is left to the webhook:
// it selects nothing.
func EnforceableScopeSelector(sel *quotav1alpha1.ScopeSelector) error {
	return firstRefusal(checkScopeSelector(sel, specScopeSelectorPath, refusalsOnly))
}

// violation is one broken rule. err is what the webhook reports. refusal is set for the rules the ledger and the
// scope selector apply too, and is what they fail with.
type violation struct {
	err     *field.Error
	refusal error
}

// refused is a violation the ledger and the selector report as the webhook does.
func refused(err *field.Error) violation {
	return violation{err: err, refusal: err}
}

func fieldErrors(violations []violation) field.ErrorList {
	var allErrs field.ErrorList
	for _, v := range violations {
		allErrs = append(allErrs, v.err)
	}
	return allErrs
}

func firstRefusal(violations []violation) error {
	for _, v := range violations {
		if v.refusal != nil {
			return v.refusal
		}
	}
	return nil
}

// Scoped reports whether spec restricts its quota to some priority classes; a selector without expressions, as in
// Kubernetes, selects every binding. It holds for a selector that does not compile too: it has expressions, so it
// restricts by class, however wrongly written (the ledger refuses to enforce it).
func Scoped(spec *quotav1alpha1.KarmadaQuotaSpec) bool {
	return spec.ScopeSelector != nil && len(spec.ScopeSelector.MatchExpressions) > 0
}

// checkHard applies the rules about spec.hard at fldPath. It returns each key it can charge under its canonical
// name, as EnforceableHard does. A key's field path is built only for a violation: a quota that breaks no rule
// costs the ledger nothing but the map it keeps.
func checkHard(hard corev1.ResourceList, scoped bool, fldPath *field.Path, apply rules) (map[corev1.ResourceName]corev1.ResourceName, []violation) {
	// On the stack for the few limits a quota has.
	var buf [16]corev1.ResourceName
	keys := buf[:0]
	for k := range hard {
		keys = append(keys, k)
	}
	// Sorted, so that of two keys naming one resource it is always the same one that is reported.
	slices.Sort(keys)

	keyOf := make(map[corev1.ResourceName]corev1.ResourceName, len(keys))
	var violations []violation
	for _, key := range keys {
		if apply == refusalsOnly && len(violations) > 0 {
			return nil, violations
		}
		canonical, class, err := resources.Canonical(key)
		if err != nil {
			keyPath := fldPath.Key(string(key))
			// The refusal leaves out the field error's `Invalid value: "<key>"`: the path names the key already.
			violations = append(violations, violation{
				err:     field.Invalid(keyPath, string(key), err.Error()),
				refusal: fmt.Errorf("%s: %w", keyPath, err),
			})
		}
		// The rules on the value are the webhook's: the ledger enforces any limit it can read.
		value := hard[key]
		if apply == everyRule && value.Sign() < 0 {
			violations = append(violations, violation{err: field.Invalid(fldPath.Key(string(key)), value.String(), apimachineryvalidation.IsNegativeErrorMsg)})
		}
		if err != nil {
			continue
		}
		if other, ok := keyOf[canonical]; ok {
			// Both keys would be charged for the same usage, and the ledger could enforce only one of the two limits,
			// which need not be the intended one.
			same := fmt.Sprintf("%q and %q are the same resource (%s)", other, key, canonical)
			dup := field.Duplicate(fldPath.Key(string(key)), string(key))
			dup.Detail = same + "; keep one"
			violations = append(violations, violation{err: dup, refusal: fmt.Errorf("%s: %s", fldPath, same)})
		} else {
			keyOf[canonical] = key
		}
		if apply == everyRule && countsWhole(canonical, class) && !isWhole(value) {
			violations = append(violations, violation{err: field.Invalid(fldPath.Key(string(key)), value.String(), notIntegerMsg)})
		}
		if why := unscopable[class]; scoped && why != "" {
			keyPath := fldPath.Key(string(key))
			violations = append(violations, violation{
				err:     field.Invalid(keyPath, string(key), why),
				refusal: fmt.Errorf("%s: %s", keyPath, why),
			})
		}
	}
	return keyOf, violations
}

// unscopable says, per class of resource a PriorityClass scope cannot count, why: a scoped quota counts only
// replica sets of the classes it selects (usage.Charge), so such a limit would be accepted and never enforced.
// Kubernetes refuses the same names under its PriorityClass scope.
var unscopable = map[resources.Class]string{
	resources.ObjectCount: "a PriorityClass scope cannot count objects: it selects replicas by their priority class; " +
		"limit object counts in a quota without scopeSelector",
	resources.Held: "a PriorityClass scope cannot count claims, storage, load balancers or node ports: they have no priority " +
		"class; limit them in a quota without scopeSelector",
}

// countsWhole reports whether a resource only comes in whole units: replicas, objects, and extended resources,
// which Kubernetes never lets a container request a fraction of.
func countsWhole(canonical corev1.ResourceName, class resources.Class) bool {
	if class != resources.Compute {
		// Storage is bytes: a fraction of a byte is no more meaningful than of a pod, and Value rounds it up.
		return true
	}
	bare := strings.TrimPrefix(string(canonical), "requests.")
	return strings.Contains(bare, "/") && !strings.HasPrefix(bare, corev1.ResourceHugePagesPrefix)
}

// isWhole rounds a copy of q rather than comparing MilliValue, which wraps for quantities beyond int64 milli-units.
// The copy is deep: a Quantity copied by value shares its big decimal, and rounding it would change the quota.
func isWhole(q resource.Quantity) bool {
	c := q.DeepCopy()
	return c.RoundUp(0)
}

// checkScopeSelector applies the rules about a scope selector at fldPath. A selector without expressions is
// allowed, as Kubernetes allows it: it selects every binding. Field paths are built only for a violation.
func checkScopeSelector(sel *quotav1alpha1.ScopeSelector, fldPath *field.Path, apply rules) []violation {
	if sel == nil {
		return nil
	}
	var violations []violation
	for i, expr := range sel.MatchExpressions {
		if apply == refusalsOnly && len(violations) > 0 {
			return violations
		}
		exprPath := func() *field.Path { return fldPath.Child("matchExpressions").Index(i) }
		if expr.ScopeName != corev1.ResourceQuotaScopePriorityClass {
			unsupported := field.NotSupported(exprPath().Child("scopeName"), expr.ScopeName,
				[]corev1.ResourceQuotaScope{corev1.ResourceQuotaScopePriorityClass})
			unsupported.Detail += "; a ResourceBinding carries its workload's priority class and no other scope"
			violations = append(violations, refused(unsupported))
		}

		switch expr.Operator {
		case corev1.ScopeSelectorOpIn, corev1.ScopeSelectorOpNotIn:
			if len(expr.Values) == 0 {
				violations = append(violations, refused(field.Required(exprPath().Child("values"),
					fmt.Sprintf("must name at least one priority class when operator is %s", expr.Operator))))
			}
		case corev1.ScopeSelectorOpExists, corev1.ScopeSelectorOpDoesNotExist:
			if len(expr.Values) > 0 {
				violations = append(violations, refused(field.Forbidden(exprPath().Child("values"),
					fmt.Sprintf("must be empty when operator is %s: it tests only whether a priority class is set", expr.Operator))))
				// The values are already refused as a whole; checking each would only repeat that.
				continue
			}
		default:
			violations = append(violations, refused(field.NotSupported(exprPath().Child("operator"), expr.Operator, supportedOperators)))
		}
		if apply == refusalsOnly {
			continue
		}
		for j, v := range expr.Values {
			for _, msg := range validation.IsDNS1123Subdomain(v) {
				violations = append(violations, violation{
					err: field.Invalid(exprPath().Child("values").Index(j), v, "not a PriorityClass name: "+msg),
				})
			}
		}
	}
	return violations
}
