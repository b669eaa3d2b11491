package containers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/karmada-quota/karmada-quota/hack/localkarmada/kubelet"
	"github.com/karmada-quota/karmada-quota/internal/testenv/loopback"
)

// node is the node the pods run on: local-kubelet, starting their containers through podman (kubelet.Podman), as
// `make up CONTAINER_RUNTIME=podman` runs the host's pods. The apiserver admits each pod as it admits any (the
// ServiceAccount admission gives it its token volume); the kubelet builds its environment and volumes, checks
// runAsNonRoot, runs it under its security context on the host's network (the apiserver of the test is at
// 127.0.0.1), probes it and reports its status, as it does in the local environment.
type node struct {
	name   string
	kube   kubernetes.Interface
	logDir string
}

// startNode runs local-kubelet with the podman runtime, images from imagesDir, until the test ends; then it stops
// the pods' containers and removes podman's storage.
func startNode(t *testing.T, cfg *rest.Config, imagesDir string) *node {
	t.Helper()
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// podman's storage holds read-only layer copies: a folder the test removes itself, after podman's reset.
	root, err := os.MkdirTemp("", "kq-node-")
	if err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(root, "ca.crt")
	if err := os.WriteFile(ca, cfg.CAData, 0o600); err != nil {
		t.Fatal(err)
	}
	proxy, err := loopback.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	n := &node{name: "node-0", kube: kube, logDir: t.TempDir()}
	k, err := kubelet.New(kubelet.Config{
		NodeName: n.name, RootDir: filepath.Join(root, "kubelet"), LogDir: n.logDir, ImageDirs: []string{imagesDir},
		ProxyAddress: fmt.Sprintf("127.0.0.1:%d", proxy[0]), APIServerURL: cfg.Host, APIServerCA: ca,
		Runtime: kubelet.RuntimePodman,
	}, kube)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- k.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-stopped; err != nil {
			t.Errorf("local-kubelet: %v", err)
		}
		if err := kubelet.RemoveContainerStorage(context.Background(), filepath.Join(root, "kubelet")); err != nil {
			t.Errorf("removing podman's storage: %v", err)
		}
		if err := os.RemoveAll(root); err != nil {
			t.Errorf("removing the node's folder: %v", err)
		}
	})
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", proxy[0]))
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("local-kubelet never became ready: %v", err)
	}
	return n
}

// run creates pod name of namespace from template on this node, as a controller and the scheduler would; the
// apiserver admits it and the kubelet runs it.
func (n *node) run(ctx context.Context, t *testing.T, namespace, name string, template *corev1.PodTemplateSpec) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: *template.ObjectMeta.DeepCopy(), Spec: *template.Spec.DeepCopy()}
	pod.Namespace, pod.Name, pod.Spec.NodeName = namespace, name, n.name
	created, err := n.kube.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("the apiserver refused pod %s/%s: %v", namespace, name, err)
	}
	return created
}

// waitFor polls pod until done says it is there, failing with its last status and its container's output after
// timeout.
func (n *node) waitFor(ctx context.Context, t *testing.T, pod *corev1.Pod, timeout time.Duration, what string, done func(*corev1.Pod) (bool, error)) *corev1.Pod {
	t.Helper()
	current := pod
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		got, err := n.kube.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		current = got
		return done(got)
	})
	if err != nil {
		t.Fatalf("pod %s/%s: %s: %v; its status: %s; its output:\n%s", pod.Namespace, pod.Name, what, err, statusOf(current), n.logTail(current, 40))
	}
	return current
}

// ready waits until the kubelet reports the pod Ready (its readiness probe passed) without a restart.
func (n *node) ready(ctx context.Context, t *testing.T, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	return n.waitFor(ctx, t, pod, time.Minute, "never ready", func(p *corev1.Pod) (bool, error) {
		for _, s := range p.Status.ContainerStatuses {
			if s.RestartCount > 0 || s.State.Terminated != nil {
				return false, fmt.Errorf("container %s exited", s.Name)
			}
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}

// stop deletes the pod with its grace period, as a rollout does, and returns how its container ended, read from
// the last status the kubelet reported before the pod was gone.
func (n *node) stop(ctx context.Context, t *testing.T, pod *corev1.Pod) *corev1.ContainerStateTerminated {
	t.Helper()
	w, err := n.kube.CoreV1().Pods(pod.Namespace).Watch(ctx, metav1.ListOptions{
		FieldSelector: "metadata.name=" + pod.Name, ResourceVersion: pod.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := n.kube.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var last *corev1.ContainerStateTerminated
	timeout := time.After(2 * time.Minute)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("the watch of pod %s ended before the pod was gone", pod.Name)
			}
			if p, isPod := ev.Object.(*corev1.Pod); isPod {
				for _, s := range p.Status.ContainerStatuses {
					if s.State.Terminated != nil {
						last = s.State.Terminated
					}
				}
			}
			if ev.Type == watch.Deleted {
				if last == nil {
					t.Fatalf("pod %s was deleted without the kubelet reporting how its container ended", pod.Name)
				}
				return last
			}
		case <-timeout:
			t.Fatalf("pod %s was not gone 2 minutes after its deletion", pod.Name)
		}
	}
}

// localPort is the port on 127.0.0.1 the kubelet gave the pod's declared port (by name or number).
func localPort(t *testing.T, pod *corev1.Pod, port string) int {
	t.Helper()
	ports, err := kubelet.PodPorts(pod)
	if err != nil {
		t.Fatal(err)
	}
	local, ok := ports[port]
	if !ok {
		t.Fatalf("pod %s declares no port %q", pod.Name, port)
	}
	return local
}

// pid is the process id, on this machine, of the main process of the pod's container.
func pid(t *testing.T, pod *corev1.Pod) int {
	t.Helper()
	if len(pod.Status.ContainerStatuses) != 1 {
		t.Fatalf("pod %s reports %d containers", pod.Name, len(pod.Status.ContainerStatuses))
	}
	id, err := kubelet.PIDOf(pod.Status.ContainerStatuses[0].ContainerID)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// logTail is the last lines of the output of the pod's container's last run, for a failure message.
func (n *node) logTail(pod *corev1.Pod, lines int) string {
	if len(pod.Spec.Containers) == 0 {
		return ""
	}
	var restarts int32
	for _, s := range pod.Status.ContainerStatuses {
		restarts = s.RestartCount
	}
	raw, err := os.ReadFile(kubelet.ContainerLogPath(n.logDir, pod.Namespace, pod.Name, pod.UID, pod.Spec.Containers[0].Name, restarts))
	if err != nil {
		return err.Error()
	}
	all := bytes.Split(bytes.TrimRight(raw, "\n"), []byte("\n"))
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return string(bytes.Join(all, []byte("\n")))
}

// statusOf is a pod's phase and container states, for a failure message.
func statusOf(pod *corev1.Pod) string {
	out, err := json.Marshal(map[string]any{"phase": pod.Status.Phase, "containers": pod.Status.ContainerStatuses})
	if err != nil {
		return err.Error()
	}
	return string(out)
}

// checkProcess reads the container's main process as the kernel runs it (/proc of this machine) and checks it
// against the security context: the user and group, no capability left, no privilege escalation, a seccomp
// filter, and a read-only root and read-only mounts where asked. The flags podman was given prove nothing by
// themselves.
func checkProcess(t *testing.T, pid int, pod *corev1.PodSpec, c *corev1.Container) {
	t.Helper()
	s := kubelet.SecurityOf(pod, c)
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	status := map[string]string{}
	for _, line := range strings.Split(string(raw), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			status[k] = strings.Join(strings.Fields(v), " ")
		}
	}
	want := map[string]string{}
	if s.User != nil {
		u := strconv.FormatInt(*s.User, 10)
		want["Uid"] = strings.Join([]string{u, u, u, u}, " ")
	}
	if s.Group != nil {
		g := strconv.FormatInt(*s.Group, 10)
		want["Gid"] = strings.Join([]string{g, g, g, g}, " ")
	}
	if s.DropsAll() {
		for _, set := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
			want[set] = "0000000000000000"
		}
	}
	if s.NoNewPrivileges {
		want["NoNewPrivs"] = "1"
	}
	if s.Seccomp != nil && s.Seccomp.Type == corev1.SeccompProfileTypeRuntimeDefault {
		// SECCOMP_MODE_FILTER.
		want["Seccomp"] = "2"
	}
	for k, v := range want {
		if status[k] != v {
			t.Errorf("container %s runs with %s %q, want %q (its security context)", c.Name, k, status[k], v)
		}
	}

	mounts, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", pid))
	if err != nil {
		t.Fatal(err)
	}
	options := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(mounts)), "\n") {
		// proc(5): ID parent major:minor root mount-point options ...; a later mount on the same point wins.
		fields := strings.Fields(line)
		if len(fields) > 5 {
			options[fields[4]] = fields[5]
		}
	}
	readOnly := map[string]bool{"/": s.ReadOnlyRootFilesystem}
	for _, m := range c.VolumeMounts {
		if m.ReadOnly {
			readOnly[m.MountPath] = true
		}
	}
	for point, ro := range readOnly {
		got, ok := options[point]
		if !ok {
			t.Errorf("container %s has nothing mounted at %s", c.Name, point)
			continue
		}
		if ro && !slices.Contains(strings.Split(got, ","), "ro") {
			t.Errorf("container %s can write to %s (mount options %s), which its pod spec makes read-only", c.Name, point, got)
		}
	}
}

// issueTokenSecrets plays kube-controller-manager's serviceaccount-token controller, which the test's apiserver
// lacks, until ctx ends: a Secret of type service-account-token in namespace gets its service account's token (here
// one from the TokenRequest API, valid for a day), the CA and the namespace. The install's prepare phase waits for
// them.
func (n *node) issueTokenSecrets(ctx context.Context, namespace string, ca []byte) {
	_ = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		secrets, err := n.kube.CoreV1().Secrets(namespace).List(ctx, metav1.ListOptions{FieldSelector: "type=" + string(corev1.SecretTypeServiceAccountToken)})
		if err != nil {
			return false, nil
		}
		for i := range secrets.Items {
			s := &secrets.Items[i]
			account := s.Annotations[corev1.ServiceAccountNameKey]
			if len(s.Data[corev1.ServiceAccountTokenKey]) > 0 || account == "" {
				continue
			}
			token, err := n.kube.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, account, &authenticationv1.TokenRequest{
				Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](24 * 3600)}}, metav1.CreateOptions{})
			if err != nil {
				continue
			}
			s.Data = map[string][]byte{corev1.ServiceAccountTokenKey: []byte(token.Status.Token),
				corev1.ServiceAccountRootCAKey: ca, corev1.ServiceAccountNamespaceKey: []byte(namespace)}
			_, _ = n.kube.CoreV1().Secrets(namespace).Update(ctx, s, metav1.UpdateOptions{})
		}
		return false, nil
	})
}
