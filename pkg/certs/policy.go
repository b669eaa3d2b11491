package certs

import (
	"crypto/x509"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Action is what a pass does to a certificate.
type Action string

const (
	// Keep leaves the certificate as it is.
	Keep Action = ""
	// Create issues a CA where there is none (or none usable).
	Create Action = "Create"
	// Rotate replaces a CA; the old one stays in the bundle until it expires.
	Rotate Action = "Rotate"
	// Issue issues a new serving certificate from the current CA.
	Issue Action = "Issue"
	// WaitForTrust keeps the serving certificate for now: it should come from the current CA, but the webhook
	// configuration does not trust that CA yet. The pass syncs the caBundle; a later pass issues.
	WaitForTrust Action = "WaitForTrust"
	// SyncCABundle sets every webhook's caBundle to the serving Secret's ca.crt (as this pass leaves it) where
	// it differs.
	SyncCABundle Action = "SyncCABundle"
)

// Step is an action and why.
type Step struct {
	Action Action
	Reason string
}

// Observed is what one pass read.
type Observed struct {
	// CA and Serving are the data of the CA Secret and of the serving Secret; nil when a Secret does not exist.
	CA, Serving map[string][]byte
	// WebhookConfigurationExists tells whether the karmada-apiserver has the webhook configuration;
	// WebhookCABundles are then its webhooks' caBundles, one per webhook.
	WebhookConfigurationExists bool
	WebhookCABundles           [][]byte
}

// Lifetimes are the configured validities of the CA and of the serving certificate. A certificate that would
// outlive a fresh one issued now (beyond clockSkew) is replaced, so that shortening a validity takes effect at
// once rather than when the long-lived certificate comes to its renewal. Zero means no bound.
type Lifetimes struct {
	CA, Serving time.Duration
}

// clockSkew is how far the clocks of two controller replicas may disagree: a certificate the other one issued
// a moment ago must not look as if it outlived the validity.
const clockSkew = time.Minute

// outlives reports whether cert expires later than one issued now with validity would.
func outlives(cert *x509.Certificate, now time.Time, validity time.Duration) bool {
	return validity > 0 && cert.NotAfter.After(now.Add(validity+clockSkew))
}

// Plan is what a pass does. CA, Serving and Previous concern the self-managed mode only.
type Plan struct {
	CA      Step
	Serving Step
	// Previous are the CAs that stay trusted besides the current one, in bundle order: CAs replaced earlier that
	// have not expired, and the issuer of the serving certificate still served.
	Previous []*x509.Certificate
	// Webhook is what happens to the webhook configuration's caBundle, after the Secrets are written.
	Webhook Step
}

// observed is Observed parsed.
type observed struct {
	ca             *keyPair
	caProblem      string
	caBundle       []*x509.Certificate
	serving        *keyPair
	servingProblem string
	servingBundle  []*x509.Certificate
	webhookExists  bool
	webhookBundles [][]*x509.Certificate
}

func parse(o Observed) observed {
	var p observed
	if o.CA == nil {
		p.caProblem = "there is no CA Secret"
	} else if ca, err := parseKeyPair(o.CA); err != nil {
		p.caProblem = fmt.Sprintf("the CA Secret is unusable: %v", err)
	} else if err := checkCA(ca.cert); err != nil {
		p.caProblem = fmt.Sprintf("the CA Secret is unusable: %v", err)
	} else {
		p.ca = ca
	}
	p.caBundle = parseBundle(o.CA[KeyCABundle])

	if o.Serving == nil {
		p.servingProblem = "there is no serving Secret"
	} else if serving, err := parseKeyPair(o.Serving); err != nil {
		p.servingProblem = fmt.Sprintf("the serving certificate is unusable: %v", err)
	} else if err := checkServing(serving.cert); err != nil {
		p.servingProblem = fmt.Sprintf("the serving certificate is unusable: %v", err)
	} else {
		p.serving = serving
	}
	p.servingBundle = parseBundle(o.Serving[KeyCABundle])

	p.webhookExists = o.WebhookConfigurationExists
	for _, b := range o.WebhookCABundles {
		p.webhookBundles = append(p.webhookBundles, parseBundle(b))
	}
	return p
}

// Decide is the policy: given what a pass read and the time, what it does.
//
// In both modes the webhook configuration's caBundle follows the serving Secret's ca.crt, when the configuration
// exists: it is never created here, because an uninstall deletes it first and it must stay gone. In the external
// mode that is all; the Secret is its issuer's business. The self-managed mode keeps the certificates:
//
//   - The CA is created when there is none, and replaced when less than a third of its lifetime is left. A CA
//     replaced stays trusted (in the bundle) until it expires; expired CAs leave the bundle.
//   - The serving certificate is issued when it is missing, unusable, outside its lifetime, names other hosts,
//     or comes from a CA no longer trusted; and when less than a third of its lifetime is left.
//   - Either is replaced when it would outlive a fresh one (Lifetimes): a validity shortened takes effect at once.
//   - The webhook may serve a certificate from a new CA only once every client trusts that CA, so a serving
//     certificate from a previous CA is replaced only once the webhook configuration in the karmada-apiserver
//     carries the current CA (or does not exist: nobody calls the webhook then). A CA rotation therefore takes
//     two passes: the bundle first, then the serving certificate.
func Decide(mode Mode, o Observed, now time.Time, dnsNames []string, lifetimes Lifetimes) Plan {
	return decide(mode, o, parse(o), now, dnsNames, lifetimes)
}

func decide(mode Mode, o Observed, s observed, now time.Time, dnsNames []string, lifetimes Lifetimes) Plan {
	if mode == ModeExternal {
		return Plan{Webhook: decideWebhookExternal(o)}
	}
	plan := Plan{Webhook: Step{SyncCABundle, ""}}
	if !s.webhookExists {
		plan.Webhook = Step{Keep, noWebhookConfiguration}
	}
	plan.CA = decideCA(s, now, lifetimes.CA)

	// The current CA after this pass; nil when this pass issues it.
	var current *x509.Certificate
	if plan.CA.Action == Keep {
		current = s.ca.cert
	}
	plan.Previous = previousCAs(s, current, now)
	plan.Serving = decideServing(s, current, plan.Previous, now, dnsNames, lifetimes.Serving)
	return plan
}

const noWebhookConfiguration = "there is no webhook configuration: the installer creates it"

func decideWebhookExternal(o Observed) Step {
	switch {
	case o.Serving == nil:
		return Step{Keep, "there is no serving Secret yet: waiting for its issuer"}
	case len(o.Serving[KeyCABundle]) == 0:
		// An empty caBundle would make the karmada-apiserver verify the webhook against its own roots, which
		// fails for a private CA and refuses every binding write: better keep the bundle in place.
		return Step{Keep, "the serving Secret has no " + KeyCABundle + ": its issuer must publish the CA there"}
	case !o.WebhookConfigurationExists:
		return Step{Keep, noWebhookConfiguration}
	}
	return Step{SyncCABundle, ""}
}

func decideCA(s observed, now time.Time, validity time.Duration) Step {
	switch {
	case s.ca == nil:
		return Step{Create, s.caProblem}
	case now.Before(s.ca.cert.NotBefore):
		// The clock went back, or someone stored a CA from the future: clients would refuse what it signs.
		return Step{Rotate, fmt.Sprintf("the CA is not valid before %s", stamp(s.ca.cert.NotBefore))}
	case !now.Before(renewalTime(s.ca.cert)):
		return Step{Rotate, fmt.Sprintf("the CA expires at %s: less than a third of its lifetime is left", stamp(s.ca.cert.NotAfter))}
	case outlives(s.ca.cert, now, validity):
		return Step{Rotate, fmt.Sprintf("the CA expires at %s, later than the CA validity (%s) allows", stamp(s.ca.cert.NotAfter), validity)}
	}
	return Step{}
}

// previousCAs are the CAs that stay in the bundle besides current (nil when this pass issues a new one): the
// CAs the bundle recorded, the CA being replaced, and the issuer of the serving certificate still served (so a
// CA Secret lost or replaced by hand does not cost the trust the served certificate relies on). Expired ones go.
func previousCAs(s observed, current *x509.Certificate, now time.Time) []*x509.Certificate {
	var candidates []*x509.Certificate
	if current == nil && s.ca != nil {
		candidates = append(candidates, s.ca.cert)
	}
	candidates = append(candidates, s.caBundle...)
	if s.serving != nil {
		for _, c := range s.servingBundle {
			if signedBy(s.serving.cert, c) {
				candidates = append(candidates, c)
			}
		}
	}
	var out []*x509.Certificate
	for _, c := range candidates {
		if !c.IsCA || !now.Before(c.NotAfter) || (current != nil && c.Equal(current)) || containsCert(out, c) {
			continue
		}
		out = append(out, c)
	}
	return out
}

func decideServing(s observed, current *x509.Certificate, previous []*x509.Certificate, now time.Time, dnsNames []string, validity time.Duration) Step {
	if s.serving == nil {
		return Step{Issue, s.servingProblem}
	}
	cert := s.serving.cert
	switch {
	case now.Before(cert.NotBefore):
		return Step{Issue, fmt.Sprintf("the serving certificate is not valid before %s", stamp(cert.NotBefore))}
	case !now.Before(cert.NotAfter):
		return Step{Issue, fmt.Sprintf("the serving certificate expired at %s", stamp(cert.NotAfter))}
	case !sameNames(cert.DNSNames, dnsNames):
		return Step{Issue, fmt.Sprintf("the serving certificate names %s, want %s", strings.Join(cert.DNSNames, ","), strings.Join(dnsNames, ","))}
	}
	if current != nil && signedBy(cert, current) {
		if !now.Before(renewalTime(cert)) {
			return Step{Issue, fmt.Sprintf("the serving certificate expires at %s: less than a third of its lifetime is left", stamp(cert.NotAfter))}
		}
		if outlives(cert, now, validity) {
			return Step{Issue, fmt.Sprintf("the serving certificate expires at %s, later than the validity (%s) allows", stamp(cert.NotAfter), validity)}
		}
		return Step{}
	}
	if !slices.ContainsFunc(previous, func(ca *x509.Certificate) bool { return signedBy(cert, ca) }) {
		// Nobody will go on trusting its issuer, so keeping it buys nothing.
		return Step{Issue, "the serving certificate comes from a CA that is not trusted"}
	}
	if !s.webhookExists {
		// Nobody calls the webhook, and whoever registers it takes the caBundle from the serving Secret, which
		// holds the current CA.
		return Step{Issue, "the serving certificate comes from a previous CA, and no webhook configuration has to trust the current one first"}
	}
	if current == nil {
		// A CA issued in this pass reaches the webhook configuration at the end of the pass at the earliest.
		return Step{WaitForTrust, "the serving certificate comes from a previous CA; the webhook configuration does not trust the new CA yet"}
	}
	if !trusted(s, current) {
		return Step{WaitForTrust, "the serving certificate comes from a previous CA; the webhook configuration does not trust the current CA yet"}
	}
	return Step{Issue, "the serving certificate comes from a previous CA, and the webhook configuration trusts the current one"}
}

// trusted tells whether every client of the webhook trusts ca: every webhook of the configuration carries it in
// its caBundle.
func trusted(s observed, ca *x509.Certificate) bool {
	for _, bundle := range s.webhookBundles {
		if !containsCert(bundle, ca) {
			return false
		}
	}
	return true
}

func sameNames(got, want []string) bool {
	a, b := slices.Clone(got), slices.Clone(want)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// nextRenewal is when the self-managed certificates next need a pass: the earliest renewal of the CA or the
// serving certificate, or the expiry of a previous CA, which then leaves the bundle.
func nextRenewal(ca, serving *x509.Certificate, previous []*x509.Certificate) time.Time {
	next := renewalTime(ca)
	if t := renewalTime(serving); t.Before(next) {
		next = t
	}
	for _, c := range previous {
		if c.NotAfter.Before(next) {
			next = c.NotAfter
		}
	}
	return next
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
