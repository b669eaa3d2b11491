package controller

import (
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/metrics"
	"github.com/karmada-quota/karmada-quota/pkg/quota"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

var teamKey = types.NamespacedName{Namespace: ns, Name: "team"}

// written is a status as the controller writes it.
func written() *quotav1alpha1.KarmadaQuotaStatus {
	return &quotav1alpha1.KarmadaQuotaStatus{
		ObservedGeneration: 1,
		Hard:               list("cpu", "10", "pods", "20"),
		Used:               list("cpu", "1500m", "pods", "3"),
		Reserved:           list("cpu", "0", "pods", "0"),
		Clusters: []quotav1alpha1.ClusterUsage{
			{Name: "member1", Used: list("cpu", "1", "pods", "2")},
			{Name: "member2", Used: list("cpu", "500m", "pods", "1")},
		},
		Summary:    "cpu: 1500m/10, pods: 3/20",
		Conditions: []metav1.Condition{ready(1, t0)},
	}
}

// recordStatus records a quota holding status, with a ledger parsed from it.
// teamUID is the UID of the quota recordStatus records.
const teamUID = types.UID("uid-team")

func recordStatus(t *testing.T, s *state, status *quotav1alpha1.KarmadaQuotaStatus) bool {
	t.Helper()
	q := utiltesting.MakeQuota(ns, "team").Hard(status.Hard).Obj()
	q.UID = teamUID
	q.Status = *status.DeepCopy()
	ledger, err := quota.NewLedger(q, nil)
	if err != nil {
		t.Fatalf("NewLedger: %v", err)
	}
	used, err := resources.Parse(status.Used)
	if err != nil {
		t.Fatalf("Parse(%v): %v", status.Used, err)
	}
	return s.record(teamKey, q, &q.Status, nil, ledger.Headroom(used), nil, quota.Waiting{})
}

// waitingSince is what a recount finds waiting: bindings of the given UIDs (needing nothing the test looks at),
// refused first at since.
func waitingSince(since time.Time, uids ...types.UID) quota.Waiting {
	w := quota.Waiting{Since: since}
	for _, uid := range uids {
		w.Bindings = append(w.Bindings, quota.WaitingBinding{Binding: &workv1alpha2.ResourceBinding{ObjectMeta: metav1.ObjectMeta{UID: uid}}})
	}
	return w
}

func TestStateDrifted(t *testing.T) {
	cases := map[string]struct {
		edit func(*quotav1alpha1.KarmadaQuotaStatus)
		want bool
	}{
		"unchanged": {
			edit: func(*quotav1alpha1.KarmadaQuotaStatus) {},
		},
		"the same amounts, written differently": {
			edit: func(s *quotav1alpha1.KarmadaQuotaStatus) {
				s.Used = list("cpu", "1.5", "pods", "3")
				s.Clusters[0].Used = list("cpu", "1000m", "pods", "2")
			},
		},
		"used changed": {
			edit: func(s *quotav1alpha1.KarmadaQuotaStatus) { s.Used = list("cpu", "0", "pods", "3") },
			want: true,
		},
		"used lost a resource": {
			edit: func(s *quotav1alpha1.KarmadaQuotaStatus) { delete(s.Used, "pods") },
			want: true,
		},
		"hard changed": {
			edit: func(s *quotav1alpha1.KarmadaQuotaStatus) { s.Hard = list("cpu", "100", "pods", "20") },
			want: true,
		},
		"a cluster's usage changed": {
			edit: func(s *quotav1alpha1.KarmadaQuotaStatus) { s.Clusters[1].Used = list("cpu", "2", "pods", "1") },
			want: true,
		},
		"a cluster removed": {
			edit: func(s *quotav1alpha1.KarmadaQuotaStatus) { s.Clusters = s.Clusters[:1] },
			want: true,
		},
		"reservations added by the webhook": {
			edit: func(s *quotav1alpha1.KarmadaQuotaStatus) {
				s.Reservations = []quotav1alpha1.Reservation{{
					ReservedBy: utiltesting.ReservationOwner(utiltesting.MakeBinding(ns, "web").Obj()), Generation: 1,
					Reserved: list("cpu", "1"), ExpirationTime: metav1.NewTime(t0.Add(time.Minute)),
				}}
				s.Reserved = list("cpu", "1", "pods", "0")
			},
		},
		"summary, conditions and observedGeneration, which only the controller writes and drift does not read": {
			edit: func(s *quotav1alpha1.KarmadaQuotaStatus) {
				s.Summary = ""
				s.Conditions = nil
				s.ObservedGeneration = 7
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := newState()
			read := written()
			tc.edit(read)
			if s.drifted(teamKey, teamUID, read) {
				t.Fatal("drifted before anything was recorded")
			}

			recordStatus(t, s, written())

			if got := s.drifted(teamKey, teamUID, read); got != tc.want {
				t.Errorf("drifted = %v, want %v", got, tc.want)
			}
			if s.drifted(types.NamespacedName{Namespace: ns, Name: "other"}, teamUID, read) {
				t.Error("drifted for a quota never recorded")
			}
			if s.drifted(teamKey, "uid-of-a-recreated-quota", read) {
				t.Error("drifted for a quota deleted and recreated under the same name: its fresh status is no drift")
			}
		})
	}
}

// TestStateRecord reports headroom growth: the moment to requeue waiting bindings.
func TestStateRecord(t *testing.T) {
	base := func() *quotav1alpha1.KarmadaQuotaStatus {
		return &quotav1alpha1.KarmadaQuotaStatus{Hard: list("cpu", "10", "pods", "20"), Used: list("cpu", "4", "pods", "8")}
	}
	withReservation := func(s *quotav1alpha1.KarmadaQuotaStatus, amount corev1.ResourceList) *quotav1alpha1.KarmadaQuotaStatus {
		s.Reservations = append(s.Reservations, quotav1alpha1.Reservation{
			ReservedBy: utiltesting.ReservationOwner(utiltesting.MakeBinding(ns, "web").Obj()), Generation: 1,
			Reserved: amount, ExpirationTime: metav1.NewTime(t0.Add(time.Minute)),
		})
		return s
	}
	cases := map[string]struct {
		next *quotav1alpha1.KarmadaQuotaStatus
		want bool
	}{
		"unchanged": {
			next: base(),
		},
		"used grew": {
			next: &quotav1alpha1.KarmadaQuotaStatus{Hard: list("cpu", "10", "pods", "20"), Used: list("cpu", "5", "pods", "9")},
		},
		"used dropped": {
			next: &quotav1alpha1.KarmadaQuotaStatus{Hard: list("cpu", "10", "pods", "20"), Used: list("cpu", "3500m", "pods", "8")},
			want: true,
		},
		"one resource dropped, another grew": {
			next: &quotav1alpha1.KarmadaQuotaStatus{Hard: list("cpu", "10", "pods", "20"), Used: list("cpu", "5", "pods", "7")},
			want: true,
		},
		"hard raised": {
			next: &quotav1alpha1.KarmadaQuotaStatus{Hard: list("cpu", "10", "pods", "30"), Used: list("cpu", "4", "pods", "8")},
			want: true,
		},
		"hard lowered": {
			next: &quotav1alpha1.KarmadaQuotaStatus{Hard: list("cpu", "5", "pods", "20"), Used: list("cpu", "4", "pods", "8")},
		},
		"a limit removed": {
			next: &quotav1alpha1.KarmadaQuotaStatus{Hard: list("cpu", "10"), Used: list("cpu", "4")},
		},
		"a limit added": {
			next: &quotav1alpha1.KarmadaQuotaStatus{Hard: list("cpu", "10", "pods", "20", "memory", "1Gi"), Used: list("cpu", "4", "pods", "8")},
			want: true,
		},
		"reserved grew": {
			next: withReservation(base(), list("cpu", "1")),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := newState()
			if !recordStatus(t, s, base()) {
				t.Error("the first record did not report growth")
			}
			if got := recordStatus(t, s, tc.next); got != tc.want {
				t.Errorf("record = %v, want %v", got, tc.want)
			}
		})
	}

	t.Run("a reservation settled into used is no growth; one dropped is", func(t *testing.T) {
		s := newState()
		recordStatus(t, s, withReservation(base(), list("cpu", "1")))
		settled := &quotav1alpha1.KarmadaQuotaStatus{Hard: list("cpu", "10", "pods", "20"), Used: list("cpu", "5", "pods", "8")}
		if recordStatus(t, s, settled) {
			t.Error("record after a settlement reported growth")
		}
		s = newState()
		recordStatus(t, s, withReservation(base(), list("cpu", "1")))
		if !recordStatus(t, s, base()) {
			t.Error("record after an expiry did not report growth")
		}
	})

	t.Run("forget starts over", func(t *testing.T) {
		s := newState()
		recordStatus(t, s, base())
		s.forget(teamKey)
		if !recordStatus(t, s, base()) {
			t.Error("the first record after forget did not report growth")
		}
	})
}

func TestStateSnapshots(t *testing.T) {
	s := newState()
	if got := s.Snapshots(); len(got) != 0 {
		t.Fatalf("snapshots = %+v, want none", got)
	}
	status := written()
	status.Hard = list("cpu", "10", "memory", "2Gi", "pods", "20")
	status.Used = list("cpu", "1500m", "memory", "512Mi", "pods", "3")
	status.Reserved = list("cpu", "250m", "memory", "0", "pods", "0")
	status.Reservations = []quotav1alpha1.Reservation{{
		ReservedBy: utiltesting.ReservationOwner(utiltesting.MakeBinding(ns, "web").Obj()), Generation: 1,
		Reserved: list("cpu", "250m"), ExpirationTime: metav1.NewTime(t0.Add(time.Minute)),
	}}
	recordStatus(t, s, status)

	want := []metrics.QuotaSnapshot{{
		Namespace: ns, Name: "team",
		Hard:     map[string]float64{"cpu": 10, "memory": 2 << 30, "pods": 20},
		Used:     map[string]float64{"cpu": 1.5, "memory": 512 << 20, "pods": 3},
		Reserved: map[string]float64{"cpu": 0.25, "memory": 0, "pods": 0},
		Clusters: map[string]map[string]float64{
			"member1": {"cpu": 1, "pods": 2},
			"member2": {"cpu": 0.5, "pods": 1},
		},
	}}
	if diff := cmp.Diff(want, s.Snapshots()); diff != "" {
		t.Errorf("snapshots (-want +got):\n%s", diff)
	}

	// The bindings waiting on the quota come with the recount that counted them.
	q := utiltesting.MakeQuota(ns, "team").Hard(status.Hard).Obj()
	q.Status = *status.DeepCopy()
	ledger, err := quota.NewLedger(q, nil)
	if err != nil {
		t.Fatalf("NewLedger: %v", err)
	}
	s.record(teamKey, q, &q.Status, nil, ledger.Headroom(resources.List{}), nil, waitingSince(t0, "web", "api"))
	if got := s.Snapshots(); len(got) != 1 || got[0].Waiting != 2 || !got[0].OldestWaiting.Equal(t0) {
		t.Errorf("snapshots = %+v, want one with 2 bindings waiting since %v", got, t0)
	}

	// Recording again replaces the snapshot; forgetting removes it.
	status.Used = list("cpu", "2", "memory", "512Mi", "pods", "4")
	recordStatus(t, s, status)
	if got := s.Snapshots(); len(got) != 1 || got[0].Used["cpu"] != 2 {
		t.Errorf("snapshots = %+v, want one with used cpu 2", got)
	}
	s.forget(teamKey)
	if got := s.Snapshots(); len(got) != 0 {
		t.Errorf("snapshots after forget = %+v, want none", got)
	}
}

// TestStateSnapshotsBusinessQuota: a business quota's snapshot has its name and no namespace, and each namespace it
// selects with every limited resource (0 for what it does not use); a namespace missing from the next record (it
// left the business) is gone from the snapshot, and forget removes the rest.
func TestStateSnapshotsBusinessQuota(t *testing.T) {
	s := newState()
	key := types.NamespacedName{Name: "shop"}
	q := utiltesting.BusinessQuota("shop", list("cpu", "10", "pods", "20")).AsKarmadaQuota()
	status := &quotav1alpha1.KarmadaQuotaStatus{
		Hard: list("cpu", "10", "pods", "20"), Used: list("cpu", "2500m", "pods", "3"), Reserved: list("cpu", "0", "pods", "0"),
	}
	namespaces := []quotav1alpha1.NamespaceUsage{
		{Name: "shop-dev", Used: list("cpu", "500m", "pods", "0")},
		{Name: "shop-prod", Used: list("cpu", "2", "pods", "3")},
		// Selected, nothing counted there: exported at 0 all the same.
		{Name: "shop-staging"},
	}
	s.record(key, q, status, namespaces, nil, nil, quota.Waiting{})
	want := []metrics.QuotaSnapshot{{
		Name:     "shop",
		Hard:     map[string]float64{"cpu": 10, "pods": 20},
		Used:     map[string]float64{"cpu": 2.5, "pods": 3},
		Reserved: map[string]float64{"cpu": 0, "pods": 0},
		Clusters: map[string]map[string]float64{},
		Namespaces: map[string]map[string]float64{
			"shop-dev":     {"cpu": 0.5, "pods": 0},
			"shop-prod":    {"cpu": 2, "pods": 3},
			"shop-staging": {"cpu": 0, "pods": 0},
		},
	}}
	if diff := cmp.Diff(want, s.Snapshots()); diff != "" {
		t.Errorf("snapshots (-want +got):\n%s", diff)
	}

	// shop-dev left the business: the next recount lists the others only.
	s.record(key, q, status, namespaces[1:], nil, nil, quota.Waiting{})
	got := s.Snapshots()
	if len(got) != 1 {
		t.Fatalf("snapshots = %+v, want one", got)
	}
	if diff := cmp.Diff(map[string]map[string]float64{"shop-prod": {"cpu": 2, "pods": 3}, "shop-staging": {"cpu": 0, "pods": 0}}, got[0].Namespaces); diff != "" {
		t.Errorf("namespaces after shop-dev left (-want +got):\n%s", diff)
	}
	// None selected any more: no namespace is exported.
	s.record(key, q, status, nil, nil, nil, quota.Waiting{})
	if got := s.Snapshots(); len(got) != 1 || len(got[0].Namespaces) != 0 {
		t.Errorf("snapshots = %+v, want one without namespaces", got)
	}
	s.forget(key)
	if got := s.Snapshots(); len(got) != 0 {
		t.Errorf("snapshots after forget = %+v, want none", got)
	}
}

// TestNamespaceParts: a business quota has one part per namespace it selects, as its status renders them (the
// author's resource names, every limited resource), none of a namespace not selected; the metrics export them, and
// a KarmadaQuota, recorded without parts, exports none.
func TestNamespaceParts(t *testing.T) {
	team := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10")).Obj()
	if got := snapshot(team, &team.Status, nil, quota.Waiting{}).Namespaces; got != nil {
		t.Errorf("namespaces of a KarmadaQuota's snapshot = %+v, want nil", got)
	}

	bq := utiltesting.BusinessQuota("shop", list("cpu", "10", "pods", "20"))
	q := bq.AsKarmadaQuota()
	ledger, err := quota.NewLedger(q, nil)
	if err != nil {
		t.Fatalf("NewLedger: %v", err)
	}
	used, err := resources.Parse(list("cpu", "2", "pods", "3"))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	tally := quota.Tally{Namespaces: map[string]resources.List{"shop-prod": used, "shop-old": used}}
	q.Status.Hard = list("cpu", "10", "pods", "20")
	parts := namespaceParts([]string{"shop-dev", "shop-prod"}, ledger, tally)
	var names []string
	for _, p := range parts {
		names = append(names, p.Name)
	}
	if diff := cmp.Diff([]string{"shop-dev", "shop-prod"}, names); diff != "" {
		t.Errorf("namespaceParts' namespaces (-want +got):\n%s", diff)
	}
	// As the metrics export them.
	got := snapshot(q, &q.Status, parts, quota.Waiting{}).Namespaces
	want := map[string]map[string]float64{"shop-dev": {"cpu": 0, "pods": 0}, "shop-prod": {"cpu": 2, "pods": 3}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("namespaces of the snapshot (-want +got):\n%s", diff)
	}
}

func TestTombstones(t *testing.T) {
	t.Run("a deleted binding is remembered", func(t *testing.T) {
		clk := clocktesting.NewFakeClock(t0)
		ts := newTombstones(10*time.Minute, clk.Now)
		if ts.has("uid-web") {
			t.Error("has before add")
		}
		ts.add("uid-web")
		if !ts.has("uid-web") {
			t.Error("not has after add")
		}
		if ts.has("uid-api") {
			t.Error("has a UID never added")
		}
	})

	t.Run("entries older than keep are pruned on a later add", func(t *testing.T) {
		clk := clocktesting.NewFakeClock(t0)
		ts := newTombstones(10*time.Minute, clk.Now)
		ts.add("a")
		clk.Step(5 * time.Minute)
		ts.add("b")
		clk.Step(5 * time.Minute)
		ts.add("c") // a is exactly keep old: kept
		if diff := cmp.Diff([]types.UID{"a", "b", "c"}, remembered(ts), cmpopts.SortSlices(func(x, y types.UID) bool { return x < y })); diff != "" {
			t.Errorf("remembered (-want +got):\n%s", diff)
		}
		clk.Step(time.Minute)
		ts.add("d")
		if diff := cmp.Diff([]types.UID{"b", "c", "d"}, remembered(ts), cmpopts.SortSlices(func(x, y types.UID) bool { return x < y })); diff != "" {
			t.Errorf("remembered (-want +got):\n%s", diff)
		}
		if ts.has("a") {
			t.Error("has a pruned UID")
		}
	})

	t.Run("pruned at most once a minute", func(t *testing.T) {
		clk := clocktesting.NewFakeClock(t0)
		ts := newTombstones(30*time.Second, clk.Now)
		ts.add("a")
		clk.Step(45 * time.Second)
		ts.add("b")
		if !ts.has("a") {
			t.Error("a pruned 45s after the last prune; want at most once a minute")
		}
		clk.Step(15 * time.Second)
		ts.add("c")
		if ts.has("a") {
			t.Error("a not pruned a minute after the last prune")
		}
		if !ts.has("b") || !ts.has("c") {
			t.Error("b or c pruned before they were keep old")
		}
	})
}

func remembered(ts *tombstones) []types.UID {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	var out []types.UID
	for uid := range ts.uids {
		out = append(out, uid)
	}
	return out
}

// TestStateRecordRequeuesOnGrowthOrNewlyWaiting: the first record, any headroom gained, and a binding seen waiting
// for the first time each call for a requeue; a status unchanged with the same bindings waiting does not.
func TestStateRecordRequeuesOnGrowthOrNewlyWaiting(t *testing.T) {
	s := newState()
	q := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10")).Obj()
	ledger, err := quota.NewLedger(q, nil)
	if err != nil {
		t.Fatalf("NewLedger: %v", err)
	}
	waitingUIDs := func(uids ...types.UID) quota.Waiting { return waitingSince(time.Time{}, uids...) }
	steps := []struct {
		what string
		used string
		// memberRoom is the CPU room left on members.
		memberRoom int64
		waiting    quota.Waiting
		want       bool
	}{
		{"the first record", "8", 1000, waitingUIDs("a"), true},
		{"nothing changed", "8", 1000, waitingUIDs("a"), false},
		{"usage grew: less headroom", "9", 1000, waitingUIDs("a"), false},
		{"usage dropped: headroom gained", "7", 1000, waitingUIDs("a"), true},
		// Refused before that drop, its condition seen only now: the drop's requeue never saw it.
		{"a binding newly seen waiting", "7", 1000, waitingUIDs("a", "b"), true},
		{"one stops waiting", "7", 1000, waitingUIDs("b"), false},
		{"room on members taken", "7", 0, waitingUIDs("b"), false},
		// A move off a capped member: the namespace's headroom is the same, the member's room grew.
		{"room on members gained", "7", 500, waitingUIDs("b"), true},
	}
	for _, step := range steps {
		used, err := resources.Parse(list("cpu", step.used))
		if err != nil {
			t.Fatalf("Parse: %v", err)
		}
		memberRoom := resources.List{"requests.cpu": step.memberRoom}
		if got := s.record(teamKey, q, &q.Status, nil, ledger.Headroom(used), memberRoom, step.waiting); got != step.want {
			t.Errorf("%s: record = %v, want %v", step.what, got, step.want)
		}
	}
}

// TestStatusPrintCoversEveryClusterField changes each field of a cluster's usage in turn: every one must change the
// fingerprint drift is told by, so a field added to ClusterUsage cannot go unnoticed by it.
func TestStatusPrintCoversEveryClusterField(t *testing.T) {
	base := printOf(written())
	fields := reflect.TypeOf(quotav1alpha1.ClusterUsage{})
	for i := range fields.NumField() {
		field := fields.Field(i)
		t.Run(field.Name, func(t *testing.T) {
			changed := written()
			v := reflect.ValueOf(&changed.Clusters[0]).Elem().Field(i)
			switch v.Interface().(type) {
			case string:
				v.SetString("member9")
			case bool:
				v.SetBool(!v.Bool())
			case corev1.ResourceList:
				v.Set(reflect.ValueOf(list("cpu", "123m")))
			case *metav1.Time:
				v.Set(reflect.ValueOf(&metav1.Time{Time: t0}))
			default:
				t.Fatalf("printOf does not know fields of type %s", field.Type)
			}
			if printOf(changed) == base {
				t.Errorf("changing %s leaves the fingerprint as it was", field.Name)
			}
		})
	}
}
