// Package templates reads, from the resource templates Karmada's bindings bind, what the quota needs and a binding
// does not carry: the priority class of their pods (pkg/priorityclass), what they hold on members (claims, load
// balancers). The webhook and the controller read templates through it alike.
//
// Karmada's detector rewrites a binding (spec.resource.resourceVersion, and so its generation) whenever its
// template changes, so what is read from one template version holds for the binding generations made from it:
// readings are cached by (namespace, kind, name, resourceVersion) in a bounded LRU, and a template is read once
// per new version, not on every binding write.
package templates

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"golang.org/x/sync/singleflight"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/lru"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ErrGone says the template a binding names no longer exists.
var ErrGone = errors.New("the template is gone")

// listPageSize bounds the templates one LIST page holds in memory.
const listPageSize = 500

// ListThreshold is how many templates of one kind in one namespace Each reads with a LIST instead of a GET each: a
// recount of a namespace of thousands of Deployments after a restart takes a few paged LISTs, not a GET per
// Deployment at the client's rate limit.
const ListThreshold = 8

// Reader reads one fact of type T from templates of the kinds it knows, remembering it per template version.
type Reader[T any] struct {
	client client.Reader
	cache  *lru.Cache
	reads  singleflight.Group
	// kinds maps each kind read to the version it is read at: the kind's stable version, whatever version the
	// binding names (a binding may name one the apiserver no longer serves).
	kinds map[schema.GroupKind]string
	// what names the fact, for errors.
	what string
	read func(*unstructured.Unstructured) (T, error)
}

// NewReader returns a Reader of what, reading templates of kinds (at the version each maps to) through c, which
// should read the apiserver rather than an informer's cache (no informer over every Deployment of the federation
// is needed), and remembering size template versions. read takes the fact from a template.
func NewReader[T any](c client.Reader, size int, kinds map[schema.GroupKind]string, what string, read func(*unstructured.Unstructured) (T, error)) *Reader[T] {
	return &Reader[T]{client: c, cache: lru.New(size), kinds: kinds, what: what, read: read}
}

// version identifies one version of one template.
type version struct {
	namespace, group, kind, name, resourceVersion string
}

func versionOf(ref workv1alpha2.ObjectReference) version {
	gv, _ := schema.ParseGroupVersion(ref.APIVersion)
	return version{namespace: ref.Namespace, group: gv.Group, kind: ref.Kind, name: ref.Name, resourceVersion: ref.ResourceVersion}
}

// Knows reports whether the Reader reads templates of ref's kind.
func (r *Reader[T]) Knows(ref workv1alpha2.ObjectReference) bool {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return false
	}
	_, ok := r.kinds[gv.WithKind(ref.Kind).GroupKind()]
	return ok
}

// Cached returns what the template version ref names holds if this Reader read it before.
func (r *Reader[T]) Cached(ref workv1alpha2.ObjectReference) (T, bool) {
	var zero T
	if ref.ResourceVersion == "" {
		return zero, false
	}
	v, ok := r.cache.Get(versionOf(ref))
	if !ok {
		return zero, false
	}
	return v.(T), true
}

// Current reads the fact from the template ref names, unless that version was read before. When the template has
// changed since the binding was made from it, the current version's is returned: the detector is about to rewrite
// the binding from it. It returns ErrGone for a template that is gone, and the read's error otherwise; a kind the
// Reader does not know is an error.
func (r *Reader[T]) Current(ctx context.Context, ref workv1alpha2.ObjectReference) (T, error) {
	var zero T
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return zero, fmt.Errorf("apiVersion %q does not parse", ref.APIVersion)
	}
	gk := gv.WithKind(ref.Kind).GroupKind()
	readAt, known := r.kinds[gk]
	if !known {
		return zero, fmt.Errorf("the %s of %s is not read", r.what, gk)
	}
	if v, ok := r.Cached(ref); ok {
		return v, nil
	}
	key := versionOf(ref)
	read, err, _ := r.reads.Do(fmt.Sprintf("%v", key), func() (any, error) {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(schema.GroupVersionKind{Group: gk.Group, Version: readAt, Kind: gk.Kind})
		if err := r.client.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, obj); err != nil {
			if apierrors.IsNotFound(err) {
				return zero, ErrGone
			}
			return zero, fmt.Errorf("reading %s %s/%s for its %s: %w", ref.Kind, ref.Namespace, ref.Name, r.what, err)
		}
		return r.remember(key, obj)
	})
	if err != nil {
		return zero, err
	}
	return read.(T), nil
}

// Previous returns the fact of the template version old names, given that the template has since been replaced
// by the version current names: the old binding of an update the detector makes after a template change. A version
// read before is remembered; otherwise the template is listed as it was at the revision just before the one that
// replaced it, which etcd still holds (it is moments old), and used only if that is exactly old's version. It
// reports false when that version cannot be had: the detector skipped versions, or resourceVersions are not
// etcd revisions.
func (r *Reader[T]) Previous(ctx context.Context, old, current workv1alpha2.ObjectReference) (T, bool) {
	var zero T
	if v, ok := r.Cached(old); ok {
		return v, true
	}
	gv, err := schema.ParseGroupVersion(old.APIVersion)
	if err != nil {
		return zero, false
	}
	gk := gv.WithKind(old.Kind).GroupKind()
	readAt, known := r.kinds[gk]
	replacedAt, err := strconv.ParseUint(current.ResourceVersion, 10, 64)
	if !known || err != nil || replacedAt < 2 || old.ResourceVersion == "" {
		return zero, false
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: gk.Group, Version: readAt, Kind: gk.Kind + "List"})
	err = r.client.List(ctx, list, client.InNamespace(old.Namespace), &client.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", old.Name),
		Raw: &metav1.ListOptions{
			ResourceVersion:      strconv.FormatUint(replacedAt-1, 10),
			ResourceVersionMatch: metav1.ResourceVersionMatchExact,
		},
	})
	if err != nil || len(list.Items) != 1 || list.Items[0].GetResourceVersion() != old.ResourceVersion {
		return zero, false
	}
	v, err := r.remember(versionOf(old), &list.Items[0])
	return v, err == nil
}

// all reads the fact from every template of a kind in a namespace, page by page, remembers each version's, and
// returns them by template name. A template whose fact cannot be read is left out, its error returned in failed.
func (r *Reader[T]) all(ctx context.Context, namespace string, gk schema.GroupKind) (facts map[string]T, failed map[string]error, err error) {
	readAt, known := r.kinds[gk]
	if !known {
		return nil, nil, fmt.Errorf("the %s of %s is not read", r.what, gk)
	}
	facts, failed = map[string]T{}, map[string]error{}
	continueToken := ""
	for {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(schema.GroupVersionKind{Group: gk.Group, Version: readAt, Kind: gk.Kind + "List"})
		if err := r.client.List(ctx, list, client.InNamespace(namespace), client.Limit(listPageSize), client.Continue(continueToken)); err != nil {
			return nil, nil, fmt.Errorf("listing %s in %s for their %s: %w", gk.Kind, namespace, r.what, err)
		}
		for i := range list.Items {
			obj := &list.Items[i]
			key := version{namespace: namespace, group: gk.Group, kind: gk.Kind, name: obj.GetName()}
			v, err := r.remember(key, obj)
			if err != nil {
				failed[obj.GetName()] = err
				continue
			}
			facts[obj.GetName()] = v
		}
		continueToken = list.GetContinue()
		if continueToken == "" {
			return facts, failed, nil
		}
	}
}

// Remember records v as the fact of the template version ref names: what a caller read from that version itself
// (the template webhook holds the template it admits), so that no read of it is needed later.
func (r *Reader[T]) Remember(ref workv1alpha2.ObjectReference, v T) {
	if ref.ResourceVersion != "" {
		r.cache.Add(versionOf(ref), v)
	}
}

// Each reads the fact of every template refs name, of kinds the Reader knows: remembered, or read with a GET each,
// or with a paged LIST of a kind in a namespace when many of one kind are missing (all). It calls found with each
// ref's index and fact, gone with the index of a template that is gone, and stops at the first other error: a read
// that failed, or a template whose fact cannot be read.
func (r *Reader[T]) Each(ctx context.Context, refs []workv1alpha2.ObjectReference, found func(i int, v T), gone func(i int)) error {
	type kindIn struct {
		namespace string
		gk        schema.GroupKind
	}
	missing := map[kindIn][]int{}
	for i, ref := range refs {
		if v, ok := r.Cached(ref); ok {
			found(i, v)
			continue
		}
		gv, _ := schema.ParseGroupVersion(ref.APIVersion)
		k := kindIn{namespace: ref.Namespace, gk: gv.WithKind(ref.Kind).GroupKind()}
		missing[k] = append(missing[k], i)
	}
	for k, indexes := range missing {
		if len(indexes) < ListThreshold {
			for _, i := range indexes {
				v, err := r.Current(ctx, refs[i])
				switch {
				case errors.Is(err, ErrGone):
					gone(i)
				case err != nil:
					return err
				default:
					found(i, v)
				}
			}
			continue
		}
		all, failed, err := r.all(ctx, k.namespace, k.gk)
		if err != nil {
			return err
		}
		for _, i := range indexes {
			name := refs[i].Name
			if err := failed[name]; err != nil {
				return fmt.Errorf("reading the %s of %s %s/%s: %w", r.what, k.gk.Kind, k.namespace, name, err)
			}
			if v, ok := all[name]; ok {
				found(i, v)
			} else {
				gone(i)
			}
		}
	}
	return nil
}

// SameTemplate reports whether a and b were made from the same version of the same template, and so read alike.
func SameTemplate(a, b *workv1alpha2.ResourceBinding) bool {
	ra, rb := a.Spec.Resource, b.Spec.Resource
	return ra.ResourceVersion != "" && ra.ResourceVersion == rb.ResourceVersion && ra.UID == rb.UID &&
		ra.APIVersion == rb.APIVersion && ra.Kind == rb.Kind && ra.Namespace == rb.Namespace && ra.Name == rb.Name
}

// remember reads the fact from obj and records it for the template version obj is.
func (r *Reader[T]) remember(key version, obj *unstructured.Unstructured) (T, error) {
	v, err := r.read(obj)
	if err != nil {
		return v, err
	}
	key.resourceVersion = obj.GetResourceVersion()
	if key.resourceVersion != "" {
		r.cache.Add(key, v)
	}
	return v, nil
}
