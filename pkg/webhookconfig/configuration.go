package webhookconfig

import (
	"fmt"
	"strings"

	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// ConfigurationName is the name of the ValidatingWebhookConfiguration in the karmada-apiserver.
const ConfigurationName = "karmada-quota"

// Names of the webhooks in the configuration.
const (
	BindingWebhook = "resourcebinding.quota.karmada.io"
	QuotaWebhook   = "karmadaquota.quota.karmada.io"
	// BusinessQuotaWebhook validates KarmadaBusinessQuotas.
	BusinessQuotaWebhook = "karmadabusinessquota.quota.karmada.io"
	WorkWebhook          = "work.quota.karmada.io"
	TemplateWebhook      = "resourcetemplate.quota.karmada.io"
)

// Paths the webhooks are served on; the configuration points at them.
const (
	ResourceBindingPath  = "/validate-resourcebinding"
	KarmadaQuotaPath     = "/validate-karmadaquota"
	BusinessQuotaPath    = "/validate-karmadabusinessquota"
	WorkPath             = "/validate-work"
	ResourceTemplatePath = "/validate-resourcetemplate"
)

// DefaultTimeoutSeconds is how long the karmada-apiserver waits for a binding decision by default: above the
// webhook's default decision timeout (8s), so a decision that runs out of time is answered rather than cut off.
const DefaultTimeoutSeconds int32 = 10

// Configuration is the registration of the webhooks in the karmada-apiserver, which reaches webhooks by URL (it
// runs outside the host cluster's service network). baseURL is https://host:port of the webhook servers; caBundle
// verifies their serving certificate; timeoutSeconds bounds the wait for a binding decision.
func Configuration(baseURL string, caBundle []byte, timeoutSeconds int32) *admissionregistrationv1.ValidatingWebhookConfiguration {
	base := strings.TrimSuffix(baseURL, "/")
	at := func(path string) admissionregistrationv1.WebhookClientConfig {
		return admissionregistrationv1.WebhookClientConfig{URL: ptr.To(base + path), CABundle: caBundle}
	}
	createUpdate := []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}

	bindings := validating(BindingWebhook, at(ResourceBindingPath),
		rule(createUpdate, "work.karmada.io", "v1alpha2", "resourcebindings"), timeoutSeconds)
	// Admission writes reservations, except for dry-run requests.
	bindings.SideEffects = ptr.To(admissionregistrationv1.SideEffectClassNoneOnDryRun)

	quotas := validating(QuotaWebhook, at(KarmadaQuotaPath),
		rule(createUpdate, "quota.karmada.io", "v1alpha1", "karmadaquotas"), 5)
	// A change of a quota's spec fences its ledger, except for dry-run requests.
	quotas.SideEffects = ptr.To(admissionregistrationv1.SideEffectClassNoneOnDryRun)

	business := validating(BusinessQuotaWebhook, at(BusinessQuotaPath),
		clusterRule(createUpdate, "quota.karmada.io", "v1alpha1", "karmadabusinessquotas"), 5)
	business.SideEffects = ptr.To(admissionregistrationv1.SideEffectClassNoneOnDryRun)

	// The last gate before the members: a Work that cannot be checked must not reach them. Karmada's binding
	// controller retries a refused Work, and the member keeps what it runs meanwhile.
	works := validating(WorkWebhook, at(WorkPath), rule(createUpdate, "work.karmada.io", "v1alpha1", "works"), timeoutSeconds)
	// Karmada's controllers update Works for their finalizers and labels far more often than for what they ask;
	// only a new workload needs a decision, and a Work being deleted must always be let go.
	works.MatchConditions = []admissionregistrationv1.MatchCondition{
		{Name: "not-deleting", Expression: "!has(object.metadata.deletionTimestamp)"},
		{Name: "workload-changed", Expression: "request.operation != 'UPDATE' || !has(object.spec) || !has(oldObject.spec) || object.spec != oldObject.spec"},
	}

	// Any kind can be a resource template; the conditions narrow the calls to the objects a propagation policy
	// claimed (Karmada labels them), outside their deletion.
	templates := validating(TemplateWebhook, at(ResourceTemplatePath),
		rule([]admissionregistrationv1.OperationType{admissionregistrationv1.Update}, "*", "*", "*"), timeoutSeconds)
	templates.MatchConditions = []admissionregistrationv1.MatchCondition{
		{Name: "propagated", Expression: fmt.Sprintf("has(object.metadata.labels) && (%q in object.metadata.labels || %q in object.metadata.labels)",
			policyv1alpha1.PropagationPolicyPermanentIDLabel, policyv1alpha1.ClusterPropagationPolicyPermanentIDLabel)},
		{Name: "not-deleting", Expression: "!has(object.metadata.deletionTimestamp)"},
	}
	// This gate only brings a refusal forward to where the user acts: the binding and Work webhooks enforce the
	// quota whatever it answers. Failing open keeps an outage of karmada-quota from blocking every change to every
	// propagated object in the federation.
	templates.FailurePolicy = ptr.To(admissionregistrationv1.Ignore)

	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: ConfigurationName},
		Webhooks:   []admissionregistrationv1.ValidatingWebhook{bindings, quotas, business, works, templates},
	}
}

// validating is one webhook of the configuration as every one starts: a quota that cannot be checked must not be
// bypassed (failurePolicy Fail), no side effects, equivalent versions of the objects matched, AdmissionReview v1.
func validating(name string, client admissionregistrationv1.WebhookClientConfig, rule admissionregistrationv1.RuleWithOperations, timeoutSeconds int32) admissionregistrationv1.ValidatingWebhook {
	return admissionregistrationv1.ValidatingWebhook{
		Name:                    name,
		ClientConfig:            client,
		Rules:                   []admissionregistrationv1.RuleWithOperations{rule},
		FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
		MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		TimeoutSeconds:          ptr.To(timeoutSeconds),
		AdmissionReviewVersions: []string{"v1"},
	}
}

// rule matches operations on a namespaced resource.
func rule(operations []admissionregistrationv1.OperationType, group, version, resource string) admissionregistrationv1.RuleWithOperations {
	return scopedRule(operations, group, version, resource, admissionregistrationv1.NamespacedScope)
}

// clusterRule matches operations on a cluster-scoped resource.
func clusterRule(operations []admissionregistrationv1.OperationType, group, version, resource string) admissionregistrationv1.RuleWithOperations {
	return scopedRule(operations, group, version, resource, admissionregistrationv1.ClusterScope)
}

func scopedRule(operations []admissionregistrationv1.OperationType, group, version, resource string, scope admissionregistrationv1.ScopeType) admissionregistrationv1.RuleWithOperations {
	return admissionregistrationv1.RuleWithOperations{
		Operations: operations,
		Rule: admissionregistrationv1.Rule{
			APIGroups: []string{group}, APIVersions: []string{version}, Resources: []string{resource}, Scope: &scope,
		},
	}
}
