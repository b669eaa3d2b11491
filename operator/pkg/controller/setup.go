package controller

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	operatorv1alpha1 "github.com/karmada-quota/karmada-quota/operator/api/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/metrics"
	"github.com/karmada-quota/karmada-quota/pkg/util/reconcilequeue"
)

// ControllerName names the operator's controller in logs, events and metrics.
const ControllerName = "karmada-quota-operator"

// What the operator needs in the host cluster; `make generate` writes it into the operator's chart.
// +kubebuilder:rbac:groups=operator.quota.karmada.io,resources=karmadaquotainstallations,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=operator.quota.karmada.io,resources=karmadaquotainstallations/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=operator.quota.karmada.io,resources=karmadaquotainstallations/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=services;serviceaccounts;configmaps,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles;rolebindings,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=monitoring.coreos.com,resources=servicemonitors;prometheusrules,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=cert-manager.io,resources=certificates;issuers,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Options configure the operator's controller.
type Options struct {
	// Version is the karmada-quota version installed when an installation names none.
	Version string
	// Workers is how many installations are reconciled at once.
	Workers int
}

// CacheOptions are the manager's cache options the operator needs: only karmada-quota's own objects (a host
// cluster holds far more Secrets, ConfigMaps and Deployments than the operator has any business caching), and
// every installation. The operator's binary and its tests build their manager with them.
func CacheOptions() cache.Options {
	return cache.Options{
		DefaultLabelSelector: labels.SelectorFromSet(labels.Set{partOfLabel: partOf}),
		ByObject: map[client.Object]cache.ByObject{
			&operatorv1alpha1.KarmadaQuotaInstallation{}: {Label: labels.Everything()},
		},
	}
}

// Setup registers the operator's controller with the manager. It returns the name of what failed.
func Setup(mgr ctrl.Manager, opts Options) (string, error) {
	metrics.RegisterOperator()
	direct, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return "client", err
	}
	karmadas := newConnections()
	if err := mgr.Add(karmadas); err != nil {
		return "karmada connections", err
	}
	r := &Reconciler{
		Client: mgr.GetClient(), Direct: direct, Recorder: mgr.GetEventRecorderFor(ControllerName),
		Version: opts.Version, karmadas: karmadas,
	}
	// What the installation owns in the host: the chart's objects carry an owner reference; the Secrets the
	// install phases and quota-controller write carry the instance label instead.
	byInstance := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []reconcile.Request {
		name, ok := obj.GetLabels()[instanceLabel]
		if !ok || obj.GetLabels()[partOfLabel] != partOf {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}}}
	})
	c, err := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(reconcilequeue.Options(max(opts.Workers, 1))).
		For(&operatorv1alpha1.KarmadaQuotaInstallation{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, deletionStarted()))).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{}).
		Owns(&corev1.ServiceAccount{}).
		Owns(&corev1.ConfigMap{}).
		Owns(&rbacv1.Role{}).
		Owns(&rbacv1.RoleBinding{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Watches(&corev1.Secret{}, byInstance).
		Build(r)
	if err != nil {
		return ControllerName, err
	}
	karmadas.watch = c.Watch
	return "", nil
}

// deletionStarted lets the deletion of an installation through, which changes no generation.
func deletionStarted() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return !e.ObjectNew.GetDeletionTimestamp().IsZero()
	}}
}
