package systems

import (
	"context"
	"errors"
	"fmt"

	"github.com/karmada-quota/karmada-quota/pkg/webhookconfig"
	"github.com/karmada-quota/karmada-quota/test/bench/internal/workload"
)

// AllowAll is the ceiling of any validating webhook on ResourceBindings: test/bench/cmd/allow-all-webhook, which
// decodes every review and allows it, served and registered exactly as quota-webhook is (its TLS defaults, its
// ValidatingWebhookConfiguration: failurePolicy Fail, timeoutSeconds 10), as one process. It enforces no quota.
type AllowAll struct {
	Env
	// Bin is the built allow-all-webhook.
	Bin string

	running
}

// Name implements System.
func (*AllowAll) Name() string { return "allow-all webhook" }

// Enforcing implements System.
func (*AllowAll) Enforcing() bool { return false }

// Start implements System.
func (a *AllowAll) Start(ctx context.Context) error {
	certDir, ca, cleanup, err := servingCerts()
	if err != nil {
		return err
	}
	a.certCleanup = cleanup
	addrs, err := freeAddrs(3)
	if err != nil {
		return err
	}
	serving, metrics, health := addrs[0], addrs[1], addrs[2]
	webhook, err := a.Reg.Start("allow-all-webhook", a.LogDir, a.Bin,
		"--kubeconfig", a.CP.Kubeconfig,
		"--cert-dir", certDir,
		"--webhook-bind-address", serving,
		"--metrics-bind-address", metrics,
		"--health-probe-bind-address", health,
	)
	if err != nil {
		return err
	}
	a.components = append(a.components, &Component{Role: "webhook", Proc: webhook, MetricsAddr: metrics})
	if err := waitHealthy(ctx, webhook, "http://"+health+"/readyz"); err != nil {
		return fmt.Errorf("allow-all-webhook never became ready: %w", err)
	}
	if err := waitServing(ctx, webhook, serving, ca); err != nil {
		return err
	}
	// quota-webhook's own registration, pointed at this server.
	conf := webhookconfig.Configuration("https://"+serving, ca, webhookconfig.DefaultTimeoutSeconds)
	if err := a.CP.Client.Create(ctx, conf); err != nil {
		return fmt.Errorf("registering the webhooks: %w", err)
	}
	a.registered = conf
	return nil
}

// CreateQuota implements System.
func (*AllowAll) CreateQuota(context.Context, string, workload.Limits) error {
	return errors.New("no quota system is installed")
}

// Status implements System.
func (*AllowAll) Status(context.Context, string) (Status, error) {
	return Status{}, errors.New("no quota system is installed")
}

// ControllerWrote implements System.
func (*AllowAll) ControllerWrote(context.Context, string) (bool, error) { return true, nil }

// Stop implements System.
func (a *AllowAll) Stop(ctx context.Context) error { return a.stop(ctx, a.CP.Client) }

// Describe implements System.
func (*AllowAll) Describe() string {
	return "test/bench/cmd/allow-all-webhook: a validating webhook that decodes each AdmissionReview into the typed " +
		"objects and allows everything, served like quota-webhook (controller-runtime's webhook server, the same TLS " +
		"defaults and serving certificate, one process) and registered with `webhookconfig.Configuration` " +
		"(failurePolicy Fail, sideEffects NoneOnDryRun, timeoutSeconds 10): the most any validating webhook can reach here."
}
