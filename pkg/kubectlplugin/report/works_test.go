package report

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

// workRefusal is the Work webhook's refusal as Karmada's binding controller receives it: the webhook's message
// (workRefused in pkg/admission) relayed by the apiserver.
func workRefusal(cluster, work, binding, found string) string {
	return fmt.Sprintf(`admission webhook "work.quota.karmada.io" denied the request: `+
		`Work karmada-es-%s/%s would have member cluster %s run more than quota allows for ResourceBinding %s: %s. `+
		`The member keeps what it runs; to change it, raise the quota, or lower what the resource template, its `+
		`OverridePolicy or the Work asks`, cluster, work, cluster, binding, found)
}

// webhookMessage is the webhook's own part of workRefusal: what a refusal keeps of the event's message.
func webhookMessage(cluster, work, binding, found string) string {
	return strings.TrimPrefix(workRefusal(cluster, work, binding, found), `admission webhook "work.quota.karmada.io" denied the request: `)
}

// joined is how Karmada's ensureWork reports several members' failures: utilerrors.NewAggregate.
func joined(msgs ...string) string {
	return "[" + strings.Join(msgs, ", ") + "]"
}

const (
	member1Found = "exceeded quota: team-a, cpu: requested 600m, used 700m, reserved 0, hard 1"
	member2Found = "exceeded quota: team-a, cpu: requested 400m, used 700m, reserved 0, hard 1, memory: requested 3Gi, used 1Gi, reserved 0, hard 2Gi (can never fit: the request alone exceeds hard)"
	cronFound    = "quota team-a limits what it runs: CronJob team-a/report allows its Jobs to run concurrently " +
		"(concurrencyPolicy unset, which defaults to Allow), so the pods it runs at once have no bound: set spec.concurrencyPolicy to Forbid or Replace"
)

// The webhook's message must stay what SplitRefusals recognises: its start, naming the Work and the member, and
// its end, after which Karmada's next error begins.
func TestRefusalFormatMatchesTheWebhook(t *testing.T) {
	src, err := os.ReadFile("../../admission/work_webhook.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"Work %s/%s would have member cluster %s run more than quota allows for %s: %s. "`,
		`"ResourceBinding %s/%s"`,
		`"OverridePolicy or the Work asks`,
		`" (Karmada rendered it for %s with %s)"`,
	} {
		if !strings.Contains(string(src), want) {
			t.Errorf("pkg/admission/work_webhook.go no longer writes %s: update refusalStart and workTail in works.go", want)
		}
	}
	if got := refusalStart.FindAllString(workRefusal("member1", "web-6f7d", "team-a/web-deployment", member1Found), -1); len(got) != 1 {
		t.Errorf("refusalStart finds %d refusals in the webhook's message, want 1", len(got))
	}
}

func TestSplitRefusals(t *testing.T) {
	one := workRefusal("member1", "agent-5d8f", "team-a/agent-daemonset", member1Found)
	two := workRefusal("member2", "agent-5d8f", "team-a/agent-daemonset", member2Found)
	wantOne := WorkRefusal{Cluster: "member1", Work: "karmada-es-member1/agent-5d8f", Quotas: []string{"team-a"},
		Message: webhookMessage("member1", "agent-5d8f", "team-a/agent-daemonset", member1Found)}
	wantTwo := WorkRefusal{Cluster: "member2", Work: "karmada-es-member2/agent-5d8f", Quotas: []string{"team-a"},
		Message: webhookMessage("member2", "agent-5d8f", "team-a/agent-daemonset", member2Found)}

	cases := map[string]struct {
		message string
		want    []WorkRefusal
	}{
		"one member: the error alone, without the apiserver's prefix": {
			message: one,
			want:    []WorkRefusal{wantOne},
		},
		"two members joined by Karmada, the found part holding commas of its own": {
			message: joined(one, two),
			want:    []WorkRefusal{wantOne, wantTwo},
		},
		"another member's other failure joined in: not a refusal, left out": {
			message: joined(`Operation cannot be fulfilled on works.work.karmada.io "agent-5d8f": the object has been modified`, one,
				`failed to apply overrides for member3, cluster not found`, two),
			want: []WorkRefusal{wantOne, wantTwo},
		},
		"aggregated by the event correlator": {
			message: "(combined from similar events): " + one,
			want:    []WorkRefusal{wantOne},
		},
		"rendered with override policies, which the webhook names after its ending": {
			message: joined(one+" (Karmada rendered it for karmada-es-member1 with OverridePolicy raise-cpu, ClusterOverridePolicy all)", two),
			want: []WorkRefusal{
				{Cluster: "member1", Work: "karmada-es-member1/agent-5d8f", Quotas: []string{"team-a"},
					Message: wantOne.Message + " (Karmada rendered it for karmada-es-member1 with OverridePolicy raise-cpu, ClusterOverridePolicy all)"},
				wantTwo,
			},
		},
		"an unbounded CronJob: the quota named by the message": {
			message: workRefusal("member1", "report-7c9d", "team-a/report-cronjob", cronFound),
			want: []WorkRefusal{{Cluster: "member1", Work: "karmada-es-member1/report-7c9d", Quotas: []string{"team-a"},
				Message: webhookMessage("member1", "report-7c9d", "team-a/report-cronjob", cronFound)}},
		},
		"the webhook's ending changed: split at Karmada's separator instead": {
			message: joined(strings.TrimSuffix(one, ". The member keeps what it runs; to change it, raise the quota, or lower what the resource template, its OverridePolicy or the Work asks"),
				strings.TrimSuffix(two, ". The member keeps what it runs; to change it, raise the quota, or lower what the resource template, its OverridePolicy or the Work asks")),
			want: []WorkRefusal{
				{Cluster: "member1", Work: "karmada-es-member1/agent-5d8f", Quotas: []string{"team-a"},
					Message: "Work karmada-es-member1/agent-5d8f would have member cluster member1 run more than quota allows for ResourceBinding team-a/agent-daemonset: " + member1Found},
				{Cluster: "member2", Work: "karmada-es-member2/agent-5d8f", Quotas: []string{"team-a"},
					Message: "Work karmada-es-member2/agent-5d8f would have member cluster member2 run more than quota allows for ResourceBinding team-a/agent-daemonset: " + member2Found},
			},
		},
		"not split when nothing separates two refusals: the message whole": {
			message: "Work karmada-es-member1/a would have member cluster member1 run more than quota allows for x" +
				"Work karmada-es-member2/a would have member cluster member2 run more than quota allows for y",
			want: []WorkRefusal{{Message: "Work karmada-es-member1/a would have member cluster member1 run more than quota allows for x" +
				"Work karmada-es-member2/a would have member cluster member2 run more than quota allows for y"}},
		},
		"a wording it does not know: the message whole, with the quotas it names": {
			message: "the Work would have member cluster member1 exceed quota: exceeded quota: team-a, cpu: requested 1",
			want: []WorkRefusal{{Quotas: []string{"team-a"},
				Message: "the Work would have member cluster member1 exceed quota: exceeded quota: team-a, cpu: requested 1"}},
		},
		"several quotas, and a Work naming no binding": {
			message: workRefusal("member1", "x", "team-a/x", "exceeded quota: team-a, cpu: requested 1, used 0, reserved 0, hard 0; exceeded quota: gpu, nvidia.com/gpu: requested 1, used 0, reserved 0, hard 0"),
			want: []WorkRefusal{{Cluster: "member1", Work: "karmada-es-member1/x", Quotas: []string{"gpu", "team-a"},
				Message: webhookMessage("member1", "x", "team-a/x", "exceeded quota: team-a, cpu: requested 1, used 0, reserved 0, hard 0; exceeded quota: gpu, nvidia.com/gpu: requested 1, used 0, reserved 0, hard 0")}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, SplitRefusals(tc.message)); diff != "" {
				t.Errorf("SplitRefusals (-want +got):\n%s", diff)
			}
		})
	}
}

func TestQuotasIn(t *testing.T) {
	type named struct{ quotas, business []string }
	cases := map[string]named{
		"exceeded quota: team-a, cpu: requested 1; exceeded quota: gpu, nvidia.com/gpu: requested 1": {quotas: []string{"gpu", "team-a"}},
		"quota batch limits what it runs: CronJob x/y allows ...":                                    {quotas: []string{"batch"}},
		// A Work no binding was admitted for (quota.OverrunMessage).
		"for no ResourceBinding of namespace team-a (the Work names none there, or it is gone): quota team-a, cpu: asked 1, admitted 0": {quotas: []string{"team-a"}},
		// "raise the quota" and "than quota allows" name none.
		"run more than quota allows for ResourceBinding a/b: something. The member keeps what it runs; to change it, raise the quota, or lower": {},
		// A business quota is named apart, even when a quota of the namespace has its name.
		"exceeded quota: shop, cpu: requested 1, used 0, reserved 0, hard 1; exceeded business quota: shop, cpu: requested 1, used 3, reserved 0, hard 4": {
			quotas: []string{"shop"}, business: []string{"shop"}},
	}
	for message, want := range cases {
		quotas, business := quotasIn(message)
		if diff := cmp.Diff(want, named{quotas, business}, cmp.AllowUnexported(named{})); diff != "" {
			t.Errorf("quotasIn(%q) (-want +got):\n%s", message, diff)
		}
	}
}

// event is an event Karmada's binding controller records on a binding, as client-go's recorder writes it.
func event(name, eventType, reason, message string, count int32, first, last time.Time) corev1.Event {
	return corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name},
		InvolvedObject: corev1.ObjectReference{APIVersion: "work.karmada.io/v1alpha2", Kind: "ResourceBinding",
			Namespace: "team-a", Name: "agent-daemonset", UID: "uid-team-a-agent-daemonset"},
		Type: eventType, Reason: reason, Message: message, Count: count,
		FirstTimestamp: metav1.NewTime(first), LastTimestamp: metav1.NewTime(last),
		Source: corev1.EventSource{Component: "binding-controller"},
	}
}

func at(hour, minute int) time.Time {
	return time.Date(2025, time.June, 1, hour, minute, 0, 0, time.UTC)
}

func TestExplainWorkRefused(t *testing.T) {
	teamA := ready(utiltesting.MakeQuota("team-a", "team-a").Hard(list("cpu", "1", "memory", "2Gi")).
		Used(list("cpu", "700m", "memory", "1Gi")), 1).Obj()
	quotas := []quotav1alpha1.KarmadaQuota{*teamA}
	daemonSet := Workload{APIVersion: "apps/v1", Kind: "DaemonSet", Namespace: "team-a", Name: "agent"}
	agent := utiltesting.MakeBinding("team-a", "agent-daemonset").Resource("apps/v1", "DaemonSet").
		Cluster("member1", 0).Cluster("member2", 0).Scheduled(true, workv1alpha2.BindingReasonSuccess).Obj()
	agent.Spec.Resource.Name = "agent"

	one := workRefusal("member1", "agent-5d8f", "team-a/agent-daemonset", member1Found)
	two := workRefusal("member2", "agent-5d8f", "team-a/agent-daemonset", member2Found)
	synced := event("agent-daemonset.1", corev1.EventTypeNormal, "SyncWorkSucceed",
		"Sync work of ResourceBinding(team-a/agent-daemonset) successful.", 1, at(9, 0), at(9, 0))
	bothRefused := event("agent-daemonset.2", corev1.EventTypeWarning, "SyncWorkFailed", joined(one, two), 3, at(10, 0), at(10, 5))
	member2Refused := event("agent-daemonset.3", corev1.EventTypeWarning, "SyncWorkFailed", two, 2, at(10, 6), at(10, 8))
	otherFailure := event("agent-daemonset.4", corev1.EventTypeWarning, "SyncWorkFailed",
		`Operation cannot be fulfilled on works.work.karmada.io "agent-5d8f": the object has been modified`, 1, at(10, 9), at(10, 9))
	late := func(e corev1.Event, last time.Time) corev1.Event {
		e.LastTimestamp = metav1.NewTime(last)
		return e
	}

	charges := []Charge{{Quota: "team-a", Selected: true}}
	wantOne := WorkRefusal{Cluster: "member1", Work: "karmada-es-member1/agent-5d8f", Quotas: []string{"team-a"},
		Message: webhookMessage("member1", "agent-5d8f", "team-a/agent-daemonset", member1Found),
		Fix:     "raise quota team-a, or lower what the DaemonSet or its OverridePolicy asks on member1, or free quota: Karmada retries and the Work is admitted once it fits"}
	wantTwo := WorkRefusal{Cluster: "member2", Work: "karmada-es-member2/agent-5d8f", Quotas: []string{"team-a"},
		Message: webhookMessage("member2", "agent-5d8f", "team-a/agent-daemonset", member2Found),
		Fix:     "raise quota team-a, or lower what the DaemonSet or its OverridePolicy asks on member2 (what it asks alone exceeds hard: waiting does not help)"}
	scheduled := Why{
		Workload: daemonSet, Binding: "agent-daemonset", Verdict: Scheduled,
		Condition: &Condition{Status: "True", Reason: workv1alpha2.BindingReasonSuccess},
		Asks:      &Asks{}, Charges: charges,
	}
	refused := func(r *WorksRefused) Why {
		w := scheduled
		w.Verdict, w.WorksRefused = WorkRefused, r
		return w
	}

	cases := map[string]struct {
		binding *workv1alpha2.ResourceBinding
		events  Events
		want    Why
	}{
		"no events: scheduled": {
			binding: agent,
			want:    scheduled,
		},
		"refused on two members since its last sync": {
			binding: agent,
			events:  Events{Items: []corev1.Event{bothRefused, synced}},
			want: refused(&WorksRefused{Event: "agent-daemonset.2", Count: 3, FirstSeen: "2025-06-01T10:00:00Z",
				LastSeen: "2025-06-01T10:05:00Z", LastSynced: "2025-06-01T09:00:00Z", Members: []WorkRefusal{wantOne, wantTwo}}),
		},
		"the newest refusal tells: member1 was admitted since, member2 still is not": {
			binding: agent,
			events:  Events{Items: []corev1.Event{member2Refused, synced, bothRefused}},
			want: refused(&WorksRefused{Event: "agent-daemonset.3", Count: 2, FirstSeen: "2025-06-01T10:06:00Z",
				LastSeen: "2025-06-01T10:08:00Z", LastSynced: "2025-06-01T09:00:00Z", Members: []WorkRefusal{wantTwo}}),
		},
		"a later failure for another reason is no refusal, and does not hide one": {
			binding: agent,
			events:  Events{Items: []corev1.Event{otherFailure, bothRefused}},
			want: refused(&WorksRefused{Event: "agent-daemonset.2", Count: 3, FirstSeen: "2025-06-01T10:00:00Z",
				LastSeen: "2025-06-01T10:05:00Z", Members: []WorkRefusal{wantOne, wantTwo}}),
		},
		"synced since the refusal: over": {
			binding: agent,
			events:  Events{Items: []corev1.Event{bothRefused, late(synced, at(10, 30))}},
			want:    scheduled,
		},
		"synced in the same second as the last refusal: over, a lasting refusal is recorded again": {
			binding: agent,
			events:  Events{Items: []corev1.Event{bothRefused, late(synced, at(10, 5))}},
			want:    scheduled,
		},
		"events written through events.k8s.io: eventTime and series": {
			binding: agent,
			events: Events{Items: []corev1.Event{func() corev1.Event {
				e := event("agent-daemonset.5", corev1.EventTypeWarning, "SyncWorkFailed", one, 0, time.Time{}, time.Time{})
				e.EventTime = metav1.NewMicroTime(at(11, 0))
				e.Series = &corev1.EventSeries{Count: 4, LastObservedTime: metav1.NewMicroTime(at(11, 2))}
				return e
			}(), late(synced, at(11, 1))}},
			want: refused(&WorksRefused{Event: "agent-daemonset.5", Count: 4, FirstSeen: "2025-06-01T11:00:00Z",
				LastSeen: "2025-06-01T11:02:00Z", LastSynced: "2025-06-01T11:01:00Z", Members: []WorkRefusal{wantOne}}),
		},
		"a Normal event of the failure's reason is not a refusal": {
			binding: agent,
			events: Events{Items: []corev1.Event{event("agent-daemonset.6", corev1.EventTypeNormal, "SyncWorkFailed", one, 1,
				at(10, 0), at(10, 0))}},
			want: scheduled,
		},
		"events not readable: scheduled, saying so": {
			binding: agent,
			events:  Events{Items: []corev1.Event{bothRefused}, Unknown: "you may not list events in namespace team-a"},
			want: func() Why {
				w := scheduled
				w.EventsUnknown = "you may not list events in namespace team-a"
				return w
			}(),
		},
		"refused by quota at the scheduler: the binding's verdict, whatever its events say": {
			binding: waiting("agent-daemonset", 2, list("cpu", "1", "memory", "1Gi")).Obj(),
			events:  Events{Items: []corev1.Event{bothRefused}},
			want: Why{
				Workload: daemonSet, Binding: "agent-daemonset", Verdict: QuotaExceeded,
				Condition: &Condition{Status: "False", Reason: workv1alpha2.BindingReasonQuotaExceeded},
				Asks:      &Asks{Replicas: 2, PerReplica: map[string]string{"cpu": "1", "memory": "1Gi"}},
				Refusals: []Refusal{{Quota: "team-a", Short: []Shortfall{
					{Resource: "cpu", Need: "2", Available: "300m", ShortBy: "1700m", Hard: "1", NeverFits: true},
					{Resource: "memory", Need: "2Gi", Available: "1Gi", ShortBy: "1Gi", Hard: "2Gi"},
				}}},
			},
		},
		"no binding: no events asked for": {
			events: Events{Unknown: "you may not list events in namespace team-a"},
			want:   Why{Workload: daemonSet, Verdict: NoBinding},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Explain(daemonSet, tc.binding, quotas, AppliedBusinessQuotas{}, nil, tc.events)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Explain (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFixFor(t *testing.T) {
	cases := map[string]struct {
		refusal WorkRefusal
		kind    string
		want    string
	}{
		"an unbounded CronJob: what the message says": {
			refusal: WorkRefusal{Cluster: "member1", Quotas: []string{"team-a"}, Message: webhookMessage("member1", "r", "team-a/r", cronFound)},
			kind:    "CronJob",
			want:    "set spec.concurrencyPolicy to Forbid or Replace in the CronJob, as the message says: with Allow, the Jobs it runs at once have no bound, which no quota limiting them admits",
		},
		"rendered with an OverridePolicy: named where to lower": {
			refusal: WorkRefusal{Cluster: "member1", Quotas: []string{"team-a"},
				Message: webhookMessage("member1", "r", "team-a/r", member1Found) + " (Karmada rendered it for karmada-es-member1 with OverridePolicy raise-cpu)"},
			kind: "Deployment",
			want: "raise quota team-a, or lower what the Deployment or OverridePolicy raise-cpu asks on member1, or free quota: Karmada retries and the Work is admitted once it fits",
		},
		"a request missing": {
			refusal: WorkRefusal{Cluster: "member1", Quotas: []string{"team-a"}, Message: webhookMessage("member1", "r", "team-a/r",
				"exceeded quota: team-a, must specify requests for cpu: the quota limits them and the binding places replicas without them")},
			kind: "Deployment",
			want: "set the requests the message names in the pod template (or its OverridePolicy), since quota team-a limits them",
		},
		"a member cluster's limit, and a group's of another quota: named": {
			refusal: WorkRefusal{Cluster: "member1", Quotas: []string{"gpu", "team-a"}, Message: webhookMessage("member1", "r", "team-a/r",
				"exceeded quota: team-a, cpu in cluster member1: requested 600m, used 2, reserved 0, hard 2; "+
					"exceeded quota: gpu, nvidia.com/gpu in cluster group eu: requested 1, used 4, reserved 0, hard 4")},
			kind: "Deployment",
			want: "raise quotas gpu, team-a (team-a's limit in cluster member1, gpu's limit in cluster group eu), or lower what the Deployment or its OverridePolicy asks on member1, or free quota: Karmada retries and the Work is admitted once it fits",
		},
		"one quota's limit in a member cluster": {
			refusal: WorkRefusal{Cluster: "member1", Quotas: []string{"team-a"}, Message: webhookMessage("member1", "r", "team-a/r",
				"exceeded quota: team-a, cpu in cluster member1: requested 3, used 0, reserved 0, hard 2 (can never fit: the request alone exceeds hard)")},
			kind: "DaemonSet",
			want: "raise quota team-a (its limit in cluster member1), or lower what the DaemonSet or its OverridePolicy asks on member1 (what it asks alone exceeds hard: waiting does not help)",
		},
		"the message whole, no cluster, no kind": {
			refusal: WorkRefusal{Message: "something would have member cluster x run more: requested 1"},
			want:    "raise the quota, or lower what the resource template or its OverridePolicy asks there, or free quota: Karmada retries and the Work is admitted once it fits",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := fixFor(tc.refusal, tc.kind); got != tc.want {
				t.Errorf("fixFor:\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}
