// Package priorityclass finds the priority class of a ResourceBinding's replicas when the binding does not carry
// it, so that a quota scoped by PriorityClass counts them on every Karmada.
//
// Karmada v1.18 copies a pod template's priorityClassName into spec.replicaRequirements.priorityClassName only
// when karmada-controller-manager runs with the alpha feature gate ResourceQuotaEstimate, off by default
// (GenerateReplicaRequirements in Karmada's pkg/util/helper/binding.go). Without it every binding looks
// class-less, and a quota scoped `PriorityClass In [high]` would count nothing and admit past hard. The class is
// then read from the resource template the binding binds, for the kinds whose pod template is known.
//
// Templates are read through pkg/templates: once per template version.
//
// usage.Of stays a pure function of a binding: callers resolve first, then hand usage.Of a copy of the binding
// with the class filled in (WithClass).
package priorityclass

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/pkg/templates"
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
var podTemplates = map[schema.GroupKind]template{
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
	names := make([]string, 0, len(podTemplates))
	for gk := range podTemplates {
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

// Resolver reads the priority class of bindings' templates from the karmada-apiserver, remembering the class of
// each template version it read.
type Resolver struct {
	templates *templates.Reader[string]
}

// NewResolver returns a Resolver reading templates through reader, which should read the apiserver rather than
// an informer's cache, and remembering size template versions.
func NewResolver(reader client.Reader, size int) *Resolver {
	kinds := make(map[schema.GroupKind]string, len(podTemplates))
	for gk, t := range podTemplates {
		kinds[gk] = t.version
	}
	return &Resolver{templates: templates.NewReader(reader, size, kinds, "priority class", readClass)}
}

// readClass is the class obj's pod template names ("" for none).
func readClass(obj *unstructured.Unstructured) (string, error) {
	class, _, _ := unstructured.NestedString(obj.Object, podTemplates[obj.GroupVersionKind().GroupKind()].path...)
	return class, nil
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
// class (templates.SameTemplate).
func SameTemplate(a, b *workv1alpha2.ResourceBinding) bool {
	return templates.SameTemplate(a, b)
}

// Cached returns the class of the template version ref names if this Resolver read it before.
func (r *Resolver) Cached(ref workv1alpha2.ObjectReference) (string, bool) {
	return r.templates.Cached(ref)
}

// Class returns the priority class the pod template of ref names ("" for none). It reads the template unless
// that version was read before. When the template has changed since the binding was made from it, the class of
// the current version is returned: the detector is about to rewrite the binding from it. It returns an
// Unclassifiable for a kind whose pod template is unknown or a template that is gone, and the read's error
// otherwise.
func (r *Resolver) Class(ctx context.Context, ref workv1alpha2.ObjectReference) (string, error) {
	if _, err := schema.ParseGroupVersion(ref.APIVersion); err != nil {
		return "", &Unclassifiable{Resource: ref, Why: fmt.Sprintf("apiVersion %q does not parse", ref.APIVersion)}
	}
	if !r.templates.Knows(ref) {
		return "", &Unclassifiable{Resource: ref, Why: fmt.Sprintf("karmada-quota reads the class only from the pod "+
			"templates of %s, and Karmada copies it into the binding only with its feature gate ResourceQuotaEstimate", Kinds())}
	}
	class, err := r.templates.Current(ctx, ref)
	if errors.Is(err, templates.ErrGone) {
		return "", &Unclassifiable{Resource: ref, Why: err.Error()}
	}
	return class, err
}

// Previous returns the class of the template version old names, given that the template has since been replaced
// by the version current names (templates.Reader.Previous).
func (r *Resolver) Previous(ctx context.Context, old, current workv1alpha2.ObjectReference) (string, bool) {
	return r.templates.Previous(ctx, old, current)
}

// Failure is a binding ClassifyAll could not classify, and why.
type Failure struct {
	Namespace, Binding string
	Err                error
}

// ClassifyAll fills in, in place, the class of the bindings that lack one (Lacks): bindings[i] gets new replica
// requirements naming the class and shares the rest, which is never written, so the slice may hold an informer
// cache's objects by value (a List with UnsafeDisableDeepCopy). Templates already read cost nothing; the others are read with a GET each, or with a
// LIST of their kind in their namespace when many of one kind are missing. It returns the bindings it could not
// classify (Unclassifiable), and the first other error of a read, with which nothing is to be trusted.
func (r *Resolver) ClassifyAll(ctx context.Context, bindings []workv1alpha2.ResourceBinding) ([]Failure, error) {
	var failed []Failure
	var refs []workv1alpha2.ObjectReference
	var of []int // of[k] is the index in bindings of refs[k]
	for i := range bindings {
		rb := &bindings[i]
		if !Lacks(rb) {
			continue
		}
		if !r.templates.Knows(rb.Spec.Resource) {
			_, err := r.Class(ctx, rb.Spec.Resource)
			failed = append(failed, Failure{Namespace: rb.Namespace, Binding: rb.Name, Err: err})
			continue
		}
		refs = append(refs, rb.Spec.Resource)
		of = append(of, i)
	}
	err := r.templates.Each(ctx, refs,
		func(k int, class string) { fillClass(&bindings[of[k]], class) },
		func(k int) {
			failed = append(failed, Failure{Namespace: bindings[of[k]].Namespace, Binding: bindings[of[k]].Name, Err: &Unclassifiable{Resource: refs[k], Why: templates.ErrGone.Error()}})
		})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(failed, func(a, b Failure) int { return strings.Compare(a.Binding, b.Binding) })
	return failed, nil
}
