// Package controller is the operator's reconciler: it makes a KarmadaQuotaInstallation's karmada-quota match its
// spec in both planes, from the same chart `helm install` uses, keeps it so, and uninstalls it in an order that
// never leaves a webhook configuration without a backend.
package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	operatorv1alpha1 "github.com/karmada-quota/karmada-quota/operator/api/v1alpha1"
	"github.com/karmada-quota/karmada-quota/operator/pkg/install"
	"github.com/karmada-quota/karmada-quota/operator/pkg/render"
	"github.com/karmada-quota/karmada-quota/pkg/metrics"
)

const (
	// finalizer keeps an installation until its webhook configuration is out of the karmada-apiserver.
	finalizer = "operator.quota.karmada.io/uninstall"

	instanceLabel  = "app.kubernetes.io/instance"
	partOfLabel    = "app.kubernetes.io/part-of"
	partOf         = "karmada-quota"
	managedByLabel = "app.kubernetes.io/managed-by"
	// managedBy marks the host objects the operator applies; the chart's own say Helm.
	managedBy = "karmada-quota-operator"

	// waitPoll is how often a rollout is looked at again: Deployment status changes requeue the installation
	// anyway, this only bounds a missed event.
	waitPoll = 5 * time.Second
)

// Condition reasons.
const (
	ReasonInstalled          = "Installed"
	ReasonRollingOut         = "RollingOut"
	ReasonRegistering        = "Registering"
	ReasonComplete           = "Complete"
	ReasonAsExpected         = "AsExpected"
	ReasonSuspended          = "Suspended"
	ReasonInvalidSpec        = "InvalidSpec"
	ReasonKubeconfigNotFound = "KubeconfigSecretNotFound"
	ReasonInstallFailed      = "InstallFailed"
	// ReasonHostAPIMissing: the spec asks for an object of an API the host cluster does not serve.
	ReasonHostAPIMissing = "HostAPIMissing"
	ReasonUninstalling   = "Uninstalling"
)

// Event reasons.
const (
	EventDriftRepaired = "DriftRepaired"
	EventInstalled     = "Installed"
	EventUninstalled   = "Uninstalled"
)

// Reconciler reconciles KarmadaQuotaInstallations.
type Reconciler struct {
	// Client reads through the manager's cache; Direct reads and writes the apiserver itself, so that an apply
	// knows whether it changed what is there now.
	Client, Direct client.Client
	Recorder       record.EventRecorder
	// Version is the karmada-quota version installed when the spec names none: the operator's own.
	Version  string
	karmadas *connections
}

// component is one of karmada-quota's Deployments, in the order an upgrade rolls them out.
type component struct{ name, deployment string }

func components(config install.Config) []component {
	// The controller first: the CRD is already upgraded, and a new controller may write what the new webhook
	// reads. The webhook then, one replica at a time; its registration last.
	return []component{{"controller", config.Controller.Deployment}, {"webhook", config.Webhook.Deployment}}
}

// Reconcile makes one installation match its spec.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	// Read from the apiserver, not the cache: the status written at the end is a patch of what this read
	// returned, and from a cache that has not yet seen the previous reconcile's status write, a status equal to
	// the stale copy would not be written at all, leaving the previous one (say, RollingOut after the rollout
	// completed) in place with nothing left to trigger another reconcile.
	var inst operatorv1alpha1.KarmadaQuotaInstallation
	if err := r.Direct.Get(ctx, req.NamespacedName, &inst); err != nil {
		if apierrors.IsNotFound(err) {
			r.karmadas.drop(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !inst.DeletionTimestamp.IsZero() {
		return r.uninstall(ctx, &inst)
	}
	original := inst.DeepCopy()
	st := newStatus(&inst)
	result, err := r.reconcile(ctx, &inst, st)
	if statusErr := r.writeStatus(ctx, original, &inst, st); statusErr != nil && err == nil {
		err = statusErr
	}
	return result, err
}

func (r *Reconciler) reconcile(ctx context.Context, inst *operatorv1alpha1.KarmadaQuotaInstallation, st *status) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	if inst.Spec.Suspend {
		st.suspended()
		return ctrl.Result{}, nil
	}
	if errs := validate(&inst.Spec); len(errs) > 0 {
		st.invalid(errs.ToAggregate().Error())
		r.Recorder.Event(inst, corev1.EventTypeWarning, ReasonInvalidSpec, errs.ToAggregate().Error())
		return ctrl.Result{}, nil
	}
	plan, err := r.plan(inst)
	if err != nil {
		st.invalid(err.Error())
		r.Recorder.Event(inst, corev1.EventTypeWarning, ReasonInvalidSpec, err.Error())
		return ctrl.Result{}, nil
	}
	installer, err := r.installer(ctx, inst, plan)
	if err != nil {
		return r.degraded(ctx, inst, st, err)
	}
	// The finalizer goes on once the operator reaches the Karmada, before it changes anything there: an
	// installation that never got this far installed nothing, and deleting it must not wait on a Karmada the
	// operator cannot reach (a kubeconfig Secret never created, a wrong server).
	if controllerutil.AddFinalizer(inst, finalizer) {
		if err := r.Client.Update(ctx, inst); err != nil {
			return ctrl.Result{}, err
		}
	}
	// Whether a change an apply made is someone else's edit being undone, or the spec moving on: only once this
	// generation was installed completely, as Ready's observedGeneration says (Ready keeps the generation it was
	// set for while a later one rolls out). status.observedGeneration would not do: the first reconcile of a new
	// spec sets it, and the rest of the upgrade's rollout was then reported as drift repaired.
	ready := meta.FindStatusCondition(inst.Status.Conditions, operatorv1alpha1.ConditionReady)
	specSettled := ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == inst.Generation
	installer.Observe = func(inKarmada bool, obj *unstructured.Unstructured, change install.Change) {
		r.observed(ctx, inst, specSettled, inKarmada, obj, change)
	}

	// The CRD first, then RBAC and identities, then the certificates, all before any pod changes.
	if err := installer.Prepare(ctx); err != nil {
		return r.degraded(ctx, inst, st, &karmadaError{Reason: ReasonInstallFailed, Err: err})
	}
	deployments := map[string]*unstructured.Unstructured{}
	for _, obj := range plan.Host {
		if obj.GetKind() == "Deployment" {
			deployments[obj.GetName()] = obj
			continue
		}
		if err := r.applyHost(ctx, inst, obj, specSettled); err != nil {
			return r.degraded(ctx, inst, st, err)
		}
	}
	for _, c := range components(plan.Config) {
		obj, ok := deployments[c.deployment]
		if !ok {
			return r.degraded(ctx, inst, st, &karmadaError{Reason: ReasonInstallFailed, Err: fmt.Errorf("the chart rendered no Deployment %s", c.deployment)})
		}
		if err := r.applyHost(ctx, inst, obj, specSettled); err != nil {
			return r.degraded(ctx, inst, st, err)
		}
		d, err := r.componentStatus(ctx, inst, c, st)
		if err != nil {
			return ctrl.Result{}, err
		}
		if done, why := install.RolledOut(d); !done {
			st.progressing(ReasonRollingOut, fmt.Sprintf("%s: %s", c.name, why))
			return ctrl.Result{RequeueAfter: waitPoll}, nil
		}
	}
	registered, err := installer.RegisterIfReady(ctx)
	if err != nil {
		return r.degraded(ctx, inst, st, &karmadaError{Reason: ReasonInstallFailed, Err: err})
	}
	if !registered {
		st.progressing(ReasonRegistering, "waiting for the webhook's CA bundle")
		return ctrl.Result{RequeueAfter: waitPoll}, nil
	}
	if err := r.prune(ctx, inst, plan); err != nil {
		return r.degraded(ctx, inst, st, &karmadaError{Reason: ReasonInstallFailed, Err: err})
	}
	if !meta.IsStatusConditionTrue(inst.Status.Conditions, operatorv1alpha1.ConditionReady) || inst.Status.Version != plan.Version {
		r.Recorder.Eventf(inst, corev1.EventTypeNormal, EventInstalled, "karmada-quota %s serves the karmada-apiserver at %s", plan.Version, installer.KarmadaCluster.Server)
		log.Info("Installation complete", "version", plan.Version)
	}
	st.installed(plan.Version)
	return ctrl.Result{}, nil
}

// plan is the chart rendered for an installation.
type plan struct {
	*render.Installation
	Version string
}

func (r *Reconciler) plan(inst *operatorv1alpha1.KarmadaQuotaInstallation) (*plan, error) {
	vals, err := values(inst, r.Version)
	if err != nil {
		return nil, err
	}
	rendered, err := render.Render(inst.Name, inst.Namespace, vals)
	if err != nil {
		return nil, err
	}
	return &plan{Installation: rendered, Version: defaulted(inst.Spec.Version, r.Version)}, nil
}

// installer connects to the installation's karmada-apiserver and returns the install phases for it.
func (r *Reconciler) installer(ctx context.Context, inst *operatorv1alpha1.KarmadaQuotaInstallation, p *plan) (*install.Installer, error) {
	ref := inst.Spec.Karmada.KubeconfigSecretRef
	var secret corev1.Secret
	if err := r.Direct.Get(ctx, types.NamespacedName{Namespace: inst.Namespace, Name: ref.Name}, &secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &karmadaError{Reason: ReasonKubeconfigNotFound, Err: fmt.Errorf("Secret %s/%s does not exist", inst.Namespace, ref.Name)}
		}
		return nil, err
	}
	key := defaulted(ref.Key, "kubeconfig")
	kubeconfig, ok := secret.Data[key]
	if !ok {
		return nil, &karmadaError{Reason: ReasonKubeconfigNotFound, Err: fmt.Errorf("Secret %s/%s has no key %q", inst.Namespace, ref.Name, key)}
	}
	access, err := r.karmadas.connect(ctx, client.ObjectKeyFromObject(inst), kubeconfig, p.Config.Karmada.Namespace)
	if err != nil {
		return nil, err
	}
	certificates, err := install.CertificatesFor(p.Config, r.Direct, access.Client)
	if err != nil {
		return nil, &karmadaError{Reason: ReasonInvalidSpec, Err: err}
	}
	return &install.Installer{
		Host: r.Direct, Karmada: access.Client, KarmadaCluster: access.Cluster,
		Config: p.Config, Objects: p.Karmada, Certificates: certificates,
		Log: ctrl.LoggerFrom(ctx),
	}, nil
}

// applyHost applies a host object as the installation's: owned by it (so that its changes requeue the
// installation and its deletion takes the object along), labelled as the operator's.
func (r *Reconciler) applyHost(ctx context.Context, inst *operatorv1alpha1.KarmadaQuotaInstallation, obj *unstructured.Unstructured, specSettled bool) error {
	obj = obj.DeepCopy()
	obj.SetNamespace(inst.Namespace)
	markManaged(obj)
	if template, found, _ := unstructured.NestedMap(obj.Object, "spec", "template", "metadata", "labels"); found {
		template[managedByLabel] = managedBy
		_ = unstructured.SetNestedMap(obj.Object, template, "spec", "template", "metadata", "labels")
	}
	obj.SetOwnerReferences([]metav1.OwnerReference{*metav1.NewControllerRef(inst, operatorv1alpha1.GroupVersion.WithKind("KarmadaQuotaInstallation"))})
	change, err := install.Apply(ctx, r.Direct, obj)
	if err != nil {
		if meta.IsNoMatchError(err) {
			// Its own reason: InstallFailed would hide that the fix is the admin's (a missing CRD, such as the
			// Prometheus Operator's for monitoring), not a retry.
			return &karmadaError{Reason: ReasonHostAPIMissing, Err: fmt.Errorf("%s %s: the host cluster does not serve %s; install its CRDs or turn the option off",
				obj.GetKind(), obj.GetName(), obj.GroupVersionKind().GroupKind())}
		}
		return err
	}
	r.observed(ctx, inst, specSettled, false, obj, change)
	return nil
}

func markManaged(obj *unstructured.Unstructured) {
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[managedByLabel] = managedBy
	obj.SetLabels(labels)
}

// observed reports an object an apply created or changed while the spec stood still: someone else's edit or
// deletion, undone.
func (r *Reconciler) observed(ctx context.Context, inst *operatorv1alpha1.KarmadaQuotaInstallation, specSettled, inKarmada bool, obj *unstructured.Unstructured, change install.Change) {
	if !specSettled || change == install.Unchanged || !meta.IsStatusConditionTrue(inst.Status.Conditions, operatorv1alpha1.ConditionReady) {
		return
	}
	plane := "host"
	if inKarmada {
		plane = "karmada"
	}
	what := "restored the edited"
	if change == install.Created {
		what = "recreated the deleted"
	}
	metrics.OperatorDriftRepaired.WithLabelValues(plane, obj.GetKind()).Inc()
	r.Recorder.Eventf(inst, corev1.EventTypeWarning, EventDriftRepaired, "%s %s %s in the %s", what, obj.GetKind(), objectName(obj), planeName(inKarmada))
	ctrl.LoggerFrom(ctx).Info("Drift repaired", "plane", plane, "kind", obj.GetKind(), "object", objectName(obj), "change", what)
}

func planeName(inKarmada bool) string {
	if inKarmada {
		return "karmada-apiserver"
	}
	return "host cluster"
}

func objectName(obj client.Object) string {
	if obj.GetNamespace() == "" {
		return obj.GetName()
	}
	return obj.GetNamespace() + "/" + obj.GetName()
}

// componentStatus reads a component's Deployment into the status.
func (r *Reconciler) componentStatus(ctx context.Context, inst *operatorv1alpha1.KarmadaQuotaInstallation, c component, st *status) (*appsv1.Deployment, error) {
	var d appsv1.Deployment
	if err := r.Direct.Get(ctx, types.NamespacedName{Namespace: inst.Namespace, Name: c.deployment}, &d); err != nil {
		return nil, err
	}
	done, _ := install.RolledOut(&d)
	image := ""
	if len(d.Spec.Template.Spec.Containers) > 0 {
		image = d.Spec.Template.Spec.Containers[0].Image
	}
	st.component(operatorv1alpha1.ComponentStatus{
		Name: c.name, Image: image, Replicas: ptr.Deref(d.Spec.Replicas, 1),
		UpdatedReplicas: d.Status.UpdatedReplicas, ReadyReplicas: d.Status.ReadyReplicas, Ready: done,
	})
	return &d, nil
}

// hostKinds are the kinds of host objects the chart renders, for pruning the ones it no longer renders.
var hostKinds = []schema.GroupVersionKind{
	{Group: "apps", Version: "v1", Kind: "Deployment"},
	{Version: "v1", Kind: "Service"},
	{Version: "v1", Kind: "ServiceAccount"},
	{Version: "v1", Kind: "ConfigMap"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"},
	{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget"},
	{Group: "monitoring.coreos.com", Version: "v1", Kind: "ServiceMonitor"},
	{Group: "monitoring.coreos.com", Version: "v1", Kind: "PrometheusRule"},
	{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"},
	{Group: "cert-manager.io", Version: "v1", Kind: "Issuer"},
}

// prune deletes the host objects the installation owns but the chart no longer renders (a monitoring object
// turned off). Prepare prunes the karmada-apiserver's (the business roles turned off), for the chart and the
// operator alike.
func (r *Reconciler) prune(ctx context.Context, inst *operatorv1alpha1.KarmadaQuotaInstallation, p *plan) error {
	wanted := map[string]bool{}
	key := func(gvk schema.GroupVersionKind, namespace, name string) string {
		return gvk.GroupKind().String() + "/" + namespace + "/" + name
	}
	for _, obj := range p.Host {
		wanted[key(obj.GroupVersionKind(), inst.Namespace, obj.GetName())] = true
	}
	var errs []error
	sweep := func(c client.Client, kinds []schema.GroupVersionKind, opts ...client.ListOption) {
		for _, gvk := range kinds {
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
			if err := c.List(ctx, list, opts...); err != nil {
				if !meta.IsNoMatchError(err) {
					errs = append(errs, err)
				}
				continue
			}
			for i := range list.Items {
				obj := &list.Items[i]
				if wanted[key(gvk, obj.GetNamespace(), obj.GetName())] {
					continue
				}
				ctrl.LoggerFrom(ctx).Info("Removing what the spec no longer asks for", "kind", gvk.Kind, "object", objectName(obj))
				errs = append(errs, client.IgnoreNotFound(c.Delete(ctx, obj)))
			}
		}
	}
	sweep(r.Direct, hostKinds, client.InNamespace(inst.Namespace),
		client.MatchingLabels{instanceLabel: inst.Name, partOfLabel: partOf, managedByLabel: managedBy})
	return errors.Join(errs...)
}

// retryDegraded is how soon a degraded installation is tried again. Its causes (a Secret not there yet, a
// karmada-apiserver down, rights being granted) produce no event the operator watches, and the workqueue's
// back-off would grow to a quarter of an hour.
const retryDegraded = 15 * time.Second

// degraded records why the operator cannot proceed, and tries again soon; an invalid spec waits for a new one.
func (r *Reconciler) degraded(ctx context.Context, inst *operatorv1alpha1.KarmadaQuotaInstallation, st *status, err error) (ctrl.Result, error) {
	reason := ReasonInstallFailed
	var ke *karmadaError
	if errors.As(err, &ke) {
		reason = ke.Reason
	}
	st.degraded(reason, err.Error())
	r.Recorder.Event(inst, corev1.EventTypeWarning, reason, err.Error())
	ctrl.LoggerFrom(ctx).Error(err, "Installation degraded", "installation", klog.KObj(inst), "reason", reason)
	if reason == ReasonInvalidSpec {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{RequeueAfter: retryDegraded}, nil
}

// uninstall removes the installation: the webhook configuration first, so that the karmada-apiserver stops
// calling the webhook before any replica goes; the components next; the karmada-apiserver's objects last. The
// CRD and the quotas stay unless the spec opts in to removing them.
func (r *Reconciler) uninstall(ctx context.Context, inst *operatorv1alpha1.KarmadaQuotaInstallation) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(inst, finalizer) {
		return ctrl.Result{}, nil
	}
	log := ctrl.LoggerFrom(ctx)
	original := inst.DeepCopy()
	st := newStatus(inst)
	st.progressing(ReasonUninstalling, "unregistering the webhook, then removing the components")
	fail := func(err error) (ctrl.Result, error) {
		result, _ := r.degraded(ctx, inst, st, err)
		return result, r.writeStatus(ctx, original, inst, st)
	}
	// The names only depend on the installation's name and namespace: a spec that no longer validates still
	// renders them with the chart's defaults.
	p, err := r.plan(inst)
	if err != nil {
		bare := inst.DeepCopy()
		bare.Spec = operatorv1alpha1.KarmadaQuotaInstallationSpec{Karmada: inst.Spec.Karmada, Uninstall: inst.Spec.Uninstall}
		if p, err = r.plan(bare); err != nil {
			return fail(err)
		}
	}
	installer, err := r.installer(ctx, inst, p)
	if err != nil {
		return fail(err)
	}
	if err := installer.Unregister(ctx); err != nil {
		return fail(err)
	}
	for _, gvk := range hostKinds {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := r.Direct.List(ctx, list, client.InNamespace(inst.Namespace),
			client.MatchingLabels{instanceLabel: inst.Name, partOfLabel: partOf, managedByLabel: managedBy}); err != nil {
			if meta.IsNoMatchError(err) {
				continue
			}
			return fail(err)
		}
		for i := range list.Items {
			if err := client.IgnoreNotFound(r.Direct.Delete(ctx, &list.Items[i], client.PropagationPolicy(metav1.DeletePropagationBackground))); err != nil {
				return fail(err)
			}
		}
	}
	if err := installer.Cleanup(ctx); err != nil {
		return fail(err)
	}
	r.karmadas.drop(client.ObjectKeyFromObject(inst))
	r.Recorder.Eventf(inst, corev1.EventTypeNormal, EventUninstalled, "karmada-quota removed from the karmada-apiserver at %s (CRD removed: %t)",
		installer.KarmadaCluster.Server, inst.Spec.Uninstall.RemoveCRD)
	log.Info("Uninstalled", "installation", klog.KObj(inst))
	controllerutil.RemoveFinalizer(inst, finalizer)
	// NotFound: a reconcile that read a stale cache uninstalled a second time, after the first removed the
	// finalizer; there is nothing left to do.
	return ctrl.Result{}, client.IgnoreNotFound(r.Client.Update(ctx, inst))
}
