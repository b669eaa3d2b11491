package controller

import (
	"context"
	"fmt"
	"slices"
	"sync"

	workv1alpha1 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"github.com/karmada-io/karmada/pkg/util/names"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/pkg/quota"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
	"github.com/karmada-quota/karmada-quota/pkg/util/lastwrite"
)

// A binding that shrinks on a member cluster gives room back there only once the Work Karmada sent that member is
// seen as it is. On each member a binding is charged the larger of what it places and what its Work asks
// (usage.Usage.Charge). When a binding grows, Karmada updates its Work to match, and the webhook admits that update
// without a reservation, since the binding's placement covers it; from then on the Work's ask is known only to the
// controller's view of the Works. If the binding then shrinks while that view still holds the Work as it was
// before the update, the recount charges the member what the binding places, less than the Work asks, and the room
// it frees is admitted to other writes while the member still runs what the Work asks. Measured on the local
// Karmada: after its etcd restarted, the view lagged seconds behind the bindings, and a quota showed used above hard
// for a second, members asked to run more than hard.
//
// So the controller notes each shrink (shrinks.observe, as the binding's update is queued for recount:
// pacedQuotasOf.Update) and, until its view of the Works has caught up, reads the binding's Work on each cluster it
// shrank on from the apiserver (freshWorks): a read made after the shrink sees every Work update that came before
// it. The informer stores a binding before its event handler notes the shrink, and a recount can list the binding
// in between (milliseconds; seconds while informers catch up after the karmada-apiserver restarted, where the fault
// suite once saw used 11 against hard 10 in this shape). So the tracker also keeps the generation of each binding
// whose event was handled (handled), and a recount treats a binding listed at a newer generation as shrunk on every
// cluster it targets: its Works are read from the apiserver too.

// shrinks remembers, by binding UID and cluster, the resourceVersion the Work view must reach before it is trusted
// again for that binding's Work there; and, by binding UID, the generation whose event was handled.
type shrinks struct {
	mu    sync.Mutex
	byUID map[types.UID]map[string]string
	// generations holds, by binding UID, the newest generation the event handler noted (handled): about 50 bytes a
	// binding, the UID's bytes shared with the cached binding.
	generations map[types.UID]int64
}

func newShrinks() *shrinks {
	return &shrinks{byUID: map[types.UID]map[string]string{}, generations: map[types.UID]int64{}}
}

// handled notes that the event of rb at its generation was handled: any shrink it made is noted (observe).
func (s *shrinks) handled(rb client.Object) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g, ok := s.generations[rb.GetUID()]; !ok || g < rb.GetGeneration() {
		s.generations[rb.GetUID()] = rb.GetGeneration()
	}
}

// observe notes the member clusters an updated binding still targets (quota.Targets: the clusters whose Work the
// recount charges) and is charged less of some resource on than before, with the resourceVersion of the update:
// the Work view must reach it before the room counts as free. before and after are what the binding used before
// the update and uses after it.
func (s *shrinks) observe(updated *workv1alpha2.ResourceBinding, before, after usage.Usage) {
	was, is := before.Charge(usage.Selector{}).Clusters, after.Charge(usage.Selector{}).Clusters
	var shrunk []string
	for cluster, used := range was {
		if !quota.Targets(updated, cluster) {
			continue
		}
		for name, v := range used {
			if is[cluster][name] < v {
				shrunk = append(shrunk, cluster)
				break
			}
		}
	}
	if len(shrunk) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	clusters := s.byUID[updated.UID]
	if clusters == nil {
		clusters = map[string]string{}
		s.byUID[updated.UID] = clusters
	}
	for _, c := range shrunk {
		clusters[c] = updated.ResourceVersion
	}
}

// forget drops a binding that is gone.
func (s *shrinks) forget(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byUID, uid)
	delete(s.generations, uid)
}

// shrink is one binding's cluster whose Work the view must be checked against: it must hold the Work at
// resourceVersion rv or later.
type shrink struct {
	binding     *workv1alpha2.ResourceBinding
	cluster, rv string
}

// of returns the shrinks of bindings, under one lock: a recount runs this for every namespace it counts, and
// almost always finds none. A binding at a generation whose event was not handled yet counts as shrunk at its
// resourceVersion on each cluster it targets, whatever it noted before: what it shrank is not known yet.
func (s *shrinks) of(bindings []workv1alpha2.ResourceBinding) []shrink {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []shrink
	for i := range bindings {
		rb := &bindings[i]
		if g, ok := s.generations[rb.UID]; !ok || g < rb.Generation {
			var clusters []string
			for cluster := range quota.TargetClusters(rb) {
				if !slices.Contains(clusters, cluster) {
					clusters = append(clusters, cluster)
					out = append(out, shrink{binding: rb, cluster: cluster, rv: rb.ResourceVersion})
				}
			}
			continue
		}
		for cluster, rv := range s.byUID[rb.UID] {
			out = append(out, shrink{binding: rb, cluster: cluster, rv: rv})
		}
	}
	return out
}

// advance moves sh on to resourceVersion to (the Work read from the apiserver), or drops it when to is empty (the
// view has caught up), unless a newer shrink was noted meanwhile.
func (s *shrinks) advance(sh shrink, to string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	clusters := s.byUID[sh.binding.UID]
	if clusters[sh.cluster] != sh.rv {
		return
	}
	if to != "" {
		clusters[sh.cluster] = to
		return
	}
	delete(clusters, sh.cluster)
	if len(clusters) == 0 {
		delete(s.byUID, sh.binding.UID)
	}
}

// freshWorks replaces, in works, the Work of each binding that shrank on a cluster by the Work as the apiserver
// holds it now, wherever the view has not caught up with the shrink yet. A read made after the shrink holds every
// Work update that came before it; once the view holds that Work at least as new as the read, the view is trusted
// again for that cluster. A Work that is not there asks nothing beyond its binding.
func (r *QuotaReconciler) freshWorks(ctx context.Context, bindings []workv1alpha2.ResourceBinding, works []quota.ObservedWork) ([]quota.ObservedWork, error) {
	if r.works == nil || r.shrinks == nil {
		return works, nil
	}
	pending := r.shrinks.of(bindings)
	if len(pending) == 0 {
		return works, nil
	}
	// The Works read here, by namespace/name, replace the view's.
	replaced := map[string]*quota.ObservedWork{}
	for _, sh := range pending {
		rb := sh.binding
		namespace := names.GenerateExecutionSpaceName(sh.cluster)
		name := names.GenerateWorkName(rb.Spec.Resource.Kind, rb.Spec.Resource.Name, rb.Spec.Resource.Namespace)
		key := namespace + "/" + name
		cached, inView := r.works.known(key)
		if w, ok := cached.(*askingWork); inView && ok && !lastwrite.Newer(sh.rv, w.ResourceVersion) {
			r.shrinks.advance(sh, "")
			continue
		}
		var work workv1alpha1.Work
		err := r.apiReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &work)
		if apierrors.IsNotFound(err) {
			// No Work there now: the binding alone is charged. Once the view holds none either, it agrees.
			replaced[key] = nil
			if !inView {
				r.shrinks.advance(sh, "")
			}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading Work %s, which the binding %s shrank past: %w", key, rb.Name, err)
		}
		trimmed, err := r.works.trim(&work)
		if err != nil {
			return nil, err
		}
		asking, ok := trimmed.(*askingWork)
		if !ok {
			continue
		}
		observed, err := r.works.observeWork(ctx, asking, rb)
		if err != nil {
			return nil, err
		}
		replaced[key] = &observed
		r.shrinks.advance(sh, work.ResourceVersion)
		klog.FromContext(ctx).V(2).Info("Work read from the apiserver: its binding shrank before the Work view caught up",
			"work", key, "binding", klog.KObj(rb), "bindingResourceVersion", sh.rv, "workResourceVersion", work.ResourceVersion)
	}
	if len(replaced) == 0 {
		return works, nil
	}
	out := works[:0]
	for _, w := range works {
		if _, ok := replaced[w.Namespace+"/"+w.Name]; !ok {
			out = append(out, w)
		}
	}
	for _, w := range replaced {
		if w != nil {
			out = append(out, *w)
		}
	}
	return out, nil
}
