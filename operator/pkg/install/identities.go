package install

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// tokenSecretName is the Secret in the karmada-apiserver that holds a service account's long-lived token.
func tokenSecretName(serviceAccount string) string { return serviceAccount + "-token" }

// ensureIdentity gives a component its own identity in the karmada-apiserver: a token of its service account
// (filled in by the karmada-apiserver's token controller, as for the service accounts Karmada itself uses), in a
// kubeconfig written to a host Secret the component mounts. The component then holds only the rights its roles
// grant, instead of the admin credentials the installation was given.
func (i *Installer) ensureIdentity(ctx context.Context, id Identity) error {
	key := client.ObjectKey{Namespace: i.Config.Karmada.Namespace, Name: tokenSecretName(id.ServiceAccount)}
	var token corev1.Secret
	err := i.Karmada.Get(ctx, key, &token)
	if apierrors.IsNotFound(err) {
		token = corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{
				Name: key.Name, Namespace: key.Namespace, Labels: i.Config.Labels,
				Annotations: map[string]string{corev1.ServiceAccountNameKey: id.ServiceAccount},
			},
			Type: corev1.SecretTypeServiceAccountToken,
		}
		err = i.Karmada.Create(ctx, &token)
	}
	if err != nil {
		return fmt.Errorf("the token Secret of service account %s: %w", id.ServiceAccount, err)
	}

	var bearer []byte
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := i.Karmada.Get(ctx, key, &token); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		bearer = token.Data[corev1.ServiceAccountTokenKey]
		return len(bearer) > 0, nil
	})
	if err != nil {
		return fmt.Errorf("the token of service account %s/%s was never issued; the karmada-apiserver's "+
			"kube-controller-manager must run the serviceaccount-token controller: %w", key.Namespace, id.ServiceAccount, err)
	}

	kubeconfig, err := clientcmd.Write(i.componentKubeconfig(id.ServiceAccount, string(bearer)))
	if err != nil {
		return err
	}
	secret := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: id.KubeconfigSecret, Namespace: i.Config.Namespace},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{KubeconfigKey: kubeconfig},
	}
	return i.applyTyped(ctx, i.Host, secret)
}

// componentKubeconfig reaches the karmada-apiserver the way the admin kubeconfig does (same server, same trust),
// as the service account.
func (i *Installer) componentKubeconfig(serviceAccount, token string) clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	cluster := i.KarmadaCluster.DeepCopy()
	cfg.Clusters["karmada-apiserver"] = cluster
	cfg.AuthInfos[serviceAccount] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[serviceAccount] = &clientcmdapi.Context{Cluster: "karmada-apiserver", AuthInfo: serviceAccount}
	cfg.CurrentContext = serviceAccount
	return *cfg
}

// deleteIdentity removes the token Secret in the karmada-apiserver and the kubeconfig Secret in the host.
func (i *Installer) deleteIdentity(ctx context.Context, id Identity) error {
	token := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: i.Config.Karmada.Namespace, Name: tokenSecretName(id.ServiceAccount)}}
	if err := client.IgnoreNotFound(i.Karmada.Delete(ctx, token)); err != nil {
		return fmt.Errorf("deleting the token of %s: %w", id.ServiceAccount, err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: i.Config.Namespace, Name: id.KubeconfigSecret}}
	if err := client.IgnoreNotFound(i.Host.Delete(ctx, secret)); err != nil {
		return fmt.Errorf("deleting Secret %s/%s: %w", secret.Namespace, secret.Name, err)
	}
	return nil
}

// applyTyped applies a typed object (TypeMeta set) with the installation's labels.
func (i *Installer) applyTyped(ctx context.Context, c client.Client, obj client.Object) error {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: content}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	change, err := apply(ctx, c, u, i.Config.Labels)
	i.observe(c == i.Karmada, u, change)
	return err
}
