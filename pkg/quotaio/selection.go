package quotaio

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/apis/quota/validation"
)

// NamespaceMetadata is how the webhook and the controller watch namespaces: their metadata only, for the labels
// business quotas select them by.
func NamespaceMetadata() *metav1.PartialObjectMetadata {
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	return ns
}

// BusinessSelection tells which business quotas (KarmadaBusinessQuota) select a namespace, from the informers over
// business quotas and namespaces' metadata: admission decides a write against them, the controller recounts them
// when a binding of the namespace changes.
type BusinessSelection struct {
	cache client.Reader
	// apiReader reads a namespace the informer does not know yet (created a moment ago, perhaps with the
	// business's label): deciding without its labels would miss the business quotas it is created under. Nil
	// takes such a namespace as selected by none.
	apiReader client.Reader

	mu sync.Mutex
	// selectors are the compiled namespace selectors by quota UID, for the generation compiled.
	selectors map[types.UID]compiledSelector
}

type compiledSelector struct {
	generation int64
	selector   labels.Selector
	err        error
}

// NewBusinessSelection reads business quotas and namespaces from cache, and a namespace cache does not know yet from
// apiReader (nil: none).
func NewBusinessSelection(cache, apiReader client.Reader) *BusinessSelection {
	return &BusinessSelection{cache: cache, apiReader: apiReader, selectors: map[types.UID]compiledSelector{}}
}

// Selecting returns the business quotas that select namespace now, sorted by name, as the informer's objects: read
// them, never change them. A quota whose selector does not compile selects nothing (validation refuses such a
// quota; the controller reports one stored before it as invalid).
func (b *BusinessSelection) Selecting(ctx context.Context, namespace string) ([]*quotav1alpha1.KarmadaBusinessQuota, error) {
	if b == nil {
		return nil, nil
	}
	var all quotav1alpha1.KarmadaBusinessQuotaList
	if err := b.cache.List(ctx, &all, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing business quotas: %w", err)
	}
	if len(all.Items) == 0 {
		return nil, nil
	}
	nsLabels, err := b.labelsOf(ctx, namespace)
	if err != nil {
		return nil, err
	}
	var out []*quotav1alpha1.KarmadaBusinessQuota
	for i := range all.Items {
		q := &all.Items[i]
		sel := b.selector(q)
		if sel.err != nil {
			klog.FromContext(ctx).V(2).Info("Business quota selects no namespace: its selector does not compile", "quota", q.Name, "err", sel.err)
			continue
		}
		if sel.selector.Matches(nsLabels) {
			out = append(out, q)
		}
	}
	// Admission's queues and batches rely on the order.
	slices.SortFunc(out, func(a, b *quotav1alpha1.KarmadaBusinessQuota) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// labelsOf reads a namespace's labels from the informer, or from the apiserver when the informer does not know it.
func (b *BusinessSelection) labelsOf(ctx context.Context, namespace string) (labels.Set, error) {
	ns := NamespaceMetadata()
	err := b.cache.Get(ctx, client.ObjectKey{Name: namespace}, ns)
	if apierrors.IsNotFound(err) && b.apiReader != nil {
		ns = NamespaceMetadata()
		err = b.apiReader.Get(ctx, client.ObjectKey{Name: namespace}, ns)
	}
	if apierrors.IsNotFound(err) {
		// A binding cannot outlive its namespace; a write in one being removed selects by no label.
		return labels.Set{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading namespace %s: %w", namespace, err)
	}
	return ns.GetLabels(), nil
}

func (b *BusinessSelection) selector(q *quotav1alpha1.KarmadaBusinessQuota) compiledSelector {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c, ok := b.selectors[q.UID]; ok && c.generation == q.Generation {
		return c
	}
	c := compiledSelector{generation: q.Generation}
	if sel, fieldErr := validation.NamespaceSelector(&q.Spec); fieldErr != nil {
		c.err = fieldErr
	} else {
		c.selector = sel
	}
	b.selectors[q.UID] = c
	// Quotas come and go rarely; a map of every UID ever seen stays small, but not unbounded.
	if len(b.selectors) > 4096 {
		clear(b.selectors)
	}
	return c
}
