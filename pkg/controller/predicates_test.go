package controller

import (
	"testing"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/karmada-quota/karmada-quota/pkg/scheme"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

func TestSettleableReservation(t *testing.T) {
	// web is observed at generation 3.
	observed := utiltesting.MakeBinding(ns, "web").Generation(3)
	web := observed.Obj()
	replaced := observed.Clone().UID("uid-an-earlier-create").Obj()
	unseen := utiltesting.MakeBinding(ns, "unseen").Obj()
	base := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10"))
	reserve := func(rb *workv1alpha2.ResourceBinding, generation int64) *utiltesting.QuotaWrapper {
		return base.Clone().Reservation(rb, generation, list("cpu", "1"), t0)
	}
	bindings := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(web).Build()

	cases := map[string]struct {
		oldQuota, newQuota *utiltesting.QuotaWrapper
		want               bool
	}{
		"a new reservation whose binding is observed at its generation": {
			oldQuota: base, newQuota: reserve(web, 3), want: true,
		},
		"a new reservation whose binding is observed at a later generation": {
			oldQuota: base, newQuota: reserve(web, 2), want: true,
		},
		"a new reservation for a binding whose name another binding holds": {
			oldQuota: base, newQuota: reserve(replaced, 1), want: true,
		},
		"a new reservation for a write still in flight": {
			oldQuota: base, newQuota: reserve(web, 4),
		},
		"a new reservation for a binding not observed yet": {
			oldQuota: base, newQuota: reserve(unseen, 1),
		},
		"a reservation already there: the last recount saw it": {
			oldQuota: reserve(web, 3), newQuota: reserve(web, 3),
		},
		"a reservation removed": {
			oldQuota: reserve(web, 3), newQuota: base,
		},
	}
	p := settleableReservation(bindings)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := p.Update(event.UpdateEvent{ObjectOld: tc.oldQuota.Obj(), ObjectNew: tc.newQuota.Obj()})
			if got != tc.want {
				t.Errorf("Update() = %v, want %v", got, tc.want)
			}
		})
	}

	if p.Create(event.CreateEvent{Object: base.Obj()}) {
		t.Error("a create passed: the generation predicate is the one that handles creates")
	}
	if p.Update(event.UpdateEvent{ObjectOld: web, ObjectNew: web}) {
		t.Error("a binding update passed a quota predicate")
	}
}

func TestWaitChanged(t *testing.T) {
	binding := utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")).Replicas(1)
	unscheduled := binding.Clone()
	refused := binding.Clone().Scheduled(false, workv1alpha2.BindingReasonQuotaExceeded)
	noFit := binding.Clone().Scheduled(false, workv1alpha2.BindingReasonNoClusterFit)
	noRoom := binding.Clone().Scheduled(false, workv1alpha2.BindingReasonUnschedulable)
	scheduled := binding.Clone().Cluster("member1", 1).Scheduled(true, workv1alpha2.BindingReasonSuccess)
	cases := map[string]struct {
		oldRB, newRB *utiltesting.BindingWrapper
		want         bool
	}{
		"refused by a quota: a wait starts":         {oldRB: unscheduled, newRB: refused, want: true},
		"placed after waiting: the wait ends":       {oldRB: refused, newRB: scheduled, want: true},
		"refused for another reason after a quota":  {oldRB: refused, newRB: noFit, want: true},
		"refused again by a quota: no change":       {oldRB: refused, newRB: refused.Clone().Annotation("retried", "yes")},
		"status rewritten while scheduled":          {oldRB: scheduled, newRB: scheduled.Clone().Annotation("synced", "yes")},
		"refused for another reason, not for quota": {oldRB: unscheduled, newRB: noFit},
		"no member with room: a wait starts":        {oldRB: unscheduled, newRB: noRoom, want: true},
		"no member with room after a quota refused": {oldRB: refused, newRB: noRoom, want: true},
		"placed after waiting for room":             {oldRB: noRoom, newRB: scheduled, want: true},
	}
	p := waitChanged()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := p.Update(event.UpdateEvent{ObjectOld: tc.oldRB.Obj(), ObjectNew: tc.newRB.Obj()}); got != tc.want {
				t.Errorf("Update() = %v, want %v", got, tc.want)
			}
		})
	}
	if p.Create(event.CreateEvent{Object: refused.Obj()}) || p.Delete(event.DeleteEvent{Object: refused.Obj()}) {
		t.Error("creates and deletes pass: they are the generation predicate's to pass")
	}
}
