package controller

import (
	"encoding/binary"
	"hash/fnv"
	"maps"
	"math"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/metrics"
	"github.com/karmada-quota/karmada-quota/pkg/quota"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
)

// state is what the controller last wrote for each quota: to notice another writer changing it (drift), to notice
// headroom growing (requeue), and to export metrics at scrape time.
type state struct {
	mu     sync.Mutex
	quotas map[types.NamespacedName]*quotaState
}

type quotaState struct {
	// uid tells a quota from one deleted and recreated under its name, whose fresh status is no drift.
	uid types.UID
	// written is the fingerprint of the status written last, of what drifted compares.
	written  statusPrint
	headroom resources.List
	// memberRoom is quota.Tally.MemberRoom at the last record.
	memberRoom resources.List
	// waiting are the bindings waiting on the quota at the last record.
	waiting  map[types.UID]bool
	snapshot metrics.QuotaSnapshot
}

func newState() *state {
	return &state{quotas: map[types.NamespacedName]*quotaState{}}
}

// drifted reports whether the status as read differs, in the fields only the controller writes, from what the
// controller last wrote. The webhook writes reservations only, so any difference is a hand edit or another
// writer.
func (s *state) drifted(key types.NamespacedName, uid types.UID, read *quotav1alpha1.KarmadaQuotaStatus) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	qs, ok := s.quotas[key]
	if !ok || qs.uid != uid {
		return false
	}
	return qs.written != printOf(read)
}

// statusPrint is a fingerprint of what drifted compares of a status (used, hard, the clusters), amounts by value
// ("1.5" and "1500m" alike). The state keeps it instead of a copy of the status: 10,000 quotas' statuses, copied,
// weighed more than their 100,000 bindings' cluster placements.
type statusPrint uint64

func printOf(status *quotav1alpha1.KarmadaQuotaStatus) statusPrint {
	h := fnv.New64a()
	var buf [8]byte
	number := func(v int64) {
		binary.LittleEndian.PutUint64(buf[:], uint64(v))
		h.Write(buf[:])
	}
	text := func(s string) {
		number(int64(len(s)))
		h.Write([]byte(s))
	}
	list := func(l corev1.ResourceList) {
		number(int64(len(l)))
		for _, name := range slices.Sorted(maps.Keys(l)) {
			text(string(name))
			q := l[name]
			if milli := q.MilliValue(); milli != math.MaxInt64 && milli != math.MinInt64 {
				number(milli)
			} else {
				// Beyond what milli-units hold: by its canonical spelling.
				text(q.String())
			}
		}
	}
	list(status.Used)
	list(status.Hard)
	number(int64(len(status.Clusters)))
	for i := range status.Clusters {
		c := &status.Clusters[i]
		text(c.Name)
		list(c.Hard)
		if c.NotJoined {
			number(1)
		} else {
			number(0)
		}
		list(c.Used)
		list(c.Reserved)
		list(c.Evicting)
		if c.EvictingUntil != nil {
			number(c.EvictingUntil.Unix())
		} else {
			number(-1)
		}
		list(c.Running)
	}
	return statusPrint(h.Sum64())
}

// record remembers the status now stored (q's), the status the recount rendered for the metrics (shown: the same,
// or newer counts whose write the status pacer holds back) with, for a business quota, what each namespace it selects
// uses (namespaceParts; nil for a KarmadaQuota), and the headroom, the room on members and the bindings
// waiting on the quota as the recount found them (quota.Tally; the lists are kept, not copied), and reports whether
// it is time to requeue waiting bindings: any limited resource gained headroom or room on members since the last
// record (or this is the first), or a binding is seen waiting that was not at the last record. The second covers a
// refusal whose condition reaches this controller's cache only after the growth that would have let it in: the
// growth's requeue did not see it waiting, and no later growth may come.
func (s *state) record(key types.NamespacedName, q *quotav1alpha1.KarmadaQuota, shown *quotav1alpha1.KarmadaQuotaStatus,
	namespaces []quotav1alpha1.NamespaceUsage, headroom, memberRoom resources.List, waiting quota.Waiting) bool {
	waitingUIDs := make(map[types.UID]bool, len(waiting.Bindings))
	for _, w := range waiting.Bindings {
		waitingUIDs[w.Binding.UID] = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	prev, ok := s.quotas[key]
	requeue := !ok
	if ok {
		for name, v := range headroom {
			if v > prev.headroom[name] {
				requeue = true
			}
		}
		for name, v := range memberRoom {
			if v > prev.memberRoom[name] {
				requeue = true
			}
		}
		for uid := range waitingUIDs {
			if !prev.waiting[uid] {
				requeue = true
			}
		}
	}
	s.quotas[key] = &quotaState{uid: q.UID, written: printOf(&q.Status), headroom: headroom, memberRoom: memberRoom, waiting: waitingUIDs,
		snapshot: snapshot(q, shown, namespaces, waiting)}
	return requeue
}

func (s *state) forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.quotas, key)
}

// Snapshots implements metrics.QuotaSource.
func (s *state) Snapshots() []metrics.QuotaSnapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]metrics.QuotaSnapshot, 0, len(s.quotas))
	for _, qs := range s.quotas {
		out = append(out, qs.snapshot)
	}
	return out
}

// snapshot is what the metrics export of a quota: q's identity (a business quota's with an empty namespace), status
// as rendered, and, for a business quota, each selected namespace's part (namespaces).
func snapshot(q *quotav1alpha1.KarmadaQuota, status *quotav1alpha1.KarmadaQuotaStatus, namespaces []quotav1alpha1.NamespaceUsage, waiting quota.Waiting) metrics.QuotaSnapshot {
	s := metrics.QuotaSnapshot{
		Namespace: q.Namespace, Name: q.Name,
		Hard: floats(status.Hard), Used: floats(status.Used), Reserved: floats(status.Reserved),
		Clusters: map[string]map[string]float64{},
		Waiting:  len(waiting.Bindings), OldestWaiting: waiting.Since,
	}
	for _, c := range status.Clusters {
		s.Clusters[c.Name] = floats(c.Used)
		// After Clusters holds its used: a limited cluster exports used and reserved for every resource of its limit.
		s.SetClusterLimit(c.Name, floats(c.Hard), floats(c.Reserved))
		if c.Evicting != nil {
			var until time.Time
			if c.EvictingUntil != nil {
				until = c.EvictingUntil.Time
			}
			s.SetClusterEvicting(c.Name, floats(c.Evicting), until)
		}
		if c.Running != nil {
			if s.ClustersRunning == nil {
				s.ClustersRunning = map[string]map[string]float64{}
			}
			s.ClustersRunning[c.Name] = floats(c.Running)
		}
	}
	for _, g := range status.ClusterGroups {
		s.SetGroup(g.Name, floats(g.Hard), floats(g.Used), floats(g.Reserved))
	}
	for _, n := range namespaces {
		// After Hard: a namespace exports every resource of it, 0 included.
		s.SetNamespace(n.Name, floats(n.Used))
	}
	if c := meta.FindStatusCondition(status.Conditions, quotav1alpha1.ConditionMembersWithinQuota); c != nil && c.Status != metav1.ConditionUnknown {
		more := 0.0
		if c.Status == metav1.ConditionFalse {
			more = 1
		}
		s.MembersRunningMore = &more
	}
	return s
}

// floats converts to base units: CPU in cores, memory in bytes.
func floats(l corev1.ResourceList) map[string]float64 {
	out := make(map[string]float64, len(l))
	for name, q := range l {
		out[string(name)] = q.AsApproximateFloat64()
	}
	return out
}

// tombstones remembers the UIDs of deleted bindings for a while: a reservation whose binding is gone is settled at
// once instead of holding quota until it expires.
type tombstones struct {
	mu     sync.Mutex
	keep   time.Duration
	now    func() time.Time
	uids   map[types.UID]time.Time
	pruned time.Time
}

func newTombstones(keep time.Duration, now func() time.Time) *tombstones {
	return &tombstones{keep: keep, now: now, uids: map[types.UID]time.Time{}}
}

func (t *tombstones) add(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	t.uids[uid] = now
	// Pruned on the way in, at most once a minute, so memory stays bounded by the deletes of one keep period
	// and a burst of deletes does not scan the set each time.
	if now.Sub(t.pruned) < time.Minute {
		return
	}
	t.pruned = now
	for u, at := range t.uids {
		if now.Sub(at) > t.keep {
			delete(t.uids, u)
		}
	}
}

func (t *tombstones) has(uid types.UID) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.uids[uid]
	return ok
}
