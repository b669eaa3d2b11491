package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	workv1alpha1 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/interpreter"
	"github.com/karmada-quota/karmada-quota/pkg/members"
	"github.com/karmada-quota/karmada-quota/pkg/metrics"
	"github.com/karmada-quota/karmada-quota/pkg/priorityclass"
	"github.com/karmada-quota/karmada-quota/pkg/quotaio"
	"github.com/karmada-quota/karmada-quota/pkg/util/kindjson"
	"github.com/karmada-quota/karmada-quota/pkg/util/lastwrite"
	"github.com/karmada-quota/karmada-quota/pkg/util/reconcilequeue"
)

// ControllerName names the quota controller in logs, events and metrics.
const ControllerName = "karmada-quota"

// Options configure the quota controller.
type Options struct {
	// ResyncPeriod is how often every quota is recounted from scratch, a backstop for missed events and
	// hand-edited status.
	ResyncPeriod time.Duration
	// Workers is how many quotas are reconciled at once.
	Workers int
	// RequeueCooldown is how long a waiting binding is left alone after the controller requeued it.
	RequeueCooldown time.Duration
	// SettleInterval is the shortest time between two recounts of one quota that binding changes cause; the
	// changes in between are recounted together (pacer). 0 recounts on every change.
	SettleInterval time.Duration
	// SettleBacklog is how many reservations a quota may hold before a binding change recounts it without waiting
	// for the interval; 0 means DefaultSettleBacklog.
	SettleBacklog int
	// StatusInterval is the shortest time between two status writes of one quota that only move its counts
	// (statusPacer); 0 writes every change at once.
	StatusInterval time.Duration
	// ViewInterval is the shortest time between two writes of a business quota's AppliedBusinessQuotas that only
	// move their counts (applyViews); 0 writes every change at once.
	ViewInterval time.Duration
	// MemberSampleInterval is how often the pods of every member cluster are read through Karmada's cluster proxy
	// and compared with what each quota charges there; 0 reads none.
	MemberSampleInterval time.Duration
	// MemberGrace is how long a member may run more than it is charged before MembersWithinQuota turns False: a
	// rolling update's surge pods run for a while.
	MemberGrace time.Duration
	// EvictionTimeout is karmada-controller-manager's --graceful-eviction-timeout: when an eviction that names no
	// grace period ends at the latest (status.clusters[].evictingUntil). 0 means DefaultGracefulEvictionTimeout.
	EvictionTimeout time.Duration
	// FirstPassDone runs once the leader has recounted every quota its cache held when synced (firstPass), before
	// karmada_quota_first_recount_seconds is exported; nil runs nothing.
	FirstPassDone func()
	Clock         clock.PassiveClock
}

// DefaultGracefulEvictionTimeout is Karmada's own default --graceful-eviction-timeout.
const DefaultGracefulEvictionTimeout = 10 * time.Minute

// Validate reports every invalid option at once.
func (o Options) Validate() error {
	var errs []error
	if o.ResyncPeriod <= 0 {
		errs = append(errs, errors.New("the resync period must be positive"))
	}
	if o.Workers <= 0 {
		errs = append(errs, errors.New("workers must be positive"))
	}
	if o.RequeueCooldown < 0 {
		errs = append(errs, errors.New("the requeue cooldown must not be negative"))
	}
	if o.SettleInterval < 0 {
		errs = append(errs, errors.New("the settle interval must not be negative"))
	}
	if o.StatusInterval < 0 {
		errs = append(errs, errors.New("the status interval must not be negative"))
	}
	if o.ViewInterval < 0 {
		errs = append(errs, errors.New("the business view interval must not be negative"))
	}
	if o.MemberSampleInterval < 0 {
		errs = append(errs, errors.New("the member sample interval must not be negative"))
	}
	if o.MemberGrace < 0 {
		errs = append(errs, errors.New("the member grace must not be negative"))
	}
	if o.EvictionTimeout < 0 {
		errs = append(errs, errors.New("the graceful eviction timeout must not be negative"))
	}
	return errors.Join(errs...)
}

// What the controller needs in the karmada-apiserver; `make generate` writes it into the chart (files/rbac/controller).
// Bindings are patched to requeue them; events go to quotas through both event APIs client-go may use.
// +kubebuilder:rbac:groups=quota.karmada.io,resources=karmadaquotas,verbs=get;list;watch
// +kubebuilder:rbac:groups=quota.karmada.io,resources=karmadaquotas/status,verbs=get;update
// +kubebuilder:rbac:groups=quota.karmada.io,resources=karmadaquotaledgers,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=work.karmada.io,resources=resourcebindings,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Setup registers the quota controller with the manager. It returns the name of what failed, as Kueue's
// SetupControllers does, so the caller's log says which part could not start.
func Setup(ctx context.Context, mgr ctrl.Manager, opts Options) (string, error) {
	return setup(ctx, mgr, opts)
}

func setup(ctx context.Context, mgr ctrl.Manager, opts Options) (string, error) {
	if err := opts.Validate(); err != nil {
		return "options", err
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.EvictionTimeout == 0 {
		opts.EvictionTimeout = DefaultGracefulEvictionTimeout
	}
	metrics.RegisterController()
	recorder := mgr.GetEventRecorderFor(ControllerName)
	st := newState()
	metrics.SetQuotaSource(st)
	// Requested now, on every replica, so that standbys keep a warm cache of the quotas too and export their stored
	// status (metrics.StoredQuota): the leader's own state cannot show that the leader stopped counting.
	quotaInformer, err := mgr.GetCache().GetInformer(ctx, &quotav1alpha1.KarmadaQuota{})
	if err != nil {
		return "quota informer", err
	}
	businessInformer, err := mgr.GetCache().GetInformer(ctx, &quotav1alpha1.KarmadaBusinessQuota{})
	if err != nil {
		return "business quota informer", err
	}
	// Requested now, so that the teams' views are synced before the first recount writes them.
	if _, err := mgr.GetCache().GetInformer(ctx, &quotav1alpha1.AppliedBusinessQuota{}); err != nil {
		return "applied business quota informer", err
	}
	// Requested now, on every replica, so that the cache is synced with them when this replica leads: created by the
	// controller's event sources, they would start only then, and its workers would wait for their first sync, a
	// second at least (the apiserver ends a watch list's initial events with a bookmark, sent on a one-second timer).
	for _, obj := range []client.Object{&quotav1alpha1.KarmadaQuotaLedger{}, &quotav1alpha1.KarmadaBusinessQuotaLedger{},
		quotaio.NamespaceMetadata(), &clusterv1alpha1.Cluster{}} {
		if _, err := mgr.GetCache().GetInformer(ctx, obj); err != nil {
			return fmt.Sprintf("%T informer", obj), err
		}
	}
	metrics.SetStoredQuotaSource(storedQuotas{reader: mgr.GetClient(), informers: []interface{ HasSynced() bool }{quotaInformer, businessInformer}})
	r := &QuotaReconciler{
		client:    mgr.GetClient(),
		apiReader: mgr.GetAPIReader(),
		clock:     opts.Clock,
		recorder:  recorder,
		deleted:   deletedBindings(opts.Clock.Now),
		state:     st,
		requeuer:  &requeuer{client: mgr.GetClient(), clock: opts.Clock, recorder: recorder, cooldown: opts.RequeueCooldown, last: map[types.UID]time.Time{}},
		// Templates are read past the cache: an informer would hold every Deployment of the federation.
		classes:         priorityclass.NewResolver(mgr.GetAPIReader(), priorityclass.DefaultCacheSize),
		written:         lastwrite.NewStore[*quotav1alpha1.KarmadaQuota](),
		writtenBusiness: lastwrite.NewStore[*quotav1alpha1.KarmadaBusinessQuota](),
		writtenLedgers:  lastwrite.NewStore[*quotav1alpha1.KarmadaQuotaLedger](),
		pacer:           newPacer(opts.SettleInterval, opts.StatusInterval, opts.SettleBacklog, opts.Clock.Now),
		statusPacer:     newStatusPacer(opts.StatusInterval, opts.Clock.Now),
		views:           newStatusPacer(opts.ViewInterval, opts.Clock.Now),
		// What bindings' objects hold on members (claims, load balancers) is read past the cache too.
		holdings:        interpreter.NewHeldReader(mgr.GetAPIReader(), interpreter.HeldCacheSize),
		evictionTimeout: opts.EvictionTimeout,
		shrinks:         newShrinks(),
		leftBehind:      newLeftBehind(opts.Clock.Now),
	}

	bindingInformer, err := mgr.GetCache().GetInformer(ctx, &workv1alpha2.ResourceBinding{})
	if err != nil {
		return "binding informer", err
	}
	if r.bindings, err = newCachedBindings(bindingInformer); err != nil {
		return "binding informer", err
	}
	if _, err := bindingInformer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj any) {
			if rb, ok := bindingOf(obj); ok {
				r.deleted.add(rb.UID)
				r.shrinks.forget(rb.UID)
			}
		},
	}); err != nil {
		return "binding informer", err
	}

	resync := make(chan event.TypedGenericEvent[*quotav1alpha1.KarmadaQuota])
	// A Work that asks something new is recounted as a binding change is: paced, with the quotas of its binding's
	// namespace (the Work itself lives in its member's execution namespace).
	workChanged := make(chan event.TypedGenericEvent[client.Object])
	if r.works, err = setupWorks(mgr, func(namespace string) {
		select {
		case workChanged <- event.TypedGenericEvent[client.Object]{Object: &workv1alpha2.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace}}}:
		case <-ctx.Done():
		}
	}, func(uid types.UID) {
		r.deleted.add(uid)
		r.leftBehind.forget(uid)
	}); err != nil {
		return "work view", err
	}
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		return resyncEvery(ctx, mgr.GetClient(), opts.ResyncPeriod, resync)
	})); err != nil {
		return "resync", err
	}
	var leading time.Time
	r.firstPass = newFirstPass(func() {
		if opts.FirstPassDone != nil {
			opts.FirstPassDone()
		}
		metrics.FirstRecountDone(opts.Clock.Since(leading))
	})
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		leading = opts.Clock.Now()
		return r.firstPass.Start(ctx, mgr.GetClient(), mgr.GetCache().WaitForCacheSync)
	})); err != nil {
		return "first pass", err
	}
	if opts.MemberSampleInterval > 0 {
		sampler := members.NewSampler(mgr.GetClient(), mgr.GetConfig(), opts.MemberSampleInterval, func(namespace string) {
			enqueueNamespace(ctx, mgr.GetClient(), namespace, resync)
		})
		if err := mgr.Add(sampler); err != nil {
			return "member sampler", err
		}
		r.members = &memberView{sampler: sampler, grace: opts.MemberGrace, over: map[types.NamespacedName]time.Time{}}
	}

	// A binding's or a Work's change recounts the business quotas of its namespace too.
	business := quotaio.NewBusinessSelection(mgr.GetClient(), nil)
	err = ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(reconcilequeue.Options(opts.Workers)).
		// Spec changes need a recount, and status changed by anyone else is repaired at the next resync. (A webhook
		// of an earlier release, during an upgrade, writes reservations into status: see settleableReservation.)
		For(&quotav1alpha1.KarmadaQuota{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, settleableReservation(r.bindings)))).
		// The webhook writes reservations into the ledger all the time; those need no recount, except one that is
		// settleable the moment it lands (see settleableReservation). A ledger deleted by hand is written again, one
		// edited into an entry no reader can read is recounted (see unreadable).
		Watches(&quotav1alpha1.KarmadaQuotaLedger{}, &handler.EnqueueRequestForObject{},
			builder.WithPredicates(predicate.Or(settleableReservation(r.bindings), deleted(), unreadable()))).
		// A business quota is recounted by the same reconciler: its requests are its name, without a namespace.
		Watches(&quotav1alpha1.KarmadaBusinessQuota{}, &handler.EnqueueRequestForObject{},
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&quotav1alpha1.KarmadaBusinessQuotaLedger{}, &handler.EnqueueRequestForObject{},
			builder.WithPredicates(predicate.Or(settleableReservation(r.bindings), deleted(), unreadable()))).
		// A namespace labelled into a business brings its usage along; one labelled out, or deleted, takes it away.
		Watches(quotaio.NamespaceMetadata(), handler.EnqueueRequestsFromMapFunc(everyBusinessQuota(mgr.GetClient())),
			builder.WithPredicates(namespaceMoved())).
		// Karmada rewrites binding status constantly; only spec changes (placement, replicas), creates and deletes
		// change what a binding uses. A wait for quota starting or ending changes only status, and the count of
		// bindings waiting.
		Watches(&workv1alpha2.ResourceBinding{}, pacedQuotasOf{quotas: mgr.GetClient(), pacer: r.pacer, shrinks: r.shrinks, business: business},
			builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, waitChanged()))).
		WatchesRawSource(source.Channel(resync, &handler.TypedEnqueueRequestForObject[*quotav1alpha1.KarmadaQuota]{})).
		WatchesRawSource(source.Channel(workChanged, handler.EventHandler(pacedQuotasOf{quotas: mgr.GetClient(), pacer: r.pacer, business: business}))).
		// A cluster joining, leaving or relabelled changes which clusters a quota's limits name are joined, and which
		// clusters its groups choose.
		Watches(&clusterv1alpha1.Cluster{}, handler.EnqueueRequestsFromMapFunc(quotasLimitingMembers(mgr.GetClient())),
			builder.WithPredicates(predicate.Or(predicate.LabelChangedPredicate{}, joinedOrLeft()))).
		Complete(r)
	if err != nil {
		return ControllerName, err
	}
	return "", nil
}

// quotasOf maps a binding to every quota of its namespace.
func quotasOf(c client.Client) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		var quotas quotav1alpha1.KarmadaQuotaList
		if err := c.List(ctx, &quotas, client.InNamespace(obj.GetNamespace())); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Listing quotas for a binding event", "namespace", obj.GetNamespace())
			return nil
		}
		requests := make([]reconcile.Request, len(quotas.Items))
		for i := range quotas.Items {
			requests[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&quotas.Items[i])}
		}
		return requests
	}
}

// enqueueNamespace enqueues every quota of a namespace.
func enqueueNamespace(ctx context.Context, c client.Client, namespace string, out chan<- event.TypedGenericEvent[*quotav1alpha1.KarmadaQuota]) {
	var quotas quotav1alpha1.KarmadaQuotaList
	if err := c.List(ctx, &quotas, client.InNamespace(namespace)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the quotas of a namespace whose members changed", "namespace", namespace)
		return
	}
	for i := range quotas.Items {
		select {
		case out <- event.TypedGenericEvent[*quotav1alpha1.KarmadaQuota]{Object: &quotas.Items[i]}:
		case <-ctx.Done():
			return
		}
	}
}

// resyncEvery enqueues every quota each period: a full recount repairs what events missed.
func resyncEvery(ctx context.Context, c client.Client, period time.Duration, out chan<- event.TypedGenericEvent[*quotav1alpha1.KarmadaQuota]) error {
	ticker := time.NewTicker(period)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
		all, err := listQuotas(ctx, c)
		if err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Listing quotas for the resync")
			continue
		}
		for _, q := range all {
			select {
			case out <- event.TypedGenericEvent[*quotav1alpha1.KarmadaQuota]{Object: q}:
			case <-ctx.Done():
				return nil
			}
		}
	}
}

// listQuotas lists every quota of both kinds, a business quota as the KarmadaQuota it is read as: its key, which
// the reconciler is asked for, has no namespace.
func listQuotas(ctx context.Context, c client.Reader, opts ...client.ListOption) ([]*quotav1alpha1.KarmadaQuota, error) {
	var quotas quotav1alpha1.KarmadaQuotaList
	if err := c.List(ctx, &quotas, opts...); err != nil {
		return nil, fmt.Errorf("listing quotas: %w", err)
	}
	var business quotav1alpha1.KarmadaBusinessQuotaList
	if err := c.List(ctx, &business, opts...); err != nil {
		return nil, fmt.Errorf("listing business quotas: %w", err)
	}
	all := make([]*quotav1alpha1.KarmadaQuota, 0, len(quotas.Items)+len(business.Items))
	for i := range quotas.Items {
		all = append(all, &quotas.Items[i])
	}
	for i := range business.Items {
		all = append(all, business.Items[i].AsKarmadaQuota())
	}
	return all, nil
}

// setupWorks starts, with the manager, Karmada's resource interpreter and the view of the Works read with it.
func setupWorks(mgr ctrl.Manager, changed func(namespace string), deleted func(types.UID)) (*workView, error) {
	workloads, err := interpreter.New(mgr.GetConfig())
	if err != nil {
		return nil, fmt.Errorf("creating Karmada's resource interpreter: %w", err)
	}
	if err := mgr.Add(workloads); err != nil {
		return nil, err
	}
	// A Work per binding and member: the Works are read on kindjson's serializer, as the bindings are (CacheOptions).
	clients := kindjson.Clients{Config: mgr.GetConfig(), HTTP: mgr.GetHTTPClient(), Mapper: mgr.GetRESTMapper()}
	lw, err := clients.ListWatch(mgr.GetScheme(), &workv1alpha1.Work{})
	if err != nil {
		return nil, err
	}
	view, err := newWorkView(lw, workloads, members.NewNodes(mgr.GetConfig(), members.NodesMaxAge), changed, deleted)
	if err != nil {
		return nil, err
	}
	return view, mgr.Add(view)
}
