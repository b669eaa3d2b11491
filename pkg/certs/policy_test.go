package certs

import (
	"crypto/x509"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var (
	t0       = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	dnsNames = []string{"karmada-quota-webhook.karmada-system.svc", "karmada-quota-webhook.karmada-system.svc.cluster.local"}
)

// Lifetimes of the fixtures: a CA lives 3h (from 18m before its issue), a serving certificate 1h (from 6m before).
const (
	caValidity      = 3 * time.Hour
	servingValidity = time.Hour
)

func mustCA(t *testing.T, at time.Time) *keyPair {
	t.Helper()
	ca, err := newCA(at, caValidity)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func mustServing(t *testing.T, ca *keyPair, at time.Time, names ...string) *keyPair {
	t.Helper()
	if len(names) == 0 {
		names = dnsNames
	}
	leaf, err := newServing(ca, names, at, servingValidity)
	if err != nil {
		t.Fatal(err)
	}
	return leaf
}

// secretData is a Secret holding pair and the bundle of CAs.
func secretData(pair *keyPair, bundle ...*keyPair) map[string][]byte {
	var certs []*x509.Certificate
	for _, ca := range bundle {
		certs = append(certs, ca.cert)
	}
	return map[string][]byte{KeyCertificate: pair.certPEM, KeyPrivateKey: pair.keyPEM, KeyCABundle: encodeBundle(certs)}
}

// caBundle is a webhook's caBundle holding cas.
func caBundle(cas ...*keyPair) []byte {
	var certs []*x509.Certificate
	for _, ca := range cas {
		certs = append(certs, ca.cert)
	}
	return encodeBundle(certs)
}

// caNames shows certificates by name in diffs.
var caNames = cmp.Transformer("CommonName", func(c *x509.Certificate) string { return c.Subject.CommonName })

func TestDecide(t *testing.T) {
	// caA is the first CA; caB replaced it when less than a third of caA's life was left.
	caA := mustCA(t, t0)
	caBIssued := renewalTime(caA.cert)
	caB := mustCA(t, caBIssued)
	leafA := mustServing(t, caA, t0)
	// leafLate is the serving certificate renewed last before caA's rotation.
	leafLate := mustServing(t, caA, caBIssued.Add(-10*time.Minute))
	leafAOther := mustServing(t, caA, t0, "elsewhere.example.svc")
	leafB := mustServing(t, caB, caBIssued.Add(time.Hour))
	stranger := mustCA(t, t0.Add(time.Second))
	leafStranger := mustServing(t, stranger, t0)

	modify := func(o Observed, change func(*Observed)) Observed {
		change(&o)
		return o
	}
	steady := Observed{
		CA:                         secretData(caA, caA),
		Serving:                    secretData(leafA, caA),
		WebhookConfigurationExists: true,
		WebhookCABundles:           [][]byte{caBundle(caA), caBundle(caA)},
	}
	// Just before caA's rotation.
	late := modify(steady, func(o *Observed) { o.Serving = secretData(leafLate, caA) })
	// The pass after a CA rotation: the bundle holds both CAs, the webhook still serves a certificate from caA.
	rotated := Observed{
		CA:                         secretData(caB, caB, caA),
		Serving:                    secretData(leafLate, caB, caA),
		WebhookConfigurationExists: true,
		WebhookCABundles:           [][]byte{caBundle(caB, caA), caBundle(caB, caA)},
	}
	syncBundle := Step{SyncCABundle, ""}

	cases := map[string]struct {
		mode      Mode
		observed  Observed
		now       time.Time
		lifetimes Lifetimes
		want      Plan
	}{
		"a shortened serving validity replaces a certificate that would outlive it": {
			observed:  steady,
			now:       t0,
			lifetimes: Lifetimes{CA: caValidity, Serving: 10 * time.Minute},
			want: Plan{
				Serving: Step{Issue, "the serving certificate expires at 2030-01-01T01:00:00Z, later than the validity (10m0s) allows"},
				Webhook: syncBundle,
			},
		},
		"a shortened CA validity rotates the CA": {
			observed:  steady,
			now:       t0,
			lifetimes: Lifetimes{CA: time.Hour, Serving: servingValidity},
			want: Plan{
				CA:       Step{Rotate, "the CA expires at 2030-01-01T03:00:00Z, later than the CA validity (1h0m0s) allows"},
				Serving:  Step{WaitForTrust, "the serving certificate comes from a previous CA; the webhook configuration does not trust the new CA yet"},
				Previous: []*x509.Certificate{caA.cert},
				Webhook:  syncBundle,
			},
		},
		"the configured lifetimes, a moment after issue: nothing to do": {
			observed:  steady,
			now:       t0.Add(time.Second),
			lifetimes: Lifetimes{CA: caValidity, Serving: servingValidity},
			want:      Plan{Webhook: syncBundle},
		},
		"first issue: nothing exists yet": {
			observed: Observed{},
			now:      t0,
			want: Plan{
				CA:      Step{Create, "there is no CA Secret"},
				Serving: Step{Issue, "there is no serving Secret"},
				Webhook: Step{Keep, "there is no webhook configuration: the installer creates it"},
			},
		},
		"first issue with a webhook configuration already registered": {
			observed: Observed{WebhookConfigurationExists: true, WebhookCABundles: [][]byte{nil, nil}},
			now:      t0,
			want: Plan{
				CA:      Step{Create, "there is no CA Secret"},
				Serving: Step{Issue, "there is no serving Secret"},
				Webhook: syncBundle,
			},
		},
		"nothing to do": {
			observed: steady,
			now:      t0.Add(10 * time.Minute),
			want:     Plan{Webhook: syncBundle},
		},
		"nothing to do a second before the serving certificate's last third": {
			observed: steady,
			now:      renewalTime(leafA.cert).Add(-time.Second),
			want:     Plan{Webhook: syncBundle},
		},
		"serving renewal when a third of its lifetime is left": {
			observed: steady,
			now:      renewalTime(leafA.cert),
			want: Plan{
				Serving: Step{Issue, "the serving certificate expires at 2030-01-01T01:00:00Z: less than a third of its lifetime is left"},
				Webhook: syncBundle,
			},
		},
		"serving certificate expired": {
			observed: steady,
			now:      leafA.cert.NotAfter,
			want: Plan{
				Serving: Step{Issue, "the serving certificate expired at 2030-01-01T01:00:00Z"},
				Webhook: syncBundle,
			},
		},
		"serving certificate not valid yet (the clock went back)": {
			observed: steady,
			now:      leafA.cert.NotBefore.Add(-time.Second),
			want: Plan{
				Serving: Step{Issue, "the serving certificate is not valid before 2029-12-31T23:54:00Z"},
				Webhook: syncBundle,
			},
		},
		"serving certificate for other names": {
			observed: modify(steady, func(o *Observed) { o.Serving = secretData(leafAOther, caA) }),
			now:      t0.Add(10 * time.Minute),
			want: Plan{
				Serving: Step{Issue, "the serving certificate names elsewhere.example.svc, want " +
					"karmada-quota-webhook.karmada-system.svc,karmada-quota-webhook.karmada-system.svc.cluster.local"},
				Webhook: syncBundle,
			},
		},
		"serving names in another order are the same names": {
			observed: modify(steady, func(o *Observed) { o.Serving = secretData(mustServing(t, caA, t0, dnsNames[1], dnsNames[0]), caA) }),
			now:      t0.Add(10 * time.Minute),
			want:     Plan{Webhook: syncBundle},
		},
		"serving Secret with garbage": {
			observed: modify(steady, func(o *Observed) {
				o.Serving = map[string][]byte{KeyCertificate: []byte("not a certificate"), KeyPrivateKey: leafA.keyPEM}
			}),
			now: t0.Add(10 * time.Minute),
			want: Plan{
				Serving: Step{Issue, "the serving certificate is unusable: tls: failed to find any PEM data in certificate input"},
				Webhook: syncBundle,
			},
		},
		"serving Secret whose key belongs to another certificate": {
			observed: modify(steady, func(o *Observed) {
				o.Serving = map[string][]byte{KeyCertificate: leafA.certPEM, KeyPrivateKey: leafAOther.keyPEM, KeyCABundle: caBundle(caA)}
			}),
			now: t0.Add(10 * time.Minute),
			want: Plan{
				Serving: Step{Issue, "the serving certificate is unusable: tls: private key does not match public key"},
				Webhook: syncBundle,
			},
		},
		"serving Secret without data": {
			observed: modify(steady, func(o *Observed) { o.Serving = map[string][]byte{} }),
			now:      t0.Add(10 * time.Minute),
			want: Plan{
				Serving: Step{Issue, "the serving certificate is unusable: tls.crt or tls.key is empty"},
				Webhook: syncBundle,
			},
		},
		"serving Secret holding a CA": {
			observed: modify(steady, func(o *Observed) { o.Serving = secretData(caA, caA) }),
			now:      t0.Add(10 * time.Minute),
			want: Plan{
				Serving: Step{Issue, "the serving certificate is unusable: not a serving certificate: it is a CA"},
				Webhook: syncBundle,
			},
		},
		"serving certificate from a CA nobody trusts": {
			observed: modify(steady, func(o *Observed) { o.Serving = secretData(leafStranger, caA) }),
			now:      t0.Add(10 * time.Minute),
			want: Plan{
				Serving: Step{Issue, "the serving certificate comes from a CA that is not trusted"},
				Webhook: syncBundle,
			},
		},
		"CA rotation, step 1: the new CA joins the bundle, the serving certificate waits": {
			observed: late,
			now:      renewalTime(caA.cert),
			want: Plan{
				CA:       Step{Rotate, "the CA expires at 2030-01-01T03:00:00Z: less than a third of its lifetime is left"},
				Serving:  Step{WaitForTrust, "the serving certificate comes from a previous CA; the webhook configuration does not trust the new CA yet"},
				Previous: []*x509.Certificate{caA.cert},
				Webhook:  syncBundle,
			},
		},
		"CA rotation, step 2: once the webhook configuration trusts the new CA, the serving certificate follows": {
			observed: rotated,
			now:      caBIssued.Add(time.Minute),
			want: Plan{
				Serving:  Step{Issue, "the serving certificate comes from a previous CA, and the webhook configuration trusts the current one"},
				Previous: []*x509.Certificate{caA.cert},
				Webhook:  syncBundle,
			},
		},
		"CA rotation, step 2 waits while a webhook lacks the new CA": {
			observed: modify(rotated, func(o *Observed) { o.WebhookCABundles = [][]byte{caBundle(caB, caA), caBundle(caA)} }),
			now:      caBIssued.Add(time.Minute),
			want: Plan{
				Serving:  Step{WaitForTrust, "the serving certificate comes from a previous CA; the webhook configuration does not trust the current CA yet"},
				Previous: []*x509.Certificate{caA.cert},
				Webhook:  syncBundle,
			},
		},
		"CA rotation without a webhook configuration takes one pass": {
			observed: modify(late, func(o *Observed) { o.WebhookConfigurationExists, o.WebhookCABundles = false, nil }),
			now:      renewalTime(caA.cert),
			want: Plan{
				CA:       Step{Rotate, "the CA expires at 2030-01-01T03:00:00Z: less than a third of its lifetime is left"},
				Serving:  Step{Issue, "the serving certificate comes from a previous CA, and no webhook configuration has to trust the current one first"},
				Previous: []*x509.Certificate{caA.cert},
				Webhook:  Step{Keep, "there is no webhook configuration: the installer creates it"},
			},
		},
		"after the rotation the previous CA stays trusted until it expires": {
			observed: modify(rotated, func(o *Observed) { o.Serving = secretData(leafB, caB, caA) }),
			now:      caA.cert.NotAfter.Add(-time.Second),
			want:     Plan{Previous: []*x509.Certificate{caA.cert}, Webhook: syncBundle},
		},
		"an expired CA leaves the bundle": {
			observed: modify(rotated, func(o *Observed) { o.Serving = secretData(leafB, caB, caA) }),
			now:      caA.cert.NotAfter,
			want:     Plan{Webhook: syncBundle},
		},
		"a CA Secret lost: a new CA, and the served certificate's issuer stays trusted until the new CA is": {
			observed: modify(steady, func(o *Observed) { o.CA = nil }),
			now:      t0.Add(10 * time.Minute),
			want: Plan{
				CA:       Step{Create, "there is no CA Secret"},
				Serving:  Step{WaitForTrust, "the serving certificate comes from a previous CA; the webhook configuration does not trust the new CA yet"},
				Previous: []*x509.Certificate{caA.cert},
				Webhook:  syncBundle,
			},
		},
		"a CA Secret holding no CA": {
			observed: modify(steady, func(o *Observed) { o.CA = secretData(leafA, caA) }),
			now:      t0.Add(10 * time.Minute),
			want: Plan{
				CA:       Step{Create, "the CA Secret is unusable: not a CA"},
				Serving:  Step{WaitForTrust, "the serving certificate comes from a previous CA; the webhook configuration does not trust the new CA yet"},
				Previous: []*x509.Certificate{caA.cert},
				Webhook:  syncBundle,
			},
		},
		"a CA not valid yet (the clock went back) is replaced": {
			observed: steady,
			now:      caA.cert.NotBefore.Add(-time.Second),
			want: Plan{
				CA: Step{Rotate, "the CA is not valid before 2029-12-31T23:42:00Z"},
				// The serving certificate is not valid then either, so nothing is lost by replacing it at once.
				Serving: Step{Issue, "the serving certificate is not valid before 2029-12-31T23:54:00Z"},
				// caA is not expired, so it stays trusted.
				Previous: []*x509.Certificate{caA.cert},
				Webhook:  syncBundle,
			},
		},
		"external: the caBundle follows the serving Secret": {
			mode:     ModeExternal,
			observed: Observed{Serving: secretData(leafA, caA), WebhookConfigurationExists: true, WebhookCABundles: [][]byte{nil}},
			now:      t0,
			want:     Plan{Webhook: syncBundle},
		},
		"external: an expiring certificate is its issuer's business": {
			mode:     ModeExternal,
			observed: Observed{Serving: secretData(leafA, caA), WebhookConfigurationExists: true},
			now:      leafA.cert.NotAfter,
			want:     Plan{Webhook: syncBundle},
		},
		"external: no serving Secret yet": {
			mode:     ModeExternal,
			observed: Observed{WebhookConfigurationExists: true},
			now:      t0,
			want:     Plan{Webhook: Step{Keep, "there is no serving Secret yet: waiting for its issuer"}},
		},
		"external: a serving Secret without ca.crt leaves the caBundle in place": {
			mode: ModeExternal,
			observed: Observed{
				Serving:                    map[string][]byte{KeyCertificate: leafA.certPEM, KeyPrivateKey: leafA.keyPEM},
				WebhookConfigurationExists: true, WebhookCABundles: [][]byte{caBundle(caA)},
			},
			now:  t0,
			want: Plan{Webhook: Step{Keep, "the serving Secret has no ca.crt: its issuer must publish the CA there"}},
		},
		"external: no webhook configuration is created": {
			mode:     ModeExternal,
			observed: Observed{Serving: secretData(leafA, caA)},
			now:      t0,
			want:     Plan{Webhook: Step{Keep, "there is no webhook configuration: the installer creates it"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			mode := tc.mode
			if mode == "" {
				mode = ModeSelfManaged
			}
			got := Decide(mode, tc.observed, tc.now, dnsNames, tc.lifetimes)
			if diff := cmp.Diff(tc.want, got, caNames); diff != "" {
				t.Errorf("Decide (-want +got):\n%s", diff)
			}
		})
	}
}

func TestIssuedCertificates(t *testing.T) {
	ca := mustCA(t, t0)
	leaf := mustServing(t, ca, t0)

	if !ca.cert.IsCA || !ca.cert.BasicConstraintsValid || ca.cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		t.Errorf("CA: IsCA=%v BasicConstraintsValid=%v KeyUsage=%v, want a CA that signs certificates", ca.cert.IsCA, ca.cert.BasicConstraintsValid, ca.cert.KeyUsage)
	}
	if diff := cmp.Diff(dnsNames, leaf.cert.DNSNames); diff != "" {
		t.Errorf("serving names (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, leaf.cert.ExtKeyUsage); diff != "" {
		t.Errorf("serving extended key usage (-want +got):\n%s", diff)
	}
	for name, c := range map[string]*x509.Certificate{"CA": ca.cert, "serving": leaf.cert} {
		if c.PublicKeyAlgorithm != x509.ECDSA {
			t.Errorf("%s key: %v, want ECDSA", name, c.PublicKeyAlgorithm)
		}
		if bits := c.SerialNumber.BitLen(); bits < 64 || bits > 128 {
			t.Errorf("%s serial has %d bits, want a random 128-bit number", name, bits)
		}
	}
	// A client that trusts the CA accepts the serving certificate for each name, for the server role.
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	for _, name := range dnsNames {
		if _, err := leaf.cert.Verify(x509.VerifyOptions{DNSName: name, Roots: roots, CurrentTime: t0,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("verifying the serving certificate for %s: %v", name, err)
		}
	}
	// Lifetimes: backdated a tenth of the validity, ending validity after the issue.
	if want := t0.Add(-6 * time.Minute); !leaf.cert.NotBefore.Equal(want) {
		t.Errorf("serving NotBefore = %s, want %s", leaf.cert.NotBefore, want)
	}
	if want := t0.Add(servingValidity); !leaf.cert.NotAfter.Equal(want) {
		t.Errorf("serving NotAfter = %s, want %s", leaf.cert.NotAfter, want)
	}
	// A serving certificate never outlives its CA.
	late := mustServing(t, ca, ca.cert.NotAfter.Add(-10*time.Minute))
	if !late.cert.NotAfter.Equal(ca.cert.NotAfter) {
		t.Errorf("serving certificate issued 10m before its CA expires ends at %s, want the CA's end %s", late.cert.NotAfter, ca.cert.NotAfter)
	}
	// Stored and read back, the pair is the same.
	parsed, err := parseKeyPair(secretData(leaf, ca))
	if err != nil {
		t.Fatalf("parsing the serving Secret: %v", err)
	}
	if !parsed.cert.Equal(leaf.cert) {
		t.Errorf("the serving certificate read back differs from the one issued")
	}
}

func TestBundleSkipsDamagedEntries(t *testing.T) {
	a, b := mustCA(t, t0), mustCA(t, t0.Add(time.Second))
	data := append(append(caBundle(a), []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")...), caBundle(b)...)
	got := parseBundle(data)
	if diff := cmp.Diff([]*x509.Certificate{a.cert, b.cert}, got, caNames); diff != "" {
		t.Errorf("parseBundle (-want +got):\n%s", diff)
	}
}
