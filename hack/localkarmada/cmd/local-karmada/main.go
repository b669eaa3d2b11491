// Command local-karmada starts and stops a real Karmada with member clusters as local processes, with
// karmada-quota installed (see hack/localkarmada), and walks through the quota's user stories on it
// (hack/localkarmada/demo). `make up`, `make down` and `make demo` run it.
//
//	local-karmada up        --dir DIR --tool-path DIR:DIR:... --kwok-stages FILE [--members N]
//	local-karmada down      --dir DIR
//	local-karmada supervise --dir DIR   (what `up` leaves running: restarts the processes that exit)
//	local-karmada demo --dir DIR --karmadactl PATH --plugin PATH
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/karmada-quota/karmada-quota/hack/localkarmada"
	"github.com/karmada-quota/karmada-quota/hack/localkarmada/demo"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "local-karmada:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: local-karmada up|down|supervise|demo [flags]")
	}
	// The demo is a command of this binary, not one of its own: both link the same large dependency graph
	// (hack/localkarmada), and `make demo` then runs the executable `make up` built instead of linking another,
	// which took as long as the demo itself. It takes its own flags.
	if args[0] == "demo" {
		if err := demo.Run(args[1:]); err != nil {
			return fmt.Errorf("demo failed: %w", err)
		}
		return nil
	}
	fset := flag.NewFlagSet("local-karmada "+args[0], flag.ContinueOnError)
	dir := fset.String("dir", ".local/karmada", "Folder of the environment: state, kubeconfigs, certificates, data, logs.")
	toolPath := fset.String("tool-path", "", "Colon-separated folders holding the binaries, first match wins.")
	stages := fset.String("kwok-stages", "", "KWOK stage configuration file.")
	members := fset.Int("members", 2, "Member clusters to start and join.")
	runtime := fset.String("container-runtime", "", "Run the host cluster's pods as containers under this runtime (podman) instead of as local processes.")
	if err := fset.Parse(args[1:]); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch args[0] {
	case "up":
		if *toolPath == "" || *stages == "" {
			return errors.New("--tool-path and --kwok-stages are required (`make up` sets them)")
		}
		abs, err := filepath.Abs(*dir)
		if err != nil {
			return err
		}
		supervisor, err := localkarmada.SupervisorCommand(abs)
		if err != nil {
			return err
		}
		env, err := localkarmada.Up(ctx, localkarmada.Options{
			Dir: abs, ToolPath: filepath.SplitList(*toolPath), KWOKStages: *stages, Members: *members,
			SupervisorCommand: supervisor, ContainerRuntime: *runtime, Progress: os.Stdout,
		})
		if err != nil {
			return err
		}
		printWelcome(env)
		return nil
	case "down":
		env, err := localkarmada.Load(*dir)
		if errors.Is(err, fs.ErrNotExist) {
			fmt.Println("nothing is running in", *dir)
			return nil
		}
		if err != nil {
			return err
		}
		if err := env.Down(); err != nil {
			return err
		}
		fmt.Printf("stopped %d processes; logs kept in %s\n", len(env.Processes), filepath.Join(env.Dir, "logs"))
		return nil
	case "supervise":
		env, err := localkarmada.Load(*dir)
		if err != nil {
			return err
		}
		// Until `make down` stops it (SIGTERM), which it does before stopping anything else.
		if err := env.Supervise(ctx); err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
		return nil
	default:
		return fmt.Errorf("unknown command %q: use up, down, supervise or demo", args[0])
	}
}

func printWelcome(env *localkarmada.Environment) {
	var members []string
	for _, m := range env.Members {
		members = append(members, fmt.Sprintf("  %-8s %s", m.Name, m.Kubeconfig))
	}
	// `make up` links the cached karmadactl into bin/.
	karmadactl := "bin/karmadactl --kubeconfig " + env.Karmada.Kubeconfig
	podsRun := "as local processes"
	if env.HostKubelet.Runtime != "" {
		podsRun = "as containers under " + env.HostKubelet.Runtime
	}
	fmt.Printf(`
Karmada is up with %d member clusters and karmada-quota installed (%d processes).

kubeconfigs
  karmada  %s
%s
  host     %s (node %s: pods run %s)
logs       %s

try
  %s get clusters
  %s get kq -A
  make demo       # the quota walkthrough on this environment
  make down       # stop everything make up started
(a process that exits is restarted, with back-off; logs/supervisor.log and each process's log say when)
`, len(env.Members), len(env.Processes), env.Karmada.Kubeconfig, strings.Join(members, "\n"),
		env.Host.Kubeconfig, env.HostKubelet.Node, podsRun, filepath.Join(env.Dir, "logs"), karmadactl, karmadactl)
}
