// Package controlplane starts the one control plane a benchmark run measures: etcd and kube-apiserver from
// KUBEBUILDER_ASSETS with Karmada's CRDs (from the pinned Karmada module) and karmada-quota's, as the integration
// tests run it (internal/testenv). It gives the child processes a kubeconfig, and registers etcd's and
// kube-apiserver's PIDs with the process watchdog so that a killed harness does not leave them running.
package controlplane

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/karmada-quota/karmada-quota/internal/testenv"
	"github.com/karmada-quota/karmada-quota/test/bench/internal/proc"
)

// SystemNamespace is where the controllers keep their leader-election leases, as in a Karmada installation.
const SystemNamespace = "karmada-system"

// ControlPlane is a running etcd + kube-apiserver.
type ControlPlane struct {
	// Config reaches the apiserver as an administrator, without client-side rate limiting: the harness's writers
	// must never be the ones who wait.
	Config *rest.Config
	Client client.Client
	Kube   kubernetes.Interface
	// Kubeconfig is a file the child processes use.
	Kubeconfig string
	// PIDs are etcd's and kube-apiserver's process ids, for CPU accounting.
	PIDs map[string]int

	env  *envtest.Environment
	reg  *proc.Registry
	pids []int // every process envtest started, named or not
}

// Start starts the control plane, writing its kubeconfig into dir.
func Start(ctx context.Context, reg *proc.Registry, dir string) (*ControlPlane, error) {
	env, err := testenv.NewEnvironment()
	if err != nil {
		return nil, err
	}
	before, err := proc.Children()
	if err != nil {
		return nil, err
	}
	cfg, err := env.Start()
	// Registered before anything else can fail, so that the watchdog knows them even if Start half-succeeded.
	after, _ := proc.Children()
	cp := &ControlPlane{env: env, reg: reg, PIDs: map[string]int{}}
	for pid := range after {
		if before[pid] {
			continue
		}
		reg.Add(pid)
		cp.pids = append(cp.pids, pid)
		if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil {
			cp.PIDs[string(trimNL(comm))] = pid
		}
	}
	if err != nil {
		cp.Stop()
		return nil, fmt.Errorf("starting etcd and kube-apiserver: %w", err)
	}
	if err := cp.init(ctx, cfg, dir); err != nil {
		cp.Stop()
		return nil, err
	}
	return cp, nil
}

func (cp *ControlPlane) init(ctx context.Context, cfg *rest.Config, dir string) error {
	user, err := cp.env.AddUser(envtest.User{Name: "bench-admin", Groups: []string{"system:masters"}}, cfg)
	if err != nil {
		return fmt.Errorf("adding the administrator: %w", err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return err
	}
	cp.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(cp.Kubeconfig, kubeconfig, 0o600); err != nil {
		return err
	}
	cp.Config = rest.CopyConfig(user.Config())
	cp.Config.QPS, cp.Config.Burst = -1, 0 // no client-side throttling for the harness
	cp.Config.Timeout = 70 * time.Second
	if cp.Client, err = client.New(cp.Config, client.Options{Scheme: cp.env.Scheme}); err != nil {
		return err
	}
	if cp.Kube, err = kubernetes.NewForConfig(cp.Config); err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: SystemNamespace}}
	return cp.Client.Create(ctx, ns)
}

// Metrics returns the apiserver's /metrics text.
func (cp *ControlPlane) Metrics(ctx context.Context) (string, error) {
	b, err := cp.Kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	return string(b), err
}

// Stop stops kube-apiserver and etcd, and kills them by PID if envtest could not.
func (cp *ControlPlane) Stop() error {
	var errs []error
	if err := cp.env.Stop(); err != nil {
		errs = append(errs, err)
	}
	for _, pid := range cp.pids {
		if syscall.Kill(pid, 0) == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		cp.reg.Remove(pid)
	}
	return errors.Join(errs...)
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
