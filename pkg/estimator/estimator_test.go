package estimator

import (
	"context"
	"errors"
	"math"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/quota"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

func list(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

var regions = map[string]labels.Set{"member1": {"region": "eu"}, "member2": {"region": "eu"}, "member3": {"region": "us"}}

// team: 10 CPU and 100 pods in all; on member1 at most 4 CPU and 5 pods (1 CPU and 1 pod used there); in the EU
// (member1 and member2) at most 5 CPU (member2 uses 2). gold: for the gold priority class, at most 1 CPU on member3.
func quotas() []*quotav1alpha1.KarmadaQuota {
	team := utiltesting.MakeQuota("shop", "team").Hard(list("cpu", "10", "pods", "100")).Used(list("cpu", "3", "pods", "3")).Obj()
	team.Spec.Clusters = []quotav1alpha1.ClusterLimit{{Name: "member1", Hard: list("cpu", "4", "pods", "5")}}
	team.Spec.ClusterGroups = []quotav1alpha1.ClusterGroupLimit{{
		Name: "eu", ClusterSelector: metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}}, Hard: list("cpu", "5"),
	}}
	team.Status.Clusters = []quotav1alpha1.ClusterUsage{
		{Name: "member1", Used: list("cpu", "1", "pods", "1")}, {Name: "member2", Used: list("cpu", "2", "pods", "2")},
	}
	gold := utiltesting.MakeQuota("shop", "gold").Hard(list("requests.cpu", "10")).Scope(corev1.ScopeSelectorOpIn, "gold").Obj()
	gold.Spec.Clusters = []quotav1alpha1.ClusterLimit{{Name: "member3", Hard: list("requests.cpu", "1")}}
	return []*quotav1alpha1.KarmadaQuota{team, gold}
}

// dial serves s on a loopback port until the test ends and returns a connection to it.
func dial(t *testing.T, s *Server) *grpc.ClientConn {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.serve(ctx, lis) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serving: %v", err)
		}
	})
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func ledgersOf(objs []*quotav1alpha1.KarmadaQuota) Ledgers {
	return func(_ context.Context, namespace string) ([]*quota.Ledger, error) {
		var out []*quota.Ledger
		for _, q := range objs {
			if q.Namespace != namespace {
				continue
			}
			l, err := quota.NewLedger(q, nil)
			if err != nil {
				return nil, err
			}
			l.SetClusterLabels(func(c string) (labels.Set, bool) { set, ok := regions[c]; return set, ok })
			out = append(out, l)
		}
		return out, nil
	}
}

func TestMaxReplicas(t *testing.T) {
	e := New(ledgersOf(quotas()))
	cases := map[string]struct {
		cluster, namespace, priorityClass string
		requests                          corev1.ResourceList
		want                              int32
	}{
		"member1: the EU group leaves 2 CPU":          {cluster: "member1", namespace: "shop", requests: list("cpu", "1"), want: 2},
		"member1: its own pods limit leaves 4":        {cluster: "member1", namespace: "shop", requests: list("memory", "1Gi"), want: 4},
		"member2: the EU group leaves 2 CPU":          {cluster: "member2", namespace: "shop", requests: list("cpu", "500m"), want: 4},
		"a request larger than the room: none":        {cluster: "member1", namespace: "shop", requests: list("cpu", "3"), want: 0},
		"member3: no member limit, no bound":          {cluster: "member3", namespace: "shop", requests: list("cpu", "500m"), want: math.MaxInt32},
		"the gold class: its limit on member3":        {cluster: "member3", namespace: "shop", priorityClass: "gold", requests: list("cpu", "300m"), want: 3},
		"a cluster not joined: in no group, no bound": {cluster: "member9", namespace: "shop", requests: list("cpu", "2"), want: math.MaxInt32},
		"a namespace without quotas: no bound":        {cluster: "member1", namespace: "other", requests: list("cpu", "1"), want: math.MaxInt32},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := e.MaxReplicas(context.Background(), tc.cluster, tc.namespace, tc.priorityClass, tc.requests)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("MaxReplicas = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestMaxSets(t *testing.T) {
	e := New(ledgersOf(quotas()))
	// A set on member1: 1 job manager and 2 task managers of 500m each, 1.5 CPU and 3 pods: the EU group's 2 CPU
	// and member1's 4 pods take one.
	components := []Component{
		{Replicas: 1, Requests: list("cpu", "500m")},
		{Replicas: 2, Requests: list("cpu", "500m")},
	}
	if got, err := e.MaxSets(context.Background(), "member1", "shop", components); err != nil || got != 1 {
		t.Errorf("MaxSets on member1 = %d, %v; want 1", got, err)
	}
	// On member3 only the gold quota limits: the task managers of the gold class need 1 CPU a set, which it has.
	components[1].PriorityClass = "gold"
	if got, err := e.MaxSets(context.Background(), "member3", "shop", components); err != nil || got != 1 {
		t.Errorf("MaxSets on member3 = %d, %v; want 1", got, err)
	}
	components[1].Requests = list("cpu", "1")
	if got, err := e.MaxSets(context.Background(), "member3", "shop", components); err != nil || got != 0 {
		t.Errorf("MaxSets on member3 with 2 CPU of gold a set = %d, %v; want 0", got, err)
	}
}

func TestUnparsableQuotaIsAnError(t *testing.T) {
	e := New(func(context.Context, string) ([]*quota.Ledger, error) {
		return nil, errors.New("quota team is invalid")
	})
	if _, err := e.MaxReplicas(context.Background(), "member1", "shop", "", list("cpu", "1")); err == nil {
		t.Fatal("an unreadable quota answered as no bound: karmada-scheduler must ignore the answer instead")
	}
}
