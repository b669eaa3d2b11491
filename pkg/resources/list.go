package resources

import (
	"math"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// List maps canonical resource names to amounts in accounting units (see Value). Arithmetic saturates at the
// int64 range instead of wrapping, so an absurd binding can only look huge, never small.
type List map[corev1.ResourceName]int64

// maxMilli is the largest quantity whose milli-value fits in int64.
var maxMilli = resource.NewMilliQuantity(math.MaxInt64, resource.DecimalSI)

// maxValue is the largest quantity whose value fits in int64.
var maxValue = resource.NewQuantity(math.MaxInt64, resource.DecimalSI)

// Value converts a quantity to accounting units for a canonical name: milli-units for CPU (requests of 100m must
// stay exact), base units rounded up for the rest. Quantities beyond int64 saturate.
func Value(name corev1.ResourceName, q resource.Quantity) int64 {
	if q.IsZero() {
		return 0
	}
	// A quantity may carry a decimal exponent near the int32 limits ("1e2147483647"): apimachinery's comparisons
	// then overflow the scale difference and divide by zero, or build numbers of billions of digits. Its magnitude
	// is decided first, from the float approximation (an exponent, no big numbers); only quantities within a few
	// orders of int64 reach the exact comparisons below.
	approx := q.AsApproximateFloat64()
	if isMilli(name) {
		approx *= 1000
	}
	switch {
	case approx >= 1e20:
		return math.MaxInt64
	case approx <= -1e20:
		return math.MinInt64
	case approx > 0 && approx < 1e-3:
		// Far below one unit: rounded away from zero, as MilliValue and Value round.
		return 1
	case approx < 0 && approx > -1e-3:
		return -1
	}
	if isMilli(name) {
		switch {
		case q.Cmp(*maxMilli) >= 0:
			return math.MaxInt64
		case q.Cmp(*resource.NewMilliQuantity(math.MinInt64, resource.DecimalSI)) <= 0:
			return math.MinInt64
		}
		return q.MilliValue()
	}
	switch {
	case q.Cmp(*maxValue) >= 0:
		return math.MaxInt64
	case q.Cmp(*resource.NewQuantity(math.MinInt64, resource.DecimalSI)) <= 0:
		return math.MinInt64
	}
	return q.Value()
}

// Quantity converts accounting units back to a quantity for a canonical name, in the format people write it in:
// binary suffixes for bytes, decimal for the rest.
func Quantity(name corev1.ResourceName, v int64) resource.Quantity {
	if isMilli(name) {
		return *resource.NewMilliQuantity(v, resource.DecimalSI)
	}
	if isBytes(name) {
		return *resource.NewQuantity(v, resource.BinarySI)
	}
	return *resource.NewQuantity(v, resource.DecimalSI)
}

// Parse converts a quota's resource list (spec.hard, status.used, a FederatedResourceQuota's overall) to
// canonical names and accounting units, so lists written with different names for one resource ("cpu" and
// "requests.cpu: 1000m") compare equal. It refuses a name no quota can limit.
func Parse(list corev1.ResourceList) (List, error) {
	out := make(List, len(list))
	for name, q := range list {
		canonical, _, err := Canonical(name)
		if err != nil {
			return nil, err
		}
		out[canonical] = Value(canonical, q)
	}
	return out, nil
}

func isMilli(name corev1.ResourceName) bool {
	return name == "requests.cpu"
}

func isBytes(name corev1.ResourceName) bool {
	switch name {
	case "requests.memory", "requests.ephemeral-storage":
		return true
	}
	if _, storage := ClaimsOf(name); storage {
		return true
	}
	return strings.HasPrefix(string(name), requestsPrefix+hugePagesPrefix)
}

// Add adds o into l, saturating.
func (l List) Add(o List) {
	for name, v := range o {
		l[name] = Add(l[name], v)
	}
}

// Sub subtracts o from l, saturating.
func (l List) Sub(o List) {
	for name, v := range o {
		l[name] = Sub(l[name], v)
	}
}

// Max sets each amount of l to the larger of its own and o's.
func (l List) Max(o List) {
	for name, v := range o {
		if cur, ok := l[name]; !ok || v > cur {
			l[name] = v
		}
	}
}

// Clone returns a copy of l; nil stays nil.
func (l List) Clone() List {
	if l == nil {
		return nil
	}
	c := make(List, len(l))
	for name, v := range l {
		c[name] = v
	}
	return c
}

// Positive returns the entries of l greater than zero: the increases of a delta.
func (l List) Positive() List {
	var p List
	for name, v := range l {
		if v > 0 {
			if p == nil {
				p = List{}
			}
			p[name] = v
		}
	}
	return p
}

// Equal reports whether l and o hold the same amounts, treating a missing entry as zero.
func (l List) Equal(o List) bool {
	for name, v := range l {
		if o[name] != v {
			return false
		}
	}
	for name, v := range o {
		if l[name] != v {
			return false
		}
	}
	return true
}

// Names returns the names of l, sorted, for stable messages and output.
func (l List) Names() []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(l))
	for name := range l {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	return names
}

// Add returns a+b, saturating at the int64 range.
func Add(a, b int64) int64 {
	s := a + b
	switch {
	case a > 0 && b > 0 && s < 0:
		return math.MaxInt64
	case a < 0 && b < 0 && s >= 0:
		return math.MinInt64
	}
	return s
}

// Sub returns a-b, saturating at the int64 range. It is not Add(a, -b): -MinInt64 does not exist, and
// approximating it by MaxInt64 made x-MinInt64 one short (MinInt64-MinInt64 came out -1, not 0).
func Sub(a, b int64) int64 {
	d := a - b
	switch {
	case a >= 0 && b < 0 && d < 0:
		return math.MaxInt64
	case a < 0 && b > 0 && d >= 0:
		return math.MinInt64
	}
	return d
}

// Mul returns a*n for n >= 0, saturating at the int64 range.
func Mul(a, n int64) int64 {
	if a == 0 || n == 0 {
		return 0
	}
	p := a * n
	if p/n != a || (a > 0) != (p > 0) {
		if a > 0 {
			return math.MaxInt64
		}
		return math.MinInt64
	}
	return p
}
