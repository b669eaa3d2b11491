package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/pkg/metrics"
	"github.com/karmada-quota/karmada-quota/pkg/quota"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
)

// requeuer retriggers the scheduling of bindings that wait for quota when a quota gains headroom, instead of
// leaving them to the scheduler's back-off. Only as many as the headroom can take are requeued, highest priority
// first, and a requeued binding is left alone for a cooldown: a freed CPU must not set off a storm of retries.
type requeuer struct {
	client   client.Client
	clock    clock.PassiveClock
	recorder record.EventRecorder
	cooldown time.Duration

	mu   sync.Mutex
	last map[types.UID]time.Time
}

type candidate struct {
	rb            *workv1alpha2.ResourceBinding
	need          resources.List
	priority      int32
	forMemberRoom bool
}

// requeue requeues as many of the bindings waiting on q as its room can take: headroom, and for a binding the
// scheduler found no member room for, memberRoom on the resources limited on members too (quota.Tally's).
// waiting are the recount's (quota.Tally.Waiting), on this very quota only (Ledger.WaitsOn): one that needs nothing
// it limits waits on another quota, and requeueing it here would only have it refused again.
func (r *requeuer) requeue(ctx context.Context, q client.Object, headroom, memberRoom resources.List, waiting []quota.WaitingBinding) error {
	r.forgetCooledDown()
	// Copies to promise from: the state keeps the recount's, to compare the next recount's with.
	headroom, memberRoom = headroom.Clone(), memberRoom.Clone()
	promise := func(need resources.List) {
		headroom.Sub(need)
		for name, v := range need {
			if room, limited := memberRoom[name]; limited {
				memberRoom[name] = resources.Sub(room, v)
			}
		}
	}
	var candidates []candidate
	for _, w := range waiting {
		if r.coolingDown(w.Binding.UID) {
			// Requeued a moment ago and not yet placed: what it needs is promised to it, not free for the next.
			promise(w.Need)
			continue
		}
		priority := int32(0)
		if w.Binding.Spec.SchedulePriority != nil {
			priority = w.Binding.Spec.SchedulePriority.Priority
		}
		candidates = append(candidates, candidate{rb: w.Binding, need: w.Need, priority: priority, forMemberRoom: w.ForMemberRoom})
	}
	sort.SliceStable(candidates, func(i, j int) bool {
		a, b := candidates[i], candidates[j]
		if a.priority != b.priority {
			return a.priority > b.priority
		}
		if !a.rb.CreationTimestamp.Equal(&b.rb.CreationTimestamp) {
			return a.rb.CreationTimestamp.Before(&b.rb.CreationTimestamp)
		}
		return a.rb.Name < b.rb.Name
	})
	now := metav1.NewTime(r.clock.Now())
	for _, c := range candidates {
		if !fits(c.need, headroom) || c.forMemberRoom && !fitsWhereLimited(c.need, memberRoom) {
			continue
		}
		requeued, err := r.trigger(ctx, c.rb, now)
		if err != nil {
			return fmt.Errorf("requeueing binding %s: %w", c.rb.Name, err)
		}
		if !requeued {
			// Deleted since it was listed: nothing requeued, and no headroom taken from the next candidate.
			continue
		}
		promise(c.need)
		metrics.BindingsRequeued.Inc()
		r.recorder.Eventf(q, corev1.EventTypeNormal, EventBindingRequeued, "Requeued binding %s: usage dropped and it now fits", c.rb.Name)
	}
	return nil
}

// trigger bumps spec.rescheduleTriggeredAt, which Karmada's scheduler takes as a request to schedule again now.
// It reports false, and no error, for a binding deleted meanwhile.
func (r *requeuer) trigger(ctx context.Context, rb *workv1alpha2.ResourceBinding, now metav1.Time) (bool, error) {
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"rescheduleTriggeredAt": now}})
	if err != nil {
		return false, err
	}
	if err := r.client.Patch(ctx, rb.DeepCopy(), client.RawPatch(types.MergePatchType, patch)); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	r.mu.Lock()
	r.last[rb.UID] = now.Time
	r.mu.Unlock()
	return true, nil
}

// forgetCooledDown drops the cooldowns that passed. coolingDown drops one only when asked about a binding that
// still waits; a binding scheduled or deleted since is never asked about again, and would be remembered for good.
func (r *requeuer) forgetCooledDown() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for uid, at := range r.last {
		if r.clock.Since(at) >= r.cooldown {
			delete(r.last, uid)
		}
	}
}

func (r *requeuer) coolingDown(uid types.UID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	at, ok := r.last[uid]
	if ok && r.clock.Since(at) >= r.cooldown {
		delete(r.last, uid)
		return false
	}
	return ok
}

func fits(need, headroom resources.List) bool {
	for name, v := range need {
		if v > headroom[name] {
			return false
		}
	}
	return true
}

// fitsWhereLimited is fits for the resources room has: those limited on members.
func fitsWhereLimited(need, room resources.List) bool {
	for name, v := range need {
		if r, limited := room[name]; limited && v > r {
			return false
		}
	}
	return true
}
