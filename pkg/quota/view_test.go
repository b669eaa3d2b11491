package quota

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/karmada-quota/karmada-quota/pkg/resources"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

func TestLedgerView(t *testing.T) {
	list := utiltesting.List
	rb := utiltesting.MakeBinding("ns", "web").Obj()
	q := utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "10", "requests.memory", "8Gi", "pods", "5")).
		Used(list("cpu", "1500m", "requests.memory", "1Gi", "pods", "2", "nvidia.com/gpu", "1")).
		Reservation(rb, 2, list("cpu", "500m", "pods", "1"), time.Unix(0, 0)).Obj()
	l, err := NewLedger(q, nil)
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, want, got any) {
		t.Helper()
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", what, diff)
		}
	}
	check("Hard", resources.List{"requests.cpu": 10000, "requests.memory": 8 << 30, "pods": 5}, l.Hard())
	// A resource the quota no longer limits (nvidia.com/gpu) is not used here.
	check("Used", resources.List{"requests.cpu": 1500, "requests.memory": 1 << 30, "pods": 2}, l.Used())
	check("Reserved", resources.List{"requests.cpu": 500, "pods": 1}, l.Reserved())
	check("AuthorName of a bare name", corev1.ResourceName("cpu"), l.AuthorName("requests.cpu"))
	check("AuthorName of a requests. name", corev1.ResourceName("requests.memory"), l.AuthorName("requests.memory"))
	check("AuthorName of an unlimited name", corev1.ResourceName("requests.nvidia.com/gpu"), l.AuthorName("requests.nvidia.com/gpu"))
	check("ParseStatus", resources.List{"requests.cpu": 2000}, l.ParseStatus(list("cpu", "2", "nvidia.com/gpu", "1")))

	// Copies: what a reader does with them does not reach the ledger.
	l.Hard()["pods"] = 0
	l.Used()["pods"] = 0
	l.Reserved()["pods"] = 0
	check("Headroom after the copies changed", resources.List{"requests.cpu": 8000, "requests.memory": 7 << 30, "pods": 2}, l.Headroom(l.Used()))
}
