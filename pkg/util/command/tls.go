package command

import (
	"crypto/tls"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	cliflag "k8s.io/component-base/cli/flag"
)

// defaultCipherSuites are the TLS 1.2 suites with forward secrecy and authenticated encryption, the ones every
// current apiserver offers; TLS 1.3 suites are not configurable and always on.
var defaultCipherSuites = []string{
	"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
	"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
	"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
	"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
	"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
	"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
}

// TLS is how a binary's TLS servers negotiate: TLS 1.2 at least, with modern cipher suites only.
type TLS struct {
	MinVersion   string
	CipherSuites []string
}

// NewTLS returns the defaults.
func NewTLS() TLS {
	return TLS{MinVersion: "VersionTLS12", CipherSuites: slices.Clone(defaultCipherSuites)}
}

// AddFlags binds the options to fs.
func (t *TLS) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&t.MinVersion, "tls-min-version", t.MinVersion,
		"Lowest TLS version the servers accept: VersionTLS12 or VersionTLS13.")
	fs.StringSliceVar(&t.CipherSuites, "tls-cipher-suites", t.CipherSuites,
		"TLS 1.2 cipher suites the servers accept (TLS 1.3 suites are always on). Suites Go deems insecure are refused. "+
			"Possible values: "+strings.Join(cliflag.PreferredTLSCipherNames(), ", ")+".")
}

// Validate returns every invalid option.
func (t *TLS) Validate() []error {
	var errs []error
	if _, err := t.minVersion(); err != nil {
		errs = append(errs, err)
	}
	if _, err := t.cipherSuites(); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// Apply sets the options on a server's TLS configuration; it is meant for controller-runtime's TLSOpts, and
// assumes Validate passed.
func (t *TLS) Apply(cfg *tls.Config) {
	cfg.MinVersion, _ = t.minVersion()
	cfg.CipherSuites, _ = t.cipherSuites()
}

func (t *TLS) minVersion() (uint16, error) {
	switch t.MinVersion {
	case "VersionTLS12":
		return tls.VersionTLS12, nil
	case "VersionTLS13":
		return tls.VersionTLS13, nil
	}
	return 0, fmt.Errorf("--tls-min-version must be VersionTLS12 or VersionTLS13, got %q", t.MinVersion)
}

func (t *TLS) cipherSuites() ([]uint16, error) {
	if len(t.CipherSuites) == 0 {
		return nil, fmt.Errorf("--tls-cipher-suites must name at least one suite")
	}
	insecure := cliflag.InsecureTLSCiphers()
	for _, name := range t.CipherSuites {
		if _, bad := insecure[name]; bad {
			return nil, fmt.Errorf("--tls-cipher-suites: %s is insecure and refused", name)
		}
	}
	ids, err := cliflag.TLSCipherSuites(t.CipherSuites)
	if err != nil {
		return nil, fmt.Errorf("--tls-cipher-suites: %w", err)
	}
	return ids, nil
}
