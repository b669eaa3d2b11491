// Package quotaio reads and writes the two kinds of quota and their ledgers as admission and the recount see them:
// a KarmadaQuota and its KarmadaQuotaLedger, or a KarmadaBusinessQuota and its KarmadaBusinessQuotaLedger read as
// those (quotav1alpha1.AsKarmadaQuota). A key without a namespace is a business quota's: they are cluster-scoped,
// and a namespace's quota always has one.
package quotaio

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
)

// Business reports whether key names a business quota (or its ledger).
func Business(key client.ObjectKey) bool {
	return key.Namespace == ""
}

// GetQuota reads the quota at key, as a KarmadaQuota; for a business quota also as itself (nil otherwise), for what
// only it has (its namespace selector, its status per namespace) and for writing its status.
func GetQuota(ctx context.Context, r client.Reader, key client.ObjectKey, opts ...client.GetOption) (*quotav1alpha1.KarmadaQuota, *quotav1alpha1.KarmadaBusinessQuota, error) {
	if Business(key) {
		var b quotav1alpha1.KarmadaBusinessQuota
		if err := r.Get(ctx, key, &b, opts...); err != nil {
			return nil, nil, err
		}
		return b.AsKarmadaQuota(), &b, nil
	}
	var q quotav1alpha1.KarmadaQuota
	if err := r.Get(ctx, key, &q, opts...); err != nil {
		return nil, nil, err
	}
	return &q, nil, nil
}

// GetLedger reads the ledger object at key, as a KarmadaQuotaLedger.
func GetLedger(ctx context.Context, r client.Reader, key client.ObjectKey, opts ...client.GetOption) (*quotav1alpha1.KarmadaQuotaLedger, error) {
	if Business(key) {
		var b quotav1alpha1.KarmadaBusinessQuotaLedger
		if err := r.Get(ctx, key, &b, opts...); err != nil {
			return nil, err
		}
		return b.AsKarmadaQuotaLedger(), nil
	}
	var l quotav1alpha1.KarmadaQuotaLedger
	if err := r.Get(ctx, key, &l, opts...); err != nil {
		return nil, err
	}
	return &l, nil
}

// WriteLedger creates (create) or updates obj, a business quota's as the KarmadaBusinessQuotaLedger it is. obj gets
// the stored object's metadata back (its resourceVersion above all).
func WriteLedger(ctx context.Context, w client.Writer, obj *quotav1alpha1.KarmadaQuotaLedger, create bool) error {
	var target client.Object = obj
	var business *quotav1alpha1.KarmadaBusinessQuotaLedger
	if Business(client.ObjectKeyFromObject(obj)) {
		business = quotav1alpha1.BusinessLedgerFrom(obj)
		target = business
	}
	var err error
	if create {
		err = w.Create(ctx, target)
	} else {
		err = w.Update(ctx, target)
	}
	if err == nil && business != nil {
		obj.ObjectMeta = business.ObjectMeta
	}
	return err
}
