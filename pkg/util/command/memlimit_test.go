package command

import (
	"errors"
	"os"
	"runtime"
	"runtime/debug"
	"testing"
	"testing/fstest"
)

func TestMemoryLimit(t *testing.T) {
	cases := map[string]struct {
		files   fstest.MapFS
		want    int64
		wantErr error
		anyErr  bool
	}{
		"cgroup v2, 1Gi": {
			files: fstest.MapFS{"memory.max": {Data: []byte("1073741824\n")}},
			want:  966367641,
		},
		"cgroup v2, no limit": {
			files:   fstest.MapFS{"memory.max": {Data: []byte("max\n")}},
			wantErr: ErrNoMemoryLimit,
		},
		"cgroup v1, 512Mi": {
			files: fstest.MapFS{"memory/memory.limit_in_bytes": {Data: []byte("536870912\n")}},
			want:  483183820,
		},
		"cgroup v1, no limit": {
			files:   fstest.MapFS{"memory/memory.limit_in_bytes": {Data: []byte("9223372036854771712\n")}},
			wantErr: ErrNoMemoryLimit,
		},
		"no cgroup memory controller": {
			files:   fstest.MapFS{"cpu.max": {Data: []byte("max 100000\n")}},
			wantErr: ErrNoMemoryLimit,
		},
		"garbage": {
			files:  fstest.MapFS{"memory.max": {Data: []byte("lots\n")}},
			anyErr: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := MemoryLimit(tc.files)
			switch {
			case tc.anyErr:
				if err == nil || errors.Is(err, ErrNoMemoryLimit) {
					t.Errorf("MemoryLimit = %d, %v; want an error saying what could not be read", got, err)
				}
			case !errors.Is(err, tc.wantErr) || got != tc.want:
				t.Errorf("MemoryLimit = %d, %v; want %d, %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// TestResidentBytes: the resident set read from /proc is the process's, in bytes (not kB), and grows with memory
// the process touches.
func TestResidentBytes(t *testing.T) {
	before, err := ResidentBytes(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if before < 1<<20 {
		t.Fatalf("resident %d bytes: a Go test binary holds more than a MiB", before)
	}
	block := make([]byte, 64<<20)
	for i := range block {
		block[i] = 1
	}
	after, err := ResidentBytes(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if after < before+32<<20 {
		t.Errorf("resident %d bytes after touching 64 MiB, %d before", after, before)
	}
	runtime.KeepAlive(block)
	if _, err := ResidentBytes(-1); err == nil {
		t.Error("a process that does not exist has a resident size")
	}
}

// gcPercent is the collector's percentage now.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// TestCollectOftenUntilStarted: the start runs at startGCPercent, Started sets back what was there before, once;
// a GOGC in the environment is left as it is.
func TestCollectOftenUntilStarted(t *testing.T) {
	before := debug.SetGCPercent(150)
	t.Cleanup(func() { debug.SetGCPercent(before) })

	t.Setenv("GOGC", "")
	CollectOftenUntilStarted()
	if got := gcPercent(); got != startGCPercent {
		t.Fatalf("GC percent while starting = %d, want %d", got, startGCPercent)
	}
	CollectOftenUntilStarted()
	Started("the test's start")
	if got := gcPercent(); got != 150 {
		t.Fatalf("GC percent once started = %d, want the 150 set before (a second call must not take %d as the one to set back)", got, startGCPercent)
	}
	debug.SetGCPercent(80)
	Started("the test's start, again")
	if got := gcPercent(); got != 80 {
		t.Errorf("GC percent after a second Started = %d, want the 80 set since", got)
	}

	t.Setenv("GOGC", "150")
	debug.SetGCPercent(150)
	CollectOftenUntilStarted()
	if got := gcPercent(); got != 150 {
		t.Errorf("GC percent while starting with GOGC=150 in the environment = %d, want 150", got)
	}
	Started("the test's start, with GOGC set")
	if got := gcPercent(); got != 150 {
		t.Errorf("GC percent once started with GOGC=150 in the environment = %d, want 150", got)
	}
}
