package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/operator/pkg/install"
	"github.com/karmada-quota/karmada-quota/pkg/scheme"
	"github.com/karmada-quota/karmada-quota/pkg/util/command"
)

// phases maps the install subcommand's argument to the phase it runs.
var phases = map[string]func(*install.Installer, context.Context) error{
	"prepare":    (*install.Installer).Prepare,
	"register":   (*install.Installer).Register,
	"unregister": (*install.Installer).Unregister,
	"cleanup":    (*install.Installer).Cleanup,
}

type installOptions struct {
	config, manifests, karmadaKubeconfig, hostKubeconfig string
	timeout                                              time.Duration
}

func newInstallCommand() *cobra.Command {
	opts := installOptions{timeout: 10 * time.Minute}
	names := make([]string, 0, len(phases))
	for name := range phases {
		names = append(names, name)
	}
	slices.Sort(names)
	cmd := &cobra.Command{
		Use:   "install PHASE",
		Short: "Run one phase of an installation: prepare, register, unregister or cleanup (what the Helm chart's hook Jobs run)",
		Long: `Run one phase of installing karmada-quota into a Karmada, from the configuration and the karmada-apiserver
objects the Helm chart renders into its install ConfigMap:

  prepare     the CRD (first, and established), RBAC, business-team roles, a least-privilege identity per
              component, the self-managed certificates; before the components roll out
  register    the ValidatingWebhookConfiguration, once the webhook's rollout is complete
  unregister  the ValidatingWebhookConfiguration, before anything else goes
  cleanup     the rest; the CRD and the quotas stay unless the configuration says otherwise`,
		Args:          cobra.MatchAll(cobra.ExactArgs(1), cobra.OnlyValidArgs),
		ValidArgs:     names,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			// Not ctrl.SetupSignalHandler: it may be called once per process, and a phase is also run in-process
			// (the integration tests run several).
			signalled, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			ctx, cancel := context.WithTimeout(signalled, opts.timeout)
			defer cancel()
			err := runPhase(ctx, args[0], opts)
			if err != nil {
				klog.ErrorS(err, "Install phase failed", "phase", args[0])
			}
			return err
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&opts.config, "config", "", "The install configuration the chart renders (config.yaml of the install ConfigMap).")
	fs.StringVar(&opts.manifests, "manifests", "", "The karmada-apiserver's objects the chart renders (karmada.yaml of the install ConfigMap).")
	fs.StringVar(&opts.karmadaKubeconfig, "karmada-kubeconfig", "", "Admin kubeconfig of the karmada-apiserver.")
	fs.StringVar(&opts.hostKubeconfig, "kubeconfig", "", "Kubeconfig of the host cluster. Empty: $KUBECONFIG, else the in-cluster configuration.")
	fs.DurationVar(&opts.timeout, "timeout", opts.timeout, "Longest time the phase may take.")
	for _, required := range []string{"config", "manifests", "karmada-kubeconfig"} {
		_ = cmd.MarkFlagRequired(required)
	}
	return cmd
}

func runPhase(ctx context.Context, phase string, opts installOptions) error {
	installer, err := newInstaller(opts)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := phases[phase](installer, ctx); err != nil {
		return fmt.Errorf("%s: %w", phase, err)
	}
	installer.Log.Info("Install phase done", "phase", phase, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

func newInstaller(opts installOptions) (*install.Installer, error) {
	raw, err := os.ReadFile(opts.config)
	if err != nil {
		return nil, err
	}
	config, err := install.ParseConfig(raw)
	if err != nil {
		return nil, err
	}
	manifest, err := os.ReadFile(opts.manifests)
	if err != nil {
		return nil, err
	}
	objects, err := install.ParseObjects(manifest)
	if err != nil {
		return nil, err
	}
	kubeconfig, err := os.ReadFile(opts.karmadaKubeconfig)
	if err != nil {
		return nil, err
	}
	karmada, err := install.KarmadaFromKubeconfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	hostConfig, err := command.HostRestConfig(opts.hostKubeconfig)
	if err != nil {
		return nil, err
	}
	hostConfig.UserAgent = "karmada-quota-installer"
	host, err := client.New(hostConfig, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		return nil, err
	}
	installer := &install.Installer{
		Host: host, Karmada: karmada.Client, KarmadaCluster: karmada.Cluster,
		Config: config, Objects: objects, Log: klog.Background(),
	}
	if installer.Certificates, err = install.CertificatesFor(config, host, karmada.Client); err != nil {
		return nil, errors.Join(errors.New("the certificate configuration is invalid"), err)
	}
	return installer, nil
}
