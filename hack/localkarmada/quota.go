package localkarmada

import (
	"context"
)

// installQuota installs karmada-quota as an admin installs it: `helm install` of the chart into the host cluster's
// karmada-system, pointed at the karmada-apiserver through the karmada-kubeconfig Secret. The host's kubelet runs
// the pods the chart rendered, from the images `make images` built; the chart's install jobs put the CRD, the
// RBAC, the components' identities and, once the webhook serves, the ValidatingWebhookConfiguration into the
// karmada-apiserver.
func (s *setup) installQuota(ctx context.Context) error {
	values, err := s.env.QuotaValues(s.opts.QuotaValues)
	if err != nil {
		return err
	}
	_, err = s.env.InstallQuota(ctx, values)
	return err
}
