package demo

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// lineWidth is where narration wraps: the width of karmadactl's quota table, so narration and command output
// line up in a terminal.
const lineWidth = 96

// narrator prints the walkthrough. Informer callbacks print the live timeline of step 4 from their own goroutines,
// so every write goes through one lock and lines never interleave.
type narrator struct {
	mu        sync.Mutex
	out       io.Writer
	start     time.Time
	stepStart time.Time
	// tail is the end of what was printed so far, and gap asks for a blank line before whatever comes next:
	// together they put exactly one blank line between paragraphs, however the steps string them together.
	tail string
	gap  bool
}

func newNarrator(out io.Writer) *narrator {
	now := time.Now()
	return &narrator{out: out, start: now, stepStart: now}
}

// write prints s, after a blank line if one was asked for (gapBefore, or gapAfter of the previous write) and the
// output does not already end with one.
func (n *narrator) write(s string, gapBefore, gapAfter bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if (gapBefore || n.gap) && n.tail != "" && !strings.HasSuffix(n.tail, "\n\n") {
		if !strings.HasSuffix(n.tail, "\n") {
			s = "\n" + s
		}
		s = "\n" + s
	}
	if s == "" {
		return
	}
	n.gap = gapAfter
	fmt.Fprint(n.out, s)
	n.tail = (n.tail + s)[max(0, len(n.tail)+len(s)-2):]
}

// Write lets a command's output stream straight into the narration.
func (n *narrator) Write(p []byte) (int, error) {
	n.write(string(p), false, false)
	return len(p), nil
}

// step starts a numbered step with its title and the elapsed time of the whole demo.
func (n *narrator) step(number, of int, title string) {
	n.mu.Lock()
	n.stepStart = time.Now()
	n.mu.Unlock()
	header := fmt.Sprintf("Step %d of %d: %s", number, of, title)
	stamp := fmt.Sprintf("[%s]", clock(time.Since(n.start)))
	rule := strings.Repeat("-", lineWidth)
	n.write(fmt.Sprintf("%s\n%s%s%s\n%s\n", rule, header, strings.Repeat(" ", max(1, lineWidth-len(header)-len(stamp))), stamp, rule), true, true)
}

// say is narration: what the user does and what to look for, as wrapped plain sentences in a paragraph of
// their own.
func (n *narrator) say(text string) {
	n.write(wrap(text, "", lineWidth)+"\n", true, true)
}

// info reports something that happened, indented under the narration.
func (n *narrator) info(format string, args ...any) {
	n.write(wrap(fmt.Sprintf(format, args...), "  ", lineWidth)+"\n", false, false)
}

// heading is an indented line that opens a new paragraph.
func (n *narrator) heading(format string, args ...any) {
	n.write(wrap(fmt.Sprintf(format, args...), "  ", lineWidth)+"\n", true, false)
}

// block prints preformatted lines (a YAML document, a table, a command transcript) as they are, set apart by
// blank lines.
func (n *narrator) block(text string) {
	n.write(strings.Trim(text, "\n")+"\n", true, true)
}

// lines prints preformatted lines as they are, right under what came before.
func (n *narrator) lines(text string) {
	n.write(strings.Trim(text, "\n")+"\n", false, false)
}

// paragraphEnd asks for a blank line before whatever comes next.
func (n *narrator) paragraphEnd() {
	n.mu.Lock()
	n.gap = true
	n.mu.Unlock()
}

// stepDone closes a step with how long it took.
func (n *narrator) stepDone() {
	n.write(fmt.Sprintf("  (step took %s)\n", time.Since(n.stepStart).Round(100*time.Millisecond)), true, true)
}

// clock renders a duration as m:ss.s, for the demo's running clock.
func clock(d time.Duration) string {
	d = d.Round(100 * time.Millisecond)
	return fmt.Sprintf("%d:%04.1f", int(d.Minutes()), d.Seconds()-60*float64(int(d.Minutes())))
}

// wrap breaks text into lines of at most width characters, each starting with indent. Words longer than a line
// (URLs, long names) stay whole.
func wrap(text, indent string, width int) string {
	var lines []string
	for _, paragraph := range strings.Split(text, "\n") {
		if strings.TrimSpace(paragraph) == "" {
			lines = append(lines, "")
			continue
		}
		line := indent
		for _, word := range strings.Fields(paragraph) {
			if len(line) > len(indent) && len(line)+1+len(word) > width {
				lines = append(lines, line)
				line = indent
			}
			if len(line) > len(indent) {
				line += " "
			}
			line += word
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

// waitTimeout bounds every wait of the demo. The slowest wait that goes well is an earlier run's namespace being
// deleted, about 6s in Karmada and 6s more in the members (the namespace controller waits 5s before its first
// pass); the rest take a second or two.
const waitTimeout = 90 * time.Second

// checkTimeout bounds one look at the system inside a wait: a few reads from the apiservers.
const checkTimeout = 10 * time.Second

// waitFor polls check until it reports done, for at most waitTimeout, and says what it waits for and how long it
// took. check describes the state it observed; on a timeout that description ends the error, so a failed demo
// tells what it saw instead of only that it gave up. An error from check (an apiserver blip) does not end the
// wait: only the deadline does, and the error is reported with the last state seen.
func (n *narrator) waitFor(ctx context.Context, what string, check func(context.Context) (done bool, state string, err error)) error {
	n.info("waiting for %s ...", what)
	started := time.Now()
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	ticker := time.NewTicker(200 * time.Millisecond)
	defer ticker.Stop()
	// last is the last state a check saw; lastErr is set while checks fail, and says why.
	last, lastErr := "nothing yet", error(nil)
	for {
		// Each check gets its own bound rather than the wait's deadline, so the last one before the deadline
		// reports the system, not a read cut short.
		checkCtx, cancel := context.WithTimeout(ctx, checkTimeout)
		done, state, err := check(checkCtx)
		cancel()
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted while waiting for %s; last observed: %s", what, last)
		}
		if err == nil && state != "" {
			last = state
		}
		lastErr = err
		if done && err == nil {
			if state != "" {
				n.info("  ok after %s: %s", time.Since(started).Round(100*time.Millisecond), state)
			} else {
				n.info("  ok after %s", time.Since(started).Round(100*time.Millisecond))
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("interrupted while waiting for %s; last observed: %s", what, last)
		case <-deadline.C:
			if lastErr != nil {
				last += fmt.Sprintf(" (the reads after that failed: %v)", lastErr)
			}
			return fmt.Errorf("timed out after %s waiting for %s; last observed: %s", waitTimeout, what, last)
		case <-ticker.C:
		}
	}
}
