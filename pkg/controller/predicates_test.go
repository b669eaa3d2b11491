package controller

import (
	"testing"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/karmada-quota/karmada-quota/pkg/scheme"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

// TestSettleableReservation passes a write of a ledger, or of a quota's status by an earlier release's webhook,
// that adds a reservation the controller can settle at once.
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
	// Each case as this release's webhook writes it (the ledger), and as an earlier release's did (the quota's
	// status).
	as := map[string]func(*utiltesting.QuotaWrapper) client.Object{
		"ledger":       func(w *utiltesting.QuotaWrapper) client.Object { return utiltesting.MoveToLedger(w.Obj()) },
		"quota status": func(w *utiltesting.QuotaWrapper) client.Object { return w.Obj() },
	}
	p := settleableReservation(clientBindings{client: bindings})
	for name, tc := range cases {
		for kind, obj := range as {
			t.Run(kind+": "+name, func(t *testing.T) {
				got := p.Update(event.UpdateEvent{ObjectOld: obj(tc.oldQuota), ObjectNew: obj(tc.newQuota)})
				if got != tc.want {
					t.Errorf("Update() = %v, want %v", got, tc.want)
				}
			})
		}
		if tc.oldQuota != base {
			continue
		}
		// The webhook creates the ledger of a quota that had none with the first reservation; the binding's
		// event may have been recounted before the controller saw the ledger.
		t.Run("ledger created: "+name, func(t *testing.T) {
			if got := p.Create(event.CreateEvent{Object: utiltesting.MoveToLedger(tc.newQuota.Obj())}); got != tc.want {
				t.Errorf("Create() = %v, want %v", got, tc.want)
			}
		})
	}

	if p.Create(event.CreateEvent{Object: base.Obj()}) || p.Create(event.CreateEvent{Object: utiltesting.MoveToLedger(base.Obj())}) {
		t.Error("the create of a quota or a ledger without reservations passed")
	}
	if p.Delete(event.DeleteEvent{Object: utiltesting.MoveToLedger(reserve(web, 3).Obj())}) {
		t.Error("a ledger's delete passed: the deleted predicate is the one that handles deletes")
	}
	if p.Update(event.UpdateEvent{ObjectOld: web, ObjectNew: web}) {
		t.Error("a binding update passed a quota predicate")
	}
}

// TestDeleted passes a ledger's delete, so that the controller writes it again, and nothing else.
func TestDeleted(t *testing.T) {
	ledger := utiltesting.MoveToLedger(utiltesting.MakeQuota(ns, "team").Obj())
	p := deleted()
	if !p.Delete(event.DeleteEvent{Object: ledger}) {
		t.Error("a delete did not pass")
	}
	if p.Create(event.CreateEvent{Object: ledger}) || p.Update(event.UpdateEvent{ObjectOld: ledger, ObjectNew: ledger}) ||
		p.Generic(event.GenericEvent{Object: ledger}) {
		t.Error("a create, an update or a generic event passed")
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
			if got := p.Update(event.UpdateEvent{ObjectOld: cached(t, tc.oldRB.Obj()), ObjectNew: cached(t, tc.newRB.Obj())}); got != tc.want {
				t.Errorf("Update() = %v, want %v", got, tc.want)
			}
		})
	}
	if p.Create(event.CreateEvent{Object: refused.Obj()}) || p.Delete(event.DeleteEvent{Object: refused.Obj()}) {
		t.Error("creates and deletes pass: they are the generation predicate's to pass")
	}
}
