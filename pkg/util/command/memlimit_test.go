package command

import (
	"errors"
	"testing"
	"testing/fstest"
)

func TestMemoryLimit(t *testing.T) {
	cases := map[string]struct {
		files   fstest.MapFS
		want    int64
		wantErr error
		anyErr  bool
	}{
		"cgroup v2, 1Gi": {
			files: fstest.MapFS{"memory.max": {Data: []byte("1073741824\n")}},
			want:  966367641,
		},
		"cgroup v2, no limit": {
			files:   fstest.MapFS{"memory.max": {Data: []byte("max\n")}},
			wantErr: ErrNoMemoryLimit,
		},
		"cgroup v1, 512Mi": {
			files: fstest.MapFS{"memory/memory.limit_in_bytes": {Data: []byte("536870912\n")}},
			want:  483183820,
		},
		"cgroup v1, no limit": {
			files:   fstest.MapFS{"memory/memory.limit_in_bytes": {Data: []byte("9223372036854771712\n")}},
			wantErr: ErrNoMemoryLimit,
		},
		"no cgroup memory controller": {
			files:   fstest.MapFS{"cpu.max": {Data: []byte("max 100000\n")}},
			wantErr: ErrNoMemoryLimit,
		},
		"garbage": {
			files:  fstest.MapFS{"memory.max": {Data: []byte("lots\n")}},
			anyErr: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := MemoryLimit(tc.files)
			switch {
			case tc.anyErr:
				if err == nil || errors.Is(err, ErrNoMemoryLimit) {
					t.Errorf("MemoryLimit = %d, %v; want an error saying what could not be read", got, err)
				}
			case !errors.Is(err, tc.wantErr) || got != tc.want:
				t.Errorf("MemoryLimit = %d, %v; want %d, %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}
