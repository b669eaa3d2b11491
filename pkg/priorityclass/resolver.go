// Package priorityclass finds the priority class of a ResourceBinding's replicas when the binding does not carry
// it, so that a quota scoped by PriorityClass counts them on every Karmada.
//
// Karmada v1.18 copies a pod template's priorityClassName into spec.replicaRequirements.priorityClassName only
// when karmada-controller-manager runs with the alpha feature gate ResourceQuotaEstimate, off by default
// (GenerateReplicaRequirements in Karmada's pkg/util/helper/binding.go). Without it every binding looks
// class-less, and a quota scoped `PriorityClass In [high]` would count nothing and admit past hard. The class is
// then read from the resource template the binding binds, for the kinds whose pod template is known.
//
// Karmada's detector rewrites a binding (spec.resource.resourceVersion, and so its generation) whenever its
// template changes, so the class read for one template version holds for the binding generations made from it:
// resolutions are cached by (namespace, kind, name, resourceVersion) in a bounded LRU, and a template is read once
// per new version, not on every binding write.
//
// usage.Of stays a pure function of a binding: callers resolve first, then hand usage.Of a copy of the binding
// with the class filled in (WithClass).
package priorityclass

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

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

// template is where one kind keeps the priorityClassName of its pods, and the version it is read at: the kind's
// stable version, whatever version the binding names (a binding may name one the apiserver no longer serves).
type template struct {
	version string
	path    []string
}

var podTemplateClass = []string{"spec", "template", "spec", "priorityClassName"}

// templates are the kinds whose class is read. Karmada's own replica interpreters cover Deployment, StatefulSet,
// ReplicaSet, Job and Pod; DaemonSet and CronJob place no replicas by default, but an interpreter customization
// can make them, and their pod template is as easy to read.
var templates = map[schema.GroupKind]template{
	{Group: "apps", Kind: "Deployment"}:  {version: "v1", path: podTemplateClass},
	{Group: "apps", Kind: "StatefulSet"}: {version: "v1", path: podTemplateClass},
	{Group: "apps", Kind: "ReplicaSet"}:  {version: "v1", path: podTemplateClass},
	{Group: "apps", Kind: "DaemonSet"}:   {version: "v1", path: podTemplateClass},
	{Group: "batch", Kind: "Job"}:        {version: "v1", path: podTemplateClass},
	{Group: "batch", Kind: "CronJob"}:    {version: "v1", path: []string{"spec", "jobTemplate", "spec", "template", "spec", "priorityClassName"}},
	{Group: "", Kind: "Pod"}:             {version: "v1", path: []string{"spec", "priorityClassName"}},
}

// Kinds names the kinds whose class is read from the template, for messages.
func Kinds() string {
	names := make([]string, 0, len(templates))
	for gk := range templates {
		names = append(names, gk.Kind)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// Unclassifiable is the error for a binding whose class cannot be read: its kind's pod template is unknown, or
// its template is gone. It is no failure of the apiserver; asking again gives the same answer.
type Unclassifiable struct {
	// Resource is the binding's template reference.
	Resource workv1alpha2.ObjectReference
	// Why says what prevented the read.
	Why string
}

func (e *Unclassifiable) Error() string {
	return fmt.Sprintf("the priority class of %s %s/%s (%s) cannot be read: %s",
		e.Resource.Kind, e.Resource.Namespace, e.Resource.Name, e.Resource.APIVersion, e.Why)
}

// IsUnclassifiable reports whether err is an Unclassifiable.
func IsUnclassifiable(err error) bool {
	var u *Unclassifiable
	return errors.As(err, &u)
}

// DefaultCacheSize is how many template versions a Resolver remembers: about 200 bytes each, so 20 MB at most.
const DefaultCacheSize = 100_000

// listThreshold is how many templates of one kind in one namespace ClassifyAll reads with a LIST instead of a
// GET each: a recount of a namespace of thousands of Deployments after a restart takes a few paged LISTs, not a
// GET per Deployment at the client's rate limit.
const listThreshold = 8

// listPageSize bounds the templates one LIST page holds in memory.
const listPageSize = 500

// Resolver reads the priority class of bindings' templates from the karmada-apiserver, remembering the class of
// each template version it read.
type Resolver struct {
	reader client.Reader
	cache  *lru.Cache
	reads  singleflight.Group
}

// NewResolver returns a Resolver reading templates through reader, which should read the apiserver rather than
// an informer's cache (no informer over every Deployment of the federation is needed), and remembering size
// template versions.
func NewResolver(reader client.Reader, size int) *Resolver {
	return &Resolver{reader: reader, cache: lru.New(size)}
}

// version identifies one version of one template.
type version struct {
	namespace, group, kind, name, resourceVersion string
}

func versionOf(ref workv1alpha2.ObjectReference) version {
	gv, _ := schema.ParseGroupVersion(ref.APIVersion)
	return version{namespace: ref.Namespace, group: gv.Group, kind: ref.Kind, name: ref.Name, resourceVersion: ref.ResourceVersion}
}

// bindingClass is the class a binding names for replica sets that name none themselves.
func bindingClass(rb *workv1alpha2.ResourceBinding) string {
	if rr := rb.Spec.ReplicaRequirements; rr != nil {
		return rr.PriorityClassName
	}
	return ""
}

// classless reports whether some replica set of rb (the binding's, or a component's) names no class, and whether
// it asks for replicas at all.
func classless(rb *workv1alpha2.ResourceBinding) (missing, wantsReplicas bool) {
	inherited := bindingClass(rb)
	if len(rb.Spec.Components) == 0 {
		return inherited == "", rb.Spec.Replicas > 0
	}
	for _, c := range rb.Spec.Components {
		if c.Replicas <= 0 {
			continue
		}
		wantsReplicas = true
		if c.ReplicaRequirements == nil || c.ReplicaRequirements.PriorityClassName == "" {
			missing = missing || inherited == ""
		}
	}
	return missing, wantsReplicas
}

// Lacks reports whether rb asks for or places replicas of which some name no priority class: a quota scoped by
// PriorityClass cannot count them (or tell what a binding waiting for quota still needs) without resolving it.
func Lacks(rb *workv1alpha2.ResourceBinding) bool {
	missing, wants := classless(rb)
	return missing && (wants || PlacesUnclassified(rb))
}

// PlacesUnclassified reports whether rb places replicas on a member cluster of which some name no priority class:
// only those make admission under a scoped quota depend on the class. It allocates nothing, for the webhook's hot
// path.
func PlacesUnclassified(rb *workv1alpha2.ResourceBinding) bool {
	if missing, _ := classless(rb); !missing {
		return false
	}
	if len(rb.Spec.Components) > 0 {
		// Every listed cluster runs the whole set of components; classless saw one with replicas and no class.
		return len(rb.Spec.Clusters) > 0
	}
	for _, tc := range rb.Spec.Clusters {
		if tc.Replicas > 0 {
			return true
		}
	}
	return false
}

// WithClass returns a copy of rb naming class for its replica sets that name none. The copy shares everything
// but spec.replicaRequirements with rb, which it never changes: rb may be an informer cache's object.
func WithClass(rb *workv1alpha2.ResourceBinding, class string) *workv1alpha2.ResourceBinding {
	if class == "" || bindingClass(rb) != "" {
		return rb
	}
	out := *rb
	out.Spec.ReplicaRequirements = requirementsWithClass(rb, class)
	return &out
}

// fillClass is WithClass for a binding held by value in a slice: only the requirements are new, not the binding.
func fillClass(rb *workv1alpha2.ResourceBinding, class string) {
	if class == "" || bindingClass(rb) != "" {
		return
	}
	rb.Spec.ReplicaRequirements = requirementsWithClass(rb, class)
}

// requirementsWithClass is a copy of rb's replica requirements naming class.
func requirementsWithClass(rb *workv1alpha2.ResourceBinding, class string) *workv1alpha2.ReplicaRequirements {
	rr := workv1alpha2.ReplicaRequirements{}
	if rb.Spec.ReplicaRequirements != nil {
		rr = *rb.Spec.ReplicaRequirements
	}
	rr.PriorityClassName = class
	return &rr
}

// SameTemplate reports whether a and b were made from the same version of the same template, and so share its
// class.
func SameTemplate(a, b *workv1alpha2.ResourceBinding) bool {
	ra, rb := a.Spec.Resource, b.Spec.Resource
	return ra.ResourceVersion != "" && ra.ResourceVersion == rb.ResourceVersion && ra.UID == rb.UID &&
		ra.APIVersion == rb.APIVersion && ra.Kind == rb.Kind && ra.Namespace == rb.Namespace && ra.Name == rb.Name
}

// Cached returns the class of the template version ref names if this Resolver read it before.
func (r *Resolver) Cached(ref workv1alpha2.ObjectReference) (string, bool) {
	if ref.ResourceVersion == "" {
		return "", false
	}
	class, ok := r.cache.Get(versionOf(ref))
	if !ok {
		return "", false
	}
	return class.(string), true
}

// Class returns the priority class the pod template of ref names ("" for none). It reads the template unless
// that version was read before. When the template has changed since the binding was made from it, the class of
// the current version is returned: the detector is about to rewrite the binding from it. It returns an
// Unclassifiable for a kind whose pod template is unknown or a template that is gone, and the read's error
// otherwise.
func (r *Resolver) Class(ctx context.Context, ref workv1alpha2.ObjectReference) (string, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return "", &Unclassifiable{Resource: ref, Why: fmt.Sprintf("apiVersion %q does not parse", ref.APIVersion)}
	}
	t, known := templates[gv.WithKind(ref.Kind).GroupKind()]
	if !known {
		return "", &Unclassifiable{Resource: ref, Why: fmt.Sprintf("karmada-quota reads the class only from the pod "+
			"templates of %s, and Karmada copies it into the binding only with its feature gate ResourceQuotaEstimate", Kinds())}
	}
	if class, ok := r.Cached(ref); ok {
		return class, nil
	}
	key := versionOf(ref)
	read, err, _ := r.reads.Do(fmt.Sprintf("%v", key), func() (any, error) {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(schema.GroupVersionKind{Group: gv.Group, Version: t.version, Kind: ref.Kind})
		if err := r.reader.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, obj); err != nil {
			if apierrors.IsNotFound(err) {
				return "", &Unclassifiable{Resource: ref, Why: "the template is gone"}
			}
			return "", fmt.Errorf("reading %s %s/%s for its priority class: %w", ref.Kind, ref.Namespace, ref.Name, err)
		}
		return r.remember(key, obj, t), nil
	})
	if err != nil {
		return "", err
	}
	return read.(string), nil
}

// Previous returns the class of the template version old names, given that the template has since been replaced
// by the version current names: the old binding of an update the detector makes after a template change. A version
// read before is remembered; otherwise the template is listed as it was at the revision just before the one that
// replaced it, which etcd still holds (it is moments old), and used only if that is exactly old's version. It
// reports false when that version cannot be had: the detector skipped versions, or resourceVersions are not
// etcd revisions.
func (r *Resolver) Previous(ctx context.Context, old, current workv1alpha2.ObjectReference) (string, bool) {
	if class, ok := r.Cached(old); ok {
		return class, true
	}
	gv, err := schema.ParseGroupVersion(old.APIVersion)
	if err != nil {
		return "", false
	}
	gk := gv.WithKind(old.Kind).GroupKind()
	t, known := templates[gk]
	replacedAt, err := strconv.ParseUint(current.ResourceVersion, 10, 64)
	if !known || err != nil || replacedAt < 2 || old.ResourceVersion == "" {
		return "", false
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: gk.Group, Version: t.version, Kind: gk.Kind + "List"})
	err = r.reader.List(ctx, list, client.InNamespace(old.Namespace), &client.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", old.Name),
		Raw: &metav1.ListOptions{
			ResourceVersion:      strconv.FormatUint(replacedAt-1, 10),
			ResourceVersionMatch: metav1.ResourceVersionMatchExact,
		},
	})
	if err != nil || len(list.Items) != 1 || list.Items[0].GetResourceVersion() != old.ResourceVersion {
		return "", false
	}
	return r.remember(versionOf(old), &list.Items[0], t), true
}

// remember records the class of the template version obj is, and returns it.
func (r *Resolver) remember(key version, obj *unstructured.Unstructured, t template) string {
	class, _, _ := unstructured.NestedString(obj.Object, t.path...)
	key.resourceVersion = obj.GetResourceVersion()
	if key.resourceVersion != "" {
		r.cache.Add(key, class)
	}
	return class
}

// Failure is a binding ClassifyAll could not classify, and why.
type Failure struct {
	Binding string
	Err     error
}

// ClassifyAll fills in, in place, the class of the bindings that lack one (Lacks): bindings[i] gets new replica
// requirements naming the class and shares the rest, which is never written, so the slice may hold an informer
// cache's objects by value (a List with UnsafeDisableDeepCopy). Templates already read cost nothing; the others are read with a GET each, or with a
// LIST of their kind in their namespace when many of one kind are missing. It returns the bindings it could not
// classify (Unclassifiable), and the first other error of a read, with which nothing is to be trusted.
func (r *Resolver) ClassifyAll(ctx context.Context, bindings []workv1alpha2.ResourceBinding) ([]Failure, error) {
	type kindIn struct {
		namespace string
		gk        schema.GroupKind
	}
	var failed []Failure
	missing := map[kindIn][]int{}
	for i := range bindings {
		rb := &bindings[i]
		if !Lacks(rb) {
			continue
		}
		ref := rb.Spec.Resource
		if class, ok := r.Cached(ref); ok {
			fillClass(rb, class)
			continue
		}
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		gk := gv.WithKind(ref.Kind).GroupKind()
		if _, known := templates[gk]; err != nil || !known {
			_, err := r.Class(ctx, ref)
			failed = append(failed, Failure{Binding: rb.Name, Err: err})
			continue
		}
		k := kindIn{namespace: ref.Namespace, gk: gk}
		missing[k] = append(missing[k], i)
	}
	for k, indexes := range missing {
		if len(indexes) < listThreshold {
			for _, i := range indexes {
				class, err := r.Class(ctx, bindings[i].Spec.Resource)
				if IsUnclassifiable(err) {
					failed = append(failed, Failure{Binding: bindings[i].Name, Err: err})
					continue
				}
				if err != nil {
					return nil, err
				}
				fillClass(&bindings[i], class)
			}
			continue
		}
		current, err := r.listClasses(ctx, k.namespace, k.gk)
		if err != nil {
			return nil, err
		}
		for _, i := range indexes {
			ref := bindings[i].Spec.Resource
			class, ok := current[ref.Name]
			if !ok {
				failed = append(failed, Failure{Binding: bindings[i].Name, Err: &Unclassifiable{Resource: ref, Why: "the template is gone"}})
				continue
			}
			fillClass(&bindings[i], class)
		}
	}
	slices.SortFunc(failed, func(a, b Failure) int { return strings.Compare(a.Binding, b.Binding) })
	return failed, nil
}

// listClasses reads every template of a kind in a namespace, page by page, remembers each version's class, and
// returns the classes by template name.
func (r *Resolver) listClasses(ctx context.Context, namespace string, gk schema.GroupKind) (map[string]string, error) {
	t := templates[gk]
	classes := map[string]string{}
	continueToken := ""
	for {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(schema.GroupVersionKind{Group: gk.Group, Version: t.version, Kind: gk.Kind + "List"})
		if err := r.reader.List(ctx, list, client.InNamespace(namespace), client.Limit(listPageSize), client.Continue(continueToken)); err != nil {
			return nil, fmt.Errorf("listing %s in %s for their priority classes: %w", gk.Kind, namespace, err)
		}
		for i := range list.Items {
			obj := &list.Items[i]
			key := version{namespace: namespace, group: gk.Group, kind: gk.Kind, name: obj.GetName()}
			classes[obj.GetName()] = r.remember(key, obj, t)
		}
		continueToken = list.GetContinue()
		if continueToken == "" {
			return classes, nil
		}
	}
}
