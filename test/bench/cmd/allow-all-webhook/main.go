// Command allow-all-webhook is the benchmark's ceiling for any validating webhook on ResourceBindings: it decodes
// each AdmissionReview into the typed old and new objects, as quota-webhook does, and allows everything. It is
// served as quota-webhook serves (controller-runtime's webhook server in a manager, the same TLS settings and
// serving certificate, probes and metrics) and registered with the same ValidatingWebhookConfiguration, so what
// separates the two in the benchmark is what quota-webhook does with a request, not how requests reach it.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"

	workv1alpha1 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/scheme"
	"github.com/karmada-quota/karmada-quota/pkg/util/command"
	"github.com/karmada-quota/karmada-quota/pkg/webhookconfig"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "allow-all-webhook:", err)
		os.Exit(1)
	}
}

func run() error {
	// Its own flag set: controller-runtime registers --kubeconfig on the default one.
	fs := flag.NewFlagSet("allow-all-webhook", flag.ExitOnError)
	var (
		kubeconfig = fs.String("kubeconfig", "", "Kubeconfig of the apiserver; the manager needs one, nothing is read through it.")
		certDir    = fs.String("cert-dir", "", "Folder holding tls.crt and tls.key.")
		bind       = fs.String("webhook-bind-address", "127.0.0.1:9443", "host:port to serve the webhooks on.")
		metrics    = fs.String("metrics-bind-address", "0", "Address of /metrics; 0 disables it.")
		probes     = fs.String("health-probe-bind-address", "0", "Address of /healthz and /readyz.")
	)
	if err := fs.Parse(os.Args[1:]); err != nil {
		return err
	}
	host, portText, err := net.SplitHostPort(*bind)
	if err != nil {
		return err
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return err
	}
	// quota-webhook's TLS defaults: TLS 1.2 at least, modern cipher suites.
	tlsOpts := command.NewTLS()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme.Scheme,
		Metrics:                metricsserver.Options{BindAddress: *metrics},
		HealthProbeBindAddress: *probes,
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: host, Port: port, CertDir: *certDir,
			TLSOpts: []func(*tls.Config){tlsOpts.Apply},
		}),
	})
	if err != nil {
		return err
	}
	server := mgr.GetWebhookServer()
	server.Register(webhookconfig.ResourceBindingPath, admission.WithValidator[*workv1alpha2.ResourceBinding](mgr.GetScheme(), allowAll[*workv1alpha2.ResourceBinding]{}))
	server.Register(webhookconfig.KarmadaQuotaPath, admission.WithValidator[*quotav1alpha1.KarmadaQuota](mgr.GetScheme(), allowAll[*quotav1alpha1.KarmadaQuota]{}))
	server.Register(webhookconfig.WorkPath, admission.WithValidator[*workv1alpha1.Work](mgr.GetScheme(), allowAll[*workv1alpha1.Work]{}))
	server.Register(webhookconfig.ResourceTemplatePath, &admission.Webhook{Handler: admission.HandlerFunc(
		func(context.Context, admission.Request) admission.Response { return admission.Allowed("") })})
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("webhook", server.StartedChecker()); err != nil {
		return err
	}
	err = mgr.Start(ctrl.SetupSignalHandler())
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// allowAll admits every create, update and delete of T.
type allowAll[T any] struct{}

func (allowAll[T]) ValidateCreate(context.Context, T) (admission.Warnings, error) { return nil, nil }

func (allowAll[T]) ValidateUpdate(context.Context, T, T) (admission.Warnings, error) { return nil, nil }

func (allowAll[T]) ValidateDelete(context.Context, T) (admission.Warnings, error) { return nil, nil }
