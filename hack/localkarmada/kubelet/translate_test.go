package kubelet

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRewriteListenAddress(t *testing.T) {
	local := map[int32]int{9443: 41234, 8080: 41235, 8081: 41236}
	cases := []struct {
		name, in, want string
	}{
		{"flag, empty host", "--webhook-bind-address=:9443", "--webhook-bind-address=127.0.0.1:41234"},
		{"flag, any address", "--metrics-bind-address=0.0.0.0:8080", "--metrics-bind-address=127.0.0.1:41235"},
		{"flag, IPv6 any", "--health-probe-bind-address=[::]:8081", "--health-probe-bind-address=127.0.0.1:41236"},
		{"flag, a name", "--bind=localhost:9443", "--bind=127.0.0.1:41234"},
		{"single dash flag", "-addr=:9443", "-addr=127.0.0.1:41234"},
		{"separate token", ":9443", "127.0.0.1:41234"},
		{"separate token with host", "0.0.0.0:8080", "127.0.0.1:41235"},
		{"undeclared port", "--bind=:7000", "--bind=:7000"},
		{"flag without value", "--bind-address", "--bind-address"},
		{"URL left alone", "--server=https://0.0.0.0:9443", "--server=https://0.0.0.0:9443"},
		{"bare URL left alone", "http://localhost:8080/path", "http://localhost:8080/path"},
		{"not an address", "--replicas=3", "--replicas=3"},
		{"port only, no colon", "--port=9443", "--port=9443"},
		{"bare IPv6 without brackets", "::9443", "::9443"},
		{"list of addresses left alone", "--peers=a:9443,b:9443", "--peers=a:9443,b:9443"},
		{"plain word", "serve", "serve"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, rewriteListenAddress(tc.in, local)); diff != "" {
				t.Errorf("rewriteListenAddress(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestPathTranslator(t *testing.T) {
	tr := newPathTranslator(map[string]string{
		"/etc/app":       "/state/pods/u/volumes/config",
		"/etc/app/certs": "/state/pods/u/volumes/certs",
		"/var/run/secrets/kubernetes.io/serviceaccount": "/state/pods/u/volumes/kube-api-access",
		"/tmp": "/state/pods/u/volumes/tmp-state/tmp",
		"/":    "/never",
	})
	cases := []struct {
		name, in, want string
	}{
		{"exact", "/etc/app", "/state/pods/u/volumes/config"},
		{"file under", "/etc/app/config.yaml", "/state/pods/u/volumes/config/config.yaml"},
		{"longest mount wins", "/etc/app/certs/tls.crt", "/state/pods/u/volumes/certs/tls.crt"},
		{"flag value", "--cert-dir=/etc/app/certs", "--cert-dir=/state/pods/u/volumes/certs"},
		{"trailing slash", "--dir=/etc/app/", "--dir=/state/pods/u/volumes/config/"},
		{"not a path boundary", "/etc/application", "/etc/application"},
		{"not at a path start", "x/etc/app", "x/etc/app"},
		{"list", "--files=/etc/app/a,/etc/app/certs/b", "--files=/state/pods/u/volumes/config/a,/state/pods/u/volumes/certs/b"},
		{"colon list", "/etc/app:/tmp", "/state/pods/u/volumes/config:/state/pods/u/volumes/tmp-state/tmp"},
		// The replacement holds "/tmp" nowhere at a boundary, and one pass never rewrites its own output.
		{"one pass", "/tmp/x", "/state/pods/u/volumes/tmp-state/tmp/x"},
		{"root mount ignored", "/usr/bin/app", "/usr/bin/app"},
		{"no slash at all", "hello", "hello"},
		{"quoted", `--config="/etc/app/c.yaml"`, `--config="/state/pods/u/volumes/config/c.yaml"`},
		{"token path", "/var/run/secrets/kubernetes.io/serviceaccount/token", "/state/pods/u/volumes/kube-api-access/token"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tr.translate(tc.in)); diff != "" {
				t.Errorf("translate(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}
