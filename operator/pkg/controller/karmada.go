package controller

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/karmada-quota/karmada-quota/operator/pkg/install"
	"github.com/karmada-quota/karmada-quota/pkg/webhookconfig"
)

// crdName is karmada-quota's CRD in the karmada-apiserver.
const crdName = "karmadaquotas.quota.karmada.io"

// karmadaError is why the operator cannot act on a karmada-apiserver; Reason goes into the Degraded condition.
type karmadaError struct {
	Reason string
	Err    error
}

func (e *karmadaError) Error() string { return e.Err.Error() }
func (e *karmadaError) Unwrap() error { return e.Err }

// connection is the operator's link to one installation's karmada-apiserver: a client with the admin
// credentials of the installation's Secret, and a cache of what the installation owns there, whose changes
// requeue the installation, so that a deleted or edited object is restored within seconds.
type connection struct {
	fingerprint [32]byte
	access      *install.KarmadaAccess
	stop        context.CancelFunc
}

// connections holds one connection per installation.
type connections struct {
	// base outlives reconciles: the caches run until the installation or its kubeconfig goes away.
	base  context.Context
	watch func(source.Source) error

	mu    sync.Mutex
	byKey map[types.NamespacedName]*connection
}

func newConnections() *connections {
	return &connections{byKey: map[types.NamespacedName]*connection{}}
}

// Start implements manager.Runnable: it gives the connections a context that ends with the manager.
func (cs *connections) Start(ctx context.Context) error {
	cs.mu.Lock()
	cs.base = ctx
	cs.mu.Unlock()
	<-ctx.Done()
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for key, c := range cs.byKey {
		c.stop()
		delete(cs.byKey, key)
	}
	return nil
}

// connect returns the installation's connection, made anew when the kubeconfig changed. It checks that the
// karmada-apiserver answers and that the kubeconfig holds the rights an installation needs, so that neither
// surfaces halfway through an install.
func (cs *connections) connect(ctx context.Context, key types.NamespacedName, kubeconfig []byte, karmadaNamespace string) (*install.KarmadaAccess, error) {
	fingerprint := sha256.Sum256(kubeconfig)
	cs.mu.Lock()
	if c, ok := cs.byKey[key]; ok && c.fingerprint == fingerprint {
		cs.mu.Unlock()
		return c.access, nil
	}
	base := cs.base
	cs.mu.Unlock()
	if base == nil {
		return nil, &karmadaError{Reason: "Starting", Err: fmt.Errorf("the operator is still starting")}
	}

	access, err := install.KarmadaFromKubeconfig(kubeconfig)
	if err != nil {
		return nil, &karmadaError{Reason: "KubeconfigInvalid", Err: err}
	}
	if err := reachable(access); err != nil {
		return nil, &karmadaError{Reason: "KarmadaUnreachable", Err: fmt.Errorf("the karmada-apiserver at %s does not answer: %w", access.Config.Host, err)}
	}
	if missing, err := missingRights(ctx, access.Client, karmadaNamespace); err != nil {
		return nil, &karmadaError{Reason: "KarmadaUnreachable", Err: fmt.Errorf("checking the kubeconfig's rights: %w", err)}
	} else if len(missing) > 0 {
		return nil, &karmadaError{Reason: "InsufficientRights", Err: fmt.Errorf("the kubeconfig may not %s in the karmada-apiserver", strings.Join(missing, "; "))}
	}

	watched, err := cache.New(access.Config, cache.Options{
		Scheme: install.Scheme,
		ByObject: map[client.Object]cache.ByObject{
			&apiextensionsv1.CustomResourceDefinition{}:               {Field: fields.OneTermEqualSelector("metadata.name", crdName)},
			&admissionregistrationv1.ValidatingWebhookConfiguration{}: {Field: fields.OneTermEqualSelector("metadata.name", webhookconfig.ConfigurationName)},
		},
		// Everything else the installation owns carries its instance label.
		DefaultLabelSelector: labels.SelectorFromSet(labels.Set{instanceLabel: key.Name, partOfLabel: partOf}),
	})
	if err != nil {
		return nil, &karmadaError{Reason: "KarmadaUnreachable", Err: err}
	}
	cacheCtx, stop := context.WithCancel(base)
	go func() { _ = watched.Start(cacheCtx) }()
	requeue := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: key}}
	})
	for _, obj := range []client.Object{
		&apiextensionsv1.CustomResourceDefinition{}, &admissionregistrationv1.ValidatingWebhookConfiguration{},
		&rbacv1.ClusterRole{}, &rbacv1.ClusterRoleBinding{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}, &corev1.ServiceAccount{},
	} {
		if err := cs.watch(source.Kind(watched, obj, requeue)); err != nil {
			stop()
			return nil, &karmadaError{Reason: "KarmadaUnreachable", Err: err}
		}
	}
	syncCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if !watched.WaitForCacheSync(syncCtx) {
		stop()
		return nil, &karmadaError{Reason: "KarmadaUnreachable", Err: fmt.Errorf("watching karmada-quota's objects in %s did not sync", access.Config.Host)}
	}

	cs.mu.Lock()
	defer cs.mu.Unlock()
	if old, ok := cs.byKey[key]; ok {
		old.stop()
	}
	cs.byKey[key] = &connection{fingerprint: fingerprint, access: access, stop: stop}
	return access, nil
}

// drop closes an installation's connection.
func (cs *connections) drop(key types.NamespacedName) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if c, ok := cs.byKey[key]; ok {
		c.stop()
		delete(cs.byKey, key)
	}
}

func reachable(access *install.KarmadaAccess) error {
	cfg := *access.Config
	cfg.Timeout = 10 * time.Second
	d, err := discovery.NewDiscoveryClientForConfig(&cfg)
	if err != nil {
		return err
	}
	_, err = d.ServerVersion()
	return err
}

// requiredRights are what installing, repairing and uninstalling take in the karmada-apiserver.
var requiredRights = []authorizationv1.ResourceAttributes{
	{Verb: "create", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"},
	{Verb: "patch", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"},
	{Verb: "create", Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations"},
	{Verb: "delete", Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations"},
	{Verb: "create", Group: "rbac.authorization.k8s.io", Resource: "clusterroles"},
	{Verb: "create", Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings"},
	{Verb: "bind", Group: "rbac.authorization.k8s.io", Resource: "clusterroles"},
	{Verb: "create", Resource: "serviceaccounts", Namespace: "-"},
	{Verb: "create", Resource: "secrets", Namespace: "-"},
	{Verb: "watch", Group: "rbac.authorization.k8s.io", Resource: "clusterroles"},
}

// missingRights asks the karmada-apiserver which of the required rights the kubeconfig lacks.
func missingRights(ctx context.Context, c client.Client, namespace string) ([]string, error) {
	var missing []string
	for _, attrs := range requiredRights {
		if attrs.Namespace == "-" {
			attrs.Namespace = namespace
		}
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}}
		if err := c.Create(ctx, review); err != nil {
			return nil, err
		}
		if !review.Status.Allowed {
			what := attrs.Verb + " " + attrs.Resource
			if attrs.Group != "" {
				what += "." + attrs.Group
			}
			if attrs.Namespace != "" {
				what += " in " + attrs.Namespace
			}
			missing = append(missing, what)
		}
	}
	return missing, nil
}
