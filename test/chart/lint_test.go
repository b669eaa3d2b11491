package chart

import (
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/lint/support"
)

// iconInfo is the one message lint may give: the chart has no icon, since karmada-quota has no logo to point to.
// It is INFO, which `helm lint --strict` does not fail on either.
const iconInfo = "icon is recommended"

// `helm lint --strict`, through the Helm SDK as the CLI runs it, for every values case: no error, no warning.
func TestLintStrict(t *testing.T) {
	for _, c := range valuesCases(t) {
		if c.release != "karmada-quota" {
			continue // lint names its own release.
		}
		t.Run(c.name, func(t *testing.T) {
			lint := action.NewLint()
			lint.Strict = true
			lint.Namespace = namespace
			result := lint.Run([]string{chartDir}, c.values)
			if result.TotalChartsLinted != 1 {
				t.Errorf("linted %d charts, want 1", result.TotalChartsLinted)
			}
			for _, err := range result.Errors {
				t.Errorf("lint: %v", err)
			}
			for _, msg := range result.Messages {
				if msg.Severity == support.InfoSev && msg.Err != nil && msg.Err.Error() == iconInfo {
					continue
				}
				t.Errorf("lint %s", msg)
			}
		})
	}
}

// The lint above is not vacuous: it validates the values against the schema and renders every template.
func TestLintFailsOnBadValues(t *testing.T) {
	lint := action.NewLint()
	lint.Strict = true
	lint.Namespace = namespace
	result := lint.Run([]string{chartDir}, map[string]any{"webhook": map[string]any{"replica": 3}})
	if len(result.Errors) == 0 {
		t.Error("lint accepted a misspelt value")
	}
	var sawIcon bool
	for _, msg := range result.Messages {
		sawIcon = sawIcon || (msg.Err != nil && msg.Err.Error() == iconInfo)
	}
	if !sawIcon {
		t.Logf("lint no longer asks for an icon: iconInfo can go")
	}
}
