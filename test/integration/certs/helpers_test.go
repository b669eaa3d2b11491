package certs

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/pkg/certs"
)

// certificatesIn parses a PEM bundle.
func certificatesIn(data []byte) []*x509.Certificate {
	GinkgoHelper()
	var out []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return out
		}
		c, err := x509.ParseCertificate(block.Bytes)
		Expect(err).NotTo(HaveOccurred())
		out = append(out, c)
	}
}

// names shows certificates by common name.
func names(certificates []*x509.Certificate) []string {
	var out []string
	for _, c := range certificates {
		out = append(out, c.Subject.CommonName)
	}
	return out
}

// servingCertificate is the certificate a serving Secret holds, checked to go with its key.
func servingCertificate(s *corev1.Secret) *x509.Certificate {
	GinkgoHelper()
	pair, err := tls.X509KeyPair(s.Data[certs.KeyCertificate], s.Data[certs.KeyPrivateKey])
	Expect(err).NotTo(HaveOccurred())
	return pair.Leaf
}

// caOf is the CA a CA Secret holds.
func caOf(s *corev1.Secret) *x509.Certificate {
	GinkgoHelper()
	return servingCertificate(s)
}

// caBundles are the caBundles of a webhook configuration, one per webhook.
func caBundles(c *admissionregistrationv1.ValidatingWebhookConfiguration) [][]byte {
	var out [][]byte
	for _, w := range c.Webhooks {
		out = append(out, w.ClientConfig.CABundle)
	}
	return out
}

// verifies tells whether a client trusting bundle accepts cert for name at time now.
func verifies(bundle []byte, cert *x509.Certificate, name string, now time.Time) error {
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(bundle)
	_, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: name, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	return err
}

// withWatch is a client of the cluster at cfg that an interceptor can wrap.
func withWatch(cfg *rest.Config) client.WithWatch {
	GinkgoHelper()
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	Expect(err).NotTo(HaveOccurred())
	return c
}

func newReconciler(hostClient, karmadaClient client.Client, o certs.Options, clk clock.Clock) *certs.Reconciler {
	GinkgoHelper()
	r, err := certs.NewReconciler(hostClient, karmadaClient, o, clk)
	Expect(err).NotTo(HaveOccurred())
	return r
}

func reconcile(r *certs.Reconciler) time.Duration {
	GinkgoHelper()
	wait, err := r.Reconcile(ctx)
	Expect(err).NotTo(HaveOccurred())
	return wait
}
