package members

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/karmada-quota/karmada-quota/pkg/resources"
	"github.com/karmada-quota/karmada-quota/pkg/scheme"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

// proxyPrefix is where Karmada's cluster proxy is served in the karmada-apiserver: /<prefix><cluster>/proxy/...
const proxyPrefix = "/apis/cluster.karmada.io/v1alpha1/clusters/"

// proxy answers pod and node lists the way Karmada's cluster proxy relays a member's apiserver: per cluster, in
// pages of the requested size; a cluster it does not know is not found, and one in down is unavailable, as Karmada
// answers for a member it cannot reach.
type proxy struct {
	mu    sync.Mutex
	pods  map[string][]corev1.Pod
	nodes map[string][]corev1.Node
	down  map[string]bool
	// lists and nodeLists count the requests for pods and for nodes, by cluster (each page is one).
	lists, nodeLists map[string]int
	// gate, when set, holds every node list until it is closed.
	gate chan struct{}
}

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	cluster, path, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, proxyPrefix), "/proxy/")
	if !ok || !strings.HasPrefix(r.URL.Path, proxyPrefix) {
		http.Error(w, "unexpected request "+r.URL.String(), http.StatusNotFound)
		return
	}
	switch path {
	case "api/v1/pods":
		if r.URL.Query().Get("fieldSelector") != "status.phase!=Succeeded,status.phase!=Failed" {
			http.Error(w, "unexpected request "+r.URL.String(), http.StatusNotFound)
			return
		}
		p.mu.Lock()
		pods, known := p.pods[cluster]
		p.count(&p.lists, cluster, known)
		down := p.down[cluster]
		p.mu.Unlock()
		if p.refuse(w, cluster, known, down) {
			return
		}
		items, next := page(r, pods)
		respond(w, &corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: items,
			ListMeta: metav1.ListMeta{Continue: next}})
	case "api/v1/nodes":
		p.mu.Lock()
		nodes, known := p.nodes[cluster]
		p.count(&p.nodeLists, cluster, known)
		down, gate := p.down[cluster], p.gate
		p.mu.Unlock()
		if gate != nil {
			<-gate
		}
		if p.refuse(w, cluster, known, down) {
			return
		}
		items, next := page(r, nodes)
		respond(w, &corev1.NodeList{TypeMeta: metav1.TypeMeta{Kind: "NodeList", APIVersion: "v1"}, Items: items,
			ListMeta: metav1.ListMeta{Continue: next}})
	default:
		http.Error(w, "unexpected request "+r.URL.String(), http.StatusNotFound)
	}
}

// count counts a list of a known cluster; p.mu is held.
func (p *proxy) count(counts *map[string]int, cluster string, known bool) {
	if !known {
		return
	}
	if *counts == nil {
		*counts = map[string]int{}
	}
	(*counts)[cluster]++
}

// refuse answers as Karmada does for a cluster it does not know, or cannot reach, and reports whether it did.
func (p *proxy) refuse(w http.ResponseWriter, cluster string, known, down bool) bool {
	var status *apierrors.StatusError
	switch {
	case down:
		status = apierrors.NewServiceUnavailable("cluster " + cluster + " is not reachable")
	case !known:
		status = apierrors.NewNotFound(schema.GroupResource{Group: clusterv1alpha1.GroupName, Resource: "clusters"}, cluster)
	default:
		return false
	}
	s := status.Status()
	s.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(s.Code))
	_ = json.NewEncoder(w).Encode(s)
	return true
}

// page is the part of items the request's limit and continue ask for, and the continue token of the next part.
func page[T any](r *http.Request, items []T) ([]T, string) {
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	start, _ := strconv.Atoi(r.URL.Query().Get("continue"))
	end := min(start+limit, len(items))
	if end < len(items) {
		return items[start:end], strconv.Itoa(end)
	}
	return items[start:end], ""
}

func respond(w http.ResponseWriter, list any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(list)
}

func cluster(name string, ready bool) *clusterv1alpha1.Cluster {
	status := metav1.ConditionFalse
	if ready {
		status = metav1.ConditionTrue
	}
	return &clusterv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status:     clusterv1alpha1.ClusterStatus{Conditions: []metav1.Condition{{Type: clusterv1alpha1.ClusterConditionReady, Status: status}}},
	}
}

func TestSampler(t *testing.T) {
	many := make([]corev1.Pod, 0, 1201)
	for range 1200 {
		many = append(many, pod("team", "", corev1.PodRunning, container("10m")))
	}
	many = append(many, pod("ungoverned", "", corev1.PodRunning, container("4")))
	members := &proxy{
		pods: map[string][]corev1.Pod{
			"member1": many,
			"member2": {pod("team", "high", corev1.PodRunning, container("2"))},
			"member3": {pod("team", "", corev1.PodRunning, container("9"))},
		},
		lists: map[string]int{},
	}
	server := httptest.NewServer(members)
	defer server.Close()

	karmada := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(
		utiltesting.MakeQuota("team", "compute").Obj(),
		cluster("member1", true), cluster("member2", true), cluster("member3", false),
	).Build()
	var changed []string
	s := NewSampler(karmada, &rest.Config{Host: server.URL}, 0, func(ns string) { changed = append(changed, ns) })

	if _, read := s.Running("team"); read {
		t.Fatal("read before any sample")
	}
	s.sampleAll(context.Background())
	if diff := cmp.Diff([]string{"team"}, changed); diff != "" {
		t.Errorf("namespaces told of a change (-want +got):\n%s", diff)
	}
	running, read := s.Running("team")
	if !read {
		t.Fatal("team not read")
	}
	want := map[string]Running{
		"member1": {"": {"pods": 1200, "requests.cpu": 12000}},
		"member2": {"high": {"pods": 1, "requests.cpu": 2000}},
	}
	if diff := cmp.Diff(want, running); diff != "" {
		t.Errorf("what team's pods request, by member (-want +got):\n%s", diff)
	}
	if members.lists["member1"] != 3 || members.lists["member3"] != 0 {
		t.Errorf("lists = %v, want member1 read in 3 pages of %d and member3 (not Ready) not at all", members.lists, pageSize)
	}
	if _, read := s.Running("ungoverned"); read {
		t.Error("a namespace no quota governs was read")
	}

	// Nothing changed: nobody is told.
	changed = nil
	s.sampleAll(context.Background())
	if len(changed) != 0 {
		t.Errorf("told of a change when nothing changed: %v", changed)
	}
	// A pod more on member2: team is told.
	members.mu.Lock()
	members.pods["member2"] = append(members.pods["member2"], pod("team", "", corev1.PodPending, container("1")))
	members.mu.Unlock()
	s.sampleAll(context.Background())
	if diff := cmp.Diff([]string{"team"}, changed); diff != "" {
		t.Errorf("namespaces told of a change (-want +got):\n%s", diff)
	}
	running, _ = s.Running("team")
	if got := running["member2"][""]; !got.Equal(resources.List{"pods": 1, "requests.cpu": 1000}) {
		t.Errorf("member2's class-less pods request %v", got)
	}
}
