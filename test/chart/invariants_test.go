package chart

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"

	"github.com/karmada-quota/karmada-quota/operator/pkg/install"
)

// Every volume a container mounts exists, every volume is mounted, and every Secret and ConfigMap a pod reads is one
// the installation provides, with the keys the pod asks for: rendered by the chart, written by a cert-manager
// Certificate of the chart, created by the install phases (names in the install configuration), or the admin
// kubeconfig Secret named in the values. A pod waiting on a Secret nobody creates never starts.
func TestPodsReadOnlyWhatExists(t *testing.T) { forEachRendering(t, checkPodsReadOnlyWhatExists) }

func checkPodsReadOnlyWhatExists(t reporter, r *rendering) {
	secrets := r.secretSources(t)
	configMaps := map[string]sets.Set[string]{}
	for _, obj := range ofKind(r.all(), "ConfigMap") {
		cm := typed[corev1.ConfigMap](t, obj)
		configMaps[cm.Name] = sets.KeySet(cm.Data).Union(sets.KeySet(cm.BinaryData))
	}
	for _, w := range r.workloads(t) {
		spec := &w.template.Spec
		volumes := map[string]corev1.Volume{}
		for _, v := range spec.Volumes {
			volumes[v.Name] = v
		}
		mounted := sets.New[string]()
		for _, c := range containers(spec) {
			for _, m := range c.VolumeMounts {
				mounted.Insert(m.Name)
				if _, ok := volumes[m.Name]; !ok {
					t.Errorf("%s: container %s mounts volume %q, which the pod does not have", w, c.Name, m.Name)
				}
			}
			for _, env := range c.Env {
				if ref := env.ValueFrom; ref != nil && ref.SecretKeyRef != nil {
					checkSource(t, w, "Secret", secrets, ref.SecretKeyRef.Name, []string{ref.SecretKeyRef.Key})
				}
				if ref := env.ValueFrom; ref != nil && ref.ConfigMapKeyRef != nil {
					checkSource(t, w, "ConfigMap", configMaps, ref.ConfigMapKeyRef.Name, []string{ref.ConfigMapKeyRef.Key})
				}
			}
			for _, from := range c.EnvFrom {
				if from.SecretRef != nil {
					checkSource(t, w, "Secret", secrets, from.SecretRef.Name, nil)
				}
				if from.ConfigMapRef != nil {
					checkSource(t, w, "ConfigMap", configMaps, from.ConfigMapRef.Name, nil)
				}
			}
		}
		for _, v := range spec.Volumes {
			if !mounted.Has(v.Name) {
				t.Errorf("%s: volume %q is mounted by no container", w, v.Name)
			}
			switch {
			case v.Secret != nil:
				checkSource(t, w, "Secret", secrets, v.Secret.SecretName, itemKeys(v.Secret.Items))
			case v.ConfigMap != nil:
				checkSource(t, w, "ConfigMap", configMaps, v.ConfigMap.Name, itemKeys(v.ConfigMap.Items))
			case v.Projected != nil:
				for _, s := range v.Projected.Sources {
					if s.Secret != nil {
						checkSource(t, w, "Secret", secrets, s.Secret.Name, itemKeys(s.Secret.Items))
					}
					if s.ConfigMap != nil {
						checkSource(t, w, "ConfigMap", configMaps, s.ConfigMap.Name, itemKeys(s.ConfigMap.Items))
					}
				}
			default:
				t.Errorf("%s: volume %q is neither a Secret nor a ConfigMap; the chart mounts nothing else", w, v.Name)
			}
		}
	}
}

func itemKeys(items []corev1.KeyToPath) []string {
	var keys []string
	for _, item := range items {
		keys = append(keys, item.Key)
	}
	return keys
}

func checkSource(t reporter, w workload, kind string, sources map[string]sets.Set[string], name string, keys []string) {
	t.Helper()
	have, ok := sources[name]
	if !ok {
		t.Errorf("%s reads %s %q, which nothing in the installation creates", w, kind, name)
		return
	}
	for _, key := range keys {
		if !have.Has(key) {
			t.Errorf("%s reads key %q of %s %q, which holds only %v", w, key, kind, name, sets.List(have))
		}
	}
}

// tlsKeys are what a kubernetes.io/tls Secret written by cert-manager or by karmada-quota holds.
var tlsKeys = sets.New("tls.crt", "tls.key", "ca.crt")

// secretSources maps each Secret the installation provides in the host namespace to the keys it holds.
func (r *rendering) secretSources(t reporter) map[string]sets.Set[string] {
	t.Helper()
	out := map[string]sets.Set[string]{}
	for _, obj := range ofKind(r.all(), "Secret") {
		s := typed[corev1.Secret](t, obj)
		out[s.Name] = sets.KeySet(s.Data).Union(sets.KeySet(s.StringData))
	}
	for _, obj := range ofKind(r.all(), "Certificate") {
		if secret, _, _ := unstructured.NestedString(obj.Object, "spec", "secretName"); secret != "" {
			out[secret] = tlsKeys
		}
	}
	for _, id := range r.Config.Identities {
		out[id.KubeconfigSecret] = sets.New(install.KubeconfigKey)
	}
	if r.Config.Certificates.Mode == install.CertificatesSelfManaged {
		// The prepare phase issues the serving certificate. The CA's Secret is deliberately absent: no pod may
		// mount the CA's key.
		out[r.Config.Certificates.ServingSecret] = tlsKeys
	}
	out[r.str("karmada.kubeconfigSecret.name")] = sets.New(r.str("karmada.kubeconfigSecret.key"))
	return out
}

// Each component runs its own image, <registry>/<component>:<tag>, pulled as the values say.
func TestImages(t *testing.T) { forEachRendering(t, checkImages) }

func checkImages(t reporter, r *rendering) {
	images := map[string]string{"webhook": "quota-webhook", "controller": "quota-controller", "installer": "karmada-quota-operator"}
	tag := r.str("image.tag")
	if tag == "" {
		tag = "v" + r.chart.Metadata.AppVersion
	}
	registry := strings.TrimSuffix(r.str("image.registry"), "/")
	var pullSecrets []corev1.LocalObjectReference
	for _, s := range asList(r.value("imagePullSecrets")) {
		pullSecrets = append(pullSecrets, corev1.LocalObjectReference{Name: fmt.Sprint(s.(map[string]any)["name"])})
	}
	seen := sets.New[string]()
	for _, w := range r.workloads(t) {
		override := ""
		if w.component == "webhook" || w.component == "controller" {
			override = r.str(w.component + ".image")
		}
		component, ok := images[w.component]
		if !ok {
			t.Errorf("%s: unknown component %q", w, w.component)
			continue
		}
		seen.Insert(w.component)
		for _, c := range containers(&w.template.Spec) {
			want := fmt.Sprintf("%s/%s:%s", registry, component, tag)
			if override != "" {
				want = override // A whole reference the values give instead.
			}
			if c.Image != want {
				t.Errorf("%s: container %s runs %q, want %q", w, c.Name, c.Image, want)
			}
			if _, err := name.ParseReference(c.Image, name.StrictValidation); err != nil {
				t.Errorf("%s: container %s: image %q: %v", w, c.Name, c.Image, err)
			}
			if string(c.ImagePullPolicy) != r.str("image.pullPolicy") {
				t.Errorf("%s: container %s pulls %s, want %s", w, c.Name, c.ImagePullPolicy, r.str("image.pullPolicy"))
			}
		}
		if !slices.Equal(w.template.Spec.ImagePullSecrets, pullSecrets) {
			t.Errorf("%s: imagePullSecrets %v, want %v", w, w.template.Spec.ImagePullSecrets, pullSecrets)
		}
	}
	for component := range images {
		if !seen.Has(component) {
			t.Errorf("nothing runs the %s", component)
		}
	}
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// Every Service selects pods of the installation and sends each port to a port those pods declare; every
// ServiceMonitor selects a Service and scrapes a port it has.
func TestServicesReachDeclaredPorts(t *testing.T) {
	forEachRendering(t, checkServicesReachDeclaredPorts)
}

func checkServicesReachDeclaredPorts(t reporter, r *rendering) {
	services := map[string]*corev1.Service{}
	for _, obj := range ofKind(r.all(), "Service") {
		svc := typed[corev1.Service](t, obj)
		services[svc.Name] = svc
		var selected []workload
		for _, w := range r.workloads(t) {
			if w.kind == "Deployment" && w.namespace == svc.Namespace &&
				selects(&metav1.LabelSelector{MatchLabels: svc.Spec.Selector}, w.template.Labels) {
				selected = append(selected, w)
			}
		}
		if len(selected) == 0 {
			t.Errorf("Service %s selects no pods of the installation", svc.Name)
		}
		for _, port := range svc.Spec.Ports {
			for _, w := range selected {
				if !declaresPort(w.template.Spec, port.TargetPort, port.Protocol) {
					t.Errorf("Service %s port %s: target port %s is not declared by the pods of %s", svc.Name, port.Name, port.TargetPort.String(), w)
				}
			}
		}
	}
	for _, sm := range ofKind(r.all(), "ServiceMonitor") {
		var selector metav1.LabelSelector
		if err := fromNested(sm, &selector, "spec", "selector"); err != nil {
			t.Fatal(err)
		}
		namespaces, _, _ := unstructured.NestedStringSlice(sm.Object, "spec", "namespaceSelector", "matchNames")
		if len(namespaces) == 0 {
			namespaces = []string{sm.GetNamespace()}
		}
		var selected []*corev1.Service
		for _, svc := range services {
			if slices.Contains(namespaces, svc.Namespace) && selects(&selector, svc.Labels) {
				selected = append(selected, svc)
			}
		}
		if len(selected) == 0 {
			t.Errorf("ServiceMonitor %s selects no Service of the installation", sm.GetName())
		}
		endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
		if len(endpoints) == 0 {
			t.Errorf("ServiceMonitor %s has no endpoints", sm.GetName())
		}
		for _, e := range endpoints {
			port, _ := e.(map[string]any)["port"].(string)
			for _, svc := range selected {
				if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == port }) {
					t.Errorf("ServiceMonitor %s scrapes port %q, which Service %s does not name", sm.GetName(), port, svc.Name)
				}
			}
		}
	}
}

func fromNested(obj *unstructured.Unstructured, into any, fields ...string) error {
	m, _, err := unstructured.NestedMap(obj.Object, fields...)
	if err != nil {
		return err
	}
	return runtimeConvert(m, into)
}

// declaresPort says whether a container of the pod declares the port a Service or probe targets.
func declaresPort(spec corev1.PodSpec, target intstr.IntOrString, protocol corev1.Protocol) bool {
	if protocol == "" {
		protocol = corev1.ProtocolTCP
	}
	for _, c := range spec.Containers {
		for _, p := range c.Ports {
			proto := p.Protocol
			if proto == "" {
				proto = corev1.ProtocolTCP
			}
			if proto != protocol {
				continue
			}
			if (target.Type == intstr.String && p.Name == target.StrVal) || (target.Type == intstr.Int && p.ContainerPort == target.IntVal) {
				return true
			}
		}
	}
	return false
}

// Hooks clean up after themselves, and a hook Job finds what it uses (its ServiceAccount, its RBAC, the ConfigMaps
// it mounts) created before it at every event it runs at: after an uninstall, the post-delete Job has nothing else.
func TestHooks(t *testing.T) { forEachRendering(t, checkHooks) }

func checkHooks(t reporter, r *rendering) {
	events := sets.New("pre-install", "post-install", "pre-upgrade", "post-upgrade", "pre-delete", "post-delete", "pre-rollback", "post-rollback", "test")
	policies := sets.New("before-hook-creation", "hook-succeeded", "hook-failed")
	hooks := map[string]hook{} // by kind/name
	for _, obj := range r.Hooks {
		h, _ := hookOf(t, obj)
		hooks[obj.GetKind()+"/"+obj.GetName()] = h
		what := obj.GetKind() + " " + obj.GetName()
		if len(h.events) == 0 || !events.HasAll(h.events...) {
			t.Errorf("%s: hook events %v", what, h.events)
		}
		if len(h.delete) == 0 {
			t.Errorf("%s: a hook without %s stays behind after it ran", what, hookDeleteAnnotation)
		}
		if !policies.HasAll(h.delete...) {
			t.Errorf("%s: delete policy %v", what, h.delete)
		}
		if !slices.Contains(h.delete, "before-hook-creation") {
			t.Errorf("%s: without before-hook-creation, a failed hook blocks the next attempt", what)
		}
	}
	for _, obj := range r.Host {
		if _, ok := obj.GetAnnotations()[hookDeleteAnnotation]; ok {
			t.Errorf("%s %s has a hook delete policy but is no hook", obj.GetKind(), obj.GetName())
		}
	}
	for _, w := range r.workloads(t) {
		job, isHook := hooks["Job/"+w.name]
		if w.kind != "Job" {
			continue
		}
		if !isHook {
			t.Errorf("%s is no hook: Helm would run it once, at install, and never wait for it", w)
			continue
		}
		needs := []string{"ServiceAccount/" + w.template.Spec.ServiceAccountName}
		for _, v := range w.template.Spec.Volumes {
			if v.ConfigMap != nil {
				needs = append(needs, "ConfigMap/"+v.ConfigMap.Name)
			}
		}
		for _, obj := range ofKind(r.Hooks, "RoleBinding") {
			rb := typed[rbacv1.RoleBinding](t, obj)
			if slices.ContainsFunc(rb.Subjects, func(s rbacv1.Subject) bool {
				return s.Kind == "ServiceAccount" && s.Name == w.template.Spec.ServiceAccountName
			}) {
				needs = append(needs, "RoleBinding/"+rb.Name, rb.RoleRef.Kind+"/"+rb.RoleRef.Name)
			}
		}
		for _, need := range needs {
			dep, ok := hooks[need]
			switch {
			case !ok:
				t.Errorf("%s uses %s, which is no hook of the chart", w, need)
			case !sets.New(dep.events...).HasAll(job.events...):
				t.Errorf("%s runs at %v but %s exists only at %v", w, job.events, need, dep.events)
			case dep.weight >= job.weight:
				t.Errorf("%s (weight %d) may start before %s (weight %d)", w, job.weight, need, dep.weight)
			}
		}
	}
}

// Each PodDisruptionBudget covers pods of the installation and leaves room for a drain to evict one of them.
func TestPodDisruptionBudgets(t *testing.T) { forEachRendering(t, checkPodDisruptionBudgets) }

func checkPodDisruptionBudgets(t reporter, r *rendering) {
	for _, obj := range ofKind(r.all(), "PodDisruptionBudget") {
		pdb := typed[policyv1.PodDisruptionBudget](t, obj)
		var covered []workload
		for _, w := range r.workloads(t) {
			if w.kind == "Deployment" && w.namespace == pdb.Namespace && selects(pdb.Spec.Selector, w.template.Labels) {
				covered = append(covered, w)
			}
		}
		if len(covered) == 0 {
			t.Errorf("PodDisruptionBudget %s covers no pods of the installation", pdb.Name)
		}
		for _, w := range covered {
			if pdb.Spec.MinAvailable == nil {
				continue
			}
			minAvailable, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MinAvailable, int(w.replicas), true)
			if err != nil {
				t.Errorf("PodDisruptionBudget %s: %v", pdb.Name, err)
			} else if minAvailable >= int(w.replicas) {
				t.Errorf("PodDisruptionBudget %s keeps %d of the %d pods of %s: no node drain could ever evict one", pdb.Name, minAvailable, w.replicas, w)
			}
		}
	}
}

// Every binding write in the federation waits on the webhook: an update must never take a serving replica away
// before its successor is ready.
func TestWebhookRolloutKeepsEveryReplica(t *testing.T) {
	forEachRendering(t, checkWebhookRolloutKeepsEveryReplica)
}

func checkWebhookRolloutKeepsEveryReplica(t reporter, r *rendering) {
	w := r.deployment(t, "webhook")
	d := typed[appsv1.Deployment](t, w.obj)
	if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || d.Spec.Strategy.RollingUpdate == nil {
		t.Fatalf("%s: strategy %+v, want a RollingUpdate", w, d.Spec.Strategy)
	}
	ru := d.Spec.Strategy.RollingUpdate
	if ru.MaxUnavailable == nil {
		t.Fatalf("%s: maxUnavailable unset defaults to 25%%", w)
	}
	// Rounded up, as the strictest reading of a percentage.
	if unavailable, err := intstr.GetScaledValueFromIntOrPercent(ru.MaxUnavailable, int(w.replicas), true); err != nil || unavailable > 0 {
		t.Errorf("%s: maxUnavailable %s lets a rollout take %d replicas away (%v)", w, ru.MaxUnavailable.String(), unavailable, err)
	}
	if surge, err := intstr.GetScaledValueFromIntOrPercent(ru.MaxSurge, int(w.replicas), true); ru.MaxSurge == nil || err != nil || surge < 1 {
		t.Errorf("%s: maxSurge %v lets no rollout start", w, ru.MaxSurge)
	}
}

// Every pod meets the restricted Pod Security Standard (non-root, no privilege escalation, every capability dropped,
// RuntimeDefault seccomp, only restricted volume types), judged by the evaluator Pod Security Admission runs.
func TestPodsMeetTheRestrictedStandard(t *testing.T) {
	forEachRendering(t, checkPodsMeetTheRestrictedStandard)
}

func checkPodsMeetTheRestrictedStandard(t reporter, r *rendering) {
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	restricted := psaapi.LevelVersion{Level: psaapi.LevelRestricted, Version: psaapi.LatestVersion()}
	for _, w := range r.workloads(t) {
		for _, result := range evaluator.EvaluatePod(restricted, &w.template.ObjectMeta, &w.template.Spec) {
			if !result.Allowed {
				t.Errorf("%s breaks the restricted Pod Security Standard: %s (%s)", w, result.ForbiddenReason, result.ForbiddenDetail)
			}
		}
	}
}

// A Deployment's selector picks its own pods and no other workload's: two ReplicaSets owning the same pods fight.
func TestSelectorsAreDisjoint(t *testing.T) { forEachRendering(t, checkSelectorsAreDisjoint) }

func checkSelectorsAreDisjoint(t reporter, r *rendering) {
	workloads := r.workloads(t)
	for _, w := range workloads {
		if w.kind != "Deployment" {
			continue
		}
		d := typed[appsv1.Deployment](t, w.obj)
		if !selects(d.Spec.Selector, w.template.Labels) {
			t.Errorf("%s: the selector does not pick its own pods", w)
		}
		for _, other := range workloads {
			if other.obj != w.obj && other.namespace == w.namespace && selects(d.Spec.Selector, other.template.Labels) {
				t.Errorf("%s: the selector picks the pods of %s too", w, other)
			}
		}
	}
}

// Pods run as ServiceAccounts the chart creates, and every binding, in the host and in the karmada-apiserver, binds
// a role and service accounts that are installed alongside it.
func TestServiceAccountsAndBindings(t *testing.T) {
	forEachRendering(t, checkServiceAccountsAndBindings)
}

func checkServiceAccountsAndBindings(t reporter, r *rendering) {
	for plane, objects := range map[string][]*unstructured.Unstructured{"host": r.all(), "karmada-apiserver": r.Karmada} {
		have := sets.New[string]()
		for _, obj := range objects {
			have.Insert(obj.GetKind() + "/" + obj.GetNamespace() + "/" + obj.GetName())
		}
		for _, obj := range append(ofKind(objects, "RoleBinding"), ofKind(objects, "ClusterRoleBinding")...) {
			roleRef, _, _ := unstructured.NestedStringMap(obj.Object, "roleRef")
			roleNamespace := obj.GetNamespace()
			if roleRef["kind"] == "ClusterRole" {
				roleNamespace = ""
			}
			if !have.Has(roleRef["kind"] + "/" + roleNamespace + "/" + roleRef["name"]) {
				t.Errorf("%s %s %s binds %s %s, which the chart does not install there", plane, obj.GetKind(), obj.GetName(), roleRef["kind"], roleRef["name"])
			}
			subjects, _, _ := unstructured.NestedSlice(obj.Object, "subjects")
			if len(subjects) == 0 {
				t.Errorf("%s %s %s binds nobody", plane, obj.GetKind(), obj.GetName())
			}
			for _, s := range subjects {
				s := s.(map[string]any)
				if s["kind"] == "ServiceAccount" && !have.Has(fmt.Sprintf("ServiceAccount/%s/%s", s["namespace"], s["name"])) {
					t.Errorf("%s %s %s binds ServiceAccount %s/%s, which the chart does not install there", plane, obj.GetKind(), obj.GetName(), s["namespace"], s["name"])
				}
			}
		}
	}
	for _, w := range r.workloads(t) {
		sa := w.template.Spec.ServiceAccountName
		if sa == "" || len(ofKind(r.all(), "ServiceAccount")) == 0 {
			t.Errorf("%s runs as the namespace's default ServiceAccount", w)
			continue
		}
		found := slices.ContainsFunc(ofKind(r.all(), "ServiceAccount"), func(o *unstructured.Unstructured) bool {
			return o.GetName() == sa && o.GetNamespace() == w.namespace
		})
		if !found {
			t.Errorf("%s runs as ServiceAccount %s, which the chart does not create", w, sa)
		}
	}
}

// What the install phases read agrees with the objects they act on: the Deployment register waits for, the URL the
// webhook configuration will call, the certificate names, the identities the components run as.
func TestInstallConfigAgreesWithTheObjects(t *testing.T) {
	forEachRendering(t, checkInstallConfigAgreesWithTheObjects)
}

func checkInstallConfigAgreesWithTheObjects(t reporter, r *rendering) {
	c := r.Config
	if c.Namespace != namespace {
		t.Errorf("config namespace %q, want the release's %q", c.Namespace, namespace)
	}
	if c.Karmada.Namespace != r.str("karmada.namespace") {
		t.Errorf("config karmada.namespace %q, want %q", c.Karmada.Namespace, r.str("karmada.namespace"))
	}
	webhook := r.deployment(t, "webhook")
	if c.Webhook.Deployment != webhook.name {
		t.Errorf("register waits for Deployment %q, but the webhook's is %q", c.Webhook.Deployment, webhook.name)
	}
	if fmt.Sprint(c.Webhook.TimeoutSeconds) != fmt.Sprint(r.value("webhook.timeoutSeconds")) {
		t.Errorf("timeoutSeconds %d, want the value %v", c.Webhook.TimeoutSeconds, r.value("webhook.timeoutSeconds"))
	}

	// The URL: https://<Service>.<namespace>.svc:<port>, a port of the webhook's Service sent to its webhook port.
	u, err := url.Parse(c.Webhook.URL)
	if err != nil {
		t.Fatal(err)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		t.Fatalf("webhook URL %q: %v", c.Webhook.URL, err)
	}
	labels := strings.Split(host, ".")
	if len(labels) != 3 || labels[1] != namespace || labels[2] != "svc" {
		t.Fatalf("webhook URL host %q, want <service>.%s.svc", host, namespace)
	}
	svc := findService(t, r, labels[0])
	servicePort := slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return strconv.Itoa(int(p.Port)) == port })
	if servicePort < 0 {
		t.Fatalf("webhook URL %q: Service %s has no port %s", c.Webhook.URL, svc.Name, port)
	}
	if target := svc.Spec.Ports[servicePort].TargetPort; !selects(&metav1.LabelSelector{MatchLabels: svc.Spec.Selector}, webhook.template.Labels) ||
		!declaresPort(webhook.template.Spec, target, corev1.ProtocolTCP) {
		t.Errorf("webhook URL %q: Service %s port %s does not lead to the webhook's pods", c.Webhook.URL, svc.Name, port)
	}
	for _, p := range webhook.template.Spec.Containers[0].Ports {
		if p.Name == "webhook" && svc.Spec.Ports[servicePort].TargetPort.String() != "webhook" && svc.Spec.Ports[servicePort].TargetPort.IntVal != p.ContainerPort {
			t.Errorf("webhook URL %q reaches port %s, not the webhook port", c.Webhook.URL, svc.Spec.Ports[servicePort].TargetPort.String())
		}
	}

	// The serving certificate: the Secret the webhook mounts, named for the URL's host.
	if c.Certificates.Mode != r.str("certificates.mode") {
		t.Errorf("certificates.mode %q, want %q", c.Certificates.Mode, r.str("certificates.mode"))
	}
	servingVolume := slices.IndexFunc(webhook.template.Spec.Volumes, func(v corev1.Volume) bool {
		return v.Secret != nil && v.Secret.SecretName == c.Certificates.ServingSecret
	})
	if servingVolume < 0 {
		t.Errorf("the webhook does not mount the serving Secret %s", c.Certificates.ServingSecret)
	}
	dnsNames := c.Certificates.DNSNames
	if c.Certificates.Mode == install.CertificatesCertManager {
		cert := servingCertificate(t, r)
		dnsNames, _, _ = unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
	}
	if !slices.Contains(dnsNames, host) {
		t.Errorf("the serving certificate names %v, not the URL's host %s", dnsNames, host)
	}

	// Identities: one per component, in the karmada-apiserver, bound to its role; the component mounts its Secret.
	if got, want := len(c.Identities) > 0, r.flag("karmada.leastPrivilegeIdentities"); got != want {
		t.Errorf("identities %v with leastPrivilegeIdentities %v", c.Identities, want)
	}
	for _, id := range c.Identities {
		if !slices.ContainsFunc(ofKind(r.Karmada, "ServiceAccount"), func(o *unstructured.Unstructured) bool {
			return o.GetName() == id.ServiceAccount && o.GetNamespace() == c.Karmada.Namespace
		}) {
			t.Errorf("identity %s has no ServiceAccount in %s of the karmada-apiserver", id.ServiceAccount, c.Karmada.Namespace)
		}
		mountedBy := 0
		for _, w := range r.workloads(t) {
			for _, v := range w.template.Spec.Volumes {
				if v.Secret != nil && v.Secret.SecretName == id.KubeconfigSecret {
					mountedBy++
				}
			}
		}
		if mountedBy != 1 {
			t.Errorf("identity Secret %s is mounted by %d workloads, want its component's", id.KubeconfigSecret, mountedBy)
		}
	}
	if c.Uninstall.RemoveCRD != r.flag("uninstall.removeCRD") {
		t.Errorf("uninstall.removeCRD %v, want %v", c.Uninstall.RemoveCRD, r.flag("uninstall.removeCRD"))
	}
	if c.Certificates.Mode == install.CertificatesSelfManaged {
		if got, want := c.Certificates.Validity.Duration, duration(t, r.str("certificates.selfManaged.validity")); got != want {
			t.Errorf("certificate validity %s, want %s", got, want)
		}
		if got, want := c.Certificates.CAValidity.Duration, duration(t, r.str("certificates.selfManaged.caValidity")); got != want {
			t.Errorf("CA validity %s, want %s", got, want)
		}
	}
}

func duration(t reporter, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func findService(t reporter, r *rendering, name string) *corev1.Service {
	t.Helper()
	for _, obj := range ofKind(r.Host, "Service") {
		if obj.GetName() == name {
			return typed[corev1.Service](t, obj)
		}
	}
	t.Fatalf("no Service %s", name)
	return nil
}

// servingCertificate is the cert-manager Certificate that writes the serving Secret.
func servingCertificate(t reporter, r *rendering) *unstructured.Unstructured {
	t.Helper()
	for _, obj := range ofKind(r.Host, "Certificate") {
		if secret, _, _ := unstructured.NestedString(obj.Object, "spec", "secretName"); secret == r.Config.Certificates.ServingSecret {
			return obj
		}
	}
	t.Fatalf("no Certificate writes the serving Secret %s", r.Config.Certificates.ServingSecret)
	return nil
}

// What cert-manager's webhook checks beyond its CRD's schema, for the Certificates the chart renders; and each
// Certificate's issuer is one the chart renders or the one the values name.
func TestCertificatesAreAcceptedByCertManager(t *testing.T) {
	forEachRendering(t, checkCertificatesAreAcceptedByCertManager)
}

func checkCertificatesAreAcceptedByCertManager(t reporter, r *rendering) {
	issuers := sets.New[string]()
	for _, obj := range ofKind(r.Host, "Issuer") {
		issuers.Insert(obj.GetName())
	}
	for _, obj := range ofKind(r.Host, "Certificate") {
		what := "Certificate " + obj.GetName()
		spec, _, _ := unstructured.NestedMap(obj.Object, "spec")
		d, _ := time.ParseDuration(fmt.Sprint(spec["duration"]))
		if spec["duration"] != nil && d < time.Hour {
			t.Errorf("%s: duration %v is below cert-manager's minimum of 1h", what, spec["duration"])
		}
		if rb, ok := spec["renewBefore"]; ok {
			renewBefore, _ := time.ParseDuration(fmt.Sprint(rb))
			if renewBefore < 5*time.Minute || (spec["duration"] != nil && renewBefore >= d) {
				t.Errorf("%s: renewBefore %v must be at least 5m and below duration %v", what, rb, spec["duration"])
			}
		}
		ref, _, _ := unstructured.NestedStringMap(obj.Object, "spec", "issuerRef")
		own := (ref["kind"] == "" || ref["kind"] == "Issuer") && (ref["group"] == "" || ref["group"] == "cert-manager.io") && issuers.Has(ref["name"])
		fromValues := ref["name"] == r.str("certificates.certManager.issuerRef.name")
		if !own && !fromValues {
			t.Errorf("%s: issuer %v is neither rendered by the chart nor named in the values", what, ref)
		}
	}
	if r.str("certificates.mode") == install.CertificatesCertManager {
		servingCertificate(t, r)
	}
}

// Host objects carry Helm's standard labels for the release; karmada-apiserver objects carry the labels cleanup and
// the operator find them by.
func TestLabels(t *testing.T) { forEachRendering(t, checkLabels) }

func checkLabels(t reporter, r *rendering) {
	want := map[string]string{
		"app.kubernetes.io/name":       "karmada-quota",
		"app.kubernetes.io/instance":   r.release,
		"app.kubernetes.io/managed-by": "Helm",
		"app.kubernetes.io/part-of":    "karmada-quota",
	}
	for _, obj := range r.all() {
		for k, v := range want {
			if obj.GetLabels()[k] != v {
				t.Errorf("%s %s: label %s=%q, want %q", obj.GetKind(), obj.GetName(), k, obj.GetLabels()[k], v)
			}
		}
	}
	if r.Config.Labels["app.kubernetes.io/instance"] != r.release {
		t.Errorf("install labels %v do not name the release", r.Config.Labels)
	}
	for _, obj := range r.Karmada {
		for k, v := range r.Config.Labels {
			if obj.GetLabels()[k] != v {
				t.Errorf("karmada-apiserver %s %s: label %s=%q, want %q: cleanup would not find it", obj.GetKind(), obj.GetName(), k, obj.GetLabels()[k], v)
			}
		}
	}
	for _, w := range r.workloads(t) {
		for _, k := range []string{"app.kubernetes.io/name", "app.kubernetes.io/instance", componentLabel} {
			if w.template.Labels[k] == "" {
				t.Errorf("%s: pods lack label %s", w, k)
			}
		}
	}
}

// Host objects live in the release namespace (the dashboards' ConfigMap where the values put it), karmada-apiserver
// objects in karmada.namespace.
func TestNamespaces(t *testing.T) { forEachRendering(t, checkNamespaces) }

func checkNamespaces(t reporter, r *rendering) {
	dashboards := r.str("monitoring.dashboards.namespace")
	for _, obj := range r.all() {
		ns := obj.GetNamespace()
		if ns != namespace && !(ns == dashboards && obj.GetKind() == "ConfigMap") {
			t.Errorf("%s %s is in namespace %q, not the release's", obj.GetKind(), obj.GetName(), ns)
		}
	}
	for _, obj := range r.Karmada {
		if ns := obj.GetNamespace(); ns != "" && ns != r.str("karmada.namespace") {
			t.Errorf("karmada-apiserver %s %s is in namespace %q, not karmada.namespace %q", obj.GetKind(), obj.GetName(), ns, r.str("karmada.namespace"))
		}
	}
	for _, obj := range r.all() {
		for _, msg := range validation.IsDNS1123Label(obj.GetNamespace()) {
			t.Errorf("%s %s: namespace: %s", obj.GetKind(), obj.GetName(), msg)
		}
	}
}
