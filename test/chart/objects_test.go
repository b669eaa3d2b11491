package chart

import (
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/karmada-quota/karmada-quota/operator/pkg/install"
	"github.com/karmada-quota/karmada-quota/pkg/webhookconfig"
)

// Every object the chart renders, host, hooks and karmada-apiserver alike, passes what an API server checks on
// create: its schema (unknown and mistyped fields refused), its metadata, and for the CRD, apiextensions' own
// validation (structural, CEL rules compile). Custom resources are checked against their CRDs.
func TestRenderedObjectsMatchTheirSchemas(t *testing.T) {
	forEachRendering(t, checkRenderedObjectsMatchTheirSchemas)
}

func checkRenderedObjectsMatchTheirSchemas(t reporter, r *rendering) {
	c := checker(t, r)
	for plane, objects := range map[string][]*unstructured.Unstructured{
		"host":              r.Host,
		"hook":              r.Hooks,
		"karmada-apiserver": r.Karmada,
	} {
		if len(objects) == 0 {
			t.Errorf("no %s objects", plane)
		}
		for _, obj := range objects {
			if err := c.Check(obj); err != nil {
				t.Errorf("%s object: %v", plane, err)
			}
		}
	}
}

// The install ConfigMap carries what the phases read: a configuration install.ParseConfig accepts (strictly, no
// unknown field), and the karmada-apiserver's objects, the chart's CRD among them.
func TestInstallConfigMap(t *testing.T) { forEachRendering(t, checkInstallConfigMap) }

func checkInstallConfigMap(t reporter, r *rendering) {
	cm := r.installConfigMap(t)
	config, _, _ := unstructured.NestedString(cm.Object, "data", "config.yaml")
	if _, err := install.ParseConfig([]byte(config)); err != nil {
		t.Errorf("config.yaml: %v", err)
	}
	manifests, _, _ := unstructured.NestedString(cm.Object, "data", "karmada.yaml")
	objects, err := install.ParseObjects([]byte(manifests))
	if err != nil {
		t.Fatalf("karmada.yaml: %v", err)
	}
	kinds := map[string]int{}
	var crds []string
	for _, obj := range objects {
		kinds[obj.GetKind()]++
		if obj.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, obj.GetName())
		}
	}
	slices.Sort(crds)
	if want := []string{
		"appliedbusinessquotas.quota.karmada.io", "karmadabusinessquotaledgers.quota.karmada.io", "karmadabusinessquotas.quota.karmada.io",
		"karmadaquotaledgers.quota.karmada.io", "karmadaquotas.quota.karmada.io",
	}; !slices.Equal(crds, want) {
		t.Errorf("karmada.yaml holds the CRDs %v, want %v", crds, want)
	}
	for _, kind := range []string{"ClusterRole", "ClusterRoleBinding", "ServiceAccount", "Role", "RoleBinding"} {
		if kinds[kind] == 0 {
			t.Errorf("karmada.yaml holds no %s", kind)
		}
	}
}

// NOTES.txt shows a KarmadaQuota to copy: it must be one the CRD accepts.
func TestNotesQuotaIsValid(t *testing.T) { forEachRendering(t, checkNotesQuotaIsValid) }

func checkNotesQuotaIsValid(t reporter, r *rendering) {
	const open, end = "<<QUOTA\n", "\n  QUOTA"
	start := strings.Index(r.Notes, open)
	stop := strings.Index(r.Notes, end)
	if start < 0 || stop < start {
		t.Fatal("NOTES.txt no longer shows a quota to copy between <<QUOTA and QUOTA")
	}
	var lines []string
	for _, line := range strings.Split(r.Notes[start+len(open):stop], "\n") {
		lines = append(lines, strings.TrimPrefix(line, "  "))
	}
	objects, err := install.ParseObjects([]byte(strings.Join(lines, "\n")))
	if err != nil || len(objects) != 1 {
		t.Fatalf("the quota in NOTES.txt: %v (%d objects)", err, len(objects))
	}
	quota := objects[0]
	quota.SetNamespace("team-a") // `kubectl -n team-a apply` sets it.
	if err := checker(t, r).Check(quota); err != nil {
		t.Errorf("the quota in NOTES.txt: %v", err)
	}
}

// The ValidatingWebhookConfiguration is not rendered: register builds it in Go from the install configuration. It
// must still be one the karmada-apiserver accepts, calling the URL the chart rendered.
func TestWebhookConfigurationIsValid(t *testing.T) {
	forEachRendering(t, checkWebhookConfigurationIsValid)
}

func checkWebhookConfigurationIsValid(t reporter, r *rendering) {
	vwc := webhookconfig.Configuration(r.Config.Webhook.URL, []byte("-----BEGIN CERTIFICATE-----\n"), r.Config.Webhook.TimeoutSeconds)
	vwc.SetGroupVersionKind(admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingWebhookConfiguration"))
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(vwc)
	if err != nil {
		t.Fatal(err)
	}
	if err := checker(t, r).Check(&unstructured.Unstructured{Object: raw}); err != nil {
		t.Error(err)
	}
	for _, w := range vwc.Webhooks {
		if w.ClientConfig.URL == nil || !strings.HasPrefix(*w.ClientConfig.URL, r.Config.Webhook.URL+"/") {
			t.Errorf("webhook %s calls %v, not the rendered URL %s", w.Name, w.ClientConfig.URL, r.Config.Webhook.URL)
		}
	}
}
