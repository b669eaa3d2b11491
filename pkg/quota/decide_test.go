package quota

import (
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"k8s.io/apimachinery/pkg/types"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

// writeOf is the write of rb from old (nil: a create), as the binding webhook asks for it.
func writeOf(t *testing.T, rb, old *workv1alpha2.ResourceBinding) Write {
	t.Helper()
	w := Write{Key: keyOf(rb), Owner: utiltesting.ReservationOwner(rb), New: usageOf(t, rb)}
	if old != nil {
		u := usageOf(t, old)
		w.Old = &u
	}
	return w
}

func dryRunOf(w Write) Write {
	w.DryRun = true
	return w
}

func cannotCommit(w Write) Write {
	w.CannotCommit = true
	return w
}

// outcome is what a decision says, in comparable form: per write the quotas refusing it, per ledger whether it
// changed and which keys it would record as landed.
type outcome struct {
	Refused    [][]string
	Changed    []bool
	Undo       []map[Key]Undo
	RolledBack int
	Folded     int
}

func outcomeOf(d Decision) outcome {
	o := outcome{Changed: d.Changed, Undo: d.Undo, RolledBack: d.RolledBack, Folded: d.Folded}
	for _, denials := range d.Denials {
		var names []string
		for _, denial := range denials {
			names = append(names, denial.Quota)
		}
		o.Refused = append(o.Refused, names)
	}
	return o
}

func TestDecide(t *testing.T) {
	webV1 := web.Clone().Requests(list("cpu", "1"))
	apiV1 := api.Clone().Requests(list("cpu", "1"))
	cpu := utiltesting.MakeQuota("ns", "a-cpu").Hard(list("cpu", "4"))
	podQuota := utiltesting.MakeQuota("ns", "b-pods").Hard(list("pods", "2"))
	later := expires.Add(time.Minute)
	webKey, apiKey := keyOf(webV1.Clone().Generation(2).Obj()), keyOf(apiV1.Clone().Generation(2).Obj())

	cases := map[string]struct {
		quotas  []*quotav1alpha1.KarmadaQuota
		writes  func(t *testing.T) []Write
		written Written
		max     int
		want    outcome
		// wantStates are the ledgers afterwards.
		wantStates []state
	}{
		"writes are decided in order, each against what the earlier ones reserved": {
			quotas: []*quotav1alpha1.KarmadaQuota{cpu.Obj()},
			writes: func(t *testing.T) []Write {
				return []Write{
					writeOf(t, webV1.Clone().Generation(2).Cluster("member1", 3).Obj(), webV1.Obj()),
					writeOf(t, apiV1.Clone().Generation(2).Cluster("member1", 2).Obj(), apiV1.Obj()),
				}
			},
			want: outcome{
				Refused: [][]string{nil, {"a-cpu"}},
				Changed: []bool{true},
				Undo:    []map[Key]Undo{{webKey: {Wrote: reservation(web.Obj(), 2, resources.List{requestsCPU: 3000}, later)}}},
			},
			wantStates: []state{{
				Reserved:     resources.List{requestsCPU: 3000},
				Reservations: []Reservation{reservation(web.Obj(), 2, resources.List{requestsCPU: 3000}, later)},
			}},
		},
		"all or nothing: a write one quota refuses is reserved in none": {
			quotas: []*quotav1alpha1.KarmadaQuota{cpu.Obj(), podQuota.Obj()},
			writes: func(t *testing.T) []Write {
				return []Write{writeOf(t, webV1.Clone().Generation(2).Cluster("member1", 3).Obj(), webV1.Obj())}
			},
			want: outcome{Refused: [][]string{{"b-pods"}}, Changed: []bool{false, false}, Undo: []map[Key]Undo{nil, nil}},
			wantStates: []state{
				{Reserved: resources.List{}},
				{Reserved: resources.List{}},
			},
		},
		"a dry run is decided and reserves nothing": {
			quotas: []*quotav1alpha1.KarmadaQuota{cpu.Obj()},
			writes: func(t *testing.T) []Write {
				return []Write{
					dryRunOf(writeOf(t, webV1.Clone().Generation(2).Cluster("member1", 3).Obj(), webV1.Obj())),
					dryRunOf(writeOf(t, apiV1.Clone().Generation(2).Cluster("member1", 5).Obj(), apiV1.Obj())),
				}
			},
			want:       outcome{Refused: [][]string{nil, {"a-cpu"}}, Changed: []bool{false}, Undo: []map[Key]Undo{nil}},
			wantStates: []state{{Reserved: resources.List{}}},
		},
		"an attempt that cannot commit is admitted and reserves nothing, whatever it asks": {
			quotas: []*quotav1alpha1.KarmadaQuota{cpu.Obj()},
			writes: func(t *testing.T) []Write {
				return []Write{cannotCommit(writeOf(t, webV1.Clone().Generation(2).Cluster("member1", 9).Obj(), webV1.Obj()))}
			},
			want:       outcome{Refused: [][]string{nil}, Changed: []bool{false}, Undo: []map[Key]Undo{nil}},
			wantStates: []state{{Reserved: resources.List{}}},
		},
		"the same write admitted again merges into its reservation and changes nothing": {
			quotas: []*quotav1alpha1.KarmadaQuota{cpu.Clone().Reservation(web.Obj(), 2, list("cpu", "3"), expires).Obj()},
			writes: func(t *testing.T) []Write {
				return []Write{writeOf(t, webV1.Clone().Generation(2).Cluster("member1", 3).Obj(), webV1.Obj())}
			},
			want: outcome{Refused: [][]string{nil}, Changed: []bool{false}, Undo: []map[Key]Undo{nil}},
			wantStates: []state{{
				Reserved:     resources.List{requestsCPU: 3000},
				Reservations: []Reservation{reservation(web.Obj(), 2, resources.List{requestsCPU: 3000}, expires)},
			}},
		},
		"a write refused on a later attempt gets back what an earlier attempt reserved for it": {
			// The first attempt reserved 3 at a-cpu; the race it lost was to another writer that filled b-pods.
			quotas: []*quotav1alpha1.KarmadaQuota{
				cpu.Clone().Reservation(web.Obj(), 2, list("cpu", "3"), expires).Obj(),
				podQuota.Clone().Used(list("pods", "1")).Obj(),
			},
			writes: func(t *testing.T) []Write {
				return []Write{writeOf(t, webV1.Clone().Generation(2).Cluster("member1", 3).Obj(), webV1.Obj())}
			},
			written: Written{{Namespace: "ns", Name: "a-cpu"}: {webKey: {Wrote: reservation(web.Obj(), 2, resources.List{requestsCPU: 3000}, expires)}}},
			want: outcome{
				Refused: [][]string{{"b-pods"}}, Changed: []bool{true, false}, Undo: []map[Key]Undo{nil, nil}, RolledBack: 1,
			},
			wantStates: []state{
				{Reserved: resources.List{requestsCPU: 0}},
				{Used: resources.List{pods: 1}, Reserved: resources.List{}},
			},
		},
		"a key shared by an admitted and a refused write keeps the admitted write's charge": {
			// Two writers raced from the same version of web: both ask under generation 2. The first attempt
			// reserved the small one at a-cpu; now the small one is admitted again and the big one refused.
			quotas: []*quotav1alpha1.KarmadaQuota{cpu.Clone().Reservation(web.Obj(), 2, list("cpu", "1"), expires).Obj()},
			writes: func(t *testing.T) []Write {
				return []Write{
					writeOf(t, webV1.Clone().Generation(2).Cluster("member1", 1).Obj(), webV1.Obj()),
					writeOf(t, webV1.Clone().Generation(2).Cluster("member1", 5).Obj(), webV1.Obj()),
				}
			},
			written: Written{{Namespace: "ns", Name: "a-cpu"}: {webKey: {Wrote: reservation(web.Obj(), 2, resources.List{requestsCPU: 1000}, expires)}}},
			want:    outcome{Refused: [][]string{nil, {"a-cpu"}}, Changed: []bool{false}, Undo: []map[Key]Undo{nil}},
			wantStates: []state{{
				Reserved:     resources.List{requestsCPU: 1000},
				Reservations: []Reservation{reservation(web.Obj(), 2, resources.List{requestsCPU: 1000}, expires)},
			}},
		},
		"an undo keeps the state before the batch's first attempt": {
			quotas: []*quotav1alpha1.KarmadaQuota{cpu.Clone().Reservation(web.Obj(), 2, list("cpu", "1"), expires).Obj()},
			writes: func(t *testing.T) []Write {
				return []Write{writeOf(t, webV1.Clone().Generation(2).Cluster("member1", 2).Obj(), webV1.Obj())}
			},
			written: Written{{Namespace: "ns", Name: "a-cpu"}: {webKey: {Wrote: reservation(web.Obj(), 2, resources.List{requestsCPU: 1000}, expires)}}},
			want: outcome{
				Refused: [][]string{nil},
				Changed: []bool{true},
				// No prior: the earlier attempt created the key.
				Undo: []map[Key]Undo{{webKey: {Wrote: reservation(web.Obj(), 2, resources.List{requestsCPU: 2000}, expires)}}},
			},
			wantStates: []state{{
				Reserved:     resources.List{requestsCPU: 2000},
				Reservations: []Reservation{reservation(web.Obj(), 2, resources.List{requestsCPU: 2000}, expires)},
			}},
		},
		"a changed list past the bound folds its oldest reservations": {
			quotas: []*quotav1alpha1.KarmadaQuota{cpu.Clone().
				Reservation(batch.Obj(), 2, list("cpu", "500m"), expires.Add(-time.Minute)).
				Reservation(web.Obj(), 2, list("cpu", "1"), expires).Obj()},
			writes: func(t *testing.T) []Write {
				return []Write{writeOf(t, apiV1.Clone().Generation(2).Cluster("member1", 1).Obj(), apiV1.Obj())}
			},
			max: 1,
			want: outcome{
				Refused: [][]string{nil},
				Changed: []bool{true},
				Undo:    []map[Key]Undo{{apiKey: {Wrote: reservation(api.Obj(), 2, resources.List{requestsCPU: 1000}, later)}}},
				Folded:  2,
			},
			wantStates: []state{{
				Reserved:     resources.List{requestsCPU: 2500},
				Reservations: []Reservation{reservation(api.Obj(), 2, resources.List{requestsCPU: 1000}, later)},
				Folded:       Folded{Count: 2, Amount: resources.List{requestsCPU: 1500}, Expires: expires},
			}},
		},
		"a list within the bound is not folded, nor is one that did not change": {
			quotas: []*quotav1alpha1.KarmadaQuota{cpu.Clone().
				Reservation(batch.Obj(), 2, list("cpu", "500m"), expires).
				Reservation(web.Obj(), 2, list("cpu", "1"), expires).Obj()},
			writes: func(t *testing.T) []Write {
				return []Write{writeOf(t, apiV1.Clone().Generation(2).Cluster("member1", 9).Obj(), apiV1.Obj())}
			},
			max:  1,
			want: outcome{Refused: [][]string{{"a-cpu"}}, Changed: []bool{false}, Undo: []map[Key]Undo{nil}},
			wantStates: []state{{
				Reserved: resources.List{requestsCPU: 1500},
				Reservations: []Reservation{
					reservation(batch.Obj(), 2, resources.List{requestsCPU: 500}, expires),
					reservation(web.Obj(), 2, resources.List{requestsCPU: 1000}, expires),
				},
			}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ledgers := make([]*Ledger, len(tc.quotas))
			for i, q := range tc.quotas {
				ledgers[i] = newLedger(t, q)
			}
			written := tc.written
			if written == nil {
				written = Written{}
			}
			d := Decide(ledgers, tc.writes(t), written, Policy{Expires: later, MaxReservations: tc.max})
			if diff := cmp.Diff(tc.want, outcomeOf(d), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("decision (-want +got):\n%s", diff)
			}
			for i, l := range ledgers {
				got := stateOf(l)
				got.Hard, got.UserName = nil, nil
				if got.Used == nil {
					got.Used = resources.List{}
				}
				sort.Slice(got.Reservations, func(a, b int) bool { return got.Reservations[a].Owner.Name < got.Reservations[b].Owner.Name })
				if diff := cmp.Diff(tc.wantStates[i], got, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("ledger %s (-want +got):\n%s", l.Name, diff)
				}
			}
		})
	}
}

// TestWrittenLanded keeps, across attempts, the first prior of a key and the last thing written under it.
func TestWrittenLanded(t *testing.T) {
	key := keyOf(web.Obj())
	prior := reservation(web.Obj(), 1, resources.List{requestsCPU: 1}, expires)
	team := types.NamespacedName{Namespace: "ns", Name: "team"}
	w := Written{}
	w.Landed(team, nil)
	w.Landed(team, map[Key]Undo{key: {Prior: &prior, Wrote: reservation(web.Obj(), 1, resources.List{requestsCPU: 2}, expires)}})
	w.Landed(team, map[Key]Undo{key: {Prior: &prior, Wrote: reservation(web.Obj(), 1, resources.List{requestsCPU: 3}, expires)}})
	want := Written{team: {key: {Prior: &prior, Wrote: reservation(web.Obj(), 1, resources.List{requestsCPU: 3}, expires)}}}
	if diff := cmp.Diff(want, w); diff != "" {
		t.Errorf("written (-want +got):\n%s", diff)
	}
}

func TestFreshness(t *testing.T) {
	webV1 := web.Clone().Requests(list("cpu", "1"))
	v2 := webV1.Clone().Generation(2).Cluster("member1", 2)
	team := utiltesting.MakeQuota("ns", "team").Hard(list("cpu", "10"))
	other := utiltesting.MakeQuota("ns", "other").Hard(list("pods", "10"))

	cases := map[string]struct {
		quotas []*quotav1alpha1.KarmadaQuota
		write  func(t *testing.T) Write
		want   Freshness
	}{
		"an update whose key holds nothing yet is fresh: the common case, no read": {
			quotas: []*quotav1alpha1.KarmadaQuota{team.Obj()},
			write:  func(t *testing.T) Write { return writeOf(t, v2.Obj(), webV1.Obj()) },
			want:   Fresh,
		},
		"a create is fresh": {
			quotas: []*quotav1alpha1.KarmadaQuota{team.Clone().Reservation(web.Obj(), 5, list("cpu", "1"), expires).Obj()},
			write: func(t *testing.T) Write {
				return writeOf(t, webV1.Clone().Generation(1).Cluster("member1", 2).Obj(), nil)
			},
			want: Fresh,
		},
		"a dry run is fresh: it writes nothing either way": {
			quotas: []*quotav1alpha1.KarmadaQuota{team.Clone().Reservation(web.Obj(), 3, list("cpu", "1"), expires).Obj()},
			write:  func(t *testing.T) Write { return dryRunOf(writeOf(t, v2.Obj(), webV1.Obj())) },
			want:   Fresh,
		},
		"a reservation of the binding for a later generation proves the attempt stale": {
			quotas: []*quotav1alpha1.KarmadaQuota{other.Obj(), team.Clone().Reservation(web.Obj(), 3, list("cpu", "1"), expires).Obj()},
			write:  func(t *testing.T) Write { return writeOf(t, v2.Obj(), webV1.Obj()) },
			want:   Stale,
		},
		"another binding's later generation proves nothing": {
			quotas: []*quotav1alpha1.KarmadaQuota{team.Clone().Reservation(api.Obj(), 3, list("cpu", "1"), expires).Obj()},
			write:  func(t *testing.T) Write { return writeOf(t, v2.Obj(), webV1.Obj()) },
			want:   Fresh,
		},
		"the key already holding less than the attempt asks is ambiguous": {
			quotas: []*quotav1alpha1.KarmadaQuota{team.Clone().Reservation(web.Obj(), 2, list("cpu", "1"), expires).Obj()},
			write:  func(t *testing.T) Write { return writeOf(t, v2.Obj(), webV1.Obj()) },
			want:   Ambiguous,
		},
		"the key already holding what the attempt asks is fresh: a repeat changes nothing": {
			quotas: []*quotav1alpha1.KarmadaQuota{team.Clone().Reservation(web.Obj(), 2, list("cpu", "2"), expires).Obj()},
			write:  func(t *testing.T) Write { return writeOf(t, v2.Obj(), webV1.Obj()) },
			want:   Fresh,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ledgers := make([]*Ledger, len(tc.quotas))
			for i, q := range tc.quotas {
				ledgers[i] = newLedger(t, q)
			}
			if got := tc.write(t).Freshness(ledgers); got != tc.want {
				t.Errorf("Freshness = %v, want %v", got, tc.want)
			}
		})
	}
}
