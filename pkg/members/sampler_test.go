package members

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/karmada-quota/karmada-quota/pkg/resources"
	"github.com/karmada-quota/karmada-quota/pkg/scheme"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

// proxy answers pod lists the way Karmada's cluster proxy relays a member's apiserver: per cluster, in pages of
// the requested size.
type proxy struct {
	mu    sync.Mutex
	pods  map[string][]corev1.Pod
	lists map[string]int
}

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var cluster string
	for name := range p.pods {
		if r.URL.Path == "/apis/cluster.karmada.io/v1alpha1/clusters/"+name+"/proxy/api/v1/pods" {
			cluster = name
		}
	}
	if cluster == "" || r.URL.Query().Get("fieldSelector") != "status.phase!=Succeeded,status.phase!=Failed" {
		http.Error(w, "unexpected request "+r.URL.String(), http.StatusNotFound)
		return
	}
	p.lists[cluster]++
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	start, _ := strconv.Atoi(r.URL.Query().Get("continue"))
	end := min(start+limit, len(p.pods[cluster]))
	list := corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: p.pods[cluster][start:end]}
	if end < len(p.pods[cluster]) {
		list.Continue = strconv.Itoa(end)
	}
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
