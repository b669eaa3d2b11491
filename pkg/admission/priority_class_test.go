package admission

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/priorityclass"
	"github.com/karmada-quota/karmada-quota/pkg/scheme"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

// classTemplate is a Deployment on the karmada-apiserver whose pods run at class ("" for none).
func classTemplate(name, class string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			PriorityClassName: class, Containers: []corev1.Container{{Name: "app", Image: "app"}},
		}}},
	}
}

// classFixture is a BindingValidator that reads priority classes from templates, over a fake apiserver holding
// quotas and templates; templateReads counts the reads of templates, quotaLists the lists of quotas.
type classFixture struct {
	client        client.WithWatch
	validator     *BindingValidator
	templateReads atomic.Int32
	quotaLists    atomic.Int32
}

func newClassFixture(t *testing.T, readErr error, objs ...client.Object) *classFixture {
	t.Helper()
	f := &classFixture{}
	f.client = fake.NewClientBuilder().WithScheme(scheme.Scheme).WithStatusSubresource(&quotav1alpha1.KarmadaQuota{}).
		WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if obj.GetObjectKind().GroupVersionKind().Kind == "Deployment" {
				f.templateReads.Add(1)
				if readErr != nil {
					return readErr
				}
			}
			return c.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*quotav1alpha1.KarmadaQuotaList); ok {
				f.quotaLists.Add(1)
			}
			return c.List(ctx, list, opts...)
		},
	}).Build()
	f.validator = &BindingValidator{
		admitter: newAdmitter(f.client),
		quotas:   NewQuotaReader(f.client, nil),
		classes:  &classifier{resolver: priorityclass.NewResolver(f.client, 100)},
	}
	return f
}

// templateVersion reads a template's resourceVersion, as the detector writes it into the binding.
func (f *classFixture) templateVersion(t *testing.T, name string) string {
	t.Helper()
	var d appsv1.Deployment
	if err := f.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &d); err != nil {
		t.Fatal(err)
	}
	return d.ResourceVersion
}

// classless is a binding as Karmada makes it without its ResourceQuotaEstimate gate: 1 CPU per replica, no class.
func classless(name, templateVersion string) *utiltesting.BindingWrapper {
	b := utiltesting.MakeBinding(ns, name).Replicas(3).Requests(list("cpu", "1"))
	b.Spec.Resource.ResourceVersion = templateVersion
	return b
}

func scopedQuota(name string, op corev1.ScopeSelectorOperator, values ...string) *quotav1alpha1.KarmadaQuota {
	return utiltesting.MakeQuota(ns, name).Hard(list("cpu", "2")).Scope(op, values...).Obj()
}

func TestClassifiedFromTemplate(t *testing.T) {
	f := newClassFixture(t, nil, classTemplate("web", "high"), classTemplate("plain", ""),
		scopedQuota("high", corev1.ScopeSelectorOpIn, "high"), scopedQuota("none", corev1.ScopeSelectorOpDoesNotExist))
	ctx := context.Background()

	web := classless("web", f.templateVersion(t, "web"))
	unscheduled := web.Clone().Generation(1).Obj()
	if _, err := f.validator.ValidateCreate(ctx, unscheduled); err != nil {
		t.Fatalf("create: %v", err)
	}
	if n := f.templateReads.Load(); n != 0 {
		t.Errorf("an unscheduled create read %d templates: it places nothing, its class decides nothing", n)
	}

	_, err := f.validator.ValidateUpdate(ctx, unscheduled, web.Clone().Cluster("member1", 3).Generation(2).Obj())
	checkError(t, &wantError{Code: http.StatusForbidden, Reason: ReasonQuotaExceeded,
		Messages: []string{"exceeded quota: high", "cpu: requested 3, used 0, reserved 0, hard 2"}}, err)
	if _, err := f.validator.ValidateUpdate(ctx, unscheduled, web.Clone().Cluster("member1", 2).Generation(2).Obj()); err != nil {
		t.Errorf("2 replicas of high under a quota of 2: %v", err)
	}
	if got := reservationsOf(t, f.client, "high"); len(got) != 1 {
		t.Errorf("quota high: %d reservations, want the admitted write's", len(got))
	}
	if got := reservationsOf(t, f.client, "none"); len(got) != 0 {
		t.Errorf("quota none (DoesNotExist) was charged for replicas of class high: %+v", got)
	}

	// A template naming no class: DoesNotExist counts it, In [high] does not.
	plain := classless("plain", f.templateVersion(t, "plain"))
	_, err = f.validator.ValidateUpdate(ctx, plain.Clone().Obj(), plain.Clone().Cluster("member1", 3).Generation(2).Obj())
	checkError(t, &wantError{Code: http.StatusForbidden, Reason: ReasonQuotaExceeded, Messages: []string{"exceeded quota: none"}}, err)

	// Each template version is read once, whatever the number of writes.
	if n := f.templateReads.Load(); n != 2 {
		t.Errorf("%d template reads, want 2 (one per template version)", n)
	}
}

// TestClassOnOneRead: telling a write's class and whether a quota governs it share one read of the namespace's
// quotas; the batch that decides the write makes its own.
func TestClassOnOneRead(t *testing.T) {
	f := newClassFixture(t, nil, classTemplate("web", "high"), scopedQuota("high", corev1.ScopeSelectorOpIn, "high"))
	web := classless("web", f.templateVersion(t, "web"))
	if _, err := f.validator.ValidateUpdate(context.Background(), web.Obj(), web.Clone().Cluster("member1", 1).Generation(2).Obj()); err != nil {
		t.Fatal(err)
	}
	if got := f.quotaLists.Load(); got != 2 {
		t.Errorf("%d quota lists, want 2: one for the write's class and governance, one for the batch", got)
	}
}

func TestClassTemplateChanged(t *testing.T) {
	// The template moves from high to low; the detector rewrites the binding from the new version.
	high := classTemplate("web", "high")
	f := newClassFixture(t, nil, high, scopedQuota("high", corev1.ScopeSelectorOpIn, "high"), scopedQuota("low", corev1.ScopeSelectorOpIn, "low"))
	ctx := context.Background()
	before := classless("web", f.templateVersion(t, "web")).Cluster("member1", 2).Generation(2)
	if _, err := f.validator.ValidateUpdate(ctx, before.Clone().Generation(1).Obj(), before.Obj()); err != nil {
		t.Fatalf("placing 2 replicas of high: %v", err)
	}
	if err := f.client.Get(ctx, client.ObjectKeyFromObject(high), high); err != nil {
		t.Fatal(err)
	}
	high.Spec.Template.Spec.PriorityClassName = "low"
	if err := f.client.Update(ctx, high); err != nil {
		t.Fatal(err)
	}
	after := before.Clone().Generation(3)
	after.Spec.Resource.ResourceVersion = f.templateVersion(t, "web")

	// This replica read the old version: the move is charged to low in full, and frees high.
	lowBefore := len(reservationsOf(t, f.client, "low"))
	if _, err := f.validator.ValidateUpdate(ctx, before.Obj(), after.Obj()); err != nil {
		t.Fatalf("moving 2 replicas to low, under a quota of 2: %v", err)
	}
	if got := len(reservationsOf(t, f.client, "low")); got != lowBefore+1 {
		t.Errorf("quota low: %d reservations, want the move charged", got)
	}
	bigger := after.Clone().Generation(4)
	bigger.Spec.Clusters[0].Replicas = 3
	_, err := f.validator.ValidateUpdate(ctx, before.Obj(), bigger.Obj())
	checkError(t, &wantError{Code: http.StatusForbidden, Reason: ReasonQuotaExceeded, Messages: []string{"exceeded quota: low"}}, err)
}

func TestClassUnknown(t *testing.T) {
	flink := func() *utiltesting.BindingWrapper {
		b := utiltesting.MakeBinding(ns, "flink").Resource("flink.apache.org/v1beta1", "FlinkDeployment").Replicas(2).Requests(list("cpu", "1"))
		b.Spec.Resource.ResourceVersion = "5"
		return b
	}
	ctx := context.Background()

	t.Run("placing replicas under a scoped quota is refused, saying why", func(t *testing.T) {
		f := newClassFixture(t, nil, scopedQuota("high", corev1.ScopeSelectorOpIn, "high"), utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10")).Obj())
		_, err := f.validator.ValidateUpdate(ctx, flink().Obj(), flink().Cluster("member1", 1).Generation(2).Obj())
		checkError(t, &wantError{Code: http.StatusForbidden, Reason: metav1.StatusReason(quotav1alpha1.ReasonPriorityClassUnknown), Messages: []string{
			"binding team-a/flink places replicas of FlinkDeployment flink whose priority class is unknown",
			"quota(s) high of the namespace are scoped by PriorityClass",
			"only from the pod templates of CronJob, DaemonSet, Deployment, Job, Pod, ReplicaSet, StatefulSet",
			"--feature-gates=ResourceQuotaEstimate=true",
		}}, err)
		if apierrors.ReasonForError(err) == ReasonQuotaExceeded {
			t.Error("refused as QuotaExceeded: Karmada's scheduler would report a full quota")
		}
	})
	t.Run("a scale-down of the same template version is admitted", func(t *testing.T) {
		f := newClassFixture(t, nil, scopedQuota("high", corev1.ScopeSelectorOpIn, "high"))
		if _, err := f.validator.ValidateUpdate(ctx, flink().Cluster("member1", 2).Obj(), flink().Cluster("member1", 1).Generation(2).Obj()); err != nil {
			t.Errorf("scale-down: %v", err)
		}
	})
	t.Run("an unscoped quota decides without the class", func(t *testing.T) {
		f := newClassFixture(t, nil, utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "1")).Obj())
		_, err := f.validator.ValidateUpdate(ctx, flink().Obj(), flink().Cluster("member1", 2).Generation(2).Obj())
		checkError(t, &wantError{Code: http.StatusForbidden, Reason: ReasonQuotaExceeded, Messages: []string{"exceeded quota: team"}}, err)
	})
	t.Run("a create placing nothing is admitted", func(t *testing.T) {
		f := newClassFixture(t, nil, scopedQuota("high", corev1.ScopeSelectorOpIn, "high"))
		if _, err := f.validator.ValidateCreate(ctx, flink().Obj()); err != nil {
			t.Errorf("create: %v", err)
		}
	})
}

func TestClassReadFailsClosed(t *testing.T) {
	f := newClassFixture(t, apierrors.NewServiceUnavailable("the apiserver is restarting"), classTemplate("web", "high"),
		scopedQuota("high", corev1.ScopeSelectorOpIn, "high"))
	web := classless("web", "1")
	_, err := f.validator.ValidateUpdate(context.Background(), web.Obj(), web.Clone().Cluster("member1", 1).Generation(2).Obj())
	checkError(t, &wantError{Code: http.StatusInternalServerError, Reason: metav1.StatusReasonInternalError,
		Messages: []string{"the priority class of binding team-a/web could not be read", "fail closed"}}, err)
}

// TestClassNotNeeded: a binding naming its class, or a namespace without a scoped quota, reads no template.
func TestClassNotNeeded(t *testing.T) {
	f := newClassFixture(t, nil, classTemplate("web", "high"), utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10")).Obj())
	ctx := context.Background()
	web := classless("web", f.templateVersion(t, "web"))
	if _, err := f.validator.ValidateUpdate(ctx, web.Obj(), web.Clone().Cluster("member1", 1).Generation(2).Obj()); err != nil {
		t.Fatal(err)
	}
	g := newClassFixture(t, nil, classTemplate("web", "high"), scopedQuota("high", corev1.ScopeSelectorOpIn, "high"))
	named := web.Clone().PriorityClass("high")
	if _, err := g.validator.ValidateUpdate(ctx, named.Obj(), named.Clone().Cluster("member1", 1).Generation(2).Obj()); err != nil {
		t.Fatal(err)
	}
	if n := f.templateReads.Load() + g.templateReads.Load(); n != 0 {
		t.Errorf("%d template reads, want none", n)
	}
}

// BenchmarkClassifyNoScopedQuota is what reading classes adds to a placement write in a namespace without a quota
// scoped by PriorityClass, the common case: one look at the informer's quotas, a read the write's governance check
// shares.
func BenchmarkClassifyNoScopedQuota(b *testing.B) {
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(utiltesting.MakeQuota(ns, "team").Hard(list("cpu", "10")).Obj()).Build()
	reader := NewQuotaReader(c, nil)
	classes := &classifier{resolver: priorityclass.NewResolver(c, 100)}
	old := classless("web", "1").Obj()
	placed := classless("web", "1").Cluster("member1", 3).Generation(2).Obj()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		quotas, err := reader.Read(ctx, ns)
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := classes.classify(ctx, quotas, placed, old); err != nil {
			b.Fatal(err)
		}
	}
}
