package kubelet

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
)

// visible reads what a process sees in a volume folder: every path not starting with "..", with its content and
// mode, through the symlinks.
func visible(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	var walk func(rel string)
	walk = func(rel string) {
		entries, err := os.ReadDir(filepath.Join(dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "..") {
				continue
			}
			p := filepath.Join(rel, e.Name())
			info, err := os.Stat(filepath.Join(dir, p))
			if err != nil {
				t.Fatal(err)
			}
			if info.IsDir() {
				walk(p)
				continue
			}
			data, err := os.ReadFile(filepath.Join(dir, p))
			if err != nil {
				t.Fatal(err)
			}
			out[p] = string(data) + " " + info.Mode().Perm().String()
		}
	}
	walk("")
	return out
}

func dataDirs(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") && e.IsDir() {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out
}

func TestWriteAtomically(t *testing.T) {
	steps := []struct {
		name        string
		payload     map[string]fileProjection
		wantChanged bool
		want        map[string]string
	}{
		{
			name: "first write",
			payload: map[string]fileProjection{
				"tls.crt": {Data: []byte("cert-1"), Mode: 0o644},
				"tls.key": {Data: []byte("key-1"), Mode: 0o600},
				"sub/ca":  {Data: []byte("ca-1"), Mode: 0o644},
			},
			wantChanged: true,
			want:        map[string]string{"tls.crt": "cert-1 -rw-r--r--", "tls.key": "key-1 -rw-------", "sub/ca": "ca-1 -rw-r--r--"},
		},
		{
			name: "same content is not rewritten",
			payload: map[string]fileProjection{
				"tls.crt": {Data: []byte("cert-1"), Mode: 0o644},
				"tls.key": {Data: []byte("key-1"), Mode: 0o600},
				"sub/ca":  {Data: []byte("ca-1"), Mode: 0o644},
			},
			want: map[string]string{"tls.crt": "cert-1 -rw-r--r--", "tls.key": "key-1 -rw-------", "sub/ca": "ca-1 -rw-r--r--"},
		},
		{
			name: "update, a key removed",
			payload: map[string]fileProjection{
				"tls.crt": {Data: []byte("cert-2"), Mode: 0o644},
				"tls.key": {Data: []byte("key-2"), Mode: 0o600},
			},
			wantChanged: true,
			want:        map[string]string{"tls.crt": "cert-2 -rw-r--r--", "tls.key": "key-2 -rw-------"},
		},
		{
			name:        "a mode change is a change",
			payload:     map[string]fileProjection{"tls.crt": {Data: []byte("cert-2"), Mode: 0o400}, "tls.key": {Data: []byte("key-2"), Mode: 0o600}},
			wantChanged: true,
			want:        map[string]string{"tls.crt": "cert-2 -r--------", "tls.key": "key-2 -rw-------"},
		},
		{
			name:        "emptied",
			payload:     map[string]fileProjection{},
			wantChanged: true,
			want:        map[string]string{},
		},
	}
	dir := filepath.Join(t.TempDir(), "volume")
	for _, step := range steps {
		changed, err := writeAtomically(dir, step.payload)
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if changed != step.wantChanged {
			t.Errorf("%s: changed = %v, want %v", step.name, changed, step.wantChanged)
		}
		if diff := cmp.Diff(step.want, visible(t, dir)); diff != "" {
			t.Errorf("%s: visible files (-want +got):\n%s", step.name, diff)
		}
		// One timestamped folder, the one ..data points at: the previous one is gone.
		target, err := os.Readlink(filepath.Join(dir, dataDirName))
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if diff := cmp.Diff([]string{target}, dataDirs(t, dir)); diff != "" {
			t.Errorf("%s: data folders (-want +got):\n%s", step.name, diff)
		}
		// User-visible names are symlinks into ..data.
		for name := range topLevelNames(step.payload) {
			link, err := os.Readlink(filepath.Join(dir, name))
			if err != nil || link != filepath.Join(dataDirName, name) {
				t.Errorf("%s: %s links to %q (%v), want %q", step.name, name, link, err, filepath.Join(dataDirName, name))
			}
		}
	}
}

func TestWriteAtomicallyRefusesBadPaths(t *testing.T) {
	for _, p := range []string{"", "/abs", "../escape", "a/../../b", "..data", "..2026"} {
		_, err := writeAtomically(t.TempDir(), map[string]fileProjection{p: {Data: []byte("x"), Mode: 0o644}})
		if err == nil {
			t.Errorf("path %q was accepted", p)
		}
	}
}

// TestCertWatcherSeesTheSwap is why the layout matters: quota-webhook reloads its serving certificate through
// controller-runtime's certwatcher, which watches tls.crt and tls.key through their symlinks. When the writer
// swaps ..data and deletes the previous folder, the watcher must load the new pair at once, not at its 10 s poll.
func TestCertWatcherSeesTheSwap(t *testing.T) {
	dir := t.TempDir()
	write := func(serial int64) {
		cert, key := selfSigned(t, serial)
		if _, err := writeAtomically(dir, map[string]fileProjection{
			"tls.crt": {Data: cert, Mode: 0o644}, "tls.key": {Data: key, Mode: 0o644},
		}); err != nil {
			t.Fatal(err)
		}
	}
	write(1)
	watcher, err := certwatcher.New(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = watcher.Start(ctx) }()
	// Start adds its watches with a poll of its own; the first swap must come after them.
	time.Sleep(1500 * time.Millisecond)

	for serial := int64(2); serial <= 3; serial++ {
		write(serial)
		deadline := time.Now().Add(2 * time.Second)
		for {
			cert, _ := watcher.GetCertificate(nil)
			leaf, err := x509.ParseCertificate(cert.Certificate[0])
			if err != nil {
				t.Fatal(err)
			}
			if leaf.SerialNumber.Int64() == serial {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("certwatcher still serves serial %d 2 s after the swap to %d", leaf.SerialNumber.Int64(), serial)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func selfSigned(t *testing.T, serial int64) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tls.X509KeyPair(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})); err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}
