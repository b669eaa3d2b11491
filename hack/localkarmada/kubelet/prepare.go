package kubelet

import (
	"context"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Preparer builds what this kubelet gives a container before starting it, for a program that starts containers
// through a real container runtime instead (test/containers runs the charts' pods under podman): the container's
// environment, its volumes' files, the runAsNonRoot check. One implementation of each, so that the images are
// tested with what the local environment runs them with. It reads Secrets, ConfigMaps and service account tokens
// from the apiserver directly.
type Preparer struct {
	sources    apiSources
	serviceEnv map[string]string
}

// NewPreparer returns a Preparer for the pods of the apiserver client talks to; host and port are that apiserver as
// the pods reach it (the KUBERNETES_SERVICE_* variables).
func NewPreparer(ctx context.Context, client kubernetes.Interface, host string, port int) *Preparer {
	return &Preparer{
		sources:    apiSources{ctx: ctx, client: client, tokens: newTokenManager(client)},
		serviceEnv: serviceEnv(host, port),
	}
}

// Env is c's environment as the kubelet computes it (resolveEnv). The pod must be the apiserver's, as admitted.
func (p *Preparer) Env(pod *corev1.Pod, c *corev1.Container) ([]corev1.EnvVar, error) {
	return resolveEnv(pod, c, p.sources, nil, p.serviceEnv)
}

// WriteVolume gives volume v of pod its files in dir, a folder of its own: an emptyDir is an empty folder anyone may
// write, as the kubelet makes it; a Secret, ConfigMap, downward API or projected volume gets the kubelet's
// atomic-writer layout and file modes. readOnly reports whether Kubernetes mounts it read-only whatever the mount
// says (every volume but an emptyDir).
func (p *Preparer) WriteVolume(pod *corev1.Pod, v *corev1.Volume, dir string) (readOnly bool, err error) {
	kind, err := kindOf(v)
	if err != nil {
		return false, err
	}
	if kind == volumeEmptyDir {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return false, err
		}
		// Exactly 0777, whatever the umask: the pod's user writes there.
		return false, os.Chmod(dir, 0o777)
	}
	payload, err := volumePayload(pod, v, p.sources, nil)
	if err != nil {
		return false, fmt.Errorf("volume %q: %w", v.Name, err)
	}
	_, err = writeAtomically(dir, payload)
	return true, err
}

// VerifyRunAsNonRoot is the kubelet's check of runAsNonRoot against the user that would run c (its runAsUser, else
// imageUser): the message of its CreateContainerConfigError, or nil.
func VerifyRunAsNonRoot(pod *corev1.Pod, c *corev1.Container, imageUser string) error {
	return verifyRunAsNonRoot(pod, c, imageUser)
}

// apiSources reads what volumes and environments are built from in the apiserver, with the kubelet's NotFound
// wording; the kubelet's own sources read its informers first and these after.
type apiSources struct {
	ctx    context.Context
	client kubernetes.Interface
	tokens *tokenManager
}

func (s apiSources) secret(namespace, name string) (*corev1.Secret, error) {
	obj, err := s.client.CoreV1().Secrets(namespace).Get(s.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, apierrors.NewNotFound(corev1.Resource("secret"), name)
	}
	return obj, err
}

func (s apiSources) configMap(namespace, name string) (*corev1.ConfigMap, error) {
	obj, err := s.client.CoreV1().ConfigMaps(namespace).Get(s.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, apierrors.NewNotFound(corev1.Resource("configmap"), name)
	}
	return obj, err
}

func (s apiSources) serviceAccountToken(pod *corev1.Pod, source *corev1.ServiceAccountTokenProjection) ([]byte, error) {
	return s.tokens.token(s.ctx, pod, source)
}
