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
	"sort"
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
	_, hardViolations := checkHard(spec.Hard, hasScope(spec), fldPath.Child("hard"))
	allErrs := fieldErrors(hardViolations)
	return append(allErrs, fieldErrors(checkScopeSelector(spec.ScopeSelector, fldPath.Child("scopeSelector")))...)
}

// EnforceableHard maps the canonical name of each spec.hard key (requests.cpu) to the key as its author wrote it
// (cpu). It fails with the first broken rule that leaves the ledger without a limit to enforce for a key: a name
// that cannot be charged, two keys for one resource (only one of their limits could hold), an object count under a
// scope (a scoped quota never counts objects). A limit the ledger can still read is left to the webhook: nothing
// fits a negative one, and a fraction of a whole-unit resource rounds up.
func EnforceableHard(spec *quotav1alpha1.KarmadaQuotaSpec) (map[corev1.ResourceName]corev1.ResourceName, error) {
	keys, violations := checkHard(spec.Hard, hasScope(spec), field.NewPath("spec", "hard"))
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
	// Most quotas have no scope, and every admission parses them: they cost no field path.
	if sel == nil || len(sel.MatchExpressions) == 0 {
		return nil
	}
	return firstRefusal(checkScopeSelector(sel, field.NewPath("spec", "scopeSelector")))
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

// hasScope reports whether spec restricts its quota to some priority classes; a selector without expressions, as
// in Kubernetes, selects every binding.
func hasScope(spec *quotav1alpha1.KarmadaQuotaSpec) bool {
	return spec.ScopeSelector != nil && len(spec.ScopeSelector.MatchExpressions) > 0
}

// checkHard applies every rule about spec.hard at fldPath. It returns each key it can charge under its canonical
// name, as EnforceableHard does.
func checkHard(hard corev1.ResourceList, scoped bool, fldPath *field.Path) (map[corev1.ResourceName]corev1.ResourceName, []violation) {
	keys := make([]corev1.ResourceName, 0, len(hard))
	for k := range hard {
		keys = append(keys, k)
	}
	// Sorted, so that of two keys naming one resource it is always the same one that is reported.
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })

	keyOf := make(map[corev1.ResourceName]corev1.ResourceName, len(keys))
	var violations []violation
	for _, key := range keys {
		keyPath := fldPath.Key(string(key))
		value := hard[key]
		canonical, class, err := resources.Canonical(key)
		if err != nil {
			// The refusal leaves out the field error's `Invalid value: "<key>"`: the path names the key already.
			violations = append(violations, violation{
				err:     field.Invalid(keyPath, string(key), err.Error()),
				refusal: fmt.Errorf("%s: %w", keyPath, err),
			})
		}
		if value.Sign() < 0 {
			violations = append(violations, violation{err: field.Invalid(keyPath, value.String(), apimachineryvalidation.IsNegativeErrorMsg)})
		}
		if err != nil {
			continue
		}
		if other, ok := keyOf[canonical]; ok {
			// Both keys would be charged for the same usage, and the ledger could enforce only one of the two limits,
			// which need not be the intended one.
			same := fmt.Sprintf("%q and %q are the same resource (%s)", other, key, canonical)
			dup := field.Duplicate(keyPath, string(key))
			dup.Detail = same + "; keep one"
			violations = append(violations, violation{err: dup, refusal: fmt.Errorf("%s: %s", fldPath, same)})
		} else {
			keyOf[canonical] = key
		}
		if countsWhole(canonical, class) && !isWhole(value) {
			violations = append(violations, violation{err: field.Invalid(keyPath, value.String(), notIntegerMsg)})
		}
		if scoped && class == resources.ObjectCount {
			// A scoped quota never counts objects (usage.Charge), so such a limit would be accepted and never enforced.
			const why = "a PriorityClass scope cannot count objects: it selects replicas by their priority class; " +
				"limit object counts in a quota without scopeSelector"
			violations = append(violations, violation{
				err:     field.Invalid(keyPath, string(key), why),
				refusal: fmt.Errorf("%s: %s", keyPath, why),
			})
		}
	}
	return keyOf, violations
}

// countsWhole reports whether a resource only comes in whole units: replicas, objects, and extended resources,
// which Kubernetes never lets a container request a fraction of.
func countsWhole(canonical corev1.ResourceName, class resources.Class) bool {
	if class != resources.Compute {
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

// checkScopeSelector applies every rule about a scope selector at fldPath. A selector without expressions is
// allowed, as Kubernetes allows it: it selects every binding.
func checkScopeSelector(sel *quotav1alpha1.ScopeSelector, fldPath *field.Path) []violation {
	if sel == nil {
		return nil
	}
	var violations []violation
	for i, expr := range sel.MatchExpressions {
		exprPath := fldPath.Child("matchExpressions").Index(i)
		if expr.ScopeName != corev1.ResourceQuotaScopePriorityClass {
			unsupported := field.NotSupported(exprPath.Child("scopeName"), expr.ScopeName,
				[]corev1.ResourceQuotaScope{corev1.ResourceQuotaScopePriorityClass})
			unsupported.Detail += "; a ResourceBinding carries its workload's priority class and no other scope"
			violations = append(violations, refused(unsupported))
		}

		valuesPath := exprPath.Child("values")
		switch expr.Operator {
		case corev1.ScopeSelectorOpIn, corev1.ScopeSelectorOpNotIn:
			if len(expr.Values) == 0 {
				violations = append(violations, refused(field.Required(valuesPath,
					fmt.Sprintf("must name at least one priority class when operator is %s", expr.Operator))))
			}
		case corev1.ScopeSelectorOpExists, corev1.ScopeSelectorOpDoesNotExist:
			if len(expr.Values) > 0 {
				violations = append(violations, refused(field.Forbidden(valuesPath,
					fmt.Sprintf("must be empty when operator is %s: it tests only whether a priority class is set", expr.Operator))))
				// The values are already refused as a whole; checking each would only repeat that.
				continue
			}
		default:
			violations = append(violations, refused(field.NotSupported(exprPath.Child("operator"), expr.Operator, supportedOperators)))
		}
		for j, v := range expr.Values {
			for _, msg := range validation.IsDNS1123Subdomain(v) {
				violations = append(violations, violation{
					err: field.Invalid(valuesPath.Index(j), v, "not a PriorityClass name: "+msg),
				})
			}
		}
	}
	return violations
}
