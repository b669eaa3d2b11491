package admission

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

// NamespaceMetadata is how the webhook watches namespaces: their metadata only, for the labels business quotas
// select them by.
func NamespaceMetadata() *metav1.PartialObjectMetadata {
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	return ns
}

// businessSelection tells which business quotas (KarmadaBusinessQuota) select a namespace, from the informers over
// business quotas and namespaces' metadata.
type businessSelection struct {
	cache client.Reader
	// apiReader reads a namespace the informer does not know yet (created a moment ago, perhaps with the
	// business's label): deciding without its labels would miss the business quotas it is created under.
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

func newBusinessSelection(cache, apiReader client.Reader) *businessSelection {
	return &businessSelection{cache: cache, apiReader: apiReader, selectors: map[types.UID]compiledSelector{}}
}

// selecting returns the business quotas that select namespace now, sorted by name, as the informer's objects: read
// them, never change them. A quota whose selector does not compile selects nothing (validation refuses such a
// quota; the controller reports one stored before it as invalid).
func (b *businessSelection) selecting(ctx context.Context, namespace string) ([]*quotav1alpha1.KarmadaBusinessQuota, error) {
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
	// queueOf and the batch rely on the order.
	slices.SortFunc(out, func(a, b *quotav1alpha1.KarmadaBusinessQuota) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// labelsOf reads a namespace's labels from the informer, or from the apiserver when the informer does not know it.
func (b *businessSelection) labelsOf(ctx context.Context, namespace string) (labels.Set, error) {
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

func (b *businessSelection) selector(q *quotav1alpha1.KarmadaBusinessQuota) compiledSelector {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c, ok := b.selectors[q.UID]; ok && c.generation == q.Generation {
		return c
	}
	c := compiledSelector{generation: q.Generation}
	c.selector, c.err = compileNamespaceSelector(&q.Spec)
	b.selectors[q.UID] = c
	// Quotas come and go rarely; a map of every UID ever seen stays small, but not unbounded.
	if len(b.selectors) > 4096 {
		clear(b.selectors)
	}
	return c
}

// compileNamespaceSelector is validation.NamespaceSelector with its *field.Error as an error (nil when nil).
func compileNamespaceSelector(spec *quotav1alpha1.KarmadaBusinessQuotaSpec) (labels.Selector, error) {
	sel, err := validation.NamespaceSelector(spec)
	if err != nil {
		return nil, err
	}
	return sel, nil
}

// queueOf is the queue a write in namespace is decided in: its namespace's own, or, where business quotas select
// the namespace, the first of them's, so that the writes of the namespaces sharing a business quota are batched
// into one write of its ledger. Namespaces selected by different sets of business quotas may still share one of
// them from different queues: their batches then race on its ledger, and the compare-and-swap keeps them exact.
func queueOf(namespace string, business []*quotav1alpha1.KarmadaBusinessQuota) string {
	if len(business) == 0 {
		return namespace
	}
	// A namespace's name has no "/", so no namespace queue takes this name.
	return "business/" + business[0].Name
}
