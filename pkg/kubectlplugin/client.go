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
	c := call{verb: "get", resource: groupResource(quotasResource), kind: "KarmadaQuota", namespace: namespace, name: name}
	u, err := r.client.Resource(quotasResource).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, &apiError{call: c, server: r.server, err: err}
	}
	var q quotav1alpha1.KarmadaQuota
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &q); err != nil {
		return nil, fmt.Errorf("decoding KarmadaQuota %s/%s: %w", namespace, name, err)
	}
	return &q, nil
}

// quotas lists the quotas of a namespace, or of all namespaces when namespace is empty.
func (r *reader) quotas(ctx context.Context, namespace string) ([]quotav1alpha1.KarmadaQuota, error) {
	c := call{verb: "list", resource: groupResource(quotasResource), kind: "KarmadaQuota", namespace: namespace}
	list, err := r.client.Resource(quotasResource).Namespace(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, &apiError{call: c, server: r.server, err: err}
	}
	return decodeAll[quotav1alpha1.KarmadaQuota](list)
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
	c := call{verb: "list", resource: groupResource(bindingsResource), kind: "ResourceBinding", namespace: namespace}
	list, err := r.client.Resource(bindingsResource).Namespace(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, &apiError{call: c, server: r.server, err: err}
	}
	return decodeAll[workv1alpha2.ResourceBinding](list)
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
	c := call{verb: "get", resource: groupResource(appliedResource), kind: "AppliedBusinessQuota", namespace: namespace, name: name}
	u, err := r.client.Resource(appliedResource).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, &apiError{call: c, server: r.server, err: err}
	}
	var a quotav1alpha1.AppliedBusinessQuota
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &a); err != nil {
		return nil, fmt.Errorf("decoding AppliedBusinessQuota %s/%s: %w", namespace, name, err)
	}
	return &a, nil
}

// appliedQuotas lists the AppliedBusinessQuotas of a namespace, or of all namespaces when namespace is empty: the
// business quotas that apply there.
func (r *reader) appliedQuotas(ctx context.Context, namespace string) ([]quotav1alpha1.AppliedBusinessQuota, error) {
	c := call{verb: "list", resource: groupResource(appliedResource), kind: "AppliedBusinessQuota", namespace: namespace}
	list, err := r.client.Resource(appliedResource).Namespace(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, &apiError{call: c, server: r.server, err: err}
	}
	return decodeAll[quotav1alpha1.AppliedBusinessQuota](list)
}

func (r *reader) businessQuota(ctx context.Context, name string) (*quotav1alpha1.KarmadaBusinessQuota, error) {
	c := call{verb: "get", resource: groupResource(businessQuotasResource), kind: kindBusinessQuota, name: name, clusterScoped: true}
	u, err := r.client.Resource(businessQuotasResource).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, &apiError{call: c, server: r.server, err: err}
	}
	var q quotav1alpha1.KarmadaBusinessQuota
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &q); err != nil {
		return nil, fmt.Errorf("decoding KarmadaBusinessQuota %s: %w", name, err)
	}
	return &q, nil
}

func (r *reader) businessQuotas(ctx context.Context) ([]quotav1alpha1.KarmadaBusinessQuota, error) {
	c := call{verb: "list", resource: groupResource(businessQuotasResource), kind: kindBusinessQuota, clusterScoped: true}
	list, err := r.client.Resource(businessQuotasResource).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, &apiError{call: c, server: r.server, err: err}
	}
	return decodeAll[quotav1alpha1.KarmadaBusinessQuota](list)
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
