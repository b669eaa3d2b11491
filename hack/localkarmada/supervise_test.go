package localkarmada

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// sleepers is a tied environment of processes that run until killed, supervised by this program as a test's
// environment is, with its state file written.
func sleepers(t *testing.T, names ...string) *Environment {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o700); err != nil {
		t.Fatal(err)
	}
	e := &Environment{Dir: dir, Health: map[string]string{}, tied: true}
	for _, name := range names {
		p := &Process{Name: name, Args: []string{self, "-test.run=^$"}, Env: []string{sleeperEnv + "=" + name},
			Log: filepath.Join(dir, "logs", name+".log")}
		if err := p.start(true); err != nil {
			t.Fatal(err)
		}
		e.record(p, "")
		waitLogged(t, p, name+" is running")
	}
	if err := e.save(); err != nil {
		t.Fatal(err)
	}
	e.superviseHere()
	t.Cleanup(func() {
		if err := e.Down(); err != nil {
			t.Error(err)
		}
	})
	return e
}

// pidOf reads a process's current PID under the environment's lock, as the supervisor may change it.
func pidOf(t *testing.T, e *Environment, name string) (pid int, alive bool) {
	t.Helper()
	err := e.update(func() error {
		p, err := e.Process(name)
		if err == nil {
			pid, alive = p.PID, p.Alive()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return pid, alive
}

func eventually(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A process that exits by itself (karmada-scheduler losing its lease while the karmada-apiserver is away) is
// started again, as its kubelet would, and the restart is recorded with the last line it wrote.
func TestSupervisorRestartsWhatExits(t *testing.T) {
	e := sleepers(t, "scheduler")
	before, _ := pidOf(t, e, "scheduler")
	if err := syscall.Kill(-before, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the scheduler restarted", 10*time.Second, func() bool {
		pid, alive := pidOf(t, e, "scheduler")
		return alive && pid != before
	})
	restarts, lastExit, err := e.Restarts("scheduler")
	if err != nil {
		t.Fatal(err)
	}
	if restarts != 1 || lastExit != "scheduler is running" {
		t.Fatalf("restarts %d, last exit %q; want 1 and the last line it wrote", restarts, lastExit)
	}
}

// A process stopped on purpose stays down until it is started again, whichever program stopped it: a test's outage
// lasts as long as the test wants.
func TestSupervisorLeavesHeldProcessesDown(t *testing.T) {
	e := sleepers(t, "apiserver", "etcd")
	if err := e.Kill("apiserver"); err != nil {
		t.Fatal(err)
	}
	// Another program, such as an e2e run against `make up`'s environment, acting on the same environment.
	other, err := Load(e.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Stop("etcd", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * supervisePeriod)
	for _, name := range []string{"apiserver", "etcd"} {
		if _, alive := pidOf(t, e, name); alive {
			t.Fatalf("%s was started again while held", name)
		}
	}
	ctx := context.Background()
	if err := other.Start(ctx, "etcd"); err != nil {
		t.Fatal(err)
	}
	if err := e.Start(ctx, "apiserver"); err != nil {
		t.Fatal(err)
	}
	// Started by the other program: the supervisor knows it and must not start a second one.
	time.Sleep(4 * supervisePeriod)
	for _, name := range []string{"apiserver", "etcd"} {
		if _, alive := pidOf(t, e, name); !alive {
			t.Fatalf("%s is not running after Start", name)
		}
		if restarts, _, err := e.Restarts(name); err != nil || restarts != 0 {
			t.Fatalf("%s: %d restarts by the supervisor (%v), want 0", name, restarts, err)
		}
	}
}

// Down stops the supervisor first: nothing it stops is started again.
func TestDownStopsTheSupervisorFirst(t *testing.T) {
	e := sleepers(t, "a", "b")
	pids := map[string]int{}
	for _, name := range []string{"a", "b"} {
		pids[name], _ = pidOf(t, e, name)
	}
	if err := e.Down(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * supervisePeriod)
	for name, pid := range pids {
		if syscall.Kill(pid, 0) == nil {
			t.Fatalf("%s (pid %d) still runs after Down", name, pid)
		}
		p, err := e.Process(name)
		if err != nil {
			t.Fatal(err)
		}
		if p.Alive() {
			t.Fatalf("%s was started again after Down (pid %d)", name, p.PID)
		}
	}
}

// Restarts back off as a kubelet's do: at once, then 1 s doubling to 30 s, and at once again after a minute of
// running.
func TestRestartBackoff(t *testing.T) {
	b := restartBackoff()
	now := time.Unix(1_700_000_000, 0)
	var waits []time.Duration
	for range 8 {
		exited := now
		for b.Wait(exited, now) > 0 {
			now = now.Add(100 * time.Millisecond)
		}
		waits = append(waits, now.Sub(exited))
		b.Restart(exited, now)
		now = now.Add(2 * time.Second) // runs 2 s, then exits again
	}
	want := []time.Duration{0, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second}
	for i := range want {
		if waits[i] != want[i] {
			t.Fatalf("waits %v, want %v", waits, want)
		}
	}
	exited := now.Add(time.Minute + time.Second)
	if b.Wait(exited, exited) != 0 {
		t.Fatal("a process that ran for a minute is not restarted at once")
	}
}
