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
			if err := WriteWhy(&b, Explain(deployment("web"), tc.binding, quotas)); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, b.String()); diff != "" {
				t.Errorf("WriteWhy (-want +got):\n%s", diff)
			}
		})
	}
}
