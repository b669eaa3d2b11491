package controller

import (
	"encoding/json"
	"os"
	"runtime"
	"testing"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// karmadaBinding reads a ResourceBinding as Karmada v1.18 writes it for a Deployment that a PropagationPolicy
// divides over two members: its labels, annotations and finalizer, the managed fields of the controller manager
// and the scheduler, the placement it copies from the policy, and the status aggregated from both members.
func karmadaBinding(tb testing.TB) []byte {
	tb.Helper()
	raw, err := os.ReadFile("testdata/resourcebinding-deployment.json")
	if err != nil {
		tb.Fatal(err)
	}
	return raw
}

// BenchmarkCachedBinding reports the heap one ResourceBinding holds in the controller's informer: decoded as the
// informer decodes it, kept as it came, and kept trimmed (TrimBinding), both when every binding asks what the others
// ask (the requirements are held once) and when each asks its own. The controller's memory grows with the bindings
// of the whole control plane (docs/performance.md, at scale).
func BenchmarkCachedBinding(b *testing.B) {
	raw := karmadaBinding(b)
	asking := func(own bool) func(rb *workv1alpha2.ResourceBinding, i int) {
		return func(rb *workv1alpha2.ResourceBinding, i int) {
			if own {
				rb.Spec.ReplicaRequirements.ResourceRequest[corev1.ResourceCPU] = *resource.NewMilliQuantity(int64(1+i), resource.DecimalSI)
			}
		}
	}
	for _, c := range []struct {
		name      string
		transform func(any) (any, error)
		ask       func(rb *workv1alpha2.ResourceBinding, i int)
	}{
		{"as stored", func(obj any) (any, error) { return obj, nil }, asking(false)},
		{"trimmed, asking alike", TrimBinding, asking(false)},
		{"trimmed, each asking its own", TrimBinding, asking(true)},
	} {
		b.Run(c.name, func(b *testing.B) {
			i := 0
			heapPerObject(b, "binding", func() (any, error) {
				rb := &workv1alpha2.ResourceBinding{}
				if err := json.Unmarshal(raw, rb); err != nil {
					return nil, err
				}
				c.ask(rb, i)
				i++
				return c.transform(rb)
			})
		})
	}
}

// heapPerObject reports the heap that each of b.N objects made by next holds while all are kept, as an informer
// keeps them, in heap-bytes/<unit>.
func heapPerObject(b *testing.B, unit string, next func() (any, error)) {
	kept := make([]any, b.N)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for i := range kept {
		obj, err := next()
		if err != nil {
			b.Fatal(err)
		}
		kept[i] = obj
	}
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(b.N), "heap-bytes/"+unit)
	runtime.KeepAlive(kept)
}
