package kubelet

import "time"

// The kubelet's crash-loop back-off: the first restart of a container is immediate, the next ones wait 10 s,
// doubling up to 5 minutes; a container that ran for 10 minutes since its last restart starts over. The same
// shape, with its own entry, delays retrying an image that could not be "pulled" (found in the image folders).
const (
	backoffInitial    = 10 * time.Second
	backoffMax        = 5 * time.Minute
	backoffResetAfter = 2 * backoffMax
)

// CrashBackoff is the back-off of one restarted program (flowcontrol.Backoff as the kubelet's doBackOff uses it):
// the first restart is immediate, the next ones wait Initial, doubling up to Max; one that ran for ResetAfter since
// its last restart starts over. A container's is ContainerBackoff; the local environment's supervisor restarts its
// processes by the same rule, with limits of its own.
type CrashBackoff struct {
	Initial, Max, ResetAfter time.Duration

	// delay is what the next restart waits, once one restart has happened.
	delay       time.Duration
	lastRestart time.Time
	restarted   bool
}

// ContainerBackoff is the kubelet's back-off for a container.
func ContainerBackoff() CrashBackoff {
	return CrashBackoff{Initial: backoffInitial, Max: backoffMax, ResetAfter: backoffResetAfter}
}

// Wait is how long a restart after an exit at finished must still wait at now.
func (b *CrashBackoff) Wait(finished, now time.Time) time.Duration {
	if !b.restarted || finished.Sub(b.lastRestart) > b.ResetAfter {
		return 0
	}
	return max(0, b.delay-now.Sub(finished))
}

// Restart records a restart at now of a program that exited at finished, and doubles the next wait unless the
// program had run long enough to start over.
func (b *CrashBackoff) Restart(finished, now time.Time) {
	switch {
	case !b.restarted || finished.Sub(b.lastRestart) > b.ResetAfter:
		b.delay = b.Initial
	default:
		b.delay = min(2*b.delay, b.Max)
	}
	b.restarted, b.lastRestart = true, now
}
