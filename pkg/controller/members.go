package controller

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/members"
	"github.com/karmada-quota/karmada-quota/pkg/quota"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
)

// Reasons of the MembersWithinQuota condition, and the event of a member found running more than charged.
const (
	ReasonMembersWithinQuota = "WithinCharged"
	ReasonMembersRunMore     = "MembersRunMore"
	ReasonMembersNotRead     = "MembersNotRead"
	EventMembersRunMore      = "MembersRunMore"
)

// memberView puts what the members run next to what the quota charges there: status.clusters[].running, and the
// MembersWithinQuota condition, False once a member has run more than it is charged for longer than grace. It
// reports to renderStatus, which writes both.
type memberView struct {
	sampler membersReader
	grace   time.Duration

	mu sync.Mutex
	// over is, per quota, since when some member has run more than it is charged without a break.
	over map[types.NamespacedName]time.Time
}

// membersReader is what the view reads the members' pods from (members.Sampler).
type membersReader interface {
	Running(namespace string) (map[string]members.Running, bool)
}

// excess is one resource a member runs more of than the quota charges there.
type excess struct {
	cluster, resource string
	running, charged  string
}

// memberReport is what the members' view found at one recount, for renderStatus to write.
type memberReport struct {
	// running is what each member read runs, in the resources the quota limits; nil before any member is read.
	running map[string]resources.List
	// condition is the MembersWithinQuota condition to set; nil leaves the quota's as it is.
	condition *metav1.Condition
	// newlyOver are the excesses that turn the condition False at this recount, for an event.
	newlyOver []excess
	// recheck is when to look again, should an excess still be within its grace.
	recheck time.Duration
}

// observe compares what the members run with what the quota q charges on each (charged, per member cluster), and
// remembers since when some member has run more. A nil view reports nothing.
func (v *memberView) observe(q *quotav1alpha1.KarmadaQuota, ledger *quota.Ledger, charged map[string]resources.List, now time.Time) memberReport {
	if v == nil {
		return memberReport{}
	}
	key := types.NamespacedName{Namespace: q.Namespace, Name: q.Name}
	running, read := v.sampler.Running(key.Namespace)
	condition := metav1.Condition{Type: quotav1alpha1.ConditionMembersWithinQuota, ObservedGeneration: q.Generation, LastTransitionTime: metav1.NewTime(now)}
	if !read {
		condition.Status, condition.Reason = metav1.ConditionUnknown, ReasonMembersNotRead
		condition.Message = "No member cluster has been read yet through Karmada's cluster proxy"
		return memberReport{condition: &condition}
	}

	report := memberReport{running: make(map[string]resources.List, len(running))}
	var found []excess
	for _, cluster := range slices.Sorted(maps.Keys(running)) {
		run := ledger.Limited(running[cluster].Charge(ledger.Selector))
		report.running[cluster] = run
		for _, name := range run.Names() {
			if run[name] > charged[cluster][name] {
				found = append(found, excess{
					cluster: cluster, resource: string(ledger.AuthorName(name)),
					running: resources.Human(name, run[name]), charged: resources.Human(name, charged[cluster][name]),
				})
			}
		}
	}

	v.mu.Lock()
	defer v.mu.Unlock()
	if len(found) == 0 {
		delete(v.over, key)
		condition.Status, condition.Reason = metav1.ConditionTrue, ReasonMembersWithinQuota
		condition.Message = "Every member cluster that was read runs no more than the quota charges there"
		report.condition = &condition
		return report
	}
	since, ok := v.over[key]
	if !ok {
		since = now
		v.over[key] = now
	}
	if wait := since.Add(v.grace).Sub(now); wait > 0 {
		// Within the grace a rolling update's surge pods run: the condition stays as it was.
		if meta.FindStatusCondition(q.Status.Conditions, quotav1alpha1.ConditionMembersWithinQuota) == nil {
			condition.Status, condition.Reason = metav1.ConditionTrue, ReasonMembersWithinQuota
			condition.Message = "Every member cluster that was read runs no more than the quota charges there"
			report.condition = &condition
		}
		report.recheck = wait
		return report
	}
	condition.Status, condition.Reason = metav1.ConditionFalse, ReasonMembersRunMore
	condition.Message = fmt.Sprintf("Since %s, more than the quota charges: %s. Pods created in the member outside Karmada, "+
		"or a workload Karmada left behind; they use the member but not the quota", since.UTC().Format(time.RFC3339), describe(found))
	report.condition = &condition
	if !meta.IsStatusConditionFalse(q.Status.Conditions, quotav1alpha1.ConditionMembersWithinQuota) {
		report.newlyOver = found
	}
	return report
}

// forget drops what the view remembers of a deleted quota.
func (v *memberView) forget(key types.NamespacedName) {
	if v == nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.over, key)
}

// describe renders excesses as "member1 runs cpu 3 where 2 is charged, ...".
func describe(found []excess) string {
	parts := make([]string, len(found))
	for i, e := range found {
		parts[i] = fmt.Sprintf("%s runs %s %s where %s is charged", e.cluster, e.resource, e.running, e.charged)
	}
	return strings.Join(parts, ", ")
}
