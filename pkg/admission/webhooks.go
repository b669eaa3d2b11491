package admission

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	workv1alpha1 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/estimator"
	"github.com/karmada-quota/karmada-quota/pkg/estimator/discovery"
	"github.com/karmada-quota/karmada-quota/pkg/interpreter"
	"github.com/karmada-quota/karmada-quota/pkg/members"
	"github.com/karmada-quota/karmada-quota/pkg/metrics"
	"github.com/karmada-quota/karmada-quota/pkg/priorityclass"
	"github.com/karmada-quota/karmada-quota/pkg/quotaio"
	"github.com/karmada-quota/karmada-quota/pkg/scheme"
	"github.com/karmada-quota/karmada-quota/pkg/util/kindjson"
	"github.com/karmada-quota/karmada-quota/pkg/webhookconfig"
)

// Options configure admission.
type Options struct {
	// ReservationTTL is how long a reservation outlives a binding write that never happened. It must exceed the
	// apiserver's request timeout, so that a write cannot commit after its reservation lapsed.
	ReservationTTL time.Duration
	// DecisionTimeout bounds one batch: reading, deciding and writing a namespace's quotas, retries included.
	DecisionTimeout time.Duration
	// MaxReservations bounds each quota's reservation list; 0 or more than quota.MaxReservations means
	// quota.MaxReservations. Tests lower it to fold with few writes.
	MaxReservations int
	// ExemptKinds are kinds, as Kind.group, whose pods karmada-quota cannot know that Works may carry under a quota
	// limiting what pods use, uncharged (ParseExemptKinds).
	ExemptKinds []string
	// EstimatorAddress, when set, serves Karmada's scheduler-estimator protocol there (pkg/estimator): how many
	// replicas the quotas leave room for on each member cluster, from the same informers admission reads.
	EstimatorAddress string
	// EstimatorTLS, when set, makes the estimator serve TLS; nil serves plain gRPC.
	EstimatorTLS *tls.Config
	// MemberEstimators, when their Prefix is set, find the members' own karmada-scheduler-estimators, which the
	// estimator asks too (estimator.Upstream).
	MemberEstimators discovery.Lookup
	Clock            clock.PassiveClock
}

// ParseExemptKinds reads kinds written Kind.group (Certificate.cert-manager.io; Kind alone for the core group).
func ParseExemptKinds(kinds []string) (sets.Set[schema.GroupKind], error) {
	out := sets.New[schema.GroupKind]()
	for _, k := range kinds {
		gk := schema.ParseGroupKind(strings.TrimSpace(k))
		if gk.Kind == "" || strings.ToUpper(gk.Kind[:1]) != gk.Kind[:1] {
			return nil, fmt.Errorf("%q is not a kind written Kind.group, such as Certificate.cert-manager.io", k)
		}
		out.Insert(gk)
	}
	return out, nil
}

// What the webhook needs in the karmada-apiserver; `make generate` writes it into the chart (files/rbac/webhook).
// +kubebuilder:rbac:groups=quota.karmada.io,resources=karmadaquotas,verbs=get;list;watch
// +kubebuilder:rbac:groups=quota.karmada.io,resources=karmadaquotaledgers,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups=quota.karmada.io,resources=karmadabusinessquotas,verbs=get;list;watch
// +kubebuilder:rbac:groups=quota.karmada.io,resources=karmadabusinessquotaledgers,verbs=get;list;watch;create;update
// The labels business quotas select namespaces by.
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=work.karmada.io,resources=resourcebindings,verbs=get
// +kubebuilder:rbac:groups=cluster.karmada.io,resources=clusters/proxy,verbs=get
// +kubebuilder:rbac:groups=cluster.karmada.io,resources=clusters,verbs=list;watch
// +kubebuilder:rbac:groups="";events.k8s.io,resources=events,verbs=create;patch
// Where the members' own estimators are (estimator.Upstream): karmada-scheduler's namespace for them, by default.
// +kubebuilder:rbac:groups="",namespace=karmada-system,resources=services,verbs=get

// CacheOptions are the cache options the webhook's manager must be built with, on clients (whose mapper the manager
// is given too): of every member cluster it keeps what the quotas' cluster groups read (members.TrimCluster), of
// every quota one resource list where spec and status hold the same (quotaio.TrimQuota), and of everything else all
// but the managed fields, which nothing here reads and which a quota's (the controller's, the webhook's and its
// author's) can outweigh. Quotas and their ledgers, which every admission that reserves and every status the
// controller writes send back as watch events, are decoded with kindjson's serializer, which reads each object's
// kind without a pass of its own over the object.
func CacheOptions(clients kindjson.Clients) (cache.Options, error) {
	return kindjson.ReadWhole(cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&clusterv1alpha1.Cluster{}:            {Transform: members.TrimCluster},
			&quotav1alpha1.KarmadaQuota{}:         {Transform: quotaio.TrimQuota},
			&quotav1alpha1.KarmadaBusinessQuota{}: {Transform: quotaio.TrimQuota},
		},
	}, clients, scheme.Scheme, &quotav1alpha1.KarmadaQuota{}, &quotav1alpha1.KarmadaQuotaLedger{},
		&quotav1alpha1.KarmadaBusinessQuota{}, &quotav1alpha1.KarmadaBusinessQuotaLedger{})
}

// Setup registers the webhooks with the manager's webhook server. The manager's cache says which quotas a
// namespace has and what they hold; a quota whose write lost a race is read past it (see Admitter). Karmada's
// resource interpreter, which the Work and resource template webhooks read workloads with, starts with the
// manager.
func Setup(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	metrics.RegisterWebhook()
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	// Registered now so the informers start and sync with the manager, not on the first admission.
	quotaInformer, err := mgr.GetCache().GetInformer(ctx, &quotav1alpha1.KarmadaQuota{})
	if err != nil {
		return fmt.Errorf("watching KarmadaQuotas: %w", err)
	}
	ledgerInformer, err := mgr.GetCache().GetInformer(ctx, &quotav1alpha1.KarmadaQuotaLedger{})
	if err != nil {
		return fmt.Errorf("watching KarmadaQuotaLedgers: %w", err)
	}
	businessInformer, err := mgr.GetCache().GetInformer(ctx, &quotav1alpha1.KarmadaBusinessQuota{})
	if err != nil {
		return fmt.Errorf("watching KarmadaBusinessQuotas: %w", err)
	}
	businessLedgerInformer, err := mgr.GetCache().GetInformer(ctx, &quotav1alpha1.KarmadaBusinessQuotaLedger{})
	if err != nil {
		return fmt.Errorf("watching KarmadaBusinessQuotaLedgers: %w", err)
	}
	namespaceInformer, err := mgr.GetCache().GetInformer(ctx, quotaio.NamespaceMetadata())
	if err != nil {
		return fmt.Errorf("watching Namespaces: %w", err)
	}
	synced := func() bool {
		return quotaInformer.HasSynced() && ledgerInformer.HasSynced() && businessInformer.HasSynced() &&
			businessLedgerInformer.HasSynced() && namespaceInformer.HasSynced()
	}
	// A replica that cannot list quotas (missing RBAC, say) would refuse every binding write; it must never be
	// ready, so that traffic goes to the replicas that can decide.
	if err := mgr.AddReadyzCheck("karmadaquota-informer", func(*http.Request) error {
		if !synced() {
			return errors.New("the informers of quotas, business quotas, their ledgers and namespaces have not synced")
		}
		return nil
	}); err != nil {
		return err
	}
	quotas := NewQuotaReader(mgr.GetCache(), synced).WithBusinessQuotas(mgr.GetAPIReader()).
		WithUnseenQuotas(mgr.GetAPIReader(), opts.Clock)
	// The member clusters' labels, for the quotas' cluster groups: a group's clusters are the ones its selector
	// chooses at the moment of each decision.
	clusters, err := mgr.GetCache().GetInformer(ctx, &clusterv1alpha1.Cluster{})
	if err != nil {
		return fmt.Errorf("watching Clusters: %w", err)
	}
	if err := mgr.AddReadyzCheck("cluster-informer", func(*http.Request) error {
		if !clusters.HasSynced() {
			return errors.New("the Cluster informer has not synced")
		}
		return nil
	}); err != nil {
		return err
	}
	admitter := NewAdmitter(quotas, mgr.GetAPIReader(), mgr.GetAPIReader(), mgr.GetClient(), opts.Clock,
		opts.ReservationTTL, opts.DecisionTimeout, opts.MaxReservations)
	admitter.clusterLabels = members.Labels(mgr.GetCache())
	if opts.EstimatorAddress != "" {
		server := &estimator.Server{Address: opts.EstimatorAddress, TLS: opts.EstimatorTLS,
			Estimator: estimator.New(quotas.LedgersWith(admitter.clusterLabels))}
		if m := opts.MemberEstimators; m.Prefix != "" {
			server.Upstream = estimator.NewUpstream(mgr.GetAPIReader(), m)
		}
		if err := mgr.Add(server); err != nil {
			return err
		}
	}
	server := mgr.GetWebhookServer()
	classes := &classifier{resolver: priorityclass.NewResolver(mgr.GetAPIReader(), priorityclass.DefaultCacheSize)}
	holdings := &holdings{reader: interpreter.NewHeldReader(mgr.GetAPIReader(), interpreter.HeldCacheSize)}
	server.Register(webhookconfig.ResourceBindingPath, bindingWebhook(mgr.GetScheme(), &BindingValidator{admitter: admitter, quotas: quotas, classes: classes, holdings: holdings}))
	server.Register(webhookconfig.KarmadaQuotaPath, quotaWebhook(mgr.GetScheme(), QuotaValidator{reader: mgr.GetAPIReader(), writer: mgr.GetClient()}))
	server.Register(webhookconfig.BusinessQuotaPath, businessQuotaWebhook(mgr.GetScheme(), BusinessQuotaValidator{reader: mgr.GetAPIReader(), writer: mgr.GetClient()}))

	workloads, err := interpreter.New(mgr.GetConfig())
	if err != nil {
		return fmt.Errorf("creating Karmada's resource interpreter: %w", err)
	}
	if err := mgr.Add(workloads); err != nil {
		return err
	}
	// Until the customizations are loaded a Work of a custom kind would be read as running nothing.
	if err := mgr.AddReadyzCheck("resource-interpreter", func(*http.Request) error {
		if !workloads.Started() {
			return interpreter.ErrNotStarted
		}
		return nil
	}); err != nil {
		return err
	}
	// A member's nodes are read for the Works that run a pod per node.
	nodes := members.NewNodes(mgr.GetConfig(), members.NodesMaxAge)
	exempt, err := ParseExemptKinds(opts.ExemptKinds)
	if err != nil {
		return fmt.Errorf("the kinds exempt from quota: %w", err)
	}
	if exempt.Len() > 0 {
		// Visible where admins look: they run uncharged under every quota.
		ctrl.Log.Info("Kinds whose pods karmada-quota cannot know run uncharged", "exemptKinds", opts.ExemptKinds)
	}
	server.Register(webhookconfig.WorkPath, admission.WithValidator[*workv1alpha1.Work](mgr.GetScheme(),
		&WorkValidator{admitter: admitter, quotas: quotas, bindings: mgr.GetAPIReader(), classes: classes, holdings: holdings, interpreter: workloads, nodes: nodes, exempt: exempt,
			recorder: mgr.GetEventRecorderFor("karmada-quota-webhook"), templates: mgr.GetAPIReader()}))
	server.Register(webhookconfig.ResourceTemplatePath, &admission.Webhook{Handler: &TemplateValidator{
		admitter: admitter, quotas: quotas, bindings: mgr.GetAPIReader(), classes: classes, holdings: holdings, interpreter: workloads,
		decoder: admission.NewDecoder(mgr.GetScheme()),
	}})
	return nil
}

// bindingWebhook is the ResourceBinding webhook: quantities too extreme to decode refused (quantityGuard), then
// the typed validator.
func bindingWebhook(s *runtime.Scheme, v *BindingValidator) *admission.Webhook {
	wh := admission.WithValidator[*workv1alpha2.ResourceBinding](s, v)
	wh.Handler = quantityGuard{Handler: wh.Handler, fields: bindingQuantityFields}
	return wh
}

// quotaWebhook is the KarmadaQuota webhook, guarded the same way.
func quotaWebhook(s *runtime.Scheme, v QuotaValidator) *admission.Webhook {
	wh := admission.WithValidator[*quotav1alpha1.KarmadaQuota](s, v)
	wh.Handler = quantityGuard{Handler: wh.Handler, fields: quotaQuantityFields}
	return wh
}
