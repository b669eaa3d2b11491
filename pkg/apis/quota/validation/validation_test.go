package validation

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
)

func hard(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func expr(scope corev1.ResourceQuotaScope, op corev1.ScopeSelectorOperator, values ...string) quotav1alpha1.ScopedResourceSelectorRequirement {
	return quotav1alpha1.ScopedResourceSelectorRequirement{ScopeName: scope, Operator: op, Values: values}
}

func scope(exprs ...quotav1alpha1.ScopedResourceSelectorRequirement) *quotav1alpha1.ScopeSelector {
	return &quotav1alpha1.ScopeSelector{MatchExpressions: exprs}
}

var (
	hardPath = field.NewPath("spec", "hard")
	exprPath = field.NewPath("spec", "scopeSelector", "matchExpressions")
	pc       = corev1.ResourceQuotaScopePriorityClass
)

func TestValidateKarmadaQuota(t *testing.T) {
	tests := []struct {
		name     string
		spec     quotav1alpha1.KarmadaQuotaSpec
		wantErrs field.ErrorList
		// wantDetail, when set, must appear in some error's message: it is what the person fixing the quota reads.
		wantDetail string
	}{
		{name: "empty spec"},
		{
			name: "every class of resource, unscoped",
			spec: quotav1alpha1.KarmadaQuotaSpec{Hard: hard(
				"cpu", "10", "requests.memory", "20Gi", "nvidia.com/gpu", "4", "hugepages-2Mi", "1Gi",
				"pods", "10", "count/deployments.apps", "5", "services", "3")},
		},
		{
			name: "fractional cpu and memory",
			spec: quotav1alpha1.KarmadaQuotaSpec{Hard: hard("cpu", "500m", "memory", "1.5", "ephemeral-storage", "100m")},
		},
		{
			name: "whole number beyond int64 milli-units",
			spec: quotav1alpha1.KarmadaQuotaSpec{Hard: hard("pods", "1e30")},
		},
		{
			name: "scoped compute and pods, every operator",
			spec: quotav1alpha1.KarmadaQuotaSpec{
				Hard: hard("cpu", "4", "pods", "20"),
				ScopeSelector: scope(
					expr(pc, corev1.ScopeSelectorOpIn, "high", "system-cluster-critical"),
					expr(pc, corev1.ScopeSelectorOpNotIn, "low"),
					expr(pc, corev1.ScopeSelectorOpExists),
				),
			},
		},
		{
			name: "scopeSelector without expressions selects everything, object counts included",
			spec: quotav1alpha1.KarmadaQuotaSpec{
				Hard:          hard("services", "3"),
				ScopeSelector: &quotav1alpha1.ScopeSelector{},
			},
		},
		{
			name: "DoesNotExist without values",
			spec: quotav1alpha1.KarmadaQuotaSpec{
				Hard:          hard("pods", "3"),
				ScopeSelector: scope(expr(pc, corev1.ScopeSelectorOpDoesNotExist)),
			},
		},
		{
			name: "unknown and malformed names",
			spec: quotav1alpha1.KarmadaQuotaSpec{Hard: hard(
				"foo", "1", "kubernetes.io/foo", "1", "count/Deployments", "1", "count/", "1", "", "1")},
			wantErrs: field.ErrorList{
				field.Invalid(hardPath.Key(""), nil, ""),
				field.Invalid(hardPath.Key("count/"), nil, ""),
				field.Invalid(hardPath.Key("count/Deployments"), nil, ""),
				field.Invalid(hardPath.Key("foo"), nil, ""),
				field.Invalid(hardPath.Key("kubernetes.io/foo"), nil, ""),
			},
			wantDetail: "unknown resource",
		},
		{
			name:       "limits",
			spec:       quotav1alpha1.KarmadaQuotaSpec{Hard: hard("limits.cpu", "1")},
			wantErrs:   field.ErrorList{field.Invalid(hardPath.Key("limits.cpu"), nil, "")},
			wantDetail: "a ResourceBinding carries resource requests only; use requests.cpu",
		},
		{
			name:       "service type",
			spec:       quotav1alpha1.KarmadaQuotaSpec{Hard: hard("services.loadbalancers", "1")},
			wantErrs:   field.ErrorList{field.Invalid(hardPath.Key("services.loadbalancers"), nil, "")},
			wantDetail: "does not carry the Service type",
		},
		{
			name:     "storage requests",
			spec:     quotav1alpha1.KarmadaQuotaSpec{Hard: hard("requests.storage", "1Gi")},
			wantErrs: field.ErrorList{field.Invalid(hardPath.Key("requests.storage"), nil, "")},
		},
		{
			name:       "bare and requests. compute names are one resource",
			spec:       quotav1alpha1.KarmadaQuotaSpec{Hard: hard("cpu", "1", "requests.cpu", "2")},
			wantErrs:   field.ErrorList{field.Duplicate(hardPath.Key("requests.cpu"), nil)},
			wantDetail: `"cpu" and "requests.cpu" are the same resource`,
		},
		{
			name:       "legacy and count/ object names are one resource",
			spec:       quotav1alpha1.KarmadaQuotaSpec{Hard: hard("services", "1", "count/services", "2")},
			wantErrs:   field.ErrorList{field.Duplicate(hardPath.Key("services"), nil)},
			wantDetail: `"count/services" and "services"`,
		},
		{
			name:     "extended resource under both spellings",
			spec:     quotav1alpha1.KarmadaQuotaSpec{Hard: hard("nvidia.com/gpu", "1", "requests.nvidia.com/gpu", "1")},
			wantErrs: field.ErrorList{field.Duplicate(hardPath.Key("requests.nvidia.com/gpu"), nil)},
		},
		{
			name:       "negative value",
			spec:       quotav1alpha1.KarmadaQuotaSpec{Hard: hard("cpu", "-1", "memory", "1Gi")},
			wantErrs:   field.ErrorList{field.Invalid(hardPath.Key("cpu"), nil, "")},
			wantDetail: "must be greater than or equal to 0",
		},
		{
			name: "negative value under an unknown name",
			spec: quotav1alpha1.KarmadaQuotaSpec{Hard: hard("foo", "-1")},
			wantErrs: field.ErrorList{
				field.Invalid(hardPath.Key("foo"), nil, ""),
				field.Invalid(hardPath.Key("foo"), nil, ""),
			},
		},
		{
			name:       "fractional pods",
			spec:       quotav1alpha1.KarmadaQuotaSpec{Hard: hard("pods", "1.5")},
			wantErrs:   field.ErrorList{field.Invalid(hardPath.Key("pods"), nil, "")},
			wantDetail: "must be an integer",
		},
		{
			name: "negative fractional pods",
			spec: quotav1alpha1.KarmadaQuotaSpec{Hard: hard("pods", "-500m")},
			wantErrs: field.ErrorList{
				field.Invalid(hardPath.Key("pods"), nil, ""),
				field.Invalid(hardPath.Key("pods"), nil, ""),
			},
		},
		{
			name: "fractional object counts",
			spec: quotav1alpha1.KarmadaQuotaSpec{Hard: hard("count/deployments.apps", "500m", "secrets", "1.001")},
			wantErrs: field.ErrorList{
				field.Invalid(hardPath.Key("count/deployments.apps"), nil, ""),
				field.Invalid(hardPath.Key("secrets"), nil, ""),
			},
		},
		{
			name: "fractional extended resource",
			spec: quotav1alpha1.KarmadaQuotaSpec{Hard: hard("nvidia.com/gpu", "0.5", "requests.example.com/fpga", "1500m")},
			wantErrs: field.ErrorList{
				field.Invalid(hardPath.Key("nvidia.com/gpu"), nil, ""),
				field.Invalid(hardPath.Key("requests.example.com/fpga"), nil, ""),
			},
		},
		{
			name: "scope other than PriorityClass",
			spec: quotav1alpha1.KarmadaQuotaSpec{
				Hard:          hard("pods", "1"),
				ScopeSelector: scope(expr(corev1.ResourceQuotaScopeBestEffort, corev1.ScopeSelectorOpExists)),
			},
			wantErrs:   field.ErrorList{field.NotSupported[string](exprPath.Index(0).Child("scopeName"), nil, nil)},
			wantDetail: "a ResourceBinding carries its workload's priority class and no other scope",
		},
		{
			name: "unknown operator",
			spec: quotav1alpha1.KarmadaQuotaSpec{
				ScopeSelector: scope(expr(pc, "Equals", "high")),
			},
			wantErrs: field.ErrorList{field.NotSupported[string](exprPath.Index(0).Child("operator"), nil, nil)},
		},
		{
			name: "In and NotIn without values",
			spec: quotav1alpha1.KarmadaQuotaSpec{
				ScopeSelector: scope(expr(pc, corev1.ScopeSelectorOpIn), expr(pc, corev1.ScopeSelectorOpNotIn)),
			},
			wantErrs: field.ErrorList{
				field.Required(exprPath.Index(0).Child("values"), ""),
				field.Required(exprPath.Index(1).Child("values"), ""),
			},
		},
		{
			name: "Exists and DoesNotExist with values",
			spec: quotav1alpha1.KarmadaQuotaSpec{
				ScopeSelector: scope(
					expr(pc, corev1.ScopeSelectorOpExists, "high"),
					expr(pc, corev1.ScopeSelectorOpDoesNotExist, "Not_A_Name"),
				),
			},
			wantErrs: field.ErrorList{
				field.Forbidden(exprPath.Index(0).Child("values"), ""),
				field.Forbidden(exprPath.Index(1).Child("values"), ""),
			},
		},
		{
			name: "values that are not PriorityClass names",
			spec: quotav1alpha1.KarmadaQuotaSpec{
				ScopeSelector: scope(
					expr(pc, corev1.ScopeSelectorOpIn, "high"),
					expr(pc, corev1.ScopeSelectorOpNotIn, "ok", "High_Priority", ""),
				),
			},
			wantErrs: field.ErrorList{
				field.Invalid(exprPath.Index(1).Child("values").Index(1), nil, ""),
				field.Invalid(exprPath.Index(1).Child("values").Index(2), nil, ""),
			},
			wantDetail: "not a PriorityClass name",
		},
		{
			name: "object counts under a scope",
			spec: quotav1alpha1.KarmadaQuotaSpec{
				Hard:          hard("cpu", "1", "pods", "2", "services", "1", "count/deployments.apps", "1"),
				ScopeSelector: scope(expr(pc, corev1.ScopeSelectorOpIn, "high")),
			},
			wantErrs: field.ErrorList{
				field.Invalid(hardPath.Key("count/deployments.apps"), nil, ""),
				field.Invalid(hardPath.Key("services"), nil, ""),
			},
			wantDetail: "a PriorityClass scope selects replicas by their priority class and cannot count objects",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gotErrs := ValidateKarmadaQuota(&quotav1alpha1.KarmadaQuota{Spec: tc.spec})
			if diff := cmp.Diff(tc.wantErrs, gotErrs, cmpopts.IgnoreFields(field.Error{}, "BadValue", "Detail")); diff != "" {
				t.Errorf("errors (-want +got):\n%s\ngot: %v", diff, gotErrs)
			}
			if tc.wantDetail != "" && (len(gotErrs) == 0 || !strings.Contains(gotErrs.ToAggregate().Error(), tc.wantDetail)) {
				t.Errorf("no error says %q; got: %v", tc.wantDetail, gotErrs)
			}
		})
	}
}

func TestValidateKarmadaQuotaNeverPanics(t *testing.T) {
	if errs := ValidateKarmadaQuota(nil); len(errs) != 0 {
		t.Errorf("nil quota: %v", errs)
	}
	if errs := ValidateKarmadaQuotaSpec(nil, field.NewPath("spec")); len(errs) != 0 {
		t.Errorf("nil spec: %v", errs)
	}
	spec := &quotav1alpha1.KarmadaQuotaSpec{
		Hard:          corev1.ResourceList{"": resource.Quantity{}},
		ScopeSelector: scope(quotav1alpha1.ScopedResourceSelectorRequirement{}),
	}
	if errs := ValidateKarmadaQuotaSpec(spec, nil); len(errs) == 0 {
		t.Error("zero-valued key and expression accepted")
	}
}

func TestValidateKarmadaQuotaSpecRootsPathsAtFldPath(t *testing.T) {
	errs := ValidateKarmadaQuotaSpec(&quotav1alpha1.KarmadaQuotaSpec{Hard: hard("foo", "1")}, field.NewPath("template", "spec"))
	if len(errs) != 1 || errs[0].Field != "template.spec.hard[foo]" {
		t.Errorf("want one error at template.spec.hard[foo], got %v", errs)
	}
}
