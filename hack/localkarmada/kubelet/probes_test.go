package kubelet

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestProbeTargets(t *testing.T) {
	c := &corev1.Container{Name: "app", Ports: []corev1.ContainerPort{
		{Name: "probes", ContainerPort: 8081}, {Name: "webhook", ContainerPort: 9443}, {ContainerPort: 8080},
	}}
	local := map[int32]int{8081: 40001, 9443: 40002, 8080: 40003}
	cases := []struct {
		name    string
		http    *corev1.HTTPGetAction
		tcp     *corev1.TCPSocketAction
		want    string
		wantErr string
	}{
		{name: "named port", http: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("probes")},
			want: "http://127.0.0.1:40001/readyz"},
		{name: "numbered declared port, HTTPS", http: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(9443), Scheme: corev1.URISchemeHTTPS},
			want: "https://127.0.0.1:40002/healthz"},
		{name: "unnamed declared port", http: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(8080)},
			want: "http://127.0.0.1:40003/"},
		{name: "undeclared port probed as is", http: &corev1.HTTPGetAction{Path: "/x", Port: intstr.FromInt32(7000)},
			want: "http://127.0.0.1:7000/x"},
		{name: "number written as a string", http: &corev1.HTTPGetAction{Path: "/x", Port: intstr.FromString("9443")},
			want: "http://127.0.0.1:40002/x"},
		{name: "path without a slash, with a query", http: &corev1.HTTPGetAction{Path: "ready?full=1", Port: intstr.FromString("probes")},
			want: "http://127.0.0.1:40001/ready?full=1"},
		{name: "explicit host", http: &corev1.HTTPGetAction{Host: "localhost", Path: "/", Port: intstr.FromString("probes")},
			want: "http://localhost:40001/"},
		{name: "unknown name", http: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromString("nope")},
			wantErr: "couldn't find port: nope in app"},
		{name: "tcp named", tcp: &corev1.TCPSocketAction{Port: intstr.FromString("webhook")}, want: "127.0.0.1:40002"},
		{name: "tcp out of range", tcp: &corev1.TCPSocketAction{Port: intstr.FromInt32(70000)}, wantErr: "invalid port number: 70000"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got string
			var err error
			if tc.http != nil {
				var u interface{ String() string }
				u, err = httpProbeURL(tc.http, c, local)
				if err == nil {
					got = u.String()
				}
			} else {
				got, err = tcpProbeAddress(tc.tcp, c, local)
			}
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if diff := cmp.Diff(tc.wantErr, gotErr); diff != "" {
				t.Fatalf("error (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("target (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReadinessProbeLoop runs a readiness probe against a server that is ready, then not, then again: the
// result turns false after failureThreshold failures in a row and true again after successThreshold successes.
func TestReadinessProbeLoop(t *testing.T) {
	var healthy atomic.Bool
	healthy.Store(true)
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if !healthy.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer server.Close()
	c := &corev1.Container{Name: "app", Ports: []corev1.ContainerPort{{Name: "probes", ContainerPort: 8081}},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("probes")}},
			PeriodSeconds: 1, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 2,
		}}
	var mu sync.Mutex
	var failures []string
	p := startProbes(probeTarget{
		container: c, local: map[int32]int{8081: server.Listener.Addr().(*net.TCPAddr).Port}, startedAt: time.Now(),
		onResult: func(kind probeKind, success bool, output string, _ bool) {
			if !success {
				mu.Lock()
				failures = append(failures, fmt.Sprintf("%s probe failed: %s", kind, output))
				mu.Unlock()
			}
		},
	})
	defer p.stop()
	if !p.started.Load() {
		t.Fatal("a container without a startup probe is started at once")
	}
	waitFor := func(what string, want bool, within time.Duration) {
		t.Helper()
		deadline := time.Now().Add(within)
		for p.ready.Load() != want {
			if time.Now().After(deadline) {
				t.Fatalf("%s: ready still %v after %s", what, !want, within)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("first success", true, 500*time.Millisecond)
	healthy.Store(false)
	// One failure is not enough: still ready a little after the first failed probe.
	time.Sleep(1200 * time.Millisecond)
	if !p.ready.Load() {
		t.Fatal("not ready after a single failure; failureThreshold is 2")
	}
	waitFor("two failures", false, 1500*time.Millisecond)
	healthy.Store(true)
	waitFor("recovery", true, 1500*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if len(failures) < 2 || failures[0] != "Readiness probe failed: HTTP probe failed with statuscode: 503" {
		t.Errorf("failure outputs %q", failures)
	}
}

// TestLivenessProbeGivesUp checks that a liveness probe reports the threshold and stops probing: the container
// is killed and a new run gets new probes.
func TestLivenessProbeGivesUp(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := closed.Addr().(*net.TCPAddr).Port
	closed.Close()
	c := &corev1.Container{Name: "app", LivenessProbe: &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt(port)}},
		PeriodSeconds: 1, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 1,
	}}
	reached := make(chan probeKind, 10)
	p := startProbes(probeTarget{container: c, startedAt: time.Now(),
		onResult: func(kind probeKind, success bool, _ string, thresholdReached bool) {
			if !success && thresholdReached {
				reached <- kind
			}
		}})
	defer p.stop()
	select {
	case kind := <-reached:
		if kind != livenessProbe {
			t.Fatalf("threshold reached by %s", kind)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the liveness probe never gave up")
	}
	select {
	case <-reached:
		t.Fatal("the liveness probe kept probing after giving up")
	case <-time.After(1500 * time.Millisecond):
	}
	if !p.ready.Load() {
		t.Error("a container without a readiness probe is ready")
	}
}
