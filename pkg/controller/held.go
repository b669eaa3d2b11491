package controller

import (
	"context"
	"errors"
	"fmt"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/karmada-quota/karmada-quota/pkg/quota"
	"github.com/karmada-quota/karmada-quota/pkg/templates"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
)

// The templates the recount reads what bindings' objects hold on members from (claims, load balancers): a GET per
// new template version, or a paged LIST of a kind in a namespace when a recount misses many. StatefulSets are read
// for their priority class already.
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims;services,verbs=get;list

// listHeldThreshold is how many templates of one kind in one namespace a recount reads with a LIST instead of a
// GET each, as for priority classes: a recount after a restart takes a few paged LISTs.
const listHeldThreshold = 8

// holdingsOf reads what the templates of bindings hold on members, by binding name, for a quota that limits any of
// it; nil for any other quota, which reads nothing. A template that is gone holds nothing more: its binding follows
// it out. A template that cannot be read fails the recount: counting it as holding nothing would charge less than
// the members hold.
func (r *QuotaReconciler) holdingsOf(ctx context.Context, ledger *quota.Ledger, bindings []workv1alpha2.ResourceBinding) (map[string]usage.Held, error) {
	if r.holdings == nil || !ledger.LimitsHeld() {
		return nil, nil
	}
	held := map[string]usage.Held{}
	missing := map[schema.GroupKind][]int{}
	for i := range bindings {
		ref := bindings[i].Spec.Resource
		if !r.holdings.Knows(ref) {
			continue
		}
		if h, ok := r.holdings.Cached(ref); ok {
			held[bindings[i].Name] = h
			continue
		}
		gv, _ := schema.ParseGroupVersion(ref.APIVersion)
		gk := gv.WithKind(ref.Kind).GroupKind()
		missing[gk] = append(missing[gk], i)
	}
	for gk, indexes := range missing {
		if len(indexes) < listHeldThreshold {
			for _, i := range indexes {
				h, err := r.holdings.Current(ctx, bindings[i].Spec.Resource)
				if errors.Is(err, templates.ErrGone) {
					continue
				}
				if err != nil {
					return nil, err
				}
				held[bindings[i].Name] = h
			}
			continue
		}
		all, failed, err := r.holdings.All(ctx, bindings[indexes[0]].Namespace, gk)
		if err != nil {
			return nil, err
		}
		for _, i := range indexes {
			name := bindings[i].Spec.Resource.Name
			if err := failed[name]; err != nil {
				return nil, fmt.Errorf("reading what %s %s/%s holds on members: %w", gk.Kind, bindings[i].Namespace, name, err)
			}
			if h, ok := all[name]; ok {
				held[bindings[i].Name] = h
			}
		}
	}
	return held, nil
}
