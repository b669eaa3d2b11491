package command

import (
	"crypto/tls"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTLSValidate(t *testing.T) {
	cases := map[string]struct {
		modify   func(*TLS)
		wantErrs []string
	}{
		"defaults":     {modify: func(*TLS) {}},
		"TLS 1.3 only": {modify: func(o *TLS) { o.MinVersion = "VersionTLS13" }},
		"TLS 1.1 is refused": {
			modify:   func(o *TLS) { o.MinVersion = "VersionTLS11" },
			wantErrs: []string{`--tls-min-version must be VersionTLS12 or VersionTLS13, got "VersionTLS11"`},
		},
		"an insecure suite is refused": {
			modify:   func(o *TLS) { o.CipherSuites = []string{"TLS_RSA_WITH_RC4_128_SHA"} },
			wantErrs: []string{"--tls-cipher-suites: TLS_RSA_WITH_RC4_128_SHA is insecure and refused"},
		},
		"an unknown suite": {
			modify:   func(o *TLS) { o.CipherSuites = []string{"TLS_MADE_UP"} },
			wantErrs: []string{"--tls-cipher-suites: Cipher suite TLS_MADE_UP not supported or doesn't exist"},
		},
		"no suite": {
			modify:   func(o *TLS) { o.CipherSuites = nil },
			wantErrs: []string{"--tls-cipher-suites must name at least one suite"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := NewTLS()
			tc.modify(&o)
			var got []string
			for _, err := range o.Validate() {
				got = append(got, err.Error())
			}
			if diff := cmp.Diff(tc.wantErrs, got); diff != "" {
				t.Errorf("Validate (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTLSApply(t *testing.T) {
	o := NewTLS()
	var cfg tls.Config
	o.Apply(&cfg)
	if cfg.MinVersion != tls.VersionTLS12 {
		t.Errorf("MinVersion = %x, want TLS 1.2", cfg.MinVersion)
	}
	var names []string
	for _, id := range cfg.CipherSuites {
		names = append(names, tls.CipherSuiteName(id))
	}
	for _, name := range names {
		if !strings.HasPrefix(name, "TLS_ECDHE_") || !(strings.Contains(name, "GCM") || strings.Contains(name, "CHACHA20")) {
			t.Errorf("default suite %s lacks forward secrecy or authenticated encryption", name)
		}
	}
	if fmt.Sprint(names) != fmt.Sprint(defaultCipherSuites) {
		t.Errorf("suites = %v, want %v", names, defaultCipherSuites)
	}
}
