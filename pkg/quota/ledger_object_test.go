package quota

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

// TestNewLedgerReadsTheLedgerObject: usage is the ledger's once the controller observed it, the quota status's
// before; reservations are the ledger's and those an earlier release's webhook listed in status, one key counted
// once (the larger of the two); folded sums add up.
func TestNewLedgerReadsTheLedgerObject(t *testing.T) {
	q := utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "10", "pods", "10")).Used(list("cpu", "4", "pods", "4")).
		Reservation(web.Obj(), 1, list("cpu", "1"), expires).
		Reservation(api.Obj(), 1, list("cpu", "2", "pods", "1"), expires).
		Folded(2, list("cpu", "1"), expires).Obj()
	stored := &quotav1alpha1.KarmadaQuotaLedger{
		LedgerState: quotav1alpha1.LedgerState{
			Reservations: []quotav1alpha1.Reservation{
				// Moved from status by the controller, and merged into by a later admission of the same write.
				{ReservedBy: utiltesting.ReservationOwner(api.Obj()), Generation: 1, Reserved: list("cpu", "3"), ExpirationTime: metav1.NewTime(expires)},
				{ReservedBy: utiltesting.ReservationOwner(batch.Obj()), Generation: 1, Reserved: list("pods", "2"), ExpirationTime: metav1.NewTime(expires)},
			},
			FoldedReservations: &quotav1alpha1.FoldedReservations{Count: 1, Reserved: list("pods", "1"), ExpirationTime: metav1.NewTime(expires.Add(time.Minute))},
		},
	}

	before, err := NewLedger(q, stored)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(resources.List{requestsCPU: 4000, pods: 4}, before.Used()); diff != "" {
		t.Errorf("used before the controller observed (-want +got):\n%s", diff)
	}
	// web 1 + api max(2, 3) + batch 0 + folded 1 cpu; api 1 + batch 2 + folded 1 pods.
	if diff := cmp.Diff(resources.List{requestsCPU: 5000, pods: 4}, before.Reserved()); diff != "" {
		t.Errorf("reserved (-want +got):\n%s", diff)
	}
	if n := len(before.Reservations()); n != 3 {
		t.Errorf("%d reservations, want 3 (api's once)", n)
	}
	if f := before.Folded(); f.Count != 3 || !f.Expires.Equal(expires.Add(time.Minute)) {
		t.Errorf("folded %+v, want 3 expiring at the later expiry", f)
	}

	stored.Observed = &quotav1alpha1.LedgerObserved{Used: list("cpu", "6", "pods", "5")}
	after, err := NewLedger(q, stored)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(resources.List{requestsCPU: 6000, pods: 5}, after.Used()); diff != "" {
		t.Errorf("used once the controller observed (-want +got):\n%s", diff)
	}
}

// TestLedgerObservedOnClusters: the usage on member clusters the ledger records is what the cluster and group
// limits add to, and the controller's write renders it for the resources limited on members only.
func TestLedgerObservedOnClusters(t *testing.T) {
	l := cappedLedger(t, capped().Obj())
	var stored quotav1alpha1.KarmadaQuotaLedger
	l.WriteObserved(&stored, resources.List{requestsCPU: 2000, pods: 2},
		map[string]resources.List{"member1": {requestsCPU: 2000, pods: 2}, "member3": {}})
	want := &quotav1alpha1.LedgerObserved{
		Used:     list("cpu", "2"),
		Clusters: []quotav1alpha1.ClusterUsed{{Name: "member1", Used: list("cpu", "2")}},
	}
	quantity := cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })
	if diff := cmp.Diff(want, stored.Observed, quantity); diff != "" {
		t.Errorf("observed (-want +got):\n%s", diff)
	}

	again, err := NewLedger(capped().Obj(), &stored)
	if err != nil {
		t.Fatal(err)
	}
	again.SetClusterLabels(func(c string) (labels.Set, bool) { set, ok := regions[c]; return set, ok })
	rb := utiltesting.MakeBinding("ns", "b").Requests(list("cpu", "1")).Cluster("member1", 1).Obj()
	d := again.Demand(keyOf(rb), utiltesting.ReservationOwner(rb), usageOf(t, rb), nil)
	if denial := again.Check(d); denial == nil || !strings.Contains(denial.Error(), "cpu in cluster member1: requested 1, used 2, reserved 0, hard 2") {
		t.Errorf("denial %v, want member1 full with the 2 the ledger observed there", denial)
	}
}

// TestFenced: a ledger fenced past the spec parsed says the quota must be read again; writing it keeps the fence.
func TestFenced(t *testing.T) {
	q := utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "10")).Obj()
	for _, tc := range []struct {
		fence      int64
		wantFenced bool
		wantFence  int64
	}{{fence: 0, wantFenced: false, wantFence: 1}, {fence: 1, wantFenced: false, wantFence: 1}, {fence: 2, wantFenced: true, wantFence: 2}} {
		l, err := NewLedger(q, &quotav1alpha1.KarmadaQuotaLedger{
			LedgerState: quotav1alpha1.LedgerState{QuotaGeneration: tc.fence},
		})
		if err != nil {
			t.Fatal(err)
		}
		if l.Fenced() != tc.wantFenced {
			t.Errorf("fence %d on generation 1: Fenced() = %v, want %v", tc.fence, l.Fenced(), tc.wantFenced)
		}
		var out quotav1alpha1.KarmadaQuotaLedger
		l.WriteTo(&out)
		if out.QuotaGeneration != tc.wantFence {
			t.Errorf("fence %d on generation 1: written %d, want %d", tc.fence, out.QuotaGeneration, tc.wantFence)
		}
	}
}

// TestLedgerOf: a ledger counts for the quota that owns it, not for a deleted one's namesake.
func TestLedgerOf(t *testing.T) {
	q := utiltesting.MakeQuota("ns", "team").Obj()
	owned := utiltesting.MoveToLedger(q.DeepCopy())
	if LedgerOf(owned, q) != owned {
		t.Errorf("the quota's own ledger not recognised")
	}
	other := q.DeepCopy()
	other.UID = "uid-of-a-deleted-quota"
	if LedgerOf(owned, other) != nil {
		t.Errorf("a ledger owned by another quota of the same name was taken")
	}
	unowned := owned.DeepCopy()
	unowned.OwnerReferences = nil
	if LedgerOf(unowned, q) != nil || LedgerOf(nil, q) != nil {
		t.Errorf("a ledger without an owner, or none, was taken")
	}
}

// TestLedgerObject: a write starts from the quota's own ledger as stored, from nothing, or from one a deleted quota
// of the same name left, of which only its identity is kept.
func TestLedgerObject(t *testing.T) {
	q := utiltesting.MakeQuota("ns", "team").Obj()
	fresh := LedgerObject(q, nil)
	if fresh.Namespace != "ns" || fresh.Name != "team" || fresh.ResourceVersion != "" || LedgerOf(fresh, q) != fresh {
		t.Errorf("without a stored ledger: %+v, want a new one named as the quota and owned by it", fresh)
	}

	owned := utiltesting.MoveToLedger(q.DeepCopy())
	owned.ResourceVersion = "7"
	owned.Observed = &quotav1alpha1.LedgerObserved{Used: list("cpu", "1")}
	if got := LedgerObject(q, owned); got == owned || !cmp.Equal(got, owned) {
		t.Errorf("the quota's own ledger: %+v, want a copy of %+v", got, owned)
	}

	other := q.DeepCopy()
	other.UID = "uid-of-a-new-quota"
	replaced := LedgerObject(other, owned)
	if replaced.ResourceVersion != "7" || replaced.Observed != nil || LedgerOf(replaced, other) != replaced {
		t.Errorf("a ledger left by a deleted quota: %+v, want its resourceVersion, no usage of it, owned by the new quota", replaced)
	}
	if LedgerOf(owned, q) != owned {
		t.Error("replacing changed the stored object")
	}
}
