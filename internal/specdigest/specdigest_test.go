package specdigest

import (
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2/types"
)

// TestEntryEndsWithTheSpec: CI keeps only the end of the output, so a failure's digest ends with which spec failed,
// where, and what was checked (the message's first line), however long the message.
func TestEntryEndsWithTheSpec(t *testing.T) {
	lines := []string{"used + reserved of requests.cpu exceeded hard; first seen at 17:29:39.958"}
	for i := 0; i < 100; i++ {
		lines = append(lines, "  binding load-0007-deployment generation 6: [{member1 1} {member2 3}]")
	}
	lines = append(lines, "Expected <int64>: 10500 to be <= <int64>: 10000")
	spec := types.SpecReport{
		ContainerHierarchyTexts: []string{"Faults under load"},
		LeafNodeText:            "karmada-apiserver restarted",
		State:                   types.SpecStateFailed,
		Failure: types.Failure{
			Message:  strings.Join(lines, "\n"),
			Location: types.CodeLocation{FileName: "faults_test.go", LineNumber: 104},
		},
	}
	got := strings.Split(entry(spec), "\n")
	want := []string{
		"FAILED Faults under load karmada-apiserver restarted",
		"  at faults_test.go:104",
		"  used + reserved of requests.cpu exceeded hard; first seen at 17:29:39.958",
	}
	if tail := got[len(got)-len(want):]; strings.Join(tail, "\n") != strings.Join(want, "\n") {
		t.Errorf("the digest ends with\n%s\nwant\n%s", strings.Join(tail, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(entry(spec), lines[1]) {
		t.Errorf("the digest lost the message's body")
	}
	if !strings.Contains(entry(spec), lines[len(lines)-1]+"\nFAILED") {
		t.Errorf("the digest lost the message's end (where Gomega says what failed after a description)")
	}
	if n := len(entry(spec)); n > messageLength+checkLength+200 {
		t.Errorf("the digest is %d bytes: the message is not cut", n)
	}
}
