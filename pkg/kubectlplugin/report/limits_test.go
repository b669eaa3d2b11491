package report

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/quota"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

// capped limits cpu to 10 in all, 2 in member1 (and memory, which spec.hard does not limit, to 4Gi there), 4 in
// member9 (which has not joined), and 5 in the EU clusters.
func capped(name string) *utiltesting.QuotaWrapper {
	q := utiltesting.MakeQuota("team-a", name).Hard(list("cpu", "10", "pods", "20"))
	q.Spec.Clusters = []quotav1alpha1.ClusterLimit{
		{Name: "member1", Hard: list("cpu", "2", "memory", "4Gi")},
		{Name: "member9", Hard: list("cpu", "4")},
	}
	q.Spec.ClusterGroups = []quotav1alpha1.ClusterGroupLimit{{
		Name: "eu", ClusterSelector: metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}}, Hard: list("cpu", "5"),
	}}
	return q
}

// The refusals limitDenials reads are what the webhook's ledger writes: a denial of a real ledger, for a cluster's
// limit and for a group's, is read back whole.
func TestLimitDenialsReadTheLedgersRefusals(t *testing.T) {
	q := capped("team-a").Obj()
	ledger, err := quota.NewLedger(q, nil)
	if err != nil {
		t.Fatal(err)
	}
	regions := map[string]labels.Set{"member1": {"region": "eu"}, "member2": {"region": "eu"}}
	ledger.SetClusterLabels(func(c string) (labels.Set, bool) { set, ok := regions[c]; return set, ok })
	refuse := func(rb *utiltesting.BindingWrapper) string {
		t.Helper()
		b := rb.Obj()
		u, err := usage.Of(b)
		if err != nil {
			t.Fatal(err)
		}
		denial := ledger.Check(ledger.Demand(quota.Key{UID: b.UID, Generation: 1}, utiltesting.ReservationOwner(b), u, nil))
		if denial == nil {
			t.Fatalf("%s admitted, want refused", b.Name)
		}
		return denial.Error()
	}
	cluster := refuse(utiltesting.MakeBinding("team-a", "a").Requests(list("cpu", "1", "memory", "5Gi")).Cluster("member1", 1))
	group := refuse(utiltesting.MakeBinding("team-a", "b").Requests(list("cpu", "3")).Cluster("member2", 2))
	// As the scheduler records it: the apiserver's relay of the webhook's 403, two quotas' denials joined.
	message := `admission webhook "resourcebinding.karmada-quota.io" denied the request: ` + cluster + "; " + group
	want := []limitDenial{
		{quota: "team-a", resource: "memory", cluster: "member1", requested: "5Gi", used: "0", reserved: "0", hard: "4Gi", neverFits: true},
		{quota: "team-a", resource: "cpu", group: "eu", requested: "6", used: "0", reserved: "0", hard: "5", neverFits: true},
	}
	if diff := cmp.Diff(want, limitDenials(message), cmp.AllowUnexported(limitDenial{})); diff != "" {
		t.Errorf("limitDenials(%q) (-want +got):\n%s", message, diff)
	}
}

func TestLimitDenials(t *testing.T) {
	cases := map[string]struct {
		message string
		want    []limitDenial
	}{
		"namespace-wide only": {
			message: "exceeded quota: team-a, cpu: requested 8, used 3500m, reserved 0, hard 10",
		},
		"a cluster and a group of one quota, after a namespace-wide resource; a second quota's cluster": {
			message: "exceeded quota: team-a, pods: requested 3, used 19, reserved 0, hard 20, cpu in cluster member1: " +
				"requested 3, used 1, reserved 500m, hard 2 (can never fit: the request alone exceeds hard), requests.memory " +
				"in cluster group eu: requested 2Gi, used 7Gi, reserved 0, hard 8Gi; exceeded quota: gpu, nvidia.com/gpu in " +
				"cluster member2: requested 1, used 4, reserved 0, hard 4, must specify requests for cpu: the quota limits " +
				"them and the binding places replicas without them.",
			want: []limitDenial{
				{quota: "team-a", resource: "cpu", cluster: "member1", requested: "3", used: "1", reserved: "500m", hard: "2", neverFits: true},
				{quota: "team-a", resource: "requests.memory", group: "eu", requested: "2Gi", used: "7Gi", reserved: "0", hard: "8Gi"},
				{quota: "gpu", resource: "nvidia.com/gpu", cluster: "member2", requested: "1", used: "4", reserved: "0", hard: "4"},
			},
		},
		"a cluster named group, and a message ending in a period": {
			message: "exceeded quota: q, cpu in cluster group: requested 1, used 0, reserved 0, hard 0.",
			want:    []limitDenial{{quota: "q", resource: "cpu", cluster: "group", requested: "1", used: "0", reserved: "0", hard: "0"}},
		},
		"no quota named before it": {
			message: "cpu in cluster member1: requested 1, used 0, reserved 0, hard 0",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, limitDenials(tc.message), cmp.AllowUnexported(limitDenial{})); diff != "" {
				t.Errorf("limitDenials (-want +got):\n%s", diff)
			}
		})
	}
}

// The webhook must keep writing what limitDenials reads: Denial.Error's layout and the names Where gives.
func TestLimitFormatMatchesTheLedger(t *testing.T) {
	d := &quota.Denial{Quota: "team-a", Exceeded: []quota.Exceeded{
		{Where: "cluster member1", Resource: "cpu", Requested: "3", Used: "0", Reserved: "0", Hard: "2", NeverFits: true},
	}}
	want := []limitDenial{{quota: "team-a", resource: "cpu", cluster: "member1", requested: "3", used: "0", reserved: "0", hard: "2", neverFits: true}}
	if diff := cmp.Diff(want, limitDenials(d.Error()), cmp.AllowUnexported(limitDenial{})); diff != "" {
		t.Errorf("limitDenials(%q) (-want +got):\n%s", d.Error(), diff)
	}
	if !strings.Contains(d.Error(), "cpu in cluster member1: requested 3") {
		t.Errorf("Denial.Error() = %q: update limitExceeded in limits.go", d.Error())
	}
}
