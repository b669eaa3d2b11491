package quotaio

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
)

// TestSettlePatch: a write that only removes reservations and replaces the observed usage is a patch that tests
// what it removes, by index, from the last; any other write is not. How the apiserver applies and refuses it is
// proven against a real one (test/integration/api).
func TestSettlePatch(t *testing.T) {
	expires := metav1.NewTime(time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC))
	reservation := func(name string) quotav1alpha1.Reservation {
		return quotav1alpha1.Reservation{
			ReservedBy:     quotav1alpha1.ReservationOwner{APIVersion: "work.karmada.io/v1alpha2", Kind: "ResourceBinding", Name: name, UID: types.UID("uid-" + name)},
			Generation:     1,
			Reserved:       corev1.ResourceList{"cpu": resource.MustParse("1")},
			ExpirationTime: expires,
		}
	}
	stored := &quotav1alpha1.KarmadaQuotaLedger{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "team", UID: "uid-ledger", ResourceVersion: "7"},
		LedgerState: quotav1alpha1.LedgerState{
			QuotaGeneration:  2,
			Observed:         &quotav1alpha1.LedgerObserved{Used: corev1.ResourceList{"cpu": resource.MustParse("1")}},
			Reservations:     []quotav1alpha1.Reservation{reservation("a"), reservation("b"), reservation("c")},
			ReservationCount: 3,
		},
	}
	settled := func(change func(*quotav1alpha1.KarmadaQuotaLedger)) *quotav1alpha1.KarmadaQuotaLedger {
		obj := stored.DeepCopy()
		obj.Reservations = []quotav1alpha1.Reservation{reservation("b")}
		obj.ReservationCount = 1
		obj.Observed = &quotav1alpha1.LedgerObserved{Used: corev1.ResourceList{"cpu": resource.MustParse("3")}}
		if change != nil {
			change(obj)
		}
		return obj
	}

	data, ok := settlePatch(stored, settled(nil))
	if !ok {
		t.Fatal("a settle is not a patch")
	}
	var got []map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{
		{"op": "test", "path": "/metadata/uid", "value": "uid-ledger"},
		{"op": "test", "path": "/quotaGeneration", "value": 2.0},
		// 2026-11-27T06:00:00Z is 1795759200 seconds after the epoch.
		{"op": "test", "path": "/reservations/2", "value": "work.karmada.io/v1alpha2 ResourceBinding c uid-c 1 1795759200 cpu=1"},
		{"op": "remove", "path": "/reservations/2"},
		{"op": "test", "path": "/reservations/0", "value": "work.karmada.io/v1alpha2 ResourceBinding a uid-a 1 1795759200 cpu=1"},
		{"op": "remove", "path": "/reservations/0"},
		{"op": "add", "path": "/observed", "value": map[string]any{"used": map[string]any{"cpu": "3"}}},
		{"op": "add", "path": "/reservationCount", "value": 1.0},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("patch (-want +got):\n%s", diff)
	}

	for name, change := range map[string]func(*quotav1alpha1.KarmadaQuotaLedger){
		"a reservation added": func(l *quotav1alpha1.KarmadaQuotaLedger) {
			l.Reservations = append(l.Reservations, reservation("d"))
		},
		"the reservations reordered": func(l *quotav1alpha1.KarmadaQuotaLedger) {
			l.Reservations = []quotav1alpha1.Reservation{reservation("c"), reservation("b")}
		},
		"a kept reservation changed": func(l *quotav1alpha1.KarmadaQuotaLedger) {
			l.Reservations[0].Reserved = corev1.ResourceList{"cpu": resource.MustParse("2")}
		},
		"the folded sum changed": func(l *quotav1alpha1.KarmadaQuotaLedger) {
			l.FoldedReservations = &quotav1alpha1.FoldedReservations{Count: 1, ExpirationTime: expires}
		},
		"the fence raised": func(l *quotav1alpha1.KarmadaQuotaLedger) { l.QuotaGeneration = 3 },
		"the owner changed": func(l *quotav1alpha1.KarmadaQuotaLedger) {
			l.OwnerReferences = []metav1.OwnerReference{{Name: "new-quota", UID: "uid-new-quota"}}
		},
		"the observed usage dropped": func(l *quotav1alpha1.KarmadaQuotaLedger) { l.Observed = nil },
	} {
		if _, ok := settlePatch(stored, settled(change)); ok {
			t.Errorf("%s: written as a settle patch, want a whole write", name)
		}
	}
	for name, change := range map[string]func(*quotav1alpha1.KarmadaQuotaLedger){
		"no UID":   func(l *quotav1alpha1.KarmadaQuotaLedger) { l.UID = "" },
		"no fence": func(l *quotav1alpha1.KarmadaQuotaLedger) { l.QuotaGeneration = 0 },
	} {
		unfenced := stored.DeepCopy()
		change(unfenced)
		obj := settled(nil)
		change(obj)
		if _, ok := settlePatch(unfenced, obj); ok {
			t.Errorf("stored with %s: written as a settle patch, which could not test it", name)
		}
	}
}
