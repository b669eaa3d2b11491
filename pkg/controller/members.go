package controller

import (
	"fmt"
	"slices"
	"sort"
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
// MembersWithinQuota condition, False once a member has run more than it is charged for longer than grace.
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

// render writes the members' running requests into status.clusters and sets the condition. It returns the
// excesses that turned the condition False with this status (for an event), and when to look again should an
// excess still be within its grace.
func (v *memberView) render(key types.NamespacedName, status *quotav1alpha1.KarmadaQuotaStatus, ledger *quota.Ledger, charged map[string]resources.List, now time.Time, generation int64) (newlyOver []excess, recheck time.Duration) {
	if v == nil {
		return nil, 0
	}
	running, read := v.sampler.Running(key.Namespace)
	condition := metav1.Condition{Type: quotav1alpha1.ConditionMembersWithinQuota, ObservedGeneration: generation, LastTransitionTime: metav1.NewTime(now)}
	if !read {
		condition.Status, condition.Reason = metav1.ConditionUnknown, ReasonMembersNotRead
		condition.Message = "No member cluster has been read yet through Karmada's cluster proxy"
		meta.SetStatusCondition(&status.Conditions, condition)
		return nil, 0
	}

	// A member running pods the quota charges nothing for gets an entry too; then every member read has one.
	for _, cluster := range sortedKeys(running) {
		if !slices.ContainsFunc(status.Clusters, func(c quotav1alpha1.ClusterUsage) bool { return c.Name == cluster }) {
			status.Clusters = append(status.Clusters, quotav1alpha1.ClusterUsage{Name: cluster})
		}
	}
	sort.Slice(status.Clusters, func(i, j int) bool { return status.Clusters[i].Name < status.Clusters[j].Name })
	var found []excess
	for i := range status.Clusters {
		c := &status.Clusters[i]
		byClass, read := running[c.Name]
		if !read {
			continue
		}
		cluster := c.Name
		run := ledger.Limited(byClass.Charge(ledger.Selector))
		c.Running = ledger.RenderAll(run)
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
		meta.SetStatusCondition(&status.Conditions, condition)
		return nil, 0
	}
	since, ok := v.over[key]
	if !ok {
		since = now
		v.over[key] = now
	}
	if wait := since.Add(v.grace).Sub(now); wait > 0 {
		// Within the grace a rolling update's surge pods run: the condition stays as it was.
		if meta.FindStatusCondition(status.Conditions, quotav1alpha1.ConditionMembersWithinQuota) == nil {
			condition.Status, condition.Reason = metav1.ConditionTrue, ReasonMembersWithinQuota
			condition.Message = "Every member cluster that was read runs no more than the quota charges there"
			meta.SetStatusCondition(&status.Conditions, condition)
		}
		return nil, wait
	}
	wasFalse := meta.IsStatusConditionFalse(status.Conditions, quotav1alpha1.ConditionMembersWithinQuota)
	condition.Status, condition.Reason = metav1.ConditionFalse, ReasonMembersRunMore
	condition.Message = fmt.Sprintf("Since %s, more than the quota charges: %s. Pods created in the member outside Karmada, "+
		"or a workload Karmada left behind; they use the member but not the quota", since.UTC().Format(time.RFC3339), describe(found))
	meta.SetStatusCondition(&status.Conditions, condition)
	if wasFalse {
		return nil, 0
	}
	return found, 0
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
