// Package proc runs the benchmark's child processes (webhooks, controllers) and makes sure none outlives the
// harness: each runs in its own process group, Stop ends the group by PID, and a watchdog kills whatever is
// still registered if the harness itself dies without cleaning up (SIGKILL, a test binary's timeout panic).
package proc

import (
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
)

// Process is one child process.
type Process struct {
	Name string
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{}
	err  error
	reg  *Registry
}

// Start runs bin with args, its output appended to logDir/name.log. The child gets its own process group so a
// terminal's Ctrl-C reaches only the harness, which then stops children in order.
func (r *Registry) Start(name, logDir, bin string, args ...string) (*Process, error) {
	log, err := os.OpenFile(filepath.Join(logDir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &Process{Name: name, cmd: cmd, log: log, done: make(chan struct{}), reg: r}
	r.Add(cmd.Process.Pid)
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// PID is the child's process id (and process group id).
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Exited reports whether the process has ended, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// Stop sends SIGTERM to the process group, and SIGKILL if it has not exited after grace. It is safe to call
// twice.
func (p *Process) Stop(grace time.Duration) {
	defer p.reg.Remove(p.PID())
	defer p.log.Close()
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.PID(), syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.PID(), syscall.SIGKILL)
		<-p.done
	}
}

// Registry is the set of process ids the watchdog kills if the harness dies. Entries are process ids; each is
// killed as a group and as a single process, so children that share the group go too.
type Registry struct {
	mu       sync.Mutex
	file     string
	pids     map[int]bool
	watchdog *exec.Cmd
}

// NewRegistry starts the watchdog: a shell that polls the harness's PID once a second and, once it is gone,
// kills every registered process. The harness calls Close when it has stopped everything itself.
func NewRegistry(dir string) (*Registry, error) {
	r := &Registry{file: filepath.Join(dir, "pids"), pids: map[int]bool{}}
	if err := r.flush(); err != nil {
		return nil, err
	}
	script := fmt.Sprintf(`while kill -0 %d 2>/dev/null; do sleep 1; done
[ -f %[2]q ] && for p in $(cat %[2]q); do kill -9 -- -$p 2>/dev/null; kill -9 $p 2>/dev/null; done
rm -f %[2]q`, os.Getpid(), r.file)
	cmd := exec.Command("/bin/sh", "-c", script)
	// Its own group, so the Ctrl-C that interrupts the harness does not end the watchdog first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the process watchdog: %w", err)
	}
	r.watchdog = cmd
	go func() { _ = cmd.Wait() }()
	return r, nil
}

// Add registers a process id.
func (r *Registry) Add(pid int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pids[pid] = true
	_ = r.flush()
}

// Remove forgets a process id (its process was stopped).
func (r *Registry) Remove(pid int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.pids, pid)
	_ = r.flush()
}

// KillAll kills every registered process by PID and forgets them: the last resort after a failed Stop.
func (r *Registry) KillAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for pid := range r.pids {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		_ = syscall.Kill(pid, syscall.SIGKILL)
		delete(r.pids, pid)
	}
	_ = r.flush()
}

// Close kills what is still registered and ends the watchdog.
func (r *Registry) Close() {
	r.KillAll()
	if r.watchdog != nil && r.watchdog.Process != nil {
		_ = syscall.Kill(-r.watchdog.Process.Pid, syscall.SIGKILL)
	}
	_ = os.Remove(r.file)
}

func (r *Registry) flush() error {
	var b strings.Builder
	for pid := range r.pids {
		b.WriteString(strconv.Itoa(pid))
		b.WriteByte('\n')
	}
	tmp := r.file + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, r.file)
}

// Children lists the process ids whose parent is this process, read from /proc. The control plane's etcd and
// kube-apiserver are started by envtest, which keeps their handles to itself; this is how the harness learns
// their PIDs to register them.
func Children() (map[int]bool, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	out := map[int]bool{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The command name is in parentheses and may hold spaces; the fields after its closing parenthesis are
		// state, then the parent's PID.
		s := string(stat)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(s[i+1:])
		if len(fields) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(fields[1]); err == nil && ppid == self {
			out[pid] = true
		}
	}
	return out, nil
}

// CPUSeconds is the user+system CPU time a process has used so far, from /proc/<pid>/stat.
func CPUSeconds(pid int) (float64, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("unparsable /proc stat")
	}
	fields := strings.Fields(s[i+1:])
	// After the command: state(0) ppid(1) ... utime(11) stime(12), in clock ticks (100 per second on Linux).
	if len(fields) < 13 {
		return 0, errors.New("short /proc stat")
	}
	utime, err1 := strconv.ParseFloat(fields[11], 64)
	stime, err2 := strconv.ParseFloat(fields[12], 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return (utime + stime) / 100, nil
}

// MachineBusySeconds is the CPU time all processes on the machine have used so far (every state but idle and
// iowait, summed over CPUs), from /proc/stat. Against the harness's own processes it shows what other work on
// the machine took during a phase.
func MachineBusySeconds() (float64, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	fields := strings.Fields(line)
	if len(fields) < 6 || fields[0] != "cpu" {
		return 0, errors.New("unparsable /proc/stat")
	}
	var busy float64
	for i, f := range fields[1:] {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return 0, err
		}
		// user nice system idle iowait irq softirq steal guest guest_nice; guest time is already in user.
		if i == 3 || i == 4 || i >= 8 {
			continue
		}
		busy += v
	}
	return busy / 100, nil
}
