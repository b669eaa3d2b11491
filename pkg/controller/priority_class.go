package controller

import (
	"context"
	"fmt"
	"strings"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"k8s.io/apimachinery/pkg/types"

	"github.com/karmada-quota/karmada-quota/pkg/priorityclass"
	"github.com/karmada-quota/karmada-quota/pkg/quota"
)

// The templates the recount reads the priority class from when bindings lack it (priorityclass.Resolver): a GET
// per new template version, or a paged LIST of a kind in a namespace when a recount misses many.
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets;replicasets;daemonsets,verbs=get;list
// +kubebuilder:rbac:groups=batch,resources=jobs;cronjobs,verbs=get;list
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list

// ReasonPriorityClassesKnown is the reason of the PriorityClassesKnown condition when True; when False, it is
// quotav1alpha1.ReasonPriorityClassUnknown.
const ReasonPriorityClassesKnown = "AllKnown"

// unclassifiedNamesInMessages is how many unclassified bindings a message names.
const unclassifiedNamesInMessages = 5

// classify fills in, for a quota scoped by PriorityClass, the class of the namespace's bindings that lack it (see
// priorityclass.ClassifyAll; bindings may hold the cache's objects by value). It returns the bindings whose class
// could not be read: the recount counts them in no scoped quota, and says so. An unscoped quota counts every
// binding whatever its class, and reads nothing.
func (r *QuotaReconciler) classify(ctx context.Context, ledger *quota.Ledger, bindings []workv1alpha2.ResourceBinding) ([]priorityclass.Failure, error) {
	if r.classes == nil || !ledger.Selector.Scoped() {
		return nil, nil
	}
	failed, err := r.classes.ClassifyAll(ctx, bindings)
	if err != nil {
		return nil, fmt.Errorf("reading the priority classes of the namespace's workloads: %w", err)
	}
	return failed, nil
}

func unclassifiedNames(failed []priorityclass.Failure) map[types.NamespacedName]bool {
	names := make(map[types.NamespacedName]bool, len(failed))
	for _, f := range failed {
		names[types.NamespacedName{Namespace: f.Namespace, Name: f.Binding}] = true
	}
	return names
}

// unclassifiedMessage says how many bindings could not be classified, names the first ones and why, and what to do.
func unclassifiedMessage(failed []priorityclass.Failure) string {
	shown := failed[:min(len(failed), unclassifiedNamesInMessages)]
	parts := make([]string, len(shown))
	for i, f := range shown {
		parts[i] = fmt.Sprintf("%s (%v)", f.Binding, f.Err)
	}
	more := ""
	if len(failed) > len(shown) {
		more = fmt.Sprintf(", and %d more", len(failed)-len(shown))
	}
	return fmt.Sprintf("%d binding(s) have replicas whose priority class could not be read; this quota does not count them, "+
		"and refuses their growth: %s%s. Run karmada-controller-manager with --feature-gates=ResourceQuotaEstimate=true so "+
		"that Karmada copies the class into each binding", len(failed), strings.Join(parts, "; "), more)
}

// recordUnclassified remembers, for the metrics, how many bindings the last recount of a quota could not classify.
func (s *state) recordUnclassified(key types.NamespacedName, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if qs, ok := s.quotas[key]; ok {
		qs.snapshot.Unclassified = n
	}
}
