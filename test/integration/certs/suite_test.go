// Package certs proves the webhook certificate management against two real control planes (etcd +
// kube-apiserver each): one plays the host cluster, where the Secrets live, the other the karmada-apiserver, where
// the ValidatingWebhookConfiguration lives and, in the reload test, where bindings are written through the real
// webhook.
package certs

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/karmada-quota/karmada-quota/internal/specdigest"
	"github.com/karmada-quota/karmada-quota/pkg/certs"
	"github.com/karmada-quota/karmada-quota/pkg/webhookconfig"
	"github.com/karmada-quota/karmada-quota/test/integration/framework"
)

var (
	ctx    context.Context
	cancel context.CancelFunc

	// The host cluster: Secrets.
	hostEnv *envtest.Environment
	hostCfg *rest.Config
	host    client.Client
	// The karmada-apiserver: the webhook configuration, Karmada's and karmada-quota's CRDs.
	karmadaEnv *envtest.Environment
	karmadaCfg *rest.Config
	karmada    client.Client
)

func TestCerts(t *testing.T) {
	RegisterFailHandler(Fail)
	specdigest.RunSpecs(t, "Webhook certificates integration")
}

var _ = BeforeSuite(func() {
	ctx, cancel = context.WithCancel(context.Background())
	var err error
	karmadaEnv, karmadaCfg, karmada, err = framework.Start()
	Expect(err).NotTo(HaveOccurred())
	// The host needs no CRDs: it only stores Secrets and events.
	hostEnv = &envtest.Environment{BinaryAssetsDirectory: os.Getenv("KUBEBUILDER_ASSETS")}
	hostCfg, err = hostEnv.Start()
	Expect(err).NotTo(HaveOccurred())
	host, err = client.New(hostCfg, client.Options{Scheme: clientgoscheme.Scheme})
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	cancel()
	for _, env := range []*envtest.Environment{hostEnv, karmadaEnv} {
		if env != nil {
			Expect(env.Stop()).To(Succeed())
		}
	}
})

var nameCounter atomic.Int32

// uniqueName keeps the cluster-scoped webhook configurations of different tests apart.
func uniqueName(prefix string) string { return fmt.Sprintf("%s-%d", prefix, nameCounter.Add(1)) }

// hostNamespace creates a fresh namespace in the host for one test's Secrets.
func hostNamespace() string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "certs-"}}
	Expect(host.Create(ctx, ns)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(host.Delete(ctx, ns))).To(Succeed()) })
	return ns.Name
}

// selfManagedOptions are options for one test: its own host namespace and webhook configuration name.
func selfManagedOptions() certs.Options {
	o := certs.NewOptions()
	o.Mode = certs.ModeSelfManaged
	o.Namespace = hostNamespace()
	o.WebhookConfiguration = uniqueName("karmada-quota")
	o.Validity = 2 * time.Minute
	o.CAValidity = 6 * time.Minute
	o.CheckInterval = 10 * time.Second
	return o
}

// inertWebhookConfiguration is the production configuration under another name, matching no object: the tests
// that only watch its caBundle must not send binding writes to a webhook that is not running.
func inertWebhookConfiguration(name string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	c := webhookconfig.Configuration("https://127.0.0.1:1", nil, webhookconfig.DefaultTimeoutSeconds)
	c.Name = name
	for i := range c.Webhooks {
		c.Webhooks[i].ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"never": "matches"}}
	}
	return c
}

func createWebhookConfiguration(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
	GinkgoHelper()
	Expect(karmada.Create(ctx, c)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(karmada.Delete(ctx, c))).To(Succeed()) })
}

func getSecret(o certs.Options, name string) *corev1.Secret {
	GinkgoHelper()
	var s corev1.Secret
	Expect(host.Get(ctx, types.NamespacedName{Namespace: o.Namespace, Name: name}, &s)).To(Succeed())
	return &s
}

func getWebhookConfiguration(name string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	GinkgoHelper()
	var c admissionregistrationv1.ValidatingWebhookConfiguration
	Expect(karmada.Get(ctx, types.NamespacedName{Name: name}, &c)).To(Succeed())
	return &c
}
