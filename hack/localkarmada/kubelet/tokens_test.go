package kubelet

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

// TestTokenManager checks that tokens are requested bound to the pod, for the pod's service account and the
// source's audience and lifetime, served from the cache, and requested again once 80 % of the lifetime passed.
func TestTokenManager(t *testing.T) {
	client := fake.NewClientset()
	var requests []authenticationv1.TokenRequestSpec
	var serviceAccounts []string
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	client.PrependReactor("create", "serviceaccounts", func(action k8stesting.Action) (bool, runtime.Object, error) {
		create, ok := action.(k8stesting.CreateActionImpl)
		if !ok || action.GetSubresource() != "token" {
			return false, nil, nil
		}
		request := create.GetObject().(*authenticationv1.TokenRequest).DeepCopy()
		requests = append(requests, request.Spec)
		serviceAccounts = append(serviceAccounts, create.Name)
		request.Status = authenticationv1.TokenRequestStatus{
			Token:               "token-" + string(rune('0'+len(requests))),
			ExpirationTimestamp: metav1.NewTime(now.Add(time.Duration(*request.Spec.ExpirationSeconds) * time.Second)),
		}
		return true, request, nil
	})
	tokens := newTokenManager(client)
	tokens.now = func() time.Time { return now }
	pod := testPod()
	source := &corev1.ServiceAccountTokenProjection{ExpirationSeconds: ptr.To[int64](1000), Path: "token"}

	get := func() string {
		t.Helper()
		token, err := tokens.token(context.Background(), pod, source)
		if err != nil {
			t.Fatal(err)
		}
		return string(token)
	}
	var got []string
	got = append(got, get())
	now = now.Add(799 * time.Second) // 80 % of 1000 s not yet passed: the cached token
	got = append(got, get())
	now = now.Add(2 * time.Second) // passed: a new token
	got = append(got, get())
	if diff := cmp.Diff([]string{"token-1", "token-1", "token-2"}, got); diff != "" {
		t.Errorf("tokens served (-want +got):\n%s", diff)
	}
	want := authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To[int64](1000),
		BoundObjectRef:    &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "web-0", UID: "1234"},
	}
	if diff := cmp.Diff([]authenticationv1.TokenRequestSpec{want, want}, requests); diff != "" {
		t.Errorf("token requests (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"web", "web"}, serviceAccounts); diff != "" {
		t.Errorf("service accounts (-want +got):\n%s", diff)
	}

	// Another audience is another token; a forgotten pod's tokens are dropped.
	if _, err := tokens.token(context.Background(), pod, &corev1.ServiceAccountTokenProjection{Audience: "vault", ExpirationSeconds: ptr.To[int64](600)}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"vault"}, requests[2].Audiences); diff != "" {
		t.Errorf("audiences (-want +got):\n%s", diff)
	}
	tokens.forget(pod.UID)
	if len(tokens.cache) != 0 {
		t.Errorf("%d tokens cached after forget", len(tokens.cache))
	}
}
