package controller

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	operatorv1alpha1 "github.com/karmada-quota/karmada-quota/operator/api/v1alpha1"
	"github.com/karmada-quota/karmada-quota/operator/pkg/render"
)

func duration(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

func TestValidate(t *testing.T) {
	cases := map[string]struct {
		modify   func(spec *operatorv1alpha1.KarmadaQuotaInstallationSpec)
		wantErrs []string
	}{
		"an empty spec: every default fits": {
			modify: func(*operatorv1alpha1.KarmadaQuotaInstallationSpec) {},
		},
		"a reservation TTL just above the apiserver's request timeout": {
			modify: func(spec *operatorv1alpha1.KarmadaQuotaInstallationSpec) {
				spec.Webhook.ReservationTTL = duration(61 * time.Second)
			},
		},
		"a reservation TTL equal to the apiserver's request timeout": {
			modify: func(spec *operatorv1alpha1.KarmadaQuotaInstallationSpec) {
				spec.Webhook.ReservationTTL = duration(time.Minute)
			},
			wantErrs: []string{`spec.webhook.reservationTTL: Invalid value: "1m0s": must exceed the karmada-apiserver's request timeout (60s), or a write could commit after its reservation lapsed`},
		},
		"a decision timeout just below the default webhook timeout": {
			modify: func(spec *operatorv1alpha1.KarmadaQuotaInstallationSpec) {
				spec.Webhook.DecisionTimeout = duration(9 * time.Second)
			},
		},
		"a decision timeout equal to the default webhook timeout": {
			modify: func(spec *operatorv1alpha1.KarmadaQuotaInstallationSpec) {
				spec.Webhook.DecisionTimeout = duration(10 * time.Second)
			},
			wantErrs: []string{`spec.webhook.decisionTimeout: Invalid value: "10s": must be positive and below the webhook's timeout (10s), so that a decision is answered, not cut off`},
		},
		"a decision timeout below a raised webhook timeout": {
			modify: func(spec *operatorv1alpha1.KarmadaQuotaInstallationSpec) {
				spec.Webhook.TimeoutSeconds = ptr.To[int32](30)
				spec.Webhook.DecisionTimeout = duration(20 * time.Second)
			},
		},
		"a decision timeout above a lowered webhook timeout": {
			modify: func(spec *operatorv1alpha1.KarmadaQuotaInstallationSpec) {
				spec.Webhook.TimeoutSeconds = ptr.To[int32](5)
				spec.Webhook.DecisionTimeout = duration(8 * time.Second)
			},
			wantErrs: []string{`spec.webhook.decisionTimeout: Invalid value: "8s": must be positive and below the webhook's timeout (5s), so that a decision is answered, not cut off`},
		},
		"a zero decision timeout": {
			modify: func(spec *operatorv1alpha1.KarmadaQuotaInstallationSpec) {
				spec.Webhook.DecisionTimeout = duration(0)
			},
			wantErrs: []string{`spec.webhook.decisionTimeout: Invalid value: "0s": must be positive and below the webhook's timeout (10s), so that a decision is answered, not cut off`},
		},
		"a negative decision timeout": {
			modify: func(spec *operatorv1alpha1.KarmadaQuotaInstallationSpec) {
				spec.Webhook.DecisionTimeout = duration(-time.Second)
			},
			wantErrs: []string{`spec.webhook.decisionTimeout: Invalid value: "-1s": must be positive and below the webhook's timeout (10s), so that a decision is answered, not cut off`},
		},
		"a positive resync period": {
			modify: func(spec *operatorv1alpha1.KarmadaQuotaInstallationSpec) {
				spec.Controller.ResyncPeriod = duration(time.Second)
			},
		},
		"a zero resync period": {
			modify: func(spec *operatorv1alpha1.KarmadaQuotaInstallationSpec) {
				spec.Controller.ResyncPeriod = duration(0)
			},
			wantErrs: []string{`spec.controller.resyncPeriod: Invalid value: "0s": must be positive`},
		},
		"a negative resync period": {
			modify: func(spec *operatorv1alpha1.KarmadaQuotaInstallationSpec) {
				spec.Controller.ResyncPeriod = duration(-time.Minute)
			},
			wantErrs: []string{`spec.controller.resyncPeriod: Invalid value: "-1m0s": must be positive`},
		},
		"self-managed certificates with the default lifetimes": {
			modify: func(spec *operatorv1alpha1.KarmadaQuotaInstallationSpec) {
				spec.Certificates.SelfManaged = &operatorv1alpha1.SelfManagedCertificates{}
			},
		},
		"a serving validity of exactly a minute": {
			modify: func(spec *operatorv1alpha1.KarmadaQuotaInstallationSpec) {
				spec.Certificates.SelfManaged = &operatorv1alpha1.SelfManagedCertificates{Validity: duration(time.Minute)}
			},
		},
		"a serving validity below a minute": {
			modify: func(spec *operatorv1alpha1.KarmadaQuotaInstallationSpec) {
				spec.Certificates.SelfManaged = &operatorv1alpha1.SelfManagedCertificates{Validity: duration(59 * time.Second)}
			},
			wantErrs: []string{`spec.certificates.selfManaged.validity: Invalid value: "59s": must be at least 1m`},
		},
		"a CA validity that does not outlive the default serving validity": {
			modify: func(spec *operatorv1alpha1.KarmadaQuotaInstallationSpec) {
				spec.Certificates.SelfManaged = &operatorv1alpha1.SelfManagedCertificates{CAValidity: duration(8760 * time.Hour)}
			},
			wantErrs: []string{`spec.certificates.selfManaged.caValidity: Invalid value: "8760h0m0s": must be longer than the serving certificate's validity`},
		},
		"a serving validity that outlives the default CA validity": {
			modify: func(spec *operatorv1alpha1.KarmadaQuotaInstallationSpec) {
				spec.Certificates.SelfManaged = &operatorv1alpha1.SelfManagedCertificates{Validity: duration(87601 * time.Hour)}
			},
			wantErrs: []string{`spec.certificates.selfManaged.caValidity: Invalid value: "87600h0m0s": must be longer than the serving certificate's validity`},
		},
		"a CA validity one minute longer than the serving validity": {
			modify: func(spec *operatorv1alpha1.KarmadaQuotaInstallationSpec) {
				spec.Certificates.SelfManaged = &operatorv1alpha1.SelfManagedCertificates{Validity: duration(time.Hour), CAValidity: duration(61 * time.Minute)}
			},
		},
		"a serving validity below a minute and a CA that does not outlive it": {
			modify: func(spec *operatorv1alpha1.KarmadaQuotaInstallationSpec) {
				spec.Certificates.SelfManaged = &operatorv1alpha1.SelfManagedCertificates{Validity: duration(30 * time.Second), CAValidity: duration(30 * time.Second)}
			},
			wantErrs: []string{
				`spec.certificates.selfManaged.validity: Invalid value: "30s": must be at least 1m`,
				`spec.certificates.selfManaged.caValidity: Invalid value: "30s": must be longer than the serving certificate's validity`,
			},
		},
		"cert-manager renewing before the certificate expires": {
			modify: func(spec *operatorv1alpha1.KarmadaQuotaInstallationSpec) {
				spec.Certificates.CertManager = &operatorv1alpha1.CertManagerCertificates{Duration: duration(time.Hour), RenewBefore: duration(59 * time.Minute)}
			},
		},
		"cert-manager renewing as the certificate expires": {
			modify: func(spec *operatorv1alpha1.KarmadaQuotaInstallationSpec) {
				spec.Certificates.CertManager = &operatorv1alpha1.CertManagerCertificates{Duration: duration(time.Hour), RenewBefore: duration(time.Hour)}
			},
			wantErrs: []string{`spec.certificates.certManager.renewBefore: Invalid value: "1h0m0s": must be shorter than duration`},
		},
		// cert-manager's own defaults apply to the one left out; the operator does not guess them.
		"cert-manager with a renewal but no duration": {
			modify: func(spec *operatorv1alpha1.KarmadaQuotaInstallationSpec) {
				spec.Certificates.CertManager = &operatorv1alpha1.CertManagerCertificates{RenewBefore: duration(10000 * time.Hour)}
			},
		},
		"cert-manager with a duration but no renewal": {
			modify: func(spec *operatorv1alpha1.KarmadaQuotaInstallationSpec) {
				spec.Certificates.CertManager = &operatorv1alpha1.CertManagerCertificates{Duration: duration(time.Minute)}
			},
		},
		"an issuer of the default kind": {
			modify: func(spec *operatorv1alpha1.KarmadaQuotaInstallationSpec) {
				spec.Certificates.CertManager = &operatorv1alpha1.CertManagerCertificates{IssuerRef: &operatorv1alpha1.IssuerReference{Name: "ca"}}
			},
		},
		"an Issuer": {
			modify: func(spec *operatorv1alpha1.KarmadaQuotaInstallationSpec) {
				spec.Certificates.CertManager = &operatorv1alpha1.CertManagerCertificates{IssuerRef: &operatorv1alpha1.IssuerReference{Name: "ca", Kind: "Issuer"}}
			},
		},
		"a ClusterIssuer": {
			modify: func(spec *operatorv1alpha1.KarmadaQuotaInstallationSpec) {
				spec.Certificates.CertManager = &operatorv1alpha1.CertManagerCertificates{IssuerRef: &operatorv1alpha1.IssuerReference{Name: "ca", Kind: "ClusterIssuer"}}
			},
		},
		"an issuer of another kind": {
			modify: func(spec *operatorv1alpha1.KarmadaQuotaInstallationSpec) {
				spec.Certificates.CertManager = &operatorv1alpha1.CertManagerCertificates{IssuerRef: &operatorv1alpha1.IssuerReference{Name: "ca", Kind: "AWSPCAIssuer"}}
			},
			wantErrs: []string{`spec.certificates.certManager.issuerRef.kind: Unsupported value: "AWSPCAIssuer": supported values: "Issuer", "ClusterIssuer"`},
		},
		"every error at once, in the order of the spec": {
			modify: func(spec *operatorv1alpha1.KarmadaQuotaInstallationSpec) {
				spec.Webhook.ReservationTTL = duration(time.Second)
				spec.Webhook.DecisionTimeout = duration(time.Minute)
				spec.Controller.ResyncPeriod = duration(0)
				spec.Certificates.SelfManaged = &operatorv1alpha1.SelfManagedCertificates{Validity: duration(time.Second), CAValidity: duration(time.Second)}
				spec.Certificates.CertManager = &operatorv1alpha1.CertManagerCertificates{
					Duration: duration(time.Hour), RenewBefore: duration(2 * time.Hour),
					IssuerRef: &operatorv1alpha1.IssuerReference{Name: "ca", Kind: "Vault"},
				}
			},
			wantErrs: []string{
				`spec.webhook.reservationTTL: Invalid value: "1s": must exceed the karmada-apiserver's request timeout (60s), or a write could commit after its reservation lapsed`,
				`spec.webhook.decisionTimeout: Invalid value: "1m0s": must be positive and below the webhook's timeout (10s), so that a decision is answered, not cut off`,
				`spec.controller.resyncPeriod: Invalid value: "0s": must be positive`,
				`spec.certificates.selfManaged.validity: Invalid value: "1s": must be at least 1m`,
				`spec.certificates.selfManaged.caValidity: Invalid value: "1s": must be longer than the serving certificate's validity`,
				`spec.certificates.certManager.renewBefore: Invalid value: "2h0m0s": must be shorter than duration`,
				`spec.certificates.certManager.issuerRef.kind: Unsupported value: "Vault": supported values: "Issuer", "ClusterIssuer"`,
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := operatorv1alpha1.KarmadaQuotaInstallationSpec{
				Karmada: operatorv1alpha1.KarmadaTarget{KubeconfigSecretRef: operatorv1alpha1.SecretKeyReference{Name: "karmada-kubeconfig"}},
			}
			tc.modify(&spec)
			var gotErrs []string
			for _, err := range validate(&spec) {
				gotErrs = append(gotErrs, err.Error())
			}
			if diff := cmp.Diff(tc.wantErrs, gotErrs); diff != "" {
				t.Errorf("validate() errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValues(t *testing.T) {
	// What every installation gets whatever its spec: the chart's defaults are the operator's, except for these.
	defaults := func() map[string]any {
		return map[string]any{
			"karmada": map[string]any{
				"kubeconfigSecret":         map[string]any{"name": "karmada-kubeconfig", "key": "kubeconfig"},
				"namespace":                "karmada-system",
				"leastPrivilegeIdentities": true,
			},
			"image":        map[string]any{"tag": "v0.9.0"},
			"certificates": map[string]any{"mode": "self-managed"},
			"monitoring": map[string]any{
				"serviceMonitor": map[string]any{"enabled": false},
				"prometheusRule": map[string]any{"enabled": false},
				"dashboards":     map[string]any{"enabled": false},
			},
			"businessRoles": map[string]any{"enabled": true, "readResourceBindings": true},
			"uninstall":     map[string]any{"removeCRD": false},
		}
	}
	// Every optional field a component has, as the spec states them and as the chart reads them from YAML.
	component := operatorv1alpha1.Component{
		Image:    "registry.example/quota:dev",
		Replicas: ptr.To[int32](3),
		Resources: &corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
		},
		NodeSelector: map[string]string{"node-role.kubernetes.io/control-plane": ""},
		Tolerations:  []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "karmada", Effect: corev1.TaintEffectNoSchedule}},
		Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: "kubernetes.io/arch", Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
			}}},
		}}},
		TopologySpreadConstraints: []corev1.TopologySpreadConstraint{
			{MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.DoNotSchedule},
		},
		PriorityClassName: "system-cluster-critical",
		ExtraArgs:         []string{"--v=4"},
	}
	componentValues := func() map[string]any {
		return map[string]any{
			"image":    "registry.example/quota:dev",
			"replicas": int64(3),
			"resources": map[string]any{
				"requests": map[string]any{"cpu": "100m", "memory": "128Mi"},
				"limits":   map[string]any{"memory": "1Gi"},
			},
			"nodeSelector": map[string]any{"node-role.kubernetes.io/control-plane": ""},
			"tolerations":  []any{map[string]any{"key": "dedicated", "operator": "Equal", "value": "karmada", "effect": "NoSchedule"}},
			"affinity": map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
				"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{
					map[string]any{"key": "kubernetes.io/arch", "operator": "In", "values": []any{"amd64"}},
				}}},
			}}},
			// A number that went through JSON is a float64, as in values Helm read from YAML.
			"topologySpreadConstraints": []any{map[string]any{"maxSkew": float64(1), "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule"}},
			"priorityClassName":         "system-cluster-critical",
			"extraArgs":                 []any{"--v=4"},
		}
	}

	cases := map[string]struct {
		modify func(spec *operatorv1alpha1.KarmadaQuotaInstallationSpec)
		want   func(v map[string]any)
	}{
		"only the Karmada kubeconfig Secret: the chart's defaults": {
			modify: func(*operatorv1alpha1.KarmadaQuotaInstallationSpec) {},
			want:   func(map[string]any) {},
		},
		"every optional field set, certificates from cert-manager": {
			modify: func(spec *operatorv1alpha1.KarmadaQuotaInstallationSpec) {
				spec.Karmada = operatorv1alpha1.KarmadaTarget{
					KubeconfigSecretRef:      operatorv1alpha1.SecretKeyReference{Name: "karmada-kubeconfig", Key: "config"},
					Namespace:                "karmada",
					LeastPrivilegeIdentities: ptr.To(false),
				}
				spec.Version = "v1.0.0"
				spec.Images = operatorv1alpha1.Images{
					Registry: "registry.example", PullPolicy: corev1.PullAlways,
					PullSecrets: []corev1.LocalObjectReference{{Name: "registry-credentials"}},
				}
				spec.Webhook = operatorv1alpha1.Webhook{
					Component:       component,
					ReservationTTL:  duration(5 * time.Minute),
					DecisionTimeout: duration(15 * time.Second),
					TimeoutSeconds:  ptr.To[int32](20),
					ExemptKinds:     []string{"Certificate.cert-manager.io"},
				}
				spec.Controller = operatorv1alpha1.Controller{Component: component, ResyncPeriod: duration(30 * time.Second), Workers: ptr.To[int32](8)}
				spec.Certificates = operatorv1alpha1.Certificates{
					Mode: operatorv1alpha1.CertificatesCertManager,
					CertManager: &operatorv1alpha1.CertManagerCertificates{
						IssuerRef: &operatorv1alpha1.IssuerReference{Name: "vault", Kind: "ClusterIssuer", Group: "cert-manager.example"},
						Duration:  duration(2160 * time.Hour), RenewBefore: duration(360 * time.Hour),
					},
				}
				spec.Monitoring = operatorv1alpha1.Monitoring{
					ServiceMonitor: operatorv1alpha1.MonitoringObject{Enabled: true, Labels: map[string]string{"release": "prometheus"}},
					PrometheusRule: operatorv1alpha1.MonitoringObject{Enabled: true, Labels: map[string]string{"role": "alert-rules"}},
					Dashboards:     operatorv1alpha1.MonitoringObject{Enabled: true, Labels: map[string]string{"grafana_dashboard": "1"}},
				}
				spec.BusinessRoles = operatorv1alpha1.BusinessRoles{Disabled: true, HideResourceBindings: true}
				spec.Uninstall.RemoveCRD = true
			},
			want: func(v map[string]any) {
				v["karmada"] = map[string]any{
					"kubeconfigSecret":         map[string]any{"name": "karmada-kubeconfig", "key": "config"},
					"namespace":                "karmada",
					"leastPrivilegeIdentities": false,
				}
				v["image"] = map[string]any{"tag": "v1.0.0", "registry": "registry.example", "pullPolicy": "Always"}
				v["imagePullSecrets"] = []any{map[string]any{"name": "registry-credentials"}}
				webhook := componentValues()
				webhook["reservationTTL"] = "5m0s"
				webhook["decisionTimeout"] = "15s"
				webhook["timeoutSeconds"] = int64(20)
				webhook["exemptKinds"] = []any{"Certificate.cert-manager.io"}
				v["webhook"] = webhook
				controller := componentValues()
				controller["resyncPeriod"] = "30s"
				controller["workers"] = int64(8)
				v["controller"] = controller
				v["certificates"] = map[string]any{
					"mode": "cert-manager",
					"certManager": map[string]any{
						"issuerRef": map[string]any{"name": "vault", "kind": "ClusterIssuer", "group": "cert-manager.example"},
						"duration":  "2160h0m0s", "renewBefore": "360h0m0s",
					},
				}
				v["monitoring"] = map[string]any{
					"serviceMonitor": map[string]any{"enabled": true, "labels": map[string]any{"release": "prometheus"}},
					"prometheusRule": map[string]any{"enabled": true, "labels": map[string]any{"role": "alert-rules"}},
					"dashboards":     map[string]any{"enabled": true, "labels": map[string]any{"grafana_dashboard": "1"}},
				}
				v["businessRoles"] = map[string]any{"enabled": false, "readResourceBindings": false}
				v["uninstall"] = map[string]any{"removeCRD": true}
			},
		},
		"cert-manager with an issuer named only: kind and group defaulted": {
			modify: func(spec *operatorv1alpha1.KarmadaQuotaInstallationSpec) {
				spec.Certificates = operatorv1alpha1.Certificates{
					Mode:        operatorv1alpha1.CertificatesCertManager,
					CertManager: &operatorv1alpha1.CertManagerCertificates{IssuerRef: &operatorv1alpha1.IssuerReference{Name: "ca"}},
				}
			},
			want: func(v map[string]any) {
				v["certificates"] = map[string]any{
					"mode":        "cert-manager",
					"certManager": map[string]any{"issuerRef": map[string]any{"name": "ca", "kind": "Issuer", "group": "cert-manager.io"}},
				}
			},
		},
		"self-managed certificates with every lifetime set: checked every 10m at most": {
			modify: func(spec *operatorv1alpha1.KarmadaQuotaInstallationSpec) {
				spec.Certificates = operatorv1alpha1.Certificates{
					Mode:        operatorv1alpha1.CertificatesSelfManaged,
					SelfManaged: &operatorv1alpha1.SelfManagedCertificates{CAValidity: duration(43800 * time.Hour), Validity: duration(720 * time.Hour)},
				}
			},
			want: func(v map[string]any) {
				v["certificates"] = map[string]any{
					"mode":        "self-managed",
					"selfManaged": map[string]any{"caValidity": "43800h0m0s", "validity": "720h0m0s", "checkInterval": "10m0s"},
				}
			},
		},
		"a short serving validity: checked every tenth of it": {
			modify: func(spec *operatorv1alpha1.KarmadaQuotaInstallationSpec) {
				spec.Certificates.SelfManaged = &operatorv1alpha1.SelfManagedCertificates{Validity: duration(time.Hour)}
			},
			want: func(v map[string]any) {
				v["certificates"] = map[string]any{
					"mode":        "self-managed",
					"selfManaged": map[string]any{"validity": "1h0m0s", "checkInterval": "6m0s"},
				}
			},
		},
		"a CA validity alone: the chart's check interval stays": {
			modify: func(spec *operatorv1alpha1.KarmadaQuotaInstallationSpec) {
				spec.Certificates.SelfManaged = &operatorv1alpha1.SelfManagedCertificates{CAValidity: duration(20000 * time.Hour)}
			},
			want: func(v map[string]any) {
				v["certificates"] = map[string]any{"mode": "self-managed", "selfManaged": map[string]any{"caValidity": "20000h0m0s"}}
			},
		},
		"one component customised: the other keeps the chart's values": {
			modify: func(spec *operatorv1alpha1.KarmadaQuotaInstallationSpec) {
				spec.Controller.Replicas = ptr.To[int32](2)
			},
			want: func(v map[string]any) {
				v["controller"] = map[string]any{"replicas": int64(2)}
			},
		},
		"monitoring enabled without labels": {
			modify: func(spec *operatorv1alpha1.KarmadaQuotaInstallationSpec) {
				spec.Monitoring.ServiceMonitor.Enabled = true
			},
			want: func(v map[string]any) {
				v["monitoring"].(map[string]any)["serviceMonitor"] = map[string]any{"enabled": true}
			},
		},
		"business roles kept, ResourceBindings hidden": {
			modify: func(spec *operatorv1alpha1.KarmadaQuotaInstallationSpec) {
				spec.BusinessRoles.HideResourceBindings = true
			},
			want: func(v map[string]any) {
				v["businessRoles"] = map[string]any{"enabled": true, "readResourceBindings": false}
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			inst := &operatorv1alpha1.KarmadaQuotaInstallation{
				ObjectMeta: metav1.ObjectMeta{Name: "quota", Namespace: "karmada-quota-system"},
				Spec: operatorv1alpha1.KarmadaQuotaInstallationSpec{
					Karmada: operatorv1alpha1.KarmadaTarget{KubeconfigSecretRef: operatorv1alpha1.SecretKeyReference{Name: "karmada-kubeconfig"}},
				},
			}
			tc.modify(&inst.Spec)
			want := defaults()
			tc.want(want)

			got, err := values(inst, "v0.9.0")
			if err != nil {
				t.Fatalf("values() error: %v", err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("values() (-want +got):\n%s", diff)
			}
			// The chart's schema refuses a key it does not know: what the operator passes is what helm would take.
			if _, err := render.Render(inst.Name, inst.Namespace, got); err != nil {
				t.Errorf("the chart refuses the values: %v", err)
			}
		})
	}
}
