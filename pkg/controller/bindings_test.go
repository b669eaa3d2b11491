package controller

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

// clientBindings reads the bindings a unit test's fake client stores as the controller's informer keeps them:
// each trimmed (TrimBinding), then given back (CachedBinding.Binding).
type clientBindings struct {
	client client.Reader
}

func (c clientBindings) InNamespace(namespace string) ([]workv1alpha2.ResourceBinding, error) {
	var list workv1alpha2.ResourceBindingList
	if err := c.client.List(context.Background(), &list, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	out := make([]workv1alpha2.ResourceBinding, len(list.Items))
	for i := range list.Items {
		cached, err := TrimBinding(&list.Items[i])
		if err != nil {
			return nil, err
		}
		cached.(*CachedBinding).fill(&out[i])
	}
	return out, nil
}

func (c clientBindings) Meta(key types.NamespacedName) (metav1.Object, error) {
	var rb workv1alpha2.ResourceBinding
	if err := c.client.Get(context.Background(), key, &rb); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	cached, err := TrimBinding(&rb)
	if err != nil {
		return nil, err
	}
	return cached.(*CachedBinding), nil
}

// cached is rb as the controller's informer keeps it, and hands it to event handlers.
func cached(t testing.TB, rb *workv1alpha2.ResourceBinding) *CachedBinding {
	t.Helper()
	obj, err := TrimBinding(rb)
	if err != nil {
		t.Fatal(err)
	}
	return obj.(*CachedBinding)
}

// cachedBindings reads a namespace's bindings, and one by name, from an informer's store of CachedBindings, each
// as TrimBinding kept it; another namespace's stay out, and what is not cached is nil.
func TestCachedBindingsReadTheInformersStore(t *testing.T) {
	informer := toolscache.NewSharedIndexInformer(&toolscache.ListWatch{}, &workv1alpha2.ResourceBinding{}, 0,
		toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
	reader, err := newCachedBindings(informer)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]*workv1alpha2.ResourceBinding{}
	for _, rb := range []*workv1alpha2.ResourceBinding{
		utiltesting.MakeBinding(ns, "web").Replicas(2).Requests(list("cpu", "500m")).Cluster("member1", 2).Obj(),
		utiltesting.MakeBinding(ns, "api").Replicas(1).Requests(list("cpu", "1")).Scheduled(false, workv1alpha2.BindingReasonQuotaExceeded).Obj(),
		utiltesting.MakeBinding("elsewhere", "web").Replicas(1).Requests(list("cpu", "1")).Obj(),
	} {
		cached, err := TrimBinding(rb.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		if err := informer.GetIndexer().Add(cached); err != nil {
			t.Fatal(err)
		}
		if rb.Namespace == ns {
			want[rb.Name] = cached.(*CachedBinding).Binding()
		}
	}

	got, err := reader.InNamespace(ns)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("listed %d bindings of %s, want %d", len(got), ns, len(want))
	}
	for i := range got {
		if diff := cmp.Diff(want[got[i].Name], &got[i]); diff != "" {
			t.Errorf("binding %s (-want +got):\n%s", got[i].Name, diff)
		}
	}
	one, err := reader.Meta(types.NamespacedName{Namespace: ns, Name: "api"})
	if err != nil || one == nil || one.GetNamespace() != ns || one.GetName() != "api" || one.GetUID() != want["api"].UID ||
		one.GetGeneration() != want["api"].Generation {
		t.Errorf("Meta(%s/api) = %v, %v", ns, one, err)
	}
	if missing, err := reader.Meta(types.NamespacedName{Namespace: ns, Name: "db"}); missing != nil || err != nil {
		t.Errorf("Meta of a binding not cached = %v, %v; want nil, nil", missing, err)
	}

	// A store holding anything else is an error, not a panic.
	if err := informer.GetIndexer().Add(utiltesting.MakeBinding(ns, "untrimmed").Obj()); err != nil {
		t.Fatal(err)
	}
	if _, err := reader.InNamespace(ns); err == nil {
		t.Error("listing a store that holds an untrimmed binding succeeded")
	}
}

func TestCachedBindingsNeedANamespaceIndex(t *testing.T) {
	informer := toolscache.NewSharedIndexInformer(&toolscache.ListWatch{}, &workv1alpha2.ResourceBinding{}, 0, toolscache.Indexers{})
	if _, err := newCachedBindings(informer); err == nil {
		t.Error("a store without a namespace index was taken")
	}
	if _, err := newCachedBindings(struct{}{}); err == nil {
		t.Error("an informer without a store was taken")
	}
}
