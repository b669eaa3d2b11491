// Package render turns karmada-quota's Helm chart and a set of values into what an installation consists of:
// the host cluster's objects, and the install phases' configuration and karmada-apiserver objects. The operator
// installs from it; the tests check the chart through it.
package render

import (
	"fmt"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/releaseutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/karmada-quota/karmada-quota/deploy/charts"
	"github.com/karmada-quota/karmada-quota/operator/pkg/install"
)

// hookAnnotation marks the objects Helm runs as hooks rather than installs.
const hookAnnotation = "helm.sh/hook"

// Installation is one rendering of the chart.
type Installation struct {
	// Host are the objects Helm installs into the host cluster, in Helm's install order.
	Host []*unstructured.Unstructured
	// Hooks are the install phases' objects (ConfigMap, ServiceAccount, RBAC, Jobs), which the operator does
	// not need: it runs the phases itself.
	Hooks []*unstructured.Unstructured
	// Config and Karmada are what the install phases read from the install ConfigMap.
	Config  install.Config
	Karmada []*unstructured.Unstructured
	// Notes is the chart's NOTES.txt.
	Notes string
}

// Render renders the chart for a release of the given name in the given host namespace.
func Render(release, namespace string, values map[string]any) (*Installation, error) {
	ch, err := charts.KarmadaQuota()
	if err != nil {
		return nil, err
	}
	renderValues, err := chartutil.ToRenderValues(ch, values,
		chartutil.ReleaseOptions{Name: release, Namespace: namespace, IsInstall: true, Revision: 1},
		chartutil.DefaultCapabilities)
	if err != nil {
		return nil, fmt.Errorf("the values do not fit the chart: %w", err)
	}
	files, err := engine.Render(ch, renderValues)
	if err != nil {
		return nil, fmt.Errorf("rendering the chart: %w", err)
	}
	out := &Installation{}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	var manifests []string
	for _, name := range names {
		if strings.HasSuffix(name, "NOTES.txt") {
			out.Notes = files[name]
			continue
		}
		if strings.HasPrefix(strings.TrimPrefix(name, ch.Name()+"/templates/"), "_") {
			continue
		}
		manifests = append(manifests, files[name])
	}
	objects, err := install.ParseObjects([]byte(strings.Join(manifests, "\n---\n")))
	if err != nil {
		return nil, err
	}
	for _, obj := range objects {
		if _, hook := obj.GetAnnotations()[hookAnnotation]; hook {
			out.Hooks = append(out.Hooks, obj)
		} else {
			out.Host = append(out.Host, obj)
		}
	}
	sortForInstall(out.Host)
	if err := out.readInstallConfigMap(); err != nil {
		return nil, err
	}
	return out, nil
}

// readInstallConfigMap finds the hook ConfigMap that carries the install configuration and objects.
func (in *Installation) readInstallConfigMap() error {
	for _, obj := range in.Hooks {
		if obj.GetKind() != "ConfigMap" {
			continue
		}
		config, hasConfig, _ := unstructured.NestedString(obj.Object, "data", "config.yaml")
		objects, hasObjects, _ := unstructured.NestedString(obj.Object, "data", "karmada.yaml")
		if !hasConfig || !hasObjects {
			continue
		}
		var err error
		if in.Config, err = install.ParseConfig([]byte(config)); err != nil {
			return err
		}
		if in.Karmada, err = install.ParseObjects([]byte(objects)); err != nil {
			return fmt.Errorf("the karmada-apiserver objects of the chart: %w", err)
		}
		return nil
	}
	return fmt.Errorf("the chart rendered no install ConfigMap")
}

// sortForInstall orders objects as Helm installs them (by kind), so that what a workload needs exists first.
func sortForInstall(objects []*unstructured.Unstructured) {
	order := make(map[string]int, len(releaseutil.InstallOrder))
	for i, kind := range releaseutil.InstallOrder {
		order[kind] = i
	}
	rank := func(kind string) int {
		if i, ok := order[kind]; ok {
			return i
		}
		return len(order)
	}
	sort.SliceStable(objects, func(i, j int) bool { return rank(objects[i].GetKind()) < rank(objects[j].GetKind()) })
}
