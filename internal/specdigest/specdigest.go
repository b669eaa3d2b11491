// Package specdigest runs a Ginkgo suite and, when it fails, ends its output with why each spec failed. CI shows
// only the end of a run's output, and Ginkgo's summary there gives where each spec failed, never why: its message is
// printed with the spec, hundreds of lines above.
package specdigest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2"
)

// messageLength cuts each failure's message: a failed Gomega match can print whole objects. checkLength cuts its
// first line, repeated last.
const (
	messageLength = 2000
	checkLength   = 300
)

// RunSpecs runs the suite as ginkgo.RunSpecs does, then prints each failed spec's full text, location and message.
// It must be called from the suite's Test function, where ginkgo.RunSpecs would be.
func RunSpecs(t *testing.T, description string) bool {
	var digest []string
	ginkgo.ReportAfterSuite("failure digest", func(report ginkgo.Report) {
		for _, spec := range report.SpecReports {
			if spec.Failed() {
				digest = append(digest, entry(spec))
			}
		}
	})
	passed := ginkgo.RunSpecs(t, description)
	for _, e := range digest {
		fmt.Println(e)
	}
	return passed
}

// entry is one failed spec's digest: its message (cut), then which spec failed, where, and the message's first line
// (what was checked) again. CI keeps only the last lines of the output, and a message of many lines (the fault
// suite lists every binding and Work) pushed the spec's name out of them.
func entry(spec ginkgo.SpecReport) string {
	message := spec.Failure.Message
	if len(message) > messageLength {
		// Its head and its tail: Gomega puts an assertion's description (the fault suite's list of bindings and
		// Works) before what failed.
		message = message[:messageLength/2] + " [...] " + message[len(message)-messageLength/2:]
	}
	check, _, _ := strings.Cut(spec.Failure.Message, "\n")
	if len(check) > checkLength {
		check = check[:checkLength] + " [...]"
	}
	return fmt.Sprintf("  %s\nFAILED %s\n  at %s\n  %s", message, spec.FullText(), spec.Failure.Location, check)
}
