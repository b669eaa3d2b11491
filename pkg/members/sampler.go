package members

import (
	"context"
	"maps"
	"sync"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
)

// What the sampler reads in the karmada-apiserver: the member clusters, and their pods through the cluster proxy.
// Karmada's aggregated apiserver then reads the member as this identity (impersonation): the chart grants it, in
// every member, the right to list pods while sampling is on (the ClusterRole karmada-quota-member-reader of
// templates/_karmada.tpl, propagated by Karmada).
// +kubebuilder:rbac:groups=cluster.karmada.io,resources=clusters,verbs=list;watch
// +kubebuilder:rbac:groups=cluster.karmada.io,resources=clusters/proxy,verbs=get

// pageSize bounds one list of a member's pods: a member with many pods is read in pages, so neither it nor the
// proxy holds them all in one response.
const pageSize = 500

// Sampler reads, every interval, the pods of every Ready member cluster, and keeps what the pods of each governed
// namespace request there. It runs on the leader only (the standbys' status writes would conflict anyway).
type Sampler struct {
	karmada  client.Reader
	config   *rest.Config
	interval time.Duration
	// changed is told each namespace whose pods' requests changed on some member, so its quotas are recounted.
	changed func(namespace string)

	mu sync.RWMutex
	// samples are by member: what each governed namespace's pods request there.
	samples map[string]map[string]Running
	// sampled are the namespaces the last sample read: governed then.
	sampled map[string]bool
	clients map[string]kubernetes.Interface
}

// NewSampler returns a sampler reading the members through the karmada-apiserver at config (its own identity),
// the clusters and quotas from karmada (a cache), every interval, and telling changed about namespaces whose pods
// changed.
func NewSampler(karmada client.Reader, config *rest.Config, interval time.Duration, changed func(namespace string)) *Sampler {
	return &Sampler{
		karmada: karmada, config: rest.CopyConfig(config), interval: interval, changed: changed,
		samples: map[string]map[string]Running{}, clients: map[string]kubernetes.Interface{},
	}
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (s *Sampler) NeedLeaderElection() bool { return true }

// Start samples every interval until ctx is done.
func (s *Sampler) Start(ctx context.Context) error {
	ticker := time.NewTicker(s.interval)
	defer ticker.Stop()
	for {
		s.sampleAll(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

// Running is what the pods of namespace request on each member that was read, and whether any was for this
// namespace (a namespace whose first quota came after the last sample was not).
func (s *Sampler) Running(namespace string) (map[string]Running, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if !s.sampled[namespace] || len(s.samples) == 0 {
		return nil, false
	}
	out := map[string]Running{}
	for cluster, byNamespace := range s.samples {
		out[cluster] = byNamespace[namespace]
	}
	return out, true
}

func (s *Sampler) sampleAll(ctx context.Context) {
	log := klog.FromContext(ctx).WithName("members")
	var quotas quotav1alpha1.KarmadaQuotaList
	if err := s.karmada.List(ctx, &quotas); err != nil {
		log.Error(err, "Listing quotas")
		return
	}
	governed := map[string]bool{}
	for i := range quotas.Items {
		governed[quotas.Items[i].Namespace] = true
	}
	var clusters clusterv1alpha1.ClusterList
	if err := s.karmada.List(ctx, &clusters); err != nil {
		log.Error(err, "Listing member clusters")
		return
	}
	samples := map[string]map[string]Running{}
	for i := range clusters.Items {
		c := &clusters.Items[i]
		if c.DeletionTimestamp != nil || !meta.IsStatusConditionTrue(c.Status.Conditions, clusterv1alpha1.ClusterConditionReady) {
			// A member that cannot be read now is left out rather than shown as running nothing.
			continue
		}
		start := time.Now()
		sums := map[string]Running{}
		pods, err := s.eachPage(ctx, c.Name, func(page []corev1.Pod) {
			Add(sums, page, func(ns string) bool { return governed[ns] })
		})
		if err != nil {
			log.Error(err, "Reading a member's pods through Karmada's cluster proxy", "cluster", c.Name)
			continue
		}
		samples[c.Name] = sums
		log.V(4).Info("Read a member's pods", "cluster", c.Name, "pods", pods, "duration", time.Since(start))
	}

	s.mu.Lock()
	previous, wasSampled := s.samples, s.sampled
	s.samples, s.sampled = samples, governed
	s.mu.Unlock()
	for namespace := range governed {
		if !wasSampled[namespace] || !sameNamespace(previous, samples, namespace) {
			s.changed(namespace)
		}
	}
}

// sameNamespace reports whether namespace's pods request the same on the same members in both samples.
func sameNamespace(a, b map[string]map[string]Running, namespace string) bool {
	if len(a) != len(b) {
		return false
	}
	for cluster, byNamespace := range a {
		other, ok := b[cluster]
		if !ok {
			return false
		}
		if !maps.EqualFunc(byNamespace[namespace], other[namespace], resources.List.Equal) {
			return false
		}
	}
	return true
}

// eachPage lists the pods of one member that have not terminated, through Karmada's cluster proxy, handing each
// page to add, and returns how many there were.
func (s *Sampler) eachPage(ctx context.Context, cluster string, add func([]corev1.Pod)) (int, error) {
	kube, err := s.client(cluster)
	if err != nil {
		return 0, err
	}
	n := 0
	opts := metav1.ListOptions{Limit: pageSize, FieldSelector: "status.phase!=Succeeded,status.phase!=Failed"}
	for {
		list, err := kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, opts)
		if err != nil {
			return n, err
		}
		add(list.Items)
		n += len(list.Items)
		if list.Continue == "" {
			return n, nil
		}
		opts.Continue = list.Continue
	}
}

// client is a clientset whose requests go to one member through the karmada-apiserver's cluster proxy.
func (s *Sampler) client(cluster string) (kubernetes.Interface, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.clients[cluster]; ok {
		return c, nil
	}
	c, err := proxyClient(s.config, cluster)
	if err != nil {
		return nil, err
	}
	s.clients[cluster] = c
	return c, nil
}
