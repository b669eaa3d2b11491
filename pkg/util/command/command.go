// Package command builds the commands of karmada-quota's binaries the same way: flags plus klog's, options
// validated before anything starts, the karmada-apiserver's rest config, and a context cancelled on SIGTERM.
package command

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/karmada-quota/karmada-quota/pkg/version"
)

// Options are a binary's flags.
type Options interface {
	AddFlags(fs *pflag.FlagSet)
	Validate() error
}

// New returns the command use: it validates opts, loads the rest config from *kubeconfig (in-cluster config or
// $KUBECONFIG when empty) and calls run until a termination signal. `use --version` prints the build and exits.
func New(use, short string, opts Options, kubeconfig *string, run func(ctx context.Context, cfg *rest.Config) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:           use,
		Short:         short,
		Version:       version.Get().String(),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(*cobra.Command, []string) error {
			if err := opts.Validate(); err != nil {
				klog.ErrorS(err, "Invalid options")
				return err
			}
			setMemoryLimit()
			cfg, err := RestConfig(*kubeconfig)
			if err != nil {
				klog.ErrorS(err, "Cannot reach the karmada-apiserver")
				return err
			}
			if err := run(ctrl.SetupSignalHandler(), cfg); err != nil {
				klog.ErrorS(err, use+" failed")
				return err
			}
			return nil
		},
	}
	cmd.SetVersionTemplate("{{.Name}} {{.Version}}\n")
	opts.AddFlags(cmd.Flags())
	klogFlags := flag.NewFlagSet("klog", flag.ExitOnError)
	klog.InitFlags(klogFlags)
	cmd.Flags().AddGoFlagSet(klogFlags)
	return cmd
}

// setMemoryLimit tells the Go runtime the container's memory limit (MemoryLimit), unless $GOMEMLIMIT set one.
func setMemoryLimit() {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	limit, err := MemoryLimit(cgroupFS())
	switch {
	case errors.Is(err, ErrNoMemoryLimit):
	case err != nil:
		klog.InfoS("The container's memory limit could not be read; the Go runtime is left without one", "err", err)
	default:
		debug.SetMemoryLimit(limit)
		klog.InfoS("Go memory limit set below the container's", "bytes", limit)
	}
}

// RestConfig loads a kubeconfig file, or the in-cluster config or $KUBECONFIG when path is empty.
func RestConfig(path string) (*rest.Config, error) {
	if path == "" {
		return ctrl.GetConfig()
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", path, err)
	}
	return cfg, nil
}

// HostRestConfig loads the host cluster's kubeconfig file at path. When path is empty it follows the standard
// client loading rules: the kubeconfig files $KUBECONFIG names, else the pod's in-cluster config. Unlike
// RestConfig it never reads ~/.kube/config, which on a workstation points at some other cluster.
func HostRestConfig(path string) (*rest.Config, error) {
	if path != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			return nil, fmt.Errorf("loading host kubeconfig %s: %w", path, err)
		}
		return cfg, nil
	}
	if env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar); env != "" {
		rules := &clientcmd.ClientConfigLoadingRules{Precedence: filepath.SplitList(env)}
		cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("loading the host kubeconfig from $%s=%s: %w", clientcmd.RecommendedConfigPathEnvVar, env, err)
		}
		return cfg, nil
	}
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("no host kubeconfig file given, $%s unset, and not running in a cluster: %w", clientcmd.RecommendedConfigPathEnvVar, err)
	}
	return cfg, nil
}
