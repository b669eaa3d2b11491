package loopback

import (
	"sync"
	"testing"
)

// TestFreePortsNeverTwice: callers at once, each releasing its ports before its server binds them, are never
// handed the same port.
func TestFreePortsNeverTwice(t *testing.T) {
	const callers, each = 50, 3
	got := make([][]int, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			ports, err := FreePorts(each)
			if err != nil {
				t.Error(err)
			}
			got[i] = ports
		})
	}
	wg.Wait()
	seen := map[int]bool{}
	for _, ports := range got {
		for _, p := range ports {
			if seen[p] {
				t.Errorf("port %d handed out twice", p)
			}
			seen[p] = true
		}
	}
	if len(seen) != callers*each {
		t.Errorf("%d distinct ports, want %d", len(seen), callers*each)
	}
}
