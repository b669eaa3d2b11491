// Package discovery keeps, in the karmada-apiserver, the Services by which karmada-scheduler finds a scheduler
// estimator for each member cluster: one Service per Cluster, named <prefix>-<cluster> in the estimator namespace,
// of type ExternalName, pointing at the webhook's estimator (pkg/estimator). karmada-scheduler v1.18.2 resolves
// such a Service itself (pkg/estimator/client, resolveCluster): the ExternalName, and the int target port of the
// Service port numbered --scheduler-estimator-port. A Cluster that joins gets its Service, one that leaves loses it;
// Services of a prefix no longer configured are removed. A Service of that name that karmada-quota did not create
// (a karmada-scheduler-estimator's, under the same prefix) is never touched.
package discovery

import (
	"context"
	"errors"
	"fmt"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	"github.com/karmada-io/karmada/pkg/util/names"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/karmada-quota/karmada-quota/pkg/util/reconcilequeue"
)

// What the controller needs in the karmada-apiserver to keep the Services; `make generate` writes it into the chart.
// The namespace is karmada-scheduler's default --scheduler-estimator-service-namespace; an install that moves it
// grants the same there.
// +kubebuilder:rbac:groups="",namespace=karmada-system,resources=services,verbs=get;list;watch;create;update;delete

const (
	// ClusterLabel names, on a Service this package keeps, the member cluster it serves.
	ClusterLabel = "quota.karmada.io/estimator-for-cluster"
	// managedBy marks the Services this package keeps: the only ones it reads, changes or deletes.
	managedBy      = "karmada-quota-controller"
	managedByLabel = "app.kubernetes.io/managed-by"
	portName       = "estimator"
)

// Lookup is where karmada-scheduler looks for a member cluster's estimator: the Service <Prefix>-<cluster> in
// Namespace of the karmada-apiserver, at its port Port (its --scheduler-estimator-service-namespace, -prefix and
// -port). The Services this package keeps are found so, and so are the members' own karmada-scheduler-estimators
// that karmada-quota's estimator asks too (estimator.Upstream).
type Lookup struct {
	Namespace, Prefix string
	Port              int32
}

// ServiceName is the Service karmada-scheduler looks up for cluster.
func (l Lookup) ServiceName(cluster string) string {
	return names.GenerateEstimatorServiceName(l.Prefix, cluster)
}

// Options say where karmada-scheduler looks for estimators and where ours serves.
type Options struct {
	// Scheduler is where karmada-scheduler looks for estimators: the Services kept are named and numbered so.
	Scheduler Lookup
	// Host and Port are where the estimator serves, as karmada-scheduler reaches it (the webhook Service's DNS name
	// in the host cluster, and its estimator port).
	Host string
	Port int32
}

// Validate reports every invalid option at once.
func (o Options) Validate() error {
	var errs []error
	for _, msg := range validation.IsDNS1123Label(o.Scheduler.Namespace) {
		errs = append(errs, fmt.Errorf("the estimator Service namespace %q: %s", o.Scheduler.Namespace, msg))
	}
	if o.Scheduler.Prefix == "" {
		errs = append(errs, errors.New("the estimator Service prefix must be set"))
	}
	for _, msg := range validation.IsDNS1123Subdomain(o.Host) {
		errs = append(errs, fmt.Errorf("the estimator host %q: %s", o.Host, msg))
	}
	for _, port := range []int32{o.Scheduler.Port, o.Port} {
		for _, msg := range validation.IsValidPortNum(int(port)) {
			errs = append(errs, fmt.Errorf("estimator port %d: %s", port, msg))
		}
	}
	return errors.Join(errs...)
}

// CacheOptions are what the manager's cache must be built with: of Services, only the estimator namespace's that
// this package keeps.
func CacheOptions(o Options) cache.ByObject {
	return cache.ByObject{
		Namespaces: map[string]cache.Config{o.Scheduler.Namespace: {}},
		Label:      labels.SelectorFromSet(labels.Set{managedByLabel: managedBy}),
	}
}

// Reconciler keeps one cluster's Service.
type Reconciler struct {
	client client.Client
	// apiReader reads past the cache, which sees only our Services.
	apiReader client.Reader
	opts      Options
}

// Setup registers the reconciler with the manager (leader-elected, like every writer of the controller).
func Setup(mgr ctrl.Manager, opts Options) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	r := &Reconciler{client: mgr.GetClient(), apiReader: mgr.GetAPIReader(), opts: opts}
	return ctrl.NewControllerManagedBy(mgr).
		Named("estimator-services").
		WithOptions(reconcilequeue.Options(1)).
		// A Cluster's status changes every few seconds; only its coming and going matter here.
		For(&clusterv1alpha1.Cluster{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// A Service deleted or changed by hand is put back.
		Watches(&corev1.Service{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []reconcile.Request {
			if cluster := obj.GetLabels()[ClusterLabel]; cluster != "" {
				return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: cluster}}}
			}
			return nil
		})).
		Complete(r)
}

// Reconcile makes the Services kept for req's cluster what the options say: the one Service while the Cluster
// exists, none once it is gone; any other of ours labelled for it (an earlier prefix) is removed.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	var cluster clusterv1alpha1.Cluster
	err := r.client.Get(ctx, req.NamespacedName, &cluster)
	if err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	joined := err == nil && cluster.DeletionTimestamp == nil
	name := r.opts.Scheduler.ServiceName(req.Name)

	var ours corev1.ServiceList
	if err := r.client.List(ctx, &ours, client.InNamespace(r.opts.Scheduler.Namespace), client.MatchingLabels{ClusterLabel: req.Name, managedByLabel: managedBy}); err != nil {
		return reconcile.Result{}, err
	}
	var current *corev1.Service
	for i := range ours.Items {
		svc := &ours.Items[i]
		if joined && svc.Name == name {
			current = svc
			continue
		}
		if err := r.client.Delete(ctx, svc, client.Preconditions{UID: &svc.UID}); client.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, fmt.Errorf("deleting estimator Service %s/%s: %w", svc.Namespace, svc.Name, err)
		}
		log.Info("Deleted an estimator Service", "service", client.ObjectKeyFromObject(svc))
	}
	if !joined {
		return reconcile.Result{}, nil
	}
	if msgs := validation.IsDNS1035Label(name); len(msgs) > 0 {
		// karmada-scheduler looks for this name all the same and finds nothing: it schedules the cluster without
		// our estimator. Nothing a retry could fix; the log says why.
		log.Error(errors.New(msgs[0]), "No estimator Service for this cluster: its name is not a valid Service name", "service", name)
		return reconcile.Result{}, nil
	}
	desired := r.service(&cluster, name)
	if current == nil {
		err := r.client.Create(ctx, desired)
		if apierrors.IsAlreadyExists(err) {
			return r.exists(ctx, desired)
		}
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("creating estimator Service %s/%s: %w", desired.Namespace, name, err)
		}
		log.Info("Created an estimator Service", "service", client.ObjectKeyFromObject(desired), "externalName", desired.Spec.ExternalName)
		return reconcile.Result{}, nil
	}
	if equality.Semantic.DeepEqual(current.Spec.ExternalName, desired.Spec.ExternalName) &&
		equality.Semantic.DeepEqual(current.Spec.Ports, desired.Spec.Ports) && current.Spec.Type == desired.Spec.Type &&
		equality.Semantic.DeepEqual(current.OwnerReferences, desired.OwnerReferences) {
		return reconcile.Result{}, nil
	}
	updated := current.DeepCopy()
	updated.Spec.Type, updated.Spec.ExternalName, updated.Spec.Ports = desired.Spec.Type, desired.Spec.ExternalName, desired.Spec.Ports
	updated.OwnerReferences = desired.OwnerReferences
	if err := r.client.Update(ctx, updated); err != nil {
		return reconcile.Result{}, fmt.Errorf("updating estimator Service %s/%s: %w", updated.Namespace, name, err)
	}
	log.Info("Updated an estimator Service", "service", client.ObjectKeyFromObject(updated), "externalName", desired.Spec.ExternalName)
	return reconcile.Result{}, nil
}

// exists handles a Service of the desired name the cache did not show: ours, created a moment ago and not yet seen
// (retried once the cache has it), or someone else's, likely a karmada-scheduler-estimator's under the same prefix
// (left alone).
func (r *Reconciler) exists(ctx context.Context, desired *corev1.Service) (reconcile.Result, error) {
	var found corev1.Service
	if err := r.apiReader.Get(ctx, client.ObjectKeyFromObject(desired), &found); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if found.Labels[managedByLabel] == managedBy {
		return reconcile.Result{Requeue: true}, nil
	}
	ctrl.LoggerFrom(ctx).Error(nil, "Not replacing a Service karmada-quota did not create: choose another --estimator-service-prefix",
		"service", client.ObjectKeyFromObject(desired))
	return reconcile.Result{}, nil
}

// service is the Service for cluster. It is owned by the Cluster, so that the karmada-apiserver's garbage collector
// removes it too should the controller be down when the cluster leaves.
func (r *Reconciler) service(cluster *clusterv1alpha1.Cluster, name string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: r.opts.Scheduler.Namespace,
			Labels: map[string]string{ClusterLabel: cluster.Name, managedByLabel: managedBy},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: clusterv1alpha1.SchemeGroupVersion.String(), Kind: "Cluster", Name: cluster.Name, UID: cluster.UID,
				BlockOwnerDeletion: ptr.To(false),
			}},
		},
		Spec: corev1.ServiceSpec{
			Type:         corev1.ServiceTypeExternalName,
			ExternalName: r.opts.Host,
			Ports: []corev1.ServicePort{{
				Name: portName, Protocol: corev1.ProtocolTCP, Port: r.opts.Scheduler.Port, TargetPort: intstr.FromInt32(r.opts.Port),
			}},
		},
	}
}
