package controller

import (
	"encoding/json"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	operatorv1alpha1 "github.com/karmada-quota/karmada-quota/operator/api/v1alpha1"
)

// apiserverRequestTimeout is the karmada-apiserver's request timeout; a reservation must outlive it.
const apiserverRequestTimeout = 60 * time.Second

// validate checks what the CRD schema cannot: rules across fields, and the ones quota-webhook and
// quota-controller would refuse at start, so that a bad spec stops the operator before it changes anything
// instead of leaving pods in a crash loop.
func validate(spec *operatorv1alpha1.KarmadaQuotaInstallationSpec) field.ErrorList {
	var errs field.ErrorList
	webhook := field.NewPath("spec", "webhook")
	timeout := 10 * time.Second
	if spec.Webhook.TimeoutSeconds != nil {
		timeout = time.Duration(*spec.Webhook.TimeoutSeconds) * time.Second
	}
	if ttl := spec.Webhook.ReservationTTL; ttl != nil && ttl.Duration <= apiserverRequestTimeout {
		errs = append(errs, field.Invalid(webhook.Child("reservationTTL"), ttl.Duration.String(),
			"must exceed the karmada-apiserver's request timeout (60s), or a write could commit after its reservation lapsed"))
	}
	if d := spec.Webhook.DecisionTimeout; d != nil && (d.Duration <= 0 || d.Duration >= timeout) {
		errs = append(errs, field.Invalid(webhook.Child("decisionTimeout"), d.Duration.String(),
			fmt.Sprintf("must be positive and below the webhook's timeout (%s), so that a decision is answered, not cut off", timeout)))
	}
	if p := spec.Controller.ResyncPeriod; p != nil && p.Duration <= 0 {
		errs = append(errs, field.Invalid(field.NewPath("spec", "controller", "resyncPeriod"), p.Duration.String(), "must be positive"))
	}
	certs := field.NewPath("spec", "certificates")
	if sm := spec.Certificates.SelfManaged; sm != nil {
		validity, caValidity := 8760*time.Hour, 87600*time.Hour
		if sm.Validity != nil {
			validity = sm.Validity.Duration
		}
		if sm.CAValidity != nil {
			caValidity = sm.CAValidity.Duration
		}
		if validity < time.Minute {
			errs = append(errs, field.Invalid(certs.Child("selfManaged", "validity"), validity.String(), "must be at least 1m"))
		}
		if caValidity <= validity {
			errs = append(errs, field.Invalid(certs.Child("selfManaged", "caValidity"), caValidity.String(),
				"must be longer than the serving certificate's validity"))
		}
	}
	if cm := spec.Certificates.CertManager; cm != nil && cm.Duration != nil && cm.RenewBefore != nil && cm.RenewBefore.Duration >= cm.Duration.Duration {
		errs = append(errs, field.Invalid(certs.Child("certManager", "renewBefore"), cm.RenewBefore.Duration.String(), "must be shorter than duration"))
	}
	if ref := spec.Certificates.CertManager; ref != nil && ref.IssuerRef != nil && ref.IssuerRef.Kind != "" &&
		ref.IssuerRef.Kind != "Issuer" && ref.IssuerRef.Kind != "ClusterIssuer" {
		errs = append(errs, field.NotSupported(certs.Child("certManager", "issuerRef", "kind"), ref.IssuerRef.Kind, []string{"Issuer", "ClusterIssuer"}))
	}
	return errs
}

// values maps the spec onto the chart's values, so that the operator installs exactly what `helm install` with
// those values would. Only what the spec sets is passed: the chart's defaults are the operator's defaults.
func values(inst *operatorv1alpha1.KarmadaQuotaInstallation, version string) (map[string]any, error) {
	spec := &inst.Spec
	v := map[string]any{}
	set := func(path []string, value any) {
		m := v
		for _, k := range path[:len(path)-1] {
			next, ok := m[k].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[k] = next
			}
			m = next
		}
		m[path[len(path)-1]] = value
	}
	// Typed Kubernetes values (resources, affinity, ...) go through JSON, as the chart would read them from YAML.
	var err error
	setJSON := func(path []string, value any) {
		raw, e := json.Marshal(value)
		if e != nil {
			err = e
			return
		}
		var generic any
		if e := json.Unmarshal(raw, &generic); e != nil {
			err = e
			return
		}
		set(path, generic)
	}
	duration := func(d *metav1.Duration) string { return d.Duration.String() }

	set([]string{"karmada", "kubeconfigSecret", "name"}, spec.Karmada.KubeconfigSecretRef.Name)
	set([]string{"karmada", "kubeconfigSecret", "key"}, defaulted(spec.Karmada.KubeconfigSecretRef.Key, "kubeconfig"))
	set([]string{"karmada", "namespace"}, defaulted(spec.Karmada.Namespace, "karmada-system"))
	set([]string{"karmada", "leastPrivilegeIdentities"}, ptr.Deref(spec.Karmada.LeastPrivilegeIdentities, true))

	set([]string{"image", "tag"}, defaulted(spec.Version, version))
	if spec.Images.Registry != "" {
		set([]string{"image", "registry"}, spec.Images.Registry)
	}
	if spec.Images.PullPolicy != "" {
		set([]string{"image", "pullPolicy"}, string(spec.Images.PullPolicy))
	}
	if len(spec.Images.PullSecrets) > 0 {
		setJSON([]string{"imagePullSecrets"}, spec.Images.PullSecrets)
	}

	component := func(name string, c *operatorv1alpha1.Component) {
		if c.Image != "" {
			set([]string{name, "image"}, c.Image)
		}
		if c.Replicas != nil {
			set([]string{name, "replicas"}, int64(*c.Replicas))
		}
		if c.Resources != nil {
			setJSON([]string{name, "resources"}, c.Resources)
		}
		if len(c.NodeSelector) > 0 {
			setJSON([]string{name, "nodeSelector"}, c.NodeSelector)
		}
		if len(c.Tolerations) > 0 {
			setJSON([]string{name, "tolerations"}, c.Tolerations)
		}
		if c.Affinity != nil {
			setJSON([]string{name, "affinity"}, c.Affinity)
		}
		if len(c.TopologySpreadConstraints) > 0 {
			setJSON([]string{name, "topologySpreadConstraints"}, c.TopologySpreadConstraints)
		}
		if c.PriorityClassName != "" {
			set([]string{name, "priorityClassName"}, c.PriorityClassName)
		}
		if len(c.ExtraArgs) > 0 {
			setJSON([]string{name, "extraArgs"}, c.ExtraArgs)
		}
	}
	component("webhook", &spec.Webhook.Component)
	if spec.Webhook.ReservationTTL != nil {
		set([]string{"webhook", "reservationTTL"}, duration(spec.Webhook.ReservationTTL))
	}
	if spec.Webhook.DecisionTimeout != nil {
		set([]string{"webhook", "decisionTimeout"}, duration(spec.Webhook.DecisionTimeout))
	}
	if spec.Webhook.TimeoutSeconds != nil {
		set([]string{"webhook", "timeoutSeconds"}, int64(*spec.Webhook.TimeoutSeconds))
	}
	if len(spec.Webhook.ExemptKinds) > 0 {
		setJSON([]string{"webhook", "exemptKinds"}, spec.Webhook.ExemptKinds)
	}
	component("controller", &spec.Controller.Component)
	if spec.Controller.ResyncPeriod != nil {
		set([]string{"controller", "resyncPeriod"}, duration(spec.Controller.ResyncPeriod))
	}
	if spec.Controller.Workers != nil {
		set([]string{"controller", "workers"}, int64(*spec.Controller.Workers))
	}

	switch spec.Certificates.Mode {
	case operatorv1alpha1.CertificatesCertManager:
		set([]string{"certificates", "mode"}, "cert-manager")
	default:
		set([]string{"certificates", "mode"}, "self-managed")
	}
	if sm := spec.Certificates.SelfManaged; sm != nil {
		if sm.CAValidity != nil {
			set([]string{"certificates", "selfManaged", "caValidity"}, duration(sm.CAValidity))
		}
		if sm.Validity != nil {
			set([]string{"certificates", "selfManaged", "validity"}, duration(sm.Validity))
			// Checked often enough that a renewal happens well within the last third of the lifetime.
			set([]string{"certificates", "selfManaged", "checkInterval"}, (min(10*time.Minute, sm.Validity.Duration/10)).String())
		}
	}
	if cm := spec.Certificates.CertManager; cm != nil {
		if cm.IssuerRef != nil {
			ref := map[string]any{"name": cm.IssuerRef.Name, "kind": defaulted(cm.IssuerRef.Kind, "Issuer"), "group": defaulted(cm.IssuerRef.Group, "cert-manager.io")}
			set([]string{"certificates", "certManager", "issuerRef"}, ref)
		}
		if cm.Duration != nil {
			set([]string{"certificates", "certManager", "duration"}, duration(cm.Duration))
		}
		if cm.RenewBefore != nil {
			set([]string{"certificates", "certManager", "renewBefore"}, duration(cm.RenewBefore))
		}
	}

	for name, m := range map[string]operatorv1alpha1.MonitoringObject{
		"serviceMonitor": spec.Monitoring.ServiceMonitor, "prometheusRule": spec.Monitoring.PrometheusRule, "dashboards": spec.Monitoring.Dashboards,
	} {
		set([]string{"monitoring", name, "enabled"}, m.Enabled)
		if len(m.Labels) > 0 {
			setJSON([]string{"monitoring", name, "labels"}, m.Labels)
		}
	}
	set([]string{"businessRoles", "enabled"}, !spec.BusinessRoles.Disabled)
	set([]string{"businessRoles", "readResourceBindings"}, !spec.BusinessRoles.HideResourceBindings)
	set([]string{"uninstall", "removeCRD"}, spec.Uninstall.RemoveCRD)
	return v, err
}

func defaulted(value, fallback string) string {
	if value == "" {
		return fallback
	}
	return value
}
