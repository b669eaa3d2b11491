package localkarmada

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/release"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/karmada-quota/karmada-quota/internal/testenv"
)

// QuotaRelease is the Helm release karmada-quota is installed as, in the host's karmada-system, as an admin
// installs it: `helm install karmada-quota deploy/charts/karmada-quota -n karmada-system`.
const QuotaRelease = "karmada-quota"

// Components of the karmada-quota release, by the names of their Deployments in the host.
const (
	QuotaWebhookDeployment    = QuotaRelease + "-webhook"
	QuotaControllerDeployment = QuotaRelease + "-controller"
)

// helmTimeout bounds one Helm operation: its hook Jobs, and its wait for every Deployment to be available.
const helmTimeout = 5 * time.Minute

// QuotaChart loads the chart from the repository, as `helm install ./deploy/charts/karmada-quota` does.
func QuotaChart() (*chart.Chart, error) {
	return loader.Load(filepath.Join(testenv.RepoRoot(), "deploy", "charts", "karmada-quota"))
}

// QuotaImages says where the host's kubelet finds karmada-quota's images: the registry and tag of the archives
// `make images` wrote, which the chart's image values must name.
func (e *Environment) QuotaImages() (registry, tag string, err error) {
	for _, dir := range e.HostKubelet.ImageDirs {
		manifest, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(filepath.Join(dir, "quota-webhook.tar")) })
		if err != nil {
			continue
		}
		for _, d := range manifest {
			for _, t := range d.RepoTags {
				ref, err := name.NewTag(t)
				if err != nil {
					continue
				}
				repo := ref.Context().Name()
				return strings.TrimSuffix(repo, "/quota-webhook"), ref.TagStr(), nil
			}
		}
	}
	return "", "", fmt.Errorf("no quota-webhook image archive in %s: run `make images`", strings.Join(e.HostKubelet.ImageDirs, ", "))
}

// QuotaValues are the values the environment installs the chart with: the images `make images` built, merged
// with extra (nested maps merge; other values replace).
func (e *Environment) QuotaValues(extra map[string]any) (map[string]any, error) {
	registry, tag, err := e.QuotaImages()
	if err != nil {
		return nil, err
	}
	values := map[string]any{
		"image": map[string]any{"registry": registry, "tag": tag},
		// The members are read every few seconds here, so that a demo or a test sees them without waiting a minute.
		// The controller logs at V(2): its rare decisions about Works that lag their bindings (a shrink read past the
		// view, a Work left behind) are what the logs of a failed run must show.
		"controller": map[string]any{"logVerbosity": 2, "memberSampling": map[string]any{"interval": "5s", "grace": "15s"}},
	}
	mergeValues(values, extra)
	return values, nil
}

func mergeValues(dst, src map[string]any) {
	for k, v := range src {
		if sub, ok := v.(map[string]any); ok {
			if existing, ok := dst[k].(map[string]any); ok {
				mergeValues(existing, sub)
				continue
			}
		}
		dst[k] = v
	}
}

// helm is a Helm action configuration for a namespace of the host cluster.
func (e *Environment) helm(namespace string) (*action.Configuration, error) {
	flags := genericclioptions.NewConfigFlags(false)
	kubeconfig := e.Host.Kubeconfig
	flags.KubeConfig, flags.Namespace = &kubeconfig, &namespace
	cfg := new(action.Configuration)
	if err := cfg.Init(flags, namespace, "secret", func(string, ...any) {}); err != nil {
		return nil, fmt.Errorf("connecting Helm to the host cluster: %w", err)
	}
	return cfg, nil
}

// HelmInstall installs a chart as `helm install --wait --wait-for-jobs` does: the pre-install hooks, every
// Deployment available, then the post-install hooks.
func (e *Environment) HelmInstall(ctx context.Context, release, namespace string, ch *chart.Chart, values map[string]any) (*release.Release, error) {
	cfg, err := e.helm(namespace)
	if err != nil {
		return nil, err
	}
	install := action.NewInstall(cfg)
	install.ReleaseName, install.Namespace, install.CreateNamespace = release, namespace, true
	install.Wait, install.WaitForJobs, install.Timeout = true, true, helmTimeout
	rel, err := install.RunWithContext(ctx, ch, values)
	if err != nil {
		return nil, fmt.Errorf("helm install %s: %w%s", release, err, e.hostFailures(ctx))
	}
	return rel, nil
}

// HelmUpgrade upgrades a release to the chart with the given values (none reused from the previous ones, as
// `helm upgrade` without --reuse-values) and waits like HelmInstall.
func (e *Environment) HelmUpgrade(ctx context.Context, release, namespace string, ch *chart.Chart, values map[string]any) (*release.Release, error) {
	cfg, err := e.helm(namespace)
	if err != nil {
		return nil, err
	}
	upgrade := action.NewUpgrade(cfg)
	upgrade.Namespace = namespace
	upgrade.Wait, upgrade.WaitForJobs, upgrade.Timeout = true, true, helmTimeout
	rel, err := upgrade.RunWithContext(ctx, release, ch, values)
	if err != nil {
		return nil, fmt.Errorf("helm upgrade %s: %w%s", release, err, e.hostFailures(ctx))
	}
	return rel, nil
}

// HelmUninstall uninstalls a release and waits until its objects are gone, hooks included.
func (e *Environment) HelmUninstall(ctx context.Context, release, namespace string) error {
	cfg, err := e.helm(namespace)
	if err != nil {
		return err
	}
	uninstall := action.NewUninstall(cfg)
	uninstall.Wait, uninstall.Timeout = true, helmTimeout
	if _, err := uninstall.Run(release); err != nil {
		return fmt.Errorf("helm uninstall %s: %w%s", release, err, e.hostFailures(ctx))
	}
	return nil
}

// InstallQuota installs karmada-quota's chart as the release QuotaRelease in karmada-system.
func (e *Environment) InstallQuota(ctx context.Context, values map[string]any) (*release.Release, error) {
	ch, err := QuotaChart()
	if err != nil {
		return nil, err
	}
	return e.HelmInstall(ctx, QuotaRelease, KarmadaNamespace, ch, values)
}

// UpgradeQuota upgrades the QuotaRelease to the chart with the given values.
func (e *Environment) UpgradeQuota(ctx context.Context, values map[string]any) (*release.Release, error) {
	ch, err := QuotaChart()
	if err != nil {
		return nil, err
	}
	return e.HelmUpgrade(ctx, QuotaRelease, KarmadaNamespace, ch, values)
}

// UninstallQuota uninstalls the QuotaRelease.
func (e *Environment) UninstallQuota(ctx context.Context) error {
	return e.HelmUninstall(ctx, QuotaRelease, KarmadaNamespace)
}

// OperatorChart loads the operator's chart from the repository.
func OperatorChart() (*chart.Chart, error) {
	return loader.Load(filepath.Join(testenv.RepoRoot(), "operator", "charts", "karmada-quota-operator"))
}

// hostFailures renders the logs of the host's failing pods, for an error report.
func (e *Environment) hostFailures(ctx context.Context) string {
	if logs := e.FailingPodLogs(ctx, 30); logs != "" {
		return "\n" + logs
	}
	return ""
}
