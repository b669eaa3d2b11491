package controller

import (
	"context"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/metrics"
)

// storedQuotasListTimeout bounds the read of the cache at one scrape.
const storedQuotasListTimeout = 5 * time.Second

// storedQuotas hands the metrics the quotas as this replica's informer cache holds them, at scrape time. Every
// replica runs that informer, leading or not.
type storedQuotas struct {
	reader client.Reader
	// informers are those of KarmadaQuotas and KarmadaBusinessQuotas.
	informers []interface{ HasSynced() bool }
}

// StoredQuotas implements metrics.StoredQuotaSource.
func (s storedQuotas) StoredQuotas() []metrics.StoredQuota {
	// A List before the cache has synced would hold the scrape until it has; nothing is known yet, so nothing is
	// exported.
	for _, informer := range s.informers {
		if !informer.HasSynced() {
			return nil
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), storedQuotasListTimeout)
	defer cancel()
	var quotas quotav1alpha1.KarmadaQuotaList
	// Read-only, as the recount's list of bindings.
	if err := s.reader.List(ctx, &quotas, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	var business quotav1alpha1.KarmadaBusinessQuotaList
	if err := s.reader.List(ctx, &business, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	out := make([]metrics.StoredQuota, 0, len(quotas.Items)+len(business.Items))
	for i := range quotas.Items {
		out = append(out, stored(&quotas.Items[i].ObjectMeta, &quotas.Items[i].Status))
	}
	for i := range business.Items {
		// Exported without a namespace, as its other series are.
		out = append(out, stored(&business.Items[i].ObjectMeta, &business.Items[i].Status.KarmadaQuotaStatus))
	}
	return out
}

func stored(meta *metav1.ObjectMeta, status *quotav1alpha1.KarmadaQuotaStatus) metrics.StoredQuota {
	return metrics.StoredQuota{
		Namespace: meta.Namespace, Name: meta.Name,
		Generation: meta.Generation, ObservedGeneration: status.ObservedGeneration,
		Ready: apimeta.IsStatusConditionTrue(status.Conditions, quotav1alpha1.ConditionReady),
	}
}
