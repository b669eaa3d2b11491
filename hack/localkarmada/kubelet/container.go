package kubelet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// serviceAccountMountPath is where Kubernetes mounts a pod's service account token; without a mount namespace
// nothing can be put there, so the kubelet hands the token over through $KUBECONFIG instead.
const serviceAccountMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"

// startError is why a container could not start; reason is what its waiting state reports.
type startError struct {
	reason  string
	message string
}

func (e *startError) Error() string { return e.message }

func configError(format string, args ...any) error {
	return &startError{reason: "CreateContainerConfigError", message: fmt.Sprintf(format, args...)}
}

func createError(format string, args ...any) error {
	return &startError{reason: "CreateContainerError", message: fmt.Sprintf(format, args...)}
}

// commandLine is what a container runs, as a container runtime decides it: command replaces the image's
// Entrypoint and args its Cmd (command without args drops the image's Cmd), $(VAR) references in command and args
// expanded against the container's environment as the kubelet does.
func commandLine(c *corev1.Container, image v1.Config, env map[string]string) []string {
	lookup := mappingOf(env)
	expandAll := func(in []string) []string {
		out := make([]string, len(in))
		for i, s := range in {
			out[i] = Expand(s, lookup)
		}
		return out
	}
	command, args := expandAll(c.Command), expandAll(c.Args)
	switch {
	case len(command) > 0:
		return append(command, args...)
	case len(args) > 0:
		return append(slices.Clone(image.Entrypoint), args...)
	default:
		return append(slices.Clone(image.Entrypoint), image.Cmd...)
	}
}

// verifyRunAsNonRoot is the kubelet's check of runAsNonRoot against the user the container would run as: the
// security context's runAsUser, or the image's user (none means root).
func verifyRunAsNonRoot(pod *corev1.Pod, c *corev1.Container, imageUser string) error {
	var runAsNonRoot *bool
	var runAsUser *int64
	if sc := pod.Spec.SecurityContext; sc != nil {
		runAsNonRoot, runAsUser = sc.RunAsNonRoot, sc.RunAsUser
	}
	if sc := c.SecurityContext; sc != nil {
		if sc.RunAsNonRoot != nil {
			runAsNonRoot = sc.RunAsNonRoot
		}
		if sc.RunAsUser != nil {
			runAsUser = sc.RunAsUser
		}
	}
	if runAsNonRoot == nil || !*runAsNonRoot {
		return nil
	}
	podName := fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
	if runAsUser != nil {
		if *runAsUser == 0 {
			return fmt.Errorf("container's runAsUser breaks non-root policy (pod: %q, container: %s)", podName, c.Name)
		}
		return nil
	}
	user, _, _ := strings.Cut(imageUser, ":")
	if user == "" {
		return fmt.Errorf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", podName, c.Name)
	}
	uid, err := strconv.ParseInt(user, 10, 64)
	switch {
	case err != nil:
		return fmt.Errorf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root (pod: %q, container: %s)", user, podName, c.Name)
	case uid == 0:
		return fmt.Errorf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", podName, c.Name)
	}
	return nil
}

// mounts maps every volumeMount of a container to the local path the process sees instead: the volume's folder,
// or, for a subPath, the file or folder inside it. A subPath of a volume written from API objects is copied, as
// the kubelet's bind mount pins it: it does not follow later updates of the Secret or ConfigMap.
func (w *podWorker) mounts(c *corev1.Container, env map[string]string, attempt int32) (map[string]string, error) {
	out := map[string]string{}
	for i, m := range c.VolumeMounts {
		v, ok := w.volumes[m.Name]
		if !ok {
			return nil, configError("volume %q of mount %s not found", m.Name, m.MountPath)
		}
		local := v.dir
		sub := m.SubPath
		if m.SubPathExpr != "" {
			sub = Expand(m.SubPathExpr, mappingOf(env))
		}
		if sub != "" {
			if path.IsAbs(sub) || slices.Contains(strings.Split(sub, "/"), "..") {
				return nil, configError("invalid subPath %q of volumeMount %q of container %q", sub, m.Name, c.Name)
			}
			switch v.kind {
			case volumeEmptyDir:
				local = filepath.Join(v.dir, sub)
				if err := os.MkdirAll(local, 0o755); err != nil {
					return nil, configError("failed to prepare subPath for volumeMount %q of container %q: %v", m.Name, c.Name, err)
				}
			default:
				pinned := filepath.Join(w.dir, "volume-subpaths", m.Name, c.Name, strconv.Itoa(i), strconv.Itoa(int(attempt)))
				if err := copyResolved(filepath.Join(v.dir, sub), pinned); err != nil {
					return nil, configError("failed to prepare subPath for volumeMount %q of container %q: %v", m.Name, c.Name, err)
				}
				local = pinned
			}
		}
		out[m.MountPath] = local
	}
	return out, nil
}

// copyResolved copies a file or folder, following symbolic links, to dst.
func copyResolved(src, dst string) error {
	_ = os.RemoveAll(dst)
	info, err := os.Stat(src)
	if err != nil {
		return err
	}
	if !info.IsDir() {
		return copyFile(src, dst, info.Mode().Perm())
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") {
			continue // the atomic writer's own entries
		}
		if err := copyResolved(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(src, dst string, mode fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// serviceAccountKubeconfig writes a kubeconfig that reads the service account token and CA from the folder the
// token volume lives in, for a process that cannot find them at serviceAccountMountPath. client-go reads a
// tokenFile again as it changes, so the kubelet's token refreshes reach the process.
func (w *podWorker) serviceAccountKubeconfig(pod *corev1.Pod, dir string) (string, error) {
	ca := filepath.Join(dir, "ca.crt")
	if _, err := os.Stat(ca); err != nil {
		ca = w.k.cfg.APIServerCA
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["in-cluster"] = &clientcmdapi.Cluster{Server: w.k.cfg.APIServerURL, CertificateAuthority: ca}
	cfg.AuthInfos["service-account"] = &clientcmdapi.AuthInfo{TokenFile: filepath.Join(dir, "token")}
	cfg.Contexts["in-cluster"] = &clientcmdapi.Context{Cluster: "in-cluster", AuthInfo: "service-account", Namespace: pod.Namespace}
	cfg.CurrentContext = "in-cluster"
	p := filepath.Join(w.dir, "serviceaccount.kubeconfig")
	return p, clientcmd.WriteToFile(*cfg, p)
}

// containerRun is one run of a container.
type containerRun struct {
	proc   *process
	prober *prober
	image  *image
	// container and runtime name the container under a container runtime; empty for a process.
	container string
	runtime   *podman
	env       []string
	// workDir is the process's working folder; imageWorkDir the one the spec or image names.
	workDir, imageWorkDir string
	paths                 pathTranslator
}

// execIn runs a command as the container would (an exec probe): in the container under a container runtime;
// for a process, the program from the image, or from a volume when its path is a mount path, with the
// container's environment and working folder.
func (r *containerRun) execIn(ctx context.Context, command []string) ([]byte, error) {
	if len(command) == 0 {
		return nil, errors.New("no command specified")
	}
	if r.runtime != nil {
		return r.runtime.exec(ctx, r.container, command)
	}
	argv := make([]string, len(command))
	for i, a := range command {
		argv[i] = r.paths.translate(a)
	}
	exe := argv[0]
	if exe == command[0] {
		pathEnv, _ := lookupEnv(r.env, "PATH")
		var err error
		if exe, err = r.image.executable(command[0], r.imageWorkDir, pathEnv); err != nil {
			return nil, err
		}
	}
	cmd := exec.CommandContext(ctx, exe, argv[1:]...)
	cmd.Args[0] = command[0]
	cmd.Env, cmd.Dir = r.env, r.workDir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	return cmd.CombinedOutput()
}

// runHook runs a lifecycle handler (postStart, preStop) as the kubelet does: a command in the container, an HTTP
// GET to the pod, or a sleep. TCP handlers are deprecated and, as by the kubelet, ignored.
func (r *containerRun) runHook(ctx context.Context, h *corev1.LifecycleHandler, c *corev1.Container, local map[int32]int) error {
	switch {
	case h.Exec != nil:
		out, err := r.execIn(ctx, h.Exec.Command)
		if err != nil {
			return fmt.Errorf("command %q exited with %v: %s", strings.Join(h.Exec.Command, " "), err, out)
		}
	case h.HTTPGet != nil:
		u, err := httpProbeURL(h.HTTPGet, c, local)
		if err != nil {
			return err
		}
		if ok, out := httpProbe(ctx, u, h.HTTPGet.HTTPHeaders); !ok {
			return errors.New(out)
		}
	case h.Sleep != nil:
		select {
		case <-time.After(time.Duration(h.Sleep.Seconds) * time.Second):
		case <-ctx.Done():
		}
	}
	return nil
}
