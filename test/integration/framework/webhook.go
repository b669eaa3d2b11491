package framework

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"sync/atomic"
	"time"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	webhookapp "github.com/karmada-quota/karmada-quota/cmd/quota-webhook/app"
	"github.com/karmada-quota/karmada-quota/internal/testenv/loopback"
	"github.com/karmada-quota/karmada-quota/pkg/webhookconfig"
)

// Webhooks are quota-webhook replicas running the real app against the test apiserver, reached through one
// round-robin address, as a Service would spread the apiserver's calls over the replicas of a Deployment.
type Webhooks struct {
	// URL is the address registered in the ValidatingWebhookConfiguration.
	URL string
	// CA verifies the replicas' serving certificate.
	CA []byte

	stop  func()
	done  []chan error
	proxy *roundRobin
	// probes are the replicas' health probe addresses, for WaitReady.
	probes []string
}

// StartWebhooks starts replicas of the webhook on loopback, waits until each serves TLS, and registers the
// webhook configuration pointing at them. Tune receives each replica's options before it starts; configure, the
// configuration before it is registered (nil keeps the production one).
func StartWebhooks(ctx context.Context, cfg *rest.Config, c client.Client, replicas int, tune func(*webhookapp.Options),
	configure func(*admissionregistrationv1.ValidatingWebhookConfiguration)) (*Webhooks, error) {
	certs := &envtest.WebhookInstallOptions{LocalServingHost: "127.0.0.1"}
	if err := certs.PrepWithoutInstalling(); err != nil {
		return nil, fmt.Errorf("creating serving certificates: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	w := &Webhooks{CA: certs.LocalServingCAData, stop: cancel}
	var backends []string
	for i := 0; i < replicas; i++ {
		ports, err := loopback.FreePorts(2)
		if err != nil {
			cancel()
			return nil, err
		}
		opts := webhookapp.NewOptions()
		opts.BindAddress = fmt.Sprintf("127.0.0.1:%d", ports[0])
		opts.CertDir = certs.LocalServingCertDir
		opts.MetricsBindAddress = "0"
		opts.HealthProbeBindAddress = fmt.Sprintf("127.0.0.1:%d", ports[1])
		opts.GracefulShutdownTimeout = 5 * time.Second
		// The replicas sit behind the test's own round-robin, which never routes to a stopped one.
		opts.ShutdownDelay = 0
		if tune != nil {
			tune(opts)
		}
		if err := opts.Validate(); err != nil {
			cancel()
			return nil, err
		}
		done := make(chan error, 1)
		go func() { done <- webhookapp.Run(ctx, cfg, opts) }()
		w.done = append(w.done, done)
		backend := fmt.Sprintf("127.0.0.1:%d", ports[0])
		if err := waitTLS(ctx, backend, certs.LocalServingCAData); err != nil {
			w.Stop()
			return nil, fmt.Errorf("webhook replica %d never served: %w", i, err)
		}
		backends = append(backends, backend)
		w.probes = append(w.probes, opts.HealthProbeBindAddress)
	}
	proxy, err := newRoundRobin(backends, certs.LocalServingCertDir, certs.LocalServingCAData)
	if err != nil {
		w.Stop()
		return nil, err
	}
	w.proxy = proxy
	w.URL = "https://" + proxy.addr

	// Registered only once every replica listens: with failurePolicy Fail, a configuration pointing at nothing
	// would refuse every binding write in the apiserver.
	conf := webhookconfig.Configuration(w.URL, w.CA, webhookconfig.DefaultTimeoutSeconds)
	if configure != nil {
		configure(conf)
	}
	if err := c.Create(ctx, conf); err != nil {
		w.Stop()
		return nil, fmt.Errorf("registering the webhooks: %w", err)
	}
	return w, nil
}

// WaitReady waits until every replica reports itself ready (/readyz: its informers synced), as a Deployment's
// rollout waits before the Service sends it calls, and until the apiserver calls the webhooks. Serving TLS comes
// first: a replica that serves but has not yet synced its informers refuses every decision (fail closed). And the
// apiserver picks up a new webhook configuration from its own informer, moments after it is stored: until then it
// admits bindings unchecked. A suite that writes at once must wait for both.
func (w *Webhooks) WaitReady(ctx context.Context, c client.Client) error {
	if err := w.waitReplicasReady(ctx); err != nil {
		return err
	}
	return w.waitCalled(ctx, c)
}

// waitCalled waits until a dry-run binding create in the default namespace reaches a replica. Dry run writes
// nothing: the binding webhook declares NoneOnDryRun side effects and admission reserves nothing for dry runs.
func (w *Webhooks) waitCalled(ctx context.Context, c client.Client) error {
	calls := func() (n int64) {
		for _, replica := range w.Calls() {
			n += replica
		}
		return n
	}
	// The webhook's answer does not matter, only that it was asked; the last answer explains a wait that fails.
	var answer error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		before := calls()
		probe := &workv1alpha2.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: "karmada-quota-webhook-probe"}}
		answer = c.Create(ctx, probe, client.DryRunAll)
		return calls() > before, nil
	})
	if err != nil {
		return fmt.Errorf("the apiserver never called the webhooks (last dry-run binding create: %v): %w", answer, err)
	}
	return nil
}

func (w *Webhooks) waitReplicasReady(ctx context.Context) error {
	for _, probe := range w.probes {
		url := "http://" + probe + "/readyz"
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return false, err
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return false, nil
			}
			_ = resp.Body.Close()
			return resp.StatusCode == http.StatusOK, nil
		})
		if err != nil {
			return fmt.Errorf("webhook replica at %s never ready: %w", probe, err)
		}
	}
	return nil
}

// Stop unregisters nothing (the caller deletes the configuration when it must) and stops every replica and the
// proxy, waiting for them to exit.
func (w *Webhooks) Stop() error {
	// The proxy goes first: its connections to the replicas would otherwise hold their graceful shutdown open
	// while the apiserver keeps sending through it.
	if w.proxy != nil {
		w.proxy.close()
	}
	w.stop()
	var errs []error
	for _, done := range w.done {
		if err := <-done; err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Calls reports how many webhook calls the proxy sent to each replica.
func (w *Webhooks) Calls() []int64 {
	out := make([]int64, len(w.proxy.counts))
	for i := range w.proxy.counts {
		out[i] = w.proxy.counts[i].Load()
	}
	return out
}

func waitTLS(ctx context.Context, addr string, ca []byte) error {
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return loopback.ServesTLS(addr, ca), nil
	})
}

// roundRobin spreads webhook calls over the replicas one request at a time. The apiserver sends its calls over
// one long-lived connection, so spreading connections would pin every call to one replica; spreading requests
// makes the replicas race each other on every namespace, the hardest case for the compare-and-swap writes.
type roundRobin struct {
	addr   string
	server *http.Server
	counts []atomic.Int64
	next   atomic.Uint64
	done   chan struct{}
	// transport holds the proxy's connections to the replicas.
	transport *http.Transport
}

func newRoundRobin(backends []string, certDir string, ca []byte) (*roundRobin, error) {
	cert, err := tls.LoadX509KeyPair(filepath.Join(certDir, "tls.crt"), filepath.Join(certDir, "tls.key"))
	if err != nil {
		return nil, fmt.Errorf("loading the serving certificate: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	transport := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, MaxIdleConnsPerHost: 64}
	p := &roundRobin{counts: make([]atomic.Int64, len(backends)), done: make(chan struct{}), transport: transport}
	targets := make([]*url.URL, len(backends))
	for i, b := range backends {
		targets[i] = &url.URL{Scheme: "https", Host: b}
	}
	proxy := &httputil.ReverseProxy{
		Transport: transport,
		Rewrite: func(r *httputil.ProxyRequest) {
			i := int(p.next.Add(1)-1) % len(targets)
			p.counts[i].Add(1)
			r.SetURL(targets[i])
		},
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p.addr = l.Addr().String()
	p.server = &http.Server{Handler: proxy, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(p.done)
		_ = p.server.ServeTLS(l, "", "")
	}()
	return p, nil
}

func (p *roundRobin) close() {
	_ = p.server.Close()
	<-p.done
	p.transport.CloseIdleConnections()
}

// StopAll stops the webhook replicas (when started), cancels the suite's context, then stops the environment.
// Every step runs before any error is returned, so a failed one never leaves etcd and the kube-apiserver running.
func StopAll(env *envtest.Environment, webhooks *Webhooks, cancel context.CancelFunc) error {
	var errs []error
	if webhooks != nil {
		errs = append(errs, webhooks.Stop())
	}
	cancel()
	if env != nil {
		errs = append(errs, env.Stop())
	}
	return errors.Join(errs...)
}
