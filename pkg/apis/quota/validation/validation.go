// Package validation checks a KarmadaQuota the way Kubernetes checks a ResourceQuota, and also refuses whatever a
// ResourceBinding cannot be charged for: a quota that is accepted is a quota that can be enforced.
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
	scoped := spec.ScopeSelector != nil && len(spec.ScopeSelector.MatchExpressions) > 0
	allErrs := validateHard(spec.Hard, scoped, fldPath.Child("hard"))
	return append(allErrs, validateScopeSelector(spec.ScopeSelector, fldPath.Child("scopeSelector"))...)
}

func validateHard(hard corev1.ResourceList, scoped bool, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	keys := make([]corev1.ResourceName, 0, len(hard))
	for k := range hard {
		keys = append(keys, k)
	}
	// Sorted, so that of two keys naming one resource it is always the same one that is reported.
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })

	firstKey := make(map[corev1.ResourceName]corev1.ResourceName, len(keys))
	for _, key := range keys {
		keyPath := fldPath.Key(string(key))
		value := hard[key]
		canonical, class, err := resources.Canonical(key)
		if err != nil {
			allErrs = append(allErrs, field.Invalid(keyPath, string(key), err.Error()))
		}
		if value.Sign() < 0 {
			allErrs = append(allErrs, field.Invalid(keyPath, value.String(), apimachineryvalidation.IsNegativeErrorMsg))
		}
		if err != nil {
			continue
		}
		if other, ok := firstKey[canonical]; ok {
			dup := field.Duplicate(keyPath, string(key))
			// Both keys would be charged for the same usage, and only one of the two limits could be the intended one.
			dup.Detail = fmt.Sprintf("%q and %q are the same resource (%s); keep one", other, key, canonical)
			allErrs = append(allErrs, dup)
		} else {
			firstKey[canonical] = key
		}
		if countsWhole(canonical, class) && !isWhole(value) {
			allErrs = append(allErrs, field.Invalid(keyPath, value.String(), notIntegerMsg))
		}
		if scoped && class == resources.ObjectCount {
			allErrs = append(allErrs, field.Invalid(keyPath, string(key),
				"a PriorityClass scope selects replicas by their priority class and cannot count objects; "+
					"limit object counts in a quota without scopeSelector"))
		}
	}
	return allErrs
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

// validateScopeSelector allows a selector without expressions, as Kubernetes does: it selects every binding.
func validateScopeSelector(sel *quotav1alpha1.ScopeSelector, fldPath *field.Path) field.ErrorList {
	if sel == nil {
		return nil
	}
	var allErrs field.ErrorList
	for i, expr := range sel.MatchExpressions {
		exprPath := fldPath.Child("matchExpressions").Index(i)
		if expr.ScopeName != corev1.ResourceQuotaScopePriorityClass {
			unsupported := field.NotSupported(exprPath.Child("scopeName"), expr.ScopeName,
				[]corev1.ResourceQuotaScope{corev1.ResourceQuotaScopePriorityClass})
			unsupported.Detail += "; a ResourceBinding carries its workload's priority class and no other scope"
			allErrs = append(allErrs, unsupported)
		}

		valuesPath := exprPath.Child("values")
		switch expr.Operator {
		case corev1.ScopeSelectorOpIn, corev1.ScopeSelectorOpNotIn:
			if len(expr.Values) == 0 {
				allErrs = append(allErrs, field.Required(valuesPath,
					fmt.Sprintf("must name at least one priority class when operator is %s", expr.Operator)))
			}
		case corev1.ScopeSelectorOpExists, corev1.ScopeSelectorOpDoesNotExist:
			if len(expr.Values) > 0 {
				allErrs = append(allErrs, field.Forbidden(valuesPath,
					fmt.Sprintf("must be empty when operator is %s: it tests only whether a priority class is set", expr.Operator)))
				// The values are already refused as a whole; checking each would only repeat that.
				continue
			}
		default:
			allErrs = append(allErrs, field.NotSupported(exprPath.Child("operator"), expr.Operator, supportedOperators))
		}
		for j, v := range expr.Values {
			for _, msg := range validation.IsDNS1123Subdomain(v) {
				allErrs = append(allErrs, field.Invalid(valuesPath.Index(j), v, "not a PriorityClass name: "+msg))
			}
		}
	}
	return allErrs
}
