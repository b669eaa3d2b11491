package certs

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/karmada-quota/karmada-quota/pkg/certs"
)

var _ = Describe("Self-managed certificates", func() {
	It("creates the CA and serving Secrets on the first pass and syncs the caBundle of an existing webhook configuration", func() {
		o := selfManagedOptions()
		createWebhookConfiguration(inertWebhookConfiguration(o.WebhookConfiguration))
		clk := clocktesting.NewFakeClock(time.Now())
		r := newReconciler(host, karmada, o, clk)

		Expect(reconcile(r)).To(BeNumerically("<=", o.CheckInterval))

		caSecret := getSecret(o, o.CASecret)
		Expect(caSecret.Type).To(Equal(corev1.SecretTypeTLS))
		ca := caOf(caSecret)
		Expect(ca.IsCA).To(BeTrue())
		Expect(names(certificatesIn(caSecret.Data[certs.KeyCABundle]))).To(Equal([]string{ca.Subject.CommonName}))

		serving := getSecret(o, o.ServingSecret)
		Expect(serving.Type).To(Equal(corev1.SecretTypeTLS))
		Expect(serving.Data[certs.KeyCABundle]).To(Equal(caSecret.Data[certs.KeyCABundle]))
		leaf := servingCertificate(serving)
		Expect(leaf.DNSNames).To(Equal(o.DNSNames))
		for _, name := range o.DNSNames {
			Expect(verifies(serving.Data[certs.KeyCABundle], leaf, name, clk.Now())).To(Succeed())
		}

		Expect(caBundles(getWebhookConfiguration(o.WebhookConfiguration))).To(HaveEach(Equal(serving.Data[certs.KeyCABundle])))

		By("a second pass writes nothing")
		vwc := getWebhookConfiguration(o.WebhookConfiguration)
		reconcile(r)
		Expect(getSecret(o, o.CASecret).ResourceVersion).To(Equal(caSecret.ResourceVersion))
		Expect(getSecret(o, o.ServingSecret).ResourceVersion).To(Equal(serving.ResourceVersion))
		Expect(getWebhookConfiguration(o.WebhookConfiguration).ResourceVersion).To(Equal(vwc.ResourceVersion))
	})

	It("never creates a missing webhook configuration, and syncs it once the installer created it", func() {
		o := selfManagedOptions()
		r := newReconciler(host, karmada, o, clocktesting.NewFakeClock(time.Now()))
		reconcile(r)
		getSecret(o, o.CASecret)
		serving := getSecret(o, o.ServingSecret)
		err := karmada.Get(ctx, types.NamespacedName{Name: o.WebhookConfiguration}, inertWebhookConfiguration(o.WebhookConfiguration))
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the webhook configuration was created: %v", err)

		By("the installer registers it without a caBundle; the next pass fills it in")
		createWebhookConfiguration(inertWebhookConfiguration(o.WebhookConfiguration))
		reconcile(r)
		Expect(caBundles(getWebhookConfiguration(o.WebhookConfiguration))).To(HaveEach(Equal(serving.Data[certs.KeyCABundle])))

		By("an uninstall deletes it; it stays gone")
		Expect(karmada.Delete(ctx, inertWebhookConfiguration(o.WebhookConfiguration))).To(Succeed())
		reconcile(r)
		err = karmada.Get(ctx, types.NamespacedName{Name: o.WebhookConfiguration}, inertWebhookConfiguration(o.WebhookConfiguration))
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the webhook configuration came back: %v", err)
	})

	It("renews the serving certificate when a third of its lifetime is left, from the same CA, without touching the caBundle", func() {
		o := selfManagedOptions()
		createWebhookConfiguration(inertWebhookConfiguration(o.WebhookConfiguration))
		clk := clocktesting.NewFakeClock(time.Now())
		r := newReconciler(host, karmada, o, clk)
		wait := reconcile(r)
		first := servingCertificate(getSecret(o, o.ServingSecret))
		renewal := first.NotAfter.Add(-first.NotAfter.Sub(first.NotBefore) / 3)
		// The first pass asks to be woken at the check interval (below the renewal time).
		Expect(clk.Now().Add(wait).Before(renewal)).To(BeTrue())
		vwc := getWebhookConfiguration(o.WebhookConfiguration)
		caSecret := getSecret(o, o.CASecret)

		clk.SetTime(renewal.Add(-time.Second))
		reconcile(r)
		Expect(servingCertificate(getSecret(o, o.ServingSecret)).SerialNumber).To(Equal(first.SerialNumber))

		clk.SetTime(renewal)
		reconcile(r)
		renewed := servingCertificate(getSecret(o, o.ServingSecret))
		Expect(renewed.SerialNumber).NotTo(Equal(first.SerialNumber))
		Expect(renewed.NotAfter).To(BeTemporally(">", first.NotAfter))
		Expect(verifies(getSecret(o, o.ServingSecret).Data[certs.KeyCABundle], renewed, o.DNSNames[0], clk.Now())).To(Succeed())
		Expect(getSecret(o, o.CASecret).ResourceVersion).To(Equal(caSecret.ResourceVersion))
		Expect(getWebhookConfiguration(o.WebhookConfiguration).ResourceVersion).To(Equal(vwc.ResourceVersion))
	})

	It("rotates the CA in two steps: the webhook configuration carries both CAs before the serving certificate changes", func() {
		o := selfManagedOptions()
		createWebhookConfiguration(inertWebhookConfiguration(o.WebhookConfiguration))
		clk := clocktesting.NewFakeClock(time.Now())
		r := newReconciler(host, karmada, o, clk)
		reconcile(r)
		oldCA := caOf(getSecret(o, o.CASecret))
		rotation := oldCA.NotAfter.Add(-oldCA.NotAfter.Sub(oldCA.NotBefore) / 3)

		// Renewals of the serving certificate on the way, as the runnable would make them.
		for clk.Now().Before(rotation) {
			clk.SetTime(clk.Now().Add(o.CheckInterval))
			reconcile(r)
		}
		Expect(caOf(getSecret(o, o.CASecret)).Equal(oldCA)).To(BeFalse(), "the CA was not rotated by %s", clk.Now())
		beforeLeafChange := servingCertificate(getSecret(o, o.ServingSecret))

		By("step 1, in the pass that rotated: the bundle holds both CAs, everywhere; the serving certificate is the old CA's")
		newCA := caOf(getSecret(o, o.CASecret))
		Expect(beforeLeafChange.CheckSignatureFrom(oldCA)).To(Succeed())
		wantBundle := []string{newCA.Subject.CommonName, oldCA.Subject.CommonName}
		Expect(names(certificatesIn(getSecret(o, o.CASecret).Data[certs.KeyCABundle]))).To(Equal(wantBundle))
		Expect(names(certificatesIn(getSecret(o, o.ServingSecret).Data[certs.KeyCABundle]))).To(Equal(wantBundle))
		for _, bundle := range caBundles(getWebhookConfiguration(o.WebhookConfiguration)) {
			Expect(names(certificatesIn(bundle))).To(Equal(wantBundle))
		}

		By("step 2, after the trust propagation delay: the serving certificate comes from the new CA")
		clk.Step(certs.TrustPropagationDelay)
		reconcile(r)
		leaf := servingCertificate(getSecret(o, o.ServingSecret))
		Expect(leaf.SerialNumber).NotTo(Equal(beforeLeafChange.SerialNumber))
		Expect(leaf.CheckSignatureFrom(newCA)).To(Succeed())
		for _, bundle := range caBundles(getWebhookConfiguration(o.WebhookConfiguration)) {
			Expect(verifies(bundle, leaf, o.DNSNames[0], clk.Now())).To(Succeed())
			// The certificate still served by pods whose Secret volume has not been updated yet stays trusted.
			Expect(verifies(bundle, beforeLeafChange, o.DNSNames[0], clk.Now())).To(Succeed())
		}

		By("once the old CA expired, it leaves the bundle, everywhere")
		clk.SetTime(oldCA.NotAfter)
		reconcile(r)
		Expect(names(certificatesIn(getSecret(o, o.CASecret).Data[certs.KeyCABundle]))).To(Equal([]string{newCA.Subject.CommonName}))
		Expect(names(certificatesIn(getSecret(o, o.ServingSecret).Data[certs.KeyCABundle]))).To(Equal([]string{newCA.Subject.CommonName}))
		for _, bundle := range caBundles(getWebhookConfiguration(o.WebhookConfiguration)) {
			Expect(names(certificatesIn(bundle))).To(Equal([]string{newCA.Subject.CommonName}))
		}
	})

	Context("with a concurrent writer", func() {
		// Each test lets another writer act just before the first write of one kind by the reconciler under test,
		// so that write loses; the reconciler must read again and settle on the winner's state.
		It("adopts the CA another writer created first", func() {
			o := selfManagedOptions()
			createWebhookConfiguration(inertWebhookConfiguration(o.WebhookConfiguration))
			clk := clocktesting.NewFakeClock(time.Now())
			installer := newReconciler(host, karmada, o, clk)
			var raced atomic.Bool
			var lost atomic.Int32
			racingHost := interceptor.NewClient(withWatch(hostCfg), interceptor.Funcs{
				Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
					if raced.CompareAndSwap(false, true) {
						reconcile(installer)
					}
					err := c.Create(ctx, obj, opts...)
					if apierrors.IsAlreadyExists(err) {
						lost.Add(1)
					}
					return err
				},
			})
			reconcile(newReconciler(racingHost, karmada, o, clk))
			Expect(lost.Load()).To(BeEquivalentTo(1))

			caSecret := getSecret(o, o.CASecret)
			serving := getSecret(o, o.ServingSecret)
			Expect(certificatesIn(caSecret.Data[certs.KeyCABundle])).To(HaveLen(1), "a second CA slipped into the bundle")
			Expect(servingCertificate(serving).CheckSignatureFrom(caOf(caSecret))).To(Succeed())
			Expect(caBundles(getWebhookConfiguration(o.WebhookConfiguration))).To(HaveEach(Equal(caSecret.Data[certs.KeyCABundle])))
		})

		It("reads again when a renewal loses an update race, and keeps the winner's certificate", func() {
			o := selfManagedOptions()
			createWebhookConfiguration(inertWebhookConfiguration(o.WebhookConfiguration))
			clk := clocktesting.NewFakeClock(time.Now())
			installer := newReconciler(host, karmada, o, clk)
			reconcile(installer)
			first := servingCertificate(getSecret(o, o.ServingSecret))
			clk.SetTime(first.NotAfter.Add(-first.NotAfter.Sub(first.NotBefore) / 3))

			var raced atomic.Bool
			var conflicts atomic.Int32
			var winnerVersion string
			racingHost := interceptor.NewClient(withWatch(hostCfg), interceptor.Funcs{
				Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
					if raced.CompareAndSwap(false, true) {
						// Both renew at once; the other one writes first.
						reconcile(installer)
						winnerVersion = getSecret(o, o.ServingSecret).ResourceVersion
					}
					err := c.Update(ctx, obj, opts...)
					if apierrors.IsConflict(err) {
						conflicts.Add(1)
					}
					return err
				},
			})
			reconcile(newReconciler(racingHost, karmada, o, clk))
			Expect(conflicts.Load()).To(BeEquivalentTo(1))

			serving := getSecret(o, o.ServingSecret)
			Expect(servingCertificate(serving).SerialNumber).NotTo(Equal(first.SerialNumber))
			// The loser found the winner's fresh certificate and left it: one renewal, not two.
			Expect(serving.ResourceVersion).To(Equal(winnerVersion))
		})

		It("reads again when the webhook configuration changed under its caBundle patch, and keeps the other change", func() {
			o := selfManagedOptions()
			createWebhookConfiguration(inertWebhookConfiguration(o.WebhookConfiguration))
			var raced atomic.Bool
			var conflicts atomic.Int32
			racingKarmada := interceptor.NewClient(withWatch(karmadaCfg), interceptor.Funcs{
				Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
					if raced.CompareAndSwap(false, true) {
						vwc := getWebhookConfiguration(o.WebhookConfiguration)
						vwc.Labels = map[string]string{"edited-by": "someone-else"}
						Expect(karmada.Update(ctx, vwc)).To(Succeed())
					}
					err := c.Patch(ctx, obj, patch, opts...)
					if apierrors.IsConflict(err) {
						conflicts.Add(1)
					}
					return err
				},
			})
			reconcile(newReconciler(host, racingKarmada, o, clocktesting.NewFakeClock(time.Now())))
			Expect(conflicts.Load()).To(BeEquivalentTo(1))
			vwc := getWebhookConfiguration(o.WebhookConfiguration)
			Expect(vwc.Labels).To(HaveKeyWithValue("edited-by", "someone-else"))
			Expect(caBundles(vwc)).To(HaveEach(Equal(getSecret(o, o.ServingSecret).Data[certs.KeyCABundle])))
		})
	})
})

var _ = Describe("External certificates", func() {
	It("carries the ca.crt of a serving Secret written by another issuer into the caBundle, and nothing else", func() {
		o := certs.NewOptions()
		o.Mode = certs.ModeExternal
		o.Namespace = hostNamespace()
		o.WebhookConfiguration = uniqueName("karmada-quota")
		createWebhookConfiguration(inertWebhookConfiguration(o.WebhookConfiguration))
		r := newReconciler(host, karmada, o, clocktesting.NewFakeClock(time.Now()))

		By("no serving Secret yet: nothing happens")
		reconcile(r)
		Expect(caBundles(getWebhookConfiguration(o.WebhookConfiguration))).To(HaveEach(BeEmpty()))

		By("the issuer writes it, as cert-manager does")
		caPEM, certPEM, keyPEM := handMadeCertificate(o.DNSNames)
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: o.ServingSecret},
			Type:       corev1.SecretTypeTLS,
			Data:       map[string][]byte{certs.KeyCertificate: certPEM, certs.KeyPrivateKey: keyPEM, certs.KeyCABundle: caPEM},
		}
		Expect(host.Create(ctx, secret)).To(Succeed())
		reconcile(r)
		Expect(caBundles(getWebhookConfiguration(o.WebhookConfiguration))).To(HaveEach(Equal(caPEM)))
		var caSecret corev1.Secret
		err := host.Get(ctx, types.NamespacedName{Namespace: o.Namespace, Name: o.CASecret}, &caSecret)
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "external mode wrote a CA Secret: %v", err)
		Expect(getSecret(o, o.ServingSecret).ResourceVersion).To(Equal(secret.ResourceVersion), "external mode wrote the serving Secret")

		By("the issuer changes its CA: the caBundle follows")
		newCA, _, _ := handMadeCertificate(o.DNSNames)
		secret.Data[certs.KeyCABundle] = newCA
		Expect(host.Update(ctx, secret)).To(Succeed())
		reconcile(r)
		Expect(caBundles(getWebhookConfiguration(o.WebhookConfiguration))).To(HaveEach(Equal(newCA)))

		By("a Secret without ca.crt leaves the caBundle in place")
		delete(secret.Data, certs.KeyCABundle)
		Expect(host.Update(ctx, secret)).To(Succeed())
		reconcile(r)
		Expect(caBundles(getWebhookConfiguration(o.WebhookConfiguration))).To(HaveEach(Equal(newCA)))
	})
})

// handMadeCertificate is a CA and a serving certificate as another issuer would make them: its own names, no
// backdating, a PKCS #8 key.
func handMadeCertificate(dnsNames []string) (caPEM, certPEM, keyPEM []byte) {
	GinkgoHelper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	Expect(err).NotTo(HaveOccurred())
	now := time.Now()
	caTemplate := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: "cert-manager-ca"}, NotBefore: now, NotAfter: now.Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, caKey.Public(), caKey)
	Expect(err).NotTo(HaveOccurred())
	ca, err := x509.ParseCertificate(caDER)
	Expect(err).NotTo(HaveOccurred())
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	leafTemplate := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: dnsNames[0]}, DNSNames: dnsNames,
		NotBefore: now, NotAfter: now.Add(30 * time.Minute), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTemplate, ca, key.Public(), caKey)
	Expect(err).NotTo(HaveOccurred())
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	Expect(err).NotTo(HaveOccurred())
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
}
