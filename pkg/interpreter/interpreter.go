// Package interpreter reads what a workload asks of its replicas, in any kind Karmada can propagate, with Karmada's
// own resource interpreter: the native kinds, the customizations Karmada ships for popular CRDs, and every
// ResourceInterpreterCustomization (Lua) and ResourceInterpreterWebhookConfiguration of the control plane. It
// reads a workload exactly as Karmada's detector does when it builds the binding, so what the webhooks compare
// (a resource template, a Work's manifest) is read the way the binding that was admitted was written. The kinds
// Karmada reads no replicas from but which run pods (DaemonSet, CronJob, ReplicationController) are read by this
// package's own rules (podmakers.go), built on Karmada's reading of a Pod and of a Job, so that a quota charges every
// pod a member will run. What an object holds on a member besides its pods (claims and their storage, load
// balancers, node ports) is read by Kubernetes' own quota rules (held.go).
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
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"

	"github.com/karmada-quota/karmada-quota/pkg/usage"
)

// What the interpreter watches and reads in the karmada-apiserver: the customizations, and the Services an
// interpreter webhook may be reached through.
// +kubebuilder:rbac:groups=config.karmada.io,resources=resourceinterpretercustomizations;resourceinterpreterwebhookconfigurations,verbs=list;watch
// +kubebuilder:rbac:groups="",resources=services,verbs=get

// Workload is what one object makes a member run and hold: the pods it runs, and what it holds besides (HeldBy).
type Workload struct {
	// Replicas and Requirements describe a single-template workload: Replicas at Requirements each.
	Replicas     int32
	Requirements *workv1alpha2.ReplicaRequirements
	// Components describe a multi-template workload (one entry per pod template), when Karmada can read them.
	Components []workv1alpha2.Component
	// PerNode is set for a workload that runs one pod on every node of the member its pod template fits (a
	// DaemonSet): how many pods it runs depends on the member's nodes, not on the object, so Replicas is 0 until
	// OnNodes counts them, and Requirements are one pod's.
	PerNode *NodeFit
	// Unbounded is set, saying why and how to fix it, when the pods the object runs at once have no bound (a CronJob
	// whose Jobs may run concurrently). Replicas and Requirements then say what one run asks, for messages; a quota
	// limiting compute cannot admit what it cannot bound, other quotas need not care.
	Unbounded string
	// Held is what the object holds on each member besides its pods' requests (HeldBy): a StatefulSet's claims per
	// replica, a PersistentVolumeClaim's or a Service's per member. A PersistentVolumeClaim or a Service runs no
	// pods: it is a Workload of no replicas that holds something.
	Held usage.Held
}

// OnNodes returns the workload as it runs on a member with these nodes: a per-node workload runs one pod on each
// node its pod template fits; any other runs what it says, whatever the nodes.
func (w Workload) OnNodes(nodes []corev1.Node) Workload {
	if w.PerNode != nil {
		w.Replicas = w.PerNode.Count(nodes)
	}
	return w
}

// ReplicaInterpreter is the part of Karmada's resource interpreter this package reads through. It is narrower
// than resourceinterpreter.ResourceInterpreter so that tests can use Karmada's native interpreter alone
// (native.NewDefaultInterpreter), without a karmada-apiserver to load customizations from.
type ReplicaInterpreter interface {
	HookEnabled(gvk schema.GroupVersionKind, operation configv1alpha1.InterpreterOperation) bool
	GetReplicas(obj *unstructured.Unstructured) (int32, *workv1alpha2.ReplicaRequirements, error)
	GetComponents(obj *unstructured.Unstructured) ([]workv1alpha2.Component, error)
}

// Interpreter is Karmada's resource interpreter, started once against the karmada-apiserver.
type Interpreter struct {
	dynamic  dynamic.Interface
	services corev1listers.ServiceLister
	// karmada is set by Start (or NewStarted) before started is closed.
	karmada ReplicaInterpreter
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

// NewStarted returns an interpreter that reads through karmada, an interpreter the caller has started already (or
// Karmada's native one, which needs no start). Its Start must not be called.
func NewStarted(karmada ReplicaInterpreter) *Interpreter {
	started := make(chan struct{})
	close(started)
	return &Interpreter{karmada: karmada, started: started}
}

// Start loads the customizations and keeps them current; it returns when ctx is done, so that a
// controller-runtime manager can run it.
func (i *Interpreter) Start(ctx context.Context) error {
	if i.Started() {
		// An interpreter from NewStarted has nothing to load from; a second Start would close started twice.
		return errors.New("Karmada's resource interpreter is started already")
	}
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

// NeedLeaderElection implements manager.LeaderElectionRunnable: every replica loads the customizations, a few
// small objects, so that a replica taking the lead interprets at once; loading them after would hold its first
// recounts back a second or more (the Work view reads every Work through the interpreter before it syncs).
func (i *Interpreter) NeedLeaderElection() bool { return false }

// Started reports whether Start has loaded the customizations.
func (i *Interpreter) Started() bool {
	select {
	case <-i.started:
		return true
	default:
		return false
	}
}

// WaitStarted waits until Start has loaded the customizations, for a reader that must not read a custom kind as
// running nothing; it returns ErrNotStarted if ctx ends first.
func (i *Interpreter) WaitStarted(ctx context.Context) error {
	select {
	case <-i.started:
		return nil
	case <-ctx.Done():
		return ErrNotStarted
	}
}

// Opaque reports whether karmada-quota cannot know the pods an object of gvk makes a member run: Karmada's
// interpreter reads no replicas from it (no customization describes it), no rule of this package reads its pods,
// and it is not a Kubernetes built-in kind (every built-in kind that runs pods is read by one or the other; the
// rest, a ConfigMap or a Role, run none). Such a kind, a CRD whose operator starts pods in the member, would run
// free under a quota limiting what pods use; the Work gate refuses it there unless the admin exempts the kind.
func (i *Interpreter) Opaque(gvk schema.GroupVersionKind) bool {
	if i.karmada.HookEnabled(gvk, configv1alpha1.InterpreterOperationInterpretReplica) {
		return false
	}
	if _, runsPods := podMakers[gvk]; runsPods {
		return false
	}
	return !clientgoscheme.Scheme.Recognizes(gvk)
}

// ErrNotStarted says Start has not loaded the customizations yet.
var ErrNotStarted = errors.New("Karmada's resource interpreter has not loaded the ResourceInterpreterCustomizations yet")

// Workload reads what obj asks of its replicas, once Start has loaded the customizations (it waits for them
// while ctx lasts: a kind described by one would otherwise be read as running nothing). Karmada's reading comes
// first: a kind it reads replicas from, natively or through a customization (even one describing DaemonSets), is
// read as Karmada reads it, so that the quota charges what the binding says. Only a kind Karmada reads no replicas
// from is read by this package's rules for the kinds that run pods anyway (podmakers.go). Whatever reads its pods,
// what the object holds on members besides them is read by HeldBy. ok is false for an object that neither runs pods
// nor holds anything (a ConfigMap, a ClusterIP Service); a PersistentVolumeClaim, or a Service holding a load
// balancer or node ports, is read as no replicas and what it holds.
func (i *Interpreter) Workload(ctx context.Context, obj *unstructured.Unstructured) (w Workload, ok bool, err error) {
	if err := i.WaitStarted(ctx); err != nil {
		return Workload{}, false, err
	}
	gvk := obj.GroupVersionKind()
	held, err := HeldBy(obj)
	if err != nil {
		return Workload{}, false, fmt.Errorf("reading what %s %s/%s holds on member clusters: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
	}
	if !i.karmada.HookEnabled(gvk, configv1alpha1.InterpreterOperationInterpretReplica) {
		makePods, runsPods := podMakers[gvk]
		if !runsPods {
			if len(held.PerReplica) == 0 && len(held.PerCluster) == 0 {
				return Workload{}, false, nil
			}
			return Workload{Held: held}, true, nil
		}
		w, err := makePods(i.karmada, obj)
		if err != nil {
			return Workload{}, false, fmt.Errorf("reading the pods that %s %s/%s runs: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
		}
		w.Held = held
		return w, true, nil
	}
	w.Held = held
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
