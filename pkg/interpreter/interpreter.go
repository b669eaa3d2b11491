// Package interpreter reads what a workload asks of its replicas, in any kind Karmada can propagate, with Karmada's
// own resource interpreter: the native kinds, the customizations Karmada ships for popular CRDs, and every
// ResourceInterpreterCustomization (Lua) and ResourceInterpreterWebhookConfiguration of the control plane. It
// reads a workload exactly as Karmada's detector does when it builds the binding, so what the webhooks compare
// (a resource template, a Work's manifest) is read the way the binding that was admitted was written.
package interpreter

import (
	"context"
	"errors"
	"fmt"
	"time"

	configv1alpha1 "github.com/karmada-io/karmada/pkg/apis/config/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"github.com/karmada-io/karmada/pkg/resourceinterpreter"
	"github.com/karmada-io/karmada/pkg/util/fedinformer/genericmanager"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
)

// What the interpreter watches and reads in the karmada-apiserver: the customizations, and the Services an
// interpreter webhook may be reached through.
// +kubebuilder:rbac:groups=config.karmada.io,resources=resourceinterpretercustomizations;resourceinterpreterwebhookconfigurations,verbs=list;watch
// +kubebuilder:rbac:groups="",resources=services,verbs=get

// Workload is what one object asks of its replicas.
type Workload struct {
	// Replicas and Requirements describe a single-template workload: Replicas at Requirements each.
	Replicas     int32
	Requirements *workv1alpha2.ReplicaRequirements
	// Components describe a multi-template workload (one entry per pod template), when Karmada can read them.
	Components []workv1alpha2.Component
}

// Interpreter is Karmada's resource interpreter, started once against the karmada-apiserver.
type Interpreter struct {
	dynamic  dynamic.Interface
	services corev1listers.ServiceLister
	// karmada is set by Start before it closes started.
	karmada resourceinterpreter.ResourceInterpreter
	started chan struct{}
}

// New returns an interpreter reading the customizations of the karmada-apiserver at cfg. It interprets nothing
// until Start has loaded them.
func New(cfg *rest.Config) (*Interpreter, error) {
	dynamicClient, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Interpreter{dynamic: dynamicClient, services: serviceGetter{kube}, started: make(chan struct{})}, nil
}

// Start loads the customizations and keeps them current; it returns when ctx is done, so that a
// controller-runtime manager can run it.
func (i *Interpreter) Start(ctx context.Context) error {
	// Customizations change rarely, and every change is watched: the resync only repairs a lost watch event. The
	// informers stop with ctx.
	informers := genericmanager.NewSingleClusterInformerManager(ctx, i.dynamic, 10*time.Minute)
	karmada := resourceinterpreter.NewResourceInterpreter(informers, i.services)
	if err := karmada.Start(ctx); err != nil {
		return fmt.Errorf("starting Karmada's resource interpreter: %w", err)
	}
	i.karmada = karmada
	close(i.started)
	<-ctx.Done()
	return nil
}

// Started reports whether Start has loaded the customizations.
func (i *Interpreter) Started() bool {
	select {
	case <-i.started:
		return true
	default:
		return false
	}
}

// ErrNotStarted says Start has not loaded the customizations yet.
var ErrNotStarted = errors.New("Karmada's resource interpreter has not loaded the ResourceInterpreterCustomizations yet")

// Workload reads what obj asks of its replicas, once Start has loaded the customizations (it waits for them
// while ctx lasts: a kind described by one would otherwise be read as running nothing). ok is false for a kind
// Karmada reads no replicas from (a ConfigMap, a Service): such an object runs no replicas Karmada places.
func (i *Interpreter) Workload(ctx context.Context, obj *unstructured.Unstructured) (w Workload, ok bool, err error) {
	select {
	case <-i.started:
	case <-ctx.Done():
		return Workload{}, false, ErrNotStarted
	}
	gvk := obj.GroupVersionKind()
	if !i.karmada.HookEnabled(gvk, configv1alpha1.InterpreterOperationInterpretReplica) {
		return Workload{}, false, nil
	}
	w.Replicas, w.Requirements, err = i.karmada.GetReplicas(obj)
	if err != nil {
		return Workload{}, false, fmt.Errorf("reading the replicas of %s %s/%s: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
	}
	if i.karmada.HookEnabled(gvk, configv1alpha1.InterpreterOperationInterpretComponent) {
		w.Components, err = i.karmada.GetComponents(obj)
		if err != nil {
			return Workload{}, false, fmt.Errorf("reading the components of %s %s/%s: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
		}
	}
	return w, true, nil
}

// serviceGetter gives Karmada's webhook interpreter the Service an interpreter webhook is reached through. It reads
// the one Service asked for when asked, instead of caching every Service of the control plane (resource
// templates, most of them) the way Karmada's controller-manager does.
type serviceGetter struct {
	kube kubernetes.Interface
}

func (s serviceGetter) List(labels.Selector) ([]*corev1.Service, error) {
	return nil, errors.New("listing every Service is not supported: interpreter webhooks name theirs")
}

func (s serviceGetter) Services(namespace string) corev1listers.ServiceNamespaceLister {
	return namespacedServiceGetter{kube: s.kube, namespace: namespace}
}

type namespacedServiceGetter struct {
	kube      kubernetes.Interface
	namespace string
}

func (s namespacedServiceGetter) List(labels.Selector) ([]*corev1.Service, error) {
	return nil, errors.New("listing Services is not supported: interpreter webhooks name theirs")
}

func (s namespacedServiceGetter) Get(name string) (*corev1.Service, error) {
	// The lister interface carries no context; the interpreter's webhook call that needs the Service has its own
	// timeout, and so does this read.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.kube.CoreV1().Services(s.namespace).Get(ctx, name, metav1.GetOptions{})
}
