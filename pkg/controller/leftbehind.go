package controller

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/karmada-quota/karmada-quota/pkg/quota"
)

// A binding that leaves a member cluster gives back the room it used there at once, though its Work there runs
// until Karmada deletes it (quota.Targets: charging it would charge a move twice). When the binding comes back to
// that cluster before Karmada deleted or rewrote the Work, the webhook admits the return for what the binding
// places there, and Karmada then rewrites the Work to that. Charging what the old Work still asks meanwhile would
// count more than any admission allowed, for as long as Karmada lags: the fault suite saw a quota at hard read
// 500m over it when a binding scaled down off a member and up onto it again within that lag. So the controller
// remembers each Work a recount found left behind, at its generation, and while that Work is unchanged and was
// seen left behind a moment ago, a recount charges the binding back on its cluster what it places
// (quota.Observation.LeftBehind). The moment is bounded, so that a Work Karmada does not rewrite is charged as it
// asks again soon after: a return placing what the old Work asks needs no rewrite, and an OverridePolicy raising
// that member's requests makes the Work ask more than the placement, which the member runs.
const leftBehindFor = 10 * time.Second

// leftBehind are the Works recounts found on clusters their binding had left, by UID.
type leftBehind struct {
	mu     sync.Mutex
	now    func() time.Time
	works  map[types.UID]leftWork
	pruned time.Time
}

// leftWork is a Work left behind at generation, last seen so at seen.
type leftWork struct {
	generation int64
	seen       time.Time
}

func newLeftBehind(now func() time.Time) *leftBehind {
	return &leftBehind{now: now, works: map[types.UID]leftWork{}}
}

// note records the Works a recount found left behind (quota.Tally.LeftBehind), as seen now.
func (l *leftBehind) note(works []quota.WorkVersion) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	for _, w := range works {
		l.works[w.UID] = leftWork{generation: w.Generation, seen: now}
	}
	// Pruned on the way in, at most once per bound: a Work no recount sees left behind any more (rewritten, or its
	// binding gone before the view told) answers nothing after the bound anyway, and one deleted is forgotten.
	if now.Sub(l.pruned) < leftBehindFor {
		return
	}
	l.pruned = now
	for uid, w := range l.works {
		if now.Sub(w.seen) >= leftBehindFor {
			delete(l.works, uid)
		}
	}
}

// any reports whether some Work is known left behind.
func (l *leftBehind) any() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.works) > 0
}

// has reports whether w, back on a cluster its binding targets again, is a Work left behind there, unchanged
// since, and seen so less than leftBehindFor ago (quota.Observation.LeftBehind).
func (l *leftBehind) has(w *quota.ObservedWork) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	left, ok := l.works[w.UID]
	if !ok {
		return false
	}
	if left.generation != w.Generation || l.now().Sub(left.seen) >= leftBehindFor {
		// Rewritten by Karmada, or past the bound: what it asks is charged from now on.
		delete(l.works, w.UID)
		return false
	}
	return true
}

// forget drops a Work that is gone.
func (l *leftBehind) forget(uid types.UID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.works, uid)
}
