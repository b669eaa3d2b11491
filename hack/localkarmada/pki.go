package localkarmada

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// servingNames are the names every server of the topology answers to. The kube-aggregator dials an APIService's
// ExternalName Service as "<service>.<namespace>.svc", so the aggregated apiserver's certificate must carry that
// name even though it listens on loopback; the apiservers answer to their in-cluster names for clients that use
// them. One serving certificate for every process keeps the topology's trust to one CA.
var servingNames = []string{
	"localhost",
	"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local",
	"karmada-aggregated-apiserver.karmada-system.svc",
	"karmada-webhook.karmada-system.svc",
}

// pki is one certificate authority that signs every serving and client certificate of the topology, written as
// PEM files under dir.
type pki struct {
	dir    string
	ca     *x509.Certificate
	caKey  crypto.Signer
	caPEM  []byte
	serial int64
}

func newPKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "local-karmada-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	p := &pki{dir: dir, ca: ca, caKey: key, caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), serial: 1}
	if err := os.WriteFile(p.caFile(), p.caPEM, 0o600); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *pki) caFile() string { return filepath.Join(p.dir, "ca.crt") }

// keyPair is the file pair of a signed certificate.
type keyPair struct{ Cert, Key string }

// serving issues the certificate every server of the topology uses, written as tls.crt and tls.key in
// dir/serving, the names the webhooks read from their --cert-dir.
func (p *pki) serving() (keyPair, error) {
	return p.issue("serving", "tls", x509.Certificate{
		Subject:     pkix.Name{CommonName: "local-karmada-serving"},
		DNSNames:    servingNames,
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
}

// client issues a client certificate; Kubernetes takes the user from the common name and the groups from the
// organizations.
func (p *pki) client(name, user string, groups ...string) (keyPair, error) {
	return p.issue("clients", name, x509.Certificate{
		Subject:     pkix.Name{CommonName: user, Organization: groups},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
}

func (p *pki) issue(sub, name string, tmpl x509.Certificate) (keyPair, error) {
	dir := filepath.Join(p.dir, sub)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return keyPair{}, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return keyPair{}, err
	}
	p.serial++
	tmpl.SerialNumber = big.NewInt(p.serial)
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(365 * 24 * time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	der, err := x509.CreateCertificate(rand.Reader, &tmpl, p.ca, key.Public(), p.caKey)
	if err != nil {
		return keyPair{}, fmt.Errorf("signing %s: %w", name, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return keyPair{}, err
	}
	kp := keyPair{Cert: filepath.Join(dir, name+".crt"), Key: filepath.Join(dir, name+".key")}
	if err := os.WriteFile(kp.Cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return keyPair{}, err
	}
	if err := os.WriteFile(kp.Key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return keyPair{}, err
	}
	return kp, nil
}

// serviceAccountKeys writes the key pair every apiserver signs and verifies service account tokens with. RSA,
// because the token signer of kube-apiserver and kube-controller-manager expects RSA keys in PKCS#1 or PKCS#8.
func (p *pki) serviceAccountKeys() (pub, private string, err error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", "", err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return "", "", err
	}
	pub, private = filepath.Join(p.dir, "sa.pub"), filepath.Join(p.dir, "sa.key")
	if err := os.WriteFile(pub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o600); err != nil {
		return "", "", err
	}
	err = os.WriteFile(private, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600)
	return pub, private, err
}
