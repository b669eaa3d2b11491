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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
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
	_, hardViolations := checkHard(spec.Hard, Scoped(spec), federation, fldPath.Child("hard"), everyRule)
	allErrs := fieldErrors(hardViolations)
	allErrs = append(allErrs, fieldErrors(checkScopeSelector(spec.ScopeSelector, fldPath.Child("scopeSelector"), everyRule))...)
	_, _, limitViolations := checkClusterLimits(spec, fldPath, everyRule)
	return append(allErrs, fieldErrors(limitViolations)...)
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
	keys, violations := checkHard(spec.Hard, Scoped(spec), federation, specHardPath, refusalsOnly)
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

// reach says where a hard limit applies: to the whole federation (spec.hard), or to some member clusters (a
// cluster's or a group's), where only what is placed, run or held on a member can be counted.
type reach int

const (
	federation reach = iota
	members
)

// checkHard applies the rules about a hard list (spec.hard, a cluster's or a group's) at fldPath. It returns each
// key it can charge under its canonical name, as EnforceableHard does. A key's field path is built only for a
// violation: a quota that breaks no rule costs the ledger nothing but the map it keeps.
func checkHard(hard corev1.ResourceList, scoped bool, where reach, fldPath *field.Path, apply rules) (map[corev1.ResourceName]corev1.ResourceName, []violation) {
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
		if where == members && class == resources.ObjectCount {
			keyPath := fldPath.Key(string(key))
			const why = "object counts are federation-wide (a bound object is counted once, wherever it is placed): limit them in spec.hard"
			violations = append(violations, violation{
				err:     field.Invalid(keyPath, string(key), why),
				refusal: fmt.Errorf("%s: %s", keyPath, why),
			})
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

// ClusterLimits are a quota's limits on member clusters, each as EnforceableHard maps its keys.
type ClusterLimits struct {
	// Clusters maps each limited cluster's name to its keys.
	Clusters map[string]map[corev1.ResourceName]corev1.ResourceName
	// Groups holds each group's keys, in the order of spec.clusterGroups.
	Groups []map[corev1.ResourceName]corev1.ResourceName
}

// EnforceableClusterLimits reads spec.clusters and spec.clusterGroups as the ledger enforces them, failing with the
// first broken rule that leaves a limit it cannot enforce as written: a name that cannot be charged there (an
// object count), two keys for one resource, two limits for one cluster or group name, a group selector that does
// not parse or selects every cluster.
func EnforceableClusterLimits(spec *quotav1alpha1.KarmadaQuotaSpec) (ClusterLimits, error) {
	clusters, groups, violations := checkClusterLimits(spec, field.NewPath("spec"), refusalsOnly)
	if err := firstRefusal(violations); err != nil {
		return ClusterLimits{}, err
	}
	return ClusterLimits{Clusters: clusters, Groups: groups}, nil
}

// checkClusterLimits applies the rules about spec.clusters and spec.clusterGroups, under fldPath (spec).
func checkClusterLimits(spec *quotav1alpha1.KarmadaQuotaSpec, fldPath *field.Path, apply rules) (map[string]map[corev1.ResourceName]corev1.ResourceName, []map[corev1.ResourceName]corev1.ResourceName, []violation) {
	if len(spec.Clusters) == 0 && len(spec.ClusterGroups) == 0 {
		return nil, nil, nil
	}
	scoped := Scoped(spec)
	var violations []violation
	clusters := make(map[string]map[corev1.ResourceName]corev1.ResourceName, len(spec.Clusters))
	for i, c := range spec.Clusters {
		if apply == refusalsOnly && len(violations) > 0 {
			return nil, nil, violations
		}
		path := fldPath.Child("clusters").Index(i)
		if errs := validation.IsDNS1123Subdomain(c.Name); len(errs) > 0 {
			violations = append(violations, refused(field.Invalid(path.Child("name"), c.Name, strings.Join(errs, "; "))))
			continue
		}
		if _, dup := clusters[c.Name]; dup {
			d := field.Duplicate(path.Child("name"), c.Name)
			d.Detail = "one limit per cluster: its resources go in one hard list"
			violations = append(violations, refused(d))
			continue
		}
		keys, vs := checkLimitHard(c.Hard, scoped, path.Child("hard"), apply)
		violations = append(violations, vs...)
		clusters[c.Name] = keys
	}
	groups := make([]map[corev1.ResourceName]corev1.ResourceName, 0, len(spec.ClusterGroups))
	names := map[string]bool{}
	for i, g := range spec.ClusterGroups {
		if apply == refusalsOnly && len(violations) > 0 {
			return nil, nil, violations
		}
		path := fldPath.Child("clusterGroups").Index(i)
		if errs := validation.IsDNS1123Label(g.Name); len(errs) > 0 {
			violations = append(violations, refused(field.Invalid(path.Child("name"), g.Name, strings.Join(errs, "; "))))
		} else if names[g.Name] {
			violations = append(violations, refused(field.Duplicate(path.Child("name"), g.Name)))
		}
		names[g.Name] = true
		selPath := path.Child("clusterSelector")
		if len(g.ClusterSelector.MatchLabels) == 0 && len(g.ClusterSelector.MatchExpressions) == 0 {
			violations = append(violations, refused(field.Required(selPath,
				"an empty selector would choose every member cluster: limit the whole federation in spec.hard")))
		}
		for _, err := range metav1validation.ValidateLabelSelector(&g.ClusterSelector, metav1validation.LabelSelectorValidationOptions{}, selPath) {
			violations = append(violations, refused(err))
		}
		keys, vs := checkLimitHard(g.Hard, scoped, path.Child("hard"), apply)
		violations = append(violations, vs...)
		groups = append(groups, keys)
	}
	return clusters, groups, violations
}

// checkLimitHard applies the rules about a cluster's or a group's hard list: spec.hard's, on what a member holds,
// and a limit must limit something.
func checkLimitHard(hard corev1.ResourceList, scoped bool, fldPath *field.Path, apply rules) (map[corev1.ResourceName]corev1.ResourceName, []violation) {
	if len(hard) == 0 {
		return nil, []violation{refused(field.Required(fldPath, "a limit of nothing: name the resources it limits"))}
	}
	return checkHard(hard, scoped, members, fldPath, apply)
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

// ValidateKarmadaBusinessQuota validates a new or updated business quota: its namespace selector, and the rest of
// its spec as a KarmadaQuota's.
func ValidateKarmadaBusinessQuota(q *quotav1alpha1.KarmadaBusinessQuota) field.ErrorList {
	if q == nil {
		return nil
	}
	spec := field.NewPath("spec")
	var allErrs field.ErrorList
	if _, err := NamespaceSelector(&q.Spec); err != nil {
		allErrs = append(allErrs, err)
	}
	return append(allErrs, ValidateKarmadaQuotaSpec(&q.Spec.KarmadaQuotaSpec, spec)...)
}

// NamespaceSelector compiles the business quota's namespace selector, refusing an empty one: it would select every
// namespace, those created later by anyone included (Capsule's empty selector silently selects nothing, which is
// no better). Admission and the recount compile it from here, so a quota stored before validation could refuse it
// fails closed with the same message.
func NamespaceSelector(spec *quotav1alpha1.KarmadaBusinessQuotaSpec) (labels.Selector, *field.Error) {
	path := field.NewPath("spec", "namespaceSelector")
	sel := &spec.NamespaceSelector
	if len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0 {
		return nil, field.Required(path, "an empty selector would select every namespace, those created later included: "+
			"select the business's namespaces by a label")
	}
	if errs := metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, path); len(errs) > 0 {
		return nil, errs[0]
	}
	compiled, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return nil, field.Invalid(path, sel, err.Error())
	}
	return compiled, nil
}
