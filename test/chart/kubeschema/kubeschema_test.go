package kubeschema

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

func parse(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &obj.Object); err != nil {
		t.Fatalf("parsing the test manifest: %v", err)
	}
	return obj
}

const deployment = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
  labels: {app: web}
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: web
          image: registry.example/web:v1
          ports:
            - name: http
              containerPort: 8080
`

// broken returns the Deployment above with one line replaced.
func broken(t *testing.T, old, replacement string) *unstructured.Unstructured {
	t.Helper()
	if !strings.Contains(deployment, old) {
		t.Fatalf("the test Deployment has no %q", old)
	}
	return parse(t, strings.Replace(deployment, old, replacement, 1))
}

func TestBuiltinKinds(t *testing.T) {
	c := New()
	if err := c.Check(parse(t, deployment)); err != nil {
		t.Fatalf("a valid Deployment is refused: %v", err)
	}
	for _, tc := range []struct {
		name    string
		obj     *unstructured.Unstructured
		wantErr string
	}{
		{"unknown field", broken(t, "image: registry.example/web:v1", "image: registry.example/web:v1\n          imagePullPolicyy: Always"), "imagePullPolicyy"},
		{"unknown field at the top of spec", broken(t, "replicas: 2", "replicas: 2\n  maxUnavailable: 0"), "maxUnavailable"},
		{"unknown metadata field", broken(t, "labels: {app: web}\nspec:", "labels: {app: web}\n  label: {app: web}\nspec:"), "label"},
		{"string for an integer", broken(t, "replicas: 2", "replicas: two"), "replicas"},
		{"string for a port number", broken(t, "containerPort: 8080", "containerPort: \"8080\""), "containerPort"},
		{"list for an object", broken(t, "matchLabels: {app: web}", "matchLabels: [app]"), "matchLabels"},
		{"invalid label value", broken(t, "labels: {app: web}\nspec:", "labels: {app: \"web server\"}\nspec:"), "metadata.labels"},
		{"a namespaced kind without a namespace", broken(t, "  namespace: default\n", ""), "metadata.namespace"},
		{"an invalid name", broken(t, "name: web\n  namespace", "name: Web_1\n  namespace"), "metadata.name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := c.Check(tc.obj)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error = %v, want one mentioning %q", err, tc.wantErr)
			}
		})
	}

	t.Run("a cluster-scoped kind with a namespace", func(t *testing.T) {
		err := c.Check(parse(t, "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: r, namespace: default}\n"))
		if err == nil || !strings.Contains(err.Error(), "metadata.namespace") {
			t.Errorf("error = %v, want one about the namespace", err)
		}
	})
	t.Run("an unknown kind", func(t *testing.T) {
		err := c.Check(parse(t, "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: default}\n"))
		if err == nil || !strings.Contains(err.Error(), "no schema is known") {
			t.Errorf("error = %v, want no schema known", err)
		}
	})
}

// Each of the two nets for built-in kinds catches unknown and mistyped fields on its own, so neither is decoration.
func TestBothNetsCatchBrokenBuiltins(t *testing.T) {
	c := New()
	for name, obj := range map[string]*unstructured.Unstructured{
		"unknown field": broken(t, "image: registry.example/web:v1", "image: registry.example/web:v1\n          imagePullPolicyy: Always"),
		"mistyped":      broken(t, "replicas: 2", "replicas: two"),
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := c.builtin.ObjectToTyped(obj); err == nil {
				t.Error("the OpenAPI schema (ObjectToTyped) accepted it")
			}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj.Object, &appsv1.Deployment{}, true); err == nil {
				t.Error("the strict decode accepted it")
			}
		})
	}
	if !clientgoscheme.Scheme.Recognizes(appsv1.SchemeGroupVersion.WithKind("Deployment")) {
		t.Fatal("client-go's scheme must know Deployments")
	}
}

const widgetCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            apiVersion: {type: string}
            kind: {type: string}
            metadata: {type: object}
            spec:
              type: object
              required: [size, mode]
              x-kubernetes-validations:
                - rule: "self.size <= self.limit"
                  message: size must not exceed limit
              properties:
                size: {type: integer, minimum: 1}
                limit: {type: integer, default: 10}
                mode: {type: string, enum: [fast, slow]}
                tags:
                  type: array
                  x-kubernetes-list-type: set
                  items: {type: string}
`

const widget = `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, namespace: default}
spec: {size: 3, mode: fast, tags: [a, b]}
`

func TestCustomResources(t *testing.T) {
	c := New()
	if err := c.AddCRD(parse(t, widgetCRD)); err != nil {
		t.Fatalf("a valid CRD is refused: %v", err)
	}
	if err := c.Check(parse(t, widget)); err != nil {
		t.Fatalf("a valid custom resource is refused (limit defaults to 10): %v", err)
	}
	for _, tc := range []struct {
		name, old, replacement, wantErr string
	}{
		{"unknown field", "mode: fast", "mode: fast, colour: red", "spec.colour"},
		{"unknown metadata field", "namespace: default}", "namespace: default, label: x}", "metadata.label"},
		{"mistyped field", "size: 3", "size: three", "spec.size"},
		{"value outside the enum", "mode: fast", "mode: medium", "spec.mode"},
		{"below the minimum", "size: 3", "size: 0", "spec.size"},
		{"missing required field", "mode: fast, ", "", "spec.mode"},
		{"CEL rule broken", "size: 3", "size: 11", "size must not exceed limit"},
		{"duplicate in a set", "tags: [a, b]", "tags: [a, a]", "spec.tags"},
		{"no namespace", "name: w, namespace: default", "name: w", "metadata.namespace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(widget, tc.old) {
				t.Fatalf("the test widget has no %q", tc.old)
			}
			err := c.Check(parse(t, strings.Replace(widget, tc.old, tc.replacement, 1)))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error = %v, want one mentioning %q", err, tc.wantErr)
			}
		})
	}
}

func TestCRDs(t *testing.T) {
	c := New()
	if err := c.Check(parse(t, widgetCRD)); err != nil {
		t.Fatalf("a valid CRD is refused: %v", err)
	}
	for _, tc := range []struct {
		name, old, replacement, wantErr string
	}{
		{"not structural: a property without a type", "size: {type: integer, minimum: 1}", "size: {minimum: 1}", "type: Required value"},
		{"a CEL rule that does not compile", `rule: "self.size <= self.limit"`, `rule: "self.size <= self.nope"`, "x-kubernetes-validations"},
		{"name not plural.group", "name: widgets.example.com", "name: widget.example.com", "metadata.name"},
		{"unknown field", "scope: Namespaced", "scope: Namespaced\n  scopes: Namespaced", "scopes"},
		{"no storage version", "storage: true", "storage: false", "storage"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(widgetCRD, tc.old) {
				t.Fatalf("the test CRD has no %q", tc.old)
			}
			crd := parse(t, strings.Replace(widgetCRD, tc.old, tc.replacement, 1))
			err := c.Check(crd)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Check: error = %v, want one mentioning %q", err, tc.wantErr)
			}
			if err := New().AddCRD(crd); err == nil {
				t.Error("AddCRD accepted it")
			}
		})
	}
}
