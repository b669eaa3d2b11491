package controller

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// firstPass tells when the controller, leading, has recounted every quota its cache held once synced: the end of
// a start's burst of work, after which the process holds what it keeps and garbage. Options.FirstPassDone runs
// then, once.
type firstPass struct {
	mu sync.Mutex
	// seen are the quotas recounted before the cache's quotas were known (nil once they are); pending those still
	// to recount after.
	seen, pending map[types.NamespacedName]struct{}
	done          bool
	onDone        func()
}

func newFirstPass(onDone func()) *firstPass {
	return &firstPass{seen: map[types.NamespacedName]struct{}{}, onDone: onDone}
}

// start takes the quotas to recount: those not already recounted.
func (f *firstPass) start(keys []types.NamespacedName) {
	f.mu.Lock()
	if f.seen == nil {
		f.mu.Unlock()
		return
	}
	f.pending = make(map[types.NamespacedName]struct{}, len(keys))
	for _, key := range keys {
		if _, ok := f.seen[key]; !ok {
			f.pending[key] = struct{}{}
		}
	}
	f.seen = nil
	f.finishLocked()
}

// recounted records that key was recounted, or found deleted. A recount that failed does not count: its retry
// will, and a quota that never recounts keeps the first pass from ending (karmada_quota_first_recount_seconds then
// stays absent, which says so).
func (f *firstPass) recounted(key types.NamespacedName) {
	if f == nil {
		return
	}
	f.mu.Lock()
	switch {
	case f.done:
		f.mu.Unlock()
		return
	case f.seen != nil:
		f.seen[key] = struct{}{}
		f.mu.Unlock()
		return
	}
	delete(f.pending, key)
	f.finishLocked()
}

// finishLocked runs onDone, outside the lock, once nothing is pending.
func (f *firstPass) finishLocked() {
	if len(f.pending) > 0 {
		f.mu.Unlock()
		return
	}
	f.done, f.pending = true, nil
	f.mu.Unlock()
	if f.onDone != nil {
		f.onDone()
	}
}

// Start lists the quotas of the synced cache, both kinds, as the keys the reconciler is asked for. It runs as a
// leader-elected runnable: only the leader recounts.
func (f *firstPass) Start(ctx context.Context, c client.Reader, synced func(context.Context) bool) error {
	if !synced(ctx) {
		return nil
	}
	// Only their keys are read: the cache's own objects, not copies of 10,000 quotas.
	quotas, err := listQuotas(ctx, c, client.UnsafeDisableDeepCopy)
	if err != nil {
		return err
	}
	keys := make([]types.NamespacedName, 0, len(quotas))
	for _, q := range quotas {
		keys = append(keys, client.ObjectKeyFromObject(q))
	}
	f.start(keys)
	return nil
}
