package framework

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/quota"
)

// Ledger reads the ledger object of quota namespace/name (KarmadaQuotaLedger: what admission decides on); an
// empty one when the quota has none yet.
func Ledger(ctx context.Context, c client.Reader, namespace, name string) (*quotav1alpha1.KarmadaQuotaLedger, error) {
	var stored quotav1alpha1.KarmadaQuotaLedger
	if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &stored); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return &quotav1alpha1.KarmadaQuotaLedger{}, nil
		}
		return nil, err
	}
	return &stored, nil
}

// Reserved is what q holds reserved, read from its ledger as admission reads it (listed and folded reservations,
// and any an earlier release listed in status), every resource q limits listed: the sum the controller shows in
// status.reserved once it has recounted.
func Reserved(ctx context.Context, c client.Reader, q *quotav1alpha1.KarmadaQuota) (corev1.ResourceList, error) {
	stored, err := Ledger(ctx, c, q.Namespace, q.Name)
	if err != nil {
		return nil, err
	}
	l, err := quota.NewLedger(q, quota.LedgerOf(stored, q))
	if err != nil {
		return nil, err
	}
	return l.RenderAll(l.Reserved()), nil
}
