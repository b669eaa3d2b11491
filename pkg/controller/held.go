package controller

import (
	"context"
	"fmt"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"k8s.io/apimachinery/pkg/types"

	"github.com/karmada-quota/karmada-quota/pkg/quota"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
)

// The templates the recount reads what bindings' objects hold on members from (claims, load balancers): a GET per
// new template version, or a paged LIST of a kind in a namespace when a recount misses many. StatefulSets are read
// for their priority class already.
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims;services,verbs=get;list

// holdingsOf reads what the templates of bindings hold on members, by binding name, for a quota that limits any of
// it; nil for any other quota, which reads nothing. Templates are read as the priority classes are
// (templates.Reader.Each): remembered per version, or a GET each, or a paged LIST of a kind in a namespace. A
// template that is gone holds nothing more: its binding follows it out. A template that cannot be read fails the
// recount: counting it as holding nothing would charge less than the members hold.
func (r *QuotaReconciler) holdingsOf(ctx context.Context, ledger *quota.Ledger, bindings []workv1alpha2.ResourceBinding) (map[types.NamespacedName]usage.Held, error) {
	if r.holdings == nil || !ledger.LimitsHeld() {
		return nil, nil
	}
	var refs []workv1alpha2.ObjectReference
	var names []types.NamespacedName
	for i := range bindings {
		if r.holdings.Knows(bindings[i].Spec.Resource) {
			refs = append(refs, bindings[i].Spec.Resource)
			names = append(names, types.NamespacedName{Namespace: bindings[i].Namespace, Name: bindings[i].Name})
		}
	}
	held := make(map[types.NamespacedName]usage.Held, len(refs))
	err := r.holdings.Each(ctx, refs, func(k int, h usage.Held) { held[names[k]] = h }, func(int) {})
	if err != nil {
		return nil, fmt.Errorf("reading what the namespace's objects hold on members: %w", err)
	}
	return held, nil
}
