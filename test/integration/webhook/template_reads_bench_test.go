package webhook

import (
	"fmt"
	"testing"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"github.com/karmada-io/karmada/pkg/util/names"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/internal/testenv"
	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
	"github.com/karmada-quota/karmada-quota/test/integration/framework"
)

// BenchmarkGatesTemplateReads measures what reading a binding's template costs a binding write, against the
// priority class reads it is held to: the scheduler's placements of a PersistentVolumeClaim's binding under a
// quota limiting storage (its claim read from the template) and under one that does not (nothing read), and of a
// Deployment's binding naming no priority class under a quota scoped by PriorityClass (its class read from the
// template). Each write names either a new template version (the template is rewritten before it, outside the
// timer: one GET for the binding write) or the version read before (no read). Every other write grows, so it is
// decided in full and reserved; the controller beside settles. `make bench-gates` runs it.
func BenchmarkGatesTemplateReads(b *testing.B) {
	ctx, c, _ := startBench(b)

	// template is one template, its binding, and the quota its namespace has.
	type template struct {
		obj client.Object
		rb  *workv1alpha2.ResourceBinding
	}
	setUp := func(name string, q *quotav1alpha1.KarmadaQuota, obj client.Object, apiVersion, kind string, binding *utiltesting.BindingWrapper) template {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		q.Namespace = name
		obj.SetNamespace(name)
		must(b, c.Create(ctx, ns), c.Create(ctx, q), c.Create(ctx, obj))
		binding.Namespace = name
		binding.Name = names.GenerateBindingName(kind, obj.GetName())
		binding.Resource(apiVersion, kind)
		binding.Spec.Resource.Namespace, binding.Spec.Resource.Name = name, obj.GetName()
		binding.Spec.Resource.UID, binding.Spec.Resource.ResourceVersion = obj.GetUID(), obj.GetResourceVersion()
		rb, err := testenv.CreateBinding(ctx, c, binding)
		must(b, err)
		return template{obj: obj, rb: rb}
	}
	claim := func() *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "data"},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			},
		}
	}
	limited := setUp("claims-limited", testenv.Quota("", "team", framework.List("requests.storage", "1Pi")),
		claim(), "v1", "PersistentVolumeClaim", utiltesting.MakeBinding("", ""))
	unlimited := setUp("claims-unlimited", testenv.Quota("", "team", framework.List("cpu", "1000")),
		claim(), "v1", "PersistentVolumeClaim", utiltesting.MakeBinding("", ""))
	d, err := framework.CreateDeployment(ctx, c, "default", "web", "high", "1m")
	must(b, err)
	must(b, c.Delete(ctx, d))
	d.ObjectMeta = metav1.ObjectMeta{Name: "web"}
	scoped := testenv.Quota("", "team", framework.List("cpu", "1000"))
	scoped.Spec.ScopeSelector = &quotav1alpha1.ScopeSelector{MatchExpressions: []quotav1alpha1.ScopedResourceSelectorRequirement{
		{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{"high"}},
	}}
	class := setUp("class-scoped", scoped, d, "apps/v1", "Deployment",
		utiltesting.MakeBinding("", "").Replicas(1).Requests(framework.List("cpu", "1m")))

	// write places t's binding on one member or two in turn, in one update; when fresh, the update also names a
	// new version of the template, rewritten before it, so that the binding write is the first to read it.
	write := func(b *testing.B, t template, i int, fresh bool) {
		b.StopTimer()
		if fresh {
			t.obj.SetLabels(map[string]string{"revision": fmt.Sprint(i)})
			must(b, c.Update(ctx, t.obj))
		}
		must(b, c.Get(ctx, client.ObjectKeyFromObject(t.rb), t.rb))
		t.rb.Spec.Resource.ResourceVersion = t.obj.GetResourceVersion()
		replicas := min(t.rb.Spec.Replicas, 1)
		t.rb.Spec.Clusters = []workv1alpha2.TargetCluster{{Name: "member1", Replicas: replicas}}
		if i%2 == 1 {
			t.rb.Spec.Clusters = append(t.rb.Spec.Clusters, workv1alpha2.TargetCluster{Name: "member2", Replicas: replicas})
		}
		b.StartTimer()
		must(b, c.Update(ctx, t.rb))
	}
	for _, bench := range []struct {
		name string
		t    template
	}{{"claims-limited", limited}, {"claims-not-limited", unlimited}, {"priority-class-scoped", class}} {
		for _, fresh := range []bool{true, false} {
			version := "same-version"
			if fresh {
				version = "new-version"
			}
			b.Run(bench.name+"/"+version, func(b *testing.B) {
				for i := 0; b.Loop(); i++ {
					write(b, bench.t, i, fresh)
				}
			})
		}
	}
}
