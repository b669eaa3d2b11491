package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	workv1alpha1 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"github.com/karmada-io/karmada/pkg/resourceinterpreter/default/native"
	"github.com/karmada-io/karmada/pkg/util/names"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/karmada-quota/karmada-quota/pkg/interpreter"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

// listThenWatch is a client that serves no watch-list stream (watchlist.DoesClientNotSupportWatchListSemantics).
type listThenWatch struct{}

func (listThenWatch) IsWatchListSemanticsUnSupported() bool { return true }

// deploymentWork is the Work Karmada renders for binding rb on cluster: its Deployment at replicas.
func deploymentWork(t *testing.T, rb *workv1alpha2.ResourceBinding, cluster string, replicas int32) *workv1alpha1.Work {
	t.Helper()
	d := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: rb.Namespace, Name: rb.Spec.Resource.Name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "app", Image: "app", Resources: corev1.ResourceRequirements{Requests: list("cpu", "1")},
			}}}},
		},
	}
	raw, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return &workv1alpha1.Work{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: names.GenerateExecutionSpaceName(cluster),
			Name:      names.GenerateWorkName("Deployment", rb.Spec.Resource.Name, rb.Namespace),
			UID:       types.UID("work-" + cluster),
			Annotations: map[string]string{
				workv1alpha2.ResourceBindingNamespaceAnnotationKey: rb.Namespace,
				workv1alpha2.ResourceBindingNameAnnotationKey:      rb.Name,
			},
		},
		Spec: workv1alpha1.WorkSpec{Workload: workv1alpha1.WorkloadTemplate{Manifests: []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: raw}}}}},
	}
}

// TestShrinkWaitsForTheWorkAsItIs is the race measured after an etcd restart: a binding grows on member1 to 3
// replicas, Karmada updates its Work to ask 3 (admitted without a reservation: the binding covers it), and the
// binding shrinks back to 1 while the controller's view of the Works still holds the Work asking 1. The member is
// still asked to run 3 until Karmada updates the Work again, so the recount must charge 3, not hand 2 back.
func TestShrinkWaitsForTheWorkAsItIs(t *testing.T) {
	grown := utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")).Cluster("member1", 3).Generation(2).Obj()
	// Stored in this order: the Work that asks 1, then the binding shrinking.
	shrunk := utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")).Cluster("member1", 1).Generation(3).ResourceVersion("20").Obj()
	stale := deploymentWork(t, shrunk, "member1", 1)
	stale.ResourceVersion = "10"
	q := utiltesting.MakeQuota(ns, "compute").Hard(list("cpu", "10")).Used(list("cpu", "3")).Obj()

	for _, tc := range []struct {
		name string
		// shrinkNoted is whether the binding's update reached the controller's shrink tracker; handled, whether its
		// event handler has run for the update's generation.
		shrinkNoted, handled bool
		wantUsed             string
	}{
		{name: "the shrink noted: the Work is read as it is", shrinkNoted: true, handled: true, wantUsed: "3"},
		{name: "the update stored but not handled yet: the Work is read as it is", wantUsed: "3"},
		// The control: the view is stale indeed, so for a binding whose handled update noted no shrink the recount
		// trusts it.
		{name: "control: handled without a shrink, the stale view counts", handled: true, wantUsed: "1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, interceptor.Funcs{}, q.DeepCopy(), shrunk.DeepCopy(), stale.DeepCopy())
			// The fake client serves no watch-list stream: the view lists, then watches.
			lw := toolscache.ToListWatcherWithWatchListSemantics(workListWatch(f.client), listThenWatch{})
			view, err := newWorkView(lw, interpreter.NewStarted(native.NewDefaultInterpreter()), nil, func(string) {}, func(types.UID) {})
			if err != nil {
				t.Fatal(err)
			}
			// The view lists the Work asking 1, then stops watching: it lags behind what follows.
			ctx, stop := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { view.informer.RunWithContext(ctx); close(done) }()
			deadline := time.Now().Add(10 * time.Second)
			for !view.synced() {
				if time.Now().After(deadline) {
					t.Fatal("the Work view never synced")
				}
				time.Sleep(10 * time.Millisecond)
			}
			stop()
			<-done
			f.reconciler.works = view
			f.reconciler.shrinks = newShrinks()

			// Karmada updates the Work to the grown binding's 3 replicas; the view does not see it.
			var work workv1alpha1.Work
			if err := f.client.Get(context.Background(), client.ObjectKeyFromObject(stale), &work); err != nil {
				t.Fatal(err)
			}
			asking3 := deploymentWork(t, shrunk, "member1", 3)
			work.Spec = asking3.Spec
			if err := f.client.Update(context.Background(), &work); err != nil {
				t.Fatal(err)
			}
			current := f.binding(t, "web")
			if tc.shrinkNoted {
				f.reconciler.shrinks.observe(current, usageOf(t, grown), usageOf(t, current))
			}
			if tc.handled {
				f.reconciler.shrinks.handled(current)
			}

			f.mustReconcile(t, "compute")
			used := f.quota(t, "compute").Status.Used[corev1.ResourceCPU]
			if want := resource.MustParse(tc.wantUsed); used.Cmp(want) != 0 {
				t.Errorf("status.used cpu = %s, want %s", used.String(), tc.wantUsed)
			}
			if tc.shrinkNoted {
				// Until the view holds the Work as read, the next recount reads it again.
				pending := f.reconciler.shrinks.of([]workv1alpha2.ResourceBinding{*shrunk})
				if len(pending) != 1 || pending[0].rv != work.ResourceVersion {
					t.Errorf("after the read, the shrink waits for %v, want the view to reach the Work's resourceVersion %s", pending, work.ResourceVersion)
				}
			}
		})
	}
}

// TestShrinksNoteOnlyClustersKeptSmaller checks which updates are noted: less charged on a cluster the binding
// still places on; neither growth nor a cluster left (a move, charged nothing more at once).
func TestShrinksNoteOnlyClustersKeptSmaller(t *testing.T) {
	base := utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1"))
	old := base.Clone().Cluster("member1", 3).Cluster("member2", 2).Obj()
	for _, tc := range []struct {
		name    string
		updated *workv1alpha2.ResourceBinding
		want    map[string]string
	}{
		{"fewer replicas on member1", base.Clone().Cluster("member1", 1).Cluster("member2", 2).ResourceVersion("7").Obj(), map[string]string{"member1": "7"}},
		{"member2 left, member1 grew", base.Clone().Cluster("member1", 5).ResourceVersion("8").Obj(), map[string]string{}},
		{"smaller requests everywhere", utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "500m")).Cluster("member1", 3).Cluster("member2", 2).ResourceVersion("9").Obj(),
			map[string]string{"member1": "9", "member2": "9"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newShrinks()
			s.observe(tc.updated, usageOf(t, old), usageOf(t, tc.updated))
			s.handled(tc.updated)
			got := map[string]string{}
			for _, sh := range s.of([]workv1alpha2.ResourceBinding{*tc.updated}) {
				got[sh.cluster] = sh.rv
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("noted %v, want %v", got, tc.want)
			}
		})
	}
}

// TestShrinksOfAnUnhandledGeneration: a binding listed at a generation its event handler has not run for yet
// counts as shrunk on every cluster it targets (placed on, or evicted from gracefully), at its resourceVersion,
// whatever was noted before; once handled, only what was noted.
func TestShrinksOfAnUnhandledGeneration(t *testing.T) {
	v1 := utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")).Cluster("member1", 3).Cluster("member2", 2).Generation(1).ResourceVersion("5").Obj()
	v2 := utiltesting.MakeBinding(ns, "web").Requests(list("cpu", "1")).Cluster("member1", 1).Cluster("member2", 2).Generation(2).ResourceVersion("7").Obj()
	v2.Spec.GracefulEvictionTasks = []workv1alpha2.GracefulEvictionTask{{FromCluster: "member3"}, {FromCluster: "member1"}}
	noted := func(s *shrinks, rb *workv1alpha2.ResourceBinding) string {
		got := map[string]string{}
		for _, sh := range s.of([]workv1alpha2.ResourceBinding{*rb}) {
			if _, twice := got[sh.cluster]; twice {
				t.Errorf("cluster %s listed twice", sh.cluster)
			}
			got[sh.cluster] = sh.rv
		}
		return fmt.Sprint(got)
	}

	s := newShrinks()
	if got, want := noted(s, v1), "map[member1:5 member2:5]"; got != want {
		t.Errorf("never handled: %s, want %s", got, want)
	}
	s.handled(v1)
	if got, want := noted(s, v1), "map[]"; got != want {
		t.Errorf("handled, nothing shrank: %s, want %s", got, want)
	}
	if got, want := noted(s, v2), "map[member1:7 member2:7 member3:7]"; got != want {
		t.Errorf("a newer generation not handled yet: %s, want %s", got, want)
	}
	s.observe(v2, usageOf(t, v1), usageOf(t, v2))
	s.handled(v2)
	if got, want := noted(s, v2), "map[member1:7]"; got != want {
		t.Errorf("handled, member1 shrank: %s, want %s", got, want)
	}
	s.forget(v2.UID)
	if got, want := noted(s, v2), "map[member1:7 member2:7 member3:7]"; got != want {
		t.Errorf("forgotten: %s, want %s", got, want)
	}
}

func usageOf(t *testing.T, rb *workv1alpha2.ResourceBinding) usage.Usage {
	t.Helper()
	u, err := usage.Of(rb)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// workListWatch lists and watches every Work with c, a fake client (the view reads them with kindjson's client).
func workListWatch(c client.WithWatch) *toolscache.ListWatch {
	return &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			list := &workv1alpha1.WorkList{}
			return list, c.List(ctx, list, &client.ListOptions{Raw: &opts})
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return c.Watch(ctx, &workv1alpha1.WorkList{}, &client.ListOptions{Raw: &opts})
		},
	}
}
