package usage

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
)

func TestNewSelector(t *testing.T) {
	cases := map[string]struct {
		scopeSelector *quotav1alpha1.ScopeSelector
		wantScoped    bool
		// wantErr is a fragment of the error: the expression's index and what is wrong with it.
		wantErr string
	}{
		"nil is unscoped": {
			scopeSelector: nil,
		},
		"no expressions is unscoped": {
			scopeSelector: &quotav1alpha1.ScopeSelector{},
		},
		"In": {
			scopeSelector: &quotav1alpha1.ScopeSelector{MatchExpressions: []quotav1alpha1.ScopedResourceSelectorRequirement{
				priorityClass(corev1.ScopeSelectorOpIn, "high"),
			}},
			wantScoped: true,
		},
		"every operator together": {
			scopeSelector: &quotav1alpha1.ScopeSelector{MatchExpressions: []quotav1alpha1.ScopedResourceSelectorRequirement{
				priorityClass(corev1.ScopeSelectorOpIn, "high", "low"),
				priorityClass(corev1.ScopeSelectorOpNotIn, "low"),
				priorityClass(corev1.ScopeSelectorOpExists),
				priorityClass(corev1.ScopeSelectorOpDoesNotExist),
			}},
			wantScoped: true,
		},
		"a scope a binding does not carry": {
			scopeSelector: &quotav1alpha1.ScopeSelector{MatchExpressions: []quotav1alpha1.ScopedResourceSelectorRequirement{
				priorityClass(corev1.ScopeSelectorOpExists),
				{ScopeName: corev1.ResourceQuotaScopeBestEffort, Operator: corev1.ScopeSelectorOpExists},
			}},
			wantErr: `matchExpressions[1].scopeName: Unsupported value: "BestEffort"`,
		},
		"an unknown operator": {
			scopeSelector: &quotav1alpha1.ScopeSelector{MatchExpressions: []quotav1alpha1.ScopedResourceSelectorRequirement{
				priorityClass("Gt", "1"),
			}},
			wantErr: `matchExpressions[0].operator: Unsupported value: "Gt"`,
		},
		"In without values": {
			scopeSelector: &quotav1alpha1.ScopeSelector{MatchExpressions: []quotav1alpha1.ScopedResourceSelectorRequirement{
				priorityClass(corev1.ScopeSelectorOpIn),
			}},
			wantErr: "matchExpressions[0].values: Required value: must name at least one priority class when operator is In",
		},
		"NotIn without values": {
			scopeSelector: &quotav1alpha1.ScopeSelector{MatchExpressions: []quotav1alpha1.ScopedResourceSelectorRequirement{
				priorityClass(corev1.ScopeSelectorOpNotIn),
			}},
			wantErr: "matchExpressions[0].values: Required value: must name at least one priority class when operator is NotIn",
		},
		"Exists with values": {
			scopeSelector: &quotav1alpha1.ScopeSelector{MatchExpressions: []quotav1alpha1.ScopedResourceSelectorRequirement{
				priorityClass(corev1.ScopeSelectorOpExists, "high"),
			}},
			wantErr: "matchExpressions[0].values: Forbidden: must be empty when operator is Exists",
		},
		"DoesNotExist with values": {
			scopeSelector: &quotav1alpha1.ScopeSelector{MatchExpressions: []quotav1alpha1.ScopedResourceSelectorRequirement{
				priorityClass(corev1.ScopeSelectorOpIn, "high"),
				priorityClass(corev1.ScopeSelectorOpDoesNotExist, ""),
			}},
			wantErr: "matchExpressions[1].values: Forbidden: must be empty when operator is DoesNotExist",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sel, err := NewSelector(tc.scopeSelector)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("NewSelector() error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewSelector() unexpected error: %v", err)
			}
			if got := sel.Scoped(); got != tc.wantScoped {
				t.Errorf("Scoped() = %v, want %v", got, tc.wantScoped)
			}
		})
	}
}

func TestSelectorMatches(t *testing.T) {
	cases := map[string]struct {
		exprs         []quotav1alpha1.ScopedResourceSelectorRequirement
		priorityClass string
		wantMatch     bool
	}{
		"unscoped matches a class":   {priorityClass: "high", wantMatch: true},
		"unscoped matches no class":  {priorityClass: "", wantMatch: true},
		"In, listed":                 {exprs: exprs(priorityClass(corev1.ScopeSelectorOpIn, "low", "high")), priorityClass: "high", wantMatch: true},
		"In, not listed":             {exprs: exprs(priorityClass(corev1.ScopeSelectorOpIn, "high")), priorityClass: "low"},
		"In, no class":               {exprs: exprs(priorityClass(corev1.ScopeSelectorOpIn, "high")), priorityClass: ""},
		"In is case-sensitive":       {exprs: exprs(priorityClass(corev1.ScopeSelectorOpIn, "high")), priorityClass: "High"},
		"NotIn, listed":              {exprs: exprs(priorityClass(corev1.ScopeSelectorOpNotIn, "low", "high")), priorityClass: "low"},
		"NotIn, not listed":          {exprs: exprs(priorityClass(corev1.ScopeSelectorOpNotIn, "high")), priorityClass: "low", wantMatch: true},
		"NotIn, no class":            {exprs: exprs(priorityClass(corev1.ScopeSelectorOpNotIn, "high")), priorityClass: "", wantMatch: true},
		"Exists, a class":            {exprs: exprs(priorityClass(corev1.ScopeSelectorOpExists)), priorityClass: "low", wantMatch: true},
		"Exists, no class":           {exprs: exprs(priorityClass(corev1.ScopeSelectorOpExists)), priorityClass: ""},
		"DoesNotExist, a class":      {exprs: exprs(priorityClass(corev1.ScopeSelectorOpDoesNotExist)), priorityClass: "low"},
		"DoesNotExist, no class":     {exprs: exprs(priorityClass(corev1.ScopeSelectorOpDoesNotExist)), priorityClass: "", wantMatch: true},
		"all expressions hold":       {exprs: exprs(priorityClass(corev1.ScopeSelectorOpExists), priorityClass(corev1.ScopeSelectorOpNotIn, "low")), priorityClass: "high", wantMatch: true},
		"one expression fails":       {exprs: exprs(priorityClass(corev1.ScopeSelectorOpExists), priorityClass(corev1.ScopeSelectorOpNotIn, "low")), priorityClass: "low"},
		"contradiction matches none": {exprs: exprs(priorityClass(corev1.ScopeSelectorOpExists), priorityClass(corev1.ScopeSelectorOpDoesNotExist)), priorityClass: ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sel := selector(t, tc.exprs...)
			if got := sel.Matches(tc.priorityClass); got != tc.wantMatch {
				t.Errorf("Matches(%q) = %v, want %v", tc.priorityClass, got, tc.wantMatch)
			}
		})
	}
}

func exprs(e ...quotav1alpha1.ScopedResourceSelectorRequirement) []quotav1alpha1.ScopedResourceSelectorRequirement {
	return e
}
