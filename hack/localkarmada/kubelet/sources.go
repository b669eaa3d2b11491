package kubelet

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

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
