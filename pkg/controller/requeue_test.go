package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/metrics"
	"github.com/karmada-quota/karmada-quota/pkg/quota"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

// waiting starts a binding the scheduler could not place because a quota refused it: replicas replicas of cpu
// each, none placed.
func waiting(name string, replicas int32, cpu string) *utiltesting.BindingWrapper {
	return utiltesting.MakeBinding(ns, name).Requests(list("cpu", cpu)).Replicas(replicas).
		Scheduled(false, workv1alpha2.BindingReasonQuotaExceeded)
}

func priority(w *utiltesting.BindingWrapper, p int32) *utiltesting.BindingWrapper {
	w.Spec.SchedulePriority = &workv1alpha2.SchedulePriority{Priority: p}
	return w
}

func created(w *utiltesting.BindingWrapper, at time.Time) *utiltesting.BindingWrapper {
	w.CreationTimestamp = metav1.NewTime(at)
	return w
}

// noMemberRoom starts a binding Karmada's scheduler found no member room for (its estimators' answers summed
// below the replicas): replicas replicas of cpu each, none placed.
func noMemberRoom(name string, replicas int32, cpu string) *utiltesting.BindingWrapper {
	return utiltesting.MakeBinding(ns, name).Requests(list("cpu", cpu)).Replicas(replicas).
		Scheduled(false, workv1alpha2.BindingReasonUnschedulable)
}

// cappedQuota limits the namespace to hard and member1 to cpu CPUs.
func cappedQuota(hard corev1.ResourceList, cpu string) *utiltesting.QuotaWrapper {
	q := utiltesting.MakeQuota(ns, "team").Hard(hard)
	q.Spec.Clusters = []quotav1alpha1.ClusterLimit{{Name: "member1", Hard: list("cpu", cpu)}}
	return q
}

// running uses cpu on member1: replicas of 1 CPU, placed.
func running(name string, replicas int32) *utiltesting.BindingWrapper {
	return utiltesting.MakeBinding(ns, name).Requests(list("cpu", "1")).Replicas(replicas).Cluster("member1", replicas).
		Scheduled(true, workv1alpha2.BindingReasonSuccess)
}

// requeueNow runs the requeuer over the bindings stored in f, as a reconcile of q does after headroom grew.
func requeueNow(t *testing.T, f *fixture, q *quotav1alpha1.KarmadaQuota) error {
	t.Helper()
	ledger, err := quota.NewLedger(q, nil)
	if err != nil {
		t.Fatalf("NewLedger: %v", err)
	}
	var bindings workv1alpha2.ResourceBindingList
	if err := f.client.List(context.Background(), &bindings, client.InNamespace(ns)); err != nil {
		t.Fatalf("listing bindings: %v", err)
	}
	tally := quota.Recount(ledger, quota.Observation{Bindings: bindings.Items, Now: f.clock.Now()})
	return f.requeuer.requeue(context.Background(), q, tally.Headroom, tally.MemberRoom, tally.Waiting.Bindings)
}

// triggered maps every binding whose rescheduleTriggeredAt is set, read back from the client, to it.
func triggered(t *testing.T, f *fixture) map[string]time.Time {
	t.Helper()
	var bindings workv1alpha2.ResourceBindingList
	if err := f.client.List(context.Background(), &bindings, client.InNamespace(ns)); err != nil {
		t.Fatalf("listing bindings: %v", err)
	}
	out := map[string]time.Time{}
	for _, rb := range bindings.Items {
		if at := rb.Spec.RescheduleTriggeredAt; at != nil {
			out[rb.Name] = at.UTC()
		}
	}
	return out
}

func TestRequeue(t *testing.T) {
	teamQuota := func(hard corev1.ResourceList) *utiltesting.QuotaWrapper {
		return utiltesting.MakeQuota(ns, "team").Hard(hard)
	}
	cases := map[string]struct {
		quota    *utiltesting.QuotaWrapper
		bindings []*utiltesting.BindingWrapper
		// want are the bindings requeued, in order.
		want []string
	}{
		"only bindings waiting for quota, and not being deleted": {
			quota: teamQuota(list("cpu", "10")),
			bindings: []*utiltesting.BindingWrapper{
				waiting("quota-exceeded", 1, "1"),
				utiltesting.MakeBinding(ns, "scheduled").Requests(list("cpu", "1")).Replicas(1).
					Scheduled(true, workv1alpha2.BindingReasonSuccess),
				utiltesting.MakeBinding(ns, "no-cluster-fit").Requests(list("cpu", "1")).Replicas(1).
					Scheduled(false, workv1alpha2.BindingReasonNoClusterFit),
				utiltesting.MakeBinding(ns, "never-scheduled").Requests(list("cpu", "1")).Replicas(1),
				waiting("deleting", 1, "1").Deleting(),
			},
			want: []string{"quota-exceeded"},
		},
		"higher schedule priority first, only as many as fit": {
			quota: teamQuota(list("cpu", "4")),
			bindings: []*utiltesting.BindingWrapper{
				running("big", 2),
				priority(waiting("a-low", 1, "1"), 1),
				priority(waiting("b-middle", 1, "1"), 50),
				priority(waiting("c-high", 1, "1"), 100),
			},
			want: []string{"c-high", "b-middle"},
		},
		"no schedule priority is priority 0": {
			quota: teamQuota(list("cpu", "4")),
			bindings: []*utiltesting.BindingWrapper{
				running("big", 3),
				waiting("a-none", 1, "1"),
				priority(waiting("b-one", 1, "1"), 1),
			},
			want: []string{"b-one"},
		},
		"equal priority: the older first": {
			quota: teamQuota(list("cpu", "4")),
			bindings: []*utiltesting.BindingWrapper{
				running("big", 3),
				created(waiting("a-new", 1, "1"), t0.Add(-time.Minute)),
				created(waiting("b-old", 1, "1"), t0.Add(-time.Hour)),
			},
			want: []string{"b-old"},
		},
		"equal priority and age: by name": {
			quota: teamQuota(list("cpu", "4")),
			bindings: []*utiltesting.BindingWrapper{
				running("big", 3),
				created(waiting("b", 1, "1"), t0.Add(-time.Hour)),
				created(waiting("a", 1, "1"), t0.Add(-time.Hour)),
			},
			want: []string{"a"},
		},
		"what is needed is all spec.replicas placed, minus what is placed already": {
			quota: teamQuota(list("cpu", "4")),
			bindings: []*utiltesting.BindingWrapper{
				// 3 of 4 replicas placed: it needs one more CPU, which fits.
				waiting("a-partial", 4, "1").Cluster("member1", 3),
				// Needs 2 CPUs: it does not fit, and does not keep the smaller one from being requeued.
				priority(waiting("b-whole", 2, "1"), 100),
			},
			want: []string{"a-partial"},
		},
		"a multi-component binding needs every component": {
			quota: teamQuota(list("cpu", "4")),
			bindings: []*utiltesting.BindingWrapper{
				running("big", 1),
				utiltesting.MakeBinding(ns, "a-fits").Component("leader", 1, list("cpu", "1")).Component("worker", 2, list("cpu", "500m")).
					Scheduled(false, workv1alpha2.BindingReasonQuotaExceeded),
				utiltesting.MakeBinding(ns, "b-too-big").Component("leader", 1, list("cpu", "1")).Component("worker", 2, list("cpu", "1")).
					Scheduled(false, workv1alpha2.BindingReasonQuotaExceeded),
			},
			want: []string{"a-fits"},
		},
		"resources the quota does not limit are not needed": {
			quota: teamQuota(list("cpu", "2")),
			bindings: []*utiltesting.BindingWrapper{
				waiting("web", 2, "1").Requests(list("cpu", "1", "memory", "1Ti")),
			},
			want: []string{"web"},
		},
		"a scoped quota needs only what it selects": {
			quota: teamQuota(list("cpu", "1")).Scope(corev1.ScopeSelectorOpIn, "high"),
			bindings: []*utiltesting.BindingWrapper{
				// Its high-priority replica fits; the low-priority ones are another quota's business.
				utiltesting.MakeBinding(ns, "mixed").PriorityClass("low").
					Component("leader", 1, list("cpu", "1")).ComponentPriorityClass("leader", "high").
					Component("worker", 4, list("cpu", "1")).
					Scheduled(false, workv1alpha2.BindingReasonQuotaExceeded),
			},
			want: []string{"mixed"},
		},
		"a binding that needs nothing this quota limits waits on another: left alone": {
			quota: teamQuota(list("cpu", "10")).Scope(corev1.ScopeSelectorOpIn, "high"),
			bindings: []*utiltesting.BindingWrapper{
				waiting("low", 1, "1").PriorityClass("low"),
			},
		},
		"nothing fits: nothing requeued": {
			quota: teamQuota(list("cpu", "2")),
			bindings: []*utiltesting.BindingWrapper{
				running("big", 2),
				waiting("web", 1, "100m"),
			},
		},
		// The scheduler's own verdict on a quota that limits members (steering_test.go): every member at its limit, the
		// namespace with room. Requeued, Karmada would recompute the whole placement and fail again.
		"no member had room, and none has now: left alone though the namespace has headroom": {
			quota: cappedQuota(list("cpu", "10"), "1"),
			bindings: []*utiltesting.BindingWrapper{
				noMemberRoom("web", 2, "1").Cluster("member1", 1),
			},
		},
		"no member had room, and one has now: requeued for what fits there": {
			quota: cappedQuota(list("cpu", "10"), "2"),
			bindings: []*utiltesting.BindingWrapper{
				priority(noMemberRoom("a-too-big", 3, "1").Cluster("member1", 1), 1),
				noMemberRoom("b-fits", 1, "1"),
			},
			want: []string{"b-fits"},
		},
		"room on members promised to one binding is not promised to the next": {
			quota: cappedQuota(list("cpu", "10"), "1"),
			bindings: []*utiltesting.BindingWrapper{
				priority(noMemberRoom("a", 1, "1"), 2),
				priority(noMemberRoom("b", 1, "1"), 1),
			},
			want: []string{"a"},
		},
		"a quota's refusal needs headroom alone: room on members is for the scheduler to find": {
			quota: cappedQuota(list("cpu", "10"), "1"),
			bindings: []*utiltesting.BindingWrapper{
				running("big", 1),
				waiting("refused", 2, "1"),
			},
			want: []string{"refused"},
		},
		"a binding no quota can count is left alone": {
			quota: teamQuota(list("cpu", "10")),
			bindings: []*utiltesting.BindingWrapper{
				waiting("negative", 1, "-1"),
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			q := tc.quota
			objs := make([]client.Object, len(tc.bindings))
			for i, b := range tc.bindings {
				objs[i] = b.Obj()
			}
			f := newFixture(t, interceptor.Funcs{}, objs...)
			requeued := counter(metrics.BindingsRequeued)

			if err := requeueNow(t, f, q.Obj()); err != nil {
				t.Fatalf("requeue: %v", err)
			}

			want := map[string]time.Time{}
			var wantEvents []string
			for _, name := range tc.want {
				want[name] = t0
				wantEvents = append(wantEvents, "Normal BindingRequeued Requeued binding "+name+": usage dropped and it now fits")
			}
			if diff := cmp.Diff(want, triggered(t, f), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("rescheduleTriggeredAt (-want +got):\n%s", diff)
			}
			// Events come in the order the bindings were requeued.
			if diff := cmp.Diff(wantEvents, f.events(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if got := counter(metrics.BindingsRequeued) - requeued; got != float64(len(tc.want)) {
				t.Errorf("BindingsRequeued grew by %v, want %d", got, len(tc.want))
			}
		})
	}
}

// TestRequeueCooldown leaves a requeued binding alone until the cooldown passed; others are not held back.
func TestRequeueCooldown(t *testing.T) {
	q := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10")).Obj()
	f := newFixture(t, interceptor.Funcs{}, waiting("web", 1, "1").Obj())
	requeued := counter(metrics.BindingsRequeued)

	steps := []struct {
		after time.Duration
		// add is a binding that starts waiting at this step.
		add  *utiltesting.BindingWrapper
		want map[string]time.Time
	}{
		{want: map[string]time.Time{"web": t0}},
		{after: 0, want: map[string]time.Time{"web": t0}},
		{after: 30 * time.Second, add: waiting("api", 1, "1"), want: map[string]time.Time{"web": t0, "api": t0.Add(30 * time.Second)}},
		{after: 59 * time.Second, want: map[string]time.Time{"web": t0, "api": t0.Add(30 * time.Second)}},
		{after: time.Minute, want: map[string]time.Time{"web": t0.Add(time.Minute), "api": t0.Add(30 * time.Second)}},
		{after: 90 * time.Second, want: map[string]time.Time{"web": t0.Add(time.Minute), "api": t0.Add(90 * time.Second)}},
	}
	for i, s := range steps {
		f.clock.SetTime(t0.Add(s.after))
		if s.add != nil {
			if err := f.client.Create(context.Background(), s.add.Obj()); err != nil {
				t.Fatalf("step %d: creating binding: %v", i, err)
			}
		}
		if err := requeueNow(t, f, q); err != nil {
			t.Fatalf("step %d: requeue: %v", i, err)
		}
		if diff := cmp.Diff(s.want, triggered(t, f)); diff != "" {
			t.Errorf("step %d (t0+%v): rescheduleTriggeredAt (-want +got):\n%s", i, s.after, diff)
		}
	}
	if got := counter(metrics.BindingsRequeued) - requeued; got != 4 {
		t.Errorf("BindingsRequeued grew by %v, want 4", got)
	}
}

// TestRequeuePromisesHeadroomToCoolingBindings: what a binding requeued a moment ago needs is held for it, so a
// later round (a binding newly seen waiting) does not hand the same headroom to another.
func TestRequeuePromisesHeadroomToCoolingBindings(t *testing.T) {
	q := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "2")).Obj()
	f := newFixture(t, interceptor.Funcs{}, priority(waiting("high", 2, "1"), 100).Obj())
	f.clock.SetTime(t0)
	if err := requeueNow(t, f, q); err != nil {
		t.Fatalf("requeue: %v", err)
	}
	if err := f.client.Create(context.Background(), waiting("late", 1, "1").Obj()); err != nil {
		t.Fatalf("creating binding: %v", err)
	}
	f.clock.SetTime(t0.Add(time.Second))
	if err := requeueNow(t, f, q); err != nil {
		t.Fatalf("requeue: %v", err)
	}
	if diff := cmp.Diff(map[string]time.Time{"high": t0}, triggered(t, f)); diff != "" {
		t.Errorf("rescheduleTriggeredAt (-want +got):\n%s", diff)
	}
}

// TestRequeueErrors: a binding gone meanwhile is no error; a failed write stops the round and is reported.
func TestRequeueErrors(t *testing.T) {
	q := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10")).Obj()

	t.Run("a failed write", func(t *testing.T) {
		var patched []string
		f := newFixture(t, interceptor.Funcs{
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				patched = append(patched, obj.GetName())
				return apierrors.NewServiceUnavailable("etcd is down")
			},
		}, priority(waiting("a", 1, "1"), 2).Obj(), priority(waiting("b", 1, "1"), 1).Obj())
		requeued := counter(metrics.BindingsRequeued)

		err := requeueNow(t, f, q)

		if err == nil || !strings.Contains(err.Error(), "requeueing binding a: etcd is down") {
			t.Errorf("requeue = %v, want an error naming binding a", err)
		}
		if diff := cmp.Diff([]string{"a"}, patched); diff != "" {
			t.Errorf("patched (-want +got):\n%s", diff)
		}
		if got := counter(metrics.BindingsRequeued) - requeued; got != 0 {
			t.Errorf("BindingsRequeued grew by %v, want 0", got)
		}
		// Not cooling down: the next round tries again.
		if f.requeuer.coolingDown("uid-team-a-a") {
			t.Error("a binding whose requeue failed is cooling down")
		}
	})

	t.Run("a binding deleted meanwhile is not counted and takes no headroom", func(t *testing.T) {
		// One CPU of headroom: the deleted binding comes first and must not take it.
		q := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "1")).Obj()
		gone := priority(waiting("a-gone", 1, "1"), 2)
		f := newFixture(t, interceptor.Funcs{}, gone.Obj(), priority(waiting("b", 1, "1"), 1).Obj())
		ledger, err := quota.NewLedger(q, nil)
		if err != nil {
			t.Fatalf("NewLedger: %v", err)
		}
		var bindings workv1alpha2.ResourceBindingList
		if err := f.client.List(context.Background(), &bindings, client.InNamespace(ns)); err != nil {
			t.Fatalf("listing bindings: %v", err)
		}
		if err := f.client.Delete(context.Background(), gone.Obj()); err != nil {
			t.Fatalf("deleting: %v", err)
		}
		requeued := counter(metrics.BindingsRequeued)

		tally := quota.Recount(ledger, quota.Observation{Bindings: bindings.Items, Now: f.clock.Now()})
		if err := f.requeuer.requeue(context.Background(), q, tally.Headroom, tally.MemberRoom, tally.Waiting.Bindings); err != nil {
			t.Errorf("requeue: %v", err)
		}

		if diff := cmp.Diff(map[string]time.Time{"b": t0}, triggered(t, f)); diff != "" {
			t.Errorf("rescheduleTriggeredAt (-want +got):\n%s", diff)
		}
		if got := counter(metrics.BindingsRequeued) - requeued; got != 1 {
			t.Errorf("BindingsRequeued grew by %v, want 1", got)
		}
		if diff := cmp.Diff([]string{"Normal BindingRequeued Requeued binding b: usage dropped and it now fits"}, f.events()); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
	})
}

// TestRequeueForgetsCooldowns does not remember a requeued binding past its cooldown, though it is never asked
// about again: it was scheduled, or deleted.
func TestRequeueForgetsCooldowns(t *testing.T) {
	q := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10")).Obj()
	f := newFixture(t, interceptor.Funcs{}, waiting("web", 1, "1").Obj(), waiting("api", 1, "1").Obj())
	if err := requeueNow(t, f, q); err != nil {
		t.Fatalf("requeue: %v", err)
	}
	if got := len(f.requeuer.last); got != 2 {
		t.Fatalf("%d bindings cooling down, want 2", got)
	}

	// web is scheduled, api is deleted: neither waits any more.
	web := f.binding(t, "web")
	web.Spec.Clusters = []workv1alpha2.TargetCluster{{Name: "member1", Replicas: 1}}
	if err := f.client.Update(context.Background(), web); err != nil {
		t.Fatalf("placing web: %v", err)
	}
	web.Status.Conditions = running("web", 1).Status.Conditions
	if err := f.client.Status().Update(context.Background(), web); err != nil {
		t.Fatalf("scheduling web: %v", err)
	}
	if err := f.client.Delete(context.Background(), f.binding(t, "api")); err != nil {
		t.Fatalf("deleting api: %v", err)
	}

	f.clock.Step(30 * time.Second)
	if err := requeueNow(t, f, q); err != nil {
		t.Fatalf("requeue: %v", err)
	}
	if got := len(f.requeuer.last); got != 2 {
		t.Errorf("%d bindings cooling down within the cooldown, want 2", got)
	}
	f.clock.Step(30 * time.Second)
	if err := requeueNow(t, f, q); err != nil {
		t.Fatalf("requeue: %v", err)
	}
	if got := f.requeuer.last; len(got) != 0 {
		t.Errorf("cooling down after the cooldown: %v, want none", got)
	}
}

// TestStillNeeded: what the requeue asks of the headroom is the ledger's StillNeeded, shared with `kubectl karmada
// quota describe`: at the least, placing all replicas as one Divided set.
func TestStillNeeded(t *testing.T) {
	cases := map[string]struct {
		quota   *quotav1alpha1.KarmadaQuota
		binding *workv1alpha2.ResourceBinding
		want    resources.List
		wantOK  bool
	}{
		"unplaced: every replica": {
			quota:   utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10", "memory", "10Gi", "pods", "10")).Obj(),
			binding: waiting("web", 3, "500m").Requests(list("cpu", "500m", "memory", "1Gi")).Obj(),
			want:    resources.List{"requests.cpu": 1500, "requests.memory": 3 << 30, "pods": 3},
			wantOK:  true,
		},
		"partly placed: the rest": {
			quota:   utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10", "pods", "10")).Obj(),
			binding: waiting("web", 5, "1").Cluster("member1", 2).Cluster("member2", 1).Obj(),
			want:    resources.List{"requests.cpu": 2000, "pods": 2},
			wantOK:  true,
		},
		"placed more than one set (Duplicated): nothing more at the least": {
			quota:   utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10")).Obj(),
			binding: waiting("web", 2, "1").Cluster("member1", 2).Cluster("member2", 2).Obj(),
			wantOK:  true,
		},
		"object counts are charged already": {
			quota:   utiltesting.MakeQuota(ns, "team").Hard(list("count/deployments.apps", "10")).Obj(),
			binding: waiting("web", 2, "1").Obj(),
			wantOK:  true,
		},
		"malformed": {
			quota:   utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10")).Obj(),
			binding: waiting("web", 2, "-1").Obj(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ledger, err := quota.NewLedger(tc.quota, nil)
			if err != nil {
				t.Fatalf("NewLedger: %v", err)
			}
			got, err := ledger.StillNeeded(tc.binding)
			if ok := err == nil; ok != tc.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tc.wantOK)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("need (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFits(t *testing.T) {
	cases := map[string]struct {
		need, headroom resources.List
		want           bool
	}{
		"nothing needed":         {headroom: resources.List{"requests.cpu": -1}, want: true},
		"exactly the headroom":   {need: resources.List{"requests.cpu": 1000}, headroom: resources.List{"requests.cpu": 1000}, want: true},
		"one resource too short": {need: resources.List{"requests.cpu": 1000, "pods": 2}, headroom: resources.List{"requests.cpu": 1000, "pods": 1}},
		"no headroom listed":     {need: resources.List{"pods": 1}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := fits(tc.need, tc.headroom); got != tc.want {
				t.Errorf("fits = %v, want %v", got, tc.want)
			}
		})
	}
}
