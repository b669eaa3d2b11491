package controller

import (
	"context"
	"fmt"
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
// it. What is left open is a recount already running when the informer stores the shrunk binding, which can list it
// before the shrink is noted; the recount the shrink queues then reads the Work and corrects the count.

// shrinks remembers, by binding UID, the clusters a binding shrank on whose Works the Work view may not have
// caught up with.
type shrinks struct {
	mu    sync.Mutex
	byUID map[types.UID]map[string]string
}

func newShrinks() *shrinks {
	return &shrinks{byUID: map[types.UID]map[string]string{}}
}

// observe notes the member clusters on which an updated binding is charged less of some resource than before while
// still placed there, with the resourceVersion of the update: the Work view must reach it before the room counts
// as free. A cluster the binding leaves altogether is a move, charged nothing more at once (quota.Targets).
func (s *shrinks) observe(old, updated *workv1alpha2.ResourceBinding) {
	before, err := usage.Of(old)
	if err != nil {
		return
	}
	after, err := usage.Of(updated)
	if err != nil {
		return
	}
	was, is := before.Charge(usage.Selector{}).Clusters, after.Charge(usage.Selector{}).Clusters
	var shrunk []string
	for cluster, used := range was {
		now, placed := is[cluster]
		if !placed || !quota.Targets(updated, cluster) {
			continue
		}
		for name, v := range used {
			if now[name] < v {
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
}

// pending returns the clusters of rb whose Work the view must be checked against, each with the resourceVersion it
// must reach.
func (s *shrinks) pending(uid types.UID) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]string, len(s.byUID[uid]))
	for c, rv := range s.byUID[uid] {
		out[c] = rv
	}
	return out
}

// caughtUp records that the view holds the Work of uid on cluster at resourceVersion at least rv: nothing of the
// shrink is left to check there. A newer shrink recorded meanwhile stays.
func (s *shrinks) caughtUp(uid types.UID, cluster, rv string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	clusters := s.byUID[uid]
	if clusters[cluster] != rv {
		return
	}
	delete(clusters, cluster)
	if len(clusters) == 0 {
		delete(s.byUID, uid)
	}
}

// raise records that the view must reach rv on cluster, a Work read from the apiserver after the shrink, unless a
// newer shrink was recorded meanwhile.
func (s *shrinks) raise(uid types.UID, cluster, from, rv string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if clusters := s.byUID[uid]; clusters != nil && clusters[cluster] == from {
		clusters[cluster] = rv
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
	var byName map[string]*workv1alpha2.ResourceBinding
	for i := range bindings {
		rb := &bindings[i]
		for cluster, rv := range r.shrinks.pending(rb.UID) {
			namespace := names.GenerateExecutionSpaceName(cluster)
			name := names.GenerateWorkName(rb.Spec.Resource.Kind, rb.Spec.Resource.Name, rb.Spec.Resource.Namespace)
			if cached, ok := r.works.known(namespace + "/" + name); ok {
				if w, isWork := cached.(*askingWork); isWork && !lastwrite.Newer(rv, w.ResourceVersion) {
					r.shrinks.caughtUp(rb.UID, cluster, rv)
					continue
				}
			}
			var work workv1alpha1.Work
			err := r.apiReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &work)
			if apierrors.IsNotFound(err) {
				// No Work there now: the binding alone is charged. Once the view holds none either, it agrees.
				works = withoutWork(works, namespace, name)
				if _, cached := r.works.known(namespace + "/" + name); !cached {
					r.shrinks.caughtUp(rb.UID, cluster, rv)
				}
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("reading Work %s/%s, which the binding %s shrank past: %w", namespace, name, rb.Name, err)
			}
			trimmed, err := r.works.trim(&work)
			if err != nil {
				return nil, err
			}
			asking, ok := trimmed.(*askingWork)
			if !ok {
				continue
			}
			if byName == nil {
				byName = make(map[string]*workv1alpha2.ResourceBinding, len(bindings))
				for j := range bindings {
					byName[bindings[j].Name] = &bindings[j]
				}
			}
			observed, err := r.works.observeWork(ctx, asking, byName)
			if err != nil {
				return nil, err
			}
			works = append(withoutWork(works, namespace, name), observed)
			r.shrinks.raise(rb.UID, cluster, rv, work.ResourceVersion)
			klog.FromContext(ctx).V(2).Info("Work read from the apiserver: its binding shrank before the Work view caught up",
				"work", klog.KObj(&work), "binding", klog.KObj(rb), "bindingResourceVersion", rv, "workResourceVersion", work.ResourceVersion)
		}
	}
	return works, nil
}

// withoutWork is works without the Work namespace/name.
func withoutWork(works []quota.ObservedWork, namespace, name string) []quota.ObservedWork {
	out := works[:0:0]
	for _, w := range works {
		if w.Namespace != namespace || w.Name != name {
			out = append(out, w)
		}
	}
	return out
}
