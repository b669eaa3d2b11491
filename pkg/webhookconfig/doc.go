// Package webhookconfig is the contract between karmada-quota's webhook server and whatever registers it in the
// karmada-apiserver: the name of the ValidatingWebhookConfiguration, the names of its webhooks, the paths they are
// served on and the configuration itself. The webhook server (pkg/admission) serves on these paths; the
// certificates reconciler keeps the configuration's caBundle, the operator installs it, and the chart's tests
// compare the chart against it.
//
// It is a leaf on purpose: it imports nothing of the webhook, so the controller and the operator, which only
// name or register the configuration, do not link the webhook's resource interpreter and its Lua VM.
package webhookconfig
