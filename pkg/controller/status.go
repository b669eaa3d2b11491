package controller

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/priorityclass"
	"github.com/karmada-quota/karmada-quota/pkg/quota"
)

// renderStatus is the quota's status after a recount, every field the controller writes in one place: usage,
// reservations, the member clusters (what is charged there and, when the members are read, what they run), the
// summary, and the conditions. It starts from the status as read, so a condition that did not change keeps its
// transition time. unclassified are the bindings whose priority class could not be read (classify), and members
// what the members' view found (memberView.observe).
func renderStatus(q *quotav1alpha1.KarmadaQuota, ledger *quota.Ledger, tally quota.Tally, unclassified []priorityclass.Failure,
	members memberReport, joined memberClusters, now time.Time) *quotav1alpha1.KarmadaQuotaStatus {
	status := q.Status.DeepCopy()
	status.ObservedGeneration = q.Generation
	status.Hard = q.Spec.Hard.DeepCopy()
	status.Used = ledger.RenderAll(tally.Used)
	// The reservations themselves are in the ledger object; status shows their sum. Any an earlier release's
	// webhook listed here are in the ledger too by the time this status is written (writeLedger); a folded sum it
	// left here stays until it expires.
	status.Reserved = ledger.RenderAll(ledger.Reserved())
	status.Reservations = nil
	status.FoldedReservations = ledger.StatusFolded()

	// A member running pods the quota charges nothing for gets an entry too; then every member read has one.
	names := make([]string, 0, len(tally.Clusters)+len(members.running))
	for name := range tally.Clusters {
		names = append(names, name)
	}
	for name := range members.running {
		if _, charged := tally.Clusters[name]; !charged {
			names = append(names, name)
		}
	}
	// A cluster with a limit of its own is listed, used or not, joined or not: its limit is part of the quota.
	for _, name := range ledger.LimitedClusters() {
		if _, charged := tally.Clusters[name]; !charged {
			if _, running := members.running[name]; !running {
				names = append(names, name)
			}
		}
	}
	sort.Strings(names)
	status.Clusters = nil
	for _, name := range names {
		c := quotav1alpha1.ClusterUsage{Name: name}
		if used, ok := tally.Clusters[name]; ok {
			c.Used = ledger.RenderOnCluster(used)
		}
		if hard, reserved, limited := ledger.ClusterLimit(name); limited {
			c.Hard = ledger.RenderOnCluster(hard)
			c.NotJoined = !joined.has(name)
			if len(reserved.Positive()) > 0 {
				c.Reserved = ledger.RenderOnCluster(reserved.Positive())
			}
		} else if reserved := ledger.ClusterReserved(name); len(reserved.Positive()) > 0 {
			c.Reserved = ledger.RenderOnCluster(reserved.Positive())
		}
		if evicting, ok := tally.Evicting[name]; ok {
			c.Evicting = ledger.Render(evicting)
			if until := tally.EvictingUntil[name]; until != nil {
				c.EvictingUntil = &metav1.Time{Time: until.UTC().Truncate(time.Second)}
			}
		}
		if running, ok := members.running[name]; ok {
			c.Running = ledger.RenderAll(running)
		}
		status.Clusters = append(status.Clusters, c)
	}
	status.ClusterGroups = nil
	for _, g := range ledger.Groups(tally.Clusters, joined.names) {
		status.ClusterGroups = append(status.ClusterGroups, quotav1alpha1.ClusterGroupUsage{
			Name: g.Name, Clusters: g.Clusters,
			Hard: ledger.RenderOnCluster(g.Hard), Used: ledger.RenderOnCluster(g.Used), Reserved: ledger.RenderOnCluster(g.Reserved),
		})
	}
	status.Summary = summary(q.Spec.Hard, status.Used)

	// On a quota scoped by PriorityClass, a binding whose class cannot be read is counted nowhere rather than under
	// a guessed class, and the condition names it. An unscoped quota counts every binding, and carries no such
	// condition.
	if ledger.Selector.Scoped() {
		known := metav1.Condition{
			Type:               quotav1alpha1.ConditionPriorityClassesKnown,
			Status:             metav1.ConditionTrue,
			Reason:             ReasonPriorityClassesKnown,
			Message:            "The priority class of every binding of the namespace is known",
			ObservedGeneration: q.Generation,
			LastTransitionTime: metav1.NewTime(now),
		}
		if len(unclassified) > 0 {
			known.Status, known.Reason = metav1.ConditionFalse, quotav1alpha1.ReasonPriorityClassUnknown
			known.Message = unclassifiedMessage(unclassified)
		}
		meta.SetStatusCondition(&status.Conditions, known)
	} else {
		meta.RemoveStatusCondition(&status.Conditions, quotav1alpha1.ConditionPriorityClassesKnown)
	}
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{
		Type:               quotav1alpha1.ConditionReady,
		Status:             metav1.ConditionTrue,
		Reason:             ReasonCalculated,
		Message:            recountedFrom(q),
		ObservedGeneration: q.Generation,
		LastTransitionTime: metav1.NewTime(now),
	})
	if members.condition != nil {
		meta.SetStatusCondition(&status.Conditions, *members.condition)
	}
	return status
}

// recountedFrom is the Ready condition's message: where the usage was counted.
func recountedFrom(q *quotav1alpha1.KarmadaQuota) string {
	if q.IsBusiness() {
		return "Usage recounted from the ResourceBindings of the namespaces the business quota selects"
	}
	return "Usage recounted from the namespace's ResourceBindings"
}

// summary renders "cpu: 3/10, memory: 1Gi/20Gi" for the printer column, in the author's names.
func summary(hard, used corev1.ResourceList) string {
	names := make([]string, 0, len(hard))
	for name := range hard {
		names = append(names, string(name))
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, name := range names {
		u := used[corev1.ResourceName(name)]
		h := hard[corev1.ResourceName(name)]
		parts[i] = fmt.Sprintf("%s: %s/%s", name, u.String(), h.String())
	}
	return strings.Join(parts, ", ")
}
