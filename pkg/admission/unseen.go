package admission

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sync/singleflight"
	"k8s.io/utils/clock"
	"k8s.io/utils/lru"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/metrics"
)

const (
	// unseenQuotaTTL is how long the apiserver's answer that a namespace has no quota is taken as true. Kubernetes'
	// own quota admission keeps the same answer 30 s (its liveLookupCache).
	unseenQuotaTTL = 30 * time.Second
	// unseenQuotaCacheSize bounds the namespaces whose answer is kept; an entry is a name and a time.
	unseenQuotaCacheSize = 8192
	// unseenListTimeout bounds one list, shared by the writes that wait for it.
	unseenListTimeout = 10 * time.Second
)

// unseenQuotas reads a namespace's KarmadaQuotas from the apiserver when the informer knows none. A client that
// creates a quota and then writes a binding expects the quota to govern that write, though the informer's watch
// event may arrive after it (milliseconds, longer under load); Kubernetes' ResourceQuota admission closes the same
// window the same way.
//
// Only the absence of quotas is remembered, for unseenQuotaTTL, so that a namespace without one costs the apiserver
// one list per TTL rather than one per write. What that leaves open: a namespace read as empty keeps that answer
// until the TTL passes, so a quota created in it within the TTL after such a read governs from the moment the
// informer has it. Quotas found are not remembered: the informer has them a moment later, and a remembered one
// would outlive its deletion.
type unseenQuotas struct {
	reader client.Reader
	clock  clock.PassiveClock
	// none holds, by namespace, when the list that found no quota in it began.
	none *lru.Cache
	// lists shares one list of a namespace among the writes that miss the cache at once.
	lists singleflight.Group
}

func newUnseenQuotas(reader client.Reader, clk clock.PassiveClock) *unseenQuotas {
	return &unseenQuotas{reader: reader, clock: clk, none: lru.New(unseenQuotaCacheSize)}
}

// list returns the namespace's quotas as the apiserver has them now, or none when it answered none within the TTL.
func (u *unseenQuotas) list(ctx context.Context, namespace string) ([]quotav1alpha1.KarmadaQuota, error) {
	if began, ok := u.none.Get(namespace); ok && u.clock.Since(began.(time.Time)) < unseenQuotaTTL {
		return nil, nil
	}
	result := u.lists.DoChan(namespace, func() (any, error) {
		// Shared by every write waiting for it, so apart from the first one's context (whose end would fail the
		// others), and bounded by its own.
		listCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unseenListTimeout)
		defer cancel()
		began := u.clock.Now()
		var live quotav1alpha1.KarmadaQuotaList
		if err := u.reader.List(listCtx, &live, client.InNamespace(namespace)); err != nil {
			return nil, err
		}
		metrics.UnseenQuotaReads.WithLabelValues(foundLabel(len(live.Items) > 0)).Inc()
		if len(live.Items) == 0 {
			u.none.Add(namespace, began)
		} else {
			u.none.Remove(namespace)
		}
		return live.Items, nil
	})
	select {
	case r := <-result:
		if r.Err != nil {
			return nil, fmt.Errorf("listing the quotas of namespace %s from the apiserver, which the informer has none of: %w", namespace, r.Err)
		}
		return r.Val.([]quotav1alpha1.KarmadaQuota), nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the quotas of namespace %s from the apiserver: %w", namespace, context.Cause(ctx))
	}
}

func foundLabel(found bool) string {
	if found {
		return "true"
	}
	return "false"
}
