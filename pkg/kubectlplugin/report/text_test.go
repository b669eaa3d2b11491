package report

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

// lines joins lines with a final newline, so the expected text reads as it prints.
func lines(l ...string) string {
	return strings.Join(l, "\n") + "\n"
}

func TestWriteQuota(t *testing.T) {
	cases := map[string]struct {
		quota Quota
		want  string
	}{
		"the shape of kubectl describe resourcequota, then use per cluster and waiting bindings": {
			quota: Quota{
				Namespace: "team-a", Name: "gpu",
				Scopes: []Scope{
					{ScopeName: "PriorityClass", Operator: "In", Values: []string{"high"}, Meaning: "Matches replicas whose PriorityClass is high."},
					{ScopeName: "PriorityClass", Operator: "Exists", Meaning: "Matches replicas that name a PriorityClass."},
				},
				Status:    Status{State: Current, Generation: 3, ObservedGeneration: 3},
				Resources: []Resource{{Name: "nvidia.com/gpu", Used: "2", Reserved: "0", Hard: "2"}, {Name: "requests.cpu", Used: "1500m", Reserved: "500m", Hard: "4"}},
				Clusters:  []ClusterUsage{{Cluster: "member1", Used: map[string]string{"requests.cpu": "1500m", "nvidia.com/gpu": "2"}}},
				Waiting: []Waiting{
					{Binding: "train-deployment", Workload: deployment("train"),
						Asks:  Asks{Replicas: 4, Placed: 1, PerReplica: map[string]string{"nvidia.com/gpu": "1", "cpu": "1"}},
						Short: []Shortfall{{Resource: "nvidia.com/gpu", Need: "3", ShortBy: "3", Hard: "2", NeverFits: true}}},
					{Binding: "tune-deployment", Workload: deployment("tune"),
						Asks:            Asks{Replicas: 1, PerReplica: map[string]string{"nvidia.com/gpu": "1"}},
						MissingRequests: []string{"requests.cpu"}},
					{Binding: "ok-deployment", Workload: deployment("ok"), Asks: Asks{Replicas: 1}},
				},
			},
			want: lines(
				"Name:       gpu",
				"Namespace:  team-a",
				"Scopes:     PriorityClass",
				" * Matches replicas whose PriorityClass is high.",
				" * Matches replicas that name a PriorityClass.",
				"Status:         status is current (Ready, observed generation 3)",
				"Resource        Used   Reserved  Hard",
				"--------        ----   --------  ----",
				"nvidia.com/gpu  2      0         2",
				"requests.cpu    1500m  500m      4",
				"Usage per member cluster:",
				"  Cluster  Resource        Used",
				"  -------  --------        ----",
				"  member1  nvidia.com/gpu  2",
				"  member1  requests.cpu    1500m",
				"Bindings waiting on this quota:",
				"  Binding           Workload          Asks for                                 Missing here",
				"  -------           --------          --------                                 ------------",
				"  train-deployment  Deployment/train  4 × (cpu 1, nvidia.com/gpu 1), 1 placed  nvidia.com/gpu 3 (can never fit: needs 3, hard 2)",
				"  tune-deployment   Deployment/tune   1 × (nvidia.com/gpu 1)                   requests for requests.cpu",
				"  ok-deployment     Deployment/ok     1 × (no requests)                        nothing: fits here (another quota refuses it, or it is about to be requeued)",
			),
		},
		"the members read: what they run next to what is charged": {
			quota: Quota{
				Namespace: "team-d", Name: "team-d",
				Status:    Status{State: Current},
				Resources: []Resource{{Name: "requests.cpu", Used: "4", Reserved: "0", Hard: "10"}},
				Clusters: []ClusterUsage{
					{Cluster: "member1", Used: map[string]string{"requests.cpu": "2"}, Running: map[string]string{"requests.cpu": "5"}},
					{Cluster: "member2", Used: map[string]string{"requests.cpu": "2"}},
					{Cluster: "member3", Used: map[string]string{}, Running: map[string]string{"requests.cpu": "1"}},
				},
			},
			want: lines(
				"Name:         team-d",
				"Namespace:    team-d",
				"Status:       status is current (Ready, observed generation 0)",
				"Resource      Used  Reserved  Hard",
				"--------      ----  --------  ----",
				"requests.cpu  4     0         10",
				"Usage per member cluster:",
				"  Cluster  Resource      Used  Running",
				"  -------  --------      ----  -------",
				"  member1  requests.cpu  2     5",
				"  member2  requests.cpu  2     <not read>",
				"  member3  requests.cpu  0     1",
				"Bindings waiting on this quota:  <none>",
			),
		},
		"limits on member clusters: each cluster's Reserved and Hard, one not joined, the groups, reservations by cluster": {
			quota: Quota{
				Namespace: "team-a", Name: "team-a",
				Status:    Status{State: Current, ObservedGeneration: 1},
				Resources: []Resource{{Name: "cpu", Used: "3", Reserved: "1", Hard: "10"}, {Name: "pods", Used: "3", Reserved: "1", Hard: "20"}},
				Clusters: []ClusterUsage{
					{Cluster: "member1", Used: map[string]string{"cpu": "2", "memory": "1Gi", "pods": "2"},
						Hard: map[string]string{"cpu": "2", "memory": "4Gi"}, Reserved: map[string]string{"cpu": "0", "memory": "0"}},
					{Cluster: "member2", Used: map[string]string{"cpu": "1", "pods": "1"}, Reserved: map[string]string{"cpu": "1"}},
					{Cluster: "member9", NotJoined: true, Used: map[string]string{}, Hard: map[string]string{"cpu": "4"}, Reserved: map[string]string{"cpu": "0"}},
				},
				ClusterGroups: []ClusterGroup{
					{Group: "eu", Clusters: []string{"member1", "member2"}, Used: map[string]string{"cpu": "3", "pods": "3"},
						Reserved: map[string]string{"cpu": "1", "pods": "0"}, Hard: map[string]string{"cpu": "5", "pods": "10"}},
					{Group: "asia", Used: map[string]string{"cpu": "0"}, Reserved: map[string]string{"cpu": "0"}, Hard: map[string]string{"cpu": "8"}},
					{Group: "us", NotCounted: true, Hard: map[string]string{"pods": "8"}},
				},
				Waiting: []Waiting{
					{Binding: "pinned-deployment", Workload: deployment("pinned"), Asks: Asks{Replicas: 2, PerReplica: map[string]string{"cpu": "1"}},
						Short: []Shortfall{{Resource: "cpu", Cluster: "member1", Need: "2", Available: "0", ShortBy: "2", Hard: "2"}}},
					{Binding: "wide-deployment", Workload: deployment("wide"), Asks: Asks{Replicas: 8, PerReplica: map[string]string{"cpu": "1"}},
						Short: []Shortfall{{Resource: "cpu", Group: "eu", Need: "6", Available: "1", ShortBy: "5", Hard: "5", NeverFits: true}}},
				},
				Reservations: []Reservation{{Kind: "ResourceBinding", Name: "web-deployment", Generation: 2,
					Reserved: map[string]string{"cpu": "1", "pods": "1"}, Clusters: map[string]map[string]string{"member2": {"cpu": "1"}},
					Expires: "2030-01-01T00:00:00Z"}},
			},
			want: lines(
				"Name:       team-a",
				"Namespace:  team-a",
				"Status:     status is current (Ready, observed generation 1)",
				"Resource    Used  Reserved  Hard",
				"--------    ----  --------  ----",
				"cpu         3     1         10",
				"pods        3     1         20",
				"Usage per member cluster:",
				"  Cluster               Resource  Used  Reserved  Hard",
				"  -------               --------  ----  --------  ----",
				"  member1               cpu       2     0         2",
				"  member1               memory    1Gi   0         4Gi",
				"  member1               pods      2     0         -",
				"  member2               cpu       1     1         -",
				"  member2               pods      1     0         -",
				"  member9 (not joined)  cpu       0     0         4",
				"Cluster groups:",
				"  Group  Clusters           Resource  Used       Reserved   Hard",
				"  -----  --------           --------  ----       --------   ----",
				"  eu     member1, member2   cpu       3          1          5",
				"  eu     member1, member2   pods      3          0          10",
				"  asia   <none>             cpu       0          0          8",
				"  us     <not counted yet>  pods      <unknown>  <unknown>  8",
				"Bindings waiting on this quota:",
				"  Binding            Workload           Asks for     Missing here",
				"  -------            --------           --------     ------------",
				"  pinned-deployment  Deployment/pinned  2 × (cpu 1)  cpu 2 in cluster member1",
				"  wide-deployment    Deployment/wide    8 × (cpu 1)  cpu 5 in cluster group eu (never as placed: needs 6 there, hard 5)",
				"Reservations (admitted, not yet observed):",
				"  Held by                         Reserved                        Expires               For",
				"  -------                         --------                        -------               ---",
				"  ResourceBinding web-deployment  cpu 1, pods 1 (member2: cpu 1)  2030-01-01T00:00:00Z  the binding's placement (generation 2)",
			),
		},
		"a failover: what graceful evictions keep, after the usage per cluster, and until when": {
			quota: Quota{
				Namespace: "team-a", Name: "team-a",
				Status: Status{State: Current, ObservedGeneration: 2},
				Resources: []Resource{
					{Name: "cpu", Used: "7", Reserved: "0", Hard: "10"},
					{Name: "pods", Used: "13", Reserved: "0", Hard: "20"},
					{Name: "requests.storage", Used: "20Gi", Reserved: "0", Hard: "100Gi"},
				},
				Clusters: []ClusterUsage{
					{Cluster: "member1", Used: map[string]string{"cpu": "4", "pods": "8", "requests.storage": "10Gi"},
						Evicting:      map[string]string{"cpu": "1", "pods": "2", "requests.storage": "10Gi"},
						EvictingUntil: "2025-01-01T12:34:56Z"},
					{Cluster: "member2", Used: map[string]string{"cpu": "2", "pods": "4", "requests.storage": "10Gi"}},
					{Cluster: "member3", Used: map[string]string{"cpu": "1", "pods": "1"},
						Evicting: map[string]string{"cpu": "1", "pods": "1"}, EvictingHeld: true},
				},
			},
			want: lines(
				"Name:             team-a",
				"Namespace:        team-a",
				"Status:           status is current (Ready, observed generation 2)",
				"Resource          Used  Reserved  Hard",
				"--------          ----  --------  ----",
				"cpu               7     0         10",
				"pods              13    0         20",
				"requests.storage  20Gi  0         100Gi",
				"Usage per member cluster:",
				"  Cluster  Resource          Used",
				"  -------  --------          ----",
				"  member1  cpu               4",
				"  member1  pods              8",
				"  member1  requests.storage  10Gi",
				"  member2  cpu               2",
				"  member2  pods              4",
				"  member2  requests.storage  10Gi",
				"  member3  cpu               1",
				"  member3  pods              1",
				"Evicting (part of Used, kept through a failover until Karmada's graceful eviction ends):",
				"  Cluster  Evicting                              Until",
				"  -------  --------                              -----",
				"  member1  cpu 1, pods 2, requests.storage 10Gi  2025-01-01T12:34:56Z at the latest",
				"  member3  cpu 1, pods 1                         held until released",
				"Bindings waiting on this quota:  <none>",
			),
		},
		"behind spec, nothing per cluster, nothing waiting": {
			quota: Quota{
				Namespace: "team-c", Name: "team-c",
				Status:    Status{State: Behind, Generation: 2, ObservedGeneration: 1},
				Resources: []Resource{{Name: "pods", Used: "0", Reserved: "0", Hard: "10"}},
			},
			want: lines(
				"Name:       team-c",
				"Namespace:  team-c",
				"Status:     status is behind spec: the controller has not caught up (observed generation 1, spec generation 2)",
				"Resource    Used  Reserved  Hard",
				"--------    ----  --------  ----",
				"pods        0     0         10",
				"Usage per member cluster:  <none>",
				"Bindings waiting on this quota:  <none>",
			),
		},
		"no right to read bindings; a quota never computed": {
			quota: Quota{
				Namespace: "team-c", Name: "team-c",
				Status:         Status{State: NoStatus},
				Resources:      []Resource{{Name: "pods", Used: "0", Reserved: "0", Hard: "10"}},
				WaitingUnknown: "you may not list ResourceBindings in namespace team-c",
			},
			want: lines(
				"Name:       team-c",
				"Namespace:  team-c",
				"Status:     no status yet: the controller has not computed one (is quota-controller running?)",
				"Resource    Used  Reserved  Hard",
				"--------    ----  --------  ----",
				"pods        0     0         10",
				"Usage per member cluster:  <none>",
				"Bindings waiting on this quota:  <unknown: you may not list ResourceBindings in namespace team-c>",
			),
		},
		"reservations: a binding's placement, a Work's excess on its member, the folded rest": {
			quota: Quota{
				Namespace: "team-a", Name: "team-a",
				Status:    Status{State: Current, ObservedGeneration: 1},
				Resources: []Resource{{Name: "pods", Used: "1", Reserved: "8", Hard: "10"}},
				Reservations: []Reservation{
					{Kind: "ResourceBinding", Name: "web-deployment", Generation: 3,
						Reserved: map[string]string{"requests.cpu": "500m", "pods": "1"}, Expires: "2030-01-01T00:00:00Z"},
					{Kind: "Work", Namespace: "karmada-es-member1", Name: "agent-5d8f", Cluster: "member1", Generation: 2,
						Reserved: map[string]string{"requests.cpu": "600m", "pods": "3"}, Expires: "2030-01-01T00:00:00Z"},
					{Kind: "Work", Namespace: "elsewhere", Name: "odd", Generation: 1,
						Reserved: map[string]string{"pods": "1"}, Expires: "2030-01-01T00:00:00Z"},
				},
				FoldedReservations: &FoldedReservations{Count: 12, Reserved: map[string]string{"pods": "3"}, Expires: "2030-01-01T00:01:00Z"},
			},
			want: lines(
				"Name:       team-a",
				"Namespace:  team-a",
				"Status:     status is current (Ready, observed generation 1)",
				"Resource    Used  Reserved  Hard",
				"--------    ----  --------  ----",
				"pods        1     8         10",
				"Usage per member cluster:  <none>",
				"Bindings waiting on this quota:  <none>",
				"Reservations (admitted, not yet observed):",
				"  Held by                             Reserved                   Expires               For",
				"  -------                             --------                   -------               ---",
				"  ResourceBinding web-deployment      pods 1, requests.cpu 500m  2030-01-01T00:00:00Z  the binding's placement (generation 3)",
				"  Work karmada-es-member1/agent-5d8f  pods 3, requests.cpu 600m  2030-01-01T00:00:00Z  what member cluster member1 runs beyond its binding's placement (Work generation 2)",
				"  Work elsewhere/odd                  pods 1                     2030-01-01T00:00:00Z  what its member cluster runs beyond its binding's placement (Work generation 1)",
				"  12 older, folded                    pods 3                     2030-01-01T00:01:00Z  writes admitted before the list reached its bound, charged until the last of them expires",
			),
		},
		"terminal escapes in what the API returned are neutralised, as kubectl does": {
			quota: Quota{
				Namespace: "team-c", Name: "team-c",
				Status: Status{State: NotReady, Reason: "InvalidSpec", Message: "bad\x1b[2J"},
			},
			want: lines(
				"Name:       team-c",
				"Namespace:  team-c",
				"Status:     status is not ready (InvalidSpec): bad^[[2J",
				"Resource    Used  Reserved  Hard",
				"--------    ----  --------  ----",
				"Usage per member cluster:  <none>",
				"Bindings waiting on this quota:  <none>",
			),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var b strings.Builder
			if err := WriteQuota(&b, tc.quota); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, b.String()); diff != "" {
				t.Errorf("WriteQuota (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWriteQuotasSeparatesQuotasAsKubectlDescribe(t *testing.T) {
	q := Quota{Namespace: "n", Name: "q", Status: Status{State: NoStatus}}
	var one, two strings.Builder
	if err := WriteQuotas(&one, []Quota{q}); err != nil {
		t.Fatal(err)
	}
	if err := WriteQuotas(&two, []Quota{q, q}); err != nil {
		t.Fatal(err)
	}
	if want := one.String() + "\n\n" + one.String(); two.String() != want {
		t.Errorf("two quotas:\n%s\nwant:\n%s", two.String(), want)
	}
}

func TestWriteRows(t *testing.T) {
	rows := []Row{
		{Namespace: "team-b", Quota: "team-b", Resource: "cpu", Used: "1900m", Hard: "2", UsedPercent: 95, Status: Current},
		{Namespace: "team-a", Quota: "team-a", Resource: "count/deployments.apps", Used: "2", Hard: "5", UsedPercent: 40, Status: Behind},
	}
	cases := map[string]struct {
		withNamespace bool
		want          string
	}{
		"across namespaces, as kubectl get -A": {withNamespace: true, want: lines(
			"NAMESPACE   QUOTA    RESOURCE                 USED    HARD   USED%   STATUS",
			"team-b      team-b   cpu                      1900m   2      95%     Current",
			"team-a      team-a   count/deployments.apps   2       5      40%     Behind",
		)},
		"one namespace, without its column": {want: lines(
			"QUOTA    RESOURCE                 USED    HARD   USED%   STATUS",
			"team-b   cpu                      1900m   2      95%     Current",
			"team-a   count/deployments.apps   2       5      40%     Behind",
		)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var b strings.Builder
			if err := WriteRows(&b, rows, tc.withNamespace); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, b.String()); diff != "" {
				t.Errorf("WriteRows (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWriteWhyWorkRefused(t *testing.T) {
	teamA := ready(utiltesting.MakeQuota("team-a", "team-a").Hard(list("cpu", "1", "memory", "2Gi", "count/daemonsets.apps", "5")).
		Used(list("cpu", "700m", "memory", "1Gi", "count/daemonsets.apps", "1")), 1).Obj()
	daemonSet := Workload{APIVersion: "apps/v1", Kind: "DaemonSet", Namespace: "team-a", Name: "agent"}
	agent := utiltesting.MakeBinding("team-a", "agent-daemonset").Resource("apps/v1", "DaemonSet").
		Cluster("member1", 0).Cluster("member2", 0).Scheduled(true, workv1alpha2.BindingReasonSuccess).Obj()
	one := workRefusal("member1", "agent-5d8f", "team-a/agent-daemonset", member1Found)
	two := workRefusal("member2", "agent-5d8f", "team-a/agent-daemonset", member2Found)
	synced := event("agent-daemonset.1", corev1.EventTypeNormal, "SyncWorkSucceed",
		"Sync work of ResourceBinding(team-a/agent-daemonset) successful.", 1, at(9, 0), at(9, 0))
	header := []string{
		"Workload:   DaemonSet team-a/agent",
		"Binding:    agent-daemonset",
		"Scheduled:  True (Success)",
		"Asks for:   0 replicas, no requests, none placed",
	}
	charged := []string{
		"",
		"Quota team-a charges it:",
		"  Resource               Total",
		"  --------               -----",
		"  count/daemonsets.apps  1",
	}
	block := func(l ...string) []string { return l }
	join := func(parts ...[]string) string {
		var all []string
		for _, p := range parts {
			all = append(all, p...)
		}
		return lines(all...)
	}

	cases := map[string]struct {
		events Events
		want   string
	}{
		"refused on two members: each member's refusal, and what to do": {
			events: Events{Items: []corev1.Event{
				event("agent-daemonset.2", corev1.EventTypeWarning, "SyncWorkFailed", joined(one, two), 3, at(10, 0), at(10, 5)), synced}},
			want: join(header, block(
				"Verdict:    scheduled, but quota refuses what member clusters member1, member2 would run: Karmada cannot sync its Works there and retries; the members keep what they ran before",
				"Works:      refused 3 times from 2025-06-01T10:00:00Z to 2025-06-01T10:05:00Z (event agent-daemonset.2, SyncWorkFailed); last synced 2025-06-01T09:00:00Z",
				"",
				"Quota team-a refuses what member cluster member1 would run:",
				"  Work:     karmada-es-member1/agent-5d8f",
				"  Message:  "+webhookMessage("member1", "agent-5d8f", "team-a/agent-daemonset", member1Found),
				"  Fix:      raise quota team-a, or lower what the DaemonSet or its OverridePolicy asks on member1, or free quota: Karmada retries and the Work is admitted once it fits",
				"",
				"Quota team-a refuses what member cluster member2 would run:",
				"  Work:     karmada-es-member2/agent-5d8f",
				"  Message:  "+webhookMessage("member2", "agent-5d8f", "team-a/agent-daemonset", member2Found),
				"  Fix:      raise quota team-a, or lower what the DaemonSet or its OverridePolicy asks on member2 (what it asks alone exceeds hard: waiting does not help)",
			), charged),
		},
		"refused once, on one member, by a message it cannot split": {
			events: Events{Items: []corev1.Event{
				event("agent-daemonset.2", corev1.EventTypeWarning, "SyncWorkFailed", "a Work would have member cluster member1 use too much", 1, at(10, 0), at(10, 0))}},
			want: join(header, block(
				"Verdict:    scheduled, but quota refuses what member clusters would run: Karmada cannot sync its Works and retries; the members keep what they ran before",
				"Works:      refused at 2025-06-01T10:00:00Z (event agent-daemonset.2, SyncWorkFailed); no successful sync recorded",
				"",
				"Quota refuses what member clusters would run:",
				"  Message:  a Work would have member cluster member1 use too much",
				"  Fix:      raise the quota, or lower what the DaemonSet or its OverridePolicy asks there, or free quota: Karmada retries and the Work is admitted once it fits",
			), charged),
		},
		"synced since: scheduled": {
			events: Events{Items: []corev1.Event{
				event("agent-daemonset.2", corev1.EventTypeWarning, "SyncWorkFailed", one, 1, at(8, 0), at(8, 0)), synced}},
			want: join(header, block("Verdict:    scheduled; charged by quota team-a"), charged),
		},
		"events not readable: scheduled, and says what it does not know": {
			events: Events{Unknown: "you may not list events in namespace team-a"},
			want: join(header, block(
				"Verdict:    scheduled; charged by quota team-a",
				"Works:      <unknown: you may not list events in namespace team-a, so whether quota refuses what a member cluster would run is not known>",
			), charged),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var b strings.Builder
			if err := WriteWhy(&b, Explain(daemonSet, agent, []quotav1alpha1.KarmadaQuota{*teamA}, AppliedBusinessQuotas{}, nil, tc.events)); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, b.String()); diff != "" {
				t.Errorf("WriteWhy (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWriteWhy(t *testing.T) {
	teamA := ready(utiltesting.MakeQuota("team-a", "team-a").
		Hard(list("cpu", "10", "memory", "20Gi", "pods", "20", "count/deployments.apps", "5")).
		Used(list("cpu", "3500m", "memory", "3Gi", "pods", "5", "count/deployments.apps", "2")), 1).Obj()
	gpu := ready(utiltesting.MakeQuota("team-a", "gpu").Hard(list("nvidia.com/gpu", "2")).Used(list("nvidia.com/gpu", "0")).
		Scope(corev1.ScopeSelectorOpIn, "high"), 1).Obj()
	quotas := []quotav1alpha1.KarmadaQuota{*teamA, *gpu}
	batch := waiting("batch-deployment", 8, list("cpu", "1", "memory", "2Gi"))
	batch.Status.Conditions[0].Message = "exceeded quota: team-a, cpu: requested 8, used 3500m, reserved 0, hard 10"

	cases := map[string]struct {
		binding *workv1alpha2.ResourceBinding
		want    string
	}{
		"refused, fits once usage drops": {
			binding: batch.Obj(),
			want: lines(
				"Workload:   Deployment team-a/web",
				"Binding:    batch-deployment",
				"Scheduled:  False (QuotaExceeded)",
				"Message:    exceeded quota: team-a, cpu: requested 8, used 3500m, reserved 0, hard 10",
				"Asks for:   8 replicas × (cpu 1, memory 2Gi), none placed",
				"Verdict:    not scheduled: quota team-a refuses it; it fits once usage drops",
				"",
				"Quota team-a refuses it:",
				"  Resource  Need  Available  Short by  Hard  Can fit",
				"  --------  ----  ---------  --------  ----  -------",
				"  cpu       8     6500m      1500m     10    once usage drops by 1500m",
			),
		},
		"refused, can never fit under one quota and lacks a request under the other": {
			binding: waiting("train-deployment", 4, list("memory", "1Gi", "nvidia.com/gpu", "1")).PriorityClass("high").Obj(),
			want: lines(
				"Workload:   Deployment team-a/web",
				"Binding:    train-deployment",
				"Scheduled:  False (QuotaExceeded)",
				"Asks for:   4 replicas × (memory 1Gi, nvidia.com/gpu 1), none placed",
				"Verdict:    not scheduled: quotas gpu, team-a refuse it; it can never fit under gpu: its need alone exceeds hard",
				"",
				"Quota gpu refuses it:",
				"  Resource        Need  Available  Short by  Hard  Can fit",
				"  --------        ----  ---------  --------  ----  -------",
				"  nvidia.com/gpu  4     2          2         2     never: the need alone exceeds hard",
				"",
				"Quota team-a refuses it:",
				"  It places replicas without requests for cpu, which the quota limits: set them in the workload's pod template.",
			),
		},
		"refused once, fits now": {
			binding: waiting("small-deployment", 1, list("cpu", "1", "memory", "1Gi")).Obj(),
			want: lines(
				"Workload:   Deployment team-a/web",
				"Binding:    small-deployment",
				"Scheduled:  False (QuotaExceeded)",
				"Asks for:   1 replica × (cpu 1, memory 1Gi), none placed",
				"Verdict:    refused by quota at the scheduler's last attempt, but no quota refuses it now: usage dropped since, and the controller requeues it",
			),
		},
		"scheduled: charged per cluster by one quota, not selected by the other": {
			binding: utiltesting.MakeBinding("team-a", "web-deployment").Replicas(3).Requests(list("cpu", "500m", "memory", "1Gi")).
				Cluster("member2", 1).Cluster("member1", 2).Scheduled(true, workv1alpha2.BindingReasonSuccess).Obj(),
			want: lines(
				"Workload:   Deployment team-a/web",
				"Binding:    web-deployment",
				"Scheduled:  True (Success)",
				"Asks for:   3 replicas × (cpu 500m, memory 1Gi), 3 placed",
				"Verdict:    scheduled; charged by quota team-a",
				"",
				"Quota gpu does not charge it: its scope does not select the workload's priority class (none).",
				"",
				"Quota team-a charges it:",
				"  Resource                Total  member1  member2",
				"  --------                -----  -------  -------",
				"  count/deployments.apps  1      -        -",
				"  cpu                     1500m  1        500m",
				"  memory                  3Gi    2Gi      1Gi",
				"  pods                    3      2        1",
			),
		},
		"scheduled during a failover: what the eviction keeps on the cluster it left, held until released": {
			binding: utiltesting.MakeBinding("team-a", "web-deployment").Replicas(3).Requests(list("cpu", "500m", "memory", "1Gi")).
				Cluster("member1", 2).Cluster("member2", 1).Evict("member1", nil, true).Cluster("member3", 2).
				Scheduled(true, workv1alpha2.BindingReasonSuccess).Obj(),
			want: lines(
				"Workload:   Deployment team-a/web",
				"Binding:    web-deployment",
				"Scheduled:  True (Success)",
				"Asks for:   3 replicas × (cpu 500m, memory 1Gi), 3 placed",
				"Verdict:    scheduled; charged by quota team-a",
				"",
				"Quota gpu does not charge it: its scope does not select the workload's priority class (none).",
				"",
				"Quota team-a charges it:",
				"  Resource                Total  member1  member2  member3",
				"  --------                -----  -------  -------  -------",
				"  count/deployments.apps  1      -        -        -",
				"  cpu                     2500m  1        500m     1",
				"  memory                  5Gi    2Gi      1Gi      2Gi",
				"  pods                    5      2        1        2",
				"  On member1, Karmada's graceful eviction keeps cpu 1, memory 2Gi, pods 2 of it until someone releases them (held).",
			),
		},
		"not scheduled for another reason": {
			binding: utiltesting.MakeBinding("team-a", "web-deployment").Replicas(1).
				Scheduled(false, workv1alpha2.BindingReasonNoClusterFit).Obj(),
			want: lines(
				"Workload:   Deployment team-a/web",
				"Binding:    web-deployment",
				"Scheduled:  False (NoClusterFit)",
				"Asks for:   1 replica, no requests, none placed",
				"Verdict:    not scheduled, for a reason other than quota (see Scheduled and Message)",
			),
		},
		"not acted on yet": {
			binding: utiltesting.MakeBinding("team-a", "web-deployment").Replicas(1).Obj(),
			want: lines(
				"Workload:   Deployment team-a/web",
				"Binding:    web-deployment",
				"Scheduled:  <no condition>",
				"Asks for:   1 replica, no requests, none placed",
				"Verdict:    not scheduled yet: the scheduler has not acted on its binding",
			),
		},
		"no binding": {
			want: lines(
				"Workload:  Deployment team-a/web",
				"Binding:   <none>",
				"Verdict:   no ResourceBinding binds it: no PropagationPolicy selects it, so Karmada does not schedule it and no quota is involved",
			),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var b strings.Builder
			if err := WriteWhy(&b, Explain(deployment("web"), tc.binding, quotas, AppliedBusinessQuotas{}, nil, Events{})); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, b.String()); diff != "" {
				t.Errorf("WriteWhy (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWriteWhyClusterLimits(t *testing.T) {
	// team-a: 10 cpu in all (3 used), 2 on member1 (all used), 5 in the EU clusters (3 used). other: 1 cpu on member2.
	teamA := ready(capped("team-a").Used(list("cpu", "3", "pods", "3")), 1).Obj()
	teamA.Status.Clusters = []quotav1alpha1.ClusterUsage{
		{Name: "member1", Used: list("cpu", "2", "pods", "2"), Hard: list("cpu", "2", "memory", "4Gi")},
		{Name: "member2", Used: list("cpu", "1", "pods", "1")},
	}
	teamA.Status.ClusterGroups = []quotav1alpha1.ClusterGroupUsage{{Name: "eu", Clusters: []string{"member1", "member2"}, Hard: list("cpu", "5"), Used: list("cpu", "3")}}
	other := ready(utiltesting.MakeQuota("team-a", "other").Hard(list("pods", "100")), 1).Obj()
	other.Spec.Clusters = []quotav1alpha1.ClusterLimit{{Name: "member2", Hard: list("cpu", "1")}}
	quotas := []quotav1alpha1.KarmadaQuota{*teamA, *other}
	const relayed = `admission webhook "resourcebinding.karmada-quota.io" denied the request: `

	cases := map[string]struct {
		binding *workv1alpha2.ResourceBinding
		want    string
	}{
		"refused by a cluster's limit: which, and what it lacks there": {
			binding: refusedWith(waiting("pinned-deployment", 2, list("cpu", "1")),
				"exceeded quota: team-a, cpu in cluster member1: requested 2, used 2, reserved 0, hard 2").Obj(),
			want: lines(
				"Workload:   Deployment team-a/web",
				"Binding:    pinned-deployment",
				"Scheduled:  False (QuotaExceeded)",
				"Message:    "+relayed+"exceeded quota: team-a, cpu in cluster member1: requested 2, used 2, reserved 0, hard 2",
				"Asks for:   2 replicas × (cpu 1), none placed",
				"Verdict:    not scheduled: quota team-a (in cluster member1) refuses it; it fits once usage drops",
				"",
				"Quota team-a refuses it:",
				"  Resource  Where            Need  Available  Short by  Hard  Can fit",
				"  --------  -----            ----  ---------  --------  ----  -------",
				"  cpu       cluster member1  2     0          2         2     once usage there drops by 2",
			),
		},
		"refused namespace-wide and by a group, and by another quota's cluster limit, never as placed": {
			binding: refusedWith(waiting("wide-deployment", 8, list("cpu", "1")),
				"exceeded quota: team-a, cpu in cluster group eu: requested 3, used 3, reserved 0, hard 5; "+
					"exceeded quota: other, cpu in cluster member2: requested 3, used 0, reserved 0, hard 1 (can never fit: the request alone exceeds hard)").Obj(),
			want: lines(
				"Workload:   Deployment team-a/web",
				"Binding:    wide-deployment",
				"Scheduled:  False (QuotaExceeded)",
				"Message:    "+relayed+"exceeded quota: team-a, cpu in cluster group eu: requested 3, used 3, reserved 0, hard 5; "+
					"exceeded quota: other, cpu in cluster member2: requested 3, used 0, reserved 0, hard 1 (can never fit: the request alone exceeds hard)",
				"Asks for:   8 replicas × (cpu 1), none placed",
				"Verdict:    not scheduled: quotas other (in cluster member2), team-a (namespace-wide and in cluster group eu) refuse it; "+
					"as the scheduler placed it, it can never fit under other in cluster member2: what it places there alone exceeds the limit there",
				"",
				"Quota other refuses it:",
				"  Resource  Where            Need  Available  Short by  Hard  Can fit",
				"  --------  -----            ----  ---------  --------  ----  -------",
				"  cpu       cluster member2  3     1          2         1     not as placed: the need there alone exceeds hard",
				"",
				"Quota team-a refuses it:",
				"  Resource  Where             Need  Available  Short by  Hard  Can fit",
				"  --------  -----             ----  ---------  --------  ----  -------",
				"  cpu       all clusters      8     7          1         10    once usage drops by 1",
				"  cpu       cluster group eu  3     2          1         5     once usage there drops by 1",
			),
		},
		"scheduled: what a cluster's limit counts beside spec.hard, per cluster": {
			binding: utiltesting.MakeBinding("team-a", "web-deployment").Replicas(3).Requests(list("cpu", "500m", "memory", "1Gi")).
				Cluster("member1", 1).Cluster("member2", 2).Scheduled(true, workv1alpha2.BindingReasonSuccess).Obj(),
			want: lines(
				"Workload:   Deployment team-a/web",
				"Binding:    web-deployment",
				"Scheduled:  True (Success)",
				"Asks for:   3 replicas × (cpu 500m, memory 1Gi), 3 placed",
				"Verdict:    scheduled; charged by quotas other, team-a",
				"",
				"Quota other charges it:",
				"  Resource  Total  member1  member2",
				"  --------  -----  -------  -------",
				"  cpu       -      500m     1",
				"  pods      3      1        2",
				"",
				"Quota team-a charges it:",
				"  Resource  Total  member1  member2",
				"  --------  -----  -------  -------",
				"  cpu       1500m  500m     1",
				"  memory    -      1Gi      2Gi",
				"  pods      3      1        2",
			),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var b strings.Builder
			if err := WriteWhy(&b, Explain(deployment("web"), tc.binding, quotas, AppliedBusinessQuotas{}, nil, Events{})); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, b.String()); diff != "" {
				t.Errorf("WriteWhy (-want +got):\n%s", diff)
			}
		})
	}
}
