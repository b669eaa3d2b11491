package kubelet

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

func TestParseServiceHost(t *testing.T) {
	cases := []struct {
		in              string
		wantSvc, wantNS string
		wantPort        int32
		wantNotAService bool
	}{
		{in: "karmada-quota-webhook.karmada-system.svc:443", wantSvc: "karmada-quota-webhook", wantNS: "karmada-system", wantPort: 443},
		{in: "web.team-a.svc.cluster.local:8443", wantSvc: "web", wantNS: "team-a", wantPort: 8443},
		{in: "web.team-a.svc.cluster.local.:8443", wantSvc: "web", wantNS: "team-a", wantPort: 8443},
		{in: "Web.Team-A.SVC:443", wantSvc: "web", wantNS: "team-a", wantPort: 443},
		{in: "web.team-a.svc", wantNotAService: true},
		{in: "web.team-a:443", wantNotAService: true},
		{in: "web.svc:443", wantNotAService: true},
		{in: "a.b.c.svc:443", wantNotAService: true},
		{in: "example.com:443", wantNotAService: true},
		{in: "web.team-a.svc.other.domain:443", wantNotAService: true},
		{in: "web.team-a.svc:0", wantNotAService: true},
		{in: "127.0.0.1:443", wantNotAService: true},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			svc, ns, port, err := parseServiceHost(tc.in, "cluster.local")
			if tc.wantNotAService {
				if !errors.Is(err, errNotAService) {
					t.Fatalf("error %v, want errNotAService", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]any{tc.wantSvc, tc.wantNS, tc.wantPort}, []any{svc, ns, port}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// proxyPod is a pod of the proxy tests: running, ready or not, with a webhook port mapped to local.
func proxyPod(name string, ready bool, local int, mutate ...func(*corev1.Pod)) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "karmada-system", Name: name, Labels: map[string]string{"app": "webhook"},
			Annotations: map[string]string{PortsAnnotation: fmt.Sprintf(`{"webhook":%d,"8080":%d}`, local, local+1000)}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Ports: []corev1.ContainerPort{
			{Name: "webhook", ContainerPort: 9443}, {ContainerPort: 8080},
		}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}},
	}
	for _, m := range mutate {
		m(pod)
	}
	return pod
}

func webhookService(mutate ...func(*corev1.Service)) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "karmada-system", Name: "webhook"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "webhook"}, Ports: []corev1.ServicePort{
			{Name: "https", Port: 443, TargetPort: intstr.FromString("webhook")},
			{Name: "metrics", Port: 8080, TargetPort: intstr.FromInt32(8080)},
			{Name: "same", Port: 9443},
		}},
	}
	for _, m := range mutate {
		m(svc)
	}
	return svc
}

func TestServiceEndpoints(t *testing.T) {
	terminating := func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{} }
	pending := func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }
	otherApp := func(p *corev1.Pod) { p.Labels = map[string]string{"app": "other"} }
	noAnnotation := func(p *corev1.Pod) { p.Annotations = nil }
	cases := []struct {
		name    string
		svc     *corev1.Service
		port    int32
		pods    []*corev1.Pod
		want    []int
		wantErr error
	}{
		{name: "named target port, ready pods by name", svc: webhookService(), port: 443,
			pods: []*corev1.Pod{proxyPod("b", true, 41002), proxyPod("a", true, 41001)}, want: []int{41001, 41002}},
		{name: "numbered target port, unnamed container port", svc: webhookService(), port: 8080,
			pods: []*corev1.Pod{proxyPod("a", true, 41001)}, want: []int{42001}},
		{name: "target port defaults to the port", svc: webhookService(), port: 9443,
			pods: []*corev1.Pod{proxyPod("a", true, 41001)}, want: []int{41001}},
		{name: "not ready, terminating, pending, unselected and unstarted pods are skipped", svc: webhookService(), port: 443,
			pods: []*corev1.Pod{proxyPod("a", false, 41001), proxyPod("b", true, 41002, terminating), proxyPod("c", true, 41003, pending),
				proxyPod("d", true, 41004, otherApp), proxyPod("e", true, 41005, noAnnotation), proxyPod("f", true, 41006)},
			want: []int{41006}},
		{name: "publishNotReadyAddresses", port: 443,
			svc:  webhookService(func(s *corev1.Service) { s.Spec.PublishNotReadyAddresses = true }),
			pods: []*corev1.Pod{proxyPod("a", false, 41001)}, want: []int{41001}},
		{name: "no ready pod", svc: webhookService(), port: 443, pods: []*corev1.Pod{proxyPod("a", false, 41001)}, wantErr: errNoEndpoints},
		{name: "no such port", svc: webhookService(), port: 1234, pods: []*corev1.Pod{proxyPod("a", true, 41001)}, wantErr: errNoSuchPort},
		{name: "no selector", svc: webhookService(func(s *corev1.Service) { s.Spec.Selector = nil }), port: 443,
			pods: []*corev1.Pod{proxyPod("a", true, 41001)}, wantErr: errNoEndpoints},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := serviceEndpoints(tc.svc, tc.port, tc.pods)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("error %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("endpoints (-want +got):\n%s", diff)
			}
		})
	}
}

// TestServiceProxyTunnels sends HTTPS requests through the proxy, as the karmada-apiserver does with HTTPS_PROXY:
// they reach the two ready pods in turn, TLS checked end to end against the Service's DNS name; with no ready pod
// the proxy answers 503.
func TestServiceProxyTunnels(t *testing.T) {
	var servers []*httptest.Server
	for _, name := range []string{"a", "b"} {
		s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "%s %s", name, r.URL.Path)
		}))
		s.StartTLS()
		defer s.Close()
		servers = append(servers, s)
	}
	port := func(s *httptest.Server) int { return s.Listener.Addr().(*net.TCPAddr).Port }
	services := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	pods := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	_ = services.Add(webhookService())
	_ = pods.Add(proxyPod("a", true, port(servers[0])))
	_ = pods.Add(proxyPod("b", true, port(servers[1])))
	proxy := &serviceProxy{services: corelisters.NewServiceLister(services), pods: corelisters.NewPodLister(pods),
		clusterDomain: "cluster.local", ready: func() bool { return true }, next: map[string]int{}}
	front := httptest.NewServer(proxy)
	defer front.Close()

	// httptest's certificate names example.com; the client checks it under that name, through a tunnel opened
	// for the Service's name, as a client of a real Service checks its serving certificate.
	pool := servers[0].Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	proxyURL, _ := url.Parse(front.URL)
	// Balancing is per connection, as with kube-proxy: a new connection for each request.
	client := &http.Client{Transport: &http.Transport{
		DisableKeepAlives: true,
		Proxy:             http.ProxyURL(proxyURL),
		TLSClientConfig:   &tls.Config{RootCAs: pool, ServerName: "example.com"},
	}}
	var got []string
	for range 4 {
		resp, err := client.Get("https://webhook.karmada-system.svc:443/validate")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got = append(got, string(body))
	}
	if diff := cmp.Diff([]string{"a /validate", "b /validate", "a /validate", "b /validate"}, got); diff != "" {
		t.Errorf("responses, round-robin (-want +got):\n%s", diff)
	}

	for _, tc := range []struct {
		target string
		want   int
	}{
		{"nothing.karmada-system.svc:443", http.StatusNotFound},
		{"webhook.karmada-system.svc:1234", http.StatusNotFound},
		{"example.com:443", http.StatusBadGateway},
	} {
		if code := connect(t, front.Listener.Addr().String(), tc.target); code != tc.want {
			t.Errorf("CONNECT %s: %d, want %d", tc.target, code, tc.want)
		}
	}
	for _, name := range []string{"a", "b"} {
		_ = pods.Update(proxyPod(name, false, 1))
	}
	if code := connect(t, front.Listener.Addr().String(), "webhook.karmada-system.svc:443"); code != http.StatusServiceUnavailable {
		t.Errorf("CONNECT with no ready pod: %d, want 503", code)
	}
}

func connect(t *testing.T, proxy, target string) int {
	t.Helper()
	conn, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode
}
