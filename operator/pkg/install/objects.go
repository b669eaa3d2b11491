package install

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FieldOwner is the server-side-apply manager of everything karmada-quota's installation writes, whether the
// chart's jobs or the operator write it, so that one can take over from the other.
const FieldOwner = "karmada-quota-installer"

// ParseObjects reads a multi-document YAML manifest.
func ParseObjects(manifest []byte) ([]*unstructured.Unstructured, error) {
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifest), 4096)
	var objects []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		if err := decoder.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objects, nil
			}
			return nil, fmt.Errorf("reading manifest document %d: %w", len(objects)+1, err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		if obj.GetAPIVersion() == "" || obj.GetKind() == "" || obj.GetName() == "" {
			return nil, fmt.Errorf("manifest document %d lacks apiVersion, kind or name", len(objects)+1)
		}
		objects = append(objects, obj)
	}
}

// applyOrder ranks kinds so that nothing is applied before what it refers to: namespaces and the CRD first,
// then identities, then the roles they are bound to, then the bindings, then the policy propagating the roles
// the controller needs in the members; then the admission policy that keeps a quota's status to those identities
// (it matches the CRD's resource), and its binding.
var applyOrder = []string{
	"Namespace", "CustomResourceDefinition", "ServiceAccount", "ClusterRole", "Role", "ClusterRoleBinding", "RoleBinding",
	"ClusterPropagationPolicy", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
}

func rank(obj *unstructured.Unstructured) int {
	if i := slices.Index(applyOrder, obj.GetKind()); i >= 0 {
		return i
	}
	return len(applyOrder)
}

// Sorted returns the objects in apply order, keeping the manifest's order within a kind.
func Sorted(objects []*unstructured.Unstructured) []*unstructured.Unstructured {
	out := slices.Clone(objects)
	slices.SortStableFunc(out, func(a, b *unstructured.Unstructured) int { return rank(a) - rank(b) })
	return out
}

func isCRD(obj *unstructured.Unstructured) bool {
	return obj.GetKind() == "CustomResourceDefinition"
}

// Change is what an apply did to an object that was there before it: nothing, or a change (someone else's edit
// undone, or the installation's own spec moved on).
type Change int

const (
	Unchanged Change = iota
	Created
	Updated
)

// apply server-side applies obj with the installation's labels, taking over fields another manager set: the
// installation is the owner of what it installs. It reports whether the object was created or changed, which
// the operator counts as repaired drift when the spec did not move.
func apply(ctx context.Context, c client.Client, obj *unstructured.Unstructured, labels map[string]string) (Change, error) {
	obj = obj.DeepCopy()
	merged := obj.GetLabels()
	if merged == nil {
		merged = map[string]string{}
	}
	for k, v := range labels {
		if _, set := merged[k]; !set {
			merged[k] = v
		}
	}
	obj.SetLabels(merged)
	before := &unstructured.Unstructured{}
	before.SetGroupVersionKind(obj.GroupVersionKind())
	existed := true
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), before); err != nil {
		if !apierrors.IsNotFound(err) {
			return Unchanged, fmt.Errorf("reading %s %s: %w", obj.GetKind(), describe(obj), err)
		}
		existed = false
	}
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return Unchanged, fmt.Errorf("applying %s %s: %w", obj.GetKind(), describe(obj), err)
	}
	switch {
	case !existed:
		return Created, nil
	case obj.GetResourceVersion() != before.GetResourceVersion() && !sameContent(before, obj):
		return Updated, nil
	}
	return Unchanged, nil
}

// sameContent compares two versions of an object without what every write changes (resourceVersion, managed
// fields): an apply that only took over fields another manager had set to the same values changed nothing.
func sameContent(a, b *unstructured.Unstructured) bool {
	strip := func(u *unstructured.Unstructured) map[string]any {
		c := u.DeepCopy().Object
		for _, f := range []string{"resourceVersion", "managedFields", "generation"} {
			unstructured.RemoveNestedField(c, "metadata", f)
		}
		delete(c, "status")
		return c
	}
	return equality.Semantic.DeepEqual(strip(a), strip(b))
}

// Apply is apply for the operator's own host objects, with its field owner.
func Apply(ctx context.Context, c client.Client, obj *unstructured.Unstructured) (Change, error) {
	return apply(ctx, c, obj, nil)
}

// deleteObject deletes obj and reports whether it existed. A CRD is deleted once the apiserver serves its objects
// (WaitObjectsServed), or after crdCacheWait: deleted before, seconds after it was created, it stays Terminating for
// minutes, the apiserver's CRD finalizer unable to list its objects ("storage is (re)initializing") and backing off
// further at each attempt (measured in test/integration/install; operator-framework saw the same,
// operator-controller#1437).
func deleteObject(ctx context.Context, c client.Client, obj *unstructured.Unstructured) error {
	if isCRD(obj) {
		if objects, ok := crdListKind(obj); ok {
			// Served, or not ours to list, or not in time: delete either way.
			_ = WaitObjectsServed(ctx, c, objects, crdCacheWait)
		}
	}
	if err := c.Delete(ctx, obj.DeepCopy()); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %s %s: %w", obj.GetKind(), describe(obj), err)
	}
	return nil
}

// crdCacheWait bounds how long deleteObject waits for the apiserver to serve a CRD's objects.
const crdCacheWait = time.Minute

// WaitObjectsServed waits until the apiserver serves a list of the objects of kind list (a CRD's list kind) from its
// cache (resourceVersion 0), which it does once the cache of a new CRD's objects has initialized, or until timeout.
// It gives up at once, with the error, when waiting cannot help: the kind is not served, or not the client's to
// list.
func WaitObjectsServed(ctx context.Context, c client.Reader, list schema.GroupVersionKind, timeout time.Duration) error {
	objects := &unstructured.UnstructuredList{}
	objects.SetGroupVersionKind(list)
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		last = c.List(ctx, objects, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: "0", Limit: 1}})
		if apierrors.IsForbidden(last) || meta.IsNoMatchError(last) {
			return false, last
		}
		return last == nil, nil
	})
	if err != nil && last != nil {
		return fmt.Errorf("listing %s from the apiserver's cache: %w", list.Kind, last)
	}
	return err
}

// crdListKind is the list kind of a CRD's objects, in its first version.
func crdListKind(crd *unstructured.Unstructured) (schema.GroupVersionKind, bool) {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	listKind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "listKind")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	var version string
	if len(versions) > 0 {
		if v, ok := versions[0].(map[string]any); ok {
			version, _ = v["name"].(string)
		}
	}
	return schema.GroupVersionKind{Group: group, Version: version, Kind: listKind}, group != "" && version != "" && listKind != ""
}

func describe(obj client.Object) string {
	if obj.GetNamespace() == "" {
		return obj.GetName()
	}
	return obj.GetNamespace() + "/" + obj.GetName()
}

// waitEstablished waits until the CRD is established, so that the components' informers find its API.
func waitEstablished(ctx context.Context, c client.Client, name string) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := c.Get(ctx, client.ObjectKey{Name: name}, &crd); err != nil {
			if runtime.IsNotRegisteredError(err) {
				// A client that cannot read CRDs at all: waiting would only hide it behind a timeout.
				return false, err
			}
			last = err.Error()
			return false, nil
		}
		for _, cond := range crd.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
			if cond.Type == apiextensionsv1.NamesAccepted && cond.Status == apiextensionsv1.ConditionFalse {
				return false, fmt.Errorf("the names of CRD %s were not accepted: %s", name, cond.Message)
			}
		}
		last = "not established yet"
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for CRD %s to be established (last: %s): %w", name, last, err)
	}
	return nil
}

// prunedKinds are the kinds of karmada-apiserver objects an installation renders that Prepare removes once no
// longer rendered. Not the CRD: removing it removes every quota, which only Cleanup does, and only when told.
var prunedKinds = []schema.GroupVersionKind{
	{Version: "v1", Kind: "ServiceAccount"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"},
	// The member reader's propagation: renamed once (karmada-quota-member-pods), and an upgrade must remove the old.
	{Group: "policy.karmada.io", Version: "v1alpha1", Kind: "ClusterPropagationPolicy"},
	// Rendered only with least-privilege identities: turning them off must not leave the components, now running
	// as the admin, unable to write status.
	{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingAdmissionPolicy"},
	{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingAdmissionPolicyBinding"},
}

// installationLabels are the labels that tell this installation's objects from any other's; not the version,
// which an upgrade changes.
var installationLabels = []string{"app.kubernetes.io/instance", "app.kubernetes.io/part-of", "app.kubernetes.io/managed-by"}

// prune deletes the objects of prunedKinds that carry this installation's labels and are not among its objects.
func (i *Installer) prune(ctx context.Context) error {
	selector := client.MatchingLabels{}
	for _, key := range installationLabels {
		value, ok := i.Config.Labels[key]
		if !ok {
			// Without every label, objects of other installations could match: prune nothing.
			return nil
		}
		selector[key] = value
	}
	wanted := map[string]bool{}
	key := func(gk schema.GroupKind, namespace, name string) string {
		return gk.String() + "/" + namespace + "/" + name
	}
	for _, obj := range i.Objects {
		wanted[key(obj.GroupVersionKind().GroupKind(), obj.GetNamespace(), obj.GetName())] = true
	}
	var errs []error
	for _, gvk := range prunedKinds {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := i.Karmada.List(ctx, list, selector); err != nil {
			if meta.IsNoMatchError(err) {
				// A kind this karmada-apiserver does not serve holds nothing of ours to prune.
				continue
			}
			errs = append(errs, fmt.Errorf("listing %s to prune: %w", gvk.Kind, err))
			continue
		}
		for j := range list.Items {
			obj := &list.Items[j]
			if wanted[key(gvk.GroupKind(), obj.GetNamespace(), obj.GetName())] {
				continue
			}
			i.Log.Info("Removing what the configuration no longer renders", "kind", gvk.Kind, "object", describe(obj))
			errs = append(errs, deleteObject(ctx, i.Karmada, obj))
		}
	}
	return errors.Join(errs...)
}
