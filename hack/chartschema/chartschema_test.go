package chartschema

import (
	"encoding/json"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	"sigs.k8s.io/yaml"
)

const testConstraints = `
shapes:
  duration: &duration {type: string, pattern: '^[0-9]+(s|m|h)$'}
values:
  mode: {enum: [a, b]}
  group.ttl: *duration
  group.labels: {type: object, additionalProperties: {type: string}}
  args: {items: {type: string}}
`

const testValues = `# Values of a chart.
# The header is not any value's description.

# -- How it runs: "a" or "b".
mode: a

group:
  # -- How long a thing lives,
  # in Go's syntax.
  #
  # A second paragraph.
  ttl: 2m
  # -- Labels of the things.
  labels: {}
  # -- Replicas.
  replicas: 2

# -- Extra arguments.
args: []
`

func generateTest(t *testing.T, values, constraints string) (map[string]any, error) {
	t.Helper()
	parsed, err := parseConstraints([]byte(constraints))
	if err != nil {
		t.Fatalf("parsing the constraints: %v", err)
	}
	out, err := generate([]byte(values), parsed)
	if err != nil {
		return nil, err
	}
	var schema map[string]any
	if err := json.Unmarshal(out, &schema); err != nil {
		t.Fatalf("the schema is not JSON: %v\n%s", err, out)
	}
	return schema, nil
}

func property(t *testing.T, schema map[string]any, path ...string) map[string]any {
	t.Helper()
	for _, p := range path {
		props, _ := schema["properties"].(map[string]any)
		next, ok := props[p].(map[string]any)
		if !ok {
			t.Fatalf("no property %s in %v", strings.Join(path, "."), schema)
		}
		schema = next
	}
	return schema
}

func TestGenerateDescribesEveryValue(t *testing.T) {
	schema, err := generateTest(t, testValues, testConstraints)
	if err != nil {
		t.Fatal(err)
	}
	if schema["$schema"] != SchemaDraft || schema["additionalProperties"] != false {
		t.Errorf("the root must name draft-07 and refuse unknown values: %v", schema)
	}
	mode := property(t, schema, "mode")
	if mode["description"] != `How it runs: "a" or "b".` || mode["type"] != "string" || mode["default"] != "a" {
		t.Errorf("mode: %v", mode)
	}
	if enum, _ := mode["enum"].([]any); len(enum) != 2 {
		t.Errorf("mode keeps its enum: %v", mode)
	}
	group := property(t, schema, "group")
	if group["additionalProperties"] != false || group["type"] != "object" {
		t.Errorf("a group of values must refuse unknown ones: %v", group)
	}
	ttl := property(t, schema, "group", "ttl")
	if want := "How long a thing lives, in Go's syntax.\n\nA second paragraph."; ttl["description"] != want {
		t.Errorf("ttl description = %q, want %q", ttl["description"], want)
	}
	if ttl["pattern"] != "^[0-9]+(s|m|h)$" {
		t.Errorf("ttl takes its shape from the anchor: %v", ttl)
	}
	if replicas := property(t, schema, "group", "replicas"); replicas["type"] != "integer" || replicas["default"] != 2.0 {
		t.Errorf("replicas: %v", replicas)
	}
	if labels := property(t, schema, "group", "labels"); labels["additionalProperties"] == false {
		t.Errorf("a constrained object is one value, described by its constraint: %v", labels)
	}
	if args := property(t, schema, "args"); args["type"] != "array" || args["items"] == nil {
		t.Errorf("args: %v", args)
	}
	if global := property(t, schema, GlobalKey); global["type"] != "object" {
		t.Errorf("Helm's global values must be allowed: %v", global)
	}
}

func TestGeneratedSchemaValidatesAsHelmDoes(t *testing.T) {
	parsed, err := parseConstraints([]byte(testConstraints))
	if err != nil {
		t.Fatal(err)
	}
	schema, err := generate([]byte(testValues), parsed)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, values, wantErr string
	}{
		{name: "defaults", values: testValues},
		{name: "misspelt value", values: "group: {replica: 3}", wantErr: "'replica' not allowed"},
		{name: "value outside an enum", values: "mode: c", wantErr: "/mode"},
		{name: "mistyped value", values: "group: {replicas: two}", wantErr: "/group/replicas"},
		{name: "mistyped map entry", values: "group: {labels: {a: 1}}", wantErr: "/group/labels/a"},
		{name: "duration without a unit", values: "group: {ttl: '90'}", wantErr: "/group/ttl"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var values map[string]any
			if err := yaml.Unmarshal([]byte(tc.values), &values); err != nil {
				t.Fatal(err)
			}
			err := chartutil.ValidateAgainstSingleSchema(values, schema)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("error = %v, want one mentioning %q", err, tc.wantErr)
			}
		})
	}
}

func TestGenerateRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, values, constraints, wantErr string
	}{
		{
			name:    "a value without a description",
			values:  "# -- Documented.\na: 1\n# A comment, not a description.\nb: 2\n",
			wantErr: "values.yaml:4: b has no `# --` comment",
		},
		{
			name:    "a nested value without a description",
			values:  "group:\n  # -- Documented.\n  a: 1\n  b: 2\n",
			wantErr: "values.yaml:4: group.b has no `# --` comment",
		},
		{
			name:    "an empty object nothing describes",
			values:  "# -- Selector.\nnodeSelector: {}\n",
			wantErr: "nodeSelector is an empty object",
		},
		{
			name:    "a list nothing describes",
			values:  "# -- Arguments.\nargs: []\n",
			wantErr: "args is a list",
		},
		{
			name:    "a null nothing types",
			values:  "# -- Something.\nthing: null\n",
			wantErr: "thing is !!null",
		},
		{
			name:        "a constraint for a value values.yaml lacks",
			values:      "# -- Documented.\na: 1\n",
			constraints: "values:\n  b: {minimum: 1}\n",
			wantErr:     "constraints.yaml describes b, which values.yaml lacks",
		},
		{
			name:        "a constraint inside a value set as a whole",
			values:      "# -- Resources.\nresources: {requests: {cpu: 1}}\n",
			constraints: "values:\n  resources: {type: object}\n  resources.requests: {type: object}\n",
			wantErr:     "constraints.yaml describes resources.requests",
		},
		{
			name:    "Helm's global key in values.yaml",
			values:  "# -- Globals.\nglobal: {a: 1}\n",
			wantErr: `"global" is Helm's`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			constraints := tc.constraints
			if constraints == "" {
				constraints = "values: {}\n"
			}
			_, err := generateTest(t, tc.values, constraints)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

// The embedded constraints must parse; whether they fit the chart's values.yaml is test/chart's question.
func TestConstraintsParse(t *testing.T) {
	if _, err := parseConstraints(constraintsYAML); err != nil {
		t.Fatal(err)
	}
}
