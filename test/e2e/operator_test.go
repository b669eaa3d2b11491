package e2e

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/hack/localkarmada"
	operatorv1alpha1 "github.com/karmada-quota/karmada-quota/operator/api/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
	"github.com/karmada-quota/karmada-quota/pkg/webhookconfig"
)

const (
	operatorRelease   = "karmada-quota-operator"
	operatorNamespace = "karmada-quota-operator"
)

// The operator runs as the pod its own chart renders, in the host cluster, and installs karmada-quota from one
// KarmadaQuotaInstallation. The Helm release of the environment steps aside for it and comes back at the end.
var _ = Describe("The operator", Ordered, Serial, func() {
	var host client.Client
	installation := types.NamespacedName{Namespace: localkarmada.KarmadaNamespace, Name: localkarmada.QuotaRelease}

	BeforeAll(func() {
		var err error
		host, err = localkarmada.Client(env.Host.Kubeconfig)
		Expect(err).NotTo(HaveOccurred())

		Expect(env.UninstallQuota(ctx)).To(Succeed())
		DeferCleanup(func() {
			values, err := env.QuotaValues(nil)
			Expect(err).NotTo(HaveOccurred())
			_, err = env.InstallQuota(ctx, values)
			Expect(err).NotTo(HaveOccurred(), "the environment's own installation comes back")
		})

		registry, tag, err := env.QuotaImages()
		Expect(err).NotTo(HaveOccurred())
		ch, err := localkarmada.OperatorChart()
		Expect(err).NotTo(HaveOccurred())
		_, err = env.HelmInstall(ctx, operatorRelease, operatorNamespace, ch, map[string]any{
			"image": map[string]any{"repository": registry + "/karmada-quota-operator", "tag": tag},
		})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() {
			Expect(env.HelmUninstall(ctx, operatorRelease, operatorNamespace)).To(Succeed())
		})
	})

	get := func(g Gomega) *operatorv1alpha1.KarmadaQuotaInstallation {
		inst := &operatorv1alpha1.KarmadaQuotaInstallation{}
		g.Expect(host.Get(ctx, installation, inst)).To(Succeed())
		return inst
	}
	expectReady := func(version string) *operatorv1alpha1.KarmadaQuotaInstallation {
		GinkgoHelper()
		var inst *operatorv1alpha1.KarmadaQuotaInstallation
		Eventually(func(g Gomega) {
			inst = get(g)
			ready := meta.FindStatusCondition(inst.Status.Conditions, operatorv1alpha1.ConditionReady)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), "%s: %s", ready.Reason, ready.Message)
			g.Expect(ready.ObservedGeneration).To(Equal(inst.Generation))
			g.Expect(inst.Status.ObservedGeneration).To(Equal(inst.Generation))
			g.Expect(inst.Status.Version).To(Equal(version))
		}).WithTimeout(3 * time.Minute).WithPolling(poll).Should(Succeed())
		return inst
	}

	It("installs karmada-quota from one custom resource and says so in its status", func() {
		_, tag, err := env.QuotaImages()
		Expect(err).NotTo(HaveOccurred())
		start := time.Now()
		Expect(host.Create(ctx, &operatorv1alpha1.KarmadaQuotaInstallation{
			ObjectMeta: metav1.ObjectMeta{Namespace: installation.Namespace, Name: installation.Name},
			Spec: operatorv1alpha1.KarmadaQuotaInstallationSpec{
				Karmada: operatorv1alpha1.KarmadaTarget{
					KubeconfigSecretRef: operatorv1alpha1.SecretKeyReference{Name: localkarmada.KarmadaKubeconfigSecret},
				},
				Version: tag,
			},
		})).To(Succeed())
		inst := expectReady(tag)
		fmt.Fprintf(GinkgoWriter, "custom resource created to Ready: %s\n", time.Since(start).Round(100*time.Millisecond))
		Expect(inst.Status.Components).To(ConsistOf(
			HaveField("Name", "controller"), HaveField("Name", "webhook")))
		for _, c := range inst.Status.Components {
			Expect(c.Ready).To(BeTrue(), c.Name)
			Expect(c.ReadyReplicas).To(Equal(int32(2)), c.Name)
			Expect(c.Image).To(HaveSuffix(":"+tag), c.Name)
		}
		for _, cond := range []string{operatorv1alpha1.ConditionProgressing, operatorv1alpha1.ConditionDegraded} {
			Expect(meta.IsStatusConditionFalse(inst.Status.Conditions, cond)).To(BeTrue(), cond)
		}

		By("enforcing quotas on real workloads")
		ns := newNamespace("operator")
		createQuota(ns, "compute", list("cpu", "1"))
		deploy(ns, "fits", 2, "500m", "128Mi", divided())
		expectScheduled(ns, "fits", 2)
		deploy(ns, "too-big", 1, "500m", "128Mi", divided())
		expectRefused(ns, "too-big")
		Expect(canonical(expectSettled(ns, "compute").Used)).To(Equal(resources.List{"requests.cpu": cpu(1)}))
	})

	It("refuses a bad spec with a condition and an event, changing nothing", func() {
		webhookBefore := &appsv1.Deployment{}
		Expect(host.Get(ctx, client.ObjectKey{Namespace: installation.Namespace, Name: localkarmada.QuotaWebhookDeployment}, webhookBefore)).To(Succeed())
		patchSpec(host, installation, `{"spec":{"webhook":{"reservationTTL":"30s"}}}`)
		Eventually(func(g Gomega) {
			inst := get(g)
			degraded := meta.FindStatusCondition(inst.Status.Conditions, operatorv1alpha1.ConditionDegraded)
			g.Expect(degraded).NotTo(BeNil())
			g.Expect(degraded.Reason).To(Equal("InvalidSpec"))
			g.Expect(degraded.Message).To(ContainSubstring("reservationTTL"))
			g.Expect(degraded.ObservedGeneration).To(Equal(inst.Generation))
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
		var events corev1.EventList
		Expect(host.List(ctx, &events, client.InNamespace(installation.Namespace))).To(Succeed())
		Expect(events.Items).To(ContainElement(And(
			HaveField("InvolvedObject.Name", installation.Name), HaveField("Reason", "InvalidSpec"))))
		webhookAfter := &appsv1.Deployment{}
		Expect(host.Get(ctx, client.ObjectKey{Namespace: installation.Namespace, Name: localkarmada.QuotaWebhookDeployment}, webhookAfter)).To(Succeed())
		Expect(webhookAfter.Generation).To(Equal(webhookBefore.Generation), "nothing was changed")

		patchSpec(host, installation, `{"spec":{"webhook":{"reservationTTL":null}}}`)
		expectReady(get(Default).Spec.Version)
	})

	It("restores, within seconds, what someone deletes or edits in either plane", func() {
		repairs := map[string]time.Duration{}
		repaired := func(what string, breakIt func(), restored func(g Gomega)) {
			GinkgoHelper()
			start := time.Now()
			breakIt()
			Eventually(restored).WithTimeout(timeout).WithPolling(100*time.Millisecond).Should(Succeed(), what)
			repairs[what] = time.Since(start)
		}
		webhookKey := client.ObjectKey{Namespace: installation.Namespace, Name: localkarmada.QuotaWebhookDeployment}

		repaired("host Deployment deleted", func() {
			Expect(host.Delete(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: webhookKey.Namespace, Name: webhookKey.Name}})).To(Succeed())
		}, func(g Gomega) {
			d := &appsv1.Deployment{}
			g.Expect(host.Get(ctx, webhookKey, d)).To(Succeed())
			g.Expect(d.DeletionTimestamp).To(BeNil())
		})
		repaired("host Deployment edited", func() {
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: webhookKey.Namespace, Name: webhookKey.Name}}
			Expect(host.Patch(ctx, d, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":1}}`)))).To(Succeed())
		}, func(g Gomega) {
			d := &appsv1.Deployment{}
			g.Expect(host.Get(ctx, webhookKey, d)).To(Succeed())
			g.Expect(*d.Spec.Replicas).To(Equal(int32(2)))
		})
		repaired("host Service edited", func() {
			svc := &corev1.Service{}
			Expect(host.Get(ctx, webhookKey, svc)).To(Succeed())
			svc.Spec.Ports[0].TargetPort = intstr.FromInt32(1)
			Expect(host.Update(ctx, svc)).To(Succeed())
		}, func(g Gomega) {
			svc := &corev1.Service{}
			g.Expect(host.Get(ctx, webhookKey, svc)).To(Succeed())
			g.Expect(svc.Spec.Ports[0].TargetPort).To(Equal(intstr.FromString("webhook")))
		})
		identity := client.ObjectKey{Namespace: installation.Namespace, Name: "karmada-quota-webhook-kubeconfig"}
		repaired("host Secret deleted", func() {
			Expect(host.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: identity.Namespace, Name: identity.Name}})).To(Succeed())
		}, func(g Gomega) {
			g.Expect(host.Get(ctx, identity, &corev1.Secret{})).To(Succeed())
		})
		repaired("karmada ClusterRole deleted", func() {
			Expect(karmada.Delete(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "karmada-quota-webhook"}})).To(Succeed())
		}, func(g Gomega) {
			g.Expect(karmada.Get(ctx, client.ObjectKey{Name: "karmada-quota-webhook"}, &rbacv1.ClusterRole{})).To(Succeed())
		})
		repaired("karmada webhook configuration deleted", func() {
			Expect(karmada.Delete(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: webhookconfig.ConfigurationName}})).To(Succeed())
		}, func(g Gomega) {
			conf := &admissionregistrationv1.ValidatingWebhookConfiguration{}
			g.Expect(karmada.Get(ctx, client.ObjectKey{Name: webhookconfig.ConfigurationName}, conf)).To(Succeed())
			g.Expect(conf.Webhooks).NotTo(BeEmpty())
			g.Expect(conf.Webhooks[0].ClientConfig.CABundle).NotTo(BeEmpty())
		})
		repaired("karmada CRD edited", func() {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			Expect(karmada.Get(ctx, client.ObjectKey{Name: "karmadaquotas.quota.karmada.io"}, crd)).To(Succeed())
			crd.Spec.Names.ShortNames = []string{"edited"}
			Expect(karmada.Update(ctx, crd)).To(Succeed())
		}, func(g Gomega) {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			g.Expect(karmada.Get(ctx, client.ObjectKey{Name: "karmadaquotas.quota.karmada.io"}, crd)).To(Succeed())
			g.Expect(crd.Spec.Names.ShortNames).To(Equal([]string{"kq"}))
		})
		var lines []string
		for what, took := range repairs {
			lines = append(lines, fmt.Sprintf("%s: %s", what, took.Round(10*time.Millisecond)))
		}
		fmt.Fprintf(GinkgoWriter, "drift repaired in: %s\n", strings.Join(lines, "; "))
		expectReady(get(Default).Spec.Version)
		var events corev1.EventList
		Expect(host.List(ctx, &events, client.InNamespace(installation.Namespace))).To(Succeed())
		Expect(events.Items).To(ContainElement(And(
			HaveField("InvolvedObject.Name", installation.Name), HaveField("Reason", "DriftRepaired"))))
	})

	It("upgrades in an order that leaves a writer only admissions and quota refusals", func() {
		registry, tag, err := env.QuotaImages()
		Expect(err).NotTo(HaveOccurred())
		newTag := tag + "-operator"
		retagImages(registry, tag, newTag)
		ns := newNamespace("operator-upgrade")
		createQuota(ns, "writes", list("cpu", "1"))
		before := expectSettled(ns, "writes")
		// Sampled throughout the rollout: two versions of the webhook and the controller decide side by side.
		sampler := sampleAdmissions(ns, "writes")
		writer := startWriter(ns, 10, 4)
		time.Sleep(2 * time.Second)
		start := time.Now()
		patchSpec(host, installation, fmt.Sprintf(`{"spec":{"version":%q}}`, newTag))
		inst := expectReady(newTag)
		took := time.Since(start)
		time.Sleep(2 * time.Second)
		stats := writer.Stop()
		fmt.Fprintf(GinkgoWriter, "operator upgrade to %s took %s; the writer saw %s\n", newTag, took.Round(100*time.Millisecond), stats)
		Expect(stats.Failed).To(BeZero(), "writes failing for another reason than the quota: %v", stats.Failures)
		Expect(stats.Admitted).To(BeNumerically(">", 0))
		Expect(stats.Refused).To(BeNumerically(">", 0), "the writer asks for more than the quota holds")
		sampler.expectNeverAboveHard()
		for _, c := range inst.Status.Components {
			Expect(c.Image).To(HaveSuffix(":"+newTag), c.Name)
		}

		By("the quota and its status are kept, and the accounting stays exact")
		after := expectSettled(ns, "writes")
		Expect(after.Hard).To(Equal(before.Hard))
		Expect(canonical(after.Used)["requests.cpu"]).To(BeNumerically("<=", cpu(1)))
	})

	It("uninstalls when deleted: the webhook configuration first, the CRD and the quotas kept", func() {
		ns := newNamespace("operator-delete")
		createQuota(ns, "compute", list("cpu", "1"))
		expectSettled(ns, "compute")

		// Each poll reads the webhook Deployment first, then the webhook configuration: a configuration still
		// there once its Deployment was seen going is the order the operator must never take. Comparing when each
		// was first seen cannot tell two steps taken within one poll apart.
		var unregistered, webhookGoing, registeredAfter atomic.Bool
		stopWatching := make(chan struct{})
		watching := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(watching)
			for {
				select {
				case <-stopWatching:
					return
				case <-time.After(20 * time.Millisecond):
				}
				d := &appsv1.Deployment{}
				err := host.Get(ctx, client.ObjectKey{Namespace: installation.Namespace, Name: localkarmada.QuotaWebhookDeployment}, d)
				going := apierrors.IsNotFound(err) || (err == nil && d.DeletionTimestamp != nil)
				err = karmada.Get(ctx, client.ObjectKey{Name: webhookconfig.ConfigurationName}, &admissionregistrationv1.ValidatingWebhookConfiguration{})
				if apierrors.IsNotFound(err) {
					unregistered.Store(true)
				} else if err == nil && going {
					registeredAfter.Store(true)
				}
				if going {
					webhookGoing.Store(true)
				}
			}
		}()
		Expect(host.Delete(ctx, &operatorv1alpha1.KarmadaQuotaInstallation{ObjectMeta: metav1.ObjectMeta{Namespace: installation.Namespace, Name: installation.Name}})).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(host.Get(ctx, installation, &operatorv1alpha1.KarmadaQuotaInstallation{}))
		}).WithTimeout(timeout).WithPolling(poll).Should(BeTrue(), "the finalizer is released once uninstalled")
		Eventually(webhookGoing.Load).WithTimeout(timeout).Should(BeTrue())
		close(stopWatching)
		<-watching
		Expect(unregistered.Load()).To(BeTrue(), "the webhook configuration is gone")
		Expect(registeredAfter.Load()).To(BeFalse(),
			"the webhook configuration was still in the karmada-apiserver after its backend started to go")

		Expect(karmada.Get(ctx, client.ObjectKey{Name: "karmadaquotas.quota.karmada.io"}, &apiextensionsv1.CustomResourceDefinition{})).To(Succeed())
		Expect(quotaStatus(ns, "compute").Hard).NotTo(BeEmpty())
		deploy(ns, "after", 3, "500m", "128Mi", divided())
		expectScheduled(ns, "after", 3)
		Eventually(func() bool {
			return apierrors.IsNotFound(host.Get(ctx, client.ObjectKey{Namespace: installation.Namespace, Name: localkarmada.QuotaWebhookDeployment}, &appsv1.Deployment{}))
		}).WithTimeout(timeout).WithPolling(poll).Should(BeTrue())
	})
})

// patchSpec merge-patches an installation.
func patchSpec(host client.Client, key types.NamespacedName, patch string) {
	GinkgoHelper()
	inst := &operatorv1alpha1.KarmadaQuotaInstallation{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	Expect(host.Patch(ctx, inst, client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
}
