package controller

import (
	"context"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/karmada-quota/karmada-quota/pkg/controller"
	"github.com/karmada-quota/karmada-quota/pkg/estimator/discovery"
	"github.com/karmada-quota/karmada-quota/pkg/scheme"
	"github.com/karmada-quota/karmada-quota/pkg/util/kindjson"
)

// The Services by which karmada-scheduler finds the estimator: one per Cluster while it exists, put back when
// removed by hand, gone with their Cluster or their prefix, and never one karmada-quota did not create.
var _ = Describe("Estimator Services", Ordered, func() {
	const namespace = "karmada-system"
	opts := discovery.Options{Scheduler: discovery.Lookup{Namespace: namespace, Prefix: "quota-estimator", Port: 10352},
		Host: "karmada-quota-webhook.karmada-system.svc", Port: 10400}

	// run starts the reconciler alone, as quota-controller runs it; stop stops it.
	run := func(opts discovery.Options) (stop func()) {
		clients, err := kindjson.NewClients(cfg)
		Expect(err).NotTo(HaveOccurred())
		cacheOpts, err := controller.CacheOptions(clients)
		Expect(err).NotTo(HaveOccurred())
		cacheOpts.ByObject[&corev1.Service{}] = discovery.CacheOptions(opts)
		mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme.Scheme, MapperProvider: clients.MapperProvider,
			Metrics:                metricsserver.Options{BindAddress: "0"},
			HealthProbeBindAddress: "0", Cache: cacheOpts, Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
		Expect(err).NotTo(HaveOccurred())
		Expect(discovery.Setup(mgr, opts)).To(Succeed())
		mgrCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- mgr.Start(mgrCtx) }()
		return func() {
			cancel()
			Expect(<-done).To(Succeed())
		}
	}
	// start runs it until the spec ends.
	start := func(opts discovery.Options) { DeferCleanup(run(opts)) }
	join := func(name string) *clusterv1alpha1.Cluster {
		c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push}}
		Expect(k8s.Create(ctx, c)).To(Succeed())
		return c
	}
	service := func(name string) func(Gomega) *corev1.Service {
		return func(g Gomega) *corev1.Service {
			svc := &corev1.Service{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, svc)).To(Succeed())
			return svc
		}
	}
	gone := func(name string) func(Gomega) {
		return func(g Gomega) {
			err := k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &corev1.Service{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Service %s: %v", name, err)
		}
	}

	BeforeAll(func() {
		Expect(client.IgnoreAlreadyExists(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}))).To(Succeed())
	})

	It("keeps one Service per Cluster, pointing at the estimator, and puts it back when deleted", func() {
		start(opts)
		c := join("estimated-a")
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, c))).To(Succeed()) })

		var got *corev1.Service
		Eventually(func(g Gomega) { got = service("quota-estimator-estimated-a")(g) }).Should(Succeed())
		Expect(got.Spec.Type).To(Equal(corev1.ServiceTypeExternalName))
		Expect(got.Spec.ExternalName).To(Equal("karmada-quota-webhook.karmada-system.svc"))
		Expect(got.Spec.Ports).To(HaveLen(1))
		// What karmada-scheduler resolves: the port it asks for, the int target port it dials.
		Expect(got.Spec.Ports[0].Port).To(Equal(int32(10352)))
		Expect(got.Spec.Ports[0].TargetPort).To(Equal(intstr.FromInt32(10400)))
		Expect(got.OwnerReferences).To(ConsistOf(HaveField("UID", c.UID)))

		Expect(k8s.Delete(ctx, got)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(service("quota-estimator-estimated-a")(g).UID).NotTo(Equal(got.UID))
		}).Should(Succeed())

		By("the Cluster leaving")
		Expect(k8s.Delete(ctx, c)).To(Succeed())
		Eventually(gone("quota-estimator-estimated-a")).Should(Succeed())
	})

	It("leaves alone a Service of that name it did not create", func() {
		foreign := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "quota-estimator-estimated-b"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "karmada-scheduler-estimator.example",
				Ports: []corev1.ServicePort{{Port: 10352, TargetPort: intstr.FromInt32(10352)}}}}
		Expect(k8s.Create(ctx, foreign)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, foreign))).To(Succeed()) })
		start(opts)
		c := join("estimated-b")
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, c))).To(Succeed()) })
		// Another Cluster's Service appearing shows the reconciler ran meanwhile.
		other := join("estimated-c")
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, other))).To(Succeed()) })
		Eventually(service("quota-estimator-estimated-c")).Should(Not(BeNil()))
		Consistently(func(g Gomega) {
			svc := service("quota-estimator-estimated-b")(g)
			g.Expect(svc.Spec.ExternalName).To(Equal("karmada-scheduler-estimator.example"))
			g.Expect(svc.Labels).To(BeEmpty())
		}, 2*time.Second).Should(Succeed())

		By("the Cluster leaving: still not ours to delete")
		Expect(k8s.Delete(ctx, c)).To(Succeed())
		Consistently(service("quota-estimator-estimated-b"), 2*time.Second).Should(Not(BeNil()))
	})

	It("moves the Services to a new prefix", func() {
		c := join("estimated-d")
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, c))).To(Succeed()) })
		By("the first prefix")
		stop := run(opts)
		Eventually(service("quota-estimator-estimated-d")).Should(Not(BeNil()))
		stop()
		By("restarted with another prefix")
		moved := opts
		moved.Scheduler.Prefix = "karmada-quota-estimator"
		start(moved)
		Eventually(service("karmada-quota-estimator-estimated-d")).Should(Not(BeNil()))
		Eventually(gone("quota-estimator-estimated-d")).Should(Succeed())
	})
})
