package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/hack/localkarmada"
	"github.com/karmada-quota/karmada-quota/hack/localkarmada/kubelet"
	"github.com/karmada-quota/karmada-quota/internal/testenv"
)

// The host cluster runs its pods as local processes (hack/localkarmada/kubelet). This spec proves the parts the
// chart's install depends on, with a small webhook of its own (test/e2e/cmd/label-webhook): pods started
// from an image with their args, env and mounted Secrets; readiness; Secret updates reaching the mounted files;
// restarts and deletions as a kubelet does them; and the karmada-apiserver calling a webhook by its Service's
// in-cluster URL, through the kubelet's service proxy.
var _ = Describe("The host cluster", func() {
	It("runs a Deployment's pods as processes and serves them to the karmada-apiserver through their Service", func() {
		Expect(env.Host.Kubeconfig).NotTo(BeEmpty(), "this environment has no host cluster: restart it (make down up)")
		host, err := localkarmada.Client(env.Host.Kubeconfig)
		Expect(err).NotTo(HaveOccurred())
		name := "label-webhook-" + utilrand.String(5)
		ns := localkarmada.KarmadaNamespace
		service := name + "." + ns + ".svc"

		By("building an image of a small admission webhook")
		image := buildLabelWebhookImage(name)

		By("creating its Secrets, a Deployment of 2 replicas with a readiness probe, and a Service in the host")
		caPEM, certPEM, keyPEM := servingCertificate(service)
		certs := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-certs"},
			Type:       corev1.SecretTypeTLS,
			Data:       map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM},
		}
		message := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-message"},
			Data:       map[string][]byte{"message": []byte("first message")},
		}
		deployment := labelWebhookDeployment(ns, name, image, certs.Name, message.Name)
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: corev1.ServiceSpec{
				Selector: deployment.Spec.Selector.MatchLabels,
				Ports:    []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromString("webhook")}},
			},
		}
		for _, obj := range []client.Object{certs, message, deployment, svc} {
			Expect(host.Create(ctx, obj)).To(Succeed())
		}
		DeferCleanup(func() {
			// The pods go with the Deployment (garbage collection), and their processes with the pods.
			for _, obj := range []client.Object{deployment, svc, certs, message} {
				Expect(client.IgnoreNotFound(host.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground)))).To(Succeed())
			}
			Eventually(func(g Gomega) {
				pods, err := env.HostPods(ctx, ns, labelsOf(deployment))
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(pods).To(BeEmpty())
			}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "the Deployment's pods are gone")
		})

		By("waiting until both pods run as processes and are ready")
		pods := expectReadyPods(ns, name, 2)
		for _, p := range pods {
			Expect(p.Pod.Status.ContainerStatuses[0].ContainerID).To(HavePrefix(kubelet.ContainerIDPrefix))
			Expect(p.Ports).To(HaveKey("webhook"))
			Expect(p.Ports).To(HaveKey("probes"))
			// $POD_NAME comes from a fieldRef, and ":8443" was rewritten to the pod's own port.
			Expect(env.PodLogTail(ctx, ns, p.Name, "webhook", 5)).To(ContainSubstring(
				fmt.Sprintf("%s serving on 127.0.0.1:%d", p.Name, p.Ports["webhook"])))
		}

		By("registering a webhook in the karmada-apiserver by the Service's in-cluster URL")
		target := newNamespace("host-kubelet")
		vwc := labelWebhookConfiguration(name, "https://"+service+":443/validate", caPEM, target)
		Expect(karmada.Create(ctx, vwc)).To(Succeed())
		// Registered last, deleted first: a failing webhook never outlives its pods.
		DeferCleanup(func() { Expect(client.IgnoreNotFound(karmada.Delete(ctx, vwc))).To(Succeed()) })

		By("a labelled ConfigMap is denied with a pod's own message; an unlabelled one is allowed")
		expectDenied(target, names(pods), "first message")
		Expect(karmada.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: target, Name: "allowed"}})).To(Succeed())

		By("updating the message Secret: the pods read the new content from the mounted file within a moment")
		message.Data["message"] = []byte("second message")
		Expect(host.Update(ctx, message)).To(Succeed())
		updated := time.Now()
		expectDenied(target, names(pods), "second message")
		// Typically well under a second; the margin is for a loaded CI machine.
		Expect(time.Since(updated)).To(BeNumerically("<", 5*time.Second), "the mounted Secret followed its update")

		By("killing a pod's process: the kubelet restarts it")
		victim := pods[0]
		Expect(env.KillPodProcess(ctx, ns, victim.Name, "webhook")).To(Succeed())
		Eventually(func(g Gomega) {
			now := hostPod(g, ns, name, victim.Name)
			g.Expect(now.RestartCounts["webhook"]).To(BeEquivalentTo(1))
			g.Expect(now.Ready).To(BeTrue())
			g.Expect(now.PIDs["webhook"]).NotTo(Equal(victim.PIDs["webhook"]))
			last := now.Pod.Status.ContainerStatuses[0].LastTerminationState.Terminated
			g.Expect(last).NotTo(BeNil())
			g.Expect(last.ExitCode).To(BeEquivalentTo(137))
		}).WithTimeout(30 * time.Second).WithPolling(poll).Should(Succeed())

		By("deleting a pod: its process stops and the ReplicaSet replaces it")
		deleted := pods[1]
		Expect(host.Delete(ctx, deleted.Pod)).To(Succeed())
		Eventually(func() error { return syscall.Kill(deleted.PIDs["webhook"], 0) }).
			WithTimeout(30*time.Second).WithPolling(poll).Should(MatchError(syscall.ESRCH), "the deleted pod's process is gone")
		replaced := expectReadyPods(ns, name, 2)
		Expect(names(replaced)).NotTo(ContainElement(deleted.Name))

		By("the karmada-apiserver still reaches a ready pod through the Service")
		expectDenied(target, names(replaced), "second message")
	})
})

// buildLabelWebhookImage builds test/e2e/cmd/label-webhook and writes it as an image in the host
// kubelet's image folder, the way `make images` shapes the project's images; it returns the image reference.
func buildLabelWebhookImage(name string) string {
	GinkgoHelper()
	binary := filepath.Join(GinkgoT().TempDir(), "label-webhook")
	build := exec.Command("go", "build", "-o", binary, "./test/e2e/cmd/label-webhook")
	build.Dir = testenv.RepoRoot()
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "building label-webhook: %s", out)
	program, err := os.ReadFile(binary)
	Expect(err).NotTo(HaveOccurred())
	ref := "example.test/label-webhook:" + name
	archive := filepath.Join(env.HostKubelet.ImageDir, name+".tar")
	Expect(kubelet.WriteImage(archive, ref,
		v1.Config{Entrypoint: []string{"/usr/local/bin/label-webhook"}, User: "65532:65532", WorkingDir: "/"},
		kubelet.ImageFile{Path: "/usr/local/bin/label-webhook", Data: program, Mode: 0o755},
		kubelet.ImageFile{Path: "/etc/passwd", Data: []byte("nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"), Mode: 0o644},
	)).To(Succeed())
	DeferCleanup(func() { Expect(os.Remove(archive)).To(Succeed()) })
	return ref
}

func labelWebhookDeployment(ns, name, image, certs, message string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](5),
					SecurityContext:               &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)},
					Containers: []corev1.Container{{
						Name:  "webhook",
						Image: image,
						Args: []string{
							"--webhook-bind-address=:8443", "--health-probe-bind-address=:8081",
							"--cert-dir=/etc/label-webhook/certs", "--message-file=/etc/label-webhook/message/message",
						},
						Env: []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{
							FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
						Ports: []corev1.ContainerPort{{Name: "webhook", ContainerPort: 8443}, {Name: "probes", ContainerPort: 8081}},
						ReadinessProbe: &corev1.Probe{
							ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("probes")}},
							PeriodSeconds: 1,
						},
						VolumeMounts: []corev1.VolumeMount{
							{Name: "certs", MountPath: "/etc/label-webhook/certs", ReadOnly: true},
							{Name: "message", MountPath: "/etc/label-webhook/message", ReadOnly: true},
						},
					}},
					Volumes: []corev1.Volume{
						{Name: "certs", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: certs}}},
						{Name: "message", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: message}}},
					},
				},
			},
		},
	}
}

// labelWebhookConfiguration sends ConfigMap creations in one namespace of the karmada-apiserver to url.
func labelWebhookConfiguration(name, url string, caPEM []byte, namespace string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:         "label-webhook.example.test",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(url), CABundle: caPEM},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
			}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: namespace}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To[int32](5),
		}},
	}
}

// expectDenied waits until creating a labelled ConfigMap in namespace is denied by one of the pods with message.
func expectDenied(namespace string, pods []string, message string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace, GenerateName: "denied-", Labels: map[string]string{"deny": "true"},
		}}
		err := karmada.Create(ctx, cm)
		g.Expect(err).To(HaveOccurred(), "a labelled ConfigMap was admitted")
		g.Expect(err.Error()).To(ContainSubstring("denied the request"))
		g.Expect(slices.ContainsFunc(pods, func(pod string) bool { return strings.Contains(err.Error(), pod+": "+message) })).
			To(BeTrue(), "denied by one of %v with %q: %v", pods, message, err)
	}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
}

// expectReadyPods waits until the Deployment has exactly n pods, each running as a live process and ready.
func expectReadyPods(ns, name string, n int) []localkarmada.HostPod {
	GinkgoHelper()
	var pods []localkarmada.HostPod
	Eventually(func(g Gomega) {
		var err error
		pods, err = env.DeploymentPods(ctx, ns, name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(pods).To(HaveLen(n))
		for _, p := range pods {
			g.Expect(p.Terminating).To(BeFalse(), p.Name)
			g.Expect(p.Phase).To(Equal(corev1.PodRunning), p.Name)
			g.Expect(p.Ready).To(BeTrue(), "%s is not ready", p.Name)
			g.Expect(syscall.Kill(p.PIDs["webhook"], 0)).To(Succeed(), "%s's process %d", p.Name, p.PIDs["webhook"])
		}
	}).WithTimeout(time.Minute).WithPolling(poll).Should(Succeed(), "%d ready pods of %s/%s", n, ns, name)
	return pods
}

func hostPod(g Gomega, ns, deployment, pod string) localkarmada.HostPod {
	pods, err := env.DeploymentPods(ctx, ns, deployment)
	g.Expect(err).NotTo(HaveOccurred())
	for _, p := range pods {
		if p.Name == pod {
			return p
		}
	}
	g.Expect(errors.New("no pod " + pod)).NotTo(HaveOccurred())
	return localkarmada.HostPod{}
}

func names(pods []localkarmada.HostPod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	return out
}

func labelsOf(d *appsv1.Deployment) labels.Selector {
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	Expect(err).NotTo(HaveOccurred())
	return sel
}

// servingCertificate issues a CA and a serving certificate for dnsName: the webhook's certificate must carry the
// Service's name, since the karmada-apiserver checks it against the URL's host, tunnel or not.
func servingCertificate(dnsName string) (caPEM, certPEM, keyPEM []byte) {
	GinkgoHelper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	caTemplate := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "e2e-test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, caKey.Public(), caKey)
	Expect(err).NotTo(HaveOccurred())
	ca, err := x509.ParseCertificate(caDER)
	Expect(err).NotTo(HaveOccurred())
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: dnsName}, DNSNames: []string{dnsName},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, ca, key.Public(), caKey)
	Expect(err).NotTo(HaveOccurred())
	keyDER, err := x509.MarshalECPrivateKey(key)
	Expect(err).NotTo(HaveOccurred())
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}
