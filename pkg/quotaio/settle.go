package quotaio

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
)

// SettleLedger writes a recount's settlement, obj, over stored, the ledger object it was recounted from, as a JSON
// patch when obj is stored with reservations removed and its observed usage replaced (what a recount that settles
// writes), and reports whether it could. The patch names each reservation it removes by its index, testing there
// the entry read (one string: owner, generation, expiry, amounts); the ledger's UID and its fence (quotaGeneration)
// are tested too. So the apiserver applies it to the ledger as it is when the patch arrives, keeping what
// admissions reserved since the read, and refuses it only when a removed reservation moved or changed, the fence
// rose, or the ledger was replaced. A compare-and-swap of the whole object, by contrast, loses to every admission
// in between: under a burst the webhook writes the ledger every few milliseconds, every attempt of the controller
// lost, and the list grew to its bound and folded, which charges until the reservation TTL (docs/performance.md).
//
// Why this is exact: observed usage is the count of the bindings the recount read, and the patch removes only
// reservations whose writes that count includes (or that are gone or expired, tested unchanged). A reservation
// added since the read stays listed; it is for a write the count does not include when stored was read after the
// bindings counted (the controller reads the ledger again from the apiserver before it writes), since the webhook
// reserves before the write it admits is stored. Read before them, it may be for one the count includes, and is
// charged twice until the next recount.
//
// A refused patch is retried as the compare-and-swap write of obj, which succeeds when the refusal was not a race
// (or was over reservations an earlier release stored as objects, which never equal their string) and is a
// conflict (read again) when it was. obj gets the stored object back. reservationCount, the list's length for the
// printer column, is set to obj's; when admissions added reservations meanwhile it is corrected by a second write,
// unless another writer (which counts the list it writes) got there first.
func SettleLedger(ctx context.Context, w client.Writer, stored, obj *quotav1alpha1.KarmadaQuotaLedger) (bool, error) {
	patch, ok := settlePatch(stored, obj)
	if !ok {
		return false, nil
	}
	if err := patchLedger(ctx, w, obj, patch); err != nil {
		if !apierrors.IsInvalid(err) {
			return true, err
		}
		// A failed test: the patch would have removed what it did not read. The whole object is what the recount
		// decided; written by its resourceVersion, it stands or loses the race.
		obj.ResourceVersion = stored.ResourceVersion
		return true, WriteLedger(ctx, w, obj, false)
	}
	if n := int32(len(obj.Reservations)); obj.ReservationCount != n {
		obj.ReservationCount = n
		if err := WriteLedger(ctx, w, obj, false); err != nil && !apierrors.IsConflict(err) {
			return true, err
		}
	}
	return true, nil
}

// patchOp is one JSON patch (RFC 6902) operation.
type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// settlePatch is the JSON patch SettleLedger sends; false when obj is not stored with reservations removed and
// observed usage replaced (anything else changed, or reservations added or reordered), or stored carries no fence.
func settlePatch(stored, obj *quotav1alpha1.KarmadaQuotaLedger) ([]byte, bool) {
	if stored.QuotaGeneration == 0 || stored.UID == "" || obj.Observed == nil {
		return nil, false
	}
	// Everything but the settled parts must be as read.
	a, b := stored.DeepCopy(), obj.DeepCopy()
	for _, l := range []*quotav1alpha1.KarmadaQuotaLedger{a, b} {
		l.Observed, l.Reservations, l.ReservationCount = nil, nil, 0
	}
	if !equality.Semantic.DeepEqual(a, b) {
		return nil, false
	}
	var removed []int
	kept := 0
	for i := range stored.Reservations {
		if kept < len(obj.Reservations) && equality.Semantic.DeepEqual(stored.Reservations[i], obj.Reservations[kept]) {
			kept++
			continue
		}
		removed = append(removed, i)
	}
	if kept != len(obj.Reservations) {
		return nil, false
	}
	ops := []patchOp{
		{Op: "test", Path: "/metadata/uid", Value: stored.UID},
		{Op: "test", Path: "/quotaGeneration", Value: stored.QuotaGeneration},
	}
	// From the last, so that each removal leaves the indices before it as read.
	for k := len(removed) - 1; k >= 0; k-- {
		i := removed[k]
		r := stored.Reservations[i]
		at := fmt.Sprintf("/reservations/%d", i)
		// The whole entry, as read: a reservation is one string (its owner, generation, expiry and amounts).
		ops = append(ops,
			patchOp{Op: "test", Path: at, Value: r},
			patchOp{Op: "remove", Path: at},
		)
	}
	// The list itself stays, emptied or not: removing it would take what admissions reserved since the read.
	ops = append(ops,
		patchOp{Op: "add", Path: "/observed", Value: obj.Observed},
		patchOp{Op: "add", Path: "/reservationCount", Value: obj.ReservationCount},
	)
	data, err := json.Marshal(ops)
	if err != nil {
		return nil, false
	}
	return data, true
}

// patchLedger sends a JSON patch of obj's ledger, a business quota's as the KarmadaBusinessQuotaLedger it is; obj
// becomes the stored object. The answer is decoded into a new object: decoding into obj would leave what the
// answer lacks as obj had it.
func patchLedger(ctx context.Context, w client.Writer, obj *quotav1alpha1.KarmadaQuotaLedger, patch []byte) error {
	raw := client.RawPatch(types.JSONPatchType, patch)
	if Business(client.ObjectKeyFromObject(obj)) {
		var stored quotav1alpha1.KarmadaBusinessQuotaLedger
		stored.Name = obj.Name
		if err := w.Patch(ctx, &stored, raw); err != nil {
			return err
		}
		*obj = *stored.AsKarmadaQuotaLedger()
		return nil
	}
	var stored quotav1alpha1.KarmadaQuotaLedger
	stored.Namespace, stored.Name = obj.Namespace, obj.Name
	if err := w.Patch(ctx, &stored, raw); err != nil {
		return err
	}
	*obj = stored
	return nil
}
