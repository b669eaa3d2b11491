package kubelet

import (
	"context"
	"fmt"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// tokenManager gets service account tokens for projected volumes through the TokenRequest API, bound to the pod
// as the kubelet binds them, and refreshes one once 80 % of its lifetime has passed (the kubelet's token manager
// rule; a day at most).
type tokenManager struct {
	client kubernetes.Interface
	now    func() time.Time

	mu    sync.Mutex
	cache map[string]*authenticationv1.TokenRequest
}

func newTokenManager(client kubernetes.Interface) *tokenManager {
	return &tokenManager{client: client, now: time.Now, cache: map[string]*authenticationv1.TokenRequest{}}
}

func (t *tokenManager) token(ctx context.Context, pod *corev1.Pod, source *corev1.ServiceAccountTokenProjection) ([]byte, error) {
	expiration := ptr.Deref(source.ExpirationSeconds, 3600)
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	key := fmt.Sprintf("%s/%s/%s/%d/%s", pod.Namespace, sa, source.Audience, expiration, pod.UID)
	t.mu.Lock()
	cached := t.cache[key]
	t.mu.Unlock()
	if cached != nil && !t.requiresRefresh(cached) {
		return []byte(cached.Status.Token), nil
	}
	var audiences []string
	if source.Audience != "" {
		audiences = []string{source.Audience}
	}
	request := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		Audiences:         audiences,
		ExpirationSeconds: ptr.To(expiration),
		BoundObjectRef:    &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID},
	}}
	issued, err := t.client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, request, metav1.CreateOptions{})
	if err != nil {
		if cached != nil && t.now().Before(cached.Status.ExpirationTimestamp.Time) {
			// The old token is still valid: keep serving it and try again on the next sync.
			return []byte(cached.Status.Token), nil
		}
		return nil, fmt.Errorf("failed to fetch token: %w", err)
	}
	t.mu.Lock()
	t.cache[key] = issued
	t.mu.Unlock()
	return []byte(issued.Status.Token), nil
}

func (t *tokenManager) requiresRefresh(tr *authenticationv1.TokenRequest) bool {
	ttl := time.Duration(ptr.Deref(tr.Spec.ExpirationSeconds, 3600)) * time.Second
	exp := tr.Status.ExpirationTimestamp.Time
	issued := exp.Add(-ttl)
	now := t.now()
	return now.After(issued.Add(24*time.Hour)) || now.After(exp.Add(-ttl/5))
}

// forget drops the tokens of a pod that is gone.
func (t *tokenManager) forget(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k := range t.cache {
		if len(k) >= len(uid) && k[len(k)-len(uid):] == string(uid) {
			delete(t.cache, k)
		}
	}
}
