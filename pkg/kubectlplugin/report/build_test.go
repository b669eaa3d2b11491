package report

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

var list = utiltesting.List

// ready marks a quota's status as the controller writes it: computed for generation observed, Ready=True.
func ready(w *utiltesting.QuotaWrapper, observed int64) *utiltesting.QuotaWrapper {
	w.Status.ObservedGeneration = observed
	w.Status.Hard = w.Spec.Hard.DeepCopy()
	w.Status.Conditions = []metav1.Condition{{
		Type: quotav1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Calculated",
		Message: "Usage recounted from the namespace's ResourceBindings", ObservedGeneration: observed,
		LastTransitionTime: utiltesting.FixedTime,
	}}
	return w
}

func cluster(name string, used corev1.ResourceList) quotav1alpha1.ClusterUsage {
	return quotav1alpha1.ClusterUsage{Name: name, Used: used}
}

// waiting is a Deployment's binding the scheduler could not place because a quota refused it.
func waiting(name string, replicas int32, requests corev1.ResourceList) *utiltesting.BindingWrapper {
	b := utiltesting.MakeBinding("team-a", name).Replicas(replicas)
	if requests != nil {
		b.Requests(requests)
	}
	return b.Scheduled(false, workv1alpha2.BindingReasonQuotaExceeded)
}

// refusedWith sets the message of a waiting binding's Scheduled condition: the webhook's refusal, as the scheduler
// records it.
func refusedWith(b *utiltesting.BindingWrapper, refusal string) *utiltesting.BindingWrapper {
	b.Status.Conditions[0].Message = `admission webhook "resourcebinding.karmada-quota.io" denied the request: ` + refusal
	return b
}

func bindings(bs ...*utiltesting.BindingWrapper) []workv1alpha2.ResourceBinding {
	out := make([]workv1alpha2.ResourceBinding, len(bs))
	for i, b := range bs {
		out[i] = *b.Obj()
	}
	return out
}

func deployment(name string) Workload {
	return Workload{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "team-a", Name: name}
}

func TestDescribe(t *testing.T) {
	teamA := ready(utiltesting.MakeQuota("team-a", "team-a").
		Hard(list("cpu", "10", "requests.memory", "20Gi", "pods", "20", "count/deployments.apps", "5")).
		Used(list("cpu", "3500m", "requests.memory", "3Gi", "pods", "5", "count/deployments.apps", "2")), 1)
	teamA.Status.Clusters = []quotav1alpha1.ClusterUsage{
		cluster("member2", list("cpu", "1500m", "requests.memory", "1Gi", "pods", "3")),
		cluster("member1", list("cpu", "2", "requests.memory", "2Gi", "pods", "2")),
	}
	// member1 was read: its pods request more CPU than is charged there.
	teamA.Status.Clusters[1].Running = list("cpu", "2500m", "requests.memory", "2Gi", "pods", "3")
	someBinding := utiltesting.MakeBinding("team-a", "other").Obj()
	expires := time.Date(2030, time.January, 1, 0, 0, 0, 0, time.UTC)

	cases := map[string]struct {
		quota *quotav1alpha1.KarmadaQuota
		// ledger is the quota's ledger object; nil reads the quota alone (its status lists the reservations an
		// earlier release's webhook wrote there).
		ledger   *quotav1alpha1.KarmadaQuotaLedger
		bindings []workv1alpha2.ResourceBinding
		want     Quota
	}{
		"limits, use per cluster in cluster order, and the bindings waiting on it": {
			quota: teamA.Clone().Reservation(someBinding, 1, list("cpu", "1", "pods", "1"), time.Unix(0, 0)).Obj(),
			bindings: bindings(
				// Short of cpu: needs 8, and 10 - 3500m - 1 = 5500m is available.
				waiting("batch", 8, list("cpu", "1", "memory", "2Gi")),
				// Needs more than hard alone.
				waiting("huge", 30, list("cpu", "100m", "memory", "1Mi")),
				// Fits here: another quota refuses it.
				waiting("small", 1, list("cpu", "100m", "memory", "1Mi")),
				// Scaled from 2 to 4: only 2 more are needed.
				waiting("scaled", 4, list("cpu", "1", "memory", "1Gi")).Cluster("member1", 2),
				// Places replicas without a cpu request under a quota that limits cpu.
				waiting("unrequested", 1, list("memory", "1Gi")),
				// Not waiting for quota, or not any more.
				utiltesting.MakeBinding("team-a", "placed").Replicas(1).Requests(list("cpu", "1")).Cluster("member1", 1).
					Scheduled(true, workv1alpha2.BindingReasonSuccess),
				utiltesting.MakeBinding("team-a", "no-fit").Replicas(1).Requests(list("cpu", "1")).
					Scheduled(false, workv1alpha2.BindingReasonNoClusterFit),
				waiting("deleting", 1, list("cpu", "1", "memory", "1Gi")).Deleting(),
			),
			want: Quota{
				Namespace: "team-a", Name: "team-a",
				Status: Status{State: Current, Ready: "True", Reason: "Calculated",
					Message: "Usage recounted from the namespace's ResourceBindings", Generation: 1, ObservedGeneration: 1},
				Resources: []Resource{
					{Name: "count/deployments.apps", Used: "2", Reserved: "0", Hard: "5", Available: "3", UsedPercent: 40},
					{Name: "cpu", Used: "3500m", Reserved: "1", Hard: "10", Available: "5500m", UsedPercent: 35},
					{Name: "pods", Used: "5", Reserved: "1", Hard: "20", Available: "14", UsedPercent: 25},
					{Name: "requests.memory", Used: "3Gi", Reserved: "0", Hard: "20Gi", Available: "17Gi", UsedPercent: 15},
				},
				Clusters: []ClusterUsage{
					{Cluster: "member1", Used: map[string]string{"cpu": "2", "requests.memory": "2Gi", "pods": "2"},
						Running: map[string]string{"cpu": "2500m", "requests.memory": "2Gi", "pods": "3"}},
					{Cluster: "member2", Used: map[string]string{"cpu": "1500m", "requests.memory": "1Gi", "pods": "3"}},
				},
				Waiting: []Waiting{
					{
						Binding: "batch", Workload: deployment("batch"),
						Asks:  Asks{Replicas: 8, PerReplica: map[string]string{"cpu": "1", "memory": "2Gi"}},
						Needs: map[string]string{"cpu": "8", "requests.memory": "16Gi", "pods": "8"},
						Short: []Shortfall{{Resource: "cpu", Need: "8", Available: "5500m", ShortBy: "2500m", Hard: "10"}},
					},
					{
						Binding: "huge", Workload: deployment("huge"),
						Asks:  Asks{Replicas: 30, PerReplica: map[string]string{"cpu": "100m", "memory": "1Mi"}},
						Needs: map[string]string{"cpu": "3", "requests.memory": "30Mi", "pods": "30"},
						Short: []Shortfall{{Resource: "pods", Need: "30", Available: "14", ShortBy: "16", Hard: "20", NeverFits: true}},
					},
					{
						Binding: "scaled", Workload: deployment("scaled"),
						Asks:  Asks{Replicas: 4, Placed: 2, PerReplica: map[string]string{"cpu": "1", "memory": "1Gi"}},
						Needs: map[string]string{"cpu": "2", "requests.memory": "2Gi", "pods": "2"},
					},
					{
						Binding: "small", Workload: deployment("small"),
						Asks:  Asks{Replicas: 1, PerReplica: map[string]string{"cpu": "100m", "memory": "1Mi"}},
						Needs: map[string]string{"cpu": "100m", "requests.memory": "1Mi", "pods": "1"},
					},
					{
						Binding: "unrequested", Workload: deployment("unrequested"),
						Asks:            Asks{Replicas: 1, PerReplica: map[string]string{"memory": "1Gi"}},
						Needs:           map[string]string{"requests.memory": "1Gi", "pods": "1"},
						MissingRequests: []string{"cpu"},
					},
				},
				Reservations: []Reservation{{Kind: "ResourceBinding", APIVersion: "work.karmada.io/v1alpha2", Name: "other",
					Generation: 1, Reserved: map[string]string{"cpu": "1", "pods": "1"}, Expires: "1970-01-01T00:00:00Z"}},
			},
		},
		"reservations from the ledger: a Work's with its execution namespace and member, after the bindings'; the folded sum": {
			quota:  withoutReservations(reservationsQuota(expires)),
			ledger: utiltesting.MoveToLedger(reservationsQuota(expires)),
			want: Quota{
				Namespace: "team-a", Name: "team-a",
				Status: Status{State: Current, Ready: "True", Reason: "Calculated",
					Message: "Usage recounted from the namespace's ResourceBindings", Generation: 1, ObservedGeneration: 1},
				Resources: []Resource{
					{Name: "pods", Used: "1", Reserved: "8", Hard: "10", Available: "1", UsedPercent: 10},
					{Name: "requests.cpu", Used: "1", Reserved: "3100m", Hard: "4", Available: "-100m", UsedPercent: 25},
				},
				Reservations: []Reservation{
					{Kind: "ResourceBinding", APIVersion: "work.karmada.io/v1alpha2", Name: "web-deployment", Generation: 3,
						Reserved: map[string]string{"requests.cpu": "500m", "pods": "1"}, Expires: "2030-01-01T00:00:00Z"},
					{Kind: "Work", APIVersion: "work.karmada.io/v1alpha1", Namespace: "karmada-es-member1", Name: "agent-5d8f",
						Cluster: "member1", Generation: 2, Reserved: map[string]string{"requests.cpu": "600m", "pods": "3"},
						Expires: "2030-01-01T00:00:00Z"},
				},
				FoldedReservations: &FoldedReservations{Count: 12, Reserved: map[string]string{"requests.cpu": "2", "pods": "4"},
					Expires: "2030-01-01T00:01:00Z"},
			},
		},
		"the ledger not readable (a role from an earlier release): what is reserved, in sum, from status": {
			quota: withoutReservations(reservationsQuota(expires)),
			want: Quota{
				Namespace: "team-a", Name: "team-a",
				Status: Status{State: Current, Ready: "True", Reason: "Calculated",
					Message: "Usage recounted from the namespace's ResourceBindings", Generation: 1, ObservedGeneration: 1},
				Resources: []Resource{
					{Name: "pods", Used: "1", Reserved: "8", Hard: "10", Available: "1", UsedPercent: 10},
					{Name: "requests.cpu", Used: "1", Reserved: "3100m", Hard: "4", Available: "-100m", UsedPercent: 25},
				},
			},
		},
		"a scoped quota: its scopes explained, and only the bindings of its priority class wait on it": {
			quota: ready(utiltesting.MakeQuota("team-a", "gpu").Hard(list("nvidia.com/gpu", "2")).
				Used(list("nvidia.com/gpu", "2")).
				Scope(corev1.ScopeSelectorOpIn, "urgent", "high").Scope(corev1.ScopeSelectorOpExists), 1).Obj(),
			bindings: bindings(
				waiting("train", 4, list("cpu", "1", "nvidia.com/gpu", "1")).PriorityClass("high"),
				waiting("low", 4, list("cpu", "1", "nvidia.com/gpu", "1")).PriorityClass("low"),
			),
			want: Quota{
				Namespace: "team-a", Name: "gpu",
				Scopes: []Scope{
					{ScopeName: "PriorityClass", Operator: "In", Values: []string{"high", "urgent"},
						Meaning: "Matches replicas whose PriorityClass is one of high, urgent."},
					{ScopeName: "PriorityClass", Operator: "Exists", Meaning: "Matches replicas that name a PriorityClass."},
				},
				Status: Status{State: Current, Ready: "True", Reason: "Calculated",
					Message: "Usage recounted from the namespace's ResourceBindings", Generation: 1, ObservedGeneration: 1},
				Resources: []Resource{{Name: "nvidia.com/gpu", Used: "2", Reserved: "0", Hard: "2", Available: "0", UsedPercent: 100}},
				Waiting: []Waiting{{
					Binding: "train", Workload: deployment("train"),
					Asks:  Asks{Replicas: 4, PerReplica: map[string]string{"cpu": "1", "nvidia.com/gpu": "1"}},
					Needs: map[string]string{"nvidia.com/gpu": "4"},
					Short: []Shortfall{{Resource: "nvidia.com/gpu", Need: "4", Available: "0", ShortBy: "4", Hard: "2", NeverFits: true}},
				}},
			},
		},
		"a failover: what graceful evictions keep per cluster and until when; storage in bytes as kubectl shows it": {
			quota: func() *quotav1alpha1.KarmadaQuota {
				const gold = "gold.storageclass.storage.k8s.io/requests.storage"
				q := ready(utiltesting.MakeQuota("team-a", "team-a").
					Hard(list("cpu", "10", "pods", "20", "requests.storage", "107374182400", gold, "50Gi", "persistentvolumeclaims", "10")).
					Used(list("cpu", "7", "pods", "13", "requests.storage", "21474836480", gold, "1500000000", "persistentvolumeclaims", "3")), 1).Obj()
				until := metav1.NewTime(utiltesting.FixedTime.Add(10 * time.Minute))
				q.Status.Clusters = []quotav1alpha1.ClusterUsage{
					// Held until released (purgeMode Never): the status has no evictingUntil.
					{Name: "member3", Used: list("cpu", "1", "pods", "1"), Evicting: list("cpu", "1", "pods", "1")},
					// A failover from member1 ends at the latest 10 minutes after it began; a zero amount is left out.
					{Name: "member1", Used: list("cpu", "4", "pods", "8", "requests.storage", "10737418240", gold, "1500000000", "persistentvolumeclaims", "2"),
						Evicting:      list("cpu", "2", "pods", "4", "requests.storage", "10737418240", gold, "0", "persistentvolumeclaims", "1"),
						EvictingUntil: &until},
					// The replacement: nothing evicting.
					{Name: "member2", Used: list("cpu", "2", "pods", "4", "requests.storage", "10Gi", "persistentvolumeclaims", "1")},
				}
				return q
			}(),
			want: Quota{
				Namespace: "team-a", Name: "team-a",
				Status: Status{State: Current, Ready: "True", Reason: "Calculated",
					Message: "Usage recounted from the namespace's ResourceBindings", Generation: 1, ObservedGeneration: 1},
				Resources: []Resource{
					{Name: "cpu", Used: "7", Reserved: "0", Hard: "10", Available: "3", UsedPercent: 70},
					{Name: "gold.storageclass.storage.k8s.io/requests.storage", Used: "1500M", Reserved: "0", Hard: "50Gi", Available: "52187091200", UsedPercent: 2},
					{Name: "persistentvolumeclaims", Used: "3", Reserved: "0", Hard: "10", Available: "7", UsedPercent: 30},
					{Name: "pods", Used: "13", Reserved: "0", Hard: "20", Available: "7", UsedPercent: 65},
					{Name: "requests.storage", Used: "20Gi", Reserved: "0", Hard: "100Gi", Available: "80Gi", UsedPercent: 20},
				},
				Clusters: []ClusterUsage{
					{Cluster: "member1",
						Used: map[string]string{"cpu": "4", "pods": "8", "requests.storage": "10Gi",
							"gold.storageclass.storage.k8s.io/requests.storage": "1500M", "persistentvolumeclaims": "2"},
						Evicting:      map[string]string{"cpu": "2", "pods": "4", "requests.storage": "10Gi", "persistentvolumeclaims": "1"},
						EvictingUntil: "2025-01-01T00:10:00Z"},
					{Cluster: "member2", Used: map[string]string{"cpu": "2", "pods": "4", "requests.storage": "10Gi", "persistentvolumeclaims": "1"}},
					{Cluster: "member3", Used: map[string]string{"cpu": "1", "pods": "1"},
						Evicting: map[string]string{"cpu": "1", "pods": "1"}, EvictingHeld: true},
				},
			},
		},
		"limits on member clusters and groups: each cluster's hard beside its use, the groups, and the bindings they refuse": {
			quota: func() *quotav1alpha1.KarmadaQuota {
				q := ready(capped("team-a").Used(list("cpu", "3", "pods", "3")), 1).
					Reservation(someBinding, 1, list("cpu", "1", "pods", "1"), time.Unix(0, 0)).Obj()
				// A group added since the last recount: the controller has not counted it.
				q.Spec.ClusterGroups = append(q.Spec.ClusterGroups, quotav1alpha1.ClusterGroupLimit{
					Name: "us", ClusterSelector: metav1.LabelSelector{MatchLabels: map[string]string{"region": "us"}}, Hard: list("pods", "8"),
				})
				// The reservation grows member2, which the group eu counts.
				q.Status.Reservations[0].Clusters = []quotav1alpha1.ClusterReservation{{Name: "member2", Reserved: list("cpu", "1")}}
				q.Status.Clusters = []quotav1alpha1.ClusterUsage{
					// As the controller writes them: memory, limited on member1 only, is used there.
					{Name: "member1", Used: list("cpu", "2", "memory", "1Gi", "pods", "2"), Hard: list("cpu", "2", "memory", "4Gi")},
					{Name: "member2", Used: list("cpu", "1", "pods", "1"), Reserved: list("cpu", "1")},
					{Name: "member9", Hard: list("cpu", "4"), NotJoined: true},
				}
				q.Status.ClusterGroups = []quotav1alpha1.ClusterGroupUsage{
					{Name: "eu", Clusters: []string{"member2", "member1"}, Hard: list("cpu", "5"), Used: list("cpu", "3"), Reserved: list("cpu", "1")},
				}
				return q
			}(),
			bindings: bindings(
				// Member1 has no room left, though the namespace has.
				refusedWith(waiting("pinned", 2, list("cpu", "1")),
					"exceeded quota: team-a, cpu in cluster member1: requested 2, used 2, reserved 0, hard 2"),
				// 3 in eu, where 1 is free: 3 used, 1 reserved on member2.
				refusedWith(waiting("eu-app", 3, list("cpu", "1")),
					"exceeded quota: team-a, cpu in cluster group eu: requested 3, used 3, reserved 0, hard 5"),
				// Refused on member9 when it was full: it has room now, so nothing is short there.
				refusedWith(waiting("later", 1, list("cpu", "1")),
					"exceeded quota: team-a, cpu in cluster member9: requested 1, used 4, reserved 0, hard 4"),
			),
			want: Quota{
				Namespace: "team-a", Name: "team-a",
				Status: Status{State: Current, Ready: "True", Reason: "Calculated",
					Message: "Usage recounted from the namespace's ResourceBindings", Generation: 1, ObservedGeneration: 1},
				Resources: []Resource{
					{Name: "cpu", Used: "3", Reserved: "1", Hard: "10", Available: "6", UsedPercent: 30},
					{Name: "pods", Used: "3", Reserved: "1", Hard: "20", Available: "16", UsedPercent: 15},
				},
				Clusters: []ClusterUsage{
					{Cluster: "member1", Used: map[string]string{"cpu": "2", "memory": "1Gi", "pods": "2"},
						Hard: map[string]string{"cpu": "2", "memory": "4Gi"}, Reserved: map[string]string{"cpu": "0", "memory": "0"}},
					{Cluster: "member2", Used: map[string]string{"cpu": "1", "pods": "1"}, Reserved: map[string]string{"cpu": "1"}},
					{Cluster: "member9", NotJoined: true, Used: map[string]string{},
						Hard: map[string]string{"cpu": "4"}, Reserved: map[string]string{"cpu": "0"}},
				},
				ClusterGroups: []ClusterGroup{
					{Group: "eu", Clusters: []string{"member1", "member2"}, Used: map[string]string{"cpu": "3"},
						Reserved: map[string]string{"cpu": "1"}, Hard: map[string]string{"cpu": "5"}},
					{Group: "us", NotCounted: true, Hard: map[string]string{"pods": "8"}},
				},
				Waiting: []Waiting{
					{
						Binding: "eu-app", Workload: deployment("eu-app"),
						Asks:  Asks{Replicas: 3, PerReplica: map[string]string{"cpu": "1"}},
						Needs: map[string]string{"cpu": "3", "pods": "3"},
						Short: []Shortfall{{Resource: "cpu", Group: "eu", Need: "3", Available: "1", ShortBy: "2", Hard: "5"}},
					},
					{
						Binding: "later", Workload: deployment("later"),
						Asks:  Asks{Replicas: 1, PerReplica: map[string]string{"cpu": "1"}},
						Needs: map[string]string{"cpu": "1", "pods": "1"},
					},
					{
						Binding: "pinned", Workload: deployment("pinned"),
						Asks:  Asks{Replicas: 2, PerReplica: map[string]string{"cpu": "1"}},
						Needs: map[string]string{"cpu": "2", "pods": "2"},
						Short: []Shortfall{{Resource: "cpu", Cluster: "member1", Need: "2", Available: "0", ShortBy: "2", Hard: "2"}},
					},
				},
				Reservations: []Reservation{{Kind: "ResourceBinding", APIVersion: "work.karmada.io/v1alpha2", Name: "other",
					Generation: 1, Reserved: map[string]string{"cpu": "1", "pods": "1"},
					Clusters: map[string]map[string]string{"member2": {"cpu": "1"}}, Expires: "1970-01-01T00:00:00Z"}},
			},
		},
		"a quota the controller never saw: enforced from spec.hard, status none yet": {
			quota: utiltesting.MakeQuota("team-a", "new").Hard(list("memory", "1536Mi")).Obj(),
			want: Quota{
				Namespace: "team-a", Name: "new",
				Status:    Status{State: NoStatus, Ready: "Unknown", Generation: 1},
				Resources: []Resource{{Name: "memory", Used: "0", Reserved: "0", Hard: "1536Mi", Available: "1536Mi"}},
			},
		},
		"an invalid quota: the limits as written": {
			quota: utiltesting.MakeQuota("team-a", "bad").Hard(list("cpu", "1", "requests.cpu", "2")).Obj(),
			want: Quota{
				Namespace: "team-a", Name: "bad",
				Status: Status{State: NoStatus, Ready: "Unknown", Generation: 1},
				Resources: []Resource{
					{Name: "cpu", Used: "0", Reserved: "0", Hard: "1"},
					{Name: "requests.cpu", Used: "0", Reserved: "0", Hard: "2"},
				},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Describe(tc.quota, tc.ledger, tc.bindings)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Describe (-want +got):\n%s", diff)
			}
		})
	}
}

// reservationsQuota is a quota with reservations of a binding and of a Work, and a folded sum, in its status.
func reservationsQuota(expires time.Time) *quotav1alpha1.KarmadaQuota {
	q := ready(utiltesting.MakeQuota("team-a", "team-a").Hard(list("requests.cpu", "4", "pods", "10")).
		Used(list("requests.cpu", "1", "pods", "1")), 1).
		Reservation(utiltesting.MakeBinding("team-a", "web-deployment").Obj(), 3, list("requests.cpu", "500m", "pods", "1"), expires).
		Folded(12, list("requests.cpu", "2", "pods", "4"), expires.Add(time.Minute)).Obj()
	// Written by the Work webhook: the Work first in the list, as the webhook sorts it by namespace.
	q.Status.Reservations = append([]quotav1alpha1.Reservation{{
		ReservedBy: quotav1alpha1.ReservationOwner{APIVersion: "work.karmada.io/v1alpha1", Kind: "Work",
			Namespace: "karmada-es-member1", Name: "agent-5d8f", UID: "uid-work"},
		Generation: 2, Reserved: list("requests.cpu", "600m", "pods", "3"), ExpirationTime: metav1.NewTime(expires),
	}}, q.Status.Reservations...)
	q.Status.Reserved = list("requests.cpu", "3100m", "pods", "8")
	return q
}

// withoutReservations leaves q's status as the controller writes it: the sum of the reservations, not the list.
func withoutReservations(q *quotav1alpha1.KarmadaQuota) *quotav1alpha1.KarmadaQuota {
	utiltesting.MoveToLedger(q)
	return q
}

func TestStatusOf(t *testing.T) {
	base := utiltesting.MakeQuota("team-a", "q").Hard(list("cpu", "1"))
	notReady := base.Clone()
	notReady.Status.ObservedGeneration = 1
	notReady.Status.Conditions = []metav1.Condition{{Type: quotav1alpha1.ConditionReady, Status: metav1.ConditionFalse,
		Reason: "InvalidSpec", Message: "quota q is invalid"}}
	behind := ready(base.Clone(), 1)
	behind.Generation = 2

	cases := map[string]struct {
		quota *quotav1alpha1.KarmadaQuota
		want  Status
	}{
		"never computed": {quota: base.Obj(), want: Status{State: NoStatus, Ready: "Unknown", Generation: 1}},
		"current":        {quota: ready(base.Clone(), 1).Obj(), want: Status{State: Current, Ready: "True", Reason: "Calculated", Message: "Usage recounted from the namespace's ResourceBindings", Generation: 1, ObservedGeneration: 1}},
		"spec changed since": {quota: behind.Obj(), want: Status{State: Behind, Ready: "True", Reason: "Calculated",
			Message: "Usage recounted from the namespace's ResourceBindings", Generation: 2, ObservedGeneration: 1}},
		"not ready": {quota: notReady.Obj(), want: Status{State: NotReady, Ready: "False", Reason: "InvalidSpec",
			Message: "quota q is invalid", Generation: 1, ObservedGeneration: 1}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, StatusOf(tc.quota)); diff != "" {
				t.Errorf("StatusOf (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPercent(t *testing.T) {
	cases := map[string]struct {
		used, hard, want int64
	}{
		"nothing used":                     {used: 0, hard: 10, want: 0},
		"rounded down, 100 only when full": {used: 999, hard: 1000, want: 99},
		"full":                             {used: 10, hard: 10, want: 100},
		"over hard":                        {used: 15, hard: 10, want: 150},
		"a hard of zero is full":           {used: 0, hard: 0, want: 100},
		"exact where floats are not":       {used: 29, hard: 100, want: 29},
		"bytes beyond int64 when × 100":    {used: math.MaxInt64 / 2, hard: math.MaxInt64, want: 49},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Percent(tc.used, tc.hard); got != tc.want {
				t.Errorf("Percent(%d, %d) = %d, want %d", tc.used, tc.hard, got, tc.want)
			}
		})
	}
}

func TestRows(t *testing.T) {
	quotas := []quotav1alpha1.KarmadaQuota{
		*ready(utiltesting.MakeQuota("team-b", "b").Hard(list("cpu", "2", "pods", "10")).Used(list("cpu", "1900m", "pods", "1")), 1).Obj(),
		*utiltesting.MakeQuota("team-a", "a").Hard(list("cpu", "10")).Used(list("cpu", "5")).Obj(),
	}
	byName := Rows(quotas)
	want := []Row{
		{Namespace: "team-a", Quota: "a", Resource: "cpu", Used: "5", Reserved: "0", Hard: "10", UsedPercent: 50, Status: NoStatus},
		{Namespace: "team-b", Quota: "b", Resource: "cpu", Used: "1900m", Reserved: "0", Hard: "2", UsedPercent: 95, Status: Current},
		{Namespace: "team-b", Quota: "b", Resource: "pods", Used: "1", Reserved: "0", Hard: "10", UsedPercent: 10, Status: Current},
	}
	if diff := cmp.Diff(want, byName); diff != "" {
		t.Errorf("Rows, by name (-want +got):\n%s", diff)
	}
	SortFullest(byName)
	wantFullest := []Row{want[1], want[0], want[2]}
	if diff := cmp.Diff(wantFullest, byName); diff != "" {
		t.Errorf("Rows, fullest first (-want +got):\n%s", diff)
	}
}

func TestExplain(t *testing.T) {
	teamA := ready(utiltesting.MakeQuota("team-a", "team-a").
		Hard(list("cpu", "10", "memory", "20Gi", "pods", "20", "count/deployments.apps", "5")).
		Used(list("cpu", "3500m", "memory", "3Gi", "pods", "5", "count/deployments.apps", "2")), 1).Obj()
	gpu := ready(utiltesting.MakeQuota("team-a", "gpu").Hard(list("nvidia.com/gpu", "2")).Used(list("nvidia.com/gpu", "0")).
		Scope(corev1.ScopeSelectorOpIn, "high"), 1).Obj()
	quotas := []quotav1alpha1.KarmadaQuota{*teamA, *gpu}
	refused := "admission webhook \"resourcebinding.karmada-quota.io\" denied the request: exceeded quota: team-a, cpu: requested 8, used 3500m, reserved 0, hard 10"

	batch := waiting("batch", 8, list("cpu", "1", "memory", "2Gi"))
	batch.Status.Conditions[0].Message = refused
	cases := map[string]struct {
		binding *workv1alpha2.ResourceBinding
		quotas  []quotav1alpha1.KarmadaQuota
		want    Why
	}{
		"no binding": {
			want: Why{Workload: deployment("web"), Verdict: NoBinding},
		},
		"not acted on by the scheduler yet": {
			binding: utiltesting.MakeBinding("team-a", "web").Replicas(1).Obj(),
			quotas:  quotas,
			want:    Why{Workload: deployment("web"), Binding: "web", Verdict: NotScheduledYet, Asks: &Asks{Replicas: 1}},
		},
		"not scheduled for another reason": {
			binding: utiltesting.MakeBinding("team-a", "web").Replicas(1).Scheduled(false, workv1alpha2.BindingReasonNoClusterFit).Obj(),
			quotas:  quotas,
			want: Why{Workload: deployment("web"), Binding: "web", Verdict: NotScheduled, Asks: &Asks{Replicas: 1},
				Condition: &Condition{Status: "False", Reason: workv1alpha2.BindingReasonNoClusterFit}},
		},
		"refused: short of cpu; the scoped quota does not select it": {
			binding: batch.Obj(),
			quotas:  quotas,
			want: Why{
				Workload: deployment("web"), Binding: "batch", Verdict: QuotaExceeded,
				Condition: &Condition{Status: "False", Reason: workv1alpha2.BindingReasonQuotaExceeded, Message: refused},
				Asks:      &Asks{Replicas: 8, PerReplica: map[string]string{"cpu": "1", "memory": "2Gi"}},
				Refusals: []Refusal{{Quota: "team-a",
					Short: []Shortfall{{Resource: "cpu", Need: "8", Available: "6500m", ShortBy: "1500m", Hard: "10"}}}},
			},
		},
		"refused: can never fit under the scoped quota, and lacks a cpu request under the other": {
			binding: waiting("train", 4, list("memory", "1Gi", "nvidia.com/gpu", "1")).PriorityClass("high").Obj(),
			quotas:  quotas,
			want: Why{
				Workload: deployment("web"), Binding: "train", Verdict: QuotaExceeded, PriorityClass: "high",
				Condition: &Condition{Status: "False", Reason: workv1alpha2.BindingReasonQuotaExceeded},
				Asks:      &Asks{Replicas: 4, PerReplica: map[string]string{"memory": "1Gi", "nvidia.com/gpu": "1"}},
				Refusals: []Refusal{
					{Quota: "gpu", Short: []Shortfall{{Resource: "nvidia.com/gpu", Need: "4", Available: "2", ShortBy: "2", Hard: "2", NeverFits: true}}},
					{Quota: "team-a", MissingRequests: []string{"cpu"}},
				},
			},
		},
		"refused once, fits now": {
			binding: waiting("small", 1, list("cpu", "1", "memory", "1Gi")).Obj(),
			quotas:  quotas,
			want: Why{
				Workload: deployment("web"), Binding: "small", Verdict: QuotaExceeded,
				Condition: &Condition{Status: "False", Reason: workv1alpha2.BindingReasonQuotaExceeded},
				Asks:      &Asks{Replicas: 1, PerReplica: map[string]string{"cpu": "1", "memory": "1Gi"}},
			},
		},
		"an invalid quota refuses everything": {
			binding: waiting("small", 1, list("cpu", "1")).Obj(),
			quotas:  []quotav1alpha1.KarmadaQuota{*utiltesting.MakeQuota("team-a", "bad").Hard(list("cpu", "1", "requests.cpu", "2")).Obj()},
			want: Why{
				Workload: deployment("web"), Binding: "small", Verdict: QuotaExceeded,
				Condition: &Condition{Status: "False", Reason: workv1alpha2.BindingReasonQuotaExceeded},
				Asks:      &Asks{Replicas: 1, PerReplica: map[string]string{"cpu": "1"}},
				Refusals: []Refusal{{Quota: "bad",
					Invalid: `quota bad is invalid: spec.hard: "cpu" and "requests.cpu" are the same resource (requests.cpu)`}},
			},
		},
		"scheduled: charged per cluster by the unscoped quota, not by the scoped one": {
			binding: utiltesting.MakeBinding("team-a", "web").Replicas(3).Requests(list("cpu", "500m", "memory", "1Gi")).
				Cluster("member2", 1).Cluster("member1", 2).Scheduled(true, workv1alpha2.BindingReasonSuccess).Obj(),
			quotas: quotas,
			want: Why{
				Workload: deployment("web"), Binding: "web", Verdict: Scheduled,
				Condition: &Condition{Status: "True", Reason: workv1alpha2.BindingReasonSuccess},
				Asks:      &Asks{Replicas: 3, Placed: 3, PerReplica: map[string]string{"cpu": "500m", "memory": "1Gi"}},
				Charges: []Charge{
					{Quota: "gpu"},
					{Quota: "team-a", Selected: true,
						Total: map[string]string{"count/deployments.apps": "1", "cpu": "1500m", "memory": "3Gi", "pods": "3"},
						Clusters: []ClusterUsage{
							{Cluster: "member1", Used: map[string]string{"cpu": "1", "memory": "2Gi", "pods": "2"}},
							{Cluster: "member2", Used: map[string]string{"cpu": "500m", "memory": "1Gi", "pods": "1"}},
						}},
				},
			},
		},
		"scheduled during a failover: what the eviction keeps on the cluster it left is charged there, held until released": {
			binding: utiltesting.MakeBinding("team-a", "web").Replicas(3).Requests(list("cpu", "500m", "memory", "1Gi")).
				Cluster("member1", 2).Cluster("member2", 1).Evict("member1", nil, true).Cluster("member3", 2).
				Scheduled(true, workv1alpha2.BindingReasonSuccess).Obj(),
			quotas: quotas,
			want: Why{
				Workload: deployment("web"), Binding: "web", Verdict: Scheduled,
				Condition: &Condition{Status: "True", Reason: workv1alpha2.BindingReasonSuccess},
				Asks:      &Asks{Replicas: 3, Placed: 3, PerReplica: map[string]string{"cpu": "500m", "memory": "1Gi"}},
				Charges: []Charge{
					{Quota: "gpu"},
					{Quota: "team-a", Selected: true,
						Total: map[string]string{"count/deployments.apps": "1", "cpu": "2500m", "memory": "5Gi", "pods": "5"},
						Clusters: []ClusterUsage{
							{Cluster: "member1", Used: map[string]string{"cpu": "1", "memory": "2Gi", "pods": "2"},
								Evicting: map[string]string{"cpu": "1", "memory": "2Gi", "pods": "2"}, EvictingHeld: true},
							{Cluster: "member2", Used: map[string]string{"cpu": "500m", "memory": "1Gi", "pods": "1"}},
							{Cluster: "member3", Used: map[string]string{"cpu": "1", "memory": "2Gi", "pods": "2"}},
						}},
				},
			},
		},
	}
	// Cluster and group limits: team-a caps member1 (2 cpu, all used) and the EU clusters (5 cpu, 3 used, 1 of it on
	// member2); other caps member2 at 1 cpu, none used. The refusal names where; the figures are the quotas' now.
	capped := ready(capped("team-a").Used(list("cpu", "3", "pods", "3")), 1).Obj()
	capped.Status.Clusters = []quotav1alpha1.ClusterUsage{
		{Name: "member1", Used: list("cpu", "2", "pods", "2"), Hard: list("cpu", "2", "memory", "4Gi")},
		{Name: "member2", Used: list("cpu", "1", "pods", "1")},
	}
	capped.Status.ClusterGroups = []quotav1alpha1.ClusterGroupUsage{{Name: "eu", Clusters: []string{"member1", "member2"}, Hard: list("cpu", "5"), Used: list("cpu", "3")}}
	other := ready(utiltesting.MakeQuota("team-a", "other").Hard(list("pods", "100")), 1).Obj()
	other.Spec.Clusters = []quotav1alpha1.ClusterLimit{{Name: "member2", Hard: list("cpu", "1")}}
	withLimits := []quotav1alpha1.KarmadaQuota{*capped, *other}
	// The group eu as a quota counts it before the controller has: the refusal's own figures.
	uncounted := capped.DeepCopy()
	uncounted.Status.ClusterGroups = nil
	// The cluster limit removed since the refusal.
	lifted := capped.DeepCopy()
	lifted.Spec.Clusters = nil
	byLimits := func(name string, replicas int32, refusal string) *workv1alpha2.ResourceBinding {
		return refusedWith(waiting(name, replicas, list("cpu", "1")), refusal).Obj()
	}
	const relayed = `admission webhook "resourcebinding.karmada-quota.io" denied the request: `
	onMember1 := "exceeded quota: team-a, cpu in cluster member1: requested 2, used 2, reserved 0, hard 2"
	overTheGroup := "exceeded quota: team-a, cpu in cluster group eu: requested 4, used 2, reserved 0, hard 5"
	twoQuotas := "exceeded quota: team-a, cpu in cluster member1: requested 3, used 2, reserved 0, hard 2 (can never fit: the request alone exceeds hard); " +
		"exceeded quota: other, cpu in cluster member2: requested 2, used 0, reserved 0, hard 1 (can never fit: the request alone exceeds hard)"
	limitCases := map[string]struct {
		binding *workv1alpha2.ResourceBinding
		quotas  []quotav1alpha1.KarmadaQuota
		want    Why
	}{
		"refused by a cluster's limit, though the namespace has room": {
			binding: byLimits("pinned", 2, onMember1),
			quotas:  withLimits,
			want: Why{
				Workload: deployment("web"), Binding: "pinned", Verdict: QuotaExceeded,
				Condition: &Condition{Status: "False", Reason: workv1alpha2.BindingReasonQuotaExceeded, Message: relayed + onMember1},
				Asks:      &Asks{Replicas: 2, PerReplica: map[string]string{"cpu": "1"}},
				Refusals: []Refusal{{Quota: "team-a",
					Short: []Shortfall{{Resource: "cpu", Cluster: "member1", Need: "2", Available: "0", ShortBy: "2", Hard: "2"}}}},
			},
		},
		"refused by a group's limit: its clusters' use now, as the controller last counted them": {
			binding: byLimits("eu-app", 4, overTheGroup),
			quotas:  withLimits,
			want: Why{
				Workload: deployment("web"), Binding: "eu-app", Verdict: QuotaExceeded,
				Condition: &Condition{Status: "False", Reason: workv1alpha2.BindingReasonQuotaExceeded, Message: relayed + overTheGroup},
				Asks:      &Asks{Replicas: 4, PerReplica: map[string]string{"cpu": "1"}},
				Refusals: []Refusal{{Quota: "team-a",
					Short: []Shortfall{{Resource: "cpu", Group: "eu", Need: "4", Available: "2", ShortBy: "2", Hard: "5"}}}},
			},
		},
		"refused by a group the controller has not counted: the refusal's figures": {
			binding: byLimits("eu-app", 4, overTheGroup),
			quotas:  []quotav1alpha1.KarmadaQuota{*uncounted},
			want: Why{
				Workload: deployment("web"), Binding: "eu-app", Verdict: QuotaExceeded,
				Condition: &Condition{Status: "False", Reason: workv1alpha2.BindingReasonQuotaExceeded, Message: relayed + overTheGroup},
				Asks:      &Asks{Replicas: 4, PerReplica: map[string]string{"cpu": "1"}},
				Refusals: []Refusal{{Quota: "team-a",
					Short: []Shortfall{{Resource: "cpu", Group: "eu", Need: "4", Available: "3", ShortBy: "1", Hard: "5"}}}},
			},
		},
		"refused by two quotas' cluster limits, each never as placed": {
			binding: byLimits("wide", 5, twoQuotas),
			quotas:  withLimits,
			want: Why{
				Workload: deployment("web"), Binding: "wide", Verdict: QuotaExceeded,
				Condition: &Condition{Status: "False", Reason: workv1alpha2.BindingReasonQuotaExceeded, Message: relayed + twoQuotas},
				Asks:      &Asks{Replicas: 5, PerReplica: map[string]string{"cpu": "1"}},
				Refusals: []Refusal{
					{Quota: "other", Short: []Shortfall{{Resource: "cpu", Cluster: "member2", Need: "2", Available: "1", ShortBy: "1", Hard: "1", NeverFits: true}}},
					{Quota: "team-a", Short: []Shortfall{{Resource: "cpu", Cluster: "member1", Need: "3", Available: "0", ShortBy: "3", Hard: "2", NeverFits: true}}},
				},
			},
		},
		"refused by a cluster's limit removed since: no quota refuses it now": {
			binding: byLimits("pinned", 2, onMember1),
			quotas:  []quotav1alpha1.KarmadaQuota{*lifted},
			want: Why{
				Workload: deployment("web"), Binding: "pinned", Verdict: QuotaExceeded,
				Condition: &Condition{Status: "False", Reason: workv1alpha2.BindingReasonQuotaExceeded, Message: relayed + onMember1},
				Asks:      &Asks{Replicas: 2, PerReplica: map[string]string{"cpu": "1"}},
			},
		},
		"scheduled: charged per cluster what a cluster's limit counts too, memory which spec.hard does not": {
			binding: utiltesting.MakeBinding("team-a", "web").Replicas(3).Requests(list("cpu", "500m", "memory", "1Gi")).
				Cluster("member1", 1).Cluster("member2", 2).Scheduled(true, workv1alpha2.BindingReasonSuccess).Obj(),
			quotas: []quotav1alpha1.KarmadaQuota{*capped},
			want: Why{
				Workload: deployment("web"), Binding: "web", Verdict: Scheduled,
				Condition: &Condition{Status: "True", Reason: workv1alpha2.BindingReasonSuccess},
				Asks:      &Asks{Replicas: 3, Placed: 3, PerReplica: map[string]string{"cpu": "500m", "memory": "1Gi"}},
				Charges: []Charge{{Quota: "team-a", Selected: true,
					Total: map[string]string{"cpu": "1500m", "pods": "3"},
					Clusters: []ClusterUsage{
						{Cluster: "member1", Used: map[string]string{"cpu": "500m", "memory": "1Gi", "pods": "1"}},
						{Cluster: "member2", Used: map[string]string{"cpu": "1", "memory": "2Gi", "pods": "2"}},
					}}},
			},
		},
	}
	for name, tc := range limitCases {
		cases[name] = tc
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Explain(deployment("web"), tc.binding, tc.quotas, AppliedBusinessQuotas{}, nil, Events{})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Explain (-want +got):\n%s", diff)
			}
		})
	}
}
