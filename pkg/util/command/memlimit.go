package command

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"

	"k8s.io/klog/v2"
)

// memoryLimitShare is the part of the container's memory limit the Go runtime is told it may use
// (runtime/debug.SetMemoryLimit): the rest is for what the runtime does not count (the binary's text, memory the
// kernel charges to the cgroup) and for the collector to catch up before the kernel kills the process.
const memoryLimitShare = 0.9

// cgroupMemoryFiles are where a container's memory limit is, under the cgroup file system: cgroup v2, then v1.
var cgroupMemoryFiles = []string{"memory.max", "memory/memory.limit_in_bytes"}

// ErrNoMemoryLimit says the process runs without a memory limit of its own.
var ErrNoMemoryLimit = errors.New("no cgroup memory limit")

// MemoryLimit is the Go runtime's soft memory limit for a process whose cgroup file system (/sys/fs/cgroup) is
// cgroups: memoryLimitShare of the container's limit. Without one (no file, "max", or v1's page-rounded
// "unlimited") it returns ErrNoMemoryLimit. A collector that knows the limit works harder as the heap nears it
// instead of letting it double past it: the controller's heap grows with every binding of the control plane
// (docs/performance.md, at scale).
func MemoryLimit(cgroups fs.FS) (int64, error) {
	for _, name := range cgroupMemoryFiles {
		raw, err := fs.ReadFile(cgroups, name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, err
		}
		value := strings.TrimSpace(string(raw))
		if value == "max" {
			return 0, ErrNoMemoryLimit
		}
		limit, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %q is not a byte count", name, value)
		}
		// cgroup v1 reports no limit as the largest page-aligned int64.
		if limit <= 0 || limit >= math.MaxInt64&^0xfff {
			return 0, ErrNoMemoryLimit
		}
		return int64(float64(limit) * memoryLimitShare), nil
	}
	return 0, ErrNoMemoryLimit
}

// cgroupFS is the process's cgroup file system.
func cgroupFS() fs.FS { return os.DirFS("/sys/fs/cgroup") }

// startGCPercent is the collector's percentage (GOGC) while a process starts (CollectOftenUntilStarted): the heap
// may grow by a quarter of what is live before the next collection, where Go's default lets it double.
const startGCPercent = 25

// starting is the collector's setting before CollectOftenUntilStarted lowered it; lowered is false when it did not.
var starting struct {
	sync.Mutex
	lowered   bool
	gcPercent int
}

// CollectOftenUntilStarted has the collector run at startGCPercent until Started. For a process whose start
// decodes far more than it keeps: the controller decodes every binding in full and its cache keeps a record of
// each, in between the garbage of the others; its first recount reads every binding back and keeps per-quota state
// in between that garbage. Go does not move what it keeps, so it stays scattered over every span the heap grew to,
// and at Go's default the heap doubles past what is live between collections. At 100,000 bindings the
// controller's RSS after its first recount read twice its live heap (318 MiB for 156); collecting four times as
// often until then, 262 MiB, for a warm recount 1.8× as long (docs/performance.md, at scale). A GOGC in the
// environment is the operator's choice, and is kept.
func CollectOftenUntilStarted() {
	if os.Getenv("GOGC") != "" {
		return
	}
	starting.Lock()
	defer starting.Unlock()
	if starting.lowered {
		return
	}
	starting.gcPercent = debug.SetGCPercent(startGCPercent)
	starting.lowered = true
	klog.InfoS("Collecting garbage often until started", "gcPercent", startGCPercent, "gcPercentAfter", starting.gcPercent)
}

// Started ends the start: the collector's percentage set back to what CollectOftenUntilStarted found, then free
// memory returned (returnFreeMemory). Calls after the first only return free memory.
func Started(why string) {
	starting.Lock()
	if starting.lowered {
		debug.SetGCPercent(starting.gcPercent)
		starting.lowered = false
	}
	starting.Unlock()
	returnFreeMemory(why)
}

// returnFreeMemory collects garbage and returns what is free to the system at once (runtime/debug.FreeOSMemory),
// logging what the process held before and after. For the end of a start: the controller decodes every binding
// in full before its cache trims it, and Go's collector would keep that memory resident, returning it over minutes,
// while the heap doubles past what is live anyway (GOGC): at 100,000 bindings RSS read about three times the live
// heap right after the recount (docs/performance.md, at scale).
func returnFreeMemory(why string) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	// Unreadable (no /proc), it logs 0.
	rssBefore, _ := ResidentBytes(os.Getpid())
	debug.FreeOSMemory()
	runtime.ReadMemStats(&after)
	residentAfter, _ := ResidentBytes(os.Getpid())
	klog.InfoS("Returned free memory to the system", "why", why,
		"heapLiveBytes", after.HeapAlloc, "heapInUseBytes", after.HeapInuse,
		"heapHeldBytesBefore", before.HeapSys-before.HeapReleased, "heapHeldBytesAfter", after.HeapSys-after.HeapReleased,
		"runtimeOtherBytes", after.Sys-after.HeapSys, "residentBytesBefore", rssBefore, "residentBytesAfter", residentAfter)
}

// ResidentBytes is a process's resident set size, from /proc/<pid>/status (VmRSS).
func ResidentBytes(pid int) (int64, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		rest, ok := strings.CutPrefix(line, "VmRSS:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("VmRSS %q is not a count of kB", rest)
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("VmRSS %q: %w", rest, err)
		}
		return kb << 10, nil
	}
	return 0, errors.New("no VmRSS in /proc status")
}
