package install

import (
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/karmada-quota/karmada-quota/operator/cmd/karmada-quota-operator/app"
	"github.com/karmada-quota/karmada-quota/operator/pkg/render"
	"github.com/karmada-quota/karmada-quota/pkg/webhookconfig"
)

// jobPod lays out, in a temporary folder, what the kubelet would mount into a hook Job's pod (the install
// ConfigMap and the admin kubeconfig Secret), and returns the Job's arguments with each mount path rewritten to
// its folder, plus --kubeconfig for the host (the Job itself would use its in-cluster configuration).
type jobPod struct {
	dir        string
	in         *render.Installation
	kubeconfig []byte
}

func (p jobPod) args(phase string) []string {
	GinkgoHelper()
	var job *batchv1.Job
	for _, obj := range p.in.Hooks {
		if obj.GetKind() == "Job" && strings.HasSuffix(obj.GetName(), "-"+phase) {
			job = &batchv1.Job{}
			Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, job)).To(Succeed())
		}
	}
	Expect(job).NotTo(BeNil(), "the chart renders a Job for %s", phase)
	pod := job.Spec.Template.Spec
	container := pod.Containers[0]
	Expect(container.Command).To(Equal([]string{"/usr/local/bin/karmada-quota-operator"}))

	mounted := map[string]string{}
	for _, mount := range container.VolumeMounts {
		folder := filepath.Join(p.dir, mount.Name)
		Expect(os.MkdirAll(folder, 0o700)).To(Succeed())
		for _, volume := range pod.Volumes {
			if volume.Name != mount.Name {
				continue
			}
			switch {
			case volume.ConfigMap != nil:
				data := p.configMap(volume.ConfigMap.Name)
				for key, value := range data {
					Expect(os.WriteFile(filepath.Join(folder, key), []byte(value), 0o600)).To(Succeed())
				}
			case volume.Secret != nil:
				// The admin kubeconfig Secret, with its key projected to the file the Job reads.
				Expect(volume.Secret.Items).To(HaveLen(1))
				Expect(os.WriteFile(filepath.Join(folder, volume.Secret.Items[0].Path), p.kubeconfig, 0o600)).To(Succeed())
			default:
				Fail("unexpected volume " + volume.Name)
			}
		}
		mounted[mount.MountPath] = folder
	}
	var args []string
	for _, arg := range container.Args {
		for path, folder := range mounted {
			arg = strings.Replace(arg, path, folder, 1)
		}
		args = append(args, arg)
	}
	host := filepath.Join(p.dir, "host-kubeconfig")
	Expect(os.WriteFile(host, hostPlane.adminKubeconfig, 0o600)).To(Succeed())
	return append(args, "--kubeconfig="+host)
}

func (p jobPod) configMap(name string) map[string]string {
	GinkgoHelper()
	for _, obj := range p.in.Hooks {
		if obj.GetKind() == "ConfigMap" && obj.GetName() == name {
			var cm corev1.ConfigMap
			Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &cm)).To(Succeed())
			return cm.Data
		}
	}
	Fail("no hook ConfigMap " + name)
	return nil
}

// runOperatorCommand runs karmada-quota-operator in this process with the arguments.
func runOperatorCommand(args ...string) error {
	cmd := app.NewCommand()
	cmd.SetArgs(args)
	cmd.SetOut(GinkgoWriter)
	cmd.SetErr(GinkgoWriter)
	return cmd.ExecuteContext(ctx)
}

var _ = Describe("karmada-quota-operator install", func() {
	BeforeEach(cleanKarmadaPlaneAfterwards)

	It("runs every phase from the arguments of the chart's hook Jobs", func() {
		ns := newHostNamespace("command")
		in := renderChart(ns, nil)
		pod := jobPod{dir: GinkgoT().TempDir(), in: in, kubeconfig: karmadaPlane.adminKubeconfig}

		Expect(runOperatorCommand(pod.args("prepare")...)).To(Succeed())
		var crd apiextensionsv1.CustomResourceDefinition
		Expect(karmadaPlane.client.Get(ctx, client.ObjectKey{Name: crdName}, &crd)).To(Succeed())
		for _, id := range in.Config.Identities {
			_, err := hostSecret(ns, id.KubeconfigSecret)
			Expect(err).NotTo(HaveOccurred())
		}
		_, err := hostSecret(ns, in.Config.Certificates.ServingSecret)
		Expect(err).NotTo(HaveOccurred())

		applyHostObjects(in)
		deployments.mustRollOut(ns, in.Config.Webhook.Deployment)
		Expect(runOperatorCommand(pod.args("register")...)).To(Succeed())
		Expect(vwcExists()).To(BeTrue())

		Expect(runOperatorCommand(pod.args("unregister")...)).To(Succeed())
		Expect(vwcExists()).To(BeFalse())

		Expect(runOperatorCommand(pod.args("cleanup")...)).To(Succeed())
		_, err = hostSecret(ns, in.Config.Certificates.ServingSecret)
		Expect(apierrors.IsNotFound(err)).To(BeTrue())
		Expect(karmadaPlane.client.Get(ctx, client.ObjectKey{Name: crdName}, &crd)).To(Succeed(), "the CRD stays")
		Expect(karmadaPlane.client.Get(ctx, client.ObjectKey{Name: webhookconfig.ConfigurationName}, &admissionregistrationv1.ValidatingWebhookConfiguration{})).
			To(Satisfy(apierrors.IsNotFound))
	})

	It("fails clearly on a misconfiguration, before touching either plane", func() {
		ns := newHostNamespace("command-bad")
		in := renderChart(ns, nil)

		By("an install configuration without names")
		pod := jobPod{dir: GinkgoT().TempDir(), in: in, kubeconfig: karmadaPlane.adminKubeconfig}
		args := pod.args("prepare")
		var config map[string]any
		configPath := filepath.Join(pod.dir, "install", "config.yaml")
		raw, err := os.ReadFile(configPath)
		Expect(err).NotTo(HaveOccurred())
		Expect(yaml.Unmarshal(raw, &config)).To(Succeed())
		delete(config, "namespace")
		delete(config["webhook"].(map[string]any), "deployment")
		raw, err = yaml.Marshal(config)
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(configPath, raw, 0o600)).To(Succeed())
		err = runOperatorCommand(args...)
		Expect(err).To(MatchError(And(ContainSubstring("the install configuration is invalid"),
			ContainSubstring("namespace must be set"), ContainSubstring("webhook.deployment must be set"))))

		By("a karmada-apiserver kubeconfig whose CA is a file")
		kubeconfig, err := clientcmd.Load(karmadaPlane.adminKubeconfig)
		Expect(err).NotTo(HaveOccurred())
		for _, cluster := range kubeconfig.Clusters {
			cluster.CertificateAuthority = writeTemp("ca.crt", cluster.CertificateAuthorityData)
			cluster.CertificateAuthorityData = nil
		}
		fileCA, err := clientcmd.Write(*kubeconfig)
		Expect(err).NotTo(HaveOccurred())
		pod = jobPod{dir: GinkgoT().TempDir(), in: in, kubeconfig: fileCA}
		err = runOperatorCommand(pod.args("prepare")...)
		Expect(err).To(MatchError(ContainSubstring("must carry its CA inline (certificate-authority-data)")))

		By("an unknown phase")
		Expect(runOperatorCommand("install", "upgrade", "--config=x", "--manifests=y", "--karmada-kubeconfig=z")).
			To(MatchError(ContainSubstring(`invalid argument "upgrade"`)))

		Expect(apierrors.IsNotFound(karmadaPlane.client.Get(ctx, client.ObjectKey{Name: crdName}, &apiextensionsv1.CustomResourceDefinition{}))).
			To(BeTrue(), "nothing was applied")
	})
})
