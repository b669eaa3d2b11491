package resources

import (
	"math"
	"math/big"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

const (
	cpu    corev1.ResourceName = "requests.cpu"
	memory corev1.ResourceName = "requests.memory"
	pods   corev1.ResourceName = corev1.ResourcePods
	gpu    corev1.ResourceName = "requests.nvidia.com/gpu"
)

func TestValue(t *testing.T) {
	cases := map[string]struct {
		name     corev1.ResourceName
		quantity string
		want     int64
	}{
		"cpu in milli-units":                     {name: cpu, quantity: "100m", want: 100},
		"whole cpu":                              {name: cpu, quantity: "2", want: 2000},
		"fractional cpu":                         {name: cpu, quantity: "0.5", want: 500},
		"sub-milli cpu rounds up":                {name: cpu, quantity: "1.1m", want: 2},
		"memory in bytes":                        {name: memory, quantity: "1.5Gi", want: 1610612736},
		"decimal memory":                         {name: memory, quantity: "1G", want: 1000000000},
		"sub-byte memory rounds up":              {name: memory, quantity: "100m", want: 1},
		"pods are whole":                         {name: pods, quantity: "3", want: 3},
		"extended resource is whole":             {name: gpu, quantity: "2", want: 2},
		"zero":                                   {name: cpu, quantity: "0", want: 0},
		"largest cpu that fits":                  {name: cpu, quantity: "9223372036854775807m", want: math.MaxInt64},
		"cpu beyond int64 milli saturates":       {name: cpu, quantity: "1e20", want: math.MaxInt64},
		"cpu whose milli-value just overflows":   {name: cpu, quantity: "9223372036854776", want: math.MaxInt64},
		"largest memory that fits":               {name: memory, quantity: "9223372036854775807", want: math.MaxInt64},
		"memory one past int64 saturates":        {name: memory, quantity: "8Ei", want: math.MaxInt64},
		"memory far beyond int64 saturates":      {name: memory, quantity: "1e30", want: math.MaxInt64},
		"large memory that fits is exact":        {name: memory, quantity: "7Ei", want: 7 << 60},
		"negative cpu":                           {name: cpu, quantity: "-100m", want: -100},
		"negative memory":                        {name: memory, quantity: "-1Ki", want: -1024},
		"negative cpu beyond int64 saturates":    {name: cpu, quantity: "-1e20", want: math.MinInt64},
		"negative memory beyond int64 saturates": {name: memory, quantity: "-1e30", want: math.MinInt64},
		// Scales near the int32 limits, where apimachinery's own comparisons divide by zero or never end.
		"cpu at the largest exponent saturates":    {name: cpu, quantity: "1e2147483647", want: math.MaxInt64},
		"memory at the largest exponent saturates": {name: memory, quantity: "9e2147483647", want: math.MaxInt64},
		"negative cpu at the largest exponent":     {name: cpu, quantity: "-1e2147483647", want: math.MinInt64},
		"zero at the largest exponent":             {name: cpu, quantity: "0e2147483647", want: 0},
		"a tiny cpu request rounds up":             {name: cpu, quantity: "1e-100000", want: 1},
		"a tiny memory request rounds up":          {name: memory, quantity: "1e-1000", want: 1},
		"a huge exponent with a tiny mantissa":     {name: cpu, quantity: "0.000000000000000000001e100000", want: math.MaxInt64},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Value(tc.name, resource.MustParse(tc.quantity)); got != tc.want {
				t.Errorf("Value(%q, %s) = %d, want %d", tc.name, tc.quantity, got, tc.want)
			}
		})
	}
}

func TestQuantityRoundTrip(t *testing.T) {
	cases := map[string]struct {
		name       corev1.ResourceName
		value      int64
		wantString string
	}{
		"milli cpu":                {name: cpu, value: 100, wantString: "100m"},
		"whole cpu":                {name: cpu, value: 2000, wantString: "2"},
		"memory uses binary units": {name: memory, value: 1610612736, wantString: "1536Mi"},
		"ephemeral-storage bytes":  {name: "requests.ephemeral-storage", value: 1 << 30, wantString: "1Gi"},
		"hugepages bytes":          {name: "requests.hugepages-2Mi", value: 2 << 20, wantString: "2Mi"},
		"pods are decimal":         {name: pods, value: 1000, wantString: "1k"},
		"object counts":            {name: "count/services", value: 3, wantString: "3"},
		"extended resource":        {name: gpu, value: 8, wantString: "8"},
		"zero":                     {name: memory, value: 0, wantString: "0"},
		"negative cpu":             {name: cpu, value: -250, wantString: "-250m"},
		"saturated cpu":            {name: cpu, value: math.MaxInt64, wantString: "9223372036854775807m"},
		"saturated memory":         {name: memory, value: math.MaxInt64, wantString: "9223372036854775807"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			q := Quantity(tc.name, tc.value)
			if got := q.String(); got != tc.wantString {
				t.Errorf("Quantity(%q, %d) = %s, want %s", tc.name, tc.value, got, tc.wantString)
			}
			// Status is written as a quantity and read back: the value must survive serialization.
			parsed := resource.MustParse(q.String())
			if got := Value(tc.name, parsed); got != tc.value {
				t.Errorf("Value(%q, Quantity(%d)) = %d, want the value back", tc.name, tc.value, got)
			}
		})
	}
}

func TestListAdd(t *testing.T) {
	cases := map[string]struct {
		list List
		add  List
		want List
	}{
		"disjoint names are merged": {
			list: List{cpu: 100},
			add:  List{memory: 1024},
			want: List{cpu: 100, memory: 1024},
		},
		"same name is summed": {
			list: List{cpu: 100, pods: 1},
			add:  List{cpu: 250, pods: 2},
			want: List{cpu: 350, pods: 3},
		},
		"adding a negative lowers": {
			list: List{cpu: 100},
			add:  List{cpu: -300},
			want: List{cpu: -200},
		},
		"adding nothing": {
			list: List{cpu: 100},
			add:  nil,
			want: List{cpu: 100},
		},
		"saturates at MaxInt64": {
			list: List{cpu: math.MaxInt64 - 1},
			add:  List{cpu: 2},
			want: List{cpu: math.MaxInt64},
		},
		"saturated stays saturated": {
			list: List{cpu: math.MaxInt64},
			add:  List{cpu: math.MaxInt64},
			want: List{cpu: math.MaxInt64},
		},
		"saturates at MinInt64": {
			list: List{cpu: math.MinInt64 + 1},
			add:  List{cpu: -2},
			want: List{cpu: math.MinInt64},
		},
		"opposite extremes cancel exactly": {
			list: List{cpu: math.MaxInt64},
			add:  List{cpu: math.MinInt64},
			want: List{cpu: -1},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.list.Add(tc.add)
			if diff := cmp.Diff(tc.want, tc.list); diff != "" {
				t.Errorf("Add (-want +got):\n%s", diff)
			}
		})
	}
}

func TestListSub(t *testing.T) {
	cases := map[string]struct {
		list List
		sub  List
		want List
	}{
		"same name is subtracted": {
			list: List{cpu: 300, pods: 3},
			sub:  List{cpu: 100, pods: 1},
			want: List{cpu: 200, pods: 2},
		},
		"a name only in the subtrahend goes negative": {
			list: List{cpu: 300},
			sub:  List{memory: 1024},
			want: List{cpu: 300, memory: -1024},
		},
		"to zero keeps the entry": {
			list: List{cpu: 300},
			sub:  List{cpu: 300},
			want: List{cpu: 0},
		},
		"saturates at MinInt64": {
			list: List{cpu: -2},
			sub:  List{cpu: math.MaxInt64},
			want: List{cpu: math.MinInt64},
		},
		"subtracting MinInt64 from zero saturates at MaxInt64": {
			list: List{cpu: 0},
			sub:  List{cpu: math.MinInt64},
			want: List{cpu: math.MaxInt64},
		},
		// -1 - MinInt64 is exactly MaxInt64: in range, so it must not be off by one.
		"subtracting MinInt64 from -1 is exact": {
			list: List{cpu: -1},
			sub:  List{cpu: math.MinInt64},
			want: List{cpu: math.MaxInt64},
		},
		"subtracting MinInt64 from MinInt64 is zero": {
			list: List{cpu: math.MinInt64},
			sub:  List{cpu: math.MinInt64},
			want: List{cpu: 0},
		},
		"subtracting a negative from MaxInt64 saturates": {
			list: List{cpu: math.MaxInt64},
			sub:  List{cpu: -1},
			want: List{cpu: math.MaxInt64},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.list.Sub(tc.sub)
			if diff := cmp.Diff(tc.want, tc.list); diff != "" {
				t.Errorf("Sub (-want +got):\n%s", diff)
			}
		})
	}
}

func TestListMax(t *testing.T) {
	cases := map[string]struct {
		list List
		max  List
		want List
	}{
		"keeps the larger of each": {
			list: List{cpu: 100, memory: 4096},
			max:  List{cpu: 200, memory: 1024},
			want: List{cpu: 200, memory: 4096},
		},
		"takes a name the list lacks": {
			list: List{cpu: 100},
			max:  List{pods: 3},
			want: List{cpu: 100, pods: 3},
		},
		"keeps a name the other lacks": {
			list: List{cpu: 100, pods: 3},
			max:  List{cpu: 50},
			want: List{cpu: 100, pods: 3},
		},
		"equal amounts": {
			list: List{cpu: math.MaxInt64},
			max:  List{cpu: math.MaxInt64},
			want: List{cpu: math.MaxInt64},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.list.Max(tc.max)
			if diff := cmp.Diff(tc.want, tc.list); diff != "" {
				t.Errorf("Max (-want +got):\n%s", diff)
			}
		})
	}
}

func TestListPositive(t *testing.T) {
	cases := map[string]struct {
		list List
		want List
	}{
		"keeps increases only": {
			list: List{cpu: 100, memory: -1024, pods: 0},
			want: List{cpu: 100},
		},
		"no increase is nil": {
			list: List{cpu: -100, pods: 0},
			want: nil,
		},
		"nil is nil": {
			list: nil,
			want: nil,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.list.Positive()); diff != "" {
				t.Errorf("Positive(%v) (-want +got):\n%s", tc.list, diff)
			}
		})
	}
}

func TestListEqual(t *testing.T) {
	cases := map[string]struct {
		a, b List
		want bool
	}{
		"same amounts":                   {a: List{cpu: 1, pods: 2}, b: List{pods: 2, cpu: 1}, want: true},
		"different amount":               {a: List{cpu: 1}, b: List{cpu: 2}, want: false},
		"missing entry is zero":          {a: List{cpu: 1, pods: 0}, b: List{cpu: 1}, want: true},
		"missing entry is zero, swapped": {a: List{cpu: 1}, b: List{cpu: 1, pods: 0}, want: true},
		"extra non-zero entry":           {a: List{cpu: 1}, b: List{cpu: 1, pods: 1}, want: false},
		"extra non-zero entry, swapped":  {a: List{cpu: 1, pods: 1}, b: List{cpu: 1}, want: false},
		"nil equals empty":               {a: nil, b: List{}, want: true},
		"nil equals all zeros":           {a: nil, b: List{cpu: 0}, want: true},
		"nil differs from non-zero":      {a: nil, b: List{cpu: math.MinInt64}, want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := tc.a.Equal(tc.b); got != tc.want {
				t.Errorf("%v.Equal(%v) = %v, want %v", tc.a, tc.b, got, tc.want)
			}
		})
	}
}

func TestListClone(t *testing.T) {
	if got := List(nil).Clone(); got != nil {
		t.Errorf("nil.Clone() = %v, want nil", got)
	}
	original := List{cpu: 100, pods: 1}
	clone := original.Clone()
	if diff := cmp.Diff(original, clone); diff != "" {
		t.Fatalf("Clone() (-want +got):\n%s", diff)
	}
	clone[cpu] = 999
	clone[memory] = 1
	if diff := cmp.Diff(List{cpu: 100, pods: 1}, original); diff != "" {
		t.Errorf("changing the clone changed the original (-want +got):\n%s", diff)
	}
	if got := (List{}).Clone(); got == nil || len(got) != 0 {
		t.Errorf("empty.Clone() = %#v, want an empty non-nil list", got)
	}
}

func TestListNames(t *testing.T) {
	l := List{pods: 1, memory: 2, cpu: 3, "count/services": 4}
	want := []corev1.ResourceName{"count/services", pods, cpu, memory}
	if diff := cmp.Diff(want, l.Names()); diff != "" {
		t.Errorf("Names() (-want +got):\n%s", diff)
	}
	if got := List(nil).Names(); got == nil || len(got) != 0 {
		t.Errorf("nil.Names() = %#v, want an empty slice", got)
	}
}

func TestMul(t *testing.T) {
	cases := map[string]struct {
		a, n int64
		want int64
	}{
		"product":                            {a: 100, n: 3, want: 300},
		"zero amount":                        {a: 0, n: math.MaxInt64, want: 0},
		"zero replicas":                      {a: math.MaxInt64, n: 0, want: 0},
		"zero replicas of a negative":        {a: math.MinInt64, n: 0, want: 0},
		"identity":                           {a: math.MaxInt64, n: 1, want: math.MaxInt64},
		"largest product that fits":          {a: math.MaxInt64 / 7, n: 7, want: math.MaxInt64 / 7 * 7},
		"positive overflow saturates":        {a: math.MaxInt64/7 + 1, n: 7, want: math.MaxInt64},
		"overflow that wraps to positive":    {a: 1 << 62, n: 4, want: math.MaxInt64},
		"overflow that wraps to zero":        {a: 1 << 32, n: 1 << 32, want: math.MaxInt64},
		"huge times huge":                    {a: math.MaxInt64, n: math.MaxInt64, want: math.MaxInt64},
		"negative product":                   {a: -100, n: 3, want: -300},
		"smallest product that fits":         {a: math.MinInt64 / 8, n: 8, want: math.MinInt64},
		"negative overflow saturates":        {a: math.MinInt64/7 - 1, n: 7, want: math.MinInt64},
		"negative overflow that wraps to +":  {a: -(1 << 62) - 1, n: 3, want: math.MinInt64},
		"negative overflow that wraps to 0":  {a: -(1 << 32), n: 1 << 32, want: math.MinInt64},
		"MinInt64 times two saturates":       {a: math.MinInt64, n: 2, want: math.MinInt64},
		"negative huge times huge saturates": {a: -math.MaxInt64, n: math.MaxInt64, want: math.MinInt64},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Mul(tc.a, tc.n); got != tc.want {
				t.Errorf("Mul(%d, %d) = %d, want %d", tc.a, tc.n, got, tc.want)
			}
		})
	}
}

// TestSaturatingArithmeticIsExact checks Add, Sub and Mul against exact big-integer arithmetic clamped to the
// int64 range, on every pair of values around the places where int64 arithmetic wraps.
func TestSaturatingArithmeticIsExact(t *testing.T) {
	edges := []int64{
		math.MinInt64, math.MinInt64 + 1, math.MinInt64 / 2, -(1 << 32), -2, -1, 0, 1, 2, 3, 1 << 31, 1 << 32,
		math.MaxInt64 / 3, math.MaxInt64 / 2, math.MaxInt64/2 + 1, math.MaxInt64 - 1, math.MaxInt64,
	}
	clamp := func(x *big.Int) int64 {
		switch {
		case x.Cmp(big.NewInt(math.MaxInt64)) > 0:
			return math.MaxInt64
		case x.Cmp(big.NewInt(math.MinInt64)) < 0:
			return math.MinInt64
		}
		return x.Int64()
	}
	for _, a := range edges {
		for _, b := range edges {
			sum := List{cpu: a}
			sum.Add(List{cpu: b})
			if want := clamp(new(big.Int).Add(big.NewInt(a), big.NewInt(b))); sum[cpu] != want {
				t.Errorf("%d + %d = %d, want %d", a, b, sum[cpu], want)
			}
			difference := List{cpu: a}
			difference.Sub(List{cpu: b})
			if want := clamp(new(big.Int).Sub(big.NewInt(a), big.NewInt(b))); difference[cpu] != want {
				t.Errorf("%d - %d = %d, want %d", a, b, difference[cpu], want)
			}
			// Mul is defined for a non-negative multiplier: a replica count.
			if b >= 0 {
				if got, want := Mul(a, b), clamp(new(big.Int).Mul(big.NewInt(a), big.NewInt(b))); got != want {
					t.Errorf("Mul(%d, %d) = %d, want %d", a, b, got, want)
				}
			}
		}
	}
}

func TestParse(t *testing.T) {
	got, err := Parse(corev1.ResourceList{
		"cpu":                    resource.MustParse("1500m"),
		"requests.memory":        resource.MustParse("1Gi"),
		"pods":                   resource.MustParse("3"),
		"count/deployments.apps": resource.MustParse("2"),
	})
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := List{cpu: 1500, memory: 1 << 30, pods: 3, "count/deployments.apps": 2}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Parse (-want +got):\n%s", diff)
	}
	if _, err := Parse(corev1.ResourceList{"limits.cpu": resource.MustParse("1")}); err == nil {
		t.Error("Parse accepted limits.cpu, which no quota limits")
	}
}
