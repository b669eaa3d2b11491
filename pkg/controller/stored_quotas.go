package controller

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/metrics"
)

// storedQuotasListTimeout bounds the read of the cache at one scrape.
const storedQuotasListTimeout = 5 * time.Second

// storedQuotas hands the metrics the quotas as this replica's informer cache holds them, at scrape time. Every
// replica runs that informer, leading or not.
type storedQuotas struct {
	reader   client.Reader
	informer interface{ HasSynced() bool }
}

// StoredQuotas implements metrics.StoredQuotaSource.
func (s storedQuotas) StoredQuotas() []metrics.StoredQuota {
	// A List before the cache has synced would hold the scrape until it has; nothing is known yet, so nothing is
	// exported.
	if !s.informer.HasSynced() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), storedQuotasListTimeout)
	defer cancel()
	var quotas quotav1alpha1.KarmadaQuotaList
	// Read-only, as the recount's list of bindings.
	if err := s.reader.List(ctx, &quotas, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	out := make([]metrics.StoredQuota, len(quotas.Items))
	for i := range quotas.Items {
		q := &quotas.Items[i]
		out[i] = metrics.StoredQuota{
			Namespace: q.Namespace, Name: q.Name,
			Generation: q.Generation, ObservedGeneration: q.Status.ObservedGeneration,
			Ready: meta.IsStatusConditionTrue(q.Status.Conditions, quotav1alpha1.ConditionReady),
		}
	}
	return out
}
