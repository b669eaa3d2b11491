package controller

import (
	"fmt"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
)

// bindingReader reads the ResourceBindings the controller's informer holds, as TrimBinding kept them. What it
// returns shares what the cache holds: it is only to be read, and a binding to change is a copy of it.
type bindingReader interface {
	// InNamespace lists the namespace's bindings, in no particular order.
	InNamespace(namespace string) ([]workv1alpha2.ResourceBinding, error)
	// Meta reads one binding's metadata (name, UID, generation): what settling its reservation reads, without
	// giving the whole binding back. Nil when the cache holds none of that name.
	Meta(key types.NamespacedName) (metav1.Object, error)
}

// cachedBindings reads the CachedBindings of the controller's binding informer. The manager's client cannot:
// it lists and gets only objects of the type it is asked for, and the informer holds CachedBindings, not
// ResourceBindings.
type cachedBindings struct {
	indexer toolscache.Indexer
}

// newCachedBindings reads the store of informer, which must index its objects by namespace, as every informer of
// controller-runtime's cache does.
func newCachedBindings(informer any) (*cachedBindings, error) {
	indexed, ok := informer.(interface{ GetIndexer() toolscache.Indexer })
	if !ok {
		return nil, fmt.Errorf("the binding informer (%T) has no store to read", informer)
	}
	indexer := indexed.GetIndexer()
	if _, ok := indexer.GetIndexers()[toolscache.NamespaceIndex]; !ok {
		return nil, fmt.Errorf("the binding informer's store has no %q index", toolscache.NamespaceIndex)
	}
	return &cachedBindings{indexer: indexer}, nil
}

func (c *cachedBindings) InNamespace(namespace string) ([]workv1alpha2.ResourceBinding, error) {
	objs, err := c.indexer.ByIndex(toolscache.NamespaceIndex, namespace)
	if err != nil {
		return nil, fmt.Errorf("namespace %s: %w", namespace, err)
	}
	out := make([]workv1alpha2.ResourceBinding, len(objs))
	for i, obj := range objs {
		cached, ok := obj.(*CachedBinding)
		if !ok {
			return nil, fmt.Errorf("the binding cache holds a %T", obj)
		}
		cached.fill(&out[i])
	}
	return out, nil
}

func (c *cachedBindings) Meta(key types.NamespacedName) (metav1.Object, error) {
	obj, exists, err := c.indexer.GetByKey(key.String())
	if err != nil || !exists {
		return nil, err
	}
	cached, ok := obj.(*CachedBinding)
	if !ok {
		return nil, fmt.Errorf("the binding cache holds a %T", obj)
	}
	return cached, nil
}
