package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"github.com/karmada-io/karmada/pkg/util/names"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/internal/testenv"
	"github.com/karmada-quota/karmada-quota/pkg/controller"
	"github.com/karmada-quota/karmada-quota/pkg/webhookconfig"
	"github.com/karmada-quota/karmada-quota/test/integration/framework"
)

// BenchmarkGates measures what the Work and resource template gates add to one write through a real
// kube-apiserver: the same sequential writes with the gate registered and with it taken out of the
// configuration, in one run, so that the ratio holds across machines. Every write is one the gate decides in
// full: a Work rewritten within what its binding places (a binding GET and the quotas from the informer, no
// write), a Work asking more than its binding places every other write (an OverridePolicy raising requests: a
// reservation written to the quota, settled by the controller running beside), and a template whose new requests grow its placed usage (a dry-run decision
// in the namespace's admission queue). `make bench-gates` runs it.
func BenchmarkGates(b *testing.B) {
	ctx, c, webhooks := startBench(b)

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gates"}}
	execution := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: names.GenerateExecutionSpaceName("member1")}}
	must(b, c.Create(ctx, ns), c.Create(ctx, execution), c.Create(ctx, testenv.Quota(ns.Name, "team", framework.List("cpu", "1000"))))
	d, err := framework.CreateDeployment(ctx, c, ns.Name, "web", "", "2")
	must(b, err)
	d.Labels = map[string]string{policyv1alpha1.PropagationPolicyPermanentIDLabel: "policy-id"}
	must(b, c.Update(ctx, d))
	bw := framework.BindingOf(d).Replicas(4)
	bw.Name = names.GenerateBindingName("Deployment", d.Name)
	rb, err := testenv.CreateBinding(ctx, c, bw)
	must(b, err)
	must(b, framework.Place(ctx, c, rb, nil, framework.Cluster("member1", 4)))

	w := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{
		Namespace: execution.Name, Name: names.GenerateWorkName("Deployment", d.Name, ns.Name),
		Annotations: map[string]string{
			workv1alpha2.ResourceBindingNamespaceAnnotationKey: ns.Name,
			workv1alpha2.ResourceBindingNameAnnotationKey:      rb.Name,
		},
	}}
	manifest := func(i int, cpu string) []byte {
		m := d.DeepCopy()
		m.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}
		m.ObjectMeta = metav1.ObjectMeta{Namespace: ns.Name, Name: d.Name, Annotations: map[string]string{"revision": fmt.Sprint(i)}}
		m.Spec.Replicas = ptr.To[int32](4)
		m.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
		raw, err := json.Marshal(m)
		must(b, err)
		return raw
	}
	w.Spec.Workload.Manifests = []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: manifest(0, "2")}}}
	must(b, c.Create(ctx, w))

	writes := []struct {
		name, gate string
		write      func(i int) error
	}{
		{name: "work-within-placement", gate: webhookconfig.WorkWebhook, write: func(i int) error {
			w.Spec.Workload.Manifests[0].Raw = manifest(i, "2")
			return c.Update(ctx, w)
		}},
		// What an OverridePolicy raising requests on the member makes Karmada write, in a namespace with a quota:
		// 2 CPU and 2.1 CPU in turn, where the binding places 2. Every other write asks more than its binding
		// places and than the Work asked before, and is admitted with a reservation written to the quota, which the
		// controller settles; the writes between go back within it.
		{name: "work-beyond-placement", gate: webhookconfig.WorkWebhook, write: func(i int) error {
			w.Spec.Workload.Manifests[0].Raw = manifest(i, fmt.Sprintf("%dm", 2000+100*(i%2)))
			return c.Update(ctx, w)
		}},
		{name: "template", gate: webhookconfig.TemplateWebhook, write: func(i int) error {
			// 2.1 and 2.2 CPU in turn: both grow past the binding's 2 CPU, so each write is decided in full.
			d.Spec.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse(fmt.Sprintf("%dm", 2100+100*(i%2)))
			return c.Update(ctx, d)
		}},
	}
	for _, bench := range writes {
		for _, registered := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/registered=%t", bench.name, registered), func(b *testing.B) {
				register(ctx, b, c, webhooks, bench.gate, registered)
				for i := 0; b.Loop(); i++ {
					if err := bench.write(i); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// startBench starts what a gate benchmark writes through: a real etcd and kube-apiserver, one quota-webhook
// replica registered as installed, and the controller beside, settling what the webhook reserves as in a real
// installation. All of it stops when the benchmark ends.
func startBench(b *testing.B) (context.Context, client.Client, *framework.Webhooks) {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	env, cfg, c, err := framework.Start()
	if err != nil {
		cancel()
		b.Fatal(err)
	}
	webhooks, err := framework.StartWebhooks(ctx, cfg, c, 1, nil, nil)
	if err != nil {
		cancel()
		_ = env.Stop()
		b.Fatal(err)
	}
	controllerRunning, err := framework.StartController(ctx, cfg, controller.Options{
		ResyncPeriod: 5 * time.Minute, Workers: 4, SettleInterval: controller.DefaultSettleInterval,
	}, framework.Lag{})
	if err != nil {
		_ = framework.StopAll(env, webhooks, cancel)
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := controllerRunning.Stop(); err != nil {
			b.Error(err)
		}
		if err := framework.StopAll(env, webhooks, cancel); err != nil {
			b.Error(err)
		}
	})
	return ctx, c, webhooks
}

// register puts the named webhook into the configuration, or takes it out, and waits for the apiserver to have
// seen the change.
func register(ctx context.Context, b *testing.B, c client.Client, webhooks *framework.Webhooks, name string, registered bool) {
	b.Helper()
	var conf admissionregistrationv1.ValidatingWebhookConfiguration
	must(b, c.Get(ctx, client.ObjectKey{Name: webhookconfig.ConfigurationName}, &conf))
	conf.Webhooks = slices.DeleteFunc(conf.Webhooks, func(w admissionregistrationv1.ValidatingWebhook) bool { return w.Name == name })
	if registered {
		for _, w := range webhookconfig.Configuration(webhooks.URL, webhooks.CA, webhookconfig.DefaultTimeoutSeconds).Webhooks {
			if w.Name == name {
				conf.Webhooks = append(conf.Webhooks, w)
			}
		}
	}
	must(b, c.Update(ctx, &conf))
	// The apiserver reads webhook configurations from its informer.
	time.Sleep(2 * time.Second)
}

func must(b *testing.B, errs ...error) {
	b.Helper()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
}
