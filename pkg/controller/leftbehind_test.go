package controller

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/karmada-quota/karmada-quota/pkg/quota"
)

func TestLeftBehind(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC))
	l := newLeftBehind(clk.Now)
	if l.any() {
		t.Error("a new tracker knows a Work left behind")
	}
	work := func(uid string, generation int64) *quota.ObservedWork {
		return &quota.ObservedWork{UID: types.UID(uid), Generation: generation}
	}
	l.note([]quota.WorkVersion{{UID: "a", Generation: 2}, {UID: "b", Generation: 5}, {UID: "c", Generation: 1}})

	if !l.has(work("a", 2)) {
		t.Error("a, unchanged a moment after it was seen left behind: want it known")
	}
	if l.has(work("x", 1)) {
		t.Error("x was never left behind")
	}
	if l.has(work("b", 6)) {
		t.Error("b at a new generation (Karmada rewrote it): want it charged as it asks")
	}
	if l.has(work("b", 5)) {
		t.Error("b was forgotten once seen rewritten")
	}
	l.forget("c")
	if l.has(work("c", 1)) {
		t.Error("c is gone")
	}

	// Seen left behind again, a Work stays known for the bound from then: its binding may come back any time.
	clk.SetTime(clk.Now().Add(leftBehindFor - time.Second))
	l.note([]quota.WorkVersion{{UID: "a", Generation: 2}})
	clk.SetTime(clk.Now().Add(leftBehindFor - time.Second))
	if !l.has(work("a", 2)) {
		t.Error("a, seen left behind within the bound: want it known")
	}
	clk.SetTime(clk.Now().Add(time.Second))
	if l.has(work("a", 2)) {
		t.Error("a, not seen left behind for the whole bound: want it charged as it asks (Karmada did not rewrite it)")
	}

	// What nobody asks about is pruned once past the bound.
	l.note([]quota.WorkVersion{{UID: "d", Generation: 1}})
	clk.SetTime(clk.Now().Add(leftBehindFor))
	l.note(nil)
	if len(l.works) != 0 || l.any() {
		t.Errorf("remembered %v past the bound, want nothing", l.works)
	}
}
