package lastwrite

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func object(uid, resourceVersion, data string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "q", UID: types.UID(uid), ResourceVersion: resourceVersion},
		Data:       map[string]string{"v": data},
	}
}

func TestNewest(t *testing.T) {
	cases := map[string]struct {
		written      *corev1.ConfigMap
		cached       *corev1.ConfigMap
		want         string
		wantRemember bool
	}{
		"nothing written: the informer's copy": {
			cached: object("a", "5", "informer"), want: "informer",
		},
		"the own write is newer: it, and it is kept": {
			written: object("a", "7", "own"), cached: object("a", "5", "informer"), want: "own", wantRemember: true,
		},
		"the informer caught up: its copy, and the write is forgotten": {
			written: object("a", "7", "own"), cached: object("a", "7", "informer"), want: "informer",
		},
		"the informer moved past it: its copy": {
			written: object("a", "7", "own"), cached: object("a", "9", "informer"), want: "informer",
		},
		"a recreated object: the informer's copy": {
			written: object("a", "7", "own"), cached: object("b", "5", "informer"), want: "informer",
		},
		"versions that are not integers: the informer's copy": {
			written: object("a", "x7", "own"), cached: object("a", "5", "informer"), want: "informer",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := NewStore[*corev1.ConfigMap]()
			if tc.written != nil {
				s.Remember(tc.written)
				tc.written.Data["v"] = "changed after the write"
			}
			got := s.Newest(tc.cached)
			if diff := cmp.Diff(tc.want, got.Data["v"]); diff != "" {
				t.Errorf("newest (-want +got):\n%s", diff)
			}
			got.Data["v"] = "changed by the caller"
			if tc.cached.Data["v"] == "changed by the caller" {
				t.Errorf("Newest returned the informer's object, not a copy")
			}
			if remembered := s.Len() == 1; remembered != tc.wantRemember {
				t.Errorf("remembered = %v, want %v", remembered, tc.wantRemember)
			}
		})
	}
}
