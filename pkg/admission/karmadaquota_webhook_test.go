package admission

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/scheme"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

// TestQuotaValidatorFences: a change of a quota's spec (a new generation) raises its ledger's quotaGeneration
// before the apiserver stores it, so that no admission decided on the older spec can land afterwards (see
// TestAdmitDecidesOnTheNewestSpec). Nothing else writes the ledger: not a write that keeps the generation, not a
// dry run, not a refused change, and not a ledger left by another quota of the same name.
func TestQuotaValidatorFences(t *testing.T) {
	team := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10"))
	lowered := team.Clone().Hard(list("cpu", "1"))
	lowered.Generation = 2
	relabeled := team.Obj()
	relabeled.Labels = map[string]string{"team": "a"}
	// fencedAt is team's ledger fenced at generation, owned by the quota of uid.
	fencedAt := func(generation int64, uid types.UID) *quotav1alpha1.KarmadaQuotaLedger {
		owner := team.Obj()
		owner.UID = uid
		l := utiltesting.MoveToLedger(owner)
		l.QuotaGeneration = generation
		return l
	}
	etcdDown := apierrors.NewServiceUnavailable("etcd is down")

	cases := map[string]struct {
		// ledger is team's ledger object; nil for none.
		ledger   *quotav1alpha1.KarmadaQuotaLedger
		old, new *quotav1alpha1.KarmadaQuota
		dryRun   bool
		// update stands in for the apiserver's answer to the fence's writes (n counts them from 1); nil stores.
		update  func(ctx context.Context, c client.WithWatch, n int32, obj client.Object) error
		wantErr *wantError
		// wantGeneration is the ledger's quotaGeneration afterwards; wantWrites counts the writes of ledgers.
		wantGeneration int64
		wantWrites     int32
		// wantObserved is what the controller observed, in the ledger afterwards.
		wantObserved *quotav1alpha1.LedgerObserved
	}{
		"a new generation raises the fence": {
			ledger: fencedAt(1, team.UID), old: team.Obj(), new: lowered.Obj(),
			wantGeneration: 2, wantWrites: 1,
		},
		"the same generation writes nothing": {
			ledger: fencedAt(1, team.UID), old: team.Obj(), new: relabeled,
			wantGeneration: 1,
		},
		"a dry run writes nothing": {
			ledger: fencedAt(1, team.UID), old: team.Obj(), new: lowered.Obj(), dryRun: true,
			wantGeneration: 1,
		},
		"a ledger left by a deleted quota of the same name is left alone": {
			ledger: fencedAt(1, "uid-of-a-deleted-quota"), old: team.Obj(), new: lowered.Obj(),
			wantGeneration: 1,
		},
		"a quota without a ledger needs no fence": {
			old: team.Obj(), new: lowered.Obj(),
		},
		"a fence already past the new generation is not lowered": {
			ledger: fencedAt(5, team.UID), old: team.Obj(), new: lowered.Obj(),
			wantGeneration: 5,
		},
		"a refused change fences nothing": {
			ledger: fencedAt(1, team.UID), old: team.Obj(), new: lowered.Clone().Hard(list("cpu", "-1")).Obj(),
			wantErr:        &wantError{Code: http.StatusUnprocessableEntity, Reason: metav1.StatusReasonInvalid, Messages: []string{"spec.hard"}},
			wantGeneration: 1,
		},
		"a fence that loses a race to another writer is retried": {
			ledger: fencedAt(1, team.UID), old: team.Obj(), new: lowered.Obj(),
			update: func(ctx context.Context, c client.WithWatch, n int32, obj client.Object) error {
				if n == 1 {
					// The controller writes what it observed first.
					if err := writeLedger(ctx, c, "team", func(l *quotav1alpha1.KarmadaQuotaLedger) {
						l.Observed = &quotav1alpha1.LedgerObserved{Used: list("cpu", "3")}
					}); err != nil {
						return err
					}
				}
				return c.Update(ctx, obj)
			},
			wantGeneration: 2, wantWrites: 2,
			wantObserved: &quotav1alpha1.LedgerObserved{Used: list("cpu", "3")},
		},
		"a fence that cannot be written refuses the change": {
			ledger: fencedAt(1, team.UID), old: team.Obj(), new: lowered.Obj(),
			update: func(context.Context, client.WithWatch, int32, client.Object) error { return etcdDown },
			wantErr: &wantError{Code: http.StatusInternalServerError, Reason: metav1.StatusReasonInternalError,
				Messages: []string{"the admissions of quota team could not be fenced for its new spec", "etcd is down"}},
			wantGeneration: 1, wantWrites: 1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objs := []client.Object{tc.old}
			if tc.ledger != nil {
				objs = append(objs, tc.ledger)
			}
			apiserver := newClient(nil, objs...)
			var writes atomic.Int32
			c := interceptor.NewClient(apiserver, interceptor.Funcs{
				Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
					writes.Add(1)
					return c.Create(ctx, obj, opts...)
				},
				Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
					n := writes.Add(1)
					if tc.update != nil {
						return tc.update(ctx, c, n, obj)
					}
					return c.Update(ctx, obj, opts...)
				},
			})
			ctx := admission.NewContextWithRequest(context.Background(), admission.Request{
				AdmissionRequest: admissionv1.AdmissionRequest{DryRun: ptr.To(tc.dryRun)},
			})

			_, err := QuotaValidator{reader: c, writer: c}.ValidateUpdate(ctx, tc.old, tc.new)
			checkError(t, tc.wantErr, err)

			if got := writes.Load(); got != tc.wantWrites {
				t.Errorf("%d ledger writes, want %d", got, tc.wantWrites)
			}
			got := getLedger(t, apiserver, "team")
			if tc.ledger == nil {
				if got != nil {
					t.Errorf("a ledger was created: %+v", got)
				}
				return
			}
			if got.QuotaGeneration != tc.wantGeneration {
				t.Errorf("quotaGeneration = %d, want %d", got.QuotaGeneration, tc.wantGeneration)
			}
			// The fence changes nothing else: not the owner, not the reservations, not what was observed.
			want := tc.ledger.DeepCopy()
			want.QuotaGeneration, want.Observed = tc.wantGeneration, tc.wantObserved
			if diff := cmp.Diff(want, got, ledgerOpts); diff != "" {
				t.Errorf("ledger (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.ledger.OwnerReferences, got.OwnerReferences); diff != "" {
				t.Errorf("owner references (-want +got):\n%s", diff)
			}
		})
	}
}

// TestQuotaWebhookFences goes through the KarmadaQuota webhook as Setup wires it: an UPDATE that changes the
// generation fences the ledger, the same UPDATE as a dry run does not.
func TestQuotaWebhookFences(t *testing.T) {
	team := utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10"))
	lowered := team.Clone().Hard(list("cpu", "1"))
	lowered.Generation = 2
	for _, dryRun := range []bool{false, true} {
		c := newClient(nil, withLedger(team.Obj())...)
		handler := quotaWebhook(scheme.Scheme, QuotaValidator{reader: c, writer: c})
		resp := handler.Handle(context.Background(), admissionRequest("KarmadaQuota", admissionv1.Update, quotaJSON(lowered.Obj()), quotaJSON(team.Obj()), dryRun))
		if !resp.Allowed {
			t.Fatalf("dry run %v: refused: %+v", dryRun, resp.Result)
		}
		want := int64(2)
		if dryRun {
			want = 1
		}
		if got := getLedger(t, c, "team").QuotaGeneration; got != want {
			t.Errorf("dry run %v: quotaGeneration = %d, want %d", dryRun, got, want)
		}
	}
}
