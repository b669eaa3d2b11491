package webhookconfig

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/utils/ptr"
)

// registration is what the karmada-apiserver does with one webhook of the configuration: which call it sends where,
// how long it waits and what happens when the webhook cannot answer.
type registration struct {
	URL             string
	Operations      []admissionregistrationv1.OperationType
	Resource        string                            // group/version/resource
	Scope           admissionregistrationv1.ScopeType // empty: Namespaced
	TimeoutSeconds  int32
	FailurePolicy   admissionregistrationv1.FailurePolicyType
	SideEffects     admissionregistrationv1.SideEffectClass
	MatchConditions []string
}

func TestConfiguration(t *testing.T) {
	createUpdate := []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}
	cases := map[string]struct {
		baseURL        string
		timeoutSeconds int32
		want           map[string]registration
	}{
		"the default timeout": {
			baseURL:        "https://quota-webhook.karmada-system.svc:443",
			timeoutSeconds: DefaultTimeoutSeconds,
			want: map[string]registration{
				BindingWebhook: {
					URL: "https://quota-webhook.karmada-system.svc:443/validate-resourcebinding", Operations: createUpdate,
					Resource: "work.karmada.io/v1alpha2/resourcebindings", TimeoutSeconds: 10,
					FailurePolicy: admissionregistrationv1.Fail, SideEffects: admissionregistrationv1.SideEffectClassNoneOnDryRun,
				},
				QuotaWebhook: {
					URL: "https://quota-webhook.karmada-system.svc:443/validate-karmadaquota", Operations: createUpdate,
					Resource: "quota.karmada.io/v1alpha1/karmadaquotas", TimeoutSeconds: 5,
					FailurePolicy: admissionregistrationv1.Fail, SideEffects: admissionregistrationv1.SideEffectClassNoneOnDryRun,
				},
				BusinessQuotaWebhook: {
					URL: "https://quota-webhook.karmada-system.svc:443/validate-karmadabusinessquota", Operations: createUpdate,
					Resource: "quota.karmada.io/v1alpha1/karmadabusinessquotas", Scope: admissionregistrationv1.ClusterScope, TimeoutSeconds: 5,
					FailurePolicy: admissionregistrationv1.Fail, SideEffects: admissionregistrationv1.SideEffectClassNoneOnDryRun,
				},
				WorkWebhook: {
					URL: "https://quota-webhook.karmada-system.svc:443/validate-work", Operations: createUpdate,
					Resource: "work.karmada.io/v1alpha1/works", TimeoutSeconds: 10,
					FailurePolicy: admissionregistrationv1.Fail, SideEffects: admissionregistrationv1.SideEffectClassNone,
					MatchConditions: []string{"not-deleting", "workload-changed"},
				},
				TemplateWebhook: {
					URL: "https://quota-webhook.karmada-system.svc:443/validate-resourcetemplate", Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Resource: "*/*/*", TimeoutSeconds: 10,
					FailurePolicy: admissionregistrationv1.Ignore, SideEffects: admissionregistrationv1.SideEffectClassNone,
					MatchConditions: []string{"propagated", "not-deleting"},
				},
			},
		},
		// The timeout given bounds the waits for a decision on a workload; validating a KarmadaQuota keeps its 5s.
		"a base URL with a trailing slash and a raised timeout": {
			baseURL:        "https://10.0.0.1:8443/",
			timeoutSeconds: 30,
			want: map[string]registration{
				BindingWebhook: {
					URL: "https://10.0.0.1:8443/validate-resourcebinding", Operations: createUpdate,
					Resource: "work.karmada.io/v1alpha2/resourcebindings", TimeoutSeconds: 30,
					FailurePolicy: admissionregistrationv1.Fail, SideEffects: admissionregistrationv1.SideEffectClassNoneOnDryRun,
				},
				QuotaWebhook: {
					URL: "https://10.0.0.1:8443/validate-karmadaquota", Operations: createUpdate,
					Resource: "quota.karmada.io/v1alpha1/karmadaquotas", TimeoutSeconds: 5,
					FailurePolicy: admissionregistrationv1.Fail, SideEffects: admissionregistrationv1.SideEffectClassNoneOnDryRun,
				},
				BusinessQuotaWebhook: {
					URL: "https://10.0.0.1:8443/validate-karmadabusinessquota", Operations: createUpdate,
					Resource: "quota.karmada.io/v1alpha1/karmadabusinessquotas", Scope: admissionregistrationv1.ClusterScope, TimeoutSeconds: 5,
					FailurePolicy: admissionregistrationv1.Fail, SideEffects: admissionregistrationv1.SideEffectClassNoneOnDryRun,
				},
				WorkWebhook: {
					URL: "https://10.0.0.1:8443/validate-work", Operations: createUpdate,
					Resource: "work.karmada.io/v1alpha1/works", TimeoutSeconds: 30,
					FailurePolicy: admissionregistrationv1.Fail, SideEffects: admissionregistrationv1.SideEffectClassNone,
					MatchConditions: []string{"not-deleting", "workload-changed"},
				},
				TemplateWebhook: {
					URL: "https://10.0.0.1:8443/validate-resourcetemplate", Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Resource: "*/*/*", TimeoutSeconds: 30,
					FailurePolicy: admissionregistrationv1.Ignore, SideEffects: admissionregistrationv1.SideEffectClassNone,
					MatchConditions: []string{"propagated", "not-deleting"},
				},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			caBundle := []byte("-----BEGIN CERTIFICATE-----\n")
			conf := Configuration(tc.baseURL, caBundle, tc.timeoutSeconds)
			if conf.Name != ConfigurationName {
				t.Errorf("name %q, want %q", conf.Name, ConfigurationName)
			}
			got := map[string]registration{}
			for _, w := range conf.Webhooks {
				if _, twice := got[w.Name]; twice {
					t.Errorf("webhook %s registered twice", w.Name)
				}
				if len(w.Rules) != 1 {
					t.Fatalf("webhook %s: %d rules, want 1", w.Name, len(w.Rules))
				}
				r := w.Rules[0]
				if r.Scope == nil {
					t.Fatalf("webhook %s: no scope", w.Name)
				}
				// Namespaced unless the case says otherwise.
				scope := *r.Scope
				if scope == admissionregistrationv1.NamespacedScope {
					scope = ""
				}
				if diff := cmp.Diff(caBundle, w.ClientConfig.CABundle); diff != "" {
					t.Errorf("webhook %s: caBundle (-want +got):\n%s", w.Name, diff)
				}
				// Equivalent: a binding written at another version of its API must not bypass the quota.
				if w.MatchPolicy == nil || *w.MatchPolicy != admissionregistrationv1.Equivalent {
					t.Errorf("webhook %s: matchPolicy %v, want Equivalent", w.Name, w.MatchPolicy)
				}
				if diff := cmp.Diff([]string{"v1"}, w.AdmissionReviewVersions); diff != "" {
					t.Errorf("webhook %s: admissionReviewVersions (-want +got):\n%s", w.Name, diff)
				}
				var conditions []string
				for _, c := range w.MatchConditions {
					conditions = append(conditions, c.Name)
				}
				got[w.Name] = registration{
					URL:             ptr.Deref(w.ClientConfig.URL, ""),
					Operations:      r.Operations,
					Resource:        r.APIGroups[0] + "/" + r.APIVersions[0] + "/" + r.Resources[0],
					Scope:           scope,
					TimeoutSeconds:  ptr.Deref(w.TimeoutSeconds, 0),
					FailurePolicy:   ptr.Deref(w.FailurePolicy, ""),
					SideEffects:     ptr.Deref(w.SideEffects, ""),
					MatchConditions: conditions,
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("webhooks (-want +got):\n%s", diff)
			}
		})
	}
}
