package localkarmada

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/karmada-quota/karmada-quota/hack/localkarmada/kubelet"
)

// The environment restarts what exits, as a kubelet restarts a container and systemd a service: in production
// karmada-scheduler and karmada-controller-manager exit when they cannot renew their leader lease (the
// karmada-apiserver away for longer than their renew deadline), and something starts them again. Without that, an
// outage of a minute left every later workload unscheduled until someone started them by hand.
//
// Every recorded process is supervised, except one stopped on purpose (Kill, Stop) until it is started again
// (Start): a test's outage lasts as long as the test wants. Restarts back off as a kubelet's do (its
// kubelet.CrashBackoff): the first at once, then after 1 s, doubling to 30 s, and from scratch once a process has
// run for a minute.
//
// The supervisor is a goroutine of the program that started the environment when processes are tied to it (tests),
// and otherwise a process of its own (`local-karmada supervise`, started by `make up`, stopped first by `make
// down`). Either way it and every other program acting on the environment (a test run against `make up`'s
// environment, `make down`) take turns through a lock file and read the processes' records from the state file
// before acting, so no two of them start the same process.

const (
	lockFile = "state.lock"
	// supervisePeriod is how often the supervisor looks for exited processes.
	supervisePeriod = 500 * time.Millisecond
)

// restartBackoff is the kubelet's crash-loop back-off with shorter limits: a local environment's process that
// exits is wanted back in seconds, not minutes.
func restartBackoff() kubelet.CrashBackoff {
	return kubelet.CrashBackoff{Initial: time.Second, Max: 30 * time.Second, ResetAfter: time.Minute}
}

// update runs fn on the processes as the state file records them now, holding the environment's lock, and saves
// them after, even when fn fails (it may have stopped or started some).
func (e *Environment) update(fn func() error) error {
	e.ops.Lock()
	defer e.ops.Unlock()
	lock, err := os.OpenFile(filepath.Join(e.Dir, lockFile), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("locking the environment: %w", err)
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()
	recorded, err := e.reload()
	if err != nil {
		return err
	}
	err = fn()
	return errors.Join(err, e.saveIfChanged(recorded))
}

// saveIfChanged saves the environment unless the state file already holds it: the supervisor looks twice a second
// and mostly changes nothing.
func (e *Environment) saveIfChanged(recorded []byte) error {
	e.mu.Lock()
	raw, err := json.MarshalIndent(e, "", "  ")
	e.mu.Unlock()
	if err != nil || bytes.Equal(raw, recorded) {
		return err
	}
	return e.save()
}

// reload takes each recorded process's run (PID, arguments, held, restarts) from the state file, where another
// program may have changed it since this one read it, and returns the file's content.
func (e *Environment) reload() ([]byte, error) {
	raw, err := os.ReadFile(filepath.Join(e.Dir, stateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var recorded struct {
		Processes []*Process `json:"processes"`
	}
	if err := json.Unmarshal(raw, &recorded); err != nil {
		return nil, fmt.Errorf("reading %s: %w", filepath.Join(e.Dir, stateFile), err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, r := range recorded.Processes {
		for _, p := range e.Processes {
			if p.Name != r.Name {
				continue
			}
			// Only what changed is written: other goroutines of this program read the records they hold.
			if p.PID != r.PID || p.StartTime != r.StartTime {
				// Started by another program: known by /proc only.
				p.PID, p.StartTime, p.exited = r.PID, r.StartTime, nil
			}
			if !slices.Equal(p.Args, r.Args) || !slices.Equal(p.Env, r.Env) {
				p.Args, p.Env = r.Args, r.Env
			}
			if p.Held != r.Held || p.Restarts != r.Restarts || p.LastExit != r.LastExit {
				p.Held, p.Restarts, p.LastExit = r.Held, r.Restarts, r.LastExit
			}
		}
	}
	return raw, nil
}

// Supervise restarts exited processes until ctx ends or the environment is gone (see above). It returns ctx's
// error, or the first error of reading or writing the environment's records.
func (e *Environment) Supervise(ctx context.Context) error {
	type supervised struct {
		backoff kubelet.CrashBackoff
		// exited is when the supervisor first saw the process gone; zero while it runs.
		exited time.Time
	}
	seen := map[string]*supervised{}
	tick := time.NewTicker(supervisePeriod)
	defer tick.Stop()
	for {
		// Without its state file the environment is gone (Down removed it): nothing is left to restart, and
		// restarting from stale records would bring back what Down stopped.
		if _, err := os.Stat(filepath.Join(e.Dir, stateFile)); errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		err := e.update(func() error {
			now := time.Now()
			for _, p := range e.Processes {
				s := seen[p.Name]
				if s == nil {
					s = &supervised{backoff: restartBackoff()}
					seen[p.Name] = s
				}
				if p.Held || p.Alive() {
					s.exited = time.Time{}
					continue
				}
				if s.exited.IsZero() {
					s.exited = now
				}
				if s.backoff.Wait(s.exited, now) > 0 {
					continue
				}
				e.restart(p)
				s.backoff.Restart(s.exited, now)
				s.exited = time.Time{}
			}
			return nil
		})
		if err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// restart starts an exited process again and records why it went: the last line it wrote.
func (e *Environment) restart(p *Process) {
	p.LastExit = lastLine(tail(p.Log, 1))
	p.Restarts++
	if log, err := os.OpenFile(p.Log, os.O_WRONLY|os.O_APPEND, 0o600); err == nil {
		fmt.Fprintf(log, "\n==> %s exited; restart %d by the environment's supervisor\n", time.Now().Format(time.RFC3339), p.Restarts)
		_ = log.Close()
	}
	if err := p.start(e.tied); err != nil {
		// Tried again at the next back-off; the log says why.
		if log, openErr := os.OpenFile(p.Log, os.O_WRONLY|os.O_APPEND, 0o600); openErr == nil {
			fmt.Fprintf(log, "==> %s could not be started: %v\n", time.Now().Format(time.RFC3339), err)
			_ = log.Close()
		}
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// superviseInBackground starts the supervisor for an environment whose processes outlive the program that started
// them: command (the local-karmada binary's `supervise`) as an untied process, recorded so that Down stops it first.
func (e *Environment) superviseInBackground(command []string) error {
	p := &Process{Name: "supervisor", Args: command, Log: filepath.Join(e.Dir, "logs", "supervisor.log")}
	if err := p.start(false); err != nil {
		return err
	}
	e.mu.Lock()
	e.Supervisor = p
	e.mu.Unlock()
	return e.save()
}

// superviseHere runs the supervisor as a goroutine of this program, until Down.
func (e *Environment) superviseHere() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := e.Supervise(ctx); err != nil && !errors.Is(err, context.Canceled) {
			e.logf("the supervisor stopped: %v", err)
		}
	}()
	e.stopSupervising = func() {
		cancel()
		<-done
	}
}

// stopSupervisor stops whichever supervisor runs, so that nothing restarts what Down stops.
func (e *Environment) stopSupervisor() error {
	if e.stopSupervising != nil {
		e.stopSupervising()
		e.stopSupervising = nil
	}
	if e.Supervisor != nil {
		return e.Supervisor.stop(10 * time.Second)
	}
	return nil
}

// SupervisorCommand is the command line of `local-karmada supervise` for the environment in dir, run by the binary
// running now: what `make up` leaves running in the background.
func SupervisorCommand(dir string) ([]string, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return []string{self, "supervise", "--dir", dir}, nil
}
