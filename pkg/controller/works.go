package controller

import (
	"context"
	"fmt"
	"time"

	workv1alpha1 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"github.com/karmada-io/karmada/pkg/util/names"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/karmada-quota/karmada-quota/pkg/interpreter"
	"github.com/karmada-quota/karmada-quota/pkg/quota"
)

// What the controller reads of the Works: every Work of the control plane, for what it asks its member to run, and
// one Work from the apiserver where a binding shrank before the view caught up (shrinks.go).
// +kubebuilder:rbac:groups=work.karmada.io,resources=works,verbs=get;list;watch

// byBindingNamespace indexes Works by the namespace of the binding they were rendered from.
const byBindingNamespace = "bindingNamespace"

// askingWork is what the controller keeps of a Work: who it is, the binding it was rendered from, and what its
// workloads ask the member to run and hold, read once when it arrives. A Work carries whole rendered manifests,
// and there is one per binding and member: keeping them would cost more than every binding the controller holds.
type askingWork struct {
	metav1.ObjectMeta
	Binding types.NamespacedName
	// BindingID is the binding's permanent ID, as Karmada labels the Work (quota.RenderedFrom).
	BindingID string
	Cluster   string
	// Workloads are its manifests of the binding's namespace that run pods or hold something on the member (a
	// PersistentVolumeClaim, a LoadBalancer Service: no replicas, and a Held of a few names).
	Workloads []askedWorkload
	// Unreadable says why its manifests could not be read (the webhook refuses such a Work; this one was stored
	// before a customization changed, say); it is then counted as asking nothing beyond its binding.
	Unreadable string
}

type askedWorkload struct {
	Ref workv1alpha2.ObjectReference
	interpreter.Workload
}

// workView keeps what the Works of every namespace's bindings ask their members to run.
type workView struct {
	informer    toolscache.SharedIndexInformer
	interpreter *interpreter.Interpreter
	nodes       interpreter.NodeLister
}

// newWorkView returns a view of the Works listed and watched with lw; changed is told each binding
// namespace whose Works changed what they ask, deleted each Work UID that is gone. It reads nothing until Start.
func newWorkView(lw toolscache.ListerWatcher, workloads *interpreter.Interpreter, nodes interpreter.NodeLister, changed func(namespace string), deleted func(types.UID)) (*workView, error) {
	informer := toolscache.NewSharedIndexInformer(lw, &workv1alpha1.Work{}, 0, toolscache.Indexers{
		byBindingNamespace: func(obj any) ([]string, error) {
			if w, ok := obj.(*askingWork); ok && w.Binding.Name != "" {
				return []string{w.Binding.Namespace}, nil
			}
			return nil, nil
		},
	})
	v := &workView{informer: informer, interpreter: workloads, nodes: nodes}
	if err := informer.SetTransform(v.trim); err != nil {
		return nil, err
	}
	notify := func(obj any) {
		if w, ok := obj.(*askingWork); ok && w.Binding.Name != "" {
			changed(w.Binding.Namespace)
		}
	}
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: notify,
		UpdateFunc: func(oldObj, newObj any) {
			before, ok1 := oldObj.(*askingWork)
			after, ok2 := newObj.(*askingWork)
			// Karmada rewrites a Work's status and metadata constantly; only a new workload (its generation) or a
			// new reading of it changes what it asks.
			if ok1 && ok2 && before.Generation == after.Generation && before.Unreadable == after.Unreadable && before.UID == after.UID {
				return
			}
			notify(newObj)
		},
		DeleteFunc: func(obj any) {
			if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			if w, ok := obj.(*askingWork); ok {
				deleted(w.UID)
			}
			notify(obj)
		},
	}); err != nil {
		return nil, err
	}
	return v, nil
}

// Start runs the informer once Karmada's interpreter has loaded the customizations (a Work of a custom kind read
// before would count as asking nothing), until ctx ends.
func (v *workView) Start(ctx context.Context) error {
	if err := v.interpreter.WaitStarted(ctx); err != nil {
		return nil
	}
	v.informer.RunWithContext(ctx)
	return nil
}

// NeedLeaderElection: only the leader counts.
func (v *workView) NeedLeaderElection() bool { return true }

// synced reports whether the view holds every Work: before that a recount would miss what Works ask beyond their
// bindings, and charge less than members run.
func (v *workView) synced() bool {
	return v.informer.HasSynced()
}

// known returns what the view holds under key, if it runs.
func (v *workView) known(key string) (any, bool) {
	if v.informer == nil {
		return nil, false
	}
	obj, exists, _ := v.informer.GetIndexer().GetByKey(key)
	return obj, exists
}

// trim is the informer's transform: a Work becomes what it asks (askingWork). Trimming a trimmed Work changes
// nothing (the informer transforms again what it resyncs).
func (v *workView) trim(obj any) (any, error) {
	work, ok := obj.(*workv1alpha1.Work)
	if !ok {
		return obj, nil
	}
	meta := metav1.ObjectMeta{
		Name: work.Name, Namespace: work.Namespace, UID: work.UID, ResourceVersion: work.ResourceVersion,
		Generation: work.Generation, DeletionTimestamp: work.DeletionTimestamp,
	}
	// Karmada writes a Work's status far more often than its workload: a Work already read at this generation asks
	// what it asked, and is not read again.
	if known, exists := v.known(work.Namespace + "/" + work.Name); exists {
		if previous, ok := known.(*askingWork); ok && previous.UID == work.UID && previous.Generation == work.Generation && work.Generation > 0 {
			out := *previous
			out.ObjectMeta = meta
			return &out, nil
		}
	}
	out := &askingWork{ObjectMeta: meta}
	cluster, err := names.GetClusterName(work.Namespace)
	if err != nil {
		return out, nil
	}
	binding := types.NamespacedName{
		Namespace: work.Annotations[workv1alpha2.ResourceBindingNamespaceAnnotationKey],
		Name:      work.Annotations[workv1alpha2.ResourceBindingNameAnnotationKey],
	}
	if binding.Name == "" || binding.Namespace == "" {
		// Rendered from a cluster-scoped binding, or written by hand: no quota's binding.
		return out, nil
	}
	out.Binding, out.Cluster = binding, cluster
	out.BindingID = work.Labels[workv1alpha2.ResourceBindingPermanentIDLabel]
	// The interpreter has started (Start); the bound is for a webhook interpreter that does not answer.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i, m := range work.Spec.Workload.Manifests {
		manifest := &unstructured.Unstructured{}
		if err := manifest.UnmarshalJSON(m.Raw); err != nil {
			out.Unreadable = fmt.Sprintf("spec.workload.manifests[%d] is not a Kubernetes object: %v", i, err)
			out.Workloads = nil
			return out, nil
		}
		if manifest.GetNamespace() != binding.Namespace {
			continue
		}
		w, counted, err := v.interpreter.Workload(ctx, manifest)
		if err != nil {
			out.Unreadable = err.Error()
			out.Workloads = nil
			return out, nil
		}
		if counted {
			// Kept for every Work of the control plane: what the count reads, not where the scheduler may put it.
			if w.Requirements != nil {
				w.Requirements.NodeClaim = nil
			}
			for i := range w.Components {
				if w.Components[i].ReplicaRequirements != nil {
					w.Components[i].ReplicaRequirements.NodeClaim = nil
				}
			}
			ref := workv1alpha2.ObjectReference{APIVersion: manifest.GetAPIVersion(), Kind: manifest.GetKind(), Namespace: manifest.GetNamespace(), Name: manifest.GetName()}
			out.Workloads = append(out.Workloads, askedWorkload{Ref: ref, Workload: w})
		}
	}
	return out, nil
}

// observe returns the Works of namespace's bindings, with what each asks its member to run, read for its binding
// as the webhook reads it (interpreter.Workload.OnMember: the binding's classes, its components): a per-node
// workload counted on the member's nodes as they are now, so that a node that joined is charged as it appears. A
// Work whose binding is not among bindings is returned without what it asks: it is observed (its reservation
// settles), and counted with its binding once that is observed.
func (v *workView) observe(ctx context.Context, namespace string, bindings []workv1alpha2.ResourceBinding) ([]quota.ObservedWork, error) {
	items, err := v.informer.GetIndexer().ByIndex(byBindingNamespace, namespace)
	if err != nil {
		return nil, err
	}
	byName := make(map[string]*workv1alpha2.ResourceBinding, len(bindings))
	for i := range bindings {
		byName[bindings[i].Name] = &bindings[i]
	}
	out := make([]quota.ObservedWork, 0, len(items))
	for _, item := range items {
		w := item.(*askingWork)
		observed, err := v.observeWork(ctx, w, byName[w.Binding.Name])
		if err != nil {
			return nil, err
		}
		out = append(out, observed)
	}
	return out, nil
}

// observeWork is what one Work asks its member to run, read for rb, the binding of its name (nil when none is
// observed): observed, and counted with its binding once that is.
func (v *workView) observeWork(ctx context.Context, w *askingWork, rb *workv1alpha2.ResourceBinding) (quota.ObservedWork, error) {
	observed := quota.ObservedWork{
		Namespace: w.Namespace, Name: w.Name, UID: w.UID, Generation: w.Generation,
		BindingNamespace: w.Binding.Namespace, Binding: w.Binding.Name, BindingID: w.BindingID, Cluster: w.Cluster, Deleting: w.DeletionTimestamp != nil,
	}
	if w.Unreadable != "" {
		klog.FromContext(ctx).V(2).Info("Work counted as asking nothing beyond its binding: unreadable", "work", klog.KObj(w), "reason", w.Unreadable)
	}
	if rb == nil || !quota.RenderedFrom(rb, w.BindingID) {
		return observed, nil
	}
	for _, asked := range w.Workloads {
		if asked.Ref.Kind != rb.Spec.Resource.Kind || asked.Ref.Name != rb.Spec.Resource.Name {
			// Not the binding's workload: the webhook admitted it nothing of the binding's.
			continue
		}
		sets, err := asked.OnMember(ctx, rb, w.Cluster, v.nodes)
		if err != nil {
			if asked.PerNode != nil {
				// Counting it as nothing would charge less than the member runs: the recount waits for the nodes.
				return observed, err
			}
			// The webhook refuses a Work no quota can count; one stored before is counted as asking nothing.
			klog.FromContext(ctx).V(2).Info("Work workload counted as asking nothing beyond its binding", "work", klog.KObj(w), "err", err)
			continue
		}
		observed.Asks = append(observed.Asks, sets...)
	}
	return observed, nil
}
