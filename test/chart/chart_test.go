// Package chart checks karmada-quota's Helm chart offline, as CI and a user's `helm install` would meet it: the values
// schema is generated from values.yaml and refuses mistakes; `helm lint --strict` passes; and every object rendered
// for the default values and for each values file under the chart's ci/ folder (chart-testing's convention) passes
// the checks an API server would make on create (test/chart/kubeschema), including the karmada-apiserver's objects
// and configuration inside the install ConfigMap. Then properties that a schema cannot see but a broken install
// would show: pods mount only what exists, Services and ServiceMonitors reach declared ports, hooks clean up after
// themselves, the webhook never rolls below its replica count, every pod meets the restricted Pod Security Standard,
// every value reaches the objects it configures, and the binaries accept the arguments they are given.
//
// No snapshot of the rendering is kept: it would be rewritten on every change and prove nothing. `make test-chart`
// runs the package, passing the CRDs of the custom resources the chart renders (ServiceMonitor, PrometheusRule,
// Certificate, Issuer, ClusterPropagationPolicy) in CHART_TEST_CRDS; `make chart-crds` prints that variable for running it directly.
package chart

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/karmada-quota/karmada-quota/deploy/charts"
	"github.com/karmada-quota/karmada-quota/operator/pkg/install"
	"github.com/karmada-quota/karmada-quota/operator/pkg/render"
	"github.com/karmada-quota/karmada-quota/test/chart/kubeschema"
)

const (
	// chartDir is the chart's folder, from this package's folder (where `go test` runs it).
	chartDir = "../../deploy/charts/karmada-quota"
	// namespace is the host namespace every case installs into, Karmada's own.
	namespace = "karmada-system"
	// crdsEnv names the file holding the CRDs of the custom resources the chart renders.
	crdsEnv = "CHART_TEST_CRDS"
)

// valuesCase is one way of installing the chart.
type valuesCase struct {
	name    string
	release string
	// values are the user's values (nil: the chart's defaults).
	values map[string]any
}

// valuesCases are the default values under two release names (the fullname takes the release name when it says
// karmada-quota, else appends it) and every ci/*-values.yaml.
func valuesCases(t *testing.T) []valuesCase {
	t.Helper()
	cases := []valuesCase{
		{name: "defaults", release: "karmada-quota"},
		{name: "defaults, release prod", release: "prod"},
	}
	files, err := filepath.Glob(filepath.Join(chartDir, "ci", "*-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 2 {
		t.Fatalf("want the ci/ values files (all toggles, cert-manager's own issuer), found %v", files)
	}
	sort.Strings(files)
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		values := map[string]any{}
		if err := yaml.Unmarshal(raw, &values); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		cases = append(cases, valuesCase{name: "ci/" + filepath.Base(file), release: "karmada-quota", values: values})
	}
	return cases
}

// rendering is one case rendered, with the values the templates saw.
type rendering struct {
	valuesCase
	*render.Installation
	// effective are the chart's defaults coalesced with the case's values.
	effective map[string]any
	chart     *chart.Chart
}

func renderCase(t reporter, c valuesCase) *rendering {
	t.Helper()
	in, err := render.Render(c.release, namespace, c.values)
	if err != nil {
		t.Fatalf("rendering: %v", err)
	}
	ch, err := charts.KarmadaQuota()
	if err != nil {
		t.Fatal(err)
	}
	effective, err := chartutil.CoalesceValues(ch, c.values)
	if err != nil {
		t.Fatal(err)
	}
	return &rendering{valuesCase: c, Installation: in, effective: effective, chart: ch}
}

// forEachRendering runs check on every case's rendering, each as its own subtest.
func forEachRendering(t *testing.T, check func(t reporter, r *rendering)) {
	for _, c := range valuesCases(t) {
		t.Run(c.name, func(t *testing.T) { check(t, renderCase(t, c)) })
	}
}

// value reads a dotted path of the effective values.
func (r *rendering) value(path string) any {
	var v any = map[string]any(r.effective)
	for _, key := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[key]
	}
	return v
}

func (r *rendering) str(path string) string {
	s, _ := r.value(path).(string)
	return s
}

func (r *rendering) flag(path string) bool {
	b, _ := r.value(path).(bool)
	return b
}

// all are the objects Helm creates in the host cluster, hooks included.
func (r *rendering) all() []*unstructured.Unstructured {
	return append(append([]*unstructured.Unstructured{}, r.Host...), r.Hooks...)
}

// installConfigMap is the hook ConfigMap the install phases read.
func (r *rendering) installConfigMap(t reporter) *unstructured.Unstructured {
	t.Helper()
	for _, obj := range r.Hooks {
		if obj.GetKind() != "ConfigMap" {
			continue
		}
		if _, ok, _ := unstructured.NestedString(obj.Object, "data", "config.yaml"); ok {
			return obj
		}
	}
	t.Fatal("no install ConfigMap among the hooks")
	return nil
}

// The CRDs of the custom resources the chart renders, read once.
var (
	externalCRDsOnce sync.Once
	externalCRDs     []*unstructured.Unstructured
	externalCRDsErr  error
)

// checker returns a kubeschema.Checker that knows the chart's own CRD (from the install ConfigMap, which it checks
// first) and the CRDs of ServiceMonitor, PrometheusRule, Certificate, Issuer and ClusterPropagationPolicy.
func checker(t reporter, r *rendering) *kubeschema.Checker {
	t.Helper()
	externalCRDsOnce.Do(func() {
		path := os.Getenv(crdsEnv)
		if path == "" {
			externalCRDsErr = errors.New(crdsEnv + " is not set: run `make test-chart`, or set it as `make chart-crds` prints")
			return
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			externalCRDsErr = err
			return
		}
		externalCRDs, externalCRDsErr = install.ParseObjects(raw)
	})
	if externalCRDsErr != nil {
		t.Fatalf("the CRDs of the custom resources the chart renders: %v", externalCRDsErr)
	}
	c := kubeschema.New()
	for _, crd := range externalCRDs {
		if err := c.AddCRD(crd); err != nil {
			t.Fatalf("%s: %v", os.Getenv(crdsEnv), err)
		}
	}
	for _, obj := range r.Karmada {
		if obj.GetKind() == "CustomResourceDefinition" {
			if err := c.AddCRD(obj); err != nil {
				t.Errorf("the chart's CRD: %v", err)
			}
		}
	}
	return c
}
