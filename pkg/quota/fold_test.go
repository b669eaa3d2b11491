package quota

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

func TestFold(t *testing.T) {
	early, late := expires.Add(-time.Minute), expires.Add(time.Minute)
	base := utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "10", "pods", "10")).
		Reservation(web.Obj(), 2, list("cpu", "1", "pods", "2"), expires).
		Reservation(api.Obj(), 3, list("cpu", "2"), early).
		Reservation(batch.Obj(), 1, list("pods", "1"), late)

	cases := map[string]struct {
		quota      *quotav1alpha1.KarmadaQuota
		max        int
		wantFolded int
		wantState  state
	}{
		"within the bound nothing moves": {
			quota: base.Obj(), max: 3,
			wantState: state{
				Reserved: resources.List{requestsCPU: 3000, pods: 3},
				Reservations: []Reservation{
					reservation(web.Obj(), 2, resources.List{requestsCPU: 1000, pods: 2}, expires),
					reservation(api.Obj(), 3, resources.List{requestsCPU: 2000}, early),
					reservation(batch.Obj(), 1, resources.List{pods: 1}, late),
				},
			},
		},
		"past it the earliest expiries fold; the sum expires with the latest of them, and reserved is unchanged": {
			quota: base.Obj(), max: 1, wantFolded: 2,
			wantState: state{
				Reserved:     resources.List{requestsCPU: 3000, pods: 3},
				Reservations: []Reservation{reservation(batch.Obj(), 1, resources.List{pods: 1}, late)},
				Folded:       Folded{Count: 2, Amount: resources.List{requestsCPU: 3000, pods: 2}, Expires: expires},
			},
		},
		"folding adds to what was folded before, keeping its later expiry": {
			quota: base.Clone().Folded(5, list("cpu", "4"), late.Add(time.Minute)).Obj(), max: 2, wantFolded: 1,
			wantState: state{
				Reserved: resources.List{requestsCPU: 7000, pods: 3},
				Reservations: []Reservation{
					reservation(web.Obj(), 2, resources.List{requestsCPU: 1000, pods: 2}, expires),
					reservation(batch.Obj(), 1, resources.List{pods: 1}, late),
				},
				Folded: Folded{Count: 6, Amount: resources.List{requestsCPU: 6000}, Expires: late.Add(time.Minute)},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l := newLedger(t, tc.quota)
			if got := l.Fold(tc.max); got != tc.wantFolded {
				t.Errorf("Fold = %d, want %d", got, tc.wantFolded)
			}
			got := stateOf(l)
			got.Hard, got.UserName, got.Used = nil, nil, nil
			if diff := cmp.Diff(tc.wantState, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("ledger (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExpireFolded(t *testing.T) {
	q := utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "10")).
		Reservation(web.Obj(), 2, list("cpu", "1"), expires).
		Folded(3, list("cpu", "2"), expires).Obj()

	l := newLedger(t, q)
	if _, dropped := l.ExpireFolded(expires); dropped {
		t.Errorf("ExpireFolded at the expiry itself dropped the sum; it lapses strictly after")
	}
	gone, dropped := l.ExpireFolded(expires.Add(time.Second))
	if !dropped {
		t.Fatalf("ExpireFolded after the expiry kept the sum")
	}
	if diff := cmp.Diff(Folded{Count: 3, Amount: resources.List{requestsCPU: 2000}, Expires: expires}, gone); diff != "" {
		t.Errorf("dropped (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(resources.List{requestsCPU: 1000}, l.Reserved()); diff != "" {
		t.Errorf("reserved after the drop (-want +got):\n%s", diff)
	}
	if _, dropped := l.ExpireFolded(expires.Add(time.Hour)); dropped {
		t.Errorf("nothing left to drop, yet ExpireFolded dropped something")
	}
}

// TestFoldedRoundTrip reads a folded sum from the ledger object and writes it back as it was; a folded sum an
// earlier release's webhook left in the quota's status counts too, and stays there (never moved into the ledger,
// where a repeated move would count it twice) until it expires.
func TestFoldedRoundTrip(t *testing.T) {
	q := utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "10", "pods", "10")).
		Reservation(web.Obj(), 2, list("cpu", "1"), expires).
		Folded(7, list("requests.cpu", "2500m", "pods", "7"), expires).Obj()
	stored := utiltesting.MoveToLedger(q)
	l, err := NewLedger(q, stored)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(resources.List{requestsCPU: 3500, pods: 7}, l.Reserved()); diff != "" {
		t.Errorf("reserved counts the folded sum (-want +got):\n%s", diff)
	}
	var written quotav1alpha1.KarmadaQuotaLedger
	l.WriteTo(&written)
	want := &quotav1alpha1.FoldedReservations{Count: 7, Reserved: list("cpu", "2500m", "pods", "7"), ExpirationTime: metav1.NewTime(expires)}
	quantity := cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })
	if diff := cmp.Diff(want, written.FoldedReservations, quantity); diff != "" {
		t.Errorf("foldedReservations (-want +got):\n%s", diff)
	}
	if l.StatusFolded() != nil {
		t.Errorf("a folded sum of the ledger rendered into status: %+v", l.StatusFolded())
	}

	// In status too (an earlier release's webhook folded there): both count, each stays where it is.
	legacy := q.DeepCopy()
	legacy.Status.FoldedReservations = &quotav1alpha1.FoldedReservations{Count: 2, Reserved: list("pods", "2"), ExpirationTime: metav1.NewTime(expires.Add(time.Minute))}
	both, err := NewLedger(legacy, &written)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(resources.List{requestsCPU: 3500, pods: 9}, both.Reserved()); diff != "" {
		t.Errorf("reserved with both folded sums (-want +got):\n%s", diff)
	}
	var again quotav1alpha1.KarmadaQuotaLedger
	both.WriteTo(&again)
	if diff := cmp.Diff(written.FoldedReservations, again.FoldedReservations, quantity); diff != "" {
		t.Errorf("the ledger's folded sum changed by reading status's (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(legacy.Status.FoldedReservations, both.StatusFolded(), quantity); diff != "" {
		t.Errorf("status's folded sum (-want +got):\n%s", diff)
	}
	if f := both.Folded(); f.Count != 9 || !f.Expires.Equal(expires.Add(time.Minute)) {
		t.Errorf("Folded() = %+v, want 9 expiring at the later expiry", f)
	}

	// Each expires on its own.
	dropped, ok := both.ExpireFolded(expires.Add(time.Second))
	if !ok || dropped.Count != 7 {
		t.Errorf("at the ledger's expiry dropped %+v, want its 7", dropped)
	}
	both.WriteTo(&again)
	if again.FoldedReservations != nil || both.StatusFolded() == nil {
		t.Errorf("after the ledger's sum expired: ledger %+v, status %+v; want none and status's kept", again.FoldedReservations, both.StatusFolded())
	}
	if dropped, ok := both.ExpireFolded(expires.Add(time.Minute + time.Second)); !ok || dropped.Count != 2 || both.StatusFolded() != nil {
		t.Errorf("at status's expiry dropped %+v, status keeps %+v", dropped, both.StatusFolded())
	}
}

// TestMaxReservationsInSchema holds the CRD's bound on status.reservations to MaxReservations: the apiserver then
// refuses a longer list with a clear error, and the constant and the schema cannot drift apart.
func TestMaxReservationsInSchema(t *testing.T) {
	schemaOf := func(file string) apiextensionsv1.JSONSchemaProps {
		t.Helper()
		raw, err := os.ReadFile(filepath.Join("..", "..", "deploy", "charts", "karmada-quota", "files", "crds", file))
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(raw, &crd); err != nil {
			t.Fatal(err)
		}
		if len(crd.Spec.Versions) != 1 {
			t.Fatalf("%s: %d versions, want 1", file, len(crd.Spec.Versions))
		}
		return *crd.Spec.Versions[0].Schema.OpenAPIV3Schema
	}
	ledger := schemaOf("quota.karmada.io_karmadaquotaledgers.yaml")
	reservations, ok := ledger.Properties["reservations"]
	if !ok {
		t.Fatal("no reservations in the ledger's schema")
	}
	if reservations.MaxItems == nil || *reservations.MaxItems != MaxReservations {
		t.Errorf("the ledger's reservations maxItems = %v, want %d (MaxReservations)", reservations.MaxItems, MaxReservations)
	}
	if _, ok := ledger.Properties["foldedReservations"]; !ok {
		t.Errorf("no foldedReservations in the ledger's schema: the apiserver would prune folded sums")
	}
	// A quota's status takes no new reservation: a webhook of a release before the ledger fails closed.
	status := schemaOf("quota.karmada.io_karmadaquotas.yaml").Properties["status"]
	if legacy, ok := status.Properties["reservations"]; !ok || legacy.MaxItems == nil || *legacy.MaxItems != 0 {
		t.Errorf("status.reservations in the quota's schema: %+v, want maxItems 0", legacy.MaxItems)
	}
}
