// Package loopback finds free ports on 127.0.0.1 and tells when a server there serves TLS: what every test
// environment of the project (integration, local Karmada, benchmark) needs before it points an apiserver at a
// webhook.
package loopback

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"time"
)

// FreePorts returns n distinct ports free on 127.0.0.1. They are released before the caller's servers bind
// them; another program could take one in between, which the server then reports as a failure to listen.
func FreePorts(n int) ([]int, error) {
	ports := make([]int, n)
	for i := range ports {
		// Held open until all are found, so the kernel cannot hand the same port out twice.
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports, nil
}

// FreeAddr returns one free 127.0.0.1:port address.
func FreeAddr() (string, error) {
	ports, err := FreePorts(1)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("127.0.0.1:%d", ports[0]), nil
}

// ServesTLS reports whether addr completes a TLS handshake with a certificate signed by ca: a webhook is
// registered only once it does, because with failurePolicy Fail a webhook pointing at nothing refuses every write
// it covers.
func ServesTLS(addr string, ca []byte) bool {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, &tls.Config{RootCAs: pool})
	if err != nil {
		return false
	}
	conn.Close()
	return true
}
