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
	"github.com/karmada-quota/karmada-quota/pkg/webhookconfig"
	"github.com/karmada-quota/karmada-quota/test/integration/framework"
)

// BenchmarkGates measures what the Work and resource template gates add to one write through a real
// kube-apiserver: the same sequential writes with the gate registered and with it taken out of the
// configuration, in one run, so that the ratio holds across machines. Every write is one the gate decides in
// full: a Work rewritten within what its binding was admitted for (a binding GET and the quotas from the
// informer), and a template whose new requests grow its placed usage (a dry-run decision in the namespace's
// admission queue). `make bench-gates` runs it.
func BenchmarkGates(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	env, cfg, c, err := framework.Start()
	if err != nil {
		b.Fatal(err)
	}
	webhooks, err := framework.StartWebhooks(ctx, cfg, c, 1, nil, nil)
	if err != nil {
		cancel()
		_ = env.Stop()
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := framework.StopAll(env, webhooks, cancel); err != nil {
			b.Error(err)
		}
	})

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
	manifest := func(i int) []byte {
		m := d.DeepCopy()
		m.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}
		m.ObjectMeta = metav1.ObjectMeta{Namespace: ns.Name, Name: d.Name, Annotations: map[string]string{"revision": fmt.Sprint(i)}}
		m.Spec.Replicas = ptr.To[int32](4)
		raw, err := json.Marshal(m)
		must(b, err)
		return raw
	}
	w.Spec.Workload.Manifests = []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: manifest(0)}}}
	must(b, c.Create(ctx, w))

	writes := map[string]func(i int) error{
		webhookconfig.WorkWebhook: func(i int) error {
			w.Spec.Workload.Manifests[0].Raw = manifest(i)
			return c.Update(ctx, w)
		},
		webhookconfig.TemplateWebhook: func(i int) error {
			// 2.1 and 2.2 CPU in turn: both grow past the binding's 2 CPU, so each write is decided in full.
			d.Spec.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse(fmt.Sprintf("%dm", 2100+100*(i%2)))
			return c.Update(ctx, d)
		},
	}
	for _, gate := range []string{webhookconfig.WorkWebhook, webhookconfig.TemplateWebhook} {
		for _, registered := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/registered=%t", gate, registered), func(b *testing.B) {
				register(ctx, b, c, webhooks, gate, registered)
				for i := 0; b.Loop(); i++ {
					if err := writes[gate](i); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
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
