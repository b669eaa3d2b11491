package kubelet

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// RuntimePodman names the container runtime local-kubelet can start containers through (Config.Runtime).
const RuntimePodman = "podman"

// podman is a container runtime for the kubelet: rootful podman with the settings this kind of machine needs, and
// a storage of its own under one folder, so that it neither reads nor leaves images and containers in the
// machine's podman storage:
//
//   - runc: crun, podman's default, refuses a hybrid cgroup layout;
//   - cgroupfs: no systemd;
//   - the vfs storage driver: overlay cannot stack on the overlay file system a CI machine's /tmp may sit on, and
//     these images are a few megabytes;
//   - events in a file: no journald.
type podman struct {
	dir, runRoot string
	global       []string

	mu sync.Mutex
	// loaded holds the archives loaded into the storage, by image ID.
	loaded map[string]bool
}

// newPodman prepares podman with its storage under dir. It needs podman and runc installed and root.
func newPodman(dir string) (*podman, error) {
	if _, err := exec.LookPath("podman"); err != nil {
		return nil, errors.New("podman is not installed: `make container-runtime` installs it (and runc) from Debian's packages")
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("containers run under rootful podman: run as root")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	// The run root holds conmon's sockets, whose paths (a unix socket's at most 108 bytes) grow by a container's
	// 64-character ID: it lives under a short path of the temporary folder, named after dir.
	sum := sha256.Sum256([]byte(dir))
	runRoot := filepath.Join(os.TempDir(), "kq-podman-"+hex.EncodeToString(sum[:4]))
	for _, d := range []string{filepath.Join(dir, "root"), filepath.Join(dir, "tmp"), runRoot} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	return &podman{dir: dir, runRoot: runRoot, loaded: map[string]bool{}, global: []string{
		"--root", filepath.Join(dir, "root"), "--runroot", runRoot, "--tmpdir", filepath.Join(dir, "tmp"),
		"--storage-driver", "vfs", "--runtime", "runc", "--cgroup-manager", "cgroupfs", "--events-backend", "file",
	}}, nil
}

// command is podman with this storage and these settings.
func (p *podman) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "podman", append(append([]string(nil), p.global...), args...)...)
	cmd.Env = append(os.Environ(), "TMPDIR="+filepath.Join(p.dir, "tmp"))
	return cmd
}

// output runs podman and returns what it printed.
func (p *podman) output(ctx context.Context, args ...string) ([]byte, error) {
	return p.command(ctx, args...).CombinedOutput()
}

// load loads an image archive into the storage once, as a node's image import would.
func (p *podman) load(ctx context.Context, id, archive string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.loaded[id] {
		return nil
	}
	if out, err := p.output(ctx, "load", "--input", archive); err != nil {
		return fmt.Errorf("podman load %s: %v: %s", archive, err, out)
	}
	p.loaded[id] = true
	return nil
}

// removeContainers removes every container of the storage, running or not: those a previous kubelet left when it
// died (it cannot adopt them, and they hold the pods' ports).
func (p *podman) removeContainers(ctx context.Context) error {
	if out, err := p.output(ctx, "rm", "--force", "--all", "--time", "0"); err != nil {
		return fmt.Errorf("podman rm --all: %v: %s", err, out)
	}
	return nil
}

// RemoveContainerStorage removes every container and image a kubelet with root folder rootDir ran under its
// container runtime, and the runtime's storage: image layers are read-only copies that a plain removal of the
// folder cannot always delete. A kubelet that stopped has stopped its containers; one killed has not.
func RemoveContainerStorage(ctx context.Context, rootDir string) error {
	p, err := newPodman(runtimeDir(rootDir))
	if err != nil {
		return err
	}
	return p.reset(ctx)
}

// runtimeDir is where a kubelet with root folder rootDir keeps its container runtime's storage.
func runtimeDir(rootDir string) string { return filepath.Join(rootDir, "podman") }

func (p *podman) reset(ctx context.Context) error {
	if out, err := p.output(ctx, "system", "reset", "--force"); err != nil {
		return fmt.Errorf("podman system reset: %v: %s", err, out)
	}
	return errors.Join(os.RemoveAll(p.dir), os.RemoveAll(p.runRoot))
}

// run starts `podman run --rm --name name <runArgs>` with its output appended to logPath, and returns the
// container's main process once it runs. The process is what the kubelet signals, as a CRI runtime signals a
// container's init; `podman run` reports its exit code and removes the container.
func (p *podman) run(name string, runArgs []string, logPath string) (*process, error) {
	pidFile := filepath.Join(p.dir, "tmp", name+".pid")
	_ = os.Remove(pidFile)
	args := append([]string{"run", "--rm", "--name", name, "--pidfile", pidFile}, runArgs...)
	cmd := p.command(context.Background(), args...)
	// Without a parent-death signal: killing the podman client would leave the container running; a kubelet that
	// dies leaves its containers to the next one, which removes them (removeContainers).
	started, err := startCommand(cmd, logPath, "==> podman "+strings.Join(args, " ")+"\n")
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(time.Minute)
	for {
		if raw, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(raw))); err == nil && pid > 0 {
				started.pid, started.group = pid, false
				return started, nil
			}
		}
		select {
		case <-started.exited:
			return nil, fmt.Errorf("podman run exited with code %d before the container ran (see %s)", started.exitCode, logPath)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			// Still the client's own process group: the container's process was never found.
			_ = started.signal(syscall.SIGKILL)
			_, _ = p.output(context.Background(), "rm", "--force", "--time", "0", name)
			return nil, fmt.Errorf("container %s did not start within a minute (see %s)", name, logPath)
		}
	}
}

// exec runs command in a running container (an exec probe or hook), as `kubectl exec` would.
func (p *podman) exec(ctx context.Context, name string, command []string) ([]byte, error) {
	return p.output(ctx, append([]string{"exec", name}, command...)...)
}

// startContainer starts a container through the container runtime: the image loaded from its archive, the
// security context, the environment and the command line as startRun computed them, each volume bind-mounted at
// its mountPath (read-only where Kubernetes mounts it so), on the host's network with the pod's ports translated
// as for a process (its listen addresses rewritten to the pod's local ports), so that probes, the service proxy
// and two replicas of one pod behave as in process mode.
func (w *podWorker) startContainer(ctx context.Context, pod *corev1.Pod, c *containerState, img *image, env []corev1.EnvVar, argv []string, mounts map[string]string, attempt int32, logPath string) (*containerRun, error) {
	if err := w.k.runtime.load(ctx, img.ID, img.Archive); err != nil {
		return nil, &startError{reason: "ErrImagePull", message: fmt.Sprintf("Failed to pull image %q: %v", c.spec.Image, err)}
	}
	security, err := SecurityOf(&pod.Spec, &c.spec).podmanFlags()
	if err != nil {
		return nil, configError("%v", err)
	}
	args := []string{"--network", "host", "--pull", "never",
		// Raising resource limits is not permitted on machines like CI's; a kubelet leaves the runtime's defaults.
		"--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024",
		"--env", "HOSTNAME=" + pod.Name}
	args = append(args, security...)
	for _, e := range env {
		args = append(args, "--env", e.Name+"="+e.Value)
	}
	for _, m := range c.spec.VolumeMounts {
		mode := "rw"
		if v := w.volumes[m.Name]; m.ReadOnly || v != nil && v.kind != volumeEmptyDir {
			mode = "ro"
		}
		args = append(args, "--volume", fmt.Sprintf("%s:%s:%s", mounts[m.MountPath], m.MountPath, mode))
	}
	if c.spec.WorkingDir != "" {
		args = append(args, "--workdir", c.spec.WorkingDir)
	}
	entrypoint, err := json.Marshal(argv[:1])
	if err != nil {
		return nil, createError("%v", err)
	}
	args = append(args, "--entrypoint", string(entrypoint), img.ID)
	for _, a := range argv[1:] {
		args = append(args, rewriteListenAddress(a, w.local))
	}
	name := fmt.Sprintf("k8s_%s_%s_%s_%s_%d", c.spec.Name, pod.Name, pod.Namespace, pod.UID, attempt)
	proc, err := w.k.runtime.run(name, args, logPath)
	if err != nil {
		return nil, createError("failed to start container %q: %v", c.spec.Name, err)
	}
	klog.InfoS("Started container", "pod", klog.KObj(pod), "container", c.spec.Name, "name", name, "pid", proc.pid)
	return &containerRun{proc: proc, image: img, container: name, runtime: w.k.runtime}, nil
}

// applyFSGroup gives a volume's files the pod's fsGroup, readable by it, as the kubelet sets a volume's ownership
// for a pod with an fsGroup: the container's user, not the kubelet's, reads them.
func applyFSGroup(dir string, fsGroup int64) error {
	return filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.Mode()&os.ModeSymlink != 0 {
			return err
		}
		if err := os.Lchown(p, -1, int(fsGroup)); err != nil {
			return err
		}
		switch {
		case info.IsDir():
			return os.Chmod(p, info.Mode().Perm()|0o050)
		case info.Mode().IsRegular():
			return os.Chmod(p, info.Mode().Perm()|0o040)
		}
		return nil
	})
}
