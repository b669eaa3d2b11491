package resources

import (
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestHuman(t *testing.T) {
	cases := map[string]struct {
		name corev1.ResourceName
		v    int64
		want string
	}{
		"cpu below a core in milli-units":       {name: "requests.cpu", v: 100, want: "100m"},
		"cpu with a fraction in milli-units":    {name: "requests.cpu", v: 1500, want: "1500m"},
		"whole cores as cores":                  {name: "requests.cpu", v: 2000, want: "2"},
		"no cpu":                                {name: "requests.cpu", v: 0, want: "0"},
		"memory in Gi":                          {name: "requests.memory", v: 4 << 30, want: "4Gi"},
		"memory that is not whole Gi in Mi":     {name: "requests.memory", v: 1536 << 20, want: "1536Mi"},
		"memory written in decimal units":       {name: "requests.memory", v: 1_000_000_000, want: "1G"},
		"memory in neither unit as bytes":       {name: "requests.memory", v: 1<<30 + 1, want: "1073741825"},
		"negative headroom keeps its unit":      {name: "requests.memory", v: -2 << 30, want: "-2Gi"},
		"ephemeral storage is bytes":            {name: "requests.ephemeral-storage", v: 10 << 30, want: "10Gi"},
		"huge pages are bytes":                  {name: "requests.hugepages-2Mi", v: 512 << 20, want: "512Mi"},
		"pods as an integer, not 5k":            {name: "pods", v: 5000, want: "5000"},
		"object counts as integers":             {name: "count/deployments.apps", v: 3, want: "3"},
		"extended resources as integers":        {name: "requests.nvidia.com/gpu", v: 8000, want: "8000"},
		"a saturated amount stays exact":        {name: "requests.memory", v: math.MaxInt64, want: "9223372036854775807"},
		"a saturated cpu amount stays in milli": {name: "requests.cpu", v: math.MaxInt64, want: "9223372036854775807m"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Human(tc.name, tc.v)
			if got != tc.want {
				t.Fatalf("Human(%s, %d) = %q, want %q", tc.name, tc.v, got, tc.want)
			}
			// What people read must be what the quota holds: the rendering parses back to the same amount.
			q, err := resource.ParseQuantity(got)
			if err != nil {
				t.Fatalf("%q does not parse as a quantity: %v", got, err)
			}
			if back := Value(tc.name, q); back != tc.v {
				t.Errorf("%q parses back to %d, want %d", got, back, tc.v)
			}
		})
	}
}
