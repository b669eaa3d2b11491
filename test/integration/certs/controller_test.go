package certs

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	controllerapp "github.com/karmada-quota/karmada-quota/cmd/quota-controller/app"
	"github.com/karmada-quota/karmada-quota/internal/testenv"
	"github.com/karmada-quota/karmada-quota/operator/pkg/render"
	"github.com/karmada-quota/karmada-quota/pkg/certs"
	"github.com/karmada-quota/karmada-quota/pkg/webhookconfig"
)

var _ = Describe("quota-controller", func() {
	// The real app, as its Deployment runs it: leader election, the quota controller, and the certificate
	// runnable. Each plane's client is a user holding only what the installation grants: in the
	// karmada-apiserver the roles `make generate` writes into the chart, in the host the Role the chart renders.
	It("manages the certificates as leader, with only the permissions its roles grant in each plane", func() {
		o := certs.NewOptions()
		o.Mode = certs.ModeSelfManaged
		o.Namespace = hostNamespace()
		o.WebhookConfiguration = webhookconfig.ConfigurationName
		createWebhookConfiguration(inertWebhookConfiguration(o.WebhookConfiguration))

		const identity = "karmada-quota-controller"
		karmadaUser := addUser(karmadaEnv, identity)
		ensureNamespace(karmada, "karmada-system")
		grantGeneratedRoles(karmada, filepath.Join(testenv.RepoRoot(), "deploy", "charts", "karmada-quota", "files", "rbac", "controller", "role.yaml"), identity)
		hostUser := addUser(hostEnv, identity)
		grantRole(host, o.Namespace, identity, chartHostRules(o))

		opts := controllerapp.NewOptions()
		opts.MetricsBindAddress = "0"
		opts.HealthProbeBindAddress = "0"
		opts.Certs = o
		opts.HostKubeconfig = writeKubeconfig(hostUser)
		Expect(opts.Validate()).To(Succeed())
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- controllerapp.Run(runCtx, karmadaUser, opts) }()
		DeferCleanup(func() {
			stop()
			Eventually(done, 30*time.Second).Should(Receive(BeNil()))
		})

		Eventually(func(g Gomega) {
			var serving corev1.Secret
			g.Expect(host.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.ServingSecret}, &serving)).To(Succeed())
			g.Expect(caBundles(getWebhookConfiguration(o.WebhookConfiguration))).To(HaveEach(Equal(serving.Data[certs.KeyCABundle])))
		}, 30*time.Second, 100*time.Millisecond).Should(Succeed())

		By("what it did is on the Secrets, as events in the host")
		Eventually(func(g Gomega) {
			var events corev1.EventList
			g.Expect(host.List(ctx, &events, client.InNamespace(o.Namespace))).To(Succeed())
			var reasons []string
			for _, e := range events.Items {
				reasons = append(reasons, e.InvolvedObject.Name+": "+e.Reason)
			}
			g.Expect(reasons).To(ContainElements(
				o.CASecret+": "+certs.EventCACreated,
				o.ServingSecret+": "+certs.EventIssued,
				o.ServingSecret+": "+certs.EventWebhookSynced,
			))
		}, 10*time.Second, 100*time.Millisecond).Should(Succeed())
	})
})

// chartHostRules are the rules of the host Role the chart gives quota-controller, rendered for the
// installation the options describe.
func chartHostRules(o certs.Options) []rbacv1.PolicyRule {
	GinkgoHelper()
	rendered, err := render.Render("karmada-quota", o.Namespace, map[string]any{})
	Expect(err).NotTo(HaveOccurred())
	for _, obj := range rendered.Host {
		if obj.GetKind() != "Role" || obj.GetName() != "karmada-quota-controller" {
			continue
		}
		var role rbacv1.Role
		Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &role)).To(Succeed())
		Expect(role.Rules).To(ContainElement(HaveField("ResourceNames", ConsistOf(o.ServingSecret, o.CASecret))),
			"the chart's Role names the Secrets these options keep")
		return role.Rules
	}
	Fail("the chart renders no Role for quota-controller")
	return nil
}

// addUser provisions a user of env, authenticated by a client certificate, and returns its rest config.
func addUser(env *envtest.Environment, name string) *rest.Config {
	GinkgoHelper()
	user, err := env.AddUser(envtest.User{Name: name}, nil)
	Expect(err).NotTo(HaveOccurred())
	return user.Config()
}

// writeKubeconfig writes cfg as a kubeconfig file, as the chart mounts one.
func writeKubeconfig(cfg *rest.Config) string {
	GinkgoHelper()
	kubeconfig := clientcmdapi.NewConfig()
	kubeconfig.Clusters["host"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kubeconfig.AuthInfos["user"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kubeconfig.Contexts["host"] = &clientcmdapi.Context{Cluster: "host", AuthInfo: "user"}
	kubeconfig.CurrentContext = "host"
	path := filepath.Join(GinkgoT().TempDir(), "kubeconfig")
	Expect(clientcmd.WriteToFile(*kubeconfig, path)).To(Succeed())
	return path
}

func ensureNamespace(c client.Client, name string) {
	GinkgoHelper()
	err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	Expect(client.IgnoreAlreadyExists(err)).To(Succeed())
}

// grantGeneratedRoles creates the roles of a controller-gen role file and binds each to user.
func grantGeneratedRoles(c client.Client, path, user string) {
	GinkgoHelper()
	data, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	subjects := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	for {
		var role unstructured.Unstructured
		if err := decoder.Decode(&role.Object); err != nil {
			Expect(err).To(MatchError(io.EOF))
			return
		}
		if role.Object == nil {
			continue
		}
		Expect(createOrReplace(c, &role)).To(Succeed())
		ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: role.GetKind(), Name: role.GetName()}
		meta := metav1.ObjectMeta{Name: role.GetName(), Namespace: role.GetNamespace()}
		var binding client.Object = &rbacv1.ClusterRoleBinding{ObjectMeta: meta, RoleRef: ref, Subjects: subjects}
		if role.GetKind() == "Role" {
			binding = &rbacv1.RoleBinding{ObjectMeta: meta, RoleRef: ref, Subjects: subjects}
		}
		Expect(createOrReplace(c, binding)).To(Succeed())
	}
}

// grantRole grants rules in namespace to user.
func grantRole(c client.Client, namespace, user string, rules []rbacv1.PolicyRule) {
	GinkgoHelper()
	meta := metav1.ObjectMeta{Namespace: namespace, Name: user}
	Expect(c.Create(ctx, &rbacv1.Role{ObjectMeta: meta, Rules: rules})).To(Succeed())
	Expect(c.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: meta,
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	})).To(Succeed())
}

func createOrReplace(c client.Client, obj client.Object) error {
	err := c.Create(ctx, obj)
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	if err := c.Delete(ctx, obj); err != nil {
		return err
	}
	obj.SetResourceVersion("")
	return c.Create(ctx, obj)
}
