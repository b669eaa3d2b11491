package chart

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/karmada-quota/karmada-quota/operator/pkg/install"
)

// convertValue decodes a value (YAML decoded into maps) into a Kubernetes Go type, the way the API server reads the
// rendered object.
func convertValue[T any](t reporter, v any) T {
	t.Helper()
	var out T
	if v == nil {
		return out
	}
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("value %v does not decode into %T: %v", v, out, err)
	}
	return out
}

// same compares what a value says with what an object holds; an empty value and an absent field are the same.
func same[T any](t reporter, what string, got T, value any) {
	t.Helper()
	want := convertValue[T](t, value)
	if !apiequality.Semantic.DeepEqual(got, want) {
		t.Errorf("%s: the object holds %+v, the values say %+v", what, got, want)
	}
}

// Every value of a component reaches its pods: scheduling, resources, security contexts, annotations, arguments.
// A value a template forgets is a setting users believe they made.
func TestValuesReachTheWorkloads(t *testing.T) { forEachRendering(t, checkValuesReachTheWorkloads) }

func checkValuesReachTheWorkloads(t reporter, r *rendering) {
	for _, component := range []string{"webhook", "controller"} {
		w := r.deployment(t, component)
		spec := w.template.Spec
		v := func(key string) any { return r.value(component + "." + key) }
		if fmt.Sprint(w.replicas) != fmt.Sprint(v("replicas")) {
			t.Errorf("%s: %d replicas, the values say %v", w, w.replicas, v("replicas"))
		}
		same(t, w.String()+" nodeSelector", spec.NodeSelector, v("nodeSelector"))
		same(t, w.String()+" tolerations", spec.Tolerations, v("tolerations"))
		same(t, w.String()+" affinity", spec.Affinity, emptyToNil(v("affinity")))
		same(t, w.String()+" priorityClassName", spec.PriorityClassName, v("priorityClassName"))
		same(t, w.String()+" pod securityContext", spec.SecurityContext, r.value("podSecurityContext"))
		for key, value := range convertValue[map[string]string](t, v("podAnnotations")) {
			if w.template.Annotations[key] != value {
				t.Errorf("%s: pod annotation %s=%q, the values say %q", w, key, w.template.Annotations[key], value)
			}
		}
		for _, extra := range convertValue[[]corev1.TopologySpreadConstraint](t, v("topologySpreadConstraints")) {
			if !slices.ContainsFunc(spec.TopologySpreadConstraints, func(c corev1.TopologySpreadConstraint) bool {
				return apiequality.Semantic.DeepEqual(c, extra)
			}) {
				t.Errorf("%s: topology spread constraint %+v is missing", w, extra)
			}
		}
		spread := slices.ContainsFunc(spec.TopologySpreadConstraints, func(c corev1.TopologySpreadConstraint) bool {
			return c.TopologyKey == "kubernetes.io/hostname" && selects(c.LabelSelector, w.template.Labels)
		})
		if spread != r.flag(component+".spreadAcrossNodes") {
			t.Errorf("%s: spread over nodes (by a constraint selecting its own pods) %v, spreadAcrossNodes %v", w, spread, r.flag(component+".spreadAcrossNodes"))
		}
		c := spec.Containers[0]
		same(t, w.String()+" resources", c.Resources, v("resources"))
		same(t, w.String()+" container securityContext", c.SecurityContext, r.value("containerSecurityContext"))
		extra := convertValue[[]string](t, v("extraArgs"))
		if len(c.Args) < len(extra) || !slices.Equal(c.Args[len(c.Args)-len(extra):], extra) {
			t.Errorf("%s: arguments %v do not end with extraArgs %v", w, c.Args, extra)
		}
		if image := v("image"); image != "" && c.Image != image {
			t.Errorf("%s: image %s, the values say %s", w, c.Image, image)
		}
		argsMatchValues(t, r, w, c, argValues[component])
	}
	for _, w := range r.workloads(t) {
		if w.kind != "Job" {
			continue
		}
		spec := w.template.Spec
		same(t, w.String()+" nodeSelector", spec.NodeSelector, r.value("installJobs.nodeSelector"))
		same(t, w.String()+" tolerations", spec.Tolerations, r.value("installJobs.tolerations"))
		same(t, w.String()+" resources", spec.Containers[0].Resources, r.value("installJobs.resources"))
		same(t, w.String()+" pod securityContext", spec.SecurityContext, r.value("podSecurityContext"))
		same(t, w.String()+" container securityContext", spec.Containers[0].SecurityContext, r.value("containerSecurityContext"))
		same(t, w.String()+" activeDeadlineSeconds", typed[batchv1.Job](t, w.obj).Spec.ActiveDeadlineSeconds, r.value("installJobs.activeDeadlineSeconds"))
	}
}

func emptyToNil(v any) any {
	if m, ok := v.(map[string]any); ok && len(m) == 0 {
		return nil
	}
	return v
}

// argValues are the flags each binary takes from a value, with how the two compare.
var argValues = map[string]map[string]string{
	"webhook": {
		"reservation-ttl":  "webhook.reservationTTL",
		"decision-timeout": "webhook.decisionTimeout",
		"kube-api-qps":     "webhook.kubeAPIQPS",
		"kube-api-burst":   "webhook.kubeAPIBurst",
		"v":                "webhook.logVerbosity",
	},
	"controller": {
		"leader-elect-resource-namespace": "karmada.namespace",
		"leader-elect-lease-duration":     "controller.leaderElection.leaseDuration",
		"leader-elect-renew-deadline":     "controller.leaderElection.renewDeadline",
		"leader-elect-retry-period":       "controller.leaderElection.retryPeriod",
		"resync-period":                   "controller.resyncPeriod",
		"workers":                         "controller.workers",
		"requeue-cooldown":                "controller.requeueCooldown",
		"kube-api-qps":                    "controller.kubeAPIQPS",
		"kube-api-burst":                  "controller.kubeAPIBurst",
		"v":                               "controller.logVerbosity",
	},
}

func argsMatchValues(t reporter, r *rendering, w workload, c corev1.Container, want map[string]string) {
	t.Helper()
	args := flags(c)
	if w.component == "webhook" {
		// Optional: rendered only when kinds are exempt.
		exempt, _ := r.value("webhook.exemptKinds").([]any)
		var kinds []string
		for _, k := range exempt {
			kinds = append(kinds, fmt.Sprint(k))
		}
		if got, want := strings.Join(args["exempt-kinds"], ","), strings.Join(kinds, ","); got != want {
			t.Errorf("%s: --exempt-kinds=%q, webhook.exemptKinds is %q", w, got, want)
		}
	}
	for flag, path := range want {
		got := args[flag]
		if len(got) == 0 {
			t.Errorf("%s: no --%s for %s", w, flag, path)
			continue
		}
		value := fmt.Sprint(r.value(path))
		if got[0] == value {
			continue
		}
		// Durations may be written differently ("2m" and "2m0s").
		if a, errA := time.ParseDuration(got[0]); errA == nil {
			if b, errB := time.ParseDuration(value); errB == nil && a == b {
				continue
			}
		}
		t.Errorf("%s: --%s=%s, the value %s is %s", w, flag, got[0], path, value)
	}
}

// Each toggle renders what it says, and nothing when off.
func TestTogglesRenderWhatTheySay(t *testing.T) { forEachRendering(t, checkTogglesRenderWhatTheySay) }

func checkTogglesRenderWhatTheySay(t reporter, r *rendering) {
	// PodDisruptionBudgets, one per component when on, with the values' minAvailable.
	for _, component := range []string{"webhook", "controller"} {
		w := r.deployment(t, component)
		var pdbs []*policyv1.PodDisruptionBudget
		for _, obj := range ofKind(r.Host, "PodDisruptionBudget") {
			if pdb := typed[policyv1.PodDisruptionBudget](t, obj); selects(pdb.Spec.Selector, w.template.Labels) {
				pdbs = append(pdbs, pdb)
			}
		}
		if on := r.flag(component + ".podDisruptionBudget.enabled"); on != (len(pdbs) == 1) {
			t.Errorf("%s: %d PodDisruptionBudgets with podDisruptionBudget.enabled %v", w, len(pdbs), on)
		} else if on {
			same(t, w.String()+" PodDisruptionBudget minAvailable", pdbs[0].Spec.MinAvailable,
				convertValue[*intstr.IntOrString](t, r.value(component+".podDisruptionBudget.minAvailable")))
		}
	}

	// ServiceMonitors: one per component, labelled and timed as the values say.
	monitors := ofKind(r.Host, "ServiceMonitor")
	if on := r.flag("monitoring.serviceMonitor.enabled"); on != (len(monitors) > 0) {
		t.Errorf("%d ServiceMonitors with monitoring.serviceMonitor.enabled %v", len(monitors), on)
	}
	for _, sm := range monitors {
		hasLabels(t, sm, r.value("monitoring.serviceMonitor.labels"))
		endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
		for _, e := range endpoints {
			e := e.(map[string]any)
			if e["interval"] != r.str("monitoring.serviceMonitor.interval") || e["scrapeTimeout"] != r.str("monitoring.serviceMonitor.scrapeTimeout") {
				t.Errorf("ServiceMonitor %s scrapes every %v within %v, the values say %s within %s", sm.GetName(), e["interval"], e["scrapeTimeout"],
					r.str("monitoring.serviceMonitor.interval"), r.str("monitoring.serviceMonitor.scrapeTimeout"))
			}
		}
	}

	// The PrometheusRule, with rules in it.
	rules := ofKind(r.Host, "PrometheusRule")
	if on := r.flag("monitoring.prometheusRule.enabled"); on != (len(rules) == 1) {
		t.Errorf("%d PrometheusRules with monitoring.prometheusRule.enabled %v", len(rules), on)
	}
	for _, rule := range rules {
		hasLabels(t, rule, r.value("monitoring.prometheusRule.labels"))
		if groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups"); len(groups) == 0 {
			t.Errorf("PrometheusRule %s has no rule groups", rule.GetName())
		}
	}

	// The dashboards' ConfigMap: labelled for the Grafana sidecar, where the values put it, holding JSON.
	var dashboards []*unstructured.Unstructured
	for _, cm := range ofKind(r.Host, "ConfigMap") {
		if strings.HasSuffix(cm.GetName(), "-dashboard") || strings.HasSuffix(cm.GetName(), "-dashboards") {
			dashboards = append(dashboards, cm)
		}
	}
	if on := r.flag("monitoring.dashboards.enabled"); on != (len(dashboards) > 0) {
		t.Errorf("%d dashboard ConfigMaps with monitoring.dashboards.enabled %v", len(dashboards), on)
	}
	for _, cm := range dashboards {
		hasLabels(t, cm, r.value("monitoring.dashboards.labels"))
		for key, value := range convertValue[map[string]string](t, r.value("monitoring.dashboards.annotations")) {
			if cm.GetAnnotations()[key] != value {
				t.Errorf("ConfigMap %s: annotation %s=%q, the values say %q", cm.GetName(), key, cm.GetAnnotations()[key], value)
			}
		}
		if want := r.str("monitoring.dashboards.namespace"); want != "" && cm.GetNamespace() != want {
			t.Errorf("ConfigMap %s is in %s, the values say %s", cm.GetName(), cm.GetNamespace(), want)
		}
		data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
		if len(data) == 0 {
			t.Errorf("ConfigMap %s holds no dashboard", cm.GetName())
		}
		for key, dashboard := range data {
			if !json.Valid([]byte(dashboard)) {
				t.Errorf("ConfigMap %s: %s is not JSON", cm.GetName(), key)
			}
		}
	}

	// Business roles in the karmada-apiserver: read access to quotas, and to bindings, aggregated into view.
	quotas, bindings := false, false
	for _, obj := range ofKind(r.Karmada, "ClusterRole") {
		role := typed[rbacv1.ClusterRole](t, obj)
		if role.Labels["rbac.authorization.k8s.io/aggregate-to-view"] != "true" {
			continue
		}
		for _, rule := range role.Rules {
			quotas = quotas || slices.Contains(rule.Resources, "karmadaquotas")
			bindings = bindings || slices.Contains(rule.Resources, "resourcebindings")
			if slices.ContainsFunc(rule.Verbs, func(v string) bool { return !slices.Contains([]string{"get", "list", "watch"}, v) }) {
				t.Errorf("ClusterRole %s aggregated into view grants %v: business teams only read", role.Name, rule.Verbs)
			}
		}
	}
	if on := r.flag("businessRoles.enabled"); quotas != on {
		t.Errorf("view reads quotas: %v, with businessRoles.enabled %v", quotas, on)
	}
	if on := r.flag("businessRoles.enabled") && r.flag("businessRoles.readResourceBindings"); bindings != on {
		t.Errorf("view reads bindings: %v, with businessRoles enabled and readResourceBindings %v", bindings, on)
	}

	// Certificates: cert-manager's, with the chart's own issuers only when the values name none.
	certificates, issuers := ofKind(r.Host, "Certificate"), ofKind(r.Host, "Issuer")
	certManager := r.str("certificates.mode") == install.CertificatesCertManager
	if certManager != (len(certificates) > 0) {
		t.Errorf("%d Certificates in mode %s", len(certificates), r.str("certificates.mode"))
	}
	issuerRef := convertValue[map[string]string](t, r.value("certificates.certManager.issuerRef"))
	if want := certManager && len(issuerRef) == 0; want != (len(issuers) > 0) {
		t.Errorf("%d Issuers in mode %s with issuerRef %v", len(issuers), r.str("certificates.mode"), issuerRef)
	}
	if certManager && len(issuerRef) > 0 {
		got, _, _ := unstructured.NestedStringMap(servingCertificate(t, r).Object, "spec", "issuerRef")
		if !maps.Equal(got, issuerRef) {
			t.Errorf("the serving Certificate's issuer is %v, the values say %v", got, issuerRef)
		}
	}
	if certManager {
		cert := servingCertificate(t, r)
		for field, path := range map[string]string{"duration": "certificates.certManager.duration", "renewBefore": "certificates.certManager.renewBefore"} {
			got, _, _ := unstructured.NestedString(cert.Object, "spec", field)
			if duration(t, got) != duration(t, r.str(path)) {
				t.Errorf("the serving Certificate's %s is %s, the values say %s", field, got, r.str(path))
			}
		}
	}
	dnsNames := r.Config.Certificates.DNSNames
	if certManager {
		dnsNames, _, _ = unstructured.NestedStringSlice(servingCertificate(t, r).Object, "spec", "dnsNames")
	}
	if !slices.ContainsFunc(dnsNames, func(n string) bool { return strings.HasSuffix(n, ".svc."+r.str("clusterDomain")) }) {
		t.Errorf("the serving certificate names %v, none in the cluster domain %s", dnsNames, r.str("clusterDomain"))
	}

	// The components' kubeconfig: their own identity's, or the admin one the values name, with its key.
	for _, component := range []string{"webhook", "controller"} {
		w := r.deployment(t, component)
		var kubeconfig *corev1.SecretVolumeSource
		for _, v := range w.template.Spec.Volumes {
			if v.Secret != nil && slices.ContainsFunc(v.Secret.Items, func(i corev1.KeyToPath) bool { return i.Path == "kubeconfig" }) {
				kubeconfig = v.Secret
			}
		}
		if kubeconfig == nil {
			t.Errorf("%s mounts no kubeconfig", w)
			continue
		}
		wantSecret, wantKey := r.str("karmada.kubeconfigSecret.name"), r.str("karmada.kubeconfigSecret.key")
		if r.flag("karmada.leastPrivilegeIdentities") {
			wantKey = install.KubeconfigKey
			wantSecret = ""
			for _, id := range r.Config.Identities {
				if strings.HasSuffix(id.ServiceAccount, component) {
					wantSecret = id.KubeconfigSecret
				}
			}
		}
		if kubeconfig.SecretName != wantSecret || kubeconfig.Items[0].Key != wantKey {
			t.Errorf("%s reads its kubeconfig from %s[%s], want %s[%s]", w, kubeconfig.SecretName, kubeconfig.Items[0].Key, wantSecret, wantKey)
		}
	}

	// Names: the fullname the values or the release give.
	fullname := r.str("fullnameOverride")
	if fullname == "" {
		fullname = r.release
		if !strings.Contains(fullname, "karmada-quota") {
			fullname += "-karmada-quota"
		}
	}
	for _, obj := range r.all() {
		if obj.GetNamespace() == namespace && !strings.HasPrefix(obj.GetName(), fullname+"-") && obj.GetName() != fullname {
			t.Errorf("%s %s is not named after the installation's %q", obj.GetKind(), obj.GetName(), fullname)
		}
	}
}

func hasLabels(t reporter, obj *unstructured.Unstructured, values any) {
	t.Helper()
	for key, value := range convertValue[map[string]string](t, values) {
		if obj.GetLabels()[key] != value {
			t.Errorf("%s %s: label %s=%q, the values say %q", obj.GetKind(), obj.GetName(), key, obj.GetLabels()[key], value)
		}
	}
}
