package certs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	webhookapp "github.com/karmada-quota/karmada-quota/cmd/quota-webhook/app"
	"github.com/karmada-quota/karmada-quota/internal/testenv"
	"github.com/karmada-quota/karmada-quota/internal/testenv/loopback"
	"github.com/karmada-quota/karmada-quota/pkg/certs"
	"github.com/karmada-quota/karmada-quota/pkg/metrics"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
	"github.com/karmada-quota/karmada-quota/pkg/webhookconfig"
	"github.com/karmada-quota/karmada-quota/test/integration/framework"
)

// reloadBound is the longest a webhook may take to serve the certificate the kubelet just put in its cert dir:
// controller-runtime's certificate watcher reacts to the file events at once and, should it miss them, re-reads
// the files every 10 seconds.
const reloadBound = 10 * time.Second

var _ = Describe("The webhook", func() {
	// The certificates here are checked by the karmada-apiserver against the real time, so the reconciler's fake
	// clock is only ever moved to times at which what it issues is valid now: it starts in the past (the CA's
	// first 37 minutes are spent before the test begins) and moves to the present for the renewals.
	//
	// With a 1h CA (backdated 6m, so replaced 38m after its issue) and 10m serving certificates (backdated 1m,
	// renewed 3m40s before they end), taking R as the time the test starts:
	//   R-37m30s  CA A is created (valid R-43m30s..R+22m30s; replaced from R+30s); its first serving
	//             certificate has expired by R;
	//   R-8m      serving certificate 1 (valid R-9m..R+2m) is what the webhook serves at the start;
	//   R         serving certificate 2 (from CA A), a renewal;
	//   R+50s     CA B joins the bundle; the webhook still serves certificate 2;
	//   R+55s     serving certificate 3 (from CA B, valid from R-5s).
	It("serves each renewed certificate without a restart while bindings are written, across a CA rotation", func() {
		start := time.Now()
		o := certs.NewOptions()
		o.Mode = certs.ModeSelfManaged
		o.Namespace = hostNamespace()
		o.WebhookConfiguration = uniqueName("karmada-quota-reload")
		// The karmada-apiserver calls the webhook at https://localhost:<port>.
		o.DNSNames = []string{"localhost"}
		o.Validity, o.CAValidity, o.CheckInterval = 10*time.Minute, time.Hour, time.Minute
		clk := clocktesting.NewFakeClock(start.Add(-37*time.Minute - 30*time.Second))
		r := newReconciler(host, karmada, o, clk)
		reconcile(r)
		caA := caOf(getSecret(o, o.CASecret))
		clk.SetTime(start.Add(-8 * time.Minute))
		reconcile(r)
		Expect(caOf(getSecret(o, o.CASecret)).Equal(caA)).To(BeTrue())
		leaf1 := servingCertificate(getSecret(o, o.ServingSecret))
		Expect(time.Now()).To(BeTemporally("<", leaf1.NotAfter))

		By("the webhook starts from the Secret as the kubelet mounts it, behind a connection we can cut")
		certDir := GinkgoT().TempDir()
		Expect(projectSecret(certDir, getSecret(o, o.ServingSecret).Data)).To(Succeed())
		webhookAddr, err := loopback.FreeAddr()
		Expect(err).NotTo(HaveOccurred())
		wopts := webhookapp.NewOptions()
		wopts.BindAddress = webhookAddr
		wopts.CertDir = certDir
		wopts.MetricsBindAddress = "0"
		wopts.HealthProbeBindAddress = "0"
		wopts.GracefulShutdownTimeout = 5 * time.Second
		wopts.ShutdownDelay = 0
		Expect(wopts.Validate()).To(Succeed())
		webhookCtx, stopWebhook := context.WithCancel(ctx)
		webhookDone := make(chan error, 1)
		go func() { webhookDone <- webhookapp.Run(webhookCtx, karmadaCfg, wopts) }()
		DeferCleanup(func() {
			stopWebhook()
			Eventually(webhookDone, 30*time.Second).Should(Receive(BeNil()))
		})
		Eventually(func() (*big.Int, error) { return servedSerial(webhookAddr) }, 30*time.Second, 50*time.Millisecond).Should(Equal(leaf1.SerialNumber))
		proxy, err := newCuttableProxy(webhookAddr)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(proxy.close)

		// As the installer registers it: the caBundle from the serving Secret. Deleted before the webhook stops.
		_, port, err := net.SplitHostPort(proxy.addr)
		Expect(err).NotTo(HaveOccurred())
		vwc := webhookconfig.Configuration("https://localhost:"+port, getSecret(o, o.ServingSecret).Data[certs.KeyCABundle], webhookconfig.DefaultTimeoutSeconds)
		vwc.Name = o.WebhookConfiguration
		createWebhookConfiguration(vwc)

		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "reload-"}}
		Expect(karmada.Create(ctx, ns)).To(Succeed())
		admitted := func() float64 {
			return testutil.ToFloat64(metrics.AdmissionRequests.WithLabelValues("ResourceBinding", "CREATE", "allowed", ""))
		}
		// The apiserver loads the configuration from its watch: wait until binding writes reach the webhook.
		before := admitted()
		Eventually(func() error {
			_, err := testenv.CreateBinding(ctx, karmada, utiltesting.MakeBinding(ns.Name, fmt.Sprintf("probe-%d", time.Now().UnixNano())))
			return err
		}, 10*time.Second, 50*time.Millisecond).Should(Succeed())
		Eventually(admitted, 10*time.Second, 50*time.Millisecond).Should(BeNumerically(">", before))

		writer := startBindingWriter(ns.Name)
		defer writer.stop()
		writer.runFor(time.Second)

		By("a renewal from the same CA is served without a restart")
		clk.SetTime(start)
		reconcile(r)
		leaf2 := servingCertificate(getSecret(o, o.ServingSecret))
		Expect(leaf2.SerialNumber).NotTo(Equal(leaf1.SerialNumber))
		delay2 := swapAndWait(certDir, getSecret(o, o.ServingSecret).Data, webhookAddr, leaf2.SerialNumber)
		expectTrustedByTheWebhookConfiguration(o, webhookAddr)
		writer.reconnect(proxy)
		writer.runFor(time.Second)

		By("a CA rotation: first the new CA joins the caBundle, the webhook keeps its certificate")
		clk.SetTime(start.Add(50 * time.Second))
		reconcile(r)
		caB := caOf(getSecret(o, o.CASecret))
		Expect(caB.Equal(caA)).To(BeFalse(), "the CA was not rotated")
		for _, bundle := range caBundles(getWebhookConfiguration(o.WebhookConfiguration)) {
			Expect(names(certificatesIn(bundle))).To(Equal([]string{caB.Subject.CommonName, caA.Subject.CommonName}))
		}
		Expect(servingCertificate(getSecret(o, o.ServingSecret)).SerialNumber).To(Equal(leaf2.SerialNumber))
		// The kubelet projects the Secret again, only ca.crt changed; the webhook serves on.
		Expect(projectSecret(certDir, getSecret(o, o.ServingSecret).Data)).To(Succeed())
		// The new caBundle makes the apiserver build a new client, so these writes open new connections.
		writer.runFor(time.Second)
		Expect(servedSerial(webhookAddr)).To(Equal(leaf2.SerialNumber))

		By("then the serving certificate from the new CA, trusted already")
		clk.Step(certs.TrustPropagationDelay)
		reconcile(r)
		leaf3 := servingCertificate(getSecret(o, o.ServingSecret))
		Expect(leaf3.CheckSignatureFrom(caB)).To(Succeed())
		Expect(time.Now()).To(BeTemporally(">=", leaf3.NotBefore))
		delay3 := swapAndWait(certDir, getSecret(o, o.ServingSecret).Data, webhookAddr, leaf3.SerialNumber)
		expectTrustedByTheWebhookConfiguration(o, webhookAddr)
		writer.reconnect(proxy)
		writer.runFor(time.Second)

		writes, failures := writer.stop()
		AddReportEntry("reload delays", fmt.Sprintf("renewal %s, after CA rotation %s; %d binding writes, %d apiserver connections to the webhook",
			delay2, delay3, writes, proxy.accepted.Load()))
		GinkgoWriter.Printf("certificate served %s (renewal) and %s (new CA) after the kubelet-style swap; %d binding writes over %d connections\n",
			delay2, delay3, writes, proxy.accepted.Load())
		Expect(failures).To(BeEmpty(), "binding writes were refused")
		Expect(writes).To(BeNumerically(">=", 20))
		// One connection to start with, new ones with the caBundle change and after each cut.
		Expect(proxy.accepted.Load()).To(BeNumerically(">=", 4))
	})
})

// swapAndWait updates the cert dir as the kubelet updates a Secret volume and returns how long the webhook took
// to serve the certificate with serial want.
func swapAndWait(certDir string, data map[string][]byte, addr string, want *big.Int) time.Duration {
	GinkgoHelper()
	swapped := time.Now()
	Expect(projectSecret(certDir, data)).To(Succeed())
	Eventually(func() (*big.Int, error) { return servedSerial(addr) }, reloadBound, 5*time.Millisecond).Should(Equal(want))
	return time.Since(swapped)
}

// expectTrustedByTheWebhookConfiguration makes a new connection as the karmada-apiserver does: verifying the
// served certificate against each webhook's caBundle, for the URL's host name.
func expectTrustedByTheWebhookConfiguration(o certs.Options, addr string) {
	GinkgoHelper()
	for _, bundle := range caBundles(getWebhookConfiguration(o.WebhookConfiguration)) {
		roots := x509.NewCertPool()
		Expect(roots.AppendCertsFromPEM(bundle)).To(BeTrue())
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, &tls.Config{RootCAs: roots, ServerName: "localhost"})
		Expect(err).NotTo(HaveOccurred())
		Expect(conn.Close()).To(Succeed())
	}
}

// servedSerial is the serial number of the certificate addr serves. It checks nothing else on purpose: it
// tells which certificate is served, expectTrustedByTheWebhookConfiguration whether a client accepts it.
func servedSerial(addr string) (*big.Int, error) {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // identifies, does not trust
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber, nil
}

// projectSecret writes data into dir as the kubelet's atomic writer updates a Secret volume: the files go into a
// fresh hidden folder, the `..data` symlink is swapped to it with one rename, each key is a symlink through
// `..data`, and the previous folder is removed. A reader sees the old files or the new ones, never a mix.
func projectSecret(dir string, data map[string][]byte) error {
	payload, err := os.MkdirTemp(dir, time.Now().UTC().Format("..2006_01_02_15_04_05."))
	if err != nil {
		return err
	}
	for key, value := range data {
		if err := os.WriteFile(filepath.Join(payload, key), value, 0o644); err != nil {
			return err
		}
	}
	dataLink := filepath.Join(dir, "..data")
	previous, err := os.Readlink(dataLink)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	tmpLink := filepath.Join(dir, "..data_tmp")
	if err := os.Symlink(filepath.Base(payload), tmpLink); err != nil {
		return err
	}
	if err := os.Rename(tmpLink, dataLink); err != nil {
		return err
	}
	for key := range data {
		link := filepath.Join(dir, key)
		if _, err := os.Lstat(link); errors.Is(err, os.ErrNotExist) {
			if err := os.Symlink(filepath.Join("..data", key), link); err != nil {
				return err
			}
		}
	}
	if previous != "" {
		return os.RemoveAll(filepath.Join(dir, previous))
	}
	return nil
}

// bindingWriter creates and places bindings without pause, as Karmada's detector and scheduler would, through
// the karmada-apiserver and so through the webhook. Every refused write is kept.
type bindingWriter struct {
	ns       string
	gate     sync.RWMutex
	writes   atomic.Int64
	mu       sync.Mutex
	failures []string
	quit     chan struct{}
	done     chan struct{}
}

func startBindingWriter(ns string) *bindingWriter {
	w := &bindingWriter{ns: ns, quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for i := 0; ; i++ {
			select {
			case <-w.quit:
				return
			default:
			}
			w.gate.RLock()
			w.write(i)
			w.gate.RUnlock()
		}
	}()
	return w
}

func (w *bindingWriter) write(i int) {
	rb, err := testenv.CreateBinding(ctx, karmada, utiltesting.MakeBinding(w.ns, fmt.Sprintf("web-%d", i)).Requests(framework.List("cpu", "100m")))
	if err == nil {
		w.writes.Add(1)
		err = framework.Place(ctx, karmada, rb, nil, framework.Cluster("member1", 1))
	}
	if err != nil {
		w.mu.Lock()
		w.failures = append(w.failures, err.Error())
		w.mu.Unlock()
		return
	}
	w.writes.Add(1)
}

// runFor lets the writer write for d.
func (w *bindingWriter) runFor(d time.Duration) { time.Sleep(d) }

// reconnect cuts the karmada-apiserver's connections to the webhook between two writes, so the next writes
// handshake afresh with the certificate served now. (An established connection keeps the certificate it was
// opened with; cutting one under a call in flight would fail that call for a reason that is not the
// certificate's.) The writes resume only once the apiserver's HTTP client has seen its idle connections close:
// its read loop notices asynchronously, and a write sent on a pooled connection it has not yet dropped fails with
// "broken pipe" (a fresh-clone CI run saw one), a race of the cut, not of the certificate.
func (w *bindingWriter) reconnect(p *cuttableProxy) {
	w.gate.Lock()
	defer w.gate.Unlock()
	p.cut()
	time.Sleep(idleCloseNoticed)
}

// idleCloseNoticed is ample for a client's read loop to see that an idle connection was closed under it.
const idleCloseNoticed = 250 * time.Millisecond

// stop ends the writer and returns how many writes were admitted and the errors of those refused.
func (w *bindingWriter) stop() (int64, []string) {
	select {
	case <-w.quit:
	default:
		close(w.quit)
	}
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writes.Load(), w.failures
}

// cuttableProxy forwards TCP connections to a backend and can cut them all.
type cuttableProxy struct {
	addr     string
	listener net.Listener
	accepted atomic.Int64
	mu       sync.Mutex
	conns    map[net.Conn]struct{}
	done     chan struct{}
}

func newCuttableProxy(backend string) (*cuttableProxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &cuttableProxy{addr: l.Addr().String(), listener: l, conns: map[net.Conn]struct{}{}, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			p.accepted.Add(1)
			go p.forward(conn, backend)
		}
	}()
	return p, nil
}

func (p *cuttableProxy) forward(client net.Conn, backend string) {
	server, err := net.Dial("tcp", backend)
	if err != nil {
		client.Close()
		return
	}
	p.mu.Lock()
	p.conns[client], p.conns[server] = struct{}{}, struct{}{}
	p.mu.Unlock()
	var wg sync.WaitGroup
	wg.Add(2)
	pipe := func(dst, src net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		// Either side ending ends both, as a real connection would.
		dst.Close()
		src.Close()
	}
	go pipe(server, client)
	go pipe(client, server)
	wg.Wait()
	p.mu.Lock()
	delete(p.conns, client)
	delete(p.conns, server)
	p.mu.Unlock()
}

// cut closes every connection open now.
func (p *cuttableProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
}

func (p *cuttableProxy) close() {
	p.listener.Close()
	<-p.done
	p.cut()
}
