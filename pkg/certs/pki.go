package certs

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"time"
)

// Keys of the Secrets, the kubernetes.io/tls layout cert-manager writes too.
const (
	KeyCertificate = "tls.crt"
	KeyPrivateKey  = "tls.key"
	KeyCABundle    = "ca.crt"
)

// caCommonNamePrefix starts the name of every self-managed CA; the issue time ends it, so the CAs a bundle holds
// during a rotation can be told apart.
const caCommonNamePrefix = "karmada-quota-webhook-ca@"

// maxBackdate bounds how far before its issue a certificate becomes valid, which tolerates a client whose clock
// lags the issuer's.
const maxBackdate = time.Hour

// keyPair is a certificate with its private key, parsed and as written.
type keyPair struct {
	cert    *x509.Certificate
	key     crypto.Signer
	certPEM []byte
	keyPEM  []byte
}

// newCA issues a self-signed CA that may sign serving certificates only.
func newCA(now time.Time, validity time.Duration) (*keyPair, error) {
	notBefore, notAfter := lifetime(now, validity)
	template := &x509.Certificate{
		Subject:               pkix.Name{CommonName: fmt.Sprintf("%s%d", caCommonNamePrefix, now.Unix())},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		IsCA:                  true,
		BasicConstraintsValid: true,
		// It signs leaves, never another CA.
		MaxPathLenZero: true,
		KeyUsage:       x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	return issue(template, nil)
}

// newServing issues a serving certificate for dnsNames signed by ca. It expires with ca at the latest, so no
// certificate outlives the trust in its issuer.
func newServing(ca *keyPair, dnsNames []string, now time.Time, validity time.Duration) (*keyPair, error) {
	notBefore, notAfter := lifetime(now, validity)
	if notAfter.After(ca.cert.NotAfter) {
		notAfter = ca.cert.NotAfter
	}
	if notBefore.Before(ca.cert.NotBefore) {
		notBefore = ca.cert.NotBefore
	}
	template := &x509.Certificate{
		Subject:               pkix.Name{CommonName: dnsNames[0]},
		DNSNames:              slices.Clone(dnsNames),
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	return issue(template, ca)
}

// lifetime is when a certificate issued at now for validity starts and ends: backdated by a tenth of the
// validity, at most maxBackdate, and at whole seconds, as X.509 stores them.
func lifetime(now time.Time, validity time.Duration) (time.Time, time.Time) {
	now = now.Truncate(time.Second)
	backdate := min(validity/10, maxBackdate).Truncate(time.Second)
	return now.Add(-backdate), now.Add(validity)
}

// issue signs template with a fresh ECDSA P-256 key and a random 128-bit serial; a nil ca self-signs it.
func issue(template *x509.Certificate, ca *keyPair) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating a key: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	template.SerialNumber = serial
	parent, signer := template, crypto.Signer(key)
	if ca != nil {
		parent, signer = ca.cert, ca.key
	}
	der, err := x509.CreateCertificate(rand.Reader, template, parent, key.Public(), signer)
	if err != nil {
		return nil, fmt.Errorf("signing the certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &keyPair{
		cert:    cert,
		key:     key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

func randomSerial() (*big.Int, error) {
	limit := new(big.Int).Lsh(big.NewInt(1), 128)
	for {
		serial, err := rand.Int(rand.Reader, limit)
		if err != nil {
			return nil, fmt.Errorf("drawing a serial number: %w", err)
		}
		// RFC 5280 wants a positive serial.
		if serial.Sign() > 0 {
			return serial, nil
		}
	}
}

// parseKeyPair reads a certificate and its key from a Secret's data: the first certificate of tls.crt is the
// one the key must match.
func parseKeyPair(data map[string][]byte) (*keyPair, error) {
	certPEM, keyPEM := data[KeyCertificate], data[KeyPrivateKey]
	if len(certPEM) == 0 || len(keyPEM) == 0 {
		return nil, fmt.Errorf("%s or %s is empty", KeyCertificate, KeyPrivateKey)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	signer, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("the key of type %T cannot sign", pair.PrivateKey)
	}
	leaf := pair.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, err
		}
	}
	return &keyPair{cert: leaf, key: signer, certPEM: certPEM, keyPEM: keyPEM}, nil
}

// parseBundle returns the certificates of a PEM bundle, skipping blocks that do not parse: a damaged entry must
// not cost the trust the others carry.
func parseBundle(data []byte) []*x509.Certificate {
	var out []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return out
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		if cert, err := x509.ParseCertificate(block.Bytes); err == nil {
			out = append(out, cert)
		}
	}
}

// encodeBundle writes certificates as one PEM bundle, in order.
func encodeBundle(certs []*x509.Certificate) []byte {
	var b bytes.Buffer
	for _, c := range certs {
		_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	return b.Bytes()
}

// containsCert tells whether certs holds c, byte for byte.
func containsCert(certs []*x509.Certificate, c *x509.Certificate) bool {
	return slices.ContainsFunc(certs, c.Equal)
}

// signedBy tells whether ca's key signed cert.
func signedBy(cert, ca *x509.Certificate) bool {
	return bytes.Equal(cert.RawIssuer, ca.RawSubject) && cert.CheckSignatureFrom(ca) == nil
}

// renewalTime is when less than a third of cert's lifetime is left.
func renewalTime(cert *x509.Certificate) time.Time {
	return cert.NotAfter.Add(-cert.NotAfter.Sub(cert.NotBefore) / 3)
}

// validAt tells whether now falls within cert's lifetime.
func validAt(cert *x509.Certificate, now time.Time) bool {
	return !now.Before(cert.NotBefore) && now.Before(cert.NotAfter)
}

var errNotServing = errors.New("not a serving certificate")

// checkServing rejects a certificate a TLS server cannot present to the karmada-apiserver.
func checkServing(cert *x509.Certificate) error {
	if cert.IsCA {
		return fmt.Errorf("%w: it is a CA", errNotServing)
	}
	if len(cert.ExtKeyUsage) > 0 && !slices.Contains(cert.ExtKeyUsage, x509.ExtKeyUsageServerAuth) && !slices.Contains(cert.ExtKeyUsage, x509.ExtKeyUsageAny) {
		return fmt.Errorf("%w: it is not for server authentication", errNotServing)
	}
	return nil
}

// checkCA rejects a certificate that cannot sign serving certificates.
func checkCA(cert *x509.Certificate) error {
	if !cert.IsCA || !cert.BasicConstraintsValid {
		return errors.New("not a CA")
	}
	if cert.KeyUsage != 0 && cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		return errors.New("the CA may not sign certificates")
	}
	return nil
}
