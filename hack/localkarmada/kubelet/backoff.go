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

// crashBackoff is the back-off of one container (flowcontrol.Backoff as the kubelet's doBackOff uses it).
type crashBackoff struct {
	// delay is what the next restart waits, once one restart has happened.
	delay       time.Duration
	lastRestart time.Time
	restarted   bool
}

// wait is how long a restart after an exit at finished must still wait at now.
func (b *crashBackoff) wait(finished, now time.Time) time.Duration {
	if !b.restarted || finished.Sub(b.lastRestart) > backoffResetAfter {
		return 0
	}
	return max(0, b.delay-now.Sub(finished))
}

// restart records a restart at now of a container that exited at finished, and doubles the next wait unless
// the container had run long enough to start over.
func (b *crashBackoff) restart(finished, now time.Time) {
	switch {
	case !b.restarted || finished.Sub(b.lastRestart) > backoffResetAfter:
		b.delay = backoffInitial
	default:
		b.delay = min(2*b.delay, backoffMax)
	}
	b.restarted, b.lastRestart = true, now
}
