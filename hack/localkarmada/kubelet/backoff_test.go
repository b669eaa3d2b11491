package kubelet

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestCrashBackoff replays a container that exits a moment after each start and records how long each restart
// waited: immediately, then 10 s doubling to 5 minutes; after a run of more than 10 minutes it starts over.
func TestCrashBackoff(t *testing.T) {
	cases := []struct {
		name string
		// runs is how long each run lasted before exiting.
		runs []time.Duration
		want []time.Duration
	}{
		{
			name: "crash loop",
			runs: repeat(time.Second, 9),
			want: []time.Duration{0, 10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second,
				160 * time.Second, 300 * time.Second, 300 * time.Second, 300 * time.Second},
		},
		{
			name: "a long run starts over",
			runs: []time.Duration{time.Second, time.Second, time.Second, 11 * time.Minute, time.Second, time.Second},
			want: []time.Duration{0, 10 * time.Second, 20 * time.Second, 0, 10 * time.Second, 20 * time.Second},
		},
		{
			name: "a run just under ten minutes does not",
			runs: []time.Duration{time.Second, time.Second, 9 * time.Minute, time.Second},
			want: []time.Duration{0, 10 * time.Second, 20 * time.Second, 40 * time.Second},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := ContainerBackoff()
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			var got []time.Duration
			for _, run := range tc.runs {
				now = now.Add(run) // the container runs, then exits
				finished := now
				wait := b.Wait(finished, now)
				got = append(got, wait)
				// Half-way through the wait it is still waiting, the full wait later it is not.
				if wait > 0 && b.Wait(finished, now.Add(wait/2)) != wait-wait/2 {
					t.Fatalf("half-way through a %s wait: %s left", wait, b.Wait(finished, now.Add(wait/2)))
				}
				now = now.Add(wait)
				if left := b.Wait(finished, now); left != 0 {
					t.Fatalf("after waiting %s, %s left", wait, left)
				}
				b.Restart(finished, now)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("waits before each restart (-want +got):\n%s", diff)
			}
		})
	}
}

func repeat(d time.Duration, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = d
	}
	return out
}
