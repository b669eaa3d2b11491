package admission

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/metrics"
)

// Paths the webhooks are served on; the ValidatingWebhookConfiguration points at them.
const (
	ResourceBindingPath = "/validate-resourcebinding"
	KarmadaQuotaPath    = "/validate-karmadaquota"
)

// Options configure admission.
type Options struct {
	// ReservationTTL is how long a reservation outlives a binding write that never happened. It must exceed the
	// apiserver's request timeout, so that a write cannot commit after its reservation lapsed.
	ReservationTTL time.Duration
	// DecisionTimeout bounds one batch: reading, deciding and writing a namespace's quotas, retries included.
	DecisionTimeout time.Duration
	Clock           clock.PassiveClock
}

// What the webhook needs in the karmada-apiserver; `make generate` writes it into the chart (files/rbac/webhook).
// +kubebuilder:rbac:groups=quota.karmada.io,resources=karmadaquotas,verbs=get;list;watch
// +kubebuilder:rbac:groups=quota.karmada.io,resources=karmadaquotas/status,verbs=get;update
// +kubebuilder:rbac:groups=work.karmada.io,resources=resourcebindings,verbs=get

// Setup registers both webhooks with the manager's webhook server. The manager's cache says which quotas a
// namespace has; their state is read past it (see Admitter).
func Setup(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	metrics.Register()
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	// Registered now so the informer starts and syncs with the manager, not on the first admission.
	informer, err := mgr.GetCache().GetInformer(ctx, &quotav1alpha1.KarmadaQuota{})
	if err != nil {
		return fmt.Errorf("watching KarmadaQuotas: %w", err)
	}
	// A replica that cannot list quotas (missing RBAC, say) would refuse every binding write; it must never be
	// ready, so that traffic goes to the replicas that can decide.
	if err := mgr.AddReadyzCheck("karmadaquota-informer", func(*http.Request) error {
		if !informer.HasSynced() {
			return errors.New("the KarmadaQuota informer has not synced")
		}
		return nil
	}); err != nil {
		return err
	}
	admitter := NewAdmitter(mgr.GetCache(), mgr.GetAPIReader(), mgr.GetClient(), opts.Clock, opts.ReservationTTL, opts.DecisionTimeout)
	server := mgr.GetWebhookServer()
	server.Register(ResourceBindingPath, admission.WithValidator[*workv1alpha2.ResourceBinding](mgr.GetScheme(), &BindingValidator{admitter: admitter, bindings: mgr.GetAPIReader()}))
	server.Register(KarmadaQuotaPath, admission.WithValidator[*quotav1alpha1.KarmadaQuota](mgr.GetScheme(), QuotaValidator{}))
	return nil
}
