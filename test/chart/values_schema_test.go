package chart

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/karmada-quota/karmada-quota/deploy/charts"
	"github.com/karmada-quota/karmada-quota/hack/chartschema"
	"github.com/karmada-quota/karmada-quota/operator/pkg/render"
)

// values.schema.json is what hack/chartschema makes of values.yaml: every value documented with a `# --` comment,
// typed, and nothing the schema names that values.yaml lacks.
func TestValuesSchemaIsGenerated(t *testing.T) {
	values, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := chartschema.Generate(values)
	if err != nil {
		t.Fatalf("values.yaml cannot be turned into a schema (a value lacks a `# --` comment, or hack/chartschema/constraints.yaml does not fit it):\n%v", err)
	}
	got, err := os.ReadFile(filepath.Join(chartDir, "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("values.schema.json is stale: run `make generate` (first difference at line %d)", firstDifferentLine(got, want))
	}
}

func firstDifferentLine(a, b []byte) int {
	al, bl := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return i + 1
		}
	}
	return min(len(al), len(bl)) + 1
}

// Helm validates the user's values against the schema before rendering (the operator renders through the same
// path): mistakes fail the install, with the value named.
func TestValuesSchemaRefusesMistakes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		values  string
		wantErr string
	}{
		{"misspelt value", "webhook: {replica: 3}", "'replica' not allowed"},
		{"misspelt group", "certificate: {mode: cert-manager}", "'certificate' not allowed"},
		{"certificate mode outside the enum", "certificates: {mode: external}", "/certificates/mode"},
		{"webhook timeout above 30s", "webhook: {timeoutSeconds: 31}", "/webhook/timeoutSeconds"},
		{"webhook timeout of 0", "webhook: {timeoutSeconds: 0}", "/webhook/timeoutSeconds"},
		{"no replicas", "controller: {replicas: 0}", "/controller/replicas"},
		{"replicas as a string", `webhook: {replicas: "2"}`, "/webhook/replicas"},
		{"a duration without a unit", `webhook: {reservationTTL: "120"}`, "/webhook/reservationTTL"},
		{"a duration as a number", "controller: {resyncPeriod: 300}", "/controller/resyncPeriod"},
		{"a negative duration", "controller: {requeueCooldown: -1s}", "/controller/requeueCooldown"},
		{"a Prometheus duration in Go's syntax", "monitoring: {serviceMonitor: {interval: 1m30.5s}}", "/monitoring/serviceMonitor/interval"},
		{"an issuer without a name", "certificates: {certManager: {issuerRef: {kind: ClusterIssuer}}}", "missing property 'name'"},
		{"an issuer with an unknown field", "certificates: {certManager: {issuerRef: {name: ca, namespace: x}}}", "'namespace' not allowed"},
		{"a label that is a number", "monitoring: {dashboards: {labels: {grafana_dashboard: 1}}}", "/monitoring/dashboards/labels/grafana_dashboard"},
		{"tolerations as an object", "webhook: {tolerations: {key: a}}", "/webhook/tolerations"},
		{"a pull secret as a string", "imagePullSecrets: [regcred]", "/imagePullSecrets/0"},
		{"a pull policy outside the enum", "image: {pullPolicy: Sometimes}", "/image/pullPolicy"},
		{"an image registry with a tag", "image: {registry: 'ghcr.io/karmada-quota:v1'}", "/image/registry"},
		{"a fullname that is no DNS label", "fullnameOverride: Karmada_Quota", "/fullnameOverride"},
		{"zero queries per second", "webhook: {kubeAPIQPS: 0}", "/webhook/kubeAPIQPS"},
		{"extra arguments as one string", "controller: {extraArgs: --v=4}", "/controller/extraArgs"},
		{"a PDB percentage without %", "webhook: {podDisruptionBudget: {minAvailable: fifty}}", "/webhook/podDisruptionBudget/minAvailable"},
		{"the members' estimators under the prefix of karmada-quota's", "schedulerEstimator: {memberEstimators: {servicePrefix: karmada-quota-estimator}}",
			"karmada-quota's estimator would ask itself"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			values, err := chartutil.ReadValues([]byte(tc.values))
			if err != nil {
				t.Fatal(err)
			}
			_, err = render.Render("karmada-quota", namespace, values)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error = %v, want one mentioning %q", err, tc.wantErr)
			}
		})
	}
}

// Helm hands a subchart the parent's global values, at least an empty object: the schema must allow them, or the
// chart could not be a dependency of an umbrella chart (Karmada and karmada-quota together).
func TestChartWorksAsADependency(t *testing.T) {
	sub, err := charts.KarmadaQuota()
	if err != nil {
		t.Fatal(err)
	}
	parent := &chart.Chart{
		Metadata: &chart.Metadata{
			APIVersion:   chart.APIVersionV2,
			Name:         "umbrella",
			Version:      "0.1.0",
			Dependencies: []*chart.Dependency{{Name: sub.Name(), Version: sub.Metadata.Version}},
		},
		Values: map[string]any{"global": map[string]any{"imageRegistry": "mirror.example"}},
	}
	parent.AddDependency(sub)
	if err := chartutil.ProcessDependenciesWithMerge(parent, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := chartutil.ToRenderValues(parent, nil, chartutil.ReleaseOptions{Name: "karmada", Namespace: namespace}, chartutil.DefaultCapabilities); err != nil {
		t.Errorf("as a dependency: %v", err)
	}
}

// Every value of every ci/ file is one the schema knows, and the files together flip every boolean toggle away from
// its default: otherwise a branch of the templates goes unchecked.
func TestCIValuesCoverEveryToggle(t *testing.T) {
	defaults, err := chartutil.ReadValuesFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	flipped := map[string]bool{}
	seen := map[string]map[string]bool{}
	for _, c := range valuesCases(t) {
		if c.values == nil {
			continue
		}
		walkLeaves(c.values, "", func(path string, v any) {
			if seen[path] == nil {
				seen[path] = map[string]bool{}
			}
			seen[path][fmt.Sprint(v)] = true
			if b, ok := v.(bool); ok {
				if d, ok := lookup(map[string]any(defaults), path).(bool); ok && d != b {
					flipped[path] = true
				}
			}
		})
	}
	for _, toggle := range booleanValues(t) {
		if !flipped[toggle] {
			t.Errorf("no ci/ values file turns %s away from its default", toggle)
		}
	}
	for _, mode := range []string{"self-managed", "cert-manager"} {
		if mode != lookup(map[string]any(defaults), "certificates.mode") && !seen["certificates.mode"][mode] {
			t.Errorf("no ci/ values file sets certificates.mode %s", mode)
		}
	}
}

// booleanValues are the paths of the schema's boolean values: the chart's toggles.
func booleanValues(t reporter) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(chartDir, "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	var toggles []string
	var walk func(s map[string]any, prefix string)
	walk = func(s map[string]any, prefix string) {
		props, _ := s["properties"].(map[string]any)
		for name, p := range props {
			p, _ := p.(map[string]any)
			if p["type"] == "boolean" {
				toggles = append(toggles, prefix+name)
			}
			if p["additionalProperties"] == false {
				walk(p, prefix+name+".")
			}
		}
	}
	walk(schema, "")
	sort.Strings(toggles)
	if len(toggles) == 0 {
		t.Fatal("the schema has no boolean values")
	}
	return toggles
}

func walkLeaves(values map[string]any, prefix string, visit func(path string, v any)) {
	for key, v := range values {
		if m, ok := v.(map[string]any); ok && len(m) > 0 {
			walkLeaves(m, prefix+key+".", visit)
			continue
		}
		visit(prefix+key, v)
	}
}

func lookup(values map[string]any, path string) any {
	var v any = values
	for _, key := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[key]
	}
	return v
}
