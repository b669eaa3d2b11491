package containers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// podman runs containers with a storage of its own under the test's temporary folder, so that a run neither
// reads nor leaves images in the machine's podman storage, and nothing outlives the test.
type podman struct {
	global []string
	dir    string
}

// newPodman prepares podman with the settings this kind of machine needs: runc (crun, podman's default, refuses a
// hybrid cgroup layout), cgroupfs (no systemd), the vfs storage driver (overlay cannot stack on the overlay file
// system a CI machine's /tmp may sit on; these images are a few megabytes), events in a file (no journald).
func newPodman(t *testing.T) *podman {
	t.Helper()
	if _, err := exec.LookPath("podman"); err != nil {
		t.Fatal("podman is not installed: `make test-containers` installs it (and runc) from Debian's packages")
	}
	// podman keeps sockets under the run root, whose path must stay short (108 bytes for a unix socket).
	dir, err := os.MkdirTemp("", "kq-podman-")
	if err != nil {
		t.Fatal(err)
	}
	p := &podman{dir: dir, global: []string{
		"--root", filepath.Join(dir, "root"), "--runroot", filepath.Join(dir, "run"), "--tmpdir", filepath.Join(dir, "tmp"),
		"--storage-driver", "vfs", "--runtime", "runc", "--cgroup-manager", "cgroupfs", "--events-backend", "file",
	}}
	t.Cleanup(func() {
		// Containers the test started are gone by now (--rm, and stopped by their own cleanups); the storage holds
		// read-only copies of image layers that a plain removal cannot always delete, so podman resets it first.
		if out, err := p.output(context.Background(), "system", "reset", "--force"); err != nil {
			t.Logf("podman system reset: %v: %s", err, out)
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Logf("removing podman's folder: %v", err)
		}
	})
	return p
}

func (p *podman) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "podman", append(append([]string(nil), p.global...), args...)...)
	cmd.Env = append(os.Environ(), "TMPDIR="+filepath.Join(p.dir, "tmp"))
	return cmd
}

func (p *podman) output(ctx context.Context, args ...string) ([]byte, error) {
	if err := os.MkdirAll(filepath.Join(p.dir, "tmp"), 0o700); err != nil {
		return nil, err
	}
	return p.command(ctx, args...).CombinedOutput()
}

// load loads an image archive, as `docker load` or a node's image import would.
func (p *podman) load(t *testing.T, archive string) {
	t.Helper()
	if out, err := p.output(context.Background(), "load", "--input", archive); err != nil {
		t.Fatalf("podman load %s: %v: %s", archive, err, out)
	}
}

// container is one running `podman run`: its output goes to a log file, and stop ends it as a kubelet ends a
// container (SIGTERM, the grace period, SIGKILL).
type container struct {
	name   string
	p      *podman
	log    string
	exited chan struct{}
	err    error
}

// run starts a container from runArgs (the flags and image and arguments of `podman run`).
func (p *podman) run(t *testing.T, name string, runArgs []string) *container {
	t.Helper()
	log := filepath.Join(t.TempDir(), name+".log")
	f, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.MkdirAll(filepath.Join(p.dir, "tmp"), 0o700); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"run", "--rm", "--name", name}, runArgs...)
	fmt.Fprintf(f, "==> podman %s\n", strings.Join(args, " "))
	cmd := p.command(context.Background(), args...)
	cmd.Stdout, cmd.Stderr = f, f
	// Its own process group, and killed with the test: a container must never outlive the test that started it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("podman run: %v", err)
	}
	c := &container{name: name, p: p, log: log, exited: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		close(c.exited)
	}()
	t.Cleanup(func() { c.stop(t, 10*time.Second) })
	return c
}

// pid is the process id, on this machine, of the container's main process.
func (c *container) pid(ctx context.Context, t *testing.T) int {
	t.Helper()
	out, err := c.p.output(ctx, "inspect", "--format", "{{.State.Pid}}", c.name)
	if err != nil {
		t.Fatalf("podman inspect %s: %v: %s", c.name, err, out)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil || pid <= 0 {
		t.Fatalf("podman inspect %s: no process id in %q", c.name, out)
	}
	return pid
}

// running reports whether the container has not exited.
func (c *container) running() bool {
	select {
	case <-c.exited:
		return false
	default:
		return true
	}
}

// stop stops the container with a grace period and waits until `podman run` has returned.
func (c *container) stop(t *testing.T, grace time.Duration) {
	if !c.running() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), grace+30*time.Second)
	defer cancel()
	if out, err := c.p.output(ctx, "stop", "--time", fmt.Sprint(int(grace.Seconds())), c.name); err != nil && c.running() {
		t.Logf("podman stop %s: %v: %s", c.name, err, out)
	}
	select {
	case <-c.exited:
	case <-ctx.Done():
		t.Errorf("container %s did not exit after podman stop", c.name)
	}
}

// exitError is the container's exit, once it has exited; nil for a clean exit.
func (c *container) exitError() error {
	var exit *exec.ExitError
	if errors.As(c.err, &exit) {
		return fmt.Errorf("exited with code %d", exit.ExitCode())
	}
	return c.err
}

// logTail is the last lines of the container's output, for a failure message.
func (c *container) logTail(lines int) string {
	raw, err := os.ReadFile(c.log)
	if err != nil {
		return err.Error()
	}
	all := bytes.Split(bytes.TrimRight(raw, "\n"), []byte("\n"))
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return string(bytes.Join(all, []byte("\n")))
}
