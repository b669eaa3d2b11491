package controller

import (
	"context"
	"fmt"
	"slices"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/quota"
)

// What the controller reads of member clusters for the quotas' cluster and group limits: their names and labels.
// +kubebuilder:rbac:groups=cluster.karmada.io,resources=clusters,verbs=list;watch

// memberClusters are the member clusters joined now, with their labels, as one recount sees them.
type memberClusters struct {
	names  []string
	labels map[string]labels.Set
}

func (m memberClusters) has(name string) bool {
	_, ok := m.labels[name]
	return ok
}

// labelsOf reads the snapshot, for quota.Ledger.SetClusterLabels.
func (m memberClusters) labelsOf() quota.ClusterLabels {
	return func(name string) (labels.Set, bool) {
		set, ok := m.labels[name]
		return set, ok
	}
}

// memberClustersFor lists the member clusters from the cache, for a quota with cluster or group limits; the zero
// value for any other, which reads nothing.
func (r *QuotaReconciler) memberClustersFor(ctx context.Context, ledger *quota.Ledger) (memberClusters, error) {
	if !ledger.LimitsMembers() {
		return memberClusters{}, nil
	}
	var list clusterv1alpha1.ClusterList
	if err := r.client.List(ctx, &list); err != nil {
		return memberClusters{}, fmt.Errorf("listing member clusters: %w", err)
	}
	m := memberClusters{labels: make(map[string]labels.Set, len(list.Items))}
	for i := range list.Items {
		c := &list.Items[i]
		m.names = append(m.names, c.Name)
		m.labels[c.Name] = labels.Set(c.Labels)
	}
	slices.Sort(m.names)
	return m, nil
}

// quotasLimitingMembers maps a member cluster's change to every quota with cluster or group limits, in every
// namespace: few have them, and a cluster changes rarely.
func quotasLimitingMembers(c client.Client) handler.MapFunc {
	return func(ctx context.Context, _ client.Object) []reconcile.Request {
		var quotas quotav1alpha1.KarmadaQuotaList
		if err := c.List(ctx, &quotas); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Listing quotas for a member cluster event")
			return nil
		}
		var requests []reconcile.Request
		for i := range quotas.Items {
			if spec := &quotas.Items[i].Spec; len(spec.Clusters) > 0 || len(spec.ClusterGroups) > 0 {
				requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&quotas.Items[i])})
			}
		}
		var business quotav1alpha1.KarmadaBusinessQuotaList
		if err := c.List(ctx, &business); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Listing business quotas for a member cluster event")
			return requests
		}
		for i := range business.Items {
			if spec := &business.Items[i].Spec; len(spec.Clusters) > 0 || len(spec.ClusterGroups) > 0 {
				requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&business.Items[i])})
			}
		}
		return requests
	}
}

// joinedOrLeft passes a cluster's creation and deletion; its updates pass LabelChangedPredicate when its labels
// change. Its status, rewritten every few seconds, changes nothing a quota reads.
func joinedOrLeft() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return true },
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}
