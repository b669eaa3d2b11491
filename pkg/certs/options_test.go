package certs

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
)

func TestOptionsValidate(t *testing.T) {
	selfManaged := func(o *Options) { o.Mode = ModeSelfManaged }
	cases := map[string]struct {
		modify   func(o *Options)
		wantErrs []string
	}{
		"defaults: management off": {
			modify: func(*Options) {},
		},
		"off, nothing else is read": {
			modify: func(o *Options) {
				*o = Options{Mode: ModeNone}
			},
		},
		"self-managed with the defaults": {
			modify: selfManaged,
		},
		"external with the defaults": {
			modify: func(o *Options) { o.Mode = ModeExternal },
		},
		"external reads neither the CA Secret nor the lifetimes": {
			modify: func(o *Options) {
				o.Mode = ModeExternal
				o.CASecret, o.DNSNames, o.Validity, o.CAValidity = "", nil, 0, 0
			},
		},
		"an unknown mode": {
			modify:   func(o *Options) { o.Mode = "cert-manager" },
			wantErrs: []string{`--webhook-cert-mode must be self-managed, external or none, got "cert-manager"`},
		},
		"short lifetimes for tests": {
			modify: func(o *Options) {
				o.Mode = ModeSelfManaged
				o.Validity, o.CAValidity, o.CheckInterval = time.Minute, 2*time.Minute, 6*time.Second
			},
		},
		"a serving validity below a minute": {
			modify: func(o *Options) {
				o.Mode = ModeSelfManaged
				o.Validity = 59 * time.Second
			},
			// How the others relate to it means nothing until it is sane.
			wantErrs: []string{"--webhook-cert-validity must be at least 1m0s, got 59s"},
		},
		"a CA that does not outlive the serving certificate": {
			modify: func(o *Options) {
				o.Mode = ModeSelfManaged
				o.Validity, o.CAValidity, o.CheckInterval = time.Hour, time.Hour, time.Minute
			},
			wantErrs: []string{"--webhook-cert-ca-validity must be longer than --webhook-cert-validity, got 1h0m0s and 1h0m0s"},
		},
		"a check interval too long to catch a renewal window": {
			modify: func(o *Options) {
				o.Mode = ModeSelfManaged
				o.Validity, o.CAValidity, o.CheckInterval = time.Hour, 2*time.Hour, 7*time.Minute
			},
			wantErrs: []string{"--webhook-cert-check-interval must be at most a 10th of --webhook-cert-validity (6m0s), got 7m0s"},
		},
		"every error at once": {
			modify: func(o *Options) {
				o.Mode = ModeSelfManaged
				o.Namespace = "Karmada_System"
				o.ServingSecret = ""
				o.WebhookConfiguration = ""
				o.CheckInterval = 0
				o.CASecret = ""
				o.DNSNames = []string{"webhook.ns.svc", "not a name"}
				o.Validity, o.CAValidity = time.Hour, time.Minute
			},
			wantErrs: []string{
				`--webhook-cert-namespace: "Karmada_System" is not a valid namespace: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
				"--webhook-cert-secret must be set",
				"--webhook-configuration-name must be set",
				"--webhook-cert-check-interval must be positive, got 0s",
				"--webhook-cert-ca-secret must be set",
				`--webhook-cert-dns-names: "not a name" is not a DNS name: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
				"--webhook-cert-ca-validity must be longer than --webhook-cert-validity, got 1m0s and 1h0m0s",
			},
		},
		"no DNS names": {
			modify: func(o *Options) {
				selfManaged(o)
				o.DNSNames = nil
			},
			wantErrs: []string{"--webhook-cert-dns-names must name at least one DNS name"},
		},
		"the CA in the Secret the webhook mounts": {
			modify: func(o *Options) {
				selfManaged(o)
				o.CASecret = o.ServingSecret
			},
			wantErrs: []string{`--webhook-cert-ca-secret must differ from --webhook-cert-secret, both are "karmada-quota-webhook-cert"`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := NewOptions()
			tc.modify(&o)
			var got []string
			if err := o.Validate(); err != nil {
				got = strings.Split(err.Error(), "\n")
			}
			if diff := cmp.Diff(tc.wantErrs, got); diff != "" {
				t.Errorf("Validate errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOptionsAddFlags(t *testing.T) {
	o := NewOptions()
	fs := pflag.NewFlagSet("certs", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{
		"--webhook-cert-mode=self-managed",
		"--webhook-cert-namespace=quota",
		"--webhook-cert-secret=quota-webhook-cert",
		"--webhook-cert-ca-secret=quota-ca",
		"--webhook-cert-dns-names=quota-webhook.quota.svc,quota-webhook.quota.svc.cluster.local",
		"--webhook-cert-ca-validity=720h",
		"--webhook-cert-validity=168h",
		"--webhook-cert-check-interval=30s",
		"--webhook-configuration-name=quota",
	}); err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := Options{
		Mode:                 ModeSelfManaged,
		Namespace:            "quota",
		ServingSecret:        "quota-webhook-cert",
		CASecret:             "quota-ca",
		DNSNames:             []string{"quota-webhook.quota.svc", "quota-webhook.quota.svc.cluster.local"},
		CAValidity:           720 * time.Hour,
		Validity:             168 * time.Hour,
		CheckInterval:        30 * time.Second,
		WebhookConfiguration: "quota",
	}
	if diff := cmp.Diff(want, o); diff != "" {
		t.Errorf("options after parsing (-want +got):\n%s", diff)
	}
	if err := o.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}
