package kubectlplugin

import (
	"context"
	"fmt"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/kubectlplugin/report"
)

var (
	quotasResource   = quotav1alpha1.GroupVersion.WithResource("karmadaquotas")
	ledgersResource  = quotav1alpha1.GroupVersion.WithResource("karmadaquotaledgers")
	bindingsResource = workv1alpha2.SchemeGroupVersion.WithResource("resourcebindings")
	// eventsResource is where Karmada's controllers record events: core/v1, through client-go's record package.
	eventsResource = corev1.SchemeGroupVersion.WithResource("events")

	// Business quotas: the cluster-scoped quota and ledger cluster admins read, and the view of it the controller
	// keeps in each namespace it selects, which teams read.
	businessQuotasResource  = quotav1alpha1.GroupVersion.WithResource("karmadabusinessquotas")
	businessLedgersResource = quotav1alpha1.GroupVersion.WithResource("karmadabusinessquotaledgers")
	appliedResource         = quotav1alpha1.GroupVersion.WithResource("appliedbusinessquotas")
)

// reader reads KarmadaQuotas, ResourceBindings and the events on a binding from the karmada-apiserver. It knows
// their resources, so it needs no discovery: one request per read, and a failure is that request's.
type reader struct {
	client dynamic.Interface
	server string
}

func newReader(cfg *rest.Config) (*reader, error) {
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &reader{client: client, server: cfg.Host}, nil
}

func (r *reader) quota(ctx context.Context, namespace, name string) (*quotav1alpha1.KarmadaQuota, error) {
	return getAs[quotav1alpha1.KarmadaQuota](ctx, r, kindOf{quotasResource, "KarmadaQuota", false}, namespace, name)
}

// quotas lists the quotas of a namespace, or of all namespaces when namespace is empty.
func (r *reader) quotas(ctx context.Context, namespace string) ([]quotav1alpha1.KarmadaQuota, error) {
	return listAs[quotav1alpha1.KarmadaQuota](ctx, r, kindOf{quotasResource, "KarmadaQuota", false}, namespace)
}

// ledgers lists the ledger objects of a namespace's quotas. Someone who may read quotas
// but not their ledgers (a role from an earlier release) gets nil and a warning to print: the quotas' status then
// shows what is reserved in sum.
func (r *reader) ledgers(ctx context.Context, namespace string) (report.Ledgers, string, error) {
	c := call{verb: "list", resource: groupResource(ledgersResource), kind: "KarmadaQuotaLedger", namespace: namespace}
	list, err := r.client.Resource(ledgersResource).Namespace(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		if apierrors.IsForbidden(err) || apierrors.IsNotFound(err) {
			return nil, fmt.Sprintf("you may not list KarmadaQuotaLedgers in namespace %q: what is reserved is shown in sum, "+
				"as the quotas' status last counted it, not reservation by reservation.\nThe stock view role grants reading "+
				"them: ask an admin for a RoleBinding to the ClusterRole view in namespace %q", namespace, namespace), nil
		}
		return nil, "", &apiError{call: c, server: r.server, err: err}
	}
	items, err := decodeAll[quotav1alpha1.KarmadaQuotaLedger](list)
	if err != nil {
		return nil, "", err
	}
	out := make(report.Ledgers, len(items))
	for i := range items {
		out[types.NamespacedName{Namespace: items[i].Namespace, Name: items[i].Name}] = &items[i]
	}
	return out, "", nil
}

func (r *reader) bindings(ctx context.Context, namespace string) ([]workv1alpha2.ResourceBinding, error) {
	return listAs[workv1alpha2.ResourceBinding](ctx, r, kindOf{bindingsResource, "ResourceBinding", false}, namespace)
}

// bindingEvents lists the events recorded on a binding, selected by the apiserver on the involved object (kind,
// name and, when known, UID: a binding deleted and made again under the same name has its own events).
func (r *reader) bindingEvents(ctx context.Context, rb *workv1alpha2.ResourceBinding) ([]corev1.Event, error) {
	c := call{verb: "list", resource: groupResource(eventsResource), kind: "Event", namespace: rb.Namespace}
	selector := fields.Set{"involvedObject.kind": "ResourceBinding", "involvedObject.name": rb.Name}
	if rb.UID != "" {
		selector["involvedObject.uid"] = string(rb.UID)
	}
	list, err := r.client.Resource(eventsResource).Namespace(rb.Namespace).List(ctx, metav1.ListOptions{FieldSelector: selector.AsSelector().String()})
	if err != nil {
		return nil, &apiError{call: c, server: r.server, err: err}
	}
	return decodeAll[corev1.Event](list)
}

func decodeAll[T any](list *unstructured.UnstructuredList) ([]T, error) {
	out := make([]T, len(list.Items))
	for i := range list.Items {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, &out[i]); err != nil {
			return nil, fmt.Errorf("decoding %s %s/%s: %w", list.Items[i].GetKind(), list.Items[i].GetNamespace(), list.Items[i].GetName(), err)
		}
	}
	return out, nil
}

func groupResource(gvr schema.GroupVersionResource) string {
	return gvr.GroupResource().String()
}

// appliedQuota gets the AppliedBusinessQuota of a namespace named name: the business quota of that name, as the
// namespace sees it.
func (r *reader) appliedQuota(ctx context.Context, namespace, name string) (*quotav1alpha1.AppliedBusinessQuota, error) {
	return getAs[quotav1alpha1.AppliedBusinessQuota](ctx, r, kindOf{appliedResource, "AppliedBusinessQuota", false}, namespace, name)
}

// appliedQuotas lists the AppliedBusinessQuotas of a namespace, or of all namespaces when namespace is empty: the
// business quotas that apply there.
func (r *reader) appliedQuotas(ctx context.Context, namespace string) ([]quotav1alpha1.AppliedBusinessQuota, error) {
	return listAs[quotav1alpha1.AppliedBusinessQuota](ctx, r, kindOf{appliedResource, "AppliedBusinessQuota", false}, namespace)
}

func (r *reader) businessQuota(ctx context.Context, name string) (*quotav1alpha1.KarmadaBusinessQuota, error) {
	return getAs[quotav1alpha1.KarmadaBusinessQuota](ctx, r, kindOf{businessQuotasResource, kindBusinessQuota, true}, "", name)
}

func (r *reader) businessQuotas(ctx context.Context) ([]quotav1alpha1.KarmadaBusinessQuota, error) {
	return listAs[quotav1alpha1.KarmadaBusinessQuota](ctx, r, kindOf{businessQuotasResource, kindBusinessQuota, true}, "")
}

// kindOf is a resource the reader reads, as its errors name it.
type kindOf struct {
	gvr           schema.GroupVersionResource
	kind          string
	clusterScoped bool
}

// getAs gets the object of k at namespace and name ("" for a cluster-scoped one), decoded as T.
func getAs[T any](ctx context.Context, r *reader, k kindOf, namespace, name string) (*T, error) {
	c := call{verb: "get", resource: groupResource(k.gvr), kind: k.kind, namespace: namespace, name: name, clusterScoped: k.clusterScoped}
	u, err := r.client.Resource(k.gvr).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, &apiError{call: c, server: r.server, err: err}
	}
	var out T
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &out); err != nil {
		if namespace != "" {
			name = namespace + "/" + name
		}
		return nil, fmt.Errorf("decoding %s %s: %w", k.kind, name, err)
	}
	return &out, nil
}

// listAs lists the objects of k in namespace, or in all namespaces (and of a cluster-scoped resource) when it is
// empty, decoded as T.
func listAs[T any](ctx context.Context, r *reader, k kindOf, namespace string) ([]T, error) {
	c := call{verb: "list", resource: groupResource(k.gvr), kind: k.kind, namespace: namespace, clusterScoped: k.clusterScoped}
	list, err := r.client.Resource(k.gvr).Namespace(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, &apiError{call: c, server: r.server, err: err}
	}
	return decodeAll[T](list)
}

// businessLedger gets the ledger of business quota name, read as a quota's ledger; nil when it has none yet (no
// admission reserved anything on it). Someone who may read the business quota but not its ledger gets nil and a
// warning to print: the quota's status then shows what is reserved in sum.
func (r *reader) businessLedger(ctx context.Context, name string) (*quotav1alpha1.KarmadaQuotaLedger, string, error) {
	c := call{verb: "get", resource: groupResource(businessLedgersResource), kind: kindBusinessQuotaLedger, name: name, clusterScoped: true}
	u, err := r.client.Resource(businessLedgersResource).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsForbidden(err):
		return nil, fmt.Sprintf("you may not get %s %q: what is reserved is shown in sum, as the business quota's "+
			"status last counted it, not reservation by reservation", groupResource(businessLedgersResource), name), nil
	case apierrors.IsNotFound(err) && !apiNotServed(asStatus(err)):
		return nil, "", nil
	case err != nil:
		return nil, "", &apiError{call: c, server: r.server, err: err}
	}
	var l quotav1alpha1.KarmadaBusinessQuotaLedger
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &l); err != nil {
		return nil, "", fmt.Errorf("decoding KarmadaBusinessQuotaLedger %s: %w", name, err)
	}
	return l.AsKarmadaQuotaLedger(), "", nil
}
