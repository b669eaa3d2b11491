package members

import (
	"errors"
	"fmt"
	"net/url"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// proxyClient is a clientset whose requests go to member cluster through the cluster proxy of the
// karmada-apiserver at config (/apis/cluster.karmada.io/v1alpha1/clusters/<cluster>/proxy), as config's identity:
// Karmada's aggregated apiserver impersonates that identity in the member, so the member's RBAC decides what it
// may read there.
func proxyClient(config *rest.Config, cluster string) (kubernetes.Interface, error) {
	if cluster == "" {
		return nil, errors.New("the proxy of a member cluster: no cluster name")
	}
	cfg := rest.CopyConfig(config)
	proxy, err := url.JoinPath(cfg.Host, "apis", clusterv1alpha1.GroupName, "v1alpha1", "clusters", cluster, "proxy")
	if err != nil {
		return nil, fmt.Errorf("the proxy URL of cluster %s: %w", cluster, err)
	}
	cfg.Host = proxy
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("a client for the proxy of cluster %s: %w", cluster, err)
	}
	return c, nil
}
