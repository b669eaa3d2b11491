package install

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// tokenController plays the karmada-apiserver's service-account token controller (kube-controller-manager's
// serviceaccount-token controller): a kubernetes.io/service-account-token Secret gets a real token of its
// service account, bound to the Secret as the legacy tokens are (deleting the Secret revokes it), with the
// apiserver's CA and the namespace beside it.
type tokenController struct {
	typed kubernetes.Interface
	// ca is the apiserver's CA, which the token controller puts beside each token.
	ca     []byte
	issued atomic.Int32
}

func startTokenController(ctx context.Context, typed kubernetes.Interface, ca []byte) *tokenController {
	GinkgoHelper()
	tc := &tokenController{typed: typed, ca: ca}
	factory := informers.NewSharedInformerFactoryWithOptions(typed, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("type", string(corev1.SecretTypeServiceAccountToken)).String()
	}))
	informer := factory.Core().V1().Secrets().Informer()
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { tc.fill(ctx, obj.(*corev1.Secret)) },
		UpdateFunc: func(_, obj any) { tc.fill(ctx, obj.(*corev1.Secret)) },
	})
	Expect(err).NotTo(HaveOccurred())
	factory.Start(ctx.Done())
	Expect(cache.WaitForCacheSync(ctx.Done(), informer.HasSynced)).To(BeTrue())
	return tc
}

func (tc *tokenController) fill(ctx context.Context, secret *corev1.Secret) {
	if len(secret.Data[corev1.ServiceAccountTokenKey]) > 0 || !secret.DeletionTimestamp.IsZero() {
		return
	}
	sa := secret.Annotations[corev1.ServiceAccountNameKey]
	request := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To[int64](24 * 3600),
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: secret.Name, UID: secret.UID},
	}}
	token, err := tc.typed.CoreV1().ServiceAccounts(secret.Namespace).CreateToken(ctx, sa, request, metav1.CreateOptions{})
	if err != nil {
		// kube-controller-manager retries too; the next resync or update brings the Secret back.
		GinkgoWriter.Printf("token controller: no token for %s/%s: %v\n", secret.Namespace, sa, err)
		return
	}
	filled := secret.DeepCopy()
	if filled.Data == nil {
		filled.Data = map[string][]byte{}
	}
	filled.Data[corev1.ServiceAccountTokenKey] = []byte(token.Status.Token)
	filled.Data[corev1.ServiceAccountNamespaceKey] = []byte(secret.Namespace)
	filled.Data[corev1.ServiceAccountRootCAKey] = tc.ca
	if _, err := tc.typed.CoreV1().Secrets(secret.Namespace).Update(ctx, filled, metav1.UpdateOptions{}); err != nil {
		GinkgoWriter.Printf("token controller: writing the token of %s/%s: %v\n", secret.Namespace, sa, err)
		return
	}
	tc.issued.Add(1)
}

// rolloutEvent is something that happened to a Deployment in the host, as the Deployment controller saw it.
type rolloutEvent struct {
	At         time.Time
	Namespace  string
	Name       string
	What       string // created, changed (a new generation), rolledOut, deleted
	Generation int64
	Image      string
}

func (e rolloutEvent) String() string {
	return fmt.Sprintf("%s %s gen %d (%s)", e.Name, e.What, e.Generation, e.Image)
}

// deploymentController plays the host's Deployment controller. It records every new generation and deletion of
// a Deployment, and reports a rollout complete (status of the current generation, every replica updated, ready
// and available) when a test calls rollOut, or at once for every new generation while auto is on.
type deploymentController struct {
	client kubernetes.Interface
	auto   atomic.Bool

	mu     sync.Mutex
	events []rolloutEvent
}

func startDeploymentController(ctx context.Context, p *plane) *deploymentController {
	GinkgoHelper()
	dc := &deploymentController{client: p.typed}
	factory := informers.NewSharedInformerFactory(p.typed, 0)
	informer := factory.Apps().V1().Deployments().Informer()
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			d := obj.(*appsv1.Deployment)
			dc.record(d, "created")
			dc.maybeRollOut(ctx, d)
		},
		UpdateFunc: func(oldObj, obj any) {
			old, d := oldObj.(*appsv1.Deployment), obj.(*appsv1.Deployment)
			if d.Generation != old.Generation {
				dc.record(d, "changed")
			}
			dc.maybeRollOut(ctx, d)
		},
		DeleteFunc: func(obj any) {
			if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			dc.record(obj.(*appsv1.Deployment), "deleted")
		},
	})
	Expect(err).NotTo(HaveOccurred())
	factory.Start(ctx.Done())
	Expect(cache.WaitForCacheSync(ctx.Done(), informer.HasSynced)).To(BeTrue())
	return dc
}

func image(d *appsv1.Deployment) string {
	if len(d.Spec.Template.Spec.Containers) == 0 {
		return ""
	}
	return d.Spec.Template.Spec.Containers[0].Image
}

func (dc *deploymentController) record(d *appsv1.Deployment, what string) {
	dc.mu.Lock()
	defer dc.mu.Unlock()
	dc.events = append(dc.events, rolloutEvent{At: time.Now(), Namespace: d.Namespace, Name: d.Name, What: what, Generation: d.Generation, Image: image(d)})
}

// eventsIn returns what happened to the Deployments of a namespace, in order.
func (dc *deploymentController) eventsIn(namespace string) []rolloutEvent {
	dc.mu.Lock()
	defer dc.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(dc.events), func(e rolloutEvent) bool { return e.Namespace != namespace })
}

// autoRollOut makes every new generation roll out at once, until the spec ends.
func (dc *deploymentController) autoRollOut() {
	dc.auto.Store(true)
	DeferCleanup(func() { dc.auto.Store(false) })
}

func (dc *deploymentController) maybeRollOut(ctx context.Context, d *appsv1.Deployment) {
	if dc.auto.Load() && d.Status.ObservedGeneration < d.Generation && d.DeletionTimestamp.IsZero() {
		if err := dc.rollOut(ctx, d.Namespace, d.Name); err != nil {
			GinkgoWriter.Printf("deployment controller: %v\n", err)
		}
	}
}

// rollOut reports the rollout of the Deployment's current generation complete.
func (dc *deploymentController) rollOut(ctx context.Context, namespace, name string) error {
	var rolled *appsv1.Deployment
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := dc.client.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		replicas := ptr.Deref(d.Spec.Replicas, 1)
		d.Status = appsv1.DeploymentStatus{
			ObservedGeneration: d.Generation, Replicas: replicas, UpdatedReplicas: replicas,
			ReadyReplicas: replicas, AvailableReplicas: replicas,
			Conditions: []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable", LastUpdateTime: metav1.Now(), LastTransitionTime: metav1.Now()},
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable", LastUpdateTime: metav1.Now(), LastTransitionTime: metav1.Now()},
			},
		}
		rolled, err = dc.client.AppsV1().Deployments(namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("rolling out Deployment %s/%s: %w", namespace, name, err)
	}
	dc.record(rolled, "rolledOut")
	return nil
}

// mustRollOut is rollOut in a spec.
func (dc *deploymentController) mustRollOut(namespace, name string) {
	GinkgoHelper()
	Expect(dc.rollOut(ctx, namespace, name)).To(Succeed())
}
