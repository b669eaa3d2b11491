package utiltesting

import (
	"fmt"
	"time"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
)

// QuotaWrapper builds a KarmadaQuota step by step.
type QuotaWrapper struct {
	quotav1alpha1.KarmadaQuota
}

// MakeQuota starts an unscoped KarmadaQuota that limits nothing, with a UID and generation 1 as the API server
// would give it, and an empty status.
func MakeQuota(namespace, name string) *QuotaWrapper {
	return &QuotaWrapper{quotav1alpha1.KarmadaQuota{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:  namespace,
			Name:       name,
			UID:        types.UID(fmt.Sprintf("uid-quota-%s-%s", namespace, name)),
			Generation: 1,
		},
	}}
}

// Obj returns a copy of the quota built so far; later changes to the wrapper do not reach it.
func (w *QuotaWrapper) Obj() *quotav1alpha1.KarmadaQuota {
	return w.KarmadaQuota.DeepCopy()
}

// Clone returns an independent wrapper to build a variant from.
func (w *QuotaWrapper) Clone() *QuotaWrapper {
	return &QuotaWrapper{*w.KarmadaQuota.DeepCopy()}
}

// Hard sets spec.hard, in the names the quota's author writes (cpu, requests.memory, pods, count/...). It is not
// validated, so a test can store a quota that slipped past validation.
func (w *QuotaWrapper) Hard(hard corev1.ResourceList) *QuotaWrapper {
	w.Spec.Hard = hard.DeepCopy()
	return w
}

// Scope adds a PriorityClass expression to spec.scopeSelector; expressions are ANDed.
func (w *QuotaWrapper) Scope(op corev1.ScopeSelectorOperator, values ...string) *QuotaWrapper {
	if w.Spec.ScopeSelector == nil {
		w.Spec.ScopeSelector = &quotav1alpha1.ScopeSelector{}
	}
	w.Spec.ScopeSelector.MatchExpressions = append(w.Spec.ScopeSelector.MatchExpressions,
		quotav1alpha1.ScopedResourceSelectorRequirement{
			ScopeName: corev1.ResourceQuotaScopePriorityClass,
			Operator:  op,
			Values:    values,
		})
	return w
}

// Used sets status.used, what the controller observed.
func (w *QuotaWrapper) Used(used corev1.ResourceList) *QuotaWrapper {
	w.Status.Used = used.DeepCopy()
	return w
}

// Reservation adds a reservation for the write of rb that produces generation, and adds its amount to
// status.reserved, as the webhook records an admission.
func (w *QuotaWrapper) Reservation(rb *workv1alpha2.ResourceBinding, generation int64, reserved corev1.ResourceList, expires time.Time) *QuotaWrapper {
	w.Status.Reservations = append(w.Status.Reservations, quotav1alpha1.Reservation{
		ReservedBy:     ReservationOwner(rb),
		Generation:     generation,
		Reserved:       reserved.DeepCopy(),
		ExpirationTime: metav1.NewTime(expires),
	})
	if w.Status.Reserved == nil {
		w.Status.Reserved = corev1.ResourceList{}
	}
	// Status lists every limited resource, zero when nothing of it is reserved.
	for name := range w.Spec.Hard {
		if _, ok := w.Status.Reserved[name]; !ok {
			w.Status.Reserved[name] = resource.Quantity{}
		}
	}
	for name, q := range reserved {
		sum := w.Status.Reserved[name]
		sum.Add(q)
		w.Status.Reserved[name] = sum
	}
	return w
}

// Folded sets the sum of folded reservations, and adds it to status.reserved, as the webhook folds the oldest
// reservations past the list's bound.
func (w *QuotaWrapper) Folded(count int64, reserved corev1.ResourceList, expires time.Time) *QuotaWrapper {
	w.Status.FoldedReservations = &quotav1alpha1.FoldedReservations{
		Count: count, Reserved: reserved.DeepCopy(), ExpirationTime: metav1.NewTime(expires),
	}
	if w.Status.Reserved == nil {
		w.Status.Reserved = corev1.ResourceList{}
	}
	for name := range w.Spec.Hard {
		if _, ok := w.Status.Reserved[name]; !ok {
			w.Status.Reserved[name] = resource.Quantity{}
		}
	}
	for name, q := range reserved {
		sum := w.Status.Reserved[name]
		sum.Add(q)
		w.Status.Reserved[name] = sum
	}
	return w
}

// ResourceVersion sets metadata.resourceVersion.
func (w *QuotaWrapper) ResourceVersion(resourceVersion string) *QuotaWrapper {
	w.ObjectMeta.ResourceVersion = resourceVersion
	return w
}

// ReservationOwner names rb as the owner of a reservation, as the binding webhook does.
func ReservationOwner(rb *workv1alpha2.ResourceBinding) quotav1alpha1.ReservationOwner {
	return quotav1alpha1.ReservationOwner{
		APIVersion: workv1alpha2.SchemeGroupVersion.String(),
		Kind:       "ResourceBinding",
		Name:       rb.Name,
		UID:        rb.UID,
	}
}

// MoveToLedger moves the reservations of q's status into a ledger object, as the controller does with those a
// webhook of an earlier release listed there, and returns it, with a UID as the API server would give it; q's status keeps their sum
// (status.reserved).
func MoveToLedger(q *quotav1alpha1.KarmadaQuota) *quotav1alpha1.KarmadaQuotaLedger {
	stored := &quotav1alpha1.KarmadaQuotaLedger{
		ObjectMeta: metav1.ObjectMeta{Namespace: q.Namespace, Name: q.Name, UID: types.UID("uid-ledger-" + q.Name), OwnerReferences: []metav1.OwnerReference{
			*metav1.NewControllerRef(q, quotav1alpha1.GroupVersion.WithKind("KarmadaQuota"))}},
		LedgerState: quotav1alpha1.LedgerState{
			QuotaGeneration:    q.Generation,
			Reservations:       q.Status.Reservations,
			ReservationCount:   int32(len(q.Status.Reservations)),
			FoldedReservations: q.Status.FoldedReservations,
		},
	}
	q.Status.Reservations, q.Status.FoldedReservations = nil, nil
	return stored
}

// BusinessQuota is a KarmadaBusinessQuota over the namespaces labelled business=<name>, limiting hard, with a UID
// and generation 1 as the API server would give it.
func BusinessQuota(name string, hard corev1.ResourceList) *quotav1alpha1.KarmadaBusinessQuota {
	return &quotav1alpha1.KarmadaBusinessQuota{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-business-" + name), Generation: 1},
		Spec: quotav1alpha1.KarmadaBusinessQuotaSpec{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"business": name}},
			KarmadaQuotaSpec:  quotav1alpha1.KarmadaQuotaSpec{Hard: hard},
		},
	}
}

// Namespace is a namespace with labels (nil for none).
func Namespace(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}
