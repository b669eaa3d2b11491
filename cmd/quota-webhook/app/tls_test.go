package app

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/karmada-quota/karmada-quota/internal/testenv/loopback"
)

// TestWebhookServerRefusesWeakTLS dials the webhook's listener, built as the binary builds it, with what the policy
// refuses: TLS 1.1, and TLS 1.2 with only suites lacking forward secrecy or authenticated encryption. The
// certificate is RSA, so that every suite named here could be negotiated if the policy allowed it; a server
// without the policy accepting the same handshakes shows the refusals come from the policy. It is quota-webhook's
// only TLS listener: metrics and probes are plain HTTP on their own ports, as are quota-controller's and the
// operator's, which serve no webhook.
func TestWebhookServerRefusesWeakTLS(t *testing.T) {
	certDir, pool := servingCertificate(t)
	opts := NewOptions()
	opts.CertDir = certDir
	withPolicy := startServer(t, newWebhookServer(opts, "127.0.0.1", freePort(t)))
	withoutPolicy := startServer(t, webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: freePort(t), CertDir: certDir}))

	weakSuites := map[string]uint16{
		"TLS_RSA_WITH_AES_128_CBC_SHA (no forward secrecy)":                 tls.TLS_RSA_WITH_AES_128_CBC_SHA,
		"TLS_RSA_WITH_AES_128_GCM_SHA256 (no forward secrecy)":              tls.TLS_RSA_WITH_AES_128_GCM_SHA256,
		"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA (CBC with SHA-1, Go's default)": tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA,
		"TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA (CBC with SHA-1, Go's default)": tls.TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA,
	}
	refused := map[string]*tls.Config{
		"TLS 1.1": {MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11},
		"TLS 1.0": {MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS10},
	}
	for name, suite := range weakSuites {
		refused["TLS 1.2 with "+name] = &tls.Config{MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{suite}}
	}
	for name, cfg := range refused {
		t.Run("refused: "+name, func(t *testing.T) {
			if err := handshake(withPolicy, pool, cfg); err == nil {
				t.Errorf("the webhook accepted %s", name)
			}
		})
	}
	// Go's own server defaults accept the CBC-SHA suites with ECDHE: their refusal is the policy's. (Go's defaults
	// already refuse TLS 1.0 and 1.1 and RSA key exchange since Go 1.22; the policy states the floor anyway.)
	for _, suite := range []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA} {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{suite}}
		if err := handshake(withoutPolicy, pool, cfg); err != nil {
			t.Errorf("a server without the policy refused %s too (%v): the test would show nothing", tls.CipherSuiteName(suite), err)
		}
	}

	accepted := map[string]*tls.Config{
		"TLS 1.3":                            {MinVersion: tls.VersionTLS13},
		"TLS 1.2 with ECDHE-RSA AES-128-GCM": {MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256}},
		"TLS 1.2 with ECDHE-RSA ChaCha20":    {MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256}},
	}
	for name, cfg := range accepted {
		t.Run("accepted: "+name, func(t *testing.T) {
			if err := handshake(withPolicy, pool, cfg); err != nil {
				t.Errorf("the webhook refused %s: %v", name, err)
			}
		})
	}
}

func handshake(addr string, pool *x509.CertPool, cfg *tls.Config) error {
	cfg = cfg.Clone()
	cfg.RootCAs, cfg.ServerName = pool, "localhost"
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return err
	}
	return conn.Close()
}

func freePort(t *testing.T) int {
	t.Helper()
	ports, err := loopback.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	return ports[0]
}

// startServer runs a webhook server until the test ends and returns its address once it serves.
func startServer(t *testing.T, s webhook.Server) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("webhook server: %v", err)
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if err := s.StartedChecker()(nil); err == nil {
			return fmt.Sprintf("127.0.0.1:%d", s.(*webhook.DefaultServer).Options.Port)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the webhook server never served")
	return ""
}

// servingCertificate writes a self-signed RSA certificate for localhost as tls.crt and tls.key into a folder, and
// returns the folder and a pool trusting it.
func servingCertificate(t *testing.T) (string, *x509.CertPool) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	return dir, pool
}
