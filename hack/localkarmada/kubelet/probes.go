package kubelet

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

type probeKind string

const (
	readinessProbe probeKind = "Readiness"
	livenessProbe  probeKind = "Liveness"
	startupProbe   probeKind = "Startup"
)

// probePort resolves a probe's port as the kubelet does (a name is looked up among the container's own ports,
// then read as a number), then maps a declared containerPort to the local port it was given. An undeclared port
// is probed as it is: the process, if it listens there, listens on the machine's port.
func probePort(port intstr.IntOrString, c *corev1.Container, local map[int32]int) (int, error) {
	var number int
	switch port.Type {
	case intstr.Int:
		number = port.IntValue()
	default:
		found := false
		for _, p := range c.Ports {
			if p.Name == port.StrVal {
				number, found = int(p.ContainerPort), true
				break
			}
		}
		if !found {
			n, err := strconv.Atoi(port.StrVal)
			if err != nil {
				return 0, fmt.Errorf("couldn't find port: %v in %v", port.StrVal, c.Name)
			}
			number = n
		}
	}
	if number <= 0 || number >= 65536 {
		return 0, fmt.Errorf("invalid port number: %v", number)
	}
	if mapped, ok := local[int32(number)]; ok {
		return mapped, nil
	}
	return number, nil
}

// httpProbeURL is the URL an httpGet probe requests.
func httpProbeURL(h *corev1.HTTPGetAction, c *corev1.Container, local map[int32]int) (*url.URL, error) {
	port, err := probePort(h.Port, c, local)
	if err != nil {
		return nil, err
	}
	scheme := strings.ToLower(string(h.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	host := h.Host
	if host == "" {
		host = podIP
	}
	p := h.Path
	if p != "" && !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	u, err := url.Parse(p)
	if err != nil {
		return nil, err
	}
	u.Scheme, u.Host = scheme, net.JoinHostPort(host, strconv.Itoa(port))
	return u, nil
}

// tcpProbeAddress is the address a tcpSocket probe dials.
func tcpProbeAddress(t *corev1.TCPSocketAction, c *corev1.Container, local map[int32]int) (string, error) {
	port, err := probePort(t.Port, c, local)
	if err != nil {
		return "", err
	}
	host := t.Host
	if host == "" {
		host = podIP
	}
	return net.JoinHostPort(host, strconv.Itoa(port)), nil
}

// prober runs one container's probes; its results are read by the pod worker.
type prober struct {
	ready   atomic.Bool
	started atomic.Bool
	cancel  context.CancelFunc
}

// probeTarget is what a probe needs of the container run it checks.
type probeTarget struct {
	container *corev1.Container
	local     map[int32]int
	startedAt time.Time
	// exec runs an exec probe's command as the container would, with its environment.
	exec func(ctx context.Context, command []string) ([]byte, error)
	// onResult is called after every probe with its outcome, for events and for acting on a failure.
	onResult func(kind probeKind, success bool, output string, thresholdReached bool)
}

func startProbes(t probeTarget) *prober {
	ctx, cancel := context.WithCancel(context.Background())
	p := &prober{cancel: cancel}
	c := t.container
	if c.StartupProbe == nil {
		p.started.Store(true)
	} else {
		go p.loop(ctx, startupProbe, c.StartupProbe, t)
	}
	if c.ReadinessProbe == nil {
		p.ready.Store(true)
	} else {
		go p.loop(ctx, readinessProbe, c.ReadinessProbe, t)
	}
	if c.LivenessProbe != nil {
		go p.loop(ctx, livenessProbe, c.LivenessProbe, t)
	}
	return p
}

func (p *prober) stop() { p.cancel() }

// loop is the kubelet's probe worker: readiness and liveness wait for the startup probe; nothing is probed before
// initialDelaySeconds after the container started; a result changes after successThreshold successes or
// failureThreshold failures in a row. A liveness or startup failure ends the loop: the container is killed.
func (p *prober) loop(ctx context.Context, kind probeKind, probe *corev1.Probe, t probeTarget) {
	period := 10 * time.Second
	if probe.PeriodSeconds > 0 {
		period = time.Duration(probe.PeriodSeconds) * time.Second
	}
	successThreshold := max(int(probe.SuccessThreshold), 1)
	failureThreshold := max(int(probe.FailureThreshold), 1)
	initialDelay := time.Duration(probe.InitialDelaySeconds) * time.Second
	successes, failures := 0, 0
	ticker := time.NewTicker(period)
	defer ticker.Stop()
	for {
		due := kind == startupProbe || p.started.Load()
		if due && time.Since(t.startedAt) >= initialDelay {
			ok, output := runProbe(ctx, probe, t)
			if ctx.Err() != nil {
				return
			}
			if ok {
				successes, failures = successes+1, 0
			} else {
				successes, failures = 0, failures+1
			}
			switch {
			case ok && successes >= successThreshold:
				switch kind {
				case readinessProbe:
					if !p.ready.Swap(true) {
						t.onResult(kind, true, output, true)
					}
				case startupProbe:
					p.started.Store(true)
					t.onResult(kind, true, output, true)
					return
				}
			case !ok:
				reached := failures >= failureThreshold
				if kind == readinessProbe && reached {
					p.ready.Store(false)
				}
				t.onResult(kind, false, output, reached)
				if reached && kind != readinessProbe {
					return
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// runProbe runs one probe and returns whether it succeeded, with the output an event reports.
func runProbe(ctx context.Context, probe *corev1.Probe, t probeTarget) (bool, string) {
	timeout := time.Duration(max(probe.TimeoutSeconds, 1)) * time.Second
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch {
	case probe.HTTPGet != nil:
		u, err := httpProbeURL(probe.HTTPGet, t.container, t.local)
		if err != nil {
			return false, err.Error()
		}
		return httpProbe(ctx, u, probe.HTTPGet.HTTPHeaders)
	case probe.TCPSocket != nil:
		addr, err := tcpProbeAddress(probe.TCPSocket, t.container, t.local)
		if err != nil {
			return false, err.Error()
		}
		conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return false, err.Error()
		}
		conn.Close()
		return true, ""
	case probe.Exec != nil:
		out, err := t.exec(ctx, probe.Exec.Command)
		if err != nil {
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				return false, strings.TrimSpace(string(out))
			}
			return false, err.Error()
		}
		return true, strings.TrimSpace(string(out))
	case probe.GRPC != nil:
		return false, "gRPC probes are not supported by local-kubelet"
	}
	return false, "the probe has no handler"
}

// probeTransport checks HTTPS endpoints without verifying them, as the kubelet does, and never uses a proxy.
var probeTransport = &http.Transport{
	TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // The kubelet's probes do not verify.
	DisableKeepAlives: true,
	Proxy:             nil,
}

func httpProbe(ctx context.Context, u *url.URL, headers []corev1.HTTPHeader) (bool, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return false, err.Error()
	}
	req.Header.Set("User-Agent", "kube-probe/local")
	req.Header.Set("Accept", "*/*")
	for _, h := range headers {
		if strings.EqualFold(h.Name, "Host") {
			req.Host = h.Value
			continue
		}
		req.Header.Add(h.Name, h.Value)
	}
	resp, err := (&http.Client{Transport: probeTransport}).Do(req)
	if err != nil {
		return false, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 10*1024))
	if resp.StatusCode >= 200 && resp.StatusCode < 400 {
		return true, string(bytes.TrimSpace(body))
	}
	return false, fmt.Sprintf("HTTP probe failed with statuscode: %d", resp.StatusCode)
}
