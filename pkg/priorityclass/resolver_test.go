package priorityclass

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/karmada-quota/karmada-quota/pkg/scheme"
	"github.com/karmada-quota/karmada-quota/pkg/templates"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

const ns = "team-a"

func podSpec(class string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{PriorityClassName: class, Containers: []corev1.Container{{Name: "app", Image: "app"}}}}
}

func deployment(name, class string) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: appsv1.DeploymentSpec{Template: podSpec(class)}}
}

// reads counts the reads of templates that reach the fake apiserver.
type reads struct{ gets, lists atomic.Int32 }

func newClient(r *reads, failGet error, objs ...client.Object) client.WithWatch {
	return fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			r.gets.Add(1)
			if failGet != nil {
				return failGet
			}
			return c.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			r.lists.Add(1)
			return c.List(ctx, list, opts...)
		},
	}).Build()
}

// bindingOf is the binding Karmada's detector makes for a template: it names the template's version.
func bindingOf(obj client.Object, apiVersion, kind string) *utiltesting.BindingWrapper {
	b := utiltesting.MakeBinding(ns, obj.GetName()).Resource(apiVersion, kind).Replicas(1).Requests(utiltesting.List("cpu", "1"))
	b.Spec.Resource.ResourceVersion = obj.GetResourceVersion()
	return b
}

// stored creates the objects in a fake client and returns them as stored, resourceVersion set.
func stored(t *testing.T, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, obj := range objs {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
			t.Fatalf("reading %s back: %v", obj.GetName(), err)
		}
	}
}

func TestClassEveryKnownKind(t *testing.T) {
	objs := []struct {
		obj        client.Object
		apiVersion string
		kind       string
	}{
		{deployment("web", "high"), "apps/v1", "Deployment"},
		{&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}, Spec: appsv1.StatefulSetSpec{Template: podSpec("critical")}}, "apps/v1", "StatefulSet"},
		{&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rs"}, Spec: appsv1.ReplicaSetSpec{Template: podSpec("low")}}, "apps/v1", "ReplicaSet"},
		{&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent"}, Spec: appsv1.DaemonSetSpec{Template: podSpec("node")}}, "apps/v1", "DaemonSet"},
		{&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "batch"}, Spec: batchv1.JobSpec{Template: podSpec("batch")}}, "batch/v1", "Job"},
		{&batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nightly"}, Spec: batchv1.CronJobSpec{Schedule: "0 0 * * *",
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: podSpec("nightly")}}}}, "batch/v1", "CronJob"},
		{&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pod"}, Spec: podSpec("single").Spec}, "v1", "Pod"},
		{deployment("plain", ""), "apps/v1", "Deployment"},
	}
	want := []string{"high", "critical", "low", "node", "batch", "nightly", "single", ""}
	var r reads
	var all []client.Object
	for _, o := range objs {
		all = append(all, o.obj)
	}
	c := newClient(&r, nil, all...)
	stored(t, c, all...)
	resolver := NewResolver(c, 100)
	var got []string
	for _, o := range objs {
		class, err := resolver.Class(context.Background(), bindingOf(o.obj, o.apiVersion, o.kind).Obj().Spec.Resource)
		if err != nil {
			t.Fatalf("Class(%s %s): %v", o.kind, o.obj.GetName(), err)
		}
		got = append(got, class)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("classes (-want +got):\n%s", diff)
	}
}

func TestClassIsReadOncePerTemplateVersion(t *testing.T) {
	var r reads
	web := deployment("web", "high")
	c := newClient(&r, nil, web)
	stored(t, c, web)
	r.gets.Store(0)
	resolver := NewResolver(c, 100)
	ref := bindingOf(web, "apps/v1", "Deployment").Obj().Spec.Resource
	for range 3 {
		if class, err := resolver.Class(context.Background(), ref); err != nil || class != "high" {
			t.Fatalf("Class = %q, %v; want high", class, err)
		}
	}
	if got := r.gets.Load(); got != 1 {
		t.Errorf("%d reads of one template version, want 1", got)
	}

	// The template changes: the detector rewrites the binding with the new version, which is read once more.
	web.Spec.Template.Spec.PriorityClassName = "low"
	if err := c.Update(context.Background(), web); err != nil {
		t.Fatal(err)
	}
	newRef := bindingOf(web, "apps/v1", "Deployment").Obj().Spec.Resource
	if class, err := resolver.Class(context.Background(), newRef); err != nil || class != "low" {
		t.Fatalf("Class of the new version = %q, %v; want low", class, err)
	}
	if class, ok := resolver.Cached(ref); !ok || class != "high" {
		t.Errorf("Cached(old version) = %q, %v; want high: an update's old binding keeps its class", class, ok)
	}
	if got := r.gets.Load(); got != 2 {
		t.Errorf("%d reads, want 2", got)
	}
}

func TestClassUnclassifiable(t *testing.T) {
	cases := map[string]struct {
		ref     workv1alpha2.ObjectReference
		wantWhy string
	}{
		"a kind whose pod template is unknown": {
			ref:     workv1alpha2.ObjectReference{APIVersion: "flink.apache.org/v1beta1", Kind: "FlinkDeployment", Namespace: ns, Name: "f", ResourceVersion: "1"},
			wantWhy: "only from the pod templates of CronJob, DaemonSet, Deployment, Job, Pod, ReplicaSet, StatefulSet",
		},
		"a template that is gone": {
			ref:     workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: "gone", ResourceVersion: "1"},
			wantWhy: "the template is gone",
		},
		"an apiVersion that does not parse": {
			ref:     workv1alpha2.ObjectReference{APIVersion: "a/b/c", Kind: "Deployment", Namespace: ns, Name: "web"},
			wantWhy: `apiVersion "a/b/c" does not parse`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var r reads
			_, err := NewResolver(newClient(&r, nil), 10).Class(context.Background(), tc.ref)
			if !IsUnclassifiable(err) {
				t.Fatalf("Class error = %v, want Unclassifiable", err)
			}
			if !strings.Contains(err.Error(), tc.wantWhy) {
				t.Errorf("error %q does not say %q", err, tc.wantWhy)
			}
		})
	}
}

func TestClassReadFailureIsNoAnswer(t *testing.T) {
	var r reads
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "web", errors.New("RBAC"))
	_, err := NewResolver(newClient(&r, forbidden), 10).Class(context.Background(),
		workv1alpha2.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: "web", ResourceVersion: "1"})
	if err == nil || IsUnclassifiable(err) || !apierrors.IsForbidden(err) {
		t.Errorf("Class error = %v, want the read's Forbidden, not an answer", err)
	}
}

func TestLacksAndPlacesUnclassified(t *testing.T) {
	base := utiltesting.MakeBinding(ns, "web").Requests(utiltesting.List("cpu", "1"))
	cases := map[string]struct {
		b                    *utiltesting.BindingWrapper
		wantLacks, wantPlace bool
	}{
		"unscheduled, asks for replicas":             {b: base.Clone().Replicas(2), wantLacks: true},
		"placed":                                     {b: base.Clone().Replicas(2).Cluster("member1", 2), wantLacks: true, wantPlace: true},
		"placed with a class":                        {b: base.Clone().Replicas(2).Cluster("member1", 2).PriorityClass("high")},
		"a ConfigMap on every cluster":               {b: utiltesting.MakeBinding(ns, "cm").Resource("v1", "ConfigMap").Cluster("member1", 0)},
		"components, one without a class":            {b: utiltesting.MakeBinding(ns, "f").Component("jm", 1, nil).Component("tm", 2, nil).ComponentPriorityClass("jm", "high").Cluster("member1", 0), wantLacks: true, wantPlace: true},
		"components, each with a class":              {b: utiltesting.MakeBinding(ns, "f").Component("jm", 1, nil).ComponentPriorityClass("jm", "high").Cluster("member1", 0)},
		"components inheriting the binding's class":  {b: utiltesting.MakeBinding(ns, "f").PriorityClass("low").Component("jm", 1, nil).Cluster("member1", 0)},
		"components without a class, not yet placed": {b: utiltesting.MakeBinding(ns, "f").Component("jm", 1, nil), wantLacks: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rb := tc.b.Obj()
			if got := Lacks(rb); got != tc.wantLacks {
				t.Errorf("Lacks = %v, want %v", got, tc.wantLacks)
			}
			if got := PlacesUnclassified(rb); got != tc.wantPlace {
				t.Errorf("PlacesUnclassified = %v, want %v", got, tc.wantPlace)
			}
		})
	}
}

func TestWithClassCopies(t *testing.T) {
	rb := utiltesting.MakeBinding(ns, "web").Requests(utiltesting.List("cpu", "1")).Cluster("member1", 1).Obj()
	before := rb.DeepCopy()
	got := WithClass(rb, "high")
	if got.Spec.ReplicaRequirements.PriorityClassName != "high" {
		t.Errorf("class = %q, want high", got.Spec.ReplicaRequirements.PriorityClassName)
	}
	if diff := cmp.Diff(before, rb); diff != "" {
		t.Errorf("the binding changed (-before +after):\n%s", diff)
	}
	if got := WithClass(rb, ""); got != rb {
		t.Error("no class to fill: want the binding itself")
	}
	noRequirements := utiltesting.MakeBinding(ns, "pod").Resource("v1", "Pod").Cluster("member1", 1).Obj()
	if got := WithClass(noRequirements, "high"); got.Spec.ReplicaRequirements == nil || got.Spec.ReplicaRequirements.PriorityClassName != "high" ||
		noRequirements.Spec.ReplicaRequirements != nil {
		t.Errorf("a binding without requirements: got %+v, original %+v", got.Spec.ReplicaRequirements, noRequirements.Spec.ReplicaRequirements)
	}
}

func TestClassifyAll(t *testing.T) {
	// Many Deployments of one namespace: read with one LIST. A few StatefulSets: a GET each.
	var objs []client.Object
	for i := range templates.ListThreshold + 2 {
		class := "high"
		if i%2 == 1 {
			class = ""
		}
		objs = append(objs, deployment(fmt.Sprintf("web-%02d", i), class))
	}
	for i := range 2 {
		objs = append(objs, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("db-%d", i)}, Spec: appsv1.StatefulSetSpec{Template: podSpec("critical")}})
	}
	var r reads
	c := newClient(&r, nil, objs...)
	stored(t, c, objs...)
	r.gets.Store(0)

	var bindings []workv1alpha2.ResourceBinding
	for _, obj := range objs {
		kind := "Deployment"
		if _, ok := obj.(*appsv1.StatefulSet); ok {
			kind = "StatefulSet"
		}
		bindings = append(bindings, *bindingOf(obj, "apps/v1", kind).Cluster("member1", 1).Obj())
	}
	bindings = append(bindings,
		*utiltesting.MakeBinding(ns, "flink").Resource("flink.apache.org/v1beta1", "FlinkDeployment").Replicas(1).Cluster("member1", 1).Obj(),
		*utiltesting.MakeBinding(ns, "classed").Replicas(1).PriorityClass("low").Cluster("member1", 1).Obj(),
		*utiltesting.MakeBinding(ns, "gone").Replicas(1).Cluster("member1", 1).Obj(),
	)
	originals := make([]*workv1alpha2.ResourceBinding, len(bindings))
	for i := range bindings {
		originals[i] = bindings[i].DeepCopy()
	}
	sharedRequirements := bindings[0].Spec.ReplicaRequirements

	resolver := NewResolver(c, 1000)
	failed, err := resolver.ClassifyAll(context.Background(), bindings)
	if err != nil {
		t.Fatalf("ClassifyAll: %v", err)
	}
	got := map[string]string{}
	for i := range bindings {
		got[bindings[i].Name] = bindingClass(&bindings[i])
	}
	want := map[string]string{"flink": "", "classed": "low", "gone": "", "db-0": "critical", "db-1": "critical"}
	for i := range templates.ListThreshold + 2 {
		want[fmt.Sprintf("web-%02d", i)] = map[bool]string{true: "high", false: ""}[i%2 == 0]
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("classes (-want +got):\n%s", diff)
	}
	var failedNames []string
	for _, f := range failed {
		if !IsUnclassifiable(f.Err) {
			t.Errorf("failure %s: %v is not Unclassifiable", f.Binding, f.Err)
		}
		failedNames = append(failedNames, f.Binding)
	}
	if diff := cmp.Diff([]string{"flink", "gone"}, failedNames); diff != "" {
		t.Errorf("unclassified (-want +got):\n%s", diff)
	}
	// web-00's class came from the LIST; the binding's shared requirements were not written.
	if sharedRequirements.PriorityClassName != "" {
		t.Error("ClassifyAll wrote into the requirements the binding shares with its cache")
	}
	for i := range bindings {
		if bindings[i].Name == "classed" {
			continue
		}
		classed := bindings[i].DeepCopy()
		classed.Spec.ReplicaRequirements = originals[i].Spec.ReplicaRequirements
		if diff := cmp.Diff(originals[i], classed); diff != "" {
			t.Errorf("%s changed beyond its class (-want +got):\n%s", bindings[i].Name, diff)
		}
	}
	if gets, lists := r.gets.Load(), r.lists.Load(); lists != 1 || gets != 2 {
		t.Errorf("%d LISTs and %d GETs, want 1 LIST (the Deployments, the gone one among them) and 2 GETs (the StatefulSets)", lists, gets)
	}

	// A second recount reads nothing: every version is remembered (but the gone one, read again).
	r.gets.Store(0)
	r.lists.Store(0)
	again := make([]workv1alpha2.ResourceBinding, len(originals))
	for i := range originals {
		again[i] = *originals[i]
	}
	if _, err := resolver.ClassifyAll(context.Background(), again); err != nil {
		t.Fatal(err)
	}
	if gets, lists := r.gets.Load(), r.lists.Load(); lists != 0 || gets != 1 {
		t.Errorf("second recount: %d LISTs and %d GETs, want none but the gone template's GET", lists, gets)
	}
}

func TestClassifyAllReadFailure(t *testing.T) {
	var r reads
	c := newClient(&r, apierrors.NewServiceUnavailable("etcd is down"))
	bindings := []workv1alpha2.ResourceBinding{*utiltesting.MakeBinding(ns, "web").Replicas(1).Cluster("member1", 1).Obj()}
	if _, err := NewResolver(c, 10).ClassifyAll(context.Background(), bindings); !apierrors.IsServiceUnavailable(err) {
		t.Errorf("ClassifyAll error = %v, want the read's error: a count without the class is no count", err)
	}
}

// TestPrevious: the class of a replaced template version is the one read before, or read as the template was
// just before it was replaced; a version out of reach is reported as such, never guessed.
func TestPrevious(t *testing.T) {
	var r reads
	web := deployment("web", "high")
	c := newClient(&r, nil, web)
	stored(t, c, web)
	oldRef := bindingOf(web, "apps/v1", "Deployment").Obj().Spec.Resource
	web.Spec.Template.Spec.PriorityClassName = "low"
	if err := c.Update(context.Background(), web); err != nil {
		t.Fatal(err)
	}
	newRef := bindingOf(web, "apps/v1", "Deployment").Obj().Spec.Resource

	// The fake apiserver keeps no history: it answers the past revision with the current object, which is not the
	// old version, so the class is out of reach. (test/integration proves the read against a real apiserver.)
	resolver := NewResolver(c, 10)
	if class, ok := resolver.Previous(context.Background(), oldRef, newRef); ok {
		t.Errorf("Previous = %q from an object of another version, want out of reach", class)
	}
	if r.lists.Load() != 1 {
		t.Errorf("%d LISTs, want the one read at the past revision", r.lists.Load())
	}
	// Read before: no read at all.
	if _, err := resolver.Class(context.Background(), oldRef); err != nil {
		t.Fatal(err)
	}
	lists := r.lists.Load()
	if class, err := resolver.Class(context.Background(), newRef); err != nil || class != "low" {
		t.Fatalf("Class(new) = %q, %v", class, err)
	}
	// Class(oldRef) read the current object (low) under its own version, not under the old one.
	if class, ok := resolver.Previous(context.Background(), oldRef, newRef); ok {
		t.Errorf("Previous = %q: the old version was never read, only the current one", class)
	}
	resolver.templates.Remember(oldRef, "high")
	if class, ok := resolver.Previous(context.Background(), oldRef, newRef); !ok || class != "high" {
		t.Errorf("Previous = %q, %v; want the remembered high", class, ok)
	}
	if got := r.lists.Load() - lists; got != 1 {
		t.Errorf("%d LISTs after the remembered version, want only the one before it", got)
	}
	// Not an etcd revision: nothing to read at.
	odd := newRef
	odd.ResourceVersion = "abc"
	if _, ok := NewResolver(c, 10).Previous(context.Background(), oldRef, odd); ok {
		t.Error("Previous read a version from a resourceVersion that is no revision")
	}
}

// BenchmarkClassifyAllCached is what a recount of a scoped quota pays for classes once every template version is
// remembered: 10,000 class-less bindings, one new replica requirements each.
func BenchmarkClassifyAllCached(b *testing.B) {
	const n = 10000
	originals := make([]workv1alpha2.ResourceBinding, n)
	resolver := NewResolver(nil, DefaultCacheSize)
	for i := range originals {
		rb := utiltesting.MakeBinding(ns, fmt.Sprintf("app-%05d", i)).Replicas(3).Requests(utiltesting.List("cpu", "250m")).Cluster("member1", 3).Obj()
		rb.Spec.Resource.ResourceVersion = fmt.Sprint(i + 1)
		resolver.templates.Remember(rb.Spec.Resource, "high")
		originals[i] = *rb
	}
	bindings := make([]workv1alpha2.ResourceBinding, n)
	b.ReportAllocs()
	for b.Loop() {
		copy(bindings, originals)
		if failed, err := resolver.ClassifyAll(context.Background(), bindings); err != nil || len(failed) != 0 {
			b.Fatal(failed, err)
		}
	}
}
