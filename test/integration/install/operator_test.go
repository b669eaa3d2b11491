package install

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	operatorv1alpha1 "github.com/karmada-quota/karmada-quota/operator/api/v1alpha1"
	"github.com/karmada-quota/karmada-quota/operator/pkg/controller"
	"github.com/karmada-quota/karmada-quota/pkg/metrics"
	"github.com/karmada-quota/karmada-quota/pkg/scheme"
	"github.com/karmada-quota/karmada-quota/pkg/webhookconfig"
)

// operatorVersion is the operator's own version: what an installation that names none gets.
const operatorVersion = "v0.1.0"

var stopOperator = func() {}

// startOperator runs the operator's controller in this process against the host, with the manager options of
// the operator's binary.
func startOperator(ctx context.Context) {
	GinkgoHelper()
	s := runtime.NewScheme()
	utilruntime.Must(scheme.AddToScheme(s))
	utilruntime.Must(operatorv1alpha1.AddToScheme(s))
	mgr, err := ctrl.NewManager(hostPlane.config, ctrl.Options{
		Scheme:                  s,
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:  "0",
		Cache:                   controller.CacheOptions(),
		GracefulShutdownTimeout: ptr.To(5 * time.Second),
		Controller:              config.Controller{SkipNameValidation: ptr.To(true)},
	})
	Expect(err).NotTo(HaveOccurred())
	name, err := controller.Setup(mgr, controller.Options{Version: operatorVersion, Workers: 2})
	Expect(err).NotTo(HaveOccurred(), name)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stopOperator = func() {
		cancel()
		Expect(<-done).To(Succeed())
	}
}

// createKubeconfigSecret puts a karmada-apiserver kubeconfig into the host, as Karmada's chart does.
func createKubeconfigSecret(namespace string, kubeconfig []byte) {
	GinkgoHelper()
	Expect(hostPlane.client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "karmada-kubeconfig"},
		Data:       map[string][]byte{"kubeconfig": kubeconfig},
	})).To(Succeed())
}

// createInstallation creates the installation named like the release in a namespace, and deletes it when the
// spec ends (stripping the finalizer if the operator cannot uninstall, as with a kubeconfig without rights).
func createInstallation(namespace string, tune func(*operatorv1alpha1.KarmadaQuotaInstallationSpec)) *operatorv1alpha1.KarmadaQuotaInstallation {
	return createInstallationUninstalledWithin(namespace, 20*time.Second, tune)
}

func createInstallationUninstalledWithin(namespace string, uninstallWithin time.Duration, tune func(*operatorv1alpha1.KarmadaQuotaInstallationSpec)) *operatorv1alpha1.KarmadaQuotaInstallation {
	GinkgoHelper()
	inst := &operatorv1alpha1.KarmadaQuotaInstallation{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: release},
		Spec: operatorv1alpha1.KarmadaQuotaInstallationSpec{
			Karmada: operatorv1alpha1.KarmadaTarget{KubeconfigSecretRef: operatorv1alpha1.SecretKeyReference{Name: "karmada-kubeconfig"}},
		},
	}
	if tune != nil {
		tune(&inst.Spec)
	}
	Expect(hostPlane.client.Create(ctx, inst)).To(Succeed())
	DeferCleanup(func() {
		key := client.ObjectKeyFromObject(inst)
		Expect(client.IgnoreNotFound(hostPlane.client.Delete(ctx, inst))).To(Succeed())
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, uninstallWithin, true, func(context.Context) (bool, error) {
			return apierrors.IsNotFound(hostPlane.client.Get(ctx, key, inst)), nil
		})
		if err != nil {
			// An installation the operator cannot uninstall (its kubeconfig lacks the rights) keeps its finalizer.
			Expect(removeFinalizersAndDelete(hostPlane.client, inst)).To(Succeed())
		}
	})
	return inst
}

// getInstallation reads the installation of a namespace.
func getInstallation(namespace string) *operatorv1alpha1.KarmadaQuotaInstallation {
	GinkgoHelper()
	var inst operatorv1alpha1.KarmadaQuotaInstallation
	Expect(hostPlane.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: release}, &inst)).To(Succeed())
	return &inst
}

// updateInstallation changes an installation's spec.
func updateInstallation(namespace string, change func(*operatorv1alpha1.KarmadaQuotaInstallationSpec)) {
	GinkgoHelper()
	Eventually(func() error {
		inst := getInstallation(namespace)
		change(&inst.Spec)
		return hostPlane.client.Update(ctx, inst)
	}).Should(Succeed())
}

// condition matches an installation whose condition has the status and reason.
func condition(conditionType string, status metav1.ConditionStatus, reason string) OmegaMatcher {
	return WithTransform(func(inst *operatorv1alpha1.KarmadaQuotaInstallation) string {
		c := meta.FindStatusCondition(inst.Status.Conditions, conditionType)
		if c == nil {
			return "absent"
		}
		return fmt.Sprintf("%s %s", c.Status, c.Reason)
	}, Equal(fmt.Sprintf("%s %s", status, reason)))
}

func conditionMessage(inst *operatorv1alpha1.KarmadaQuotaInstallation, conditionType string) string {
	if c := meta.FindStatusCondition(inst.Status.Conditions, conditionType); c != nil {
		return c.Message
	}
	return ""
}

// current matches an installation whose status is about its current spec.
var current = WithTransform(func(inst *operatorv1alpha1.KarmadaQuotaInstallation) bool {
	return inst.Status.ObservedGeneration == inst.Generation
}, BeTrue())

// eventuallyInstallation polls the installation in a namespace.
func eventuallyInstallation(namespace string) AsyncAssertion {
	return Eventually(func() *operatorv1alpha1.KarmadaQuotaInstallation { return getInstallation(namespace) }).
		WithTimeout(20 * time.Second).WithPolling(50 * time.Millisecond)
}

// waitReady waits until the installation serves its current spec.
func waitReady(namespace string) {
	GinkgoHelper()
	eventuallyInstallation(namespace).Should(And(current, condition(operatorv1alpha1.ConditionReady, metav1.ConditionTrue, controller.ReasonInstalled),
		condition(operatorv1alpha1.ConditionProgressing, metav1.ConditionFalse, controller.ReasonComplete)))
}

// waitOperatorIdle waits until the operator has had nothing queued or in progress for 300 ms on end. A reconcile
// that read the installation just before its last status write still sees it not Ready, and rightly does not
// report what it restores as drift; a spec measuring drift breaks things only once no such reconcile runs. The
// watch event of the operator's own last write may arrive after a moment of idleness and queue one more reconcile
// (under -race and a busy machine, more than one polling interval later): the quiet moment starts again then. A
// reconcile that keeps triggering itself would never let this pass.
func waitOperatorIdle() {
	GinkgoHelper()
	busy := func() float64 {
		families, err := ctrlmetrics.Registry.Gather()
		Expect(err).NotTo(HaveOccurred())
		total := 0.0
		for _, family := range families {
			if family.GetName() != "controller_runtime_active_workers" && family.GetName() != "workqueue_depth" {
				continue
			}
			for _, m := range family.GetMetric() {
				for _, label := range m.GetLabel() {
					if (label.GetName() == "controller" || label.GetName() == "name") && label.GetValue() == controller.ControllerName {
						total += m.GetGauge().GetValue()
					}
				}
			}
		}
		return total
	}
	var quietSince time.Time
	Eventually(func() time.Duration {
		if busy() > 0 {
			quietSince = time.Time{}
			return 0
		}
		if quietSince.IsZero() {
			quietSince = time.Now()
		}
		return time.Since(quietSince)
	}).WithPolling(10*time.Millisecond).Should(BeNumerically(">=", 300*time.Millisecond), "the operator never stayed idle for 300 ms")
}

// events returns the events of a reason recorded on the installation.
func events(namespace, reason string) []corev1.Event {
	GinkgoHelper()
	var list corev1.EventList
	Expect(hostPlane.client.List(ctx, &list, client.InNamespace(namespace))).To(Succeed())
	var out []corev1.Event
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == "KarmadaQuotaInstallation" && e.InvolvedObject.Name == release && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

func deployment(namespace, name string) (*appsv1.Deployment, error) {
	var d appsv1.Deployment
	return &d, hostPlane.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &d)
}

func vwcExists() bool {
	err := karmadaPlane.client.Get(ctx, client.ObjectKey{Name: webhookconfig.ConfigurationName}, &admissionregistrationv1.ValidatingWebhookConfiguration{})
	if err != nil {
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "reading the webhook configuration: %v", err)
	}
	return err == nil
}

// installReady installs with the test's Deployment controller rolling every generation out at once, and waits
// for Ready.
func installReady(prefix string, tune func(*operatorv1alpha1.KarmadaQuotaInstallationSpec)) string {
	GinkgoHelper()
	deployments.autoRollOut()
	ns := newHostNamespace(prefix)
	createKubeconfigSecret(ns, karmadaPlane.adminKubeconfig)
	start := time.Now()
	createInstallation(ns, tune)
	waitReady(ns)
	AddReportEntry("install: creation to Ready (every rollout reported complete at once)", time.Since(start).Round(time.Millisecond).String())
	return ns
}

var _ = Describe("Operator", func() {
	BeforeEach(cleanKarmadaPlaneAfterwards)

	It("installs through Progressing to Ready, and upgrades the controller before the webhook", func() {
		ns := newHostNamespace("operator")
		createKubeconfigSecret(ns, karmadaPlane.adminKubeconfig)
		createInstallation(ns, nil)
		controllerName, webhookName := release+"-controller", release+"-webhook"

		By("the controller rolls out first; the webhook waits for it")
		eventuallyInstallation(ns).Should(And(current,
			condition(operatorv1alpha1.ConditionProgressing, metav1.ConditionTrue, controller.ReasonRollingOut),
			condition(operatorv1alpha1.ConditionReady, metav1.ConditionFalse, controller.ReasonRollingOut)))
		Expect(conditionMessage(getInstallation(ns), operatorv1alpha1.ConditionProgressing)).To(HavePrefix("controller:"))
		_, err := deployment(ns, controllerName)
		Expect(err).NotTo(HaveOccurred())
		Consistently(func() bool { _, err := deployment(ns, webhookName); return apierrors.IsNotFound(err) }).
			WithTimeout(time.Second).Should(BeTrue(), "the webhook is applied only once the controller rolled out")
		Expect(vwcExists()).To(BeFalse())

		deployments.mustRollOut(ns, controllerName)
		Eventually(func() error { _, err := deployment(ns, webhookName); return err }).Should(Succeed())
		eventuallyInstallation(ns).Should(WithTransform(func(inst *operatorv1alpha1.KarmadaQuotaInstallation) string {
			return conditionMessage(inst, operatorv1alpha1.ConditionProgressing)
		}, HavePrefix("webhook:")))
		Expect(vwcExists()).To(BeFalse(), "nothing is registered before the webhook serves")

		deployments.mustRollOut(ns, webhookName)
		waitReady(ns)

		inst := getInstallation(ns)
		Expect(inst.Status.Version).To(Equal(operatorVersion))
		Expect(inst.Status.Components).To(HaveLen(2))
		for _, c := range inst.Status.Components {
			Expect(c.Ready).To(BeTrue(), c.Name)
			Expect(c.Replicas).To(Equal(int32(2)), c.Name)
			Expect(c.UpdatedReplicas).To(Equal(int32(2)), c.Name)
			Expect(c.ReadyReplicas).To(Equal(int32(2)), c.Name)
			Expect(c.Image).To(Equal("ghcr.io/karmada-quota/quota-" + c.Name + ":" + operatorVersion))
		}
		Expect(events(ns, controller.EventInstalled)).NotTo(BeEmpty())

		By("the webhook registered by URL with the serving Secret's CA")
		var vwc admissionregistrationv1.ValidatingWebhookConfiguration
		Expect(karmadaPlane.client.Get(ctx, client.ObjectKey{Name: webhookconfig.ConfigurationName}, &vwc)).To(Succeed())
		serving, err := hostSecret(ns, release+"-webhook-cert")
		Expect(err).NotTo(HaveOccurred())
		for _, hook := range vwc.Webhooks {
			Expect(*hook.ClientConfig.URL).To(HavePrefix("https://" + webhookName + "." + ns + ".svc:443/"))
			Expect(hook.ClientConfig.CABundle).To(Equal(serving.Data["ca.crt"]))
		}

		By("an upgrade rolls the controller out before the webhook changes")
		const next = "v0.2.0"
		driftBefore := len(events(ns, controller.EventDriftRepaired))
		updateInstallation(ns, func(spec *operatorv1alpha1.KarmadaQuotaInstallationSpec) { spec.Version = next })
		Eventually(func() string { d, _ := deployment(ns, controllerName); return image(d) }).Should(HaveSuffix(":" + next))
		eventuallyInstallation(ns).Should(And(current,
			condition(operatorv1alpha1.ConditionProgressing, metav1.ConditionTrue, controller.ReasonRollingOut),
			condition(operatorv1alpha1.ConditionReady, metav1.ConditionTrue, controller.ReasonInstalled)),
			"the previous version still serves while the new one rolls out")
		Consistently(func() string { d, _ := deployment(ns, webhookName); return image(d) }).WithTimeout(time.Second).
			Should(HaveSuffix(":"+operatorVersion), "the webhook waits for the controller's rollout")
		deployments.mustRollOut(ns, controllerName)
		Eventually(func() string { d, _ := deployment(ns, webhookName); return image(d) }).Should(HaveSuffix(":" + next))
		deployments.mustRollOut(ns, webhookName)
		waitReady(ns)
		Expect(getInstallation(ns).Status.Version).To(Equal(next))
		Expect(events(ns, controller.EventDriftRepaired)).To(HaveLen(driftBefore), "an upgrade is not drift")

		var order []string
		for _, e := range deployments.eventsIn(ns) {
			if strings.HasSuffix(e.Image, ":"+next) {
				order = append(order, strings.TrimPrefix(e.Name, release+"-")+" "+e.What)
			}
		}
		Expect(order).To(Equal([]string{"controller changed", "controller rolledOut", "webhook changed", "webhook rolledOut"}))
	})

	It("refuses an invalid spec with a condition and an event, and applies nothing", func() {
		ns := newHostNamespace("invalid")
		createKubeconfigSecret(ns, karmadaPlane.adminKubeconfig)
		createInstallation(ns, func(spec *operatorv1alpha1.KarmadaQuotaInstallationSpec) {
			spec.Webhook.ReservationTTL = &metav1.Duration{Duration: 30 * time.Second}
		})
		eventuallyInstallation(ns).Should(And(current,
			condition(operatorv1alpha1.ConditionReady, metav1.ConditionFalse, controller.ReasonInvalidSpec),
			condition(operatorv1alpha1.ConditionDegraded, metav1.ConditionTrue, controller.ReasonInvalidSpec)))
		Expect(conditionMessage(getInstallation(ns), operatorv1alpha1.ConditionDegraded)).To(ContainSubstring("spec.webhook.reservationTTL"))
		Eventually(func() []corev1.Event { return events(ns, controller.ReasonInvalidSpec) }).ShouldNot(BeEmpty())
		Expect(events(ns, controller.ReasonInvalidSpec)[0].Type).To(Equal(corev1.EventTypeWarning))

		Consistently(func() int {
			var list appsv1.DeploymentList
			Expect(hostPlane.client.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
			return len(list.Items)
		}).WithTimeout(time.Second).Should(BeZero(), "no Deployment for an invalid spec")
		Expect(apierrors.IsNotFound(karmadaPlane.client.Get(ctx, client.ObjectKey{Name: crdName}, &apiextensionsv1.CustomResourceDefinition{}))).
			To(BeTrue(), "nothing in the karmada-apiserver either")
		var secrets corev1.SecretList
		Expect(hostPlane.client.List(ctx, &secrets, client.InNamespace(ns))).To(Succeed())
		Expect(secrets.Items).To(HaveLen(1), "only the admin kubeconfig Secret")

		By("a fixed spec installs")
		deployments.autoRollOut()
		updateInstallation(ns, func(spec *operatorv1alpha1.KarmadaQuotaInstallationSpec) {
			spec.Webhook.ReservationTTL = &metav1.Duration{Duration: 2 * time.Minute}
		})
		waitReady(ns)
	})

	It("reports a missing kubeconfig Secret, and recovers once it is created", func() {
		deployments.autoRollOut()
		ns := newHostNamespace("no-kubeconfig")
		createInstallation(ns, nil)
		eventuallyInstallation(ns).Should(And(current,
			condition(operatorv1alpha1.ConditionDegraded, metav1.ConditionTrue, controller.ReasonKubeconfigNotFound),
			condition(operatorv1alpha1.ConditionReady, metav1.ConditionFalse, controller.ReasonKubeconfigNotFound)))
		Expect(conditionMessage(getInstallation(ns), operatorv1alpha1.ConditionDegraded)).To(ContainSubstring(ns + "/karmada-kubeconfig"))

		start := time.Now()
		createKubeconfigSecret(ns, karmadaPlane.adminKubeconfig)
		// The operator does not watch the admin's Secret (its cache holds karmada-quota's objects only): it
		// tries again after its retry period (15s), then installs.
		eventuallyInstallation(ns).WithTimeout(30 * time.Second).Should(And(current,
			condition(operatorv1alpha1.ConditionReady, metav1.ConditionTrue, controller.ReasonInstalled),
			condition(operatorv1alpha1.ConditionDegraded, metav1.ConditionFalse, controller.ReasonAsExpected)))
		AddReportEntry("missing kubeconfig Secret: created to Ready", time.Since(start).Round(time.Millisecond).String())
		Expect(time.Since(start)).To(BeNumerically("<", 25*time.Second), "recovered within the retry period and an install")
	})

	It("names the rights a kubeconfig lacks", func() {
		viewer, err := karmadaPlane.env.AddUser(envtest.User{Name: "karmada-viewer"}, nil)
		Expect(err).NotTo(HaveOccurred())
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "karmada-viewer-"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "karmada-viewer"}},
		}
		Expect(karmadaPlane.client.Create(ctx, binding)).To(Succeed())
		DeferCleanup(func() { Expect(karmadaPlane.client.Delete(ctx, binding)).To(Succeed()) })
		kubeconfig, err := viewer.KubeConfig()
		Expect(err).NotTo(HaveOccurred())

		ns := newHostNamespace("viewer")
		createKubeconfigSecret(ns, kubeconfig)
		createInstallationUninstalledWithin(ns, time.Second, nil)
		eventuallyInstallation(ns).Should(And(current,
			condition(operatorv1alpha1.ConditionDegraded, metav1.ConditionTrue, "InsufficientRights"),
			condition(operatorv1alpha1.ConditionReady, metav1.ConditionFalse, "InsufficientRights")))
		message := conditionMessage(getInstallation(ns), operatorv1alpha1.ConditionDegraded)
		for _, missing := range []string{"create customresourcedefinitions.apiextensions.k8s.io",
			"create validatingwebhookconfigurations.admissionregistration.k8s.io", "create clusterroles.rbac.authorization.k8s.io"} {
			Expect(message).To(ContainSubstring(missing))
		}
		Eventually(func() []corev1.Event { return events(ns, "InsufficientRights") }).ShouldNot(BeEmpty())
		Expect(apierrors.IsNotFound(karmadaPlane.client.Get(ctx, client.ObjectKey{Name: crdName}, &apiextensionsv1.CustomResourceDefinition{}))).To(BeTrue())
		var list appsv1.DeploymentList
		Expect(hostPlane.client.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		Expect(list.Items).To(BeEmpty())
	})

	It("repairs drift in both planes within seconds", func() {
		ns := installReady("drift", nil)
		webhookName := release + "-webhook"
		repairs := map[string]time.Duration{}
		measure := func(what, plane, kind string, breakIt func(), repaired func() bool) {
			GinkgoHelper()
			metric := metrics.OperatorDriftRepaired.WithLabelValues(plane, kind)
			before, eventsBefore := testutil.ToFloat64(metric), len(events(ns, controller.EventDriftRepaired))
			start := time.Now()
			breakIt()
			Eventually(repaired).WithTimeout(10*time.Second).WithPolling(20*time.Millisecond).Should(BeTrue(), what)
			repairs[what] = time.Since(start)
			Eventually(func() float64 { return testutil.ToFloat64(metric) }).Should(BeNumerically(">", before), "metric for "+what)
			Eventually(func() int { return len(events(ns, controller.EventDriftRepaired)) }).Should(BeNumerically(">", eventsBefore), "event for "+what)
			waitReady(ns)
			waitOperatorIdle()
		}
		waitOperatorIdle()

		measure("host: webhook Deployment deleted", "host", "Deployment", func() {
			d, err := deployment(ns, webhookName)
			Expect(err).NotTo(HaveOccurred())
			Expect(hostPlane.client.Delete(ctx, d)).To(Succeed())
		}, func() bool { _, err := deployment(ns, webhookName); return err == nil })

		measure("host: webhook Service deleted", "host", "Service", func() {
			Expect(hostPlane.client.Delete(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: webhookName}})).To(Succeed())
		}, func() bool {
			return hostPlane.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: webhookName}, &corev1.Service{}) == nil
		})

		measure("host: webhook Deployment's replicas edited", "host", "Deployment", func() {
			d, err := deployment(ns, webhookName)
			Expect(err).NotTo(HaveOccurred())
			d.Spec.Replicas = ptr.To[int32](5)
			Expect(hostPlane.client.Update(ctx, d)).To(Succeed())
		}, func() bool { d, err := deployment(ns, webhookName); return err == nil && *d.Spec.Replicas == 2 })

		measure("karmada: controller ClusterRole deleted", "karmada", "ClusterRole", func() {
			Expect(karmadaPlane.client.Delete(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: release + "-controller"}})).To(Succeed())
		}, func() bool {
			return karmadaPlane.client.Get(ctx, client.ObjectKey{Name: release + "-controller"}, &rbacv1.ClusterRole{}) == nil
		})

		measure("karmada: webhook configuration deleted", "karmada", "ValidatingWebhookConfiguration", func() {
			Expect(karmadaPlane.client.Delete(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: webhookconfig.ConfigurationName}})).To(Succeed())
		}, vwcExists)

		measure("karmada: CRD edited", "karmada", "CustomResourceDefinition", func() {
			Eventually(func() error {
				var crd apiextensionsv1.CustomResourceDefinition
				Expect(karmadaPlane.client.Get(ctx, client.ObjectKey{Name: crdName}, &crd)).To(Succeed())
				crd.Spec.Names.ShortNames = []string{"edited"}
				return karmadaPlane.client.Update(ctx, &crd)
			}).Should(Succeed())
		}, func() bool {
			var crd apiextensionsv1.CustomResourceDefinition
			Expect(karmadaPlane.client.Get(ctx, client.ObjectKey{Name: crdName}, &crd)).To(Succeed())
			return slices.Equal(crd.Spec.Names.ShortNames, []string{"kq"})
		})

		measure("host: controller's kubeconfig Secret deleted", "host", "Secret", func() {
			Expect(hostPlane.client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: release + "-controller-kubeconfig"}})).To(Succeed())
		}, func() bool { _, err := hostSecret(ns, release+"-controller-kubeconfig"); return err == nil })

		measure("host: webhook serving certificate Secret deleted", "host", "Secret", func() {
			Expect(hostPlane.client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: release + "-webhook-cert"}})).To(Succeed())
		}, func() bool { _, err := hostSecret(ns, release+"-webhook-cert"); return err == nil })
		serving, err := hostSecret(ns, release+"-webhook-cert")
		Expect(err).NotTo(HaveOccurred())
		var vwc admissionregistrationv1.ValidatingWebhookConfiguration
		Expect(karmadaPlane.client.Get(ctx, client.ObjectKey{Name: webhookconfig.ConfigurationName}, &vwc)).To(Succeed())
		Expect(vwc.Webhooks[0].ClientConfig.CABundle).To(Equal(serving.Data["ca.crt"]), "the registered CA verifies the new serving certificate")

		for what, took := range repairs {
			AddReportEntry("drift repaired: "+what, took.Round(time.Millisecond).String())
			Expect(took).To(BeNumerically("<", 5*time.Second), what)
		}
	})

	It("changes nothing while suspended", func() {
		ns := installReady("suspend", nil)
		updateInstallation(ns, func(spec *operatorv1alpha1.KarmadaQuotaInstallationSpec) { spec.Suspend = true })
		eventuallyInstallation(ns).Should(And(current, condition(operatorv1alpha1.ConditionProgressing, metav1.ConditionFalse, controller.ReasonSuspended)))

		d, err := deployment(ns, release+"-webhook")
		Expect(err).NotTo(HaveOccurred())
		Expect(hostPlane.client.Delete(ctx, d)).To(Succeed())
		Consistently(func() bool { _, err := deployment(ns, release+"-webhook"); return apierrors.IsNotFound(err) }).
			WithTimeout(2*time.Second).Should(BeTrue(), "a suspended installation is not repaired")

		updateInstallation(ns, func(spec *operatorv1alpha1.KarmadaQuotaInstallationSpec) { spec.Suspend = false })
		Eventually(func() error { _, err := deployment(ns, release+"-webhook"); return err }).Should(Succeed())
		waitReady(ns)
	})

	It("uninstalls the webhook configuration before the components, then RBAC and identities, keeping the CRD and quotas", func() {
		ns := installReady("delete", nil)
		// No webhook serves in this test, and the registered one fails closed: the quota is created while the
		// installation is suspended and its webhook configuration deleted; unsuspended, the operator restores it.
		updateInstallation(ns, func(spec *operatorv1alpha1.KarmadaQuotaInstallationSpec) { spec.Suspend = true })
		eventuallyInstallation(ns).Should(And(current, condition(operatorv1alpha1.ConditionProgressing, metav1.ConditionFalse, controller.ReasonSuspended)))
		Expect(karmadaPlane.client.Delete(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: webhookconfig.ConfigurationName}})).To(Succeed())
		quota := createQuota("delete-team")
		updateInstallation(ns, func(spec *operatorv1alpha1.KarmadaQuotaInstallationSpec) { spec.Suspend = false })
		waitReady(ns)
		Eventually(vwcExists).Should(BeTrue())
		inst := getInstallation(ns)
		in := renderChart(ns, nil)

		// A finalizer holds the webhook configuration in deletion: the components must outlive it.
		var vwc admissionregistrationv1.ValidatingWebhookConfiguration
		Expect(karmadaPlane.client.Get(ctx, client.ObjectKey{Name: webhookconfig.ConfigurationName}, &vwc)).To(Succeed())
		vwc.Finalizers = []string{"test.karmada-quota.io/hold"}
		Expect(karmadaPlane.client.Update(ctx, &vwc)).To(Succeed())

		watch, err := karmadaPlane.typed.AdmissionregistrationV1().ValidatingWebhookConfigurations().Watch(ctx,
			metav1.ListOptions{FieldSelector: "metadata.name=" + webhookconfig.ConfigurationName, ResourceVersion: vwc.ResourceVersion})
		Expect(err).NotTo(HaveOccurred())
		defer watch.Stop()
		vwcGone := make(chan time.Time, 1)
		go func() {
			defer GinkgoRecover()
			for e := range watch.ResultChan() {
				if e.Type == "DELETED" {
					vwcGone <- time.Now()
					return
				}
			}
		}()

		Expect(hostPlane.client.Delete(ctx, inst)).To(Succeed())
		Eventually(func() bool {
			Expect(karmadaPlane.client.Get(ctx, client.ObjectKeyFromObject(&vwc), &vwc)).To(Succeed())
			return vwc.DeletionTimestamp != nil
		}).Should(BeTrue())
		Consistently(func() error {
			for _, name := range []string{release + "-webhook", release + "-controller"} {
				if _, err := deployment(ns, name); err != nil {
					return err
				}
			}
			return nil
		}).WithTimeout(2*time.Second).Should(Succeed(), "no component goes while the webhook configuration is there")
		unregistered := time.Now()
		vwc.Finalizers = nil
		Expect(karmadaPlane.client.Update(ctx, &vwc)).To(Succeed())

		instGone := func() bool {
			return apierrors.IsNotFound(hostPlane.client.Get(ctx, client.ObjectKeyFromObject(inst), inst))
		}
		Eventually(instGone).WithTimeout(20*time.Second).Should(BeTrue(), "the finalizer is removed once uninstalled")

		var unregisteredAt time.Time
		Eventually(vwcGone).Should(Receive(&unregisteredAt))
		var deleted []string
		for _, e := range deployments.eventsIn(ns) {
			if e.What == "deleted" {
				Expect(e.At).To(BeTemporally(">", unregisteredAt), "%s deleted before the webhook configuration", e.Name)
				AddReportEntry("uninstall: webhook configuration gone, then "+e.Name+" deleted", "+"+e.At.Sub(unregisteredAt).Round(time.Millisecond).String())
				deleted = append(deleted, e.Name)
			}
		}
		Expect(unregisteredAt).To(BeTemporally(">", unregistered))
		Expect(deleted).To(ConsistOf(release+"-webhook", release+"-controller"))
		Expect(vwcExists()).To(BeFalse())
		var services corev1.ServiceList
		Expect(hostPlane.client.List(ctx, &services, client.InNamespace(ns))).To(Succeed())
		Expect(services.Items).To(BeEmpty())

		for _, obj := range in.Karmada {
			_, err := getKarmada(obj)
			if obj.GetKind() == "CustomResourceDefinition" {
				Expect(err).NotTo(HaveOccurred(), "the CRD stays")
				continue
			}
			Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%s %s is still in the karmada-apiserver", obj.GetKind(), obj.GetName())
		}
		for _, id := range in.Config.Identities {
			_, err := hostSecret(ns, id.KubeconfigSecret)
			Expect(apierrors.IsNotFound(err)).To(BeTrue(), id.KubeconfigSecret)
		}
		var tokens corev1.SecretList
		Expect(karmadaPlane.client.List(ctx, &tokens, client.MatchingLabels{partOf: "karmada-quota"})).To(Succeed())
		Expect(tokens.Items).To(BeEmpty(), "the identities' tokens are gone from the karmada-apiserver")
		var crd apiextensionsv1.CustomResourceDefinition
		Expect(karmadaPlane.client.Get(ctx, client.ObjectKey{Name: crdName}, &crd)).To(Succeed())
		Expect(crd.DeletionTimestamp).To(BeNil())
		Expect(karmadaPlane.client.Get(ctx, client.ObjectKeyFromObject(quota), quota)).To(Succeed(), "quotas stay")
		Expect(events(ns, controller.EventUninstalled)).NotTo(BeEmpty())
	})

	It("reports monitoring the host cannot serve, and recovers and prunes when it is turned off", func() {
		ns := installReady("monitoring", nil)
		updateInstallation(ns, func(spec *operatorv1alpha1.KarmadaQuotaInstallationSpec) {
			spec.Monitoring.ServiceMonitor.Enabled = true
			spec.Monitoring.PrometheusRule.Enabled = true
			spec.Monitoring.Dashboards.Enabled = true
		})
		eventuallyInstallation(ns).Should(And(current,
			condition(operatorv1alpha1.ConditionDegraded, metav1.ConditionTrue, controller.ReasonHostAPIMissing),
			condition(operatorv1alpha1.ConditionReady, metav1.ConditionTrue, controller.ReasonInstalled)),
			"what runs still serves")
		Expect(conditionMessage(getInstallation(ns), operatorv1alpha1.ConditionDegraded)).To(ContainSubstring("monitoring.coreos.com"))
		dashboard := client.ObjectKey{Namespace: ns, Name: release + "-dashboard"}
		Expect(hostPlane.client.Get(ctx, dashboard, &corev1.ConfigMap{})).To(Succeed(), "what the host serves is applied")

		updateInstallation(ns, func(spec *operatorv1alpha1.KarmadaQuotaInstallationSpec) {
			spec.Monitoring = operatorv1alpha1.Monitoring{}
		})
		waitReady(ns)
		eventuallyInstallation(ns).Should(condition(operatorv1alpha1.ConditionDegraded, metav1.ConditionFalse, controller.ReasonAsExpected))
		Expect(apierrors.IsNotFound(hostPlane.client.Get(ctx, dashboard, &corev1.ConfigMap{}))).To(BeTrue(), "the dashboard ConfigMap is pruned")
	})
})
