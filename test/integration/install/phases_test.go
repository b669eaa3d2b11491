package install

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/internal/testenv"
	"github.com/karmada-quota/karmada-quota/operator/pkg/install"
	"github.com/karmada-quota/karmada-quota/operator/pkg/render"
	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/webhookconfig"
	"github.com/karmada-quota/karmada-quota/test/integration/framework"
)

// canI asks the karmada-apiserver, as whoever the client is, whether it may do something.
func canI(typed kubernetes.Interface, attrs authorizationv1.ResourceAttributes) bool {
	GinkgoHelper()
	review, err := typed.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
		&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return review.Status.Allowed
}

// whoAmI is `kubectl auth whoami` as the client.
func whoAmI(typed kubernetes.Interface) string {
	GinkgoHelper()
	review, err := typed.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return review.Status.UserInfo.Username
}

// identityClient acts in the karmada-apiserver with the kubeconfig the installer wrote for a component.
func identityClient(in *render.Installation, serviceAccount string) kubernetes.Interface {
	GinkgoHelper()
	for _, id := range in.Config.Identities {
		if id.ServiceAccount == serviceAccount {
			s, err := hostSecret(in.Config.Namespace, id.KubeconfigSecret)
			Expect(err).NotTo(HaveOccurred())
			return kubeconfigClient(s.Data[install.KubeconfigKey])
		}
	}
	Fail("no identity " + serviceAccount)
	return nil
}

func quotaStatusUpdate() authorizationv1.ResourceAttributes {
	return authorizationv1.ResourceAttributes{Verb: "update", Group: "quota.karmada.io", Resource: "karmadaquotas", Subresource: "status", Namespace: "team-a"}
}

var _ = Describe("Install phases", func() {
	BeforeEach(cleanKarmadaPlaneAfterwards)

	Describe("Prepare", func() {
		It("applies the CRD first and established, then RBAC, roles, identities that really authenticate, and the certificates", func() {
			ns := newHostNamespace("prepare")
			in := renderChart(ns, nil)
			installer, seen := newInstaller(in)
			Expect(installer.Prepare(ctx)).To(Succeed())

			By("the CRDs first, each established before anything else was applied")
			applied := seen.take()
			Expect(len(applied)).To(BeNumerically(">", 2))
			for _, o := range applied[:2] {
				Expect(o).To(MatchFields(IgnoreExtras, Fields{"InKarmada": BeTrue(), "Kind": Equal("CustomResourceDefinition"), "Change": Equal(install.Created)}))
			}
			for _, o := range applied {
				Expect(o.CRDEstablished).To(BeTrue(), "%s %s was applied before a CRD applied earlier was established", o.Kind, o.Name)
			}

			By("every karmada-apiserver object of the chart, with the installation's labels")
			for _, obj := range in.Karmada {
				got, err := getKarmada(obj)
				Expect(err).NotTo(HaveOccurred(), "%s %s", obj.GetKind(), obj.GetName())
				Expect(got).To(haveLabels(in.Config.Labels), "%s %s", obj.GetKind(), obj.GetName())
			}
			kinds := map[string]int{}
			for _, obj := range in.Karmada {
				kinds[obj.GetKind()]++
			}
			Expect(kinds).To(And(HaveKey("ClusterRole"), HaveKey("ClusterRoleBinding"), HaveKey("ServiceAccount"), HaveKey("Role"), HaveKey("RoleBinding")))

			By("the business roles aggregated into view, edit and admin")
			for _, name := range []string{"karmada-quota-view", "karmada-quota-view-resourcebindings"} {
				role, err := karmadaPlane.typed.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
				Expect(err).NotTo(HaveOccurred())
				for _, to := range []string{"view", "edit", "admin"} {
					Expect(role.Labels).To(HaveKeyWithValue("rbac.authorization.k8s.io/aggregate-to-"+to, "true"), name)
				}
				for _, rule := range role.Rules {
					Expect(rule.Verbs).To(ConsistOf("get", "list", "watch"), "business roles only read")
				}
			}

			By("a kubeconfig Secret per identity in the host, authenticating as the component's service account")
			Expect(in.Config.Identities).To(HaveLen(2))
			Expect(tokens.issued.Load()).To(BeNumerically(">=", 2), "the tokens came from the TokenRequest API")
			for _, id := range in.Config.Identities {
				s, err := hostSecret(ns, id.KubeconfigSecret)
				Expect(err).NotTo(HaveOccurred())
				Expect(s).To(haveLabels(in.Config.Labels))
				kubeconfig, err := clientcmd.Load(s.Data[install.KubeconfigKey])
				Expect(err).NotTo(HaveOccurred())
				for _, cluster := range kubeconfig.Clusters {
					Expect(cluster.CertificateAuthorityData).To(Equal(karmadaPlane.config.CAData), "the CA travels inline")
					Expect(cluster.CertificateAuthority).To(BeEmpty())
				}
				Expect(whoAmI(kubeconfigClient(s.Data[install.KubeconfigKey]))).
					To(Equal("system:serviceaccount:" + in.Config.Karmada.Namespace + ":" + id.ServiceAccount))
			}

			By("the controller's identity holds its rights and no more")
			controllerID := identityClient(in, "karmada-quota-controller")
			Expect(canI(controllerID, quotaStatusUpdate())).To(BeTrue())
			Expect(canI(controllerID, authorizationv1.ResourceAttributes{Verb: "update", Group: "quota.karmada.io", Resource: "karmadaquotaledgers", Namespace: "team-a"})).To(BeTrue())
			Expect(canI(controllerID, authorizationv1.ResourceAttributes{Verb: "patch", Group: "work.karmada.io", Resource: "resourcebindings", Namespace: "team-a"})).To(BeTrue())
			Expect(canI(controllerID, authorizationv1.ResourceAttributes{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Namespace: in.Config.Karmada.Namespace})).To(BeTrue())
			Expect(canI(controllerID, authorizationv1.ResourceAttributes{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Namespace: "kube-system"})).To(BeFalse())
			Expect(canI(controllerID, authorizationv1.ResourceAttributes{Verb: "delete", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"})).To(BeFalse())
			Expect(canI(controllerID, authorizationv1.ResourceAttributes{Verb: "delete", Group: "quota.karmada.io", Resource: "karmadaquotas", Namespace: "team-a"})).To(BeFalse())
			Expect(canI(controllerID, authorizationv1.ResourceAttributes{Verb: "create", Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations"})).To(BeFalse())
			// quota-controller keeps the caBundle of karmada-quota's webhook configuration, and of no other.
			Expect(canI(controllerID, authorizationv1.ResourceAttributes{Verb: "patch", Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations", Name: webhookconfig.ConfigurationName})).To(BeTrue())
			Expect(canI(controllerID, authorizationv1.ResourceAttributes{Verb: "patch", Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations", Name: "karmada-webhook"})).To(BeFalse())

			webhookID := identityClient(in, "karmada-quota-webhook")
			// The webhook writes reservations into the quotas' ledgers, never their status.
			Expect(canI(webhookID, authorizationv1.ResourceAttributes{Verb: "update", Group: "quota.karmada.io", Resource: "karmadaquotaledgers", Namespace: "team-a"})).To(BeTrue())
			Expect(canI(webhookID, quotaStatusUpdate())).To(BeFalse())
			Expect(canI(webhookID, authorizationv1.ResourceAttributes{Verb: "get", Group: "work.karmada.io", Resource: "resourcebindings", Namespace: "team-a"})).To(BeTrue())
			Expect(canI(webhookID, authorizationv1.ResourceAttributes{Verb: "patch", Group: "work.karmada.io", Resource: "resourcebindings", Namespace: "team-a"})).To(BeFalse())
			Expect(canI(webhookID, authorizationv1.ResourceAttributes{Verb: "delete", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"})).To(BeFalse())

			By("the self-managed CA and serving certificate for the webhook Service's names")
			serving, err := hostSecret(ns, in.Config.Certificates.ServingSecret)
			Expect(err).NotTo(HaveOccurred())
			Expect(serving.Type).To(Equal(corev1.SecretTypeTLS))
			Expect(serving.Data).To(And(HaveKey("tls.crt"), HaveKey("tls.key"), HaveKey("ca.crt")))
			_, err = tls.X509KeyPair(serving.Data["tls.crt"], serving.Data["tls.key"])
			Expect(err).NotTo(HaveOccurred(), "tls.key matches tls.crt")
			block, _ := pem.Decode(serving.Data["tls.crt"])
			Expect(block).NotTo(BeNil())
			cert, err := x509.ParseCertificate(block.Bytes)
			Expect(err).NotTo(HaveOccurred())
			Expect(cert.DNSNames).To(ConsistOf(in.Config.Certificates.DNSNames))
			Expect(cert.DNSNames).To(ContainElement(release + "-webhook." + ns + ".svc"))
			roots := x509.NewCertPool()
			Expect(roots.AppendCertsFromPEM(serving.Data["ca.crt"])).To(BeTrue())
			_, err = cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: release + "-webhook." + ns + ".svc", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
			Expect(err).NotTo(HaveOccurred(), "ca.crt verifies the serving certificate for the Service's name")
			Expect(serving).To(haveLabels(in.Config.Labels), "cleanup and the operator find it by the installation's labels")
			caSecret, err := hostSecret(ns, in.Config.Certificates.CASecret)
			Expect(err).NotTo(HaveOccurred())
			Expect(caSecret).To(haveLabels(in.Config.Labels))
		})

		It("changes nothing when run again", func() {
			ns := newHostNamespace("prepare-twice")
			in := renderChart(ns, nil)
			installer, seen := newInstaller(in)
			Expect(installer.Prepare(ctx)).To(Succeed())
			before := snapshot(in)
			seen.take()

			Expect(installer.Prepare(ctx)).To(Succeed())
			Expect(seen.take()).To(BeEmpty(), "a second Prepare reports nothing created or changed")
			Expect(snapshot(in)).To(Equal(before), "a second Prepare writes nothing")
		})

		It("applies changed values: the business roles narrowed, then turned off", func() {
			ns := newHostNamespace("prepare-values")
			installer, _ := newInstaller(renderChart(ns, nil))
			Expect(installer.Prepare(ctx)).To(Succeed())
			roles := func() []string {
				var names []string
				for _, name := range []string{"karmada-quota-view", "karmada-quota-view-resourcebindings"} {
					_, err := karmadaPlane.typed.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
					if err == nil {
						names = append(names, name)
					} else {
						Expect(apierrors.IsNotFound(err)).To(BeTrue())
					}
				}
				return names
			}
			Expect(roles()).To(HaveLen(2))

			narrowed, _ := newInstaller(renderChart(ns, map[string]any{"businessRoles": map[string]any{"readResourceBindings": false}}))
			Expect(narrowed.Prepare(ctx)).To(Succeed())
			Expect(roles()).To(ConsistOf("karmada-quota-view"), "ResourceBindings are no longer readable through view")

			off, _ := newInstaller(renderChart(ns, map[string]any{"businessRoles": map[string]any{"enabled": false}}))
			Expect(off.Prepare(ctx)).To(Succeed())
			Expect(roles()).To(BeEmpty(), "quotas are no longer readable through view")
			_, err := karmadaPlane.typed.RbacV1().ClusterRoles().Get(ctx, "karmada-quota-controller", metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred(), "the components' roles stay")
		})
	})

	Describe("Register", func() {
		It("waits for the webhook's rollout, then registers the URL, the serving Secret's CA and the timeout", func() {
			ns := newHostNamespace("register")
			in := renderChart(ns, map[string]any{"webhook": map[string]any{"timeoutSeconds": 7}})
			installer, _ := newInstaller(in)
			Expect(installer.Prepare(ctx)).To(Succeed())
			applyHostObjects(in)

			done := make(chan error, 1)
			go func() { done <- installer.Register(ctx) }()
			vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
			Consistently(func() bool {
				return apierrors.IsNotFound(karmadaPlane.client.Get(ctx, client.ObjectKey{Name: webhookconfig.ConfigurationName}, vwc))
			}).WithTimeout(2*time.Second).Should(BeTrue(), "nothing is registered while no webhook replica serves")
			Expect(done).NotTo(Receive())

			deployments.mustRollOut(ns, in.Config.Webhook.Deployment)
			Eventually(done).WithTimeout(10 * time.Second).Should(Receive(BeNil()))

			serving, err := hostSecret(ns, in.Config.Certificates.ServingSecret)
			Expect(err).NotTo(HaveOccurred())
			Expect(karmadaPlane.client.Get(ctx, client.ObjectKey{Name: webhookconfig.ConfigurationName}, vwc)).To(Succeed())
			Expect(vwc).To(haveLabels(in.Config.Labels))
			Expect(vwc.Webhooks).To(HaveLen(len(webhookconfig.Configuration("", nil, 0).Webhooks)), "every webhook of the install contract")
			url := "https://" + release + "-webhook." + ns + ".svc:443"
			Expect(in.Config.Webhook.URL).To(Equal(url))
			for _, w := range vwc.Webhooks {
				Expect(*w.ClientConfig.URL).To(HavePrefix(url + "/"))
				Expect(w.ClientConfig.CABundle).To(Equal(serving.Data["ca.crt"]))
				// Fail closed, except the resource template gate, which only brings a refusal forward.
				policy := admissionregistrationv1.Fail
				if w.Name == webhookconfig.TemplateWebhook {
					policy = admissionregistrationv1.Ignore
				}
				Expect(*w.FailurePolicy).To(Equal(policy), w.Name)
			}
			Expect(*w(vwc, webhookconfig.BindingWebhook).TimeoutSeconds).To(Equal(int32(7)))
			Expect(*w(vwc, webhookconfig.BindingWebhook).ClientConfig.URL).To(Equal(url + webhookconfig.ResourceBindingPath))
			Expect(*w(vwc, webhookconfig.QuotaWebhook).ClientConfig.URL).To(Equal(url + webhookconfig.KarmadaQuotaPath))
			Expect(*w(vwc, webhookconfig.WorkWebhook).ClientConfig.URL).To(Equal(url + webhookconfig.WorkPath))
			Expect(*w(vwc, webhookconfig.TemplateWebhook).ClientConfig.URL).To(Equal(url + webhookconfig.ResourceTemplatePath))

			By("quota-controller, as its own identity, keeps the caBundle in sync")
			for i := range vwc.Webhooks {
				vwc.Webhooks[i].ClientConfig.CABundle = selfSignedCA()
			}
			Expect(karmadaPlane.client.Update(ctx, vwc)).To(Succeed())
			asController := identityControllerRuntimeClient(in, "karmada-quota-controller")
			renewer, err := install.CertificatesFor(in.Config, hostPlane.client, asController)
			Expect(err).NotTo(HaveOccurred())
			_, err = renewer.Reconcile(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(karmadaPlane.client.Get(ctx, client.ObjectKeyFromObject(vwc), vwc)).To(Succeed())
			for _, hook := range vwc.Webhooks {
				Expect(hook.ClientConfig.CABundle).To(Equal(serving.Data["ca.crt"]), hook.Name)
			}
		})

		It("RegisterIfReady does not wait: without a CA bundle it reports so at once", func() {
			ns := newHostNamespace("register-if-ready")
			in := renderChart(ns, map[string]any{"certificates": map[string]any{"mode": "cert-manager"}})
			installer, _ := newInstaller(in)
			Expect(installer.Certificates).To(BeNil(), "cert-manager issues the certificate")
			Expect(installer.Prepare(ctx)).To(Succeed())

			start := time.Now()
			registered, err := installer.RegisterIfReady(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(registered).To(BeFalse())
			Expect(time.Since(start)).To(BeNumerically("<", 500*time.Millisecond))

			// cert-manager writes the Secret, first without ca.crt (as an ACME issuer would).
			secret := &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: in.Config.Certificates.ServingSecret},
				Type:       corev1.SecretTypeTLS,
				Data:       map[string][]byte{"tls.crt": []byte("cert"), "tls.key": []byte("key")},
			}
			Expect(hostPlane.client.Create(ctx, secret)).To(Succeed())
			registered, err = installer.RegisterIfReady(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(registered).To(BeFalse())

			ca := selfSignedCA()
			secret.Data["ca.crt"] = ca
			Expect(hostPlane.client.Update(ctx, secret)).To(Succeed())
			registered, err = installer.RegisterIfReady(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(registered).To(BeTrue())
			vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
			Expect(karmadaPlane.client.Get(ctx, client.ObjectKey{Name: webhookconfig.ConfigurationName}, vwc)).To(Succeed())
			for _, w := range vwc.Webhooks {
				Expect(w.ClientConfig.CABundle).To(Equal(ca))
			}
		})
	})

	Describe("Unregister and Cleanup", func() {
		It("Unregister deletes the webhook configuration and returns only once it is gone", func() {
			ns := newHostNamespace("unregister")
			installer, _ := newInstaller(renderChart(ns, nil))
			Expect(installer.Prepare(ctx)).To(Succeed())
			Expect(installer.RegisterIfReady(ctx)).To(BeTrue())

			// A finalizer holds the configuration in deletion, as a slow karmada-apiserver replica would.
			vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
			Expect(karmadaPlane.client.Get(ctx, client.ObjectKey{Name: webhookconfig.ConfigurationName}, vwc)).To(Succeed())
			vwc.Finalizers = []string{"test.karmada-quota.io/hold"}
			Expect(karmadaPlane.client.Update(ctx, vwc)).To(Succeed())

			done := make(chan error, 1)
			go func() { done <- installer.Unregister(ctx) }()
			Eventually(func() bool {
				Expect(karmadaPlane.client.Get(ctx, client.ObjectKeyFromObject(vwc), vwc)).To(Succeed())
				return vwc.DeletionTimestamp != nil
			}).Should(BeTrue())
			Consistently(done).WithTimeout(time.Second).ShouldNot(Receive(), "Unregister waits while the configuration is still there")

			vwc.Finalizers = nil
			Expect(karmadaPlane.client.Update(ctx, vwc)).To(Succeed())
			Eventually(done).WithTimeout(5 * time.Second).Should(Receive(BeNil()))
			Expect(apierrors.IsNotFound(karmadaPlane.client.Get(ctx, client.ObjectKeyFromObject(vwc), vwc))).To(BeTrue())
			Expect(installer.Unregister(ctx)).To(Succeed(), "unregistering twice is fine")
		})

		It("Cleanup removes RBAC, identities in both planes and certificates, and keeps the CRD and the quotas", func() {
			ns := newHostNamespace("cleanup")
			in := renderChart(ns, nil)
			installer, _ := newInstaller(in)
			Expect(installer.Prepare(ctx)).To(Succeed())
			// Before the webhook is registered: no webhook serves in this test to admit it.
			quota := createQuota("cleanup-team")
			Expect(installer.RegisterIfReady(ctx)).To(BeTrue())

			Expect(installer.Unregister(ctx)).To(Succeed())
			Expect(installer.Cleanup(ctx)).To(Succeed())

			for _, obj := range in.Karmada {
				_, err := getKarmada(obj)
				if obj.GetKind() == "CustomResourceDefinition" {
					Expect(err).NotTo(HaveOccurred(), "the CRD stays")
					continue
				}
				Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%s %s is still there (%v)", obj.GetKind(), obj.GetName(), err)
			}
			var tokenSecrets corev1.SecretList
			Expect(karmadaPlane.client.List(ctx, &tokenSecrets, client.InNamespace(in.Config.Karmada.Namespace), client.MatchingLabels{partOf: "karmada-quota"})).To(Succeed())
			Expect(tokenSecrets.Items).To(BeEmpty(), "the identities' tokens are gone from the karmada-apiserver")
			for _, name := range []string{in.Config.Identities[0].KubeconfigSecret, in.Config.Identities[1].KubeconfigSecret,
				in.Config.Certificates.ServingSecret, in.Config.Certificates.CASecret} {
				_, err := hostSecret(ns, name)
				Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Secret %s is still in the host", name)
			}
			Expect(karmadaPlane.client.Get(ctx, client.ObjectKeyFromObject(quota), quota)).To(Succeed(), "quotas stay")
			Expect(installer.Cleanup(ctx)).To(Succeed(), "cleaning up twice is fine")
		})

		It("Cleanup with uninstall.removeCRD removes the CRD, and the quotas with it", func() {
			ns := newHostNamespace("cleanup-crd")
			installer, _ := newInstaller(renderChart(ns, map[string]any{"uninstall": map[string]any{"removeCRD": true}}))
			Expect(installer.Prepare(ctx)).To(Succeed())
			createQuota("cleanup-crd-team")
			Expect(installer.Cleanup(ctx)).To(Succeed())
			Eventually(func() bool {
				return apierrors.IsNotFound(karmadaPlane.client.Get(ctx, client.ObjectKey{Name: crdName}, &apiextensionsv1.CustomResourceDefinition{}))
			}).WithTimeout(30 * time.Second).Should(BeTrue())
		})
	})

	Describe("misconfiguration", func() {
		It("refuses a karmada-apiserver kubeconfig whose CA is a file path", func() {
			kubeconfig, err := clientcmd.Load(karmadaPlane.adminKubeconfig)
			Expect(err).NotTo(HaveOccurred())
			for _, cluster := range kubeconfig.Clusters {
				cluster.CertificateAuthority = writeTemp("ca.crt", cluster.CertificateAuthorityData)
				cluster.CertificateAuthorityData = nil
			}
			raw, err := clientcmd.Write(*kubeconfig)
			Expect(err).NotTo(HaveOccurred())
			_, err = install.KarmadaFromKubeconfig(raw)
			Expect(err).To(MatchError(ContainSubstring("must carry its CA inline (certificate-authority-data)")))
		})

		It("refuses an install configuration without names, naming each", func() {
			config := renderChart("karmada-system", nil).Config
			config.Namespace, config.Webhook.Deployment, config.Controller.Deployment = "", "", ""
			config.Webhook.URL = "http://karmada-quota-webhook"
			err := config.Validate()
			Expect(err).To(HaveOccurred())
			for _, problem := range []string{"namespace must be set", "webhook.deployment must be set", "controller.deployment must be set", "webhook.url must be https://"} {
				Expect(err.Error()).To(ContainSubstring(problem))
			}
			_, err = install.ParseConfig([]byte("namespace: karmada-system\nwebhok: {}\n"))
			Expect(err).To(MatchError(ContainSubstring(`unknown field "webhok"`)), "a typo is refused, not ignored")
		})
	})
})

// identityControllerRuntimeClient is a controller-runtime client acting in the karmada-apiserver with the
// kubeconfig the installer wrote for a component.
func identityControllerRuntimeClient(in *render.Installation, serviceAccount string) client.Client {
	GinkgoHelper()
	for _, id := range in.Config.Identities {
		if id.ServiceAccount == serviceAccount {
			s, err := hostSecret(in.Config.Namespace, id.KubeconfigSecret)
			Expect(err).NotTo(HaveOccurred())
			cfg, err := clientcmd.RESTConfigFromKubeConfig(s.Data[install.KubeconfigKey])
			Expect(err).NotTo(HaveOccurred())
			c, err := client.New(cfg, client.Options{Scheme: install.Scheme})
			Expect(err).NotTo(HaveOccurred())
			return c
		}
	}
	Fail("no identity " + serviceAccount)
	return nil
}

// w is a webhook of the configuration by name.
func w(vwc *admissionregistrationv1.ValidatingWebhookConfiguration, name string) admissionregistrationv1.ValidatingWebhook {
	GinkgoHelper()
	for _, hook := range vwc.Webhooks {
		if hook.Name == name {
			return hook
		}
	}
	Fail("no webhook " + name)
	return admissionregistrationv1.ValidatingWebhook{}
}

// createQuota creates a namespace and a KarmadaQuota in it in the karmada-apiserver.
func createQuota(namespace string) *quotav1alpha1.KarmadaQuota {
	GinkgoHelper()
	Expect(client.IgnoreAlreadyExists(karmadaPlane.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}))).To(Succeed())
	quota := testenv.Quota(namespace, "team", framework.List("cpu", "10"))
	Eventually(func() error { return karmadaPlane.client.Create(ctx, quota) }).Should(Succeed())
	return quota
}

// snapshot is the resourceVersion of everything an installation wrote in both planes.
func snapshot(in *render.Installation) map[string]string {
	GinkgoHelper()
	out := map[string]string{}
	for _, obj := range in.Karmada {
		got, err := getKarmada(obj)
		Expect(err).NotTo(HaveOccurred())
		out["karmada/"+obj.GetKind()+"/"+obj.GetName()] = got.GetResourceVersion()
	}
	var secrets corev1.SecretList
	Expect(karmadaPlane.client.List(ctx, &secrets, client.MatchingLabels{partOf: "karmada-quota"})).To(Succeed())
	for _, s := range secrets.Items {
		out["karmada/Secret/"+s.Name] = s.ResourceVersion
	}
	names := []string{in.Config.Certificates.ServingSecret, in.Config.Certificates.CASecret}
	for _, id := range in.Config.Identities {
		names = append(names, id.KubeconfigSecret)
	}
	for _, name := range names {
		s, err := hostSecret(in.Config.Namespace, name)
		Expect(err).NotTo(HaveOccurred())
		out["host/Secret/"+name] = s.ResourceVersion
	}
	return out
}
