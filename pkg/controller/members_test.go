package controller

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/members"
	"github.com/karmada-quota/karmada-quota/pkg/quota"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

type fixedMembers struct {
	running map[string]members.Running
	read    bool
}

func (f fixedMembers) Running(string) (map[string]members.Running, bool) { return f.running, f.read }

// TestMemberView follows the members' view through renderStatus, which writes what it reports: each recount
// renders from the status the last one wrote.
func TestMemberView(t *testing.T) {
	q := utiltesting.MakeQuota("team", "team").Hard(utiltesting.List("cpu", "10")).Obj()
	ledger, err := quota.NewLedger(q, nil)
	if err != nil {
		t.Fatal(err)
	}
	charged := map[string]resources.List{"member1": {"requests.cpu": 2000}, "member2": {"requests.cpu": 2000}}
	tally := quota.Tally{Used: resources.List{"requests.cpu": 4000}, Clusters: charged}
	statusWithClusters := func() *quotav1alpha1.KarmadaQuotaStatus {
		return &quotav1alpha1.KarmadaQuotaStatus{Clusters: []quotav1alpha1.ClusterUsage{
			{Name: "member1", Used: ledger.Render(charged["member1"])}, {Name: "member2", Used: ledger.Render(charged["member2"])},
		}}
	}
	// render is one recount of q holding status s: what the view reports, written by renderStatus into the status
	// it returns.
	render := func(v *memberView, s *quotav1alpha1.KarmadaQuotaStatus, now time.Time) (*quotav1alpha1.KarmadaQuotaStatus, []excess, time.Duration) {
		read := q.DeepCopy()
		read.Status = *s
		report := v.observe(read, ledger, charged, now)
		return renderStatus(read, ledger, tally, nil, report, memberClusters{}, now), report.newlyOver, report.recheck
	}
	within := map[string]members.Running{
		"member1": {"": {"pods": 2, "requests.cpu": 2000}},
		"member2": {"": {"pods": 2, "requests.cpu": 1500}}, // a pod not yet started
	}
	over := map[string]members.Running{
		"member1": {"": {"pods": 3, "requests.cpu": 5000}},
		"member2": {"": {"pods": 2, "requests.cpu": 2000}},
		"member3": {"": {"pods": 1, "requests.cpu": 1000}}, // nothing charged there at all
	}
	condition := func(s *quotav1alpha1.KarmadaQuotaStatus) *metav1.Condition {
		return meta.FindStatusCondition(s.Conditions, quotav1alpha1.ConditionMembersWithinQuota)
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	grace := time.Minute

	t.Run("not shown", func(t *testing.T) {
		var v *memberView
		s, newly, recheck := render(v, statusWithClusters(), start)
		if c := condition(s); c != nil || len(newly) != 0 || recheck != 0 {
			t.Errorf("condition = %+v, newly over %v, recheck %v; want none of them without a view", c, newly, recheck)
		}
		if len(s.Clusters) != 2 || s.Clusters[0].Running != nil || s.Clusters[1].Running != nil {
			t.Errorf("clusters = %+v, want the two charged, running nothing shown", s.Clusters)
		}
	})

	t.Run("nothing read yet", func(t *testing.T) {
		v := &memberView{sampler: fixedMembers{}, grace: grace, over: map[types.NamespacedName]time.Time{}}
		s, _, _ := render(v, statusWithClusters(), start)
		if c := condition(s); c == nil || c.Status != metav1.ConditionUnknown {
			t.Errorf("condition = %+v, want Unknown", c)
		}
		if s.Clusters[0].Running != nil {
			t.Errorf("running shown for a member never read: %v", s.Clusters[0].Running)
		}
	})

	t.Run("within what is charged", func(t *testing.T) {
		v := &memberView{sampler: fixedMembers{running: within, read: true}, grace: grace, over: map[types.NamespacedName]time.Time{}}
		s, _, _ := render(v, statusWithClusters(), start)
		if c := condition(s); c == nil || c.Status != metav1.ConditionTrue {
			t.Errorf("condition = %+v, want True", c)
		}
		if got := s.Clusters[1].Running.Cpu().MilliValue(); got != 1500 {
			t.Errorf("member2 running %dm CPU, want 1500m", got)
		}
	})

	t.Run("over, through the grace, then back within", func(t *testing.T) {
		v := &memberView{sampler: fixedMembers{running: over, read: true}, grace: grace, over: map[types.NamespacedName]time.Time{}}
		s, newly, recheck := render(v, statusWithClusters(), start)
		if len(newly) != 0 || recheck != grace {
			t.Fatalf("at first sight: newly over %v, recheck %v; want none, %v", newly, recheck, grace)
		}
		if c := condition(s); c == nil || c.Status != metav1.ConditionTrue {
			t.Errorf("condition within the grace = %+v, want True (as it was)", c)
		}
		if len(s.Clusters) != 3 || s.Clusters[2].Name != "member3" || s.Clusters[2].Used != nil {
			t.Errorf("a member running what nothing charges is listed, with nothing used: %+v", s.Clusters)
		}

		s, newly, _ = render(v, s, start.Add(grace))
		want := []excess{
			{cluster: "member1", resource: "cpu", running: "5", charged: "2"},
			{cluster: "member3", resource: "cpu", running: "1", charged: "0"},
		}
		if len(newly) != len(want) || newly[0] != want[0] || newly[1] != want[1] {
			t.Errorf("newly over = %+v, want %+v", newly, want)
		}
		c := condition(s)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonMembersRunMore {
			t.Fatalf("condition after the grace = %+v, want False, %s", c, ReasonMembersRunMore)
		}
		// Still over: no second event.
		s, newly, _ = render(v, s, start.Add(2*grace))
		if len(newly) != 0 {
			t.Errorf("reported again: %v", newly)
		}

		v.sampler = fixedMembers{running: within, read: true}
		s, _, _ = render(v, s, start.Add(3*grace))
		if c := condition(s); c == nil || c.Status != metav1.ConditionTrue {
			t.Errorf("condition once within = %+v, want True", c)
		}
	})
}
