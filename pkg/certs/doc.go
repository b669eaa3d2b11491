// Package certs keeps the quota webhook's TLS certificates with no manual step, across the two planes of a
// Karmada installation: the Secrets live in the host cluster, the ValidatingWebhookConfiguration whose caBundle
// must verify them lives in the karmada-apiserver.
//
// In the self-managed mode it issues a CA and the serving certificate (ECDSA P-256) into two host Secrets,
// renews each when less than a third of its lifetime is left, and keeps the caBundle equal to the serving
// Secret's ca.crt. A CA rotation takes two steps, so no client ever meets a certificate it does not trust: the
// new CA joins the bundle (next to the old one, which stays until it expires), and only once the webhook
// configuration carries it does the webhook get a certificate from it. In the external mode cert-manager (or
// another issuer) writes the serving Secret, and only the caBundle is kept in sync.
//
// Decide is the policy, pure and clock-free; Reconciler reads, decides and writes with optimistic concurrency.
// The webhook picks a renewed certificate up without a restart: controller-runtime's certificate watcher reloads
// the files when the kubelet updates the mounted Secret.
package certs
