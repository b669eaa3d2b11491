package controller

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/priorityclass"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

// templateDeployment is a Deployment on the karmada-apiserver whose pods run at class ("" for none).
func templateDeployment(name, class string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			PriorityClassName: class, Containers: []corev1.Container{{Name: "app", Image: "app"}},
		}}},
	}
}

// classlessBindings are bindings as Karmada makes them without its ResourceQuotaEstimate gate: no class, whatever
// the template names. web's template names high, api's none, flink's kind has no pod template karmada-quota reads.
func classlessBindings() []client.Object {
	return []client.Object{
		templateDeployment("web", "high"),
		templateDeployment("api", ""),
		utiltesting.MakeBinding(ns, "web").Replicas(2).Requests(list("cpu", "1")).Cluster("member1", 2).Obj(),
		utiltesting.MakeBinding(ns, "api").Replicas(1).Requests(list("cpu", "1")).Cluster("member2", 1).Obj(),
		utiltesting.MakeBinding(ns, "flink").Resource("flink.apache.org/v1beta1", "FlinkDeployment").
			Replicas(1).Requests(list("cpu", "4")).Cluster("member1", 1).Obj(),
	}
}

func TestRecountReadsPriorityClassesFromTemplates(t *testing.T) {
	cases := map[string]struct {
		quota            *quotav1alpha1.KarmadaQuota
		wantUsed         corev1.ResourceList
		wantCondition    *metav1.Condition
		wantUnclassified int
	}{
		"In [high] counts the Deployment whose template names high": {
			quota:    utiltesting.MakeQuota(ns, "q").Hard(list("cpu", "10")).Scope(corev1.ScopeSelectorOpIn, "high").Obj(),
			wantUsed: list("cpu", "2"),
			wantCondition: &metav1.Condition{Type: quotav1alpha1.ConditionPriorityClassesKnown, Status: metav1.ConditionFalse,
				Reason: quotav1alpha1.ReasonPriorityClassUnknown},
			wantUnclassified: 1,
		},
		"DoesNotExist counts the Deployment whose template names none, not the unclassified one": {
			quota:    utiltesting.MakeQuota(ns, "q").Hard(list("cpu", "10")).Scope(corev1.ScopeSelectorOpDoesNotExist).Obj(),
			wantUsed: list("cpu", "1"),
			wantCondition: &metav1.Condition{Type: quotav1alpha1.ConditionPriorityClassesKnown, Status: metav1.ConditionFalse,
				Reason: quotav1alpha1.ReasonPriorityClassUnknown},
			wantUnclassified: 1,
		},
		"an unscoped quota counts everything, reads no template and carries no such condition": {
			quota:    utiltesting.MakeQuota(ns, "q").Hard(list("cpu", "10")).Obj(),
			wantUsed: list("cpu", "7"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var templateReads int
			f := newFixture(t, interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if obj.GetObjectKind().GroupVersionKind().Kind == "Deployment" {
					templateReads++
				}
				return c.Get(ctx, key, obj, opts...)
			}}, append(classlessBindings(), tc.quota)...)
			f.reconciler.classes = priorityclass.NewResolver(f.client, 100)
			f.mustReconcile(t, "q")

			q := f.quota(t, "q")
			if diff := cmp.Diff(tc.wantUsed, q.Status.Used, statusOpts); diff != "" {
				t.Errorf("used (-want +got):\n%s", diff)
			}
			got := meta.FindStatusCondition(q.Status.Conditions, quotav1alpha1.ConditionPriorityClassesKnown)
			if tc.wantCondition == nil {
				if got != nil {
					t.Errorf("an unscoped quota carries %+v", got)
				}
				if templateReads != 0 {
					t.Errorf("an unscoped quota read %d templates", templateReads)
				}
			} else {
				if got == nil || got.Status != tc.wantCondition.Status || got.Reason != tc.wantCondition.Reason {
					t.Fatalf("condition = %+v, want %s %s", got, tc.wantCondition.Status, tc.wantCondition.Reason)
				}
				for _, want := range []string{"1 binding(s)", "flink (the priority class of FlinkDeployment team-a/flink", "ResourceQuotaEstimate=true"} {
					if !strings.Contains(got.Message, want) {
						t.Errorf("condition message %q does not say %q", got.Message, want)
					}
				}
			}
			snapshots := f.state.Snapshots()
			if len(snapshots) != 1 || snapshots[0].Unclassified != tc.wantUnclassified {
				t.Errorf("snapshots = %+v, want %d unclassified", snapshots, tc.wantUnclassified)
			}
		})
	}
}

func TestRecountAllClassified(t *testing.T) {
	q := utiltesting.MakeQuota(ns, "q").Hard(list("cpu", "10")).Scope(corev1.ScopeSelectorOpExists).Obj()
	f := newFixture(t, interceptor.Funcs{}, templateDeployment("web", "high"),
		utiltesting.MakeBinding(ns, "web").Replicas(2).Requests(list("cpu", "1")).Cluster("member1", 2).Obj(),
		// A ConfigMap has no replicas: no class needed.
		utiltesting.MakeBinding(ns, "settings").Resource("v1", "ConfigMap").Cluster("member1", 0).Obj(), q)
	f.reconciler.classes = priorityclass.NewResolver(f.client, 100)
	f.mustReconcile(t, "q")
	got := f.quota(t, "q")
	if diff := cmp.Diff(list("cpu", "2"), got.Status.Used, statusOpts); diff != "" {
		t.Errorf("used (-want +got):\n%s", diff)
	}
	if !meta.IsStatusConditionTrue(got.Status.Conditions, quotav1alpha1.ConditionPriorityClassesKnown) {
		t.Errorf("conditions = %+v, want PriorityClassesKnown True", got.Status.Conditions)
	}
}

// TestRecountWithoutTemplatesWritesNothing: a template that cannot be read (the apiserver fails) leaves the
// status as it was rather than counting bindings under no class.
func TestRecountWithoutTemplatesWritesNothing(t *testing.T) {
	q := utiltesting.MakeQuota(ns, "q").Hard(list("cpu", "10")).Scope(corev1.ScopeSelectorOpIn, "high").Obj()
	f := newFixture(t, interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if obj.GetObjectKind().GroupVersionKind().Kind == "Deployment" {
			return apierrors.NewServiceUnavailable("the apiserver is restarting")
		}
		return c.Get(ctx, key, obj, opts...)
	}}, append(classlessBindings(), q)...)
	f.reconciler.classes = priorityclass.NewResolver(f.client, 100)
	if _, err := f.reconcile(t, "q"); !apierrors.IsServiceUnavailable(err) {
		t.Errorf("Reconcile error = %v, want the read's error", err)
	}
	if writes := f.statusWrites.Load(); writes != 0 {
		t.Errorf("%d status writes, want none", writes)
	}
	if writes := f.ledgerWrites.Load(); writes != 0 {
		t.Errorf("%d ledger writes, want none", writes)
	}
}

// TestRecountSettlesUnclassifiedBindingsReservations: a binding the quota cannot classify is still observed, so
// its admission's reservation settles.
func TestRecountSettlesUnclassifiedBindingsReservations(t *testing.T) {
	flink := utiltesting.MakeBinding(ns, "flink").Resource("flink.apache.org/v1beta1", "FlinkDeployment").
		Replicas(1).Requests(list("cpu", "4")).Cluster("member1", 1).Obj()
	q := utiltesting.MakeQuota(ns, "q").Hard(list("cpu", "10")).Scope(corev1.ScopeSelectorOpIn, "high").
		Reservation(flink, 1, list("cpu", "4"), t0.Add(2*time.Minute)).Obj()
	f := newFixture(t, interceptor.Funcs{}, flink, utiltesting.MoveToLedger(q), q)
	f.reconciler.classes = priorityclass.NewResolver(f.client, 100)
	f.mustReconcile(t, "q")
	if got := f.checkLedgerOf(t, "q").Reservations; len(got) != 0 {
		t.Errorf("reservations = %+v, want the observed binding's settled", got)
	}
	if got, err := resources.Parse(f.quota(t, "q").Status.Reserved); err != nil || got["requests.cpu"] != 0 {
		t.Errorf("reserved = %v (%v), want nothing once settled", got, err)
	}
	if got, err := resources.Parse(f.quota(t, "q").Status.Used); err != nil || got["requests.cpu"] != 0 {
		t.Errorf("used = %v (%v), want nothing counted for a binding of unknown class", got, err)
	}
}

func TestUnclassifiedMessageNamesTheFirstOnes(t *testing.T) {
	var failed []priorityclass.Failure
	for _, name := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		failed = append(failed, priorityclass.Failure{Binding: name, Err: errors.New("the template is gone")})
	}
	got := unclassifiedMessage(failed)
	for _, want := range []string{"7 binding(s)", "a (the template is gone); b", "e (the template is gone), and 2 more"} {
		if !strings.Contains(got, want) {
			t.Errorf("message %q does not say %q", got, want)
		}
	}
	if strings.Contains(got, "f (") {
		t.Errorf("message %q names more than %d bindings", got, unclassifiedNamesInMessages)
	}
}
