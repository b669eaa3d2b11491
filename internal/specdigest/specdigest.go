// Package specdigest runs a Ginkgo suite and, when it fails, ends its output with why each spec failed. CI shows
// only the end of a run's output, and Ginkgo's summary there gives where each spec failed, never why: its message is
// printed with the spec, hundreds of lines above.
package specdigest

import (
	"fmt"
	"testing"

	"github.com/onsi/ginkgo/v2"
)

// messageLength cuts each failure's message: a failed Gomega match can print whole objects.
const messageLength = 2000

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

func entry(spec ginkgo.SpecReport) string {
	message := spec.Failure.Message
	if len(message) > messageLength {
		message = message[:messageLength] + " [...]"
	}
	return fmt.Sprintf("FAILED %s\n  at %s\n  %s", spec.FullText(), spec.Failure.Location, message)
}
