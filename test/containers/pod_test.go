package containers

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
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

// node does for a pod what the apiserver's admission and a kubelet do before a container runtime runs it: the
// service account's token volume (the ServiceAccount admission plugin), the Secret and ConfigMap files with their
// modes, the environment, and the security context, turned into `podman run` flags. Host networking on loopback
// stands in for the pod network: the apiserver of the test is at 127.0.0.1.
type node struct {
	kube kubernetes.Interface
	// apiserver is the host apiserver as pods reach it (KUBERNETES_SERVICE_HOST and _PORT).
	apiserver *url.URL
	// dir holds the pods' volumes.
	dir string
}

func newNode(t *testing.T, cfg *rest.Config) *node {
	t.Helper()
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	return &node{kube: kube, apiserver: u, dir: t.TempDir()}
}

// apiAccessVolume is the volume the ServiceAccount admission plugin adds to a pod that mounts its token.
const apiAccessVolume = "kube-api-access"

// admit adds the service account token volume and its mount, as the ServiceAccount admission plugin does when
// neither the pod nor its ServiceAccount opts out.
func (n *node) admit(ctx context.Context, t *testing.T, namespace string, pod *corev1.PodSpec) {
	t.Helper()
	sa, err := n.kube.CoreV1().ServiceAccounts(namespace).Get(ctx, pod.ServiceAccountName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the pod's ServiceAccount %s/%s: %v", namespace, pod.ServiceAccountName, err)
	}
	automount := true
	if sa.AutomountServiceAccountToken != nil {
		automount = *sa.AutomountServiceAccountToken
	}
	if pod.AutomountServiceAccountToken != nil {
		automount = *pod.AutomountServiceAccountToken
	}
	if !automount {
		return
	}
	pod.Volumes = append(pod.Volumes, corev1.Volume{Name: apiAccessVolume, VolumeSource: corev1.VolumeSource{
		Projected: &corev1.ProjectedVolumeSource{DefaultMode: ptr.To[int32](0o644), Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607)}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		}}}})
	for i := range pod.Containers {
		pod.Containers[i].VolumeMounts = append(pod.Containers[i].VolumeMounts, corev1.VolumeMount{
			Name: apiAccessVolume, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true})
	}
}

// runArgs are the `podman run` flags, image and arguments that run container c of pod name in namespace.
func (n *node) runArgs(ctx context.Context, t *testing.T, namespace, name string, pod *corev1.PodSpec, c *corev1.Container, imageUser string) []string {
	t.Helper()
	args := []string{"--network", "host", "--pull", "never",
		// Raising resource limits is not permitted on machines like CI's; a kubelet leaves the runtime's defaults.
		"--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"}
	args = append(args, securityFlags(t, pod, c, imageUser)...)

	env := n.environment(ctx, t, namespace, name, pod, c)
	for _, e := range env {
		args = append(args, "--env", e.Name+"="+e.Value)
	}
	lookup := func(key string) (string, bool) { return lookupEnv(env, key) }

	for _, m := range c.VolumeMounts {
		local, readOnly := n.volume(ctx, t, namespace, name, pod, m.Name)
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

// security is a container's effective security context: the container's settings over the pod's, as the kubelet
// hands them to a CRI runtime.
type security struct {
	user, group  *int64
	nonRoot      bool
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
	nonRoot := sc.RunAsNonRoot
	if nonRoot == nil {
		nonRoot = psc.RunAsNonRoot
	}
	s.nonRoot = ptr.Deref(nonRoot, false)
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
func securityFlags(t *testing.T, pod *corev1.PodSpec, c *corev1.Container, imageUser string) []string {
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
	if s.nonRoot {
		// The kubelet's check (CreateContainerConfigError): the user that will run must be known and not root.
		uid, _, _ := strings.Cut(imageUser, ":")
		if s.user != nil {
			uid = strconv.FormatInt(*s.user, 10)
		}
		if n, err := strconv.Atoi(uid); err != nil || n == 0 {
			t.Fatalf("container %s has runAsNonRoot and would run as user %q: the kubelet refuses to start it", c.Name, uid)
		}
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

// environment is the container's environment as the kubelet builds it: its env entries, references resolved,
// then the apiserver's service variables.
func (n *node) environment(ctx context.Context, t *testing.T, namespace, name string, pod *corev1.PodSpec, c *corev1.Container) []corev1.EnvVar {
	t.Helper()
	if len(c.EnvFrom) > 0 {
		t.Fatalf("container %s: envFrom is not run by this test", c.Name)
	}
	var out []corev1.EnvVar
	lookup := func(key string) (string, bool) { return lookupEnv(out, key) }
	for _, e := range c.Env {
		value := kubelet.Expand(e.Value, lookup)
		if from := e.ValueFrom; from != nil {
			switch {
			case from.FieldRef != nil:
				value = fieldValue(t, namespace, name, pod, from.FieldRef.FieldPath)
			case from.SecretKeyRef != nil:
				s, err := n.kube.CoreV1().Secrets(namespace).Get(ctx, from.SecretKeyRef.Name, metav1.GetOptions{})
				if err != nil {
					t.Fatalf("env %s of container %s: %v", e.Name, c.Name, err)
				}
				value = string(s.Data[from.SecretKeyRef.Key])
			case from.ConfigMapKeyRef != nil:
				cm, err := n.kube.CoreV1().ConfigMaps(namespace).Get(ctx, from.ConfigMapKeyRef.Name, metav1.GetOptions{})
				if err != nil {
					t.Fatalf("env %s of container %s: %v", e.Name, c.Name, err)
				}
				value = cm.Data[from.ConfigMapKeyRef.Key]
			default:
				t.Fatalf("env %s of container %s: this kind of reference is not run by this test", e.Name, c.Name)
			}
		}
		out = append(out, corev1.EnvVar{Name: e.Name, Value: value})
	}
	out = append(out,
		corev1.EnvVar{Name: "KUBERNETES_SERVICE_HOST", Value: n.apiserver.Hostname()},
		corev1.EnvVar{Name: "KUBERNETES_SERVICE_PORT", Value: n.apiserver.Port()})
	return out
}

// lookupEnv is the value of the last entry named key, as a later entry overrides an earlier one.
func lookupEnv(env []corev1.EnvVar, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if env[i].Name == key {
			return env[i].Value, true
		}
	}
	return "", false
}

func fieldValue(t *testing.T, namespace, name string, pod *corev1.PodSpec, fieldPath string) string {
	t.Helper()
	switch fieldPath {
	case "metadata.namespace":
		return namespace
	case "metadata.name":
		return name
	case "spec.serviceAccountName":
		return pod.ServiceAccountName
	case "spec.nodeName":
		return "containers-test"
	case "status.podIP", "status.hostIP":
		return "127.0.0.1"
	}
	t.Fatalf("fieldRef %s is not run by this test", fieldPath)
	return ""
}

// volume writes a pod volume's files as the kubelet does (each file with its item's mode, else the volume's
// defaultMode, else 0644; owned by root, and by the pod's fsGroup where it has one) and returns its folder and
// whether Kubernetes mounts it read-only whatever the mount says (Secret, ConfigMap, projected and downward API
// volumes are).
func (n *node) volume(ctx context.Context, t *testing.T, namespace, name string, pod *corev1.PodSpec, volumeName string) (string, bool) {
	t.Helper()
	var v *corev1.Volume
	for i := range pod.Volumes {
		if pod.Volumes[i].Name == volumeName {
			v = &pod.Volumes[i]
		}
	}
	if v == nil {
		t.Fatalf("volume %s is mounted but not declared", volumeName)
	}
	dir := filepath.Join(n.dir, name, volumeName)
	if _, err := os.Stat(dir); err == nil {
		return dir, v.EmptyDir == nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var fsGroup *int64
	if pod.SecurityContext != nil {
		fsGroup = pod.SecurityContext.FSGroup
	}
	files := map[string]projectedFile{}
	switch {
	case v.EmptyDir != nil:
		// The kubelet makes an emptyDir writable by anyone; the pod's user writes there.
		if err := os.Chmod(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		return dir, false
	case v.Secret != nil:
		n.secretFiles(ctx, t, namespace, v.Secret.SecretName, v.Secret.Items, v.Secret.DefaultMode, ptr.Deref(v.Secret.Optional, false), files)
	case v.ConfigMap != nil:
		n.configMapFiles(ctx, t, namespace, v.ConfigMap.Name, v.ConfigMap.Items, v.ConfigMap.DefaultMode, ptr.Deref(v.ConfigMap.Optional, false), files)
	case v.Projected != nil:
		for _, source := range v.Projected.Sources {
			switch {
			case source.Secret != nil:
				n.secretFiles(ctx, t, namespace, source.Secret.Name, source.Secret.Items, v.Projected.DefaultMode, ptr.Deref(source.Secret.Optional, false), files)
			case source.ConfigMap != nil:
				n.configMapFiles(ctx, t, namespace, source.ConfigMap.Name, source.ConfigMap.Items, v.Projected.DefaultMode, ptr.Deref(source.ConfigMap.Optional, false), files)
			case source.ServiceAccountToken != nil:
				token, err := n.kube.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, pod.ServiceAccountName, &authenticationv1.TokenRequest{
					Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: source.ServiceAccountToken.ExpirationSeconds,
						Audiences: nonEmpty(source.ServiceAccountToken.Audience)}}, metav1.CreateOptions{})
				if err != nil {
					t.Fatalf("a token for %s/%s: %v", namespace, pod.ServiceAccountName, err)
				}
				files[source.ServiceAccountToken.Path] = projectedFile{[]byte(token.Status.Token), modeOf(nil, v.Projected.DefaultMode)}
			case source.DownwardAPI != nil:
				for _, item := range source.DownwardAPI.Items {
					if item.FieldRef == nil {
						t.Fatalf("volume %s: downward API item %s is not run by this test", volumeName, item.Path)
					}
					files[item.Path] = projectedFile{[]byte(fieldValue(t, namespace, name, pod, item.FieldRef.FieldPath)), modeOf(item.Mode, v.Projected.DefaultMode)}
				}
			default:
				t.Fatalf("volume %s: this projection is not run by this test", volumeName)
			}
		}
	default:
		t.Fatalf("volume %s: this volume type is not run by this test", volumeName)
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if path.IsAbs(p) || strings.Contains(p, "..") {
			t.Fatalf("volume %s: invalid path %q", volumeName, p)
		}
		f := files[p]
		local := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := f.mode
		if fsGroup != nil {
			// The kubelet's volume ownership for a read-only volume: the group is the fsGroup, which may read.
			mode |= 0o440
		}
		if err := os.WriteFile(local, f.data, mode); err != nil {
			t.Fatal(err)
		}
		// WriteFile's mode passes the umask; the kubelet sets the mode exactly.
		if err := os.Chmod(local, mode); err != nil {
			t.Fatal(err)
		}
		if fsGroup != nil {
			if err := os.Chown(local, -1, int(*fsGroup)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir, true
}

type projectedFile struct {
	data []byte
	mode os.FileMode
}

func (n *node) secretFiles(ctx context.Context, t *testing.T, namespace, name string, items []corev1.KeyToPath, defaultMode *int32, optional bool, files map[string]projectedFile) {
	t.Helper()
	s, err := n.kube.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		if optional {
			return
		}
		t.Fatalf("Secret %s/%s of a volume: %v", namespace, name, err)
	}
	keyFiles(t, "Secret "+name, s.Data, items, defaultMode, files)
}

func (n *node) configMapFiles(ctx context.Context, t *testing.T, namespace, name string, items []corev1.KeyToPath, defaultMode *int32, optional bool, files map[string]projectedFile) {
	t.Helper()
	cm, err := n.kube.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		if optional {
			return
		}
		t.Fatalf("ConfigMap %s/%s of a volume: %v", namespace, name, err)
	}
	data := map[string][]byte{}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	keyFiles(t, "ConfigMap "+name, data, items, defaultMode, files)
}

// keyFiles is every key as a file of its name, or the items asked for; a missing key fails the pod's start, as it
// makes the kubelet's mount fail.
func keyFiles(t *testing.T, source string, data map[string][]byte, items []corev1.KeyToPath, defaultMode *int32, files map[string]projectedFile) {
	t.Helper()
	if len(items) == 0 {
		for k, v := range data {
			files[k] = projectedFile{v, modeOf(nil, defaultMode)}
		}
		return
	}
	for _, item := range items {
		v, ok := data[item.Key]
		if !ok {
			t.Fatalf("%s has no key %q that a volume item asks for: the kubelet could not mount it", source, item.Key)
		}
		files[item.Path] = projectedFile{v, modeOf(item.Mode, defaultMode)}
	}
}

func modeOf(item, defaultMode *int32) os.FileMode {
	switch {
	case item != nil:
		return os.FileMode(*item)
	case defaultMode != nil:
		return os.FileMode(*defaultMode)
	}
	return 0o644
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
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
