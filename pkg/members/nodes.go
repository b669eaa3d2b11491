package members

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// What Nodes reads in the karmada-apiserver: a member's nodes, through the cluster proxy. Karmada's aggregated
// apiserver then reads the member as this identity (impersonation): the chart grants both the webhook's and the
// controller's identities, in every member, the right to list nodes (the ClusterRole karmada-quota-member-reader of
// templates/_karmada.tpl, propagated by Karmada).
// +kubebuilder:rbac:groups=cluster.karmada.io,resources=clusters/proxy,verbs=get

// NodesMaxAge is how long the webhook and the controller keep a member's nodes: a node that joins a member is
// charged for within this, and a member is listed at most about once per this by each replica, whatever the rate
// of DaemonSet admissions.
const NodesMaxAge = 30 * time.Second

// nodesReadTimeout bounds one read of a member's nodes, all its pages. The read is shared by every caller waiting
// for that member, so it runs apart from the first caller's context (whose deadline would fail the others), and
// only this bounds it.
const nodesReadTimeout = 30 * time.Second

// Nodes reads the nodes of member clusters through the karmada-apiserver's cluster proxy, for the quota to charge
// a DaemonSet one pod per node it fits in each member. A member's list is kept for at most maxAge: admitting a
// DaemonSet does not list a member's nodes per request, yet a node that joined is seen within maxAge. Concurrent
// callers for one member share one read. Safe for concurrent use.
type Nodes struct {
	config *rest.Config
	maxAge time.Duration
	// now is the clock the ages are read on (time.Now; tests set another).
	now func() time.Time
	// reads shares one read of a member, by cluster name, among the callers that want it at the same time.
	reads singleflight.Group
	// joined, when set, is called by each caller once it waits for a read (tests count them).
	joined func()

	mu sync.Mutex
	// lists are the members' nodes last read, by cluster name; none older than maxAge is ever returned.
	lists   map[string]nodeList
	clients map[string]kubernetes.Interface
}

// nodeList is one member's nodes as read when at.
type nodeList struct {
	nodes []corev1.Node
	at    time.Time
}

// NewNodes returns a reader of the members' nodes through the karmada-apiserver at config (its own identity), that
// keeps each member's list for at most maxAge (0: every call reads, though concurrent calls still share a read).
func NewNodes(config *rest.Config, maxAge time.Duration) *Nodes {
	return &Nodes{
		config: rest.CopyConfig(config), maxAge: maxAge, now: time.Now,
		lists: map[string]nodeList{}, clients: map[string]kubernetes.Interface{},
	}
}

// Of returns the nodes of member cluster, read at most maxAge ago, trimmed to what the DaemonSet placement rule
// reads: name, labels, spec.taints and spec.unschedulable. The nodes are shared with other callers: read them,
// never modify them. A member that cannot be read (unknown to Karmada, unreachable, refusing this identity) is an
// error, never an empty list: an empty list would charge a DaemonSet nothing there.
func (n *Nodes) Of(ctx context.Context, cluster string) ([]corev1.Node, error) {
	if cluster == "" {
		return nil, errors.New("reading the nodes of a member cluster: no cluster name")
	}
	if nodes, ok := n.cached(cluster); ok {
		return nodes, nil
	}
	result := n.reads.DoChan(cluster, func() (any, error) {
		// A caller that found the list stale may arrive just after another read stored a fresh one.
		if nodes, ok := n.cached(cluster); ok {
			return nodes, nil
		}
		readCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), nodesReadTimeout)
		defer cancel()
		return n.read(readCtx, cluster)
	})
	if n.joined != nil {
		n.joined()
	}
	select {
	case r := <-result:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.([]corev1.Node), nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the nodes of member cluster %s: %w", cluster, context.Cause(ctx))
	}
}

// cached is the list of cluster's nodes, if one was read less than maxAge ago.
func (n *Nodes) cached(cluster string) ([]corev1.Node, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	l, ok := n.lists[cluster]
	if !ok || n.now().Sub(l.at) >= n.maxAge {
		return nil, false
	}
	return l.nodes, true
}

// read lists the nodes of cluster through Karmada's cluster proxy, in pages, trims them and keeps the list.
func (n *Nodes) read(ctx context.Context, cluster string) ([]corev1.Node, error) {
	// The list is as old as the moment the read began: a node that joined during the read may be missing from it.
	at := n.now()
	start := time.Now()
	kube, err := n.client(cluster)
	if err != nil {
		return nil, fmt.Errorf("reading the nodes of member cluster %s: %w", cluster, err)
	}
	// A member may have thousands of nodes, each carrying its status (images, conditions, addresses, capacity)
	// and managed fields: only what the DaemonSet placement rule reads is kept, page by page, so neither the list
	// kept for maxAge nor the read holds every node whole.
	nodes := []corev1.Node{}
	opts := metav1.ListOptions{Limit: pageSize}
	for {
		page, err := kube.CoreV1().Nodes().List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("listing the nodes of member cluster %s through Karmada's cluster proxy: %w", cluster, err)
		}
		for i := range page.Items {
			nodes = append(nodes, placementView(&page.Items[i]))
		}
		if page.Continue == "" {
			break
		}
		opts.Continue = page.Continue
	}
	// Callers share the list: one appending to it must not write into another's.
	nodes = nodes[:len(nodes):len(nodes)]
	klog.FromContext(ctx).WithName("members").V(4).Info("Read a member's nodes", "cluster", cluster, "nodes", len(nodes),
		"duration", time.Since(start))

	n.mu.Lock()
	defer n.mu.Unlock()
	// Lists too old to be returned are dropped, so members that are gone (or were never read again) are not
	// kept.
	for name, l := range n.lists {
		if n.now().Sub(l.at) >= n.maxAge {
			delete(n.lists, name)
		}
	}
	n.lists[cluster] = nodeList{nodes: nodes, at: at}
	n.clients[cluster] = kube
	return nodes, nil
}

// client is a clientset whose requests go to cluster through the karmada-apiserver's cluster proxy. Only a member
// that was read is remembered (in read), so names of clusters that do not exist are not kept.
func (n *Nodes) client(cluster string) (kubernetes.Interface, error) {
	n.mu.Lock()
	c, ok := n.clients[cluster]
	n.mu.Unlock()
	if ok {
		return c, nil
	}
	return proxyClient(n.config, cluster)
}

// placementView is what the DaemonSet placement rule reads of node: its name (node affinity's matchFields), its
// labels (node selector and affinity), its taints and whether it is cordoned.
func placementView(node *corev1.Node) corev1.Node {
	return corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: node.Name, Labels: node.Labels},
		Spec:       corev1.NodeSpec{Taints: node.Spec.Taints, Unschedulable: node.Spec.Unschedulable},
	}
}
