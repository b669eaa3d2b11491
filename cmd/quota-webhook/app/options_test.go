package app

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"

	"github.com/karmada-quota/karmada-quota/pkg/estimator/discovery"
)

func TestOptionsValidate(t *testing.T) {
	cases := map[string]struct {
		modify func(o *Options)
		// wantErrs are the messages, in order; none means valid.
		wantErrs []string
	}{
		"defaults": {
			modify: func(*Options) {},
		},
		"an estimator over TLS": {
			modify: func(o *Options) { o.EstimatorBindAddress, o.EstimatorTLS = ":10352", true },
		},
		"an estimator address that is no host:port": {
			modify:   func(o *Options) { o.EstimatorBindAddress = "10352" },
			wantErrs: []string{`--estimator-bind-address must be host:port, got "10352"`},
		},
		"estimator TLS without an estimator": {
			modify:   func(o *Options) { o.EstimatorTLS = true },
			wantErrs: []string{"--estimator-tls and --member-estimator-service-prefix need --estimator-bind-address"},
		},
		"members' estimators nowhere": {
			modify: func(o *Options) {
				o.EstimatorBindAddress = ":10352"
				o.MemberEstimators = discovery.Lookup{Prefix: "karmada-scheduler-estimator"}
			},
			wantErrs: []string{"--member-estimator-service-namespace must be set", "--member-estimator-port must be between 1 and 65535, got 0"},
		},
		"kinds exempt, one of the core group": {
			modify: func(o *Options) { o.ExemptKinds = []string{"Certificate.cert-manager.io", "Widget"} },
		},
		"an exempt kind not written Kind.group": {
			modify:   func(o *Options) { o.ExemptKinds = []string{"certificates.cert-manager.io"} },
			wantErrs: []string{`--exempt-kinds "certificates.cert-manager.io" is not a kind written Kind.group, such as Certificate.cert-manager.io`},
		},
		"a TTL just above the apiserver's request timeout": {
			modify: func(o *Options) { o.ReservationTTL = 61 * time.Second },
		},
		"a TTL equal to the apiserver's request timeout": {
			modify:   func(o *Options) { o.ReservationTTL = 60 * time.Second },
			wantErrs: []string{"--reservation-ttl must exceed the apiserver's request timeout (1m0s), got 1m0s"},
		},
		"a TTL below the apiserver's request timeout": {
			modify:   func(o *Options) { o.ReservationTTL = 30 * time.Second },
			wantErrs: []string{"--reservation-ttl must exceed the apiserver's request timeout (1m0s), got 30s"},
		},
		"the longest TTL the controller remembers deleted bindings for": {
			modify: func(o *Options) { o.ReservationTTL = 10 * time.Minute },
		},
		"a TTL the controller would forget deleted bindings within": {
			modify: func(o *Options) { o.ReservationTTL = 11 * time.Minute },
			wantErrs: []string{"--reservation-ttl must be at most 10m0s, how long the controller remembers a deleted binding to settle " +
				"its reservations, got 11m0s"},
		},
		"the longest decision timeout a webhook allows": {
			modify: func(o *Options) { o.DecisionTimeout = 30 * time.Second },
		},
		"no decision timeout": {
			modify:   func(o *Options) { o.DecisionTimeout = 0 },
			wantErrs: []string{"--decision-timeout must be in (0s, 30s] (a webhook's timeoutSeconds is at most 30), got 0s"},
		},
		"a negative decision timeout": {
			modify:   func(o *Options) { o.DecisionTimeout = -time.Second },
			wantErrs: []string{"--decision-timeout must be in (0s, 30s] (a webhook's timeoutSeconds is at most 30), got -1s"},
		},
		"a decision timeout beyond what a webhook allows": {
			modify:   func(o *Options) { o.DecisionTimeout = 31 * time.Second },
			wantErrs: []string{"--decision-timeout must be in (0s, 30s] (a webhook's timeoutSeconds is at most 30), got 31s"},
		},
		"a loopback address": {
			modify: func(o *Options) { o.BindAddress = "127.0.0.1:8443" },
		},
		"port 0": {
			modify:   func(o *Options) { o.BindAddress = ":0" },
			wantErrs: []string{`--webhook-bind-address: the port must be between 1 and 65535, got "0"`},
		},
		"a port beyond 65535": {
			modify:   func(o *Options) { o.BindAddress = ":65536" },
			wantErrs: []string{`--webhook-bind-address: the port must be between 1 and 65535, got "65536"`},
		},
		"a port without a host part": {
			modify:   func(o *Options) { o.BindAddress = "9443" },
			wantErrs: []string{`--webhook-bind-address must be host:port, got "9443"`},
		},
		"folding sooner, for a test": {
			modify: func(o *Options) { o.MaxReservations = 20 },
		},
		"no reservation listed at all": {
			modify:   func(o *Options) { o.MaxReservations = 0 },
			wantErrs: []string{"--max-reservations-per-quota must be in [1, 250], got 0"},
		},
		"more reservations listed than the apiserver is sized for": {
			modify:   func(o *Options) { o.MaxReservations = 251 },
			wantErrs: []string{"--max-reservations-per-quota must be in [1, 250], got 251"},
		},
		"no shutdown delay": {
			modify: func(o *Options) { o.ShutdownDelay = 0 },
		},
		"a negative shutdown delay": {
			modify:   func(o *Options) { o.ShutdownDelay = -time.Second },
			wantErrs: []string{"--shutdown-delay must not be negative, got -1s"},
		},
		"TLS below 1.2": {
			modify:   func(o *Options) { o.TLS.MinVersion = "VersionTLS10" },
			wantErrs: []string{`--tls-min-version must be VersionTLS12 or VersionTLS13, got "VersionTLS10"`},
		},
		"no time to drain on shutdown": {
			modify:   func(o *Options) { o.GracefulShutdownTimeout = 0 },
			wantErrs: []string{"--graceful-shutdown-timeout must be positive, got 0s"},
		},
		"client rate limits and cert dir": {
			modify: func(o *Options) {
				o.KubeAPIQPS = 0
				o.KubeAPIBurst = -1
				o.CertDir = ""
			},
			wantErrs: []string{
				"--kube-api-qps must be positive, got 0",
				"--kube-api-burst must be positive, got -1",
				"--cert-dir must be set",
			},
		},
		"every error is reported at once": {
			modify: func(o *Options) {
				o.BindAddress = ":0"
				o.ReservationTTL = time.Minute
				o.DecisionTimeout = time.Minute
			},
			wantErrs: []string{
				`--webhook-bind-address: the port must be between 1 and 65535, got "0"`,
				"--reservation-ttl must exceed the apiserver's request timeout (1m0s), got 1m0s",
				"--decision-timeout must be in (0s, 30s] (a webhook's timeoutSeconds is at most 30), got 1m0s",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := NewOptions()
			tc.modify(o)
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
	fs := pflag.NewFlagSet("quota-webhook", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{
		"--kubeconfig=/etc/karmada/karmada.config",
		"--webhook-bind-address=127.0.0.1:8443",
		"--tls-min-version=VersionTLS13",
		"--reservation-ttl=90s",
		"--decision-timeout=5s",
		"--exempt-kinds=Certificate.cert-manager.io,Issuer.cert-manager.io",
		"--estimator-bind-address=:10352",
		"--estimator-tls",
		"--member-estimator-service-prefix=karmada-scheduler-estimator",
		"--member-estimator-service-namespace=estimators",
		"--member-estimator-port=10400",
	}); err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := NewOptions()
	want.Kubeconfig = "/etc/karmada/karmada.config"
	want.BindAddress = "127.0.0.1:8443"
	want.TLS.MinVersion = "VersionTLS13"
	want.ReservationTTL = 90 * time.Second
	want.DecisionTimeout = 5 * time.Second
	want.ExemptKinds = []string{"Certificate.cert-manager.io", "Issuer.cert-manager.io"}
	want.EstimatorBindAddress, want.EstimatorTLS = ":10352", true
	want.MemberEstimators = discovery.Lookup{Namespace: "estimators", Prefix: "karmada-scheduler-estimator", Port: 10400}
	if diff := cmp.Diff(want, o); diff != "" {
		t.Errorf("options after parsing (-want +got):\n%s", diff)
	}
	if err := o.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}
