package validation

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
			name: "storage, claims, load balancers and node ports are limited per member",
			spec: quotav1alpha1.KarmadaQuotaSpec{Hard: hard("requests.storage", "10Gi", "persistentvolumeclaims", "4",
				"gold.storageclass.storage.k8s.io/requests.storage", "1Ti", "services.loadbalancers", "1", "services.nodeports", "2")},
		},
		{
			name: "storage under a PriorityClass scope",
			spec: quotav1alpha1.KarmadaQuotaSpec{Hard: hard("requests.storage", "1Gi"), ScopeSelector: &quotav1alpha1.ScopeSelector{
				MatchExpressions: []quotav1alpha1.ScopedResourceSelectorRequirement{{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpExists}},
			}},
			wantErrs:   field.ErrorList{field.Invalid(hardPath.Key("requests.storage"), nil, "")},
			wantDetail: "a PriorityClass scope cannot count claims, storage, load balancers or node ports",
		},
		{
			name:     "fractional storage bytes",
			spec:     quotav1alpha1.KarmadaQuotaSpec{Hard: hard("requests.storage", "0.5")},
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
			wantDetail: "a PriorityClass scope cannot count objects: it selects replicas by their priority class",
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

// TestEnforceable pins which rules the ledger and the scope selector apply too, and what they say: each refusal is
// a status condition and a binding's 403 for a quota that slipped past the webhook. Whatever they refuse, the
// webhook refuses as well.
func TestEnforceable(t *testing.T) {
	tests := []struct {
		name string
		spec quotav1alpha1.KarmadaQuotaSpec
		// wantKeys is EnforceableHard's map when it succeeds.
		wantKeys        map[corev1.ResourceName]corev1.ResourceName
		wantHardErr     string
		wantSelectorErr string
		// wantWebhookOnly is set for a spec only the webhook refuses: the ledger and the selector can read it.
		wantWebhookOnly bool
	}{
		{
			name: "every class of resource, keyed by canonical name, in the author's spelling",
			spec: quotav1alpha1.KarmadaQuotaSpec{Hard: hard(
				"cpu", "10", "requests.memory", "20Gi", "pods", "10", "services", "3", "count/deployments.apps", "5")},
			wantKeys: map[corev1.ResourceName]corev1.ResourceName{
				"requests.cpu": "cpu", "requests.memory": "requests.memory", "pods": "pods",
				"count/services": "services", "count/deployments.apps": "count/deployments.apps",
			},
		},
		{
			name:     "a selector without expressions leaves object counts countable",
			spec:     quotav1alpha1.KarmadaQuotaSpec{Hard: hard("services", "3"), ScopeSelector: &quotav1alpha1.ScopeSelector{}},
			wantKeys: map[corev1.ResourceName]corev1.ResourceName{"count/services": "services"},
		},
		{
			name: "a limit that cannot be charged",
			spec: quotav1alpha1.KarmadaQuotaSpec{Hard: hard("limits.cpu", "4")},
			wantHardErr: "spec.hard[limits.cpu]: limits cannot be enforced: a ResourceBinding carries resource requests only; " +
				"use requests.cpu or the bare name",
		},
		{
			name:        "two keys for one resource, named together in key order",
			spec:        quotav1alpha1.KarmadaQuotaSpec{Hard: hard("requests.cpu", "8", "cpu", "4")},
			wantHardErr: `spec.hard: "cpu" and "requests.cpu" are the same resource (requests.cpu)`,
		},
		{
			name: "an object count under a scope",
			spec: quotav1alpha1.KarmadaQuotaSpec{
				Hard:          hard("cpu", "4", "count/deployments.apps", "8"),
				ScopeSelector: scope(expr(pc, corev1.ScopeSelectorOpIn, "high")),
			},
			wantHardErr: "spec.hard[count/deployments.apps]: a PriorityClass scope cannot count objects: " +
				"it selects replicas by their priority class; limit object counts in a quota without scopeSelector",
		},
		{
			name: "the first broken rule in key order",
			spec: quotav1alpha1.KarmadaQuotaSpec{Hard: hard("requests.cpu", "2", "limits.cpu", "1", "cpu", "1")},
			wantHardErr: "spec.hard[limits.cpu]: limits cannot be enforced: a ResourceBinding carries resource requests only; " +
				"use requests.cpu or the bare name",
		},
		{
			name: "a scope a binding does not carry",
			spec: quotav1alpha1.KarmadaQuotaSpec{ScopeSelector: scope(
				expr(pc, corev1.ScopeSelectorOpExists), expr(corev1.ResourceQuotaScopeBestEffort, corev1.ScopeSelectorOpExists))},
			wantSelectorErr: `spec.scopeSelector.matchExpressions[1].scopeName: Unsupported value: "BestEffort": ` +
				`supported values: "PriorityClass"; a ResourceBinding carries its workload's priority class and no other scope`,
		},
		{
			name: "an unknown operator",
			spec: quotav1alpha1.KarmadaQuotaSpec{ScopeSelector: scope(expr(pc, "Gt", "1"))},
			wantSelectorErr: `spec.scopeSelector.matchExpressions[0].operator: Unsupported value: "Gt": ` +
				`supported values: "In", "NotIn", "Exists", "DoesNotExist"`,
		},
		{
			name: "In without values",
			spec: quotav1alpha1.KarmadaQuotaSpec{ScopeSelector: scope(expr(pc, corev1.ScopeSelectorOpIn))},
			wantSelectorErr: "spec.scopeSelector.matchExpressions[0].values: Required value: " +
				"must name at least one priority class when operator is In",
		},
		{
			name: "DoesNotExist with values",
			spec: quotav1alpha1.KarmadaQuotaSpec{ScopeSelector: scope(expr(pc, corev1.ScopeSelectorOpDoesNotExist, "high"))},
			wantSelectorErr: "spec.scopeSelector.matchExpressions[0].values: Forbidden: " +
				"must be empty when operator is DoesNotExist: it tests only whether a priority class is set",
		},
		{
			name:            "a negative limit: nothing fits it",
			spec:            quotav1alpha1.KarmadaQuotaSpec{Hard: hard("cpu", "-1")},
			wantKeys:        map[corev1.ResourceName]corev1.ResourceName{"requests.cpu": "cpu"},
			wantWebhookOnly: true,
		},
		{
			name:            "a fraction of a whole-unit resource: it rounds up",
			spec:            quotav1alpha1.KarmadaQuotaSpec{Hard: hard("pods", "1.5")},
			wantKeys:        map[corev1.ResourceName]corev1.ResourceName{"pods": "pods"},
			wantWebhookOnly: true,
		},
		{
			name:            "a value that is no PriorityClass name: it selects nothing",
			spec:            quotav1alpha1.KarmadaQuotaSpec{ScopeSelector: scope(expr(pc, corev1.ScopeSelectorOpIn, "High_Priority"))},
			wantWebhookOnly: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gotKeys, hardErr := EnforceableHard(&tc.spec)
			if tc.wantHardErr != "" {
				if hardErr == nil || hardErr.Error() != tc.wantHardErr {
					t.Errorf("EnforceableHard() error = %v, want %q", hardErr, tc.wantHardErr)
				}
			} else if hardErr != nil {
				t.Errorf("EnforceableHard() unexpected error: %v", hardErr)
			} else if diff := cmp.Diff(tc.wantKeys, gotKeys, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("EnforceableHard() keys (-want +got):\n%s", diff)
			}

			selectorErr := EnforceableScopeSelector(tc.spec.ScopeSelector)
			if tc.wantSelectorErr != "" {
				if selectorErr == nil || selectorErr.Error() != tc.wantSelectorErr {
					t.Errorf("EnforceableScopeSelector() error = %v, want %q", selectorErr, tc.wantSelectorErr)
				}
			} else if selectorErr != nil {
				t.Errorf("EnforceableScopeSelector() unexpected error: %v", selectorErr)
			}

			wantWebhookRefuses := hardErr != nil || selectorErr != nil || tc.wantWebhookOnly
			if webhookErrs := ValidateKarmadaQuotaSpec(&tc.spec, field.NewPath("spec")); (len(webhookErrs) > 0) != wantWebhookRefuses {
				t.Errorf("webhook errors = %v, want refused: %v", webhookErrs, wantWebhookRefuses)
			}
		})
	}
}

func TestValidateClusterLimits(t *testing.T) {
	clusters := field.NewPath("spec", "clusters")
	groups := field.NewPath("spec", "clusterGroups")
	region := func(r string) metav1.LabelSelector {
		return metav1.LabelSelector{MatchLabels: map[string]string{"region": r}}
	}
	tests := []struct {
		name       string
		spec       quotav1alpha1.KarmadaQuotaSpec
		wantErrs   field.ErrorList
		wantDetail string
	}{
		{
			name: "a cluster and a group, in what members place, run and hold",
			spec: quotav1alpha1.KarmadaQuotaSpec{
				Hard:          hard("cpu", "100"),
				Clusters:      []quotav1alpha1.ClusterLimit{{Name: "member1", Hard: hard("cpu", "20", "pods", "10", "requests.storage", "1Ti")}},
				ClusterGroups: []quotav1alpha1.ClusterGroupLimit{{Name: "eu", ClusterSelector: region("eu"), Hard: hard("cpu", "50")}},
			},
		},
		{
			name: "a cluster not joined yet is a cluster like any other",
			spec: quotav1alpha1.KarmadaQuotaSpec{Clusters: []quotav1alpha1.ClusterLimit{{Name: "joins-next-week", Hard: hard("cpu", "1")}}},
		},
		{
			name: "object counts are federation-wide",
			spec: quotav1alpha1.KarmadaQuotaSpec{
				Clusters:      []quotav1alpha1.ClusterLimit{{Name: "member1", Hard: hard("count/deployments.apps", "1")}},
				ClusterGroups: []quotav1alpha1.ClusterGroupLimit{{Name: "eu", ClusterSelector: region("eu"), Hard: hard("services", "1")}},
			},
			wantErrs: field.ErrorList{
				field.Invalid(clusters.Index(0).Child("hard").Key("count/deployments.apps"), nil, ""),
				field.Invalid(groups.Index(0).Child("hard").Key("services"), nil, ""),
			},
			wantDetail: "object counts are federation-wide",
		},
		{
			name: "one limit per cluster and per group name",
			spec: quotav1alpha1.KarmadaQuotaSpec{
				Clusters: []quotav1alpha1.ClusterLimit{{Name: "member1", Hard: hard("cpu", "1")}, {Name: "member1", Hard: hard("memory", "1Gi")}},
				ClusterGroups: []quotav1alpha1.ClusterGroupLimit{
					{Name: "eu", ClusterSelector: region("eu"), Hard: hard("cpu", "1")},
					{Name: "eu", ClusterSelector: region("eu-west"), Hard: hard("cpu", "1")},
				},
			},
			wantErrs: field.ErrorList{
				field.Duplicate(clusters.Index(1).Child("name"), nil),
				field.Duplicate(groups.Index(1).Child("name"), nil),
			},
		},
		{
			name: "an empty selector, a broken one, a limit of nothing, a bad name",
			spec: quotav1alpha1.KarmadaQuotaSpec{
				Clusters: []quotav1alpha1.ClusterLimit{{Name: "Member_1", Hard: hard("cpu", "1")}, {Name: "member2"}},
				ClusterGroups: []quotav1alpha1.ClusterGroupLimit{
					{Name: "all", Hard: hard("cpu", "1")},
					{Name: "odd", ClusterSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "region", Operator: "Near"}}}, Hard: hard("cpu", "1")},
				},
			},
			wantErrs: field.ErrorList{
				field.Invalid(clusters.Index(0).Child("name"), nil, ""),
				field.Required(clusters.Index(1).Child("hard"), ""),
				field.Required(groups.Index(0).Child("clusterSelector"), ""),
				field.Invalid(groups.Index(1).Child("clusterSelector", "matchExpressions").Index(0).Child("operator"), nil, ""),
			},
			wantDetail: "an empty selector would choose every member cluster",
		},
		{
			name: "a scope applies to them as to spec.hard",
			spec: quotav1alpha1.KarmadaQuotaSpec{
				ScopeSelector: scope(expr(pc, corev1.ScopeSelectorOpIn, "high")),
				Clusters:      []quotav1alpha1.ClusterLimit{{Name: "member1", Hard: hard("cpu", "1", "requests.storage", "1Gi")}},
			},
			wantErrs:   field.ErrorList{field.Invalid(clusters.Index(0).Child("hard").Key("requests.storage"), nil, "")},
			wantDetail: "a PriorityClass scope cannot count claims",
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
			_, err := EnforceableClusterLimits(&tc.spec)
			if (err == nil) != (len(tc.wantErrs) == 0) {
				t.Errorf("EnforceableClusterLimits: %v, want an error iff the webhook refuses (%v)", err, tc.wantErrs)
			}
		})
	}
}
