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

func TestMemberView(t *testing.T) {
	q := utiltesting.MakeQuota("team", "team").Hard(utiltesting.List("cpu", "10")).Obj()
	ledger, err := quota.NewLedger(q)
	if err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: "team", Name: "team"}
	charged := map[string]resources.List{"member1": {"requests.cpu": 2000}, "member2": {"requests.cpu": 2000}}
	statusWithClusters := func() *quotav1alpha1.KarmadaQuotaStatus {
		return &quotav1alpha1.KarmadaQuotaStatus{Clusters: []quotav1alpha1.ClusterUsage{
			{Name: "member1", Used: ledger.Render(charged["member1"])}, {Name: "member2", Used: ledger.Render(charged["member2"])},
		}}
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

	t.Run("nothing read yet", func(t *testing.T) {
		v := &memberView{sampler: fixedMembers{}, grace: grace, over: map[types.NamespacedName]time.Time{}}
		s := statusWithClusters()
		v.render(key, s, ledger, charged, start, 1)
		if c := condition(s); c == nil || c.Status != metav1.ConditionUnknown {
			t.Errorf("condition = %+v, want Unknown", c)
		}
		if s.Clusters[0].Running != nil {
			t.Errorf("running shown for a member never read: %v", s.Clusters[0].Running)
		}
	})

	t.Run("within what is charged", func(t *testing.T) {
		v := &memberView{sampler: fixedMembers{running: within, read: true}, grace: grace, over: map[types.NamespacedName]time.Time{}}
		s := statusWithClusters()
		v.render(key, s, ledger, charged, start, 1)
		if c := condition(s); c == nil || c.Status != metav1.ConditionTrue {
			t.Errorf("condition = %+v, want True", c)
		}
		if got := s.Clusters[1].Running.Cpu().MilliValue(); got != 1500 {
			t.Errorf("member2 running %dm CPU, want 1500m", got)
		}
	})

	t.Run("over, through the grace, then back within", func(t *testing.T) {
		v := &memberView{sampler: fixedMembers{running: over, read: true}, grace: grace, over: map[types.NamespacedName]time.Time{}}
		s := statusWithClusters()
		newly, recheck := v.render(key, s, ledger, charged, start, 1)
		if len(newly) != 0 || recheck != grace {
			t.Fatalf("at first sight: newly over %v, recheck %v; want none, %v", newly, recheck, grace)
		}
		if c := condition(s); c == nil || c.Status != metav1.ConditionTrue {
			t.Errorf("condition within the grace = %+v, want True (as it was)", c)
		}
		if len(s.Clusters) != 3 || s.Clusters[2].Name != "member3" || s.Clusters[2].Used != nil {
			t.Errorf("a member running what nothing charges is listed, with nothing used: %+v", s.Clusters)
		}

		newly, _ = v.render(key, s, ledger, charged, start.Add(grace), 1)
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
		if newly, _ := v.render(key, s, ledger, charged, start.Add(2*grace), 1); len(newly) != 0 {
			t.Errorf("reported again: %v", newly)
		}

		v.sampler = fixedMembers{running: within, read: true}
		v.render(key, s, ledger, charged, start.Add(3*grace), 1)
		if c := condition(s); c == nil || c.Status != metav1.ConditionTrue {
			t.Errorf("condition once within = %+v, want True", c)
		}
	})
}
