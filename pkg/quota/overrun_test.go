package quota

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/karmada-quota/karmada-quota/pkg/resources"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

func TestOverruns(t *testing.T) {
	q := utiltesting.MakeQuota("ns", "team").Hard(utiltesting.List("cpu", "10", "pods", "8")).Obj()
	l, err := NewLedger(q, nil)
	if err != nil {
		t.Fatal(err)
	}
	cpu := func(milli, pods int64) resources.List {
		return resources.List{"requests.cpu": milli, "pods": pods, "requests.memory": 1 << 40}
	}
	for _, tc := range []struct {
		name                    string
		asked, admitted, before resources.List
		want                    []Overrun
	}{
		{name: "what was admitted", asked: cpu(4000, 2), admitted: cpu(4000, 2)},
		{name: "less", asked: cpu(2000, 1), admitted: cpu(4000, 2)},
		{
			name: "more per replica", asked: cpu(6000, 2), admitted: cpu(4000, 2),
			want: []Overrun{{Resource: "cpu", Asked: "6", Admitted: "4"}},
		},
		{
			name: "more replicas", asked: cpu(6000, 3), admitted: cpu(4000, 2),
			// In the order of the canonical names: pods, requests.cpu.
			want: []Overrun{{Resource: "pods", Asked: "3", Admitted: "2"}, {Resource: "cpu", Asked: "6", Admitted: "4"}},
		},
		{
			name: "nothing admitted (no binding)", asked: cpu(100, 1), admitted: nil,
			want: []Overrun{{Resource: "pods", Asked: "1", Admitted: "0"}, {Resource: "cpu", Asked: "100m", Admitted: "0"}},
		},
		// Memory is not limited: asking a terabyte of it is no quota's business.
		{name: "an unlimited resource", asked: cpu(4000, 2), admitted: resources.List{"requests.cpu": 4000, "pods": 2}},
		{name: "over, but no more than before", asked: cpu(5000, 2), admitted: cpu(4000, 2), before: cpu(6000, 2)},
		{
			name: "over and more than before", asked: cpu(7000, 2), admitted: cpu(4000, 2), before: cpu(6000, 2),
			want: []Overrun{{Resource: "cpu", Asked: "7", Admitted: "4"}},
		},
		// A created Work has no before: nil, not an empty list, which would let nothing grow from zero.
		{
			name: "before ran nothing", asked: cpu(5000, 2), admitted: cpu(4000, 2), before: resources.List{},
			want: []Overrun{{Resource: "cpu", Asked: "5", Admitted: "4"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, l.Overruns(tc.asked, tc.admitted, tc.before)); diff != "" {
				t.Errorf("Overruns (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUnrequestedOverrun(t *testing.T) {
	q := utiltesting.MakeQuota("ns", "team").Hard(utiltesting.List("cpu", "10", "memory", "10Gi")).Obj()
	l, err := NewLedger(q, nil)
	if err != nil {
		t.Fatal(err)
	}
	placed := func(perReplica resources.List) usage.Usage {
		return usage.Usage{Placed: []usage.Placed{{Cluster: "member1", Replicas: 2, PerReplica: perReplica}}}
	}
	both := placed(resources.List{"requests.cpu": 1000, "requests.memory": 1 << 30})
	cpuOnly := placed(resources.List{"requests.cpu": 1000})
	none := placed(resources.List{})

	for _, tc := range []struct {
		name            string
		asked, admitted usage.Usage
		before          *usage.Usage
		want            []corev1.ResourceName
	}{
		{name: "requests kept", asked: both, admitted: both},
		{name: "memory request dropped", asked: cpuOnly, admitted: both, want: []corev1.ResourceName{"memory"}},
		{name: "every request dropped", asked: none, admitted: both, want: []corev1.ResourceName{"cpu", "memory"}},
		{name: "admitted without it already", asked: cpuOnly, admitted: cpuOnly},
		{name: "asked without it before", asked: cpuOnly, admitted: both, before: &cpuOnly},
		{name: "no replicas placed", asked: usage.Usage{Placed: []usage.Placed{{Cluster: "member1"}}}, admitted: both},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, l.UnrequestedOverrun(tc.asked, tc.admitted, tc.before)); diff != "" {
				t.Errorf("UnrequestedOverrun (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOverrunMessage(t *testing.T) {
	got := OverrunMessage("team", []Overrun{{Resource: "cpu", Asked: "6", Admitted: "4"}}, []corev1.ResourceName{"memory"})
	want := "quota team, cpu: asked 6, admitted 4, must specify requests for memory: the quota limits them and the admitted binding made them"
	if got != want {
		t.Errorf("OverrunMessage:\n got %q\nwant %q", got, want)
	}
}
