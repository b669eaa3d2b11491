// Package loopback finds free ports on 127.0.0.1 and tells when a server there serves TLS: what every environment
// of the project (the integration tests, the local Karmada and its local-kubelet, the benchmark, the webhook's own
// tests) needs before it points an apiserver at a webhook. Standard library only, so the local-kubelet links
// nothing more for it.
package loopback

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// FreePorts returns n distinct ports free on 127.0.0.1. They are released before the caller's servers bind
// them; another program could take one in between, which the server then reports as a failure to listen.
//
// They are taken below the kernel's ephemeral range (net.ipv4.ip_local_port_range), from which every outgoing
// connection gets its local port: a server restarted on its port (the fault suite restarts etcd and apiservers)
// would otherwise find it taken, now and then, by some client's connection that happened to draw it meanwhile.
//
// A port this process handed out before is not handed out again (until half the range has been): two callers at
// once, such as the local-kubelet starting a Deployment's two replicas together, could otherwise both find it free
// between one's check and its server's bind (seen in the e2e suite: two webhook replicas given one port, the second
// never listening).
func FreePorts(n int) ([]int, error) {
	low, high, ok := listenRange()
	handedOut.Lock()
	defer handedOut.Unlock()
	if ok && len(handedOut.ports) >= (high-low)/2 {
		clear(handedOut.ports)
	}
	ports := make([]int, 0, n)
	for attempts := 0; len(ports) < n; attempts++ {
		if attempts > 100*n {
			return nil, fmt.Errorf("no %d free ports on 127.0.0.1 in [%d, %d)", n, low, high)
		}
		port := 0 // the kernel's choice, when there is no room below the ephemeral range
		if ok {
			port = low + rand.IntN(high-low)
		}
		if handedOut.ports[port] {
			continue
		}
		// Held open until all are found, so the same port is never handed out twice.
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			if !ok {
				return nil, err
			}
			continue
		}
		defer l.Close()
		port = l.Addr().(*net.TCPAddr).Port
		handedOut.ports[port] = true
		ports = append(ports, port)
	}
	return ports, nil
}

// handedOut are the ports FreePorts returned in this process.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// listenRange is where FreePorts draws from: the 16,384 ports below the ephemeral range (by default 32768-60999,
// so 16384-32767). ok is false when the range cannot be read or starts too low to leave 4,096 ports above 1024.
func listenRange() (low, high int, ok bool) {
	raw, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0, false
	}
	f := strings.Fields(string(raw))
	if len(f) != 2 {
		return 0, 0, false
	}
	high, err = strconv.Atoi(f[0])
	if err != nil || high < 1024+4096 {
		return 0, 0, false
	}
	return max(1024, high-16384), high, true
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
