// Package localkarmada runs a real Karmada with member clusters on one machine as local processes, without
// Docker: etcd and kube-apiserver for the Karmada control plane and for each member, Karmada's own components,
// kube-controller-manager, kube-scheduler and KWOK fake nodes in each member, and karmada-quota installed the way a
// production install does it. `make up`, `make demo` and the e2e suite all run on it.
//
// A host cluster, where Karmada's control plane would run as pods, comes up alongside: etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, and local-kubelet (package kubelet) as its only node, which runs pods as
// local processes and serves the host's Services to the karmada-apiserver through its HTTPS_PROXY.
//
// Every process is recorded, with the command that started it, in a state file in the environment's folder, so
// the environment can be stopped (by PID) from another program than the one that started it, and a process can be
// killed and restarted by a test. A process that exits by itself is restarted with back-off (supervise.go).
//
// What runs where, by folder:
//
//	hack/localkarmada                    this package: starts, records and stops the environment (`make up`, e2e)
//	hack/localkarmada/cmd/local-karmada  the command of `make up`, `make down` and `make demo`
//	hack/localkarmada/cmd/local-kubelet  the host cluster's only node: a process this package starts
//	hack/localkarmada/kubelet            what local-kubelet does: pods as local processes, Services through a proxy
//	hack/localkarmada/demo               the narrated walkthrough of `make demo`, against a running environment
//
// The binaries it runs are built by `make local-karmada-tools` and `make local-kubelet`; the repository root, the
// pinned Karmada's CRDs and webhook configurations, and free loopback ports come from internal/testenv.
package localkarmada

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	configv1alpha1 "github.com/karmada-io/karmada/pkg/apis/config/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/hack/localkarmada/kubelet"
	operatorv1alpha1 "github.com/karmada-quota/karmada-quota/operator/api/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/scheme"
	"github.com/karmada-quota/karmada-quota/pkg/util/command"
)

// Scheme knows the Kubernetes, Karmada and karmada-quota types the environment and its users write or inspect.
var Scheme = runtime.NewScheme()

func init() {
	utilruntime.Must(scheme.AddToScheme(Scheme))
	utilruntime.Must(apiextensionsv1.AddToScheme(Scheme))
	utilruntime.Must(configv1alpha1.AddToScheme(Scheme))
	utilruntime.Must(operatorv1alpha1.AddToScheme(Scheme))
}

const stateFile = "state.json"

// Options describe the environment to start.
type Options struct {
	// Dir holds everything the environment writes: certificates, kubeconfigs, etcd data, logs and the state file.
	Dir string
	// ToolPath lists the folders the binaries are looked up in, first match wins: the version-keyed build cache
	// folders and the project's bin folder.
	ToolPath []string
	// KWOKStages is the file with KWOK's stage configurations (node and pod lifecycles).
	KWOKStages string
	// Members is how many member clusters to start and join.
	Members int
	// QuotaValues are Helm values karmada-quota's chart is installed with, besides the images.
	QuotaValues map[string]any
	// Tied processes die with the program that started them (tests), which supervises them itself; untied ones
	// outlive it (`make up`), supervised by SupervisorCommand run in the background.
	Tied bool
	// SupervisorCommand restarts the untied processes that exit (SupervisorCommand(Dir)); required unless Tied.
	SupervisorCommand []string
	// ContainerRuntime, when set (kubelet.RuntimePodman), runs the host's pods as containers under that runtime
	// instead of as local processes.
	ContainerRuntime string
	// Progress receives one line per step; nil discards them.
	Progress io.Writer
}

// Environment is a running topology.
type Environment struct {
	Dir string `json:"dir"`
	// Karmada is the karmada-apiserver; Members are the member clusters' apiservers, by cluster name.
	Karmada APIServer   `json:"karmada"`
	Members []APIServer `json:"members"`
	// Host is the host cluster: where Karmada's control plane runs as pods in production and where karmada-quota's
	// chart puts its Deployments. Its only node is a local-kubelet, which runs pods as local processes.
	Host        APIServer   `json:"host"`
	HostKubelet KubeletInfo `json:"hostKubelet"`
	// Processes in start order; they are stopped in reverse.
	Processes []*Process `json:"processes"`
	// Supervisor restarts the processes that exit, when it runs in the background (`make up`); nil when the program
	// that started the environment supervises it (tests).
	Supervisor *Process `json:"supervisor,omitempty"`
	// Health is each process's readiness endpoint, by process name; processes without one are checked by their
	// effect (a member's KWOK by its nodes turning Ready).
	Health map[string]string `json:"health"`
	// CA signs every certificate of the environment.
	CA string `json:"ca"`
	// AdminCert is the client certificate of the system:masters user every kubeconfig of the environment uses.
	AdminCert keyPair `json:"adminCert"`
	Started   string  `json:"started"`

	tied     bool
	progress io.Writer
	// mu guards Processes and Health while Up starts the members and Karmada's components side by side.
	mu     sync.Mutex
	saving sync.Mutex
	// ops makes this program's goroutines take turns in update, as the lock file makes programs do.
	ops sync.Mutex
	// stopSupervising stops the supervisor goroutine of a tied environment.
	stopSupervising func()
}

// KubeletInfo describes the host cluster's local-kubelet.
type KubeletInfo struct {
	// Node is the name of its Node.
	Node string `json:"node"`
	// ImageDir is the environment's own image folder: a docker-archive written there runs at once. ImageDirs are
	// every folder the kubelet reads images from: ImageDir, then the repository's bin/images (`make images`).
	ImageDir  string   `json:"imageDir"`
	ImageDirs []string `json:"imageDirs"`
	// RootDir holds the pods' sandboxes; LogDir the containers' output (kubelet.ContainerLogPath), kept by Down.
	RootDir string `json:"rootDir"`
	LogDir  string `json:"logDir"`
	// ServiceProxy is where the kubelet's service proxy listens, the karmada-apiserver's HTTPS_PROXY.
	ServiceProxy string `json:"serviceProxy"`
	// Runtime is the container runtime the pods run under (kubelet.Config.Runtime); empty: local processes.
	Runtime string `json:"runtime,omitempty"`
}

// APIServer is one kube-apiserver of the environment.
type APIServer struct {
	Name       string `json:"name"`
	URL        string `json:"url"`
	Kubeconfig string `json:"kubeconfig"`
}

// Load reads the environment recorded in dir, started by this or another program.
func Load(dir string) (*Environment, error) {
	raw, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return nil, err
	}
	var env Environment
	if err := json.Unmarshal(raw, &env); err != nil {
		return nil, fmt.Errorf("reading %s: %w", filepath.Join(dir, stateFile), err)
	}
	return &env, nil
}

// record adds a started process, so it is stopped with the environment even if the start-up fails later.
func (e *Environment) record(p *Process, health string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.Processes = append(e.Processes, p)
	if health != "" {
		e.Health[p.Name] = health
	}
}

func (e *Environment) save() error {
	// Steps that run side by side save at once: one writer at a time, or they would rename each other's file.
	e.saving.Lock()
	defer e.saving.Unlock()
	e.mu.Lock()
	raw, err := json.MarshalIndent(e, "", "  ")
	e.mu.Unlock()
	if err != nil {
		return err
	}
	tmp := filepath.Join(e.Dir, stateFile+".tmp")
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(e.Dir, stateFile))
}

func (e *Environment) logf(format string, args ...any) {
	if e.progress != nil {
		fmt.Fprintf(e.progress, format+"\n", args...)
	}
}

// Process returns the process recorded under name.
func (e *Environment) Process(name string) (*Process, error) {
	i := slices.IndexFunc(e.Processes, func(p *Process) bool { return p.Name == name })
	if i < 0 {
		return nil, fmt.Errorf("no process named %q in the environment", name)
	}
	return e.Processes[i], nil
}

// Running reports whether every recorded process is alive and the karmada-apiserver answers ready.
func (e *Environment) Running(ctx context.Context) bool {
	alive := true
	err := e.update(func() error {
		for _, p := range e.Processes {
			alive = alive && p.Alive()
		}
		return nil
	})
	if err != nil || !alive {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return e.healthy(ctx, e.Karmada.URL+"/readyz") == nil
}

// Down stops the supervisor, then every process in reverse start order, and removes what the environment wrote,
// except its logs.
func (e *Environment) Down() error {
	if err := e.stopSupervisor(); err != nil {
		return fmt.Errorf("stopping the supervisor: %w", err)
	}
	var errs []error
	err := e.update(func() error {
		for i := len(e.Processes) - 1; i >= 0; i-- {
			if err := e.Processes[i].stop(10 * time.Second); err != nil {
				errs = append(errs, err)
			}
		}
		return nil
	})
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		// Keep the state file: it is the only record of what still runs.
		return err
	}
	if e.HostKubelet.Runtime != "" {
		// The kubelet stopped its containers; what a killed kubelet left, and the image layers, podman removes.
		if err := kubelet.RemoveContainerStorage(context.Background(), e.HostKubelet.RootDir); err != nil {
			return fmt.Errorf("removing the host's containers: %w", err)
		}
	}
	entries, err := os.ReadDir(e.Dir)
	if err != nil {
		return err
	}
	for _, entry := range entries {
		if entry.Name() != "logs" {
			errs = append(errs, os.RemoveAll(filepath.Join(e.Dir, entry.Name())))
		}
	}
	return errors.Join(errs...)
}

// Kill stops a process at once, as a crash would, and keeps it down until Start.
func (e *Environment) Kill(name string) error {
	return e.update(func() error {
		p, err := e.Process(name)
		if err != nil {
			return err
		}
		p.Held = true
		return p.kill()
	})
}

// Start starts a stopped process again with the command it first ran with and waits until it is ready.
func (e *Environment) Start(ctx context.Context, name string) error {
	// The run this call started, copied: the supervisor may record another run in the environment's records
	// while the wait goes on.
	var started Process
	err := e.update(func() error {
		p, err := e.Process(name)
		if err != nil {
			return err
		}
		if p.Alive() {
			return fmt.Errorf("%s is already running (pid %d)", name, p.PID)
		}
		p.Held = false
		if err := p.start(e.tied); err != nil {
			return err
		}
		started = *p
		return nil
	})
	if err != nil {
		return err
	}
	return e.waitReady(ctx, &started)
}

// Restarts is how many times the supervisor restarted a process after it exited, and the last line it wrote
// before the latest.
func (e *Environment) Restarts(name string) (int, string, error) {
	var restarts int
	var lastExit string
	err := e.update(func() error {
		p, err := e.Process(name)
		if err == nil {
			restarts, lastExit = p.Restarts, p.LastExit
		}
		return err
	})
	return restarts, lastExit, err
}

// RESTConfig is a system:masters client configuration for the apiserver with the given kubeconfig.
func RESTConfig(kubeconfig string) (*rest.Config, error) {
	cfg, err := command.RestConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 200, 400
	return cfg, nil
}

// Client is a client for the apiserver with the given kubeconfig, with the environment's scheme.
func Client(kubeconfig string) (client.Client, error) {
	cfg, err := RESTConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: Scheme})
}

func (e *Environment) httpClient() (*http.Client, error) {
	ca, err := os.ReadFile(e.CA)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	cert, err := tls.LoadX509KeyPair(e.AdminCert.Cert, e.AdminCert.Key)
	if err != nil {
		return nil, err
	}
	return &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}},
	}, nil
}

// healthy polls url until it answers 200, the process serving it dies, or ctx ends.
func (e *Environment) healthy(ctx context.Context, url string) error {
	hc, err := e.httpClient()
	if err != nil {
		return err
	}
	defer hc.CloseIdleConnections()
	var last string
	err = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := hc.Do(req)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		last = fmt.Sprintf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("%s never answered ready (last: %s): %w", url, last, err)
	}
	return nil
}

// waitReady waits for a process's health endpoint, failing early, with the log's tail, when the process dies.
func (e *Environment) waitReady(ctx context.Context, p *Process) error {
	e.mu.Lock()
	url := e.Health[p.Name]
	e.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	died := make(chan struct{})
	go func() {
		defer close(died)
		for p.Alive() && ctx.Err() == nil {
			time.Sleep(50 * time.Millisecond)
		}
	}()
	if url == "" {
		return nil
	}
	readyCtx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		select {
		case <-died:
			stop()
		case <-readyCtx.Done():
		}
	}()
	err := e.healthy(readyCtx, url)
	if err != nil && !p.Alive() {
		return fmt.Errorf("%s exited while starting; the end of %s:\n%s", p.Name, p.Log, tail(p.Log, 20))
	}
	return err
}

// LogTail returns the last lines of a process's log, for a failure report.
func (e *Environment) LogTail(name string, lines int) string {
	p, err := e.Process(name)
	if err != nil {
		return err.Error()
	}
	return tail(p.Log, lines)
}

func tail(path string, lines int) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}

// lookPath finds a binary in the tool path.
func lookPath(toolPath []string, name string) (string, error) {
	for _, dir := range toolPath {
		p := filepath.Join(dir, name)
		if info, err := os.Stat(p); err == nil && !info.IsDir() && info.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found in %s: run `make local-karmada-tools build`", name, strings.Join(toolPath, ":"))
}
