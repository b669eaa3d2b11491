package kubelet

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
)

// PortsAnnotation records, on every pod the kubelet runs, the local port each declared containerPort was given:
// {"<port name, or number when unnamed>": <local port>}. Tests reach one pod through it.
const PortsAnnotation = "local-kubelet.karmada-quota.io/ports"

// PodPorts reads a pod's PortsAnnotation.
func PodPorts(pod *corev1.Pod) (map[string]int, error) {
	raw, ok := pod.Annotations[PortsAnnotation]
	if !ok {
		return nil, fmt.Errorf("pod %s/%s has no %s annotation: local-kubelet has not started it", pod.Namespace, pod.Name, PortsAnnotation)
	}
	ports := map[string]int{}
	if err := json.Unmarshal([]byte(raw), &ports); err != nil {
		return nil, fmt.Errorf("pod %s/%s: malformed %s annotation: %w", pod.Namespace, pod.Name, PortsAnnotation, err)
	}
	return ports, nil
}

// portKey is how a containerPort is named in PortsAnnotation.
func portKey(p corev1.ContainerPort) string {
	if p.Name != "" {
		return p.Name
	}
	return strconv.Itoa(int(p.ContainerPort))
}

// serviceProxy plays the host's service network for clients outside it: an HTTP CONNECT proxy that resolves
// "<service>.<namespace>.svc[.<cluster domain>]:<port>" to a ready pod of the Service and tunnels the connection
// to the local port that pod's target port was given. TLS stays end to end, so a client checks the pod's serving
// certificate against the Service's DNS name, as in a cluster. The karmada-apiserver runs with HTTPS_PROXY
// pointing here, which makes a webhook configuration's "https://<svc>.<ns>.svc/..." URL work as it does in
// production.
type serviceProxy struct {
	services      corelisters.ServiceLister
	pods          corelisters.PodLister
	clusterDomain string
	ready         func() bool

	mu   sync.Mutex
	next map[string]int
	// tunnels counts open tunnels, for the logs.
	tunnels atomic.Int64
}

var (
	errNotAService = errors.New("not a service name")
	errNoEndpoints = errors.New("no ready endpoints")
	errNoSuchPort  = errors.New("the service has no such port")
)

// parseServiceHost reads "<service>.<namespace>.svc[.<clusterDomain>]:<port>".
func parseServiceHost(hostport, clusterDomain string) (service, namespace string, port int32, err error) {
	host, portText, err := net.SplitHostPort(hostport)
	if err != nil {
		return "", "", 0, fmt.Errorf("%w: %v", errNotAService, err)
	}
	p, err := strconv.ParseInt(portText, 10, 32)
	if err != nil || p <= 0 || p > 65535 {
		return "", "", 0, fmt.Errorf("%w: bad port %q", errNotAService, portText)
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	host = strings.TrimSuffix(host, "."+clusterDomain)
	rest, ok := strings.CutSuffix(host, ".svc")
	if !ok {
		return "", "", 0, fmt.Errorf("%w: %q does not end in .svc or .svc.%s", errNotAService, host, clusterDomain)
	}
	service, namespace, ok = strings.Cut(rest, ".")
	if !ok || service == "" || namespace == "" || strings.Contains(namespace, ".") {
		return "", "", 0, fmt.Errorf("%w: %q is not <service>.<namespace>.svc", errNotAService, host)
	}
	return service, namespace, int32(p), nil
}

// serviceEndpoints lists the local ports that serve a Service's port: for each pod the Service selects that is
// running, ready (or not, with publishNotReadyAddresses) and not terminating, the local port its target port was
// given, ordered by pod name so round-robin is stable.
func serviceEndpoints(svc *corev1.Service, port int32, pods []*corev1.Pod) ([]int, error) {
	var sp *corev1.ServicePort
	for i := range svc.Spec.Ports {
		if svc.Spec.Ports[i].Port == port {
			sp = &svc.Spec.Ports[i]
		}
	}
	if sp == nil {
		return nil, fmt.Errorf("%w: service %s/%s has no port %d", errNoSuchPort, svc.Namespace, svc.Name, port)
	}
	if len(svc.Spec.Selector) == 0 {
		return nil, fmt.Errorf("%w: service %s/%s has no selector", errNoEndpoints, svc.Namespace, svc.Name)
	}
	target := sp.TargetPort
	if target.Type == intstr.Int && target.IntVal == 0 {
		target = intstr.FromInt32(sp.Port)
	}
	selector := labels.SelectorFromSet(svc.Spec.Selector)
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	var endpoints []int
	for _, pod := range pods {
		if pod.Namespace != svc.Namespace || !selector.Matches(labels.Set(pod.Labels)) || pod.DeletionTimestamp != nil ||
			pod.Status.Phase != corev1.PodRunning || !(svc.Spec.PublishNotReadyAddresses || podReady(pod)) {
			continue
		}
		key, ok := targetPortKey(pod, target)
		if !ok {
			continue
		}
		ports, err := PodPorts(pod)
		if err != nil {
			continue
		}
		if local, ok := ports[key]; ok {
			endpoints = append(endpoints, local)
		}
	}
	if len(endpoints) == 0 {
		return nil, fmt.Errorf("%w for service %s/%s port %d", errNoEndpoints, svc.Namespace, svc.Name, port)
	}
	return endpoints, nil
}

// targetPortKey finds the containerPort a Service's targetPort names in one pod (a named target port may be a
// different number in each pod), as its PortsAnnotation key.
func targetPortKey(pod *corev1.Pod, target intstr.IntOrString) (string, bool) {
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if target.Type == intstr.String && p.Name == target.StrVal ||
				target.Type == intstr.Int && p.ContainerPort == target.IntVal {
				return portKey(p), true
			}
		}
	}
	return "", false
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// resolve picks the next ready endpoint of the Service a CONNECT target names.
func (p *serviceProxy) resolve(hostport string) (string, error) {
	name, namespace, port, err := parseServiceHost(hostport, p.clusterDomain)
	if err != nil {
		return "", err
	}
	svc, err := p.services.Services(namespace).Get(name)
	if err != nil {
		return "", err
	}
	pods, err := p.pods.Pods(namespace).List(labels.Everything())
	if err != nil {
		return "", err
	}
	endpoints, err := serviceEndpoints(svc, port, pods)
	if err != nil {
		return "", err
	}
	key := fmt.Sprintf("%s/%s:%d", namespace, name, port)
	p.mu.Lock()
	i := p.next[key] % len(endpoints)
	p.next[key] = i + 1
	p.mu.Unlock()
	return net.JoinHostPort(podIP, strconv.Itoa(endpoints[i])), nil
}

func (p *serviceProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodConnect {
		if r.URL.Host == "" && r.URL.Path == "/healthz" {
			if p.ready() {
				fmt.Fprintln(w, "ok")
				return
			}
			http.Error(w, "informers not synced or node not registered", http.StatusServiceUnavailable)
			return
		}
		http.Error(w, "local-kubelet's service proxy only tunnels (CONNECT <service>.<namespace>.svc:<port>)", http.StatusMethodNotAllowed)
		return
	}
	target, err := p.resolve(r.Host)
	if err != nil {
		code := http.StatusServiceUnavailable
		switch {
		case errors.Is(err, errNotAService):
			code = http.StatusBadGateway
		case apierrors.IsNotFound(err), errors.Is(err, errNoSuchPort):
			code = http.StatusNotFound
		}
		klog.V(2).InfoS("Service proxy refused a tunnel", "target", r.Host, "code", code, "err", err)
		http.Error(w, err.Error(), code)
		return
	}
	upstream, err := net.DialTimeout("tcp", target, 5*time.Second)
	if err != nil {
		http.Error(w, fmt.Sprintf("dialing the pod behind %s at %s: %v", r.Host, target, err), http.StatusBadGateway)
		return
	}
	hijacker, ok := w.(http.Hijacker)
	if !ok {
		upstream.Close()
		http.Error(w, "the connection cannot be tunnelled", http.StatusInternalServerError)
		return
	}
	client, buffered, err := hijacker.Hijack()
	if err != nil {
		upstream.Close()
		return
	}
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		client.Close()
		upstream.Close()
		return
	}
	klog.V(4).InfoS("Service proxy tunnel", "target", r.Host, "endpoint", target, "open", p.tunnels.Add(1))
	done := make(chan struct{})
	go func() {
		// Bytes the client sent right after its CONNECT may already sit in the server's buffer.
		_, _ = io.Copy(upstream, buffered)
		if tcp, ok := upstream.(*net.TCPConn); ok {
			_ = tcp.CloseWrite()
		}
		close(done)
	}()
	_, _ = io.Copy(client, upstream)
	client.Close()
	<-done
	upstream.Close()
	p.tunnels.Add(-1)
}
