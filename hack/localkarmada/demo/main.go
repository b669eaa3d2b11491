// Package demo walks through karmada-quota's user stories on the local Karmada of `make up`, narrated: an admin
// gives business A 100 CPU across all member clusters, a team deploys Divided and Duplicated workloads and watches
// the usage, a deployment that would exceed the quota is refused, and scaling another one down lets it through
// without anyone touching it. `make demo` runs it as a command of hack/localkarmada/cmd/local-karmada:
//
//	local-karmada demo --dir .local/karmada --karmadactl PATH --plugin PATH
//
// Every claim it prints is read back from the running system, and every wait is bounded: a step that does not
// happen fails the demo with what was awaited and what was last seen.
package demo

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/karmada-quota/karmada-quota/hack/localkarmada"
)

// demo is the running story: the environment, its clients and the narration.
type demo struct {
	*narrator
	env            *localkarmada.Environment
	karmadactlPath string
	pluginPath     string
	karmada        client.Client
	karmadaConfig  *rest.Config
	members        []member
}

// member is one member cluster, reached directly through its own kubeconfig.
type member struct {
	name       string
	kubeconfig string
	client     client.Client
}

// Run runs the demo with its command-line arguments.
func Run(args []string) error {
	fset := flag.NewFlagSet("demo", flag.ContinueOnError)
	dir := fset.String("dir", ".local/karmada", "Folder of the local Karmada started by `make up`.")
	karmadactl := fset.String("karmadactl", "karmadactl", "Path of the karmadactl binary the demo runs.")
	plugin := fset.String("plugin", "kubectl-karmada-quota", "Path of the kubectl-karmada-quota plugin the demo runs.")
	if err := fset.Parse(args); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The watches of step 4 log through controller-runtime; the narration says what matters, and a wait that
	// fails says what it saw.
	crlog.SetLogger(crlog.Log.WithSink(crlog.NullLogSink{}))

	d, err := connect(ctx, *dir, *karmadactl, *plugin)
	if err != nil {
		return err
	}
	return d.story(ctx)
}

// connect finds the running environment and makes the clients, failing with what to do when nothing runs.
func connect(ctx context.Context, dir, karmadactl, plugin string) (*demo, error) {
	env, err := localkarmada.Load(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no local Karmada in %s: run `make up` first", dir)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the local Karmada in %s: %w", dir, err)
	}
	if !env.Running(ctx) {
		return nil, fmt.Errorf("the local Karmada in %s is not (fully) running: run `make up` first", dir)
	}
	path, err := exec.LookPath(karmadactl)
	if err != nil {
		return nil, fmt.Errorf("karmadactl (--karmadactl %s): %w; `make local-karmada-tools` builds it", karmadactl, err)
	}
	// Absolute, so the commands the demo suggests at the end work from any folder.
	if path, err = filepath.Abs(path); err != nil {
		return nil, err
	}
	pluginPath, err := exec.LookPath(plugin)
	if err != nil {
		return nil, fmt.Errorf("kubectl-karmada-quota (--plugin %s): %w; `make build` builds it", plugin, err)
	}
	if pluginPath, err = filepath.Abs(pluginPath); err != nil {
		return nil, err
	}
	d := &demo{narrator: newNarrator(os.Stdout), env: env, karmadactlPath: path, pluginPath: pluginPath}
	if d.karmadaConfig, err = localkarmada.RESTConfig(env.Karmada.Kubeconfig); err != nil {
		return nil, err
	}
	if d.karmada, err = localkarmada.Client(env.Karmada.Kubeconfig); err != nil {
		return nil, err
	}
	for _, m := range env.Members {
		c, err := localkarmada.Client(m.Kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("member %s: %w", m.Name, err)
		}
		d.members = append(d.members, member{name: m.Name, kubeconfig: m.Kubeconfig, client: c})
	}
	// The story's numbers are for two clusters (a Duplicated workload costs once per cluster); further members,
	// if any were started, stay out of it.
	if len(d.members) < clusters {
		return nil, fmt.Errorf("the local Karmada in %s has %d member clusters; the demo needs %d: run `make down` and `make up`",
			dir, len(d.members), clusters)
	}
	d.members = d.members[:clusters]
	return d, nil
}
