package controller

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/apis/quota/validation"
	"github.com/karmada-quota/karmada-quota/pkg/quota"
)

// The namespaces business quotas select, by their labels.
// +kubebuilder:rbac:groups=quota.karmada.io,resources=karmadabusinessquotas,verbs=get;list;watch
// +kubebuilder:rbac:groups=quota.karmada.io,resources=karmadabusinessquotas/status,verbs=get;update
// +kubebuilder:rbac:groups=quota.karmada.io,resources=karmadabusinessquotaledgers,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// subject is the quota a reconcile recounts: a KarmadaQuota, or a KarmadaBusinessQuota read as one (quota), with
// the business quota itself (business, nil for a KarmadaQuota) for what only it has.
type subject struct {
	quota    *quotav1alpha1.KarmadaQuota
	business *quotav1alpha1.KarmadaBusinessQuota
}

// object is what events about the quota are recorded on.
func (s subject) object() client.Object {
	if s.business != nil {
		return s.business
	}
	return s.quota
}

// invalidSelector is a business quota whose namespace selector does not compile (validation refuses it; one stored
// before the webhook ran is reported, as any quota that slipped past validation).
type invalidSelector struct{ err error }

func (e invalidSelector) Error() string { return "the quota is invalid: " + e.err.Error() }

// governed returns the namespaces the quota counts, sorted: its own, or those a business quota's selector chooses
// now; it tells a business quota's ledger which they are (its reservations of the others settle: they are no
// longer charged here).
func (r *QuotaReconciler) governed(ctx context.Context, s subject, ledger *quota.Ledger) ([]string, error) {
	if s.business == nil {
		return []string{s.quota.Namespace}, nil
	}
	sel, fieldErr := validation.NamespaceSelector(&s.business.Spec)
	if fieldErr != nil {
		return nil, invalidSelector{err: fieldErr}
	}
	var all metav1.PartialObjectMetadataList
	all.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NamespaceList"))
	if err := r.client.List(ctx, &all, client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("listing the namespaces of business quota %s: %w", s.business.Name, err)
	}
	namespaces := make([]string, 0, len(all.Items))
	for i := range all.Items {
		namespaces = append(namespaces, all.Items[i].Name)
	}
	sort.Strings(namespaces)
	ledger.SetNamespaces(func(namespace string) bool {
		_, found := slices.BinarySearch(namespaces, namespace)
		return found
	})
	return namespaces, nil
}

// namespaceParts is what each namespace a business quota selects uses of it, every limited resource listed (zero
// where unused, as status.used lists them), in the order of namespaces: its status.namespaces, and what the
// metrics export per namespace. A namespace that left the business is not among them.
func namespaceParts(namespaces []string, ledger *quota.Ledger, tally quota.Tally) []quotav1alpha1.NamespaceUsage {
	parts := make([]quotav1alpha1.NamespaceUsage, len(namespaces))
	for i, namespace := range namespaces {
		parts[i] = quotav1alpha1.NamespaceUsage{Name: namespace, Used: ledger.RenderAll(tally.Namespaces[namespace])}
	}
	return parts
}

// everyBusinessQuota maps an event to every business quota: a namespace created, deleted or relabelled may join or
// leave any of them, and there are few.
func everyBusinessQuota(c client.Reader) handler.MapFunc {
	return func(ctx context.Context, _ client.Object) []reconcile.Request {
		var all quotav1alpha1.KarmadaBusinessQuotaList
		if err := c.List(ctx, &all, client.UnsafeDisableDeepCopy); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Listing business quotas for a namespace event")
			return nil
		}
		out := make([]reconcile.Request, len(all.Items))
		for i := range all.Items {
			out[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&all.Items[i])}
		}
		return out
	}
}

// namespaceMoved passes a namespace's creation, deletion and label changes: what business quotas select it by.
func namespaceMoved() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return true },
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
		UpdateFunc:  predicate.LabelChangedPredicate{}.Update,
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// appliedLabel marks an AppliedBusinessQuota with the name of its business quota, to find a quota's in every
// namespace.
const appliedLabel = "quota.karmada.io/business-quota"

// The teams' views of their business quotas (AppliedBusinessQuota), kept in each selected namespace.
// +kubebuilder:rbac:groups=quota.karmada.io,resources=appliedbusinessquotas,verbs=get;list;watch;create;update;delete

// DefaultViewInterval is quota-controller's --business-view-interval. A business quota's totals move at every
// admission in any of its namespaces; written at once, each move would rewrite its view in every namespace (measured
// at 27 view writes a second for one status write a second, over 64 namespaces). A team reading its view sees the
// counts at most this late; admission never reads them.
const DefaultViewInterval = 10 * time.Second

// applyViews keeps an AppliedBusinessQuota of b in each of namespaces, with the business's totals and that
// namespace's part, and removes those of namespaces b no longer selects. It writes only what differs from the
// cache's copy, so that a recount that changed nothing writes nothing. A view that only moves counts waits for the
// view interval, whose rest it returns (to come back then); one created, removed or of a new spec is written at
// once.
func (r *QuotaReconciler) applyViews(ctx context.Context, b *quotav1alpha1.KarmadaBusinessQuota, namespaces []string) (time.Duration, error) {
	var existing quotav1alpha1.AppliedBusinessQuotaList
	if err := r.client.List(ctx, &existing, client.MatchingLabels{appliedLabel: b.Name}); err != nil {
		return 0, fmt.Errorf("listing the views of business quota %s: %w", b.Name, err)
	}
	current := make(map[string]*quotav1alpha1.AppliedBusinessQuota, len(existing.Items))
	for i := range existing.Items {
		v := &existing.Items[i]
		if _, selected := slices.BinarySearch(namespaces, v.Namespace); !selected {
			// Its namespace left the business: nothing of the business stays visible there.
			if err := r.client.Delete(ctx, v); client.IgnoreNotFound(err) != nil {
				return 0, fmt.Errorf("removing the view of business quota %s from namespace %s: %w", b.Name, v.Namespace, err)
			}
			continue
		}
		current[v.Namespace] = v
	}
	used := map[string]corev1.ResourceList{}
	for _, n := range b.Status.Namespaces {
		used[n.Name] = n.Used
	}
	key := client.ObjectKeyFromObject(b)
	wait := r.views.waitCounts(key, true)
	wrote, held := false, false
	for _, namespace := range namespaces {
		want := viewOf(b, namespace, used[namespace])
		have, ok := current[namespace]
		var err error
		switch {
		case !ok:
			err = r.client.Create(ctx, want)
		case equality.Semantic.DeepEqual(have.Status, want.Status) && equality.Semantic.DeepEqual(have.Spec, want.Spec) &&
			have.Labels[appliedLabel] == b.Name && metav1.IsControlledBy(have, b):
			continue
		case wait > 0 && viewCountsOnly(have, want, b):
			held = true
			continue
		default:
			want.ResourceVersion = have.ResourceVersion
			err = r.client.Update(ctx, want)
		}
		if err != nil {
			return 0, fmt.Errorf("writing the view of business quota %s in namespace %s: %w", b.Name, namespace, err)
		}
		wrote = true
	}
	if wrote && !held {
		r.views.wrote(key)
	}
	if held {
		return wait, nil
	}
	return 0, nil
}

// viewCountsOnly reports whether want differs from have only in the counts (used, reserved and their summaries): the
// same spec, the same limits and generation, still b's.
func viewCountsOnly(have, want *quotav1alpha1.AppliedBusinessQuota, b *quotav1alpha1.KarmadaBusinessQuota) bool {
	return equality.Semantic.DeepEqual(have.Spec, want.Spec) && equality.Semantic.DeepEqual(have.Status.Hard, want.Status.Hard) &&
		have.Status.ObservedGeneration == want.Status.ObservedGeneration && have.Labels[appliedLabel] == b.Name &&
		metav1.IsControlledBy(have, b)
}

// viewOf is the AppliedBusinessQuota of b in namespace, which uses namespaceUsed of it (its part in b's status,
// every limited resource listed: namespaceParts).
func viewOf(b *quotav1alpha1.KarmadaBusinessQuota, namespace string, namespaceUsed corev1.ResourceList) *quotav1alpha1.AppliedBusinessQuota {
	return &quotav1alpha1.AppliedBusinessQuota{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace, Name: b.Name,
			Labels: map[string]string{appliedLabel: b.Name},
			// Removed with the business quota by the garbage collector.
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(b, quotav1alpha1.GroupVersion.WithKind("KarmadaBusinessQuota"))},
		},
		Spec: b.Spec.KarmadaQuotaSpec,
		Status: quotav1alpha1.AppliedBusinessQuotaStatus{
			Hard: b.Status.Hard, Used: b.Status.Used, Reserved: b.Status.Reserved, NamespaceUsed: namespaceUsed,
			Summary: b.Status.Summary, NamespaceSummary: summary(b.Spec.Hard, namespaceUsed),
			ObservedGeneration: b.Status.ObservedGeneration,
		},
	}
}
