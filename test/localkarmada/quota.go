package localkarmada

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/karmada-quota/karmada-quota/pkg/admission"
	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/test/integration/framework"
	"github.com/karmada-quota/karmada-quota/test/loopback"
)

// Process names of karmada-quota, for tests that restart them.
const (
	QuotaWebhook    = "quota-webhook"
	QuotaController = "quota-controller"
)

// installQuota installs karmada-quota as a production install does: the CRD and the RBAC from deploy/ applied to
// the karmada-apiserver, the webhook and the controller running as their own service accounts (client
// certificates for those users, so a missing permission fails here as it would in a cluster), and the
// ValidatingWebhookConfiguration registered by URL with the CA bundle once the webhook serves.
func (s *setup) installQuota(ctx context.Context) error {
	c, err := Client(s.env.Karmada.Kubeconfig)
	if err != nil {
		return err
	}
	deploy := filepath.Join(framework.RepoRoot(), "deploy")
	files := filepath.Join(deploy, "charts", "karmada-quota", "files")
	if err := applyFiles(ctx, c, filepath.Join(files, "crds"), filepath.Join(deploy, "rbac"),
		filepath.Join(files, "rbac", "webhook"), filepath.Join(files, "rbac", "controller")); err != nil {
		return err
	}
	if err := waitFor(ctx, "the KarmadaQuota API to be served", func(ctx context.Context) error {
		return c.List(ctx, &quotav1alpha1.KarmadaQuotaList{})
	}); err != nil {
		return err
	}

	kubeconfigs := map[string]string{}
	for _, name := range []string{QuotaWebhook, QuotaController} {
		user := "system:serviceaccount:karmada-system:karmada-" + name
		cert, err := s.pki.client(name, user, "system:serviceaccounts", "system:serviceaccounts:karmada-system")
		if err != nil {
			return err
		}
		kubeconfigs[name] = filepath.Join(s.env.Dir, "kubeconfigs", name+".config")
		if err := s.kubeconfig(kubeconfigs[name], karmadaName, s.env.Karmada.URL, cert); err != nil {
			return err
		}
	}
	ports, err := loopback.FreePorts(5)
	if err != nil {
		return err
	}
	serve, probe, metrics := ports[0], ports[1], ports[2]
	if err := s.process(ctx, QuotaWebhook, fmt.Sprintf("http://127.0.0.1:%d/readyz", probe),
		s.bin["quota-webhook"],
		"--kubeconfig", kubeconfigs[QuotaWebhook],
		"--webhook-bind-address", fmt.Sprintf("127.0.0.1:%d", serve),
		"--cert-dir", filepath.Dir(s.serve.Cert),
		"--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", probe),
		"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", metrics),
	); err != nil {
		return err
	}
	s.env.QuotaWebhookURL = fmt.Sprintf("https://127.0.0.1:%d", serve)
	if err := waitTLS(ctx, s.env, fmt.Sprintf("127.0.0.1:%d", serve)); err != nil {
		return err
	}
	if err := c.Create(ctx, admission.WebhookConfiguration(s.env.QuotaWebhookURL, s.pki.caPEM)); err != nil {
		return fmt.Errorf("registering the quota webhook: %w", err)
	}
	return s.process(ctx, QuotaController, fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[3]),
		s.bin["quota-controller"],
		"--kubeconfig", kubeconfigs[QuotaController],
		"--leader-elect=true",
		"--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", ports[3]),
		"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", ports[4]),
	)
}
