package kubelet

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// process is one run of a container: a local process in its own process group, so a signal reaches whatever it
// forked, started with a parent-death signal, so nothing outlives the kubelet; or, under a container runtime, the
// container's main process, which the kubelet signals as a runtime signals a container.
type process struct {
	// pid is the process the kubelet signals and reports; with group set, its whole process group. Under a
	// container runtime it is the container's main process, not the runtime's client the kubelet waits for.
	pid     int
	group   bool
	started time.Time
	// exited is closed once the process has been reaped; exitCode and finished are set before.
	exited   chan struct{}
	exitCode int32
	signaled bool
	finished time.Time
}

// ContainerIDPrefix starts the containerID of every container local-kubelet runs: process://<pid>.
const ContainerIDPrefix = "process://"

// PIDOf reads the process id out of a containerID local-kubelet reported.
func PIDOf(containerID string) (int, error) {
	raw, ok := strings.CutPrefix(containerID, ContainerIDPrefix)
	if !ok {
		return 0, fmt.Errorf("containerID %q was not reported by local-kubelet", containerID)
	}
	return strconv.Atoi(raw)
}

func (p *process) containerID() string { return ContainerIDPrefix + strconv.Itoa(p.pid) }

// startProcess runs path with argv (argv[0] is the name the program sees), env and working folder, its output
// appended to logPath.
func startProcess(path string, argv, env []string, dir, logPath string) (*process, error) {
	cmd := &exec.Cmd{Path: path, Args: argv, Env: env, Dir: dir}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return startCommand(cmd, logPath, "")
}

// startCommand starts cmd in a process group of its own with its output appended to logPath after header, and
// reaps it when it exits.
func startCommand(cmd *exec.Cmd, logPath, header string) (*process, error) {
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, err
	}
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	if _, err := log.WriteString(header); err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = log, log
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &process{pid: cmd.Process.Pid, group: true, started: time.Now(), exited: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		p.finished = time.Now()
		var exit *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &exit):
			if status, ok := exit.Sys().(syscall.WaitStatus); ok && status.Signaled() {
				// A shell reports death by signal N as 128+N; so does the container runtime.
				p.exitCode, p.signaled = 128+int32(status.Signal()), true
			} else {
				p.exitCode = int32(exit.ExitCode())
			}
		default:
			p.exitCode = 128
		}
		close(p.exited)
	}()
	return p, nil
}

func (p *process) done() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the process (group), waits up to grace, then SIGKILLs it, and returns once the process
// the kubelet started is reaped.
func (p *process) stop(grace time.Duration) {
	if p.done() {
		return
	}
	_ = p.signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		if p.group {
			// Whatever the process forked and left behind goes with it (a container's go with the container).
			_ = p.signal(syscall.SIGKILL)
		}
		return
	case <-time.After(grace):
	}
	_ = p.signal(syscall.SIGKILL)
	<-p.exited
}

func (p *process) signal(sig syscall.Signal) error {
	if p.group {
		return syscall.Kill(-p.pid, sig)
	}
	return syscall.Kill(p.pid, sig)
}

// terminated is the container state of an exited run.
func (p *process) terminated() *corev1.ContainerStateTerminated {
	reason := "Completed"
	if p.exitCode != 0 {
		reason = "Error"
	}
	return &corev1.ContainerStateTerminated{
		ExitCode:    p.exitCode,
		Reason:      reason,
		StartedAt:   secondsTime(p.started),
		FinishedAt:  secondsTime(p.finished),
		ContainerID: p.containerID(),
	}
}

// ContainerLogPath is where the output of one run of a container goes: <log dir>/<namespace>_<pod>_<uid>/
// <container>/<restart count>.log, the layout of the kubelet's /var/log/pods.
func ContainerLogPath(logDir, namespace, pod string, uid types.UID, container string, restartCount int32) string {
	return filepath.Join(logDir, fmt.Sprintf("%s_%s_%s", namespace, pod, uid), container, fmt.Sprintf("%d.log", restartCount))
}
