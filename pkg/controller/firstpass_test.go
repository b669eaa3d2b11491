package controller

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestFirstPass(t *testing.T) {
	a, b, c := types.NamespacedName{Namespace: "a", Name: "q"}, types.NamespacedName{Namespace: "b", Name: "q"}, types.NamespacedName{Name: "business"}
	cases := map[string]struct {
		before, after []types.NamespacedName
		keys          []types.NamespacedName
		wantDone      bool
	}{
		"done once every quota of the cache is recounted": {keys: []types.NamespacedName{a, b, c}, after: []types.NamespacedName{b, a, c}, wantDone: true},
		"not while one is left":                           {keys: []types.NamespacedName{a, b, c}, after: []types.NamespacedName{a, c, a}},
		"recounts before the quotas are known count": {
			before: []types.NamespacedName{a, b}, keys: []types.NamespacedName{a, b, c}, after: []types.NamespacedName{c}, wantDone: true,
		},
		"done at once when every quota was recounted before": {before: []types.NamespacedName{a, b}, keys: []types.NamespacedName{a, b}, wantDone: true},
		"done at once without quotas":                        {wantDone: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			runs := 0
			f := newFirstPass(func() { runs++ })
			for _, key := range tc.before {
				f.recounted(key)
			}
			f.start(tc.keys)
			for _, key := range tc.after {
				f.recounted(key)
			}
			// Later recounts, and a second start, run nothing more.
			f.recounted(a)
			f.start([]types.NamespacedName{a})
			f.recounted(a)
			want := 0
			if tc.wantDone {
				want = 1
			}
			if runs != want {
				t.Errorf("onDone ran %d times, want %d", runs, want)
			}
		})
	}

	var none *firstPass
	none.recounted(a) // a reconciler without one
}
