package v1alpha1

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func sampleReservations() map[string]Reservation {
	expires := metav1.NewTime(time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC))
	return map[string]Reservation{
		"a binding's": {
			ReservedBy: ReservationOwner{APIVersion: "work.karmada.io/v1alpha2", Kind: "ResourceBinding", Name: "web-deployment", UID: "6c1e0b1a-1d2e-4f00-8a4b-0c2d3e4f5a6b"},
			Generation: 2,
			Reserved: corev1.ResourceList{
				"memory": resource.MustParse("128Mi"), "cpu": resource.MustParse("1500m"),
				"example.com/gpu": resource.MustParse("1"), "requests.nvidia.com/gpu": resource.MustParse("2"),
			},
			Clusters: []ClusterReservation{
				{Name: "member2", Reserved: corev1.ResourceList{"cpu": resource.MustParse("1")}},
				{Name: "member1", Reserved: corev1.ResourceList{"cpu": resource.MustParse("500m"), "memory": resource.MustParse("64Mi")}},
			},
			ExpirationTime: expires,
		},
		"a Work's, in another namespace, reserving nothing federation-wide": {
			ReservedBy:     ReservationOwner{APIVersion: "work.karmada.io/v1alpha1", Kind: "Work", Namespace: "karmada-es-member1", Name: "web-687f7fb96f", UID: "uid-w"},
			Generation:     1,
			Reserved:       corev1.ResourceList{},
			Clusters:       []ClusterReservation{{Name: "member1", Reserved: corev1.ResourceList{}}},
			ExpirationTime: expires,
		},
	}
}

// TestReservationRoundTrip: a reservation is stored as one string and read back as it was written, and a string
// read and written again is the same string (the controller's settle tests the entry it read by its string).
func TestReservationRoundTrip(t *testing.T) {
	for name, r := range sampleReservations() {
		t.Run(name, func(t *testing.T) {
			data, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			var s string
			if err := json.Unmarshal(data, &s); err != nil {
				t.Fatalf("not stored as a string: %s", data)
			}
			var back Reservation
			if err := json.Unmarshal(data, &back); err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(r, back) {
				t.Errorf("read back (-written +read):\n%s", cmp.Diff(r, back))
			}
			if again := back.String(); again != s {
				t.Errorf("written again as %q, was %q", again, s)
			}
		})
	}
	got := sampleReservations()["a binding's"].String()
	want := "work.karmada.io/v1alpha2 ResourceBinding web-deployment 6c1e0b1a-1d2e-4f00-8a4b-0c2d3e4f5a6b 2 1795759200 " +
		"cpu=1500m,example.com/gpu=1,memory=128Mi,requests.nvidia.com/gpu=2 member2:cpu=1 member1:cpu=500m,memory=64Mi"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// TestReservationReadsObjectForm: a ledger written by a release before reservations were strings is read as it
// is; its next write stores strings.
func TestReservationReadsObjectForm(t *testing.T) {
	legacy := `{"reservations":[{"reservedBy":{"apiVersion":"work.karmada.io/v1alpha2","kind":"ResourceBinding","name":"web","uid":"uid-1"},` +
		`"generation":3,"reserved":{"cpu":"2"},"clusters":[{"name":"member1","reserved":{"cpu":"1"}}],"expirationTime":"2026-11-27T06:00:00Z"}]}`
	var l KarmadaQuotaLedger
	if err := json.Unmarshal([]byte(legacy), &l); err != nil {
		t.Fatal(err)
	}
	want := Reservation{
		ReservedBy:     ReservationOwner{APIVersion: "work.karmada.io/v1alpha2", Kind: "ResourceBinding", Name: "web", UID: "uid-1"},
		Generation:     3,
		Reserved:       corev1.ResourceList{"cpu": resource.MustParse("2")},
		Clusters:       []ClusterReservation{{Name: "member1", Reserved: corev1.ResourceList{"cpu": resource.MustParse("1")}}},
		ExpirationTime: metav1.NewTime(time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC)),
	}
	if len(l.Reservations) != 1 || !equality.Semantic.DeepEqual(l.Reservations[0], want) {
		t.Fatalf("read %+v, want %+v", l.Reservations, want)
	}
	data, err := json.Marshal(l.Reservations)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(data); got != `["work.karmada.io/v1alpha2 ResourceBinding web uid-1 3 1795759200 cpu=2 member1:cpu=1"]` {
		t.Errorf("written again as %s", got)
	}
}

// TestReservationUnstructured: code that handles ledgers as unstructured objects sees the string too.
func TestReservationUnstructured(t *testing.T) {
	l := &KarmadaQuotaLedger{LedgerState: LedgerState{Reservations: []Reservation{sampleReservations()["a binding's"]}}}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(l)
	if err != nil {
		t.Fatal(err)
	}
	list, _ := u["reservations"].([]any)
	if len(list) != 1 {
		t.Fatalf("reservations: %v", u["reservations"])
	}
	if s, ok := list[0].(string); !ok || s != l.Reservations[0].String() {
		t.Errorf("as unstructured: %#v", list[0])
	}
	var back KarmadaQuotaLedger
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, &back); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(l.Reservations, back.Reservations) {
		t.Errorf("from unstructured:\n%s", cmp.Diff(l.Reservations, back.Reservations))
	}
}

// TestReservationMalformed: a string that is not a reservation is an error that says what is wrong, never a
// reservation read as something else.
func TestReservationMalformed(t *testing.T) {
	for s, wantErr := range map[string]string{
		"":                                                  "separated by spaces",
		"v1 ResourceBinding web uid 1 2":                    "separated by spaces",
		"v1 ResourceBinding web uid x 2 cpu=1":              "generation",
		"v1 ResourceBinding web uid 1 x cpu=1":              "expiry",
		"v1 ResourceBinding web uid 1 2 cpu":                `"cpu" is not name=quantity`,
		"v1 ResourceBinding web uid 1 2 cpu=lots":           "cpu",
		"v1 ResourceBinding web uid 1 2 cpu=1,cpu=2":        "cpu is listed twice",
		"v1 ResourceBinding web uid 1 2 cpu=1 member1":      `"member1" is not <cluster>:<reserved>`,
		"v1 ResourceBinding web uid 1 2 cpu=1 member1:cpu=": "cluster member1",
		"v1 ResourceBinding  uid 1 2 cpu=1":                 "needs a name and a uid",
	} {
		_, err := ParseReservation(s)
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%q: got error %v, want one saying %q", s, err, wantErr)
		}
	}
	// In a ledger, an entry that is not a reservation is read as one that says so, and the ledger's other entries
	// as they are: an error would fail the decoding of every ledger an informer lists with it.
	var l KarmadaQuotaLedger
	good := sampleReservations()["a binding's"]
	data := `{"reservations":[42,"v1 ResourceBinding web uid x 2 cpu=1",` + strconv.Quote(good.String()) + `]}`
	if err := json.Unmarshal([]byte(data), &l); err != nil {
		t.Fatal(err)
	}
	if len(l.Reservations) != 3 {
		t.Fatalf("read %d entries, want 3", len(l.Reservations))
	}
	for i, want := range []string{"neither a string nor an object", "generation"} {
		if got := l.Reservations[i].Malformed; !strings.Contains(got, want) {
			t.Errorf("entry %d: Malformed %q, want it to say %q", i, got, want)
		}
	}
	if r := l.Reservations[2]; r.Malformed != "" || !equality.Semantic.DeepEqual(r, good) {
		t.Errorf("the well-formed entry read as %+v", r)
	}
}

// FuzzParseReservation: any string is read or refused, never a panic, and what is read is written back as a
// string that reads the same.
func FuzzParseReservation(f *testing.F) {
	for _, r := range sampleReservations() {
		f.Add(r.String())
	}
	f.Add("v1 K n u 1 2 - c:")
	f.Add("v1 K a/b/c u -1 -2 cpu=1e3")
	f.Fuzz(func(t *testing.T, s string) { rereads(t, s, ParseReservation) })
}

// rereads checks that s, if parse reads it, is written back as a string that reads the same.
func rereads[T fmt.Stringer](t *testing.T, s string, parse func(string) (T, error)) {
	t.Helper()
	read, err := parse(s)
	if err != nil {
		return
	}
	back, err := parse(read.String())
	if err != nil {
		t.Fatalf("%q read, written as %q, which does not read: %v", s, read.String(), err)
	}
	if !equality.Semantic.DeepEqual(read, back) {
		t.Fatalf("%q read as %+v, written and read again as %+v", s, read, back)
	}
}

// TestClusterUsedEncoding: a cluster's observed usage is stored as one string and read back as written; the object
// form releases before wrote is read and written again as a string; an entry that is neither is read as one whose
// Malformed says why, beside the ledger's other entries read as they are.
func TestClusterUsedEncoding(t *testing.T) {
	used := ClusterUsed{Name: "member1", Used: corev1.ResourceList{"memory": resource.MustParse("15Gi"), "cpu": resource.MustParse("1500m")}}
	data, err := json.Marshal(used)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(data); got != `"member1:cpu=1500m,memory=15Gi"` {
		t.Errorf("stored as %s", got)
	}
	var back ClusterUsed
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(used, back) {
		t.Errorf("read back (-written +read):\n%s", cmp.Diff(used, back))
	}
	if none := (ClusterUsed{Name: "member2"}).String(); none != "member2:-" {
		t.Errorf("nothing used written as %q", none)
	}

	legacy := `{"observed":{"used":{"cpu":"3"},"clusters":[{"name":"member1","used":{"cpu":"2"}},"member2:cpu=1",42,"member3",{"used":{}}]}}`
	var l KarmadaQuotaLedger
	if err := json.Unmarshal([]byte(legacy), &l); err != nil {
		t.Fatal(err)
	}
	got := l.Observed.Clusters
	if len(got) != 5 {
		t.Fatalf("read %d entries, want 5: %+v", len(got), got)
	}
	for i, want := range []ClusterUsed{
		{Name: "member1", Used: corev1.ResourceList{"cpu": resource.MustParse("2")}},
		{Name: "member2", Used: corev1.ResourceList{"cpu": resource.MustParse("1")}},
	} {
		if !equality.Semantic.DeepEqual(got[i], want) {
			t.Errorf("entry %d read as %+v, want %+v", i, got[i], want)
		}
	}
	for i, want := range map[int]string{2: "neither a string nor an object", 3: "is not <cluster>:<used>", 4: "without a cluster name"} {
		if !strings.Contains(got[i].Malformed, want) {
			t.Errorf("entry %d: Malformed %q, want it to say %q", i, got[i].Malformed, want)
		}
	}
	data, err = json.Marshal(l.Observed.Clusters[:2])
	if err != nil {
		t.Fatal(err)
	}
	if got := string(data); got != `["member1:cpu=2","member2:cpu=1"]` {
		t.Errorf("written again as %s", got)
	}

	for s, wantErr := range map[string]string{
		"":                    "is not <cluster>:<used>",
		":cpu=1":              "is not <cluster>:<used>",
		"member1:cpu=1 x":     "is not <cluster>:<used>",
		"member1:cpu=lots":    "cpu",
		"member1:cpu=1,cpu=2": "cpu is listed twice",
	} {
		if _, err := ParseClusterUsed(s); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%q: got error %v, want one saying %q", s, err, wantErr)
		}
	}
}

// FuzzParseClusterUsed: any string is read or refused, never a panic, and what is read is written back as a string
// that reads the same.
func FuzzParseClusterUsed(f *testing.F) {
	f.Add("member1:cpu=1500m,memory=15Gi")
	f.Add("member2:-")
	f.Add("a:b:c=1e3")
	f.Fuzz(func(t *testing.T, s string) { rereads(t, s, ParseClusterUsed) })
}
