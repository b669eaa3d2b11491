// Package rbac proves who may do what with karmada-quota's objects in the karmada-apiserver, against a real etcd +
// kube-apiserver holding exactly the objects the chart renders for it (operator/pkg/render, applied as the install
// phases apply them): RBAC answered by the apiserver's own authorizer (SubjectAccessReview, what `kubectl auth
// can-i` asks), and the ValidatingAdmissionPolicy that keeps a quota's status to karmada-quota's own identities,
// enforced by the apiserver on real writes.
//
// envtest runs no kube-controller-manager, so the stock view, edit and admin roles arrive without the rules
// aggregated into them. The suite aggregates them itself, by the rule Kubernetes' clusterrole-aggregation
// controller applies (the union of the rules of every ClusterRole its selectors match, repeated until nothing
// changes): a few lines, rather than a kube-controller-manager built for this tier.
package rbac

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/karmada-quota/karmada-quota/internal/specdigest"
	"github.com/karmada-quota/karmada-quota/test/integration/framework"
)

var (
	testEnv *envtest.Environment
	cfg     *rest.Config
	k8s     client.Client
	ctx     context.Context
	cancel  context.CancelFunc
)

func TestRBAC(t *testing.T) {
	RegisterFailHandler(Fail)
	specdigest.RunSpecs(t, "RBAC and status-writer policy integration")
}

var _ = BeforeSuite(func() {
	ctx, cancel = context.WithCancel(context.Background())
	var err error
	testEnv, cfg, k8s, err = framework.Start()
	Expect(err).NotTo(HaveOccurred())
	installRenderedObjects()
	aggregateClusterRoles()
	bindBusinessUsers()
})

var _ = AfterSuite(func() {
	cancel()
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})
