package quota

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

// BenchmarkNewLedger parses a quota as admission does on every attempt of every batch, and the Work gate and the
// recount on every decision: four limits, and none or a scope, without reservations (a quiet namespace) and with
// the reservations of a burst.
func BenchmarkNewLedger(b *testing.B) {
	hard := list("cpu", "100", "memory", "200Gi", "pods", "500", "count/deployments.apps", "50")
	scoped := list("cpu", "100", "memory", "200Gi", "pods", "500")
	withReservations := func(q *utiltesting.QuotaWrapper, n int) *utiltesting.QuotaWrapper {
		for i := 0; i < n; i++ {
			rb := utiltesting.MakeBinding("ns", fmt.Sprintf("web-%d", i)).Obj()
			q.Reservation(rb, 2, list("cpu", "1", "memory", "1Gi", "pods", "1"), expires)
		}
		return q
	}
	cases := map[string]*utiltesting.QuotaWrapper{
		"unscoped":                  utiltesting.MakeQuota("ns", "team").Hard(hard),
		"scoped":                    utiltesting.MakeQuota("ns", "team").Hard(scoped).Scope(corev1.ScopeSelectorOpIn, "high", "critical"),
		"unscoped, 50 reservations": withReservations(utiltesting.MakeQuota("ns", "team").Hard(hard), 50),
	}
	for name, q := range cases {
		obj := q.Obj()
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := NewLedger(obj, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
