package e2e

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/hack/localkarmada"
	"github.com/karmada-quota/karmada-quota/internal/testenv"
	"github.com/karmada-quota/karmada-quota/pkg/kubectlplugin"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
	"github.com/karmada-quota/karmada-quota/pkg/webhookconfig"
)

// The environment installs karmada-quota with its Helm chart into the host cluster, and the host's kubelet runs
// the pods the chart rendered. These specs follow that installation through what an admin does with it: read it,
// let teams read their quotas, upgrade it, watch a certificate renew, uninstall it. They leave it installed as
// they found it.
var _ = Describe("karmada-quota installed with its Helm chart", Ordered, Serial, func() {
	var host client.Client
	BeforeAll(func() {
		var err error
		host, err = localkarmada.Client(env.Host.Kubeconfig)
		Expect(err).NotTo(HaveOccurred())
	})

	It("runs the Deployments the chart rendered, as the identities the install jobs made", func() {
		for _, name := range []string{localkarmada.QuotaWebhookDeployment, localkarmada.QuotaControllerDeployment} {
			pods, err := env.DeploymentPods(ctx, localkarmada.KarmadaNamespace, name)
			Expect(err).NotTo(HaveOccurred())
			Expect(pods).To(HaveLen(2), "%s runs two replicas", name)
			for _, p := range pods {
				Expect(p.Ready).To(BeTrue(), "%s is ready", p.Name)
				Expect(p.PIDs).To(HaveLen(1), "%s runs its one container as a local process", p.Name)
			}
		}

		By("the webhook configuration reaches the webhook's Service by its in-cluster name, trusting the installation's CA")
		conf := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		Expect(karmada.Get(ctx, client.ObjectKey{Name: webhookconfig.ConfigurationName}, conf)).To(Succeed())
		serving := &corev1.Secret{}
		Expect(host.Get(ctx, client.ObjectKey{Namespace: localkarmada.KarmadaNamespace, Name: "karmada-quota-webhook-cert"}, serving)).To(Succeed())
		for _, w := range conf.Webhooks {
			Expect(*w.ClientConfig.URL).To(HavePrefix("https://karmada-quota-webhook.karmada-system.svc:443/"))
			Expect(w.ClientConfig.CABundle).To(Equal(serving.Data["ca.crt"]))
			// Fail closed, except the resource template gate: it only brings forward a refusal the binding and Work
			// gates enforce.
			policy := admissionregistrationv1.Fail
			if w.Name == webhookconfig.TemplateWebhook {
				policy = admissionregistrationv1.Ignore
			}
			Expect(*w.FailurePolicy).To(Equal(policy), w.Name)
		}

		By("the controller leads, holding the Lease in the karmada-apiserver, as its own service account")
		lease := &coordinationv1.Lease{}
		Expect(karmada.Get(ctx, client.ObjectKey{Namespace: "karmada-system", Name: "karmada-quota-controller"}, lease)).To(Succeed())
		Expect(lease.Spec.HolderIdentity).NotTo(BeNil())
		controller := &appsv1.Deployment{}
		Expect(host.Get(ctx, client.ObjectKey{Namespace: localkarmada.KarmadaNamespace, Name: localkarmada.QuotaControllerDeployment}, controller)).To(Succeed())
		Expect(controller.Spec.Template.Spec.Volumes).To(ContainElement(HaveField("Secret.SecretName", "karmada-quota-controller-kubeconfig")),
			"the controller reads the kubeconfig of its own identity")
		identity := &corev1.Secret{}
		Expect(host.Get(ctx, client.ObjectKey{Namespace: localkarmada.KarmadaNamespace, Name: "karmada-quota-controller-kubeconfig"}, identity)).To(Succeed())
		kubeconfig, err := clientcmd.Load(identity.Data["kubeconfig"])
		Expect(err).NotTo(HaveOccurred())
		token := kubeconfig.AuthInfos[kubeconfig.Contexts[kubeconfig.CurrentContext].AuthInfo].Token
		tokenReview := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}
		Expect(karmada.Create(ctx, tokenReview)).To(Succeed())
		Expect(tokenReview.Status.User.Username).To(Equal("system:serviceaccount:karmada-system:karmada-quota-controller"))
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: tokenReview.Status.User.Username, Groups: tokenReview.Status.User.Groups,
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: "delete", Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions",
			},
		}}
		Expect(karmada.Create(ctx, review)).To(Succeed())
		Expect(review.Status.Allowed).To(BeFalse(), "the controller's identity holds only what its role grants")
	})

	It("admits and refuses real workloads", func() {
		ns := newNamespace("chart")
		createQuota(ns, "compute", list("cpu", "2"))
		deploy(ns, "fits", 2, "500m", "128Mi", divided())
		expectScheduled(ns, "fits", 2)
		deploy(ns, "too-big", 3, "500m", "128Mi", divided())
		Expect(expectRefused(ns, "too-big")).To(ContainSubstring("compute"))
		Expect(canonical(expectSettled(ns, "compute").Used)).To(Equal(resources.List{"requests.cpu": cpu(1)}))
	})

	It("lets a business team read its quota with the stock view role, and write neither the quota nor its status", func() {
		ns := newNamespace("team")
		createQuota(ns, "team", list("cpu", "4", "pods", "10"))
		expectSettled(ns, "team")
		const user = "team-member"
		binding := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "team-view"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
		}
		Expect(karmada.Create(ctx, binding)).To(Succeed())

		can := func(verb, resource, subresource string) bool {
			review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User: user,
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Namespace: ns, Verb: verb, Group: "quota.karmada.io", Resource: resource, Subresource: subresource,
				},
			}}
			Expect(karmada.Create(ctx, review)).To(Succeed())
			return review.Status.Allowed
		}
		// view is aggregated by the karmada-apiserver's clusterrole-aggregation controller: give it a moment.
		Eventually(func() bool { return can("get", "karmadaquotas", "") }).WithTimeout(timeout).Should(BeTrue(), "view reads quotas")
		Expect(can("list", "karmadaquotas", "")).To(BeTrue())
		Expect(can("watch", "karmadaquotas", "")).To(BeTrue())
		Expect(can("update", "karmadaquotas", "")).To(BeFalse(), "teams do not set their own limits")
		Expect(can("update", "karmadaquotas", "status")).To(BeFalse(), "nobody frees quota by editing status")

		By("reading it as the team does, with the kubectl plugin and the team's identity")
		var out, errOut bytes.Buffer
		code := kubectlplugin.Run(ctx, []string{"describe", "team", "-n", ns, "--kubeconfig", env.Karmada.Kubeconfig, "--as", user},
			genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
		Expect(code).To(BeZero(), errOut.String())
		Expect(out.String()).To(ContainSubstring("Namespace:"))
		Expect(out.String()).To(MatchRegexp(`cpu\s+0\s+0\s+4`))
	})

	It("upgrades to a new version and new values while every binding write is admitted or refused by quota", func() {
		ns := newNamespace("upgrade")
		createQuota(ns, "writes", list("cpu", "1"))
		before := expectSettled(ns, "writes")
		registry, tag, err := env.QuotaImages()
		Expect(err).NotTo(HaveOccurred())
		newTag := tag + "-upgrade"
		retagImages(registry, tag, newTag)

		// Sampled throughout the rollout: two versions of the webhook and the controller decide side by side.
		sampler := sampleAdmissions(ns, "writes")
		writer := startWriter(ns, 10, 4)
		time.Sleep(2 * time.Second)
		values, err := env.QuotaValues(map[string]any{
			"image":   map[string]any{"tag": newTag},
			"webhook": map[string]any{"reservationTTL": "90s"},
		})
		Expect(err).NotTo(HaveOccurred())
		start := time.Now()
		_, err = env.UpgradeQuota(ctx, values)
		Expect(err).NotTo(HaveOccurred())
		took := time.Since(start)
		time.Sleep(2 * time.Second)
		stats := writer.Stop()
		fmt.Fprintf(GinkgoWriter, "upgrade to %s took %s; the writer saw %s\n", newTag, took.Round(100*time.Millisecond), stats)
		Expect(stats.Failed).To(BeZero(), "writes failing for another reason than the quota: %v", stats.Failures)
		Expect(stats.Admitted).To(BeNumerically(">", 0))
		Expect(stats.Refused).To(BeNumerically(">", 0), "the writer asks for more than the quota holds")
		sampler.expectNeverAboveHard()

		By("every replica runs the new version")
		for _, name := range []string{localkarmada.QuotaWebhookDeployment, localkarmada.QuotaControllerDeployment} {
			pods, err := env.DeploymentPods(ctx, localkarmada.KarmadaNamespace, name)
			Expect(err).NotTo(HaveOccurred())
			for _, p := range pods {
				if !p.Terminating {
					Expect(p.Pod.Spec.Containers[0].Image).To(HaveSuffix(":"+newTag), p.Name)
				}
			}
		}
		By("quotas and their status are kept, and the accounting stays exact")
		after := expectSettled(ns, "writes")
		Expect(after.Hard).To(Equal(before.Hard))
		Expect(canonical(after.Used)["requests.cpu"]).To(BeNumerically("<=", cpu(1)))
	})

	It("renews the webhook's certificate while bindings are written, refusing none for it", func() {
		ns := newNamespace("renewal")
		createQuota(ns, "writes", list("cpu", "1"))
		values, err := env.QuotaValues(map[string]any{"certificates": map[string]any{"selfManaged": map[string]any{
			"validity": "90s", "checkInterval": "5s",
		}}})
		Expect(err).NotTo(HaveOccurred())
		_, err = env.UpgradeQuota(ctx, values)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() {
			values, err := env.QuotaValues(nil)
			Expect(err).NotTo(HaveOccurred())
			_, err = env.UpgradeQuota(ctx, values)
			Expect(err).NotTo(HaveOccurred())
		})

		// A renewal is due once a third of the validity is left. The upgrade may already have renewed: wait for the
		// webhook to serve a 90-second certificate before watching for the next one.
		var first *x509.Certificate
		Eventually(func(g Gomega) {
			first = servedCertificate(g, host)
			g.Expect(first.NotAfter.Sub(first.NotBefore)).To(BeNumerically("<=", 2*time.Minute))
		}).WithTimeout(timeout).WithPolling(time.Second).Should(Succeed())

		writer := startWriter(ns, 10, 4)
		var renewed *x509.Certificate
		Eventually(func(g Gomega) {
			renewed = servedCertificate(g, host)
			g.Expect(renewed.SerialNumber).NotTo(Equal(first.SerialNumber), "still serving the first certificate")
		}).WithTimeout(2 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
		time.Sleep(3 * time.Second)
		stats := writer.Stop()
		fmt.Fprintf(GinkgoWriter, "certificate %s (until %s) renewed to %s (until %s); the writer saw %s\n",
			serial(first.SerialNumber), first.NotAfter.Format(time.TimeOnly), serial(renewed.SerialNumber), renewed.NotAfter.Format(time.TimeOnly), stats)
		Expect(stats.Failed).To(BeZero(), "writes failing for another reason than the quota: %v", stats.Failures)
		Expect(stats.Admitted).To(BeNumerically(">", 0))
	})

	It("uninstalls with the webhook configuration gone first, keeps the quotas, and Karmada keeps scheduling", func() {
		ns := newNamespace("uninstall")
		createQuota(ns, "compute", list("cpu", "1"))
		deploy(ns, "web", 2, "500m", "128Mi", divided())
		expectScheduled(ns, "web", 2)
		expectSettled(ns, "compute")

		// Record when the webhook configuration disappears and when the webhook's Deployment starts to go.
		var unregistered, webhookGoing atomic.Int64
		stopWatching := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			for {
				select {
				case <-stopWatching:
					return
				case <-time.After(20 * time.Millisecond):
				}
				now := time.Now().UnixNano()
				conf := &admissionregistrationv1.ValidatingWebhookConfiguration{}
				if err := karmada.Get(ctx, client.ObjectKey{Name: webhookconfig.ConfigurationName}, conf); apierrors.IsNotFound(err) {
					unregistered.CompareAndSwap(0, now)
				}
				d := &appsv1.Deployment{}
				err := host.Get(ctx, client.ObjectKey{Namespace: localkarmada.KarmadaNamespace, Name: localkarmada.QuotaWebhookDeployment}, d)
				if apierrors.IsNotFound(err) || (err == nil && d.DeletionTimestamp != nil) {
					webhookGoing.CompareAndSwap(0, now)
				}
			}
		}()
		Expect(env.UninstallQuota(ctx)).To(Succeed())
		close(stopWatching)
		Expect(unregistered.Load()).NotTo(BeZero(), "the webhook configuration was removed")
		Expect(webhookGoing.Load()).NotTo(BeZero(), "the webhook was removed")
		Expect(unregistered.Load()).To(BeNumerically("<", webhookGoing.Load()),
			"the webhook configuration left the karmada-apiserver before its backend started to go")
		fmt.Fprintf(GinkgoWriter, "webhook configuration gone %s before the webhook Deployment\n",
			time.Duration(webhookGoing.Load()-unregistered.Load()).Round(time.Millisecond))

		By("the CRD and the quotas stay")
		Expect(karmada.Get(ctx, client.ObjectKey{Name: "karmadaquotas.quota.karmada.io"}, &apiextensionsv1.CustomResourceDefinition{})).To(Succeed())
		Expect(quotaStatus(ns, "compute").Hard).NotTo(BeEmpty())

		By("Karmada schedules without the webhook: nothing enforces the quota now")
		deploy(ns, "batch", 2, "500m", "128Mi", divided())
		expectScheduled(ns, "batch", 2)

		By("installed again, the quota is counted again, over its limit now, and refuses growth")
		values, err := env.QuotaValues(nil)
		Expect(err).NotTo(HaveOccurred())
		start := time.Now()
		_, err = env.InstallQuota(ctx, values)
		Expect(err).NotTo(HaveOccurred())
		fmt.Fprintf(GinkgoWriter, "helm install to ready: %s\n", time.Since(start).Round(100*time.Millisecond))
		Expect(canonical(expectSettled(ns, "compute").Used)).To(Equal(resources.List{"requests.cpu": cpu(2)}))
		scale(ns, "batch", 3)
		expectRefused(ns, "batch")
	})
})

// retagImages writes karmada-quota's images again under another tag into the environment's own image folder,
// where the host's kubelet finds them: a new version to upgrade to, built from the same binaries.
func retagImages(registry, tag, newTag string) {
	GinkgoHelper()
	for _, component := range []string{"quota-webhook", "quota-controller", "karmada-quota-operator"} {
		src, err := name.NewTag(fmt.Sprintf("%s/%s:%s", registry, component, tag))
		Expect(err).NotTo(HaveOccurred())
		img, err := tarball.ImageFromPath(filepath.Join(testenv.RepoRoot(), "bin", "images", component+".tar"), &src)
		Expect(err).NotTo(HaveOccurred())
		dst, err := name.NewTag(fmt.Sprintf("%s/%s:%s", registry, component, newTag))
		Expect(err).NotTo(HaveOccurred())
		Expect(os.MkdirAll(env.HostKubelet.ImageDir, 0o755)).To(Succeed())
		Expect(tarball.WriteToFile(filepath.Join(env.HostKubelet.ImageDir, component+"-"+newTag+".tar"), dst, img)).To(Succeed())
	}
}

// servedCertificate is the certificate a replica of the webhook serves, reached as the karmada-apiserver reaches
// it: through the host's service proxy, by the Service's in-cluster name, trusting the installation's CA.
func servedCertificate(g Gomega, host client.Client) *x509.Certificate {
	serving := &corev1.Secret{}
	g.Expect(host.Get(ctx, client.ObjectKey{Namespace: localkarmada.KarmadaNamespace, Name: "karmada-quota-webhook-cert"}, serving)).To(Succeed())
	pool := x509.NewCertPool()
	g.Expect(pool.AppendCertsFromPEM(serving.Data["ca.crt"])).To(BeTrue())
	const target = "karmada-quota-webhook.karmada-system.svc:443"
	conn, err := net.DialTimeout("tcp", env.HostKubelet.ServiceProxy, 5*time.Second)
	g.Expect(err).NotTo(HaveOccurred())
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	_, err = fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	g.Expect(err).NotTo(HaveOccurred())
	reader := bufio.NewReader(conn)
	resp, err := http.ReadResponse(reader, &http.Request{Method: http.MethodConnect})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	tlsConn := tls.Client(conn, &tls.Config{ServerName: "karmada-quota-webhook.karmada-system.svc", RootCAs: pool, MinVersion: tls.VersionTLS12})
	g.Expect(tlsConn.Handshake()).To(Succeed())
	return tlsConn.ConnectionState().PeerCertificates[0]
}

func serial(n *big.Int) string {
	s := n.Text(16)
	if len(s) > 8 {
		s = s[:8]
	}
	return s
}
