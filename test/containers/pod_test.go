package containers

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
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
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/karmada-quota/karmada-quota/hack/localkarmada/kubelet"
)

// node plays the node a pod lands on. The apiserver admits the pod (its ServiceAccount admission adds the token
// volume), local-kubelet's Preparer builds the environment, the volumes' files and the runAsNonRoot check as the
// local environment's kubelet does, and this turns the rest into `podman run` flags. Host networking on loopback
// stands in for the pod network: the apiserver of the test is at 127.0.0.1.
type node struct {
	kube    kubernetes.Interface
	prepare *kubelet.Preparer
	// dir holds the pods' volumes.
	dir string
}

func newNode(ctx context.Context, t *testing.T, cfg *rest.Config) *node {
	t.Helper()
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatal(err)
	}
	return &node{kube: kube, prepare: kubelet.NewPreparer(ctx, kube, u.Hostname(), port), dir: t.TempDir()}
}

// admit creates pod name of namespace from template in the apiserver, which admits it as it admits any pod (the
// service account's token volume and its mounts, defaults), and returns it as admitted. Nothing schedules it: this
// node runs it.
func (n *node) admit(ctx context.Context, t *testing.T, namespace, name string, template *corev1.PodTemplateSpec) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: *template.ObjectMeta.DeepCopy(), Spec: *template.Spec.DeepCopy()}
	pod.Namespace, pod.Name = namespace, name
	admitted, err := n.kube.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("the apiserver refused pod %s/%s: %v", namespace, name, err)
	}
	return admitted
}

// runArgs are the `podman run` flags, image and arguments that run container c of pod.
func (n *node) runArgs(t *testing.T, pod *corev1.Pod, c *corev1.Container, imageUser string) []string {
	t.Helper()
	if err := kubelet.VerifyRunAsNonRoot(pod, c, imageUser); err != nil {
		t.Fatalf("the kubelet would not start container %s: %v", c.Name, err)
	}
	args := []string{"--network", "host", "--pull", "never",
		// Raising resource limits is not permitted on machines like CI's; a kubelet leaves the runtime's defaults.
		"--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"}
	args = append(args, securityFlags(t, &pod.Spec, c)...)

	env, err := n.prepare.Env(pod, c)
	if err != nil {
		t.Fatalf("the environment of container %s: %v", c.Name, err)
	}
	values := map[string]string{}
	for _, e := range env {
		args = append(args, "--env", e.Name+"="+e.Value)
		values[e.Name] = e.Value
	}
	lookup := func(key string) (string, bool) {
		v, ok := values[key]
		return v, ok
	}

	for _, m := range c.VolumeMounts {
		local, readOnly := n.volume(t, pod, m.Name)
		if m.SubPath != "" {
			local = filepath.Join(local, m.SubPath)
		}
		mode := "rw"
		if m.ReadOnly || readOnly {
			mode = "ro"
		}
		args = append(args, "--volume", fmt.Sprintf("%s:%s:%s", local, m.MountPath, mode))
	}
	if c.WorkingDir != "" {
		args = append(args, "--workdir", c.WorkingDir)
	}
	if len(c.Command) > 0 {
		raw, err := json.Marshal(expandAll(c.Command, lookup))
		if err != nil {
			t.Fatal(err)
		}
		args = append(args, "--entrypoint", string(raw))
	}
	args = append(args, c.Image)
	return append(args, expandAll(c.Args, lookup)...)
}

func expandAll(values []string, lookup func(string) (string, bool)) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = kubelet.Expand(v, lookup)
	}
	return out
}

// volume gives a pod's volume its files, once per pod, and returns its folder and whether Kubernetes mounts it
// read-only whatever the mount says. Where the pod has an fsGroup, the files then get the kubelet's volume
// ownership, which local-kubelet (whose processes run as itself) has no need of: the group is the fsGroup, which may
// read them.
func (n *node) volume(t *testing.T, pod *corev1.Pod, name string) (string, bool) {
	t.Helper()
	i := slices.IndexFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == name })
	if i < 0 {
		t.Fatalf("volume %s is mounted but not declared", name)
	}
	dir := filepath.Join(n.dir, pod.Name, name)
	readOnly, err := n.prepare.WriteVolume(pod, &pod.Spec.Volumes[i], dir)
	if err != nil {
		t.Fatalf("the kubelet could not mount it: %v", err)
	}
	if sc := pod.Spec.SecurityContext; sc != nil && sc.FSGroup != nil && readOnly {
		gid := int(*sc.FSGroup)
		err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
			if err != nil || info.Mode()&os.ModeSymlink != 0 {
				return err
			}
			if err := os.Lchown(p, -1, gid); err != nil || !info.Mode().IsRegular() {
				return err
			}
			return os.Chmod(p, info.Mode().Perm()|0o440)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return dir, readOnly
}

// security is a container's effective security context: the container's settings over the pod's, as the kubelet
// hands them to a CRI runtime.
type security struct {
	user, group  *int64
	groups       []int64
	privileged   bool
	caps         *corev1.Capabilities
	noNewPrivs   bool
	readOnlyRoot bool
	seccomp      *corev1.SeccompProfile
}

func effectiveSecurity(pod *corev1.PodSpec, c *corev1.Container) security {
	psc := pod.SecurityContext
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	sc := c.SecurityContext
	if sc == nil {
		sc = &corev1.SecurityContext{}
	}
	s := security{
		user: sc.RunAsUser, group: sc.RunAsGroup, privileged: ptr.Deref(sc.Privileged, false), caps: sc.Capabilities,
		noNewPrivs:   sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation,
		readOnlyRoot: ptr.Deref(sc.ReadOnlyRootFilesystem, false), seccomp: sc.SeccompProfile,
	}
	if s.user == nil {
		s.user = psc.RunAsUser
	}
	if s.group == nil {
		s.group = psc.RunAsGroup
	}
	s.groups = append(s.groups, psc.SupplementalGroups...)
	if psc.FSGroup != nil {
		s.groups = append(s.groups, *psc.FSGroup)
	}
	if s.seccomp == nil {
		s.seccomp = psc.SeccompProfile
	}
	return s
}

// dropsAll reports whether the container keeps no capability.
func (s security) dropsAll() bool {
	return s.caps != nil && len(s.caps.Add) == 0 && slices.Contains(s.caps.Drop, "ALL") && !s.privileged
}

// securityFlags runs the container under its security context. What podman cannot express as Kubernetes means it
// fails the test rather than run the container under weaker settings.
func securityFlags(t *testing.T, pod *corev1.PodSpec, c *corev1.Container) []string {
	t.Helper()
	s := effectiveSecurity(pod, c)
	var flags []string
	switch {
	case s.user != nil && s.group != nil:
		flags = append(flags, "--user", fmt.Sprintf("%d:%d", *s.user, *s.group))
	case s.user != nil:
		flags = append(flags, "--user", strconv.FormatInt(*s.user, 10))
	case s.group != nil:
		t.Fatalf("container %s: runAsGroup without runAsUser is not run by this test", c.Name)
	}
	for _, g := range s.groups {
		flags = append(flags, "--group-add", strconv.FormatInt(g, 10))
	}
	if s.privileged {
		flags = append(flags, "--privileged")
	}
	if s.caps != nil {
		for _, drop := range s.caps.Drop {
			flags = append(flags, "--cap-drop", string(drop))
		}
		for _, add := range s.caps.Add {
			flags = append(flags, "--cap-add", string(add))
		}
	}
	if s.noNewPrivs {
		flags = append(flags, "--security-opt", "no-new-privileges")
	}
	if s.readOnlyRoot {
		// podman's --read-only alone mounts writable tmpfs on /tmp, /run and /var/tmp; Kubernetes mounts none.
		flags = append(flags, "--read-only", "--read-only-tmpfs=false")
	}
	switch {
	case s.seccomp == nil, s.seccomp.Type == corev1.SeccompProfileTypeUnconfined:
		// The kubelet's default (--seccomp-default off) is no profile.
		flags = append(flags, "--security-opt", "seccomp=unconfined")
	case s.seccomp.Type == corev1.SeccompProfileTypeRuntimeDefault:
		// podman applies its default profile, as a CRI runtime applies its own.
	default:
		t.Fatalf("container %s: seccomp profile %s is not run by this test", c.Name, s.seccomp.Type)
	}
	return flags
}

// checkProcess reads the container's main process as the kernel runs it (/proc of this machine) and checks it
// against the security context: the user and group, no capability left, no privilege escalation, a seccomp
// filter, and a read-only root and read-only mounts where asked. The flags podman was given prove nothing by
// themselves.
func checkProcess(t *testing.T, pid int, pod *corev1.PodSpec, c *corev1.Container) {
	t.Helper()
	s := effectiveSecurity(pod, c)
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
	if s.user != nil {
		u := strconv.FormatInt(*s.user, 10)
		want["Uid"] = strings.Join([]string{u, u, u, u}, " ")
	}
	if s.group != nil {
		g := strconv.FormatInt(*s.group, 10)
		want["Gid"] = strings.Join([]string{g, g, g, g}, " ")
	}
	if s.dropsAll() {
		for _, set := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
			want[set] = "0000000000000000"
		}
	}
	if s.noNewPrivs {
		want["NoNewPrivs"] = "1"
	}
	if s.seccomp != nil && s.seccomp.Type == corev1.SeccompProfileTypeRuntimeDefault {
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
	readOnly := map[string]bool{"/": s.readOnlyRoot}
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

// containerPort resolves a probe's port, by name or number, to the port the container listens on (the host's:
// host networking).
func containerPort(t *testing.T, c *corev1.Container, port string) string {
	t.Helper()
	for _, p := range c.Ports {
		if p.Name == port {
			return strconv.Itoa(int(p.ContainerPort))
		}
	}
	if _, err := strconv.Atoi(port); err != nil {
		t.Fatalf("container %s declares no port %q", c.Name, port)
	}
	return port
}

// portFree reports whether nothing on this machine listens on 127.0.0.1:port, which the container, on the host's
// network, is about to take.
func portFree(port string) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", port))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
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
