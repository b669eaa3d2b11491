package systems

import (
	"context"
	"fmt"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/pkg/util/command"
	"github.com/karmada-quota/karmada-quota/pkg/webhookconfig"
	"github.com/karmada-quota/karmada-quota/test/bench/internal/proc"
	"github.com/karmada-quota/karmada-quota/test/bench/internal/promtext"
)

// QuotaProcess is one quota-webhook or quota-controller process started on its own, as the scale run starts,
// measures and restarts them.
type QuotaProcess struct {
	*Component
	// Ready is how long the process took from its start to answering /readyz.
	Ready time.Duration
	// PprofAddr serves the process's /debug/pprof.
	PprofAddr string

	env         Env
	serving     string
	ca          []byte
	certCleanup func()
	registered  client.Object
}

// StartQuotaController starts bin (cmd/quota-controller) against the environment's apiserver and waits until it is
// ready (its caches synced).
func StartQuotaController(ctx context.Context, env Env, name, bin string, args ...string) (*QuotaProcess, error) {
	addrs, err := freeAddrs(3)
	if err != nil {
		return nil, err
	}
	metrics, health, pprof := addrs[0], addrs[1], addrs[2]
	start := time.Now()
	p, err := env.Reg.Start(name, env.LogDir, bin, append([]string{
		"--kubeconfig", env.CP.Kubeconfig,
		"--metrics-bind-address", metrics,
		"--health-probe-bind-address", health,
		"--pprof-bind-address", pprof,
	}, args...)...)
	if err != nil {
		return nil, err
	}
	qp := &QuotaProcess{Component: &Component{Role: "controller", Proc: p, MetricsAddr: metrics}, PprofAddr: pprof, env: env}
	if err := waitReady(ctx, p, "http://"+health+"/readyz"); err != nil {
		qp.Stop(ctx)
		return nil, fmt.Errorf("%s never became ready: %w", name, err)
	}
	qp.Ready = time.Since(start)
	return qp, nil
}

// StartQuotaWebhook starts bin (cmd/quota-webhook) with a fresh serving certificate and waits until it is ready
// (its quota informer synced) and serves TLS. Register points the apiserver at it.
func StartQuotaWebhook(ctx context.Context, env Env, name, bin string, args ...string) (*QuotaProcess, error) {
	certDir, ca, cleanup, err := servingCerts()
	if err != nil {
		return nil, err
	}
	addrs, err := freeAddrs(4)
	if err != nil {
		cleanup()
		return nil, err
	}
	serving, metrics, health, pprof := addrs[0], addrs[1], addrs[2], addrs[3]
	start := time.Now()
	p, err := env.Reg.Start(name, env.LogDir, bin, append([]string{
		"--kubeconfig", env.CP.Kubeconfig,
		"--cert-dir", certDir,
		"--webhook-bind-address", serving,
		"--metrics-bind-address", metrics,
		"--health-probe-bind-address", health,
		"--pprof-bind-address", pprof,
	}, args...)...)
	if err != nil {
		cleanup()
		return nil, err
	}
	qp := &QuotaProcess{Component: &Component{Role: "webhook", Proc: p, MetricsAddr: metrics}, PprofAddr: pprof, env: env, serving: serving, ca: ca, certCleanup: cleanup}
	if err := waitReady(ctx, p, "http://"+health+"/readyz"); err != nil {
		qp.Stop(ctx)
		return nil, fmt.Errorf("%s never became ready: %w", name, err)
	}
	qp.Ready = time.Since(start)
	if err := waitServing(ctx, p, serving, ca); err != nil {
		qp.Stop(ctx)
		return nil, err
	}
	return qp, nil
}

// Register registers the webhook with the production configuration.
func (p *QuotaProcess) Register(ctx context.Context) error {
	conf := webhookconfig.Configuration("https://"+p.serving, p.ca, webhookconfig.DefaultTimeoutSeconds)
	if err := p.env.CP.Client.Create(ctx, conf); err != nil {
		return fmt.Errorf("registering the webhooks: %w", err)
	}
	p.registered = conf
	return nil
}

// RSS is the process's resident memory in bytes.
func (p *QuotaProcess) RSS() (int64, error) {
	return command.ResidentBytes(p.Proc.PID())
}

// LiveHeap collects the process's garbage and returns the heap that is left: what it holds, which RSS overstates by
// the collector's headroom and the memory not yet returned to the system. The heap profile taken on the way is
// written to profile (go tool pprof reads it), unless profile is empty.
func (p *QuotaProcess) LiveHeap(ctx context.Context, profile string) (int64, error) {
	heap, err := httpGet(ctx, "http://"+p.PprofAddr+"/debug/pprof/heap?gc=1")
	if err != nil {
		return 0, err
	}
	if profile != "" {
		if err := os.WriteFile(profile, []byte(heap), 0o644); err != nil {
			return 0, err
		}
	}
	text, err := p.Scrape(ctx)
	if err != nil {
		return 0, err
	}
	m := promtext.Parse(text)
	if !m.Has("go_memstats_heap_alloc_bytes") {
		return 0, fmt.Errorf("%s exports no go_memstats_heap_alloc_bytes", p.Role)
	}
	return int64(m.Sum("go_memstats_heap_alloc_bytes", nil)), nil
}

// Stop unregisters the webhook, if registered, and stops the process.
func (p *QuotaProcess) Stop(ctx context.Context) error {
	var err error
	if p.registered != nil {
		err = client.IgnoreNotFound(p.env.CP.Client.Delete(ctx, p.registered))
		p.registered = nil
	}
	p.Proc.Stop(10 * time.Second)
	if p.certCleanup != nil {
		p.certCleanup()
		p.certCleanup = nil
	}
	return err
}

// waitReady polls url finely, so that the time to ready is measured to a few tens of milliseconds.
func waitReady(ctx context.Context, p *proc.Process, url string) error {
	return wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		if exited, err := p.Exited(); exited {
			return false, fmt.Errorf("%s exited: %v (see its log)", p.Name, err)
		}
		_, err := httpGet(ctx, url)
		return err == nil, nil
	})
}
