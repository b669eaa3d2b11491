package localkarmada

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Process is one program of the topology. It is recorded in the state file with the command that started it,
// so `make down` stops exactly what `make up` started, and a test can restart it the way it first ran.
type Process struct {
	Name string   `json:"name"`
	Args []string `json:"args"`
	// Env is added to the environment the process inherits (KEY=VALUE); a restart reuses it.
	Env []string `json:"env,omitempty"`
	Log string   `json:"log"`
	PID int      `json:"pid"`
	// StartTime is when the kernel started PID, in clock ticks since boot: with the PID, it names the process.
	StartTime uint64 `json:"startTime"`
	// Held is set while the process is stopped on purpose (Kill, Stop) until it is started again (Start): the
	// supervisor leaves it down.
	Held bool `json:"held,omitempty"`
	// Restarts counts the supervisor's restarts of the process after it exited; LastExit is the last line it wrote
	// before the latest.
	Restarts int    `json:"restarts,omitempty"`
	LastExit string `json:"lastExit,omitempty"`

	// exited is closed when a process this program started has been reaped; nil for processes found in a state
	// file, which the init process reaps.
	exited chan struct{}
}

// start runs the process in its own process group, its output appended to its log. A tied process is killed by
// the kernel when this program dies, so a test that is killed cannot leave it behind; an untied one outlives
// `make up` on purpose.
func (p *Process) start(tied bool) error {
	log, err := os.OpenFile(p.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer log.Close()
	fmt.Fprintf(log, "\n==> %s %s\n", time.Now().Format(time.RFC3339), strings.Join(append(slices.Clone(p.Env), p.Args...), " "))
	cmd := exec.Command(p.Args[0], p.Args[1:]...)
	cmd.Stdout, cmd.Stderr = log, log
	if len(p.Env) > 0 {
		// Later entries win, so Env overrides what the process would inherit.
		cmd.Env = append(os.Environ(), p.Env...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if tied {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", p.Name, err)
	}
	p.PID = cmd.Process.Pid
	if _, p.StartTime, err = procStat(p.PID); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return fmt.Errorf("reading the start time of %s: %w", p.Name, err)
	}
	// The channel is this run's own: a restart replaces p.exited while the previous run's waiter may still be about
	// to close its channel, and closing the new one would report the new process dead.
	exited := make(chan struct{})
	p.exited = exited
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	return nil
}

// Alive reports whether the recorded PID still runs the process that was started: the PID and the start time
// the kernel recorded for it must both match, so a PID since reused for something else is never signalled.
func (p *Process) Alive() bool {
	if p.PID <= 0 {
		return false
	}
	if p.exited != nil {
		// Our own child: it is gone once reaped, and the kernel reaps a process only after its last thread has
		// exited and closed its files. A zombie group leader is not enough: the leader of a multi-threaded program
		// (etcd, an apiserver) turns zombie while its other threads still tear down its memory and hold its
		// listening sockets, and a restart on the same ports in that moment fails with "address already in use".
		select {
		case <-p.exited:
			return false
		default:
			return true
		}
	}
	state, started, err := procStat(p.PID)
	if err != nil || started != p.StartTime {
		return false
	}
	return state != 'Z' || !lastThread(p.PID)
}

// lastThread reports whether pid's thread group has no thread left but its leader, so its files are closed.
func lastThread(pid int) bool {
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	return err != nil || len(tasks) <= 1
}

// procStat reads a process's state and start time (in clock ticks since boot) from /proc/<pid>/stat.
func procStat(pid int) (state byte, started uint64, err error) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, err
	}
	// The command name is parenthesised and may hold spaces; the fields after it start with the state (field 3).
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	fields := strings.Fields(string(raw[i+1:]))
	// starttime is field 22 of proc(5).
	if len(fields) < 20 || len(fields[0]) != 1 {
		return 0, 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	started, err = strconv.ParseUint(fields[19], 10, 64)
	return fields[0][0], started, err
}

// stop sends SIGTERM to the process group, waits up to grace for the process to exit, then kills the group.
func (p *Process) stop(grace time.Duration) error {
	if !p.Alive() {
		return nil
	}
	if p.signal(syscall.SIGTERM, grace) {
		return nil
	}
	return p.kill()
}

// kill stops the process at once, as a crash would.
func (p *Process) kill() error {
	if !p.Alive() {
		return errors.New(p.Name + " is not running")
	}
	if !p.signal(syscall.SIGKILL, 10*time.Second) {
		return fmt.Errorf("%s (pid %d) survived SIGKILL", p.Name, p.PID)
	}
	return nil
}

// signal sends sig to the process group and reports whether the process exited within timeout. The process leads
// its own group (Setpgid), so the group id is its PID, and children it forked go with it.
func (p *Process) signal(sig syscall.Signal, timeout time.Duration) bool {
	_ = syscall.Kill(-p.PID, sig)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for p.Alive() {
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
	return true
}
