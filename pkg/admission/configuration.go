package admission

import (
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// ConfigurationName is the name of the ValidatingWebhookConfiguration in the karmada-apiserver.
const ConfigurationName = "karmada-quota"

// DefaultTimeoutSeconds is how long the karmada-apiserver waits for a binding decision by default: above the
// webhook's default decision timeout (8s), so a decision that runs out of time is answered rather than cut off.
const DefaultTimeoutSeconds int32 = 10

// WebhookConfiguration is the registration of both webhooks in the karmada-apiserver, which reaches webhooks by
// URL (it runs outside the host cluster's service network). baseURL is https://host:port of the webhook servers;
// caBundle verifies their serving certificate; timeoutSeconds bounds the wait for a binding decision.
func WebhookConfiguration(baseURL string, caBundle []byte, timeoutSeconds int32) *admissionregistrationv1.ValidatingWebhookConfiguration {
	base := strings.TrimSuffix(baseURL, "/")
	namespaced := admissionregistrationv1.NamespacedScope
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: ConfigurationName},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{
			{
				Name: "resourcebinding.quota.karmada.io",
				ClientConfig: admissionregistrationv1.WebhookClientConfig{
					URL: ptr.To(base + ResourceBindingPath), CABundle: caBundle,
				},
				Rules: []admissionregistrationv1.RuleWithOperations{{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
					Rule: admissionregistrationv1.Rule{
						APIGroups: []string{"work.karmada.io"}, APIVersions: []string{"v1alpha2"},
						Resources: []string{"resourcebindings"}, Scope: &namespaced,
					},
				}},
				// A quota that cannot be checked must not be bypassed.
				FailurePolicy: ptr.To(admissionregistrationv1.Fail),
				MatchPolicy:   ptr.To(admissionregistrationv1.Equivalent),
				// Admission writes reservations, except for dry-run requests.
				SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNoneOnDryRun),
				TimeoutSeconds:          ptr.To(timeoutSeconds),
				AdmissionReviewVersions: []string{"v1"},
			},
			{
				Name: "karmadaquota.quota.karmada.io",
				ClientConfig: admissionregistrationv1.WebhookClientConfig{
					URL: ptr.To(base + KarmadaQuotaPath), CABundle: caBundle,
				},
				Rules: []admissionregistrationv1.RuleWithOperations{{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
					Rule: admissionregistrationv1.Rule{
						APIGroups: []string{"quota.karmada.io"}, APIVersions: []string{"v1alpha1"},
						Resources: []string{"karmadaquotas"}, Scope: &namespaced,
					},
				}},
				FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
				MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
				SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
				TimeoutSeconds:          ptr.To[int32](5),
				AdmissionReviewVersions: []string{"v1"},
			},
		},
	}
}
