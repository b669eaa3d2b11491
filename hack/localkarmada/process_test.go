package localkarmada

import (
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// listenerEnv makes this test binary, run again as a child, a multi-threaded server holding a port and some memory:
// etcd and the apiservers in small.
const listenerEnv = "LOCALKARMADA_TEST_LISTEN"

// sleeperEnv makes this test binary, run again as a child, a process that writes a line and runs until killed.
const sleeperEnv = "LOCALKARMADA_TEST_SLEEP"

func TestMain(m *testing.M) {
	if addr := os.Getenv(listenerEnv); addr != "" {
		serveUntilKilled(addr)
	}
	if name := os.Getenv(sleeperEnv); name != "" {
		os.Stdout.WriteString(name + " is running\n")
		select {}
	}
	os.Exit(m.Run())
}

func serveUntilKilled(addr string) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		os.Exit(3)
	}
	defer l.Close()
	// Memory the kernel must unmap at exit, and threads that exit after the group leader: the moment in which the
	// leader is already a zombie and the port still held.
	ballast := make([]byte, 256<<20)
	for i := range ballast {
		if i%4096 == 0 {
			ballast[i] = 1
		}
	}
	for range runtime.NumCPU() + 4 {
		go func() {
			for {
				runtime.Gosched()
			}
		}()
	}
	os.Stdout.WriteString("listening\n")
	select {}
}

// A process that kill reports stopped has let go of its ports, so a restart on them cannot find them taken: the
// etcd restart of the fault suite failed when kill returned at the first sight of a zombie group leader.
func TestKilledProcessHasReleasedItsPort(t *testing.T) {
	addr, err := freeLoopbackPort()
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for round := range 5 {
		p := &Process{
			Name: "listener",
			Args: []string{self, "-test.run=^$"},
			Env:  []string{listenerEnv + "=" + addr},
			Log:  filepath.Join(t.TempDir(), "listener.log"),
		}
		if err := p.start(true); err != nil {
			t.Fatal(err)
		}
		waitLogged(t, p, "listening")
		victim := p
		if round%2 == 1 {
			// As `make down` finds it: from the state file, not our child, so known only by /proc.
			victim = &Process{Name: p.Name, PID: p.PID, StartTime: p.StartTime}
		}
		if err := victim.kill(); err != nil {
			t.Fatal(err)
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("round %d: the port of a process kill reported stopped is still held: %v", round, err)
		}
		l.Close()
	}
}

func freeLoopbackPort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func waitLogged(t *testing.T, p *Process, line string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		raw, _ := os.ReadFile(p.Log)
		if strings.Contains(string(raw), line) {
			return
		}
		if !p.Alive() {
			t.Fatalf("%s exited before it listened:\n%s", p.Name, raw)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s did not listen within 30s", p.Name)
}
