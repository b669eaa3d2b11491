package members

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

// node is a node as a member's apiserver returns it: with the status, annotations and managed fields the quota
// does not read.
func node(name string, labels map[string]string, unschedulable bool, taints ...corev1.Taint) corev1.Node {
	return corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Labels: labels, UID: types.UID("uid-" + name), ResourceVersion: "7",
			Annotations:   map[string]string{"node.alpha.kubernetes.io/ttl": "0"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate}},
		},
		Spec: corev1.NodeSpec{PodCIDR: "10.0.0.0/24", ProviderID: "kwok://" + name, Unschedulable: unschedulable, Taints: taints},
		Status: corev1.NodeStatus{
			Capacity:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourcePods: resource.MustParse("110")},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}},
			Images:     []corev1.ContainerImage{{Names: []string{"registry.k8s.io/pause:3.10"}, SizeBytes: 1 << 20}},
		},
	}
}

// trimmed is what Of keeps of a node.
func trimmed(n corev1.Node) corev1.Node {
	return corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels},
		Spec:       corev1.NodeSpec{Taints: n.Spec.Taints, Unschedulable: n.Spec.Unschedulable},
	}
}

// clock is a clock the test moves.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newNodes(t *testing.T, members *proxy, maxAge time.Duration) (*Nodes, *clock) {
	t.Helper()
	server := httptest.NewServer(members)
	t.Cleanup(server.Close)
	c := &clock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	n := NewNodes(&rest.Config{Host: server.URL}, maxAge)
	n.now = c.now
	return n, c
}

func TestNodesReadTrimmedAndPaged(t *testing.T) {
	noExecute := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoExecute}
	cordoned := corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}
	many := make([]corev1.Node, 0, 1201)
	for i := range 1201 {
		many = append(many, node(fmt.Sprintf("node-%04d", i), map[string]string{"zone": fmt.Sprint(i % 3)}, false))
	}
	few := []corev1.Node{
		node("gpu-1", map[string]string{"accelerator": "gpu"}, false, noExecute),
		node("cordoned-1", nil, true, cordoned),
	}
	members := &proxy{nodes: map[string][]corev1.Node{"member1": many, "member2": few, "empty": {}}}
	nodes, _ := newNodes(t, members, time.Minute)

	got, err := nodes.Of(context.Background(), "member1")
	if err != nil {
		t.Fatal(err)
	}
	want := make([]corev1.Node, 0, len(many))
	for _, n := range many {
		want = append(want, trimmed(n))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("member1's nodes (-want +got):\n%s", diff)
	}
	if members.nodeLists["member1"] != 3 {
		t.Errorf("member1's nodes read in %d requests, want 3 pages of %d", members.nodeLists["member1"], pageSize)
	}

	got, err = nodes.Of(context.Background(), "member2")
	if err != nil {
		t.Fatal(err)
	}
	want = []corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "gpu-1", Labels: map[string]string{"accelerator": "gpu"}}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{noExecute}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "cordoned-1"}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{cordoned}, Unschedulable: true}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("member2's nodes, trimmed to name, labels, taints and unschedulable (-want +got):\n%s", diff)
	}

	// A member that has no node is read as having none: that is no error.
	got, err = nodes.Of(context.Background(), "empty")
	if err != nil || got == nil || len(got) != 0 {
		t.Errorf("a member without nodes: %v, %v; want an empty list", got, err)
	}
}

func TestNodesKeptForMaxAge(t *testing.T) {
	const maxAge = time.Minute
	members := &proxy{nodes: map[string][]corev1.Node{
		"member1": {node("a", nil, false)},
		"member2": {node("x", nil, false)},
	}}
	nodes, clock := newNodes(t, members, maxAge)
	ctx := context.Background()
	names := func(cluster string) []string {
		t.Helper()
		got, err := nodes.Of(ctx, cluster)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, n := range got {
			out = append(out, n.Name)
		}
		return out
	}

	if diff := cmp.Diff([]string{"a"}, names("member1")); diff != "" {
		t.Errorf("member1's nodes (-want +got):\n%s", diff)
	}
	members.mu.Lock()
	members.nodes["member1"] = append(members.nodes["member1"], node("b", nil, false))
	members.mu.Unlock()

	// Within maxAge: the list read before, without asking the member.
	clock.advance(maxAge - time.Nanosecond)
	if diff := cmp.Diff([]string{"a"}, names("member1")); diff != "" {
		t.Errorf("member1's nodes within maxAge (-want +got):\n%s", diff)
	}
	if members.nodeLists["member1"] != 1 {
		t.Errorf("member1 read %d times within maxAge, want once", members.nodeLists["member1"])
	}
	// Each member has its own list: member2 is read though member1's is kept.
	if diff := cmp.Diff([]string{"x"}, names("member2")); diff != "" {
		t.Errorf("member2's nodes (-want +got):\n%s", diff)
	}

	// maxAge after the read: read again, and the node that joined is seen.
	clock.advance(time.Nanosecond)
	if diff := cmp.Diff([]string{"a", "b"}, names("member1")); diff != "" {
		t.Errorf("member1's nodes after maxAge (-want +got):\n%s", diff)
	}
	if members.nodeLists["member1"] != 2 || members.nodeLists["member2"] != 1 {
		t.Errorf("lists = %v, want member1 read again after maxAge, member2 once", members.nodeLists)
	}

	// maxAge 0 keeps nothing: every call reads.
	nodes.maxAge = 0
	names("member2")
	names("member2")
	if members.nodeLists["member2"] != 3 {
		t.Errorf("member2 read %d times, want every call to read with maxAge 0", members.nodeLists["member2"])
	}
}

func TestNodesConcurrentCallersShareARead(t *testing.T) {
	const callers = 20
	members := &proxy{nodes: map[string][]corev1.Node{"member1": {node("a", nil, false), node("b", nil, false)}}, gate: make(chan struct{})}
	nodes, _ := newNodes(t, members, time.Hour)
	joined := make(chan struct{}, callers+1)
	nodes.joined = func() { joined <- struct{}{} }

	// The first caller starts the read, and stops waiting before it ends: the others still get the nodes.
	first, cancel := context.WithCancel(context.Background())
	firstErr := make(chan error, 1)
	go func() {
		_, err := nodes.Of(first, "member1")
		firstErr <- err
	}()
	<-joined

	var wg sync.WaitGroup
	got := make([][]corev1.Node, callers)
	errs := make([]error, callers)
	for i := range callers {
		wg.Go(func() { got[i], errs[i] = nodes.Of(context.Background(), "member1") })
	}
	for range callers {
		<-joined
	}
	cancel()
	if err := <-firstErr; !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "member1") {
		t.Errorf("the caller that stopped waiting: %v, want context.Canceled naming member1", err)
	}
	close(members.gate)
	wg.Wait()

	for i := range callers {
		if errs[i] != nil || len(got[i]) != 2 {
			t.Errorf("caller %d: %d nodes, %v; want member1's 2", i, len(got[i]), errs[i])
		}
	}
	if members.nodeLists["member1"] != 1 {
		t.Errorf("member1 read %d times for %d concurrent callers, want once", members.nodeLists["member1"], callers+1)
	}
}

func TestNodesOfAMemberThatCannotBeRead(t *testing.T) {
	members := &proxy{nodes: map[string][]corev1.Node{"member1": {node("a", nil, false)}}, down: map[string]bool{"member2": true}}
	nodes, _ := newNodes(t, members, time.Hour)
	ctx := context.Background()

	got, err := nodes.Of(ctx, "member9")
	if err == nil || got != nil || !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), "member9") {
		t.Errorf("a member Karmada does not know: %v, %v; want a not-found error naming member9 and no list", got, err)
	}
	got, err = nodes.Of(ctx, "member2")
	if err == nil || got != nil || !apierrors.IsServiceUnavailable(err) || !strings.Contains(err.Error(), "member2") {
		t.Errorf("a member Karmada cannot reach: %v, %v; want an unavailable error naming member2 and no list", got, err)
	}
	if _, err := nodes.Of(ctx, ""); err == nil {
		t.Error("no cluster name: no error")
	}

	// An error is not kept: once the member answers, it is read.
	members.mu.Lock()
	members.nodes["member9"] = []corev1.Node{node("z", nil, false)}
	delete(members.down, "member2")
	members.nodes["member2"] = []corev1.Node{}
	members.mu.Unlock()
	if got, err := nodes.Of(ctx, "member9"); err != nil || len(got) != 1 {
		t.Errorf("member9 once known: %v, %v", got, err)
	}
	if got, err := nodes.Of(ctx, "member2"); err != nil || got == nil {
		t.Errorf("member2 once reachable: %v, %v", got, err)
	}

	// The karmada-apiserver itself unreachable.
	server := httptest.NewServer(members)
	server.Close()
	unreachable := NewNodes(&rest.Config{Host: server.URL}, time.Hour)
	got, err = unreachable.Of(ctx, "member1")
	if err == nil || got != nil || !strings.Contains(err.Error(), "member1") {
		t.Errorf("the karmada-apiserver unreachable: %v, %v; want an error naming member1 and no list", got, err)
	}
}
