package kindjson

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestNewInformerListsOnItsOwnClient: an informer of a type of Types lists and watches on kindjson's client, at the
// resource the mapper names, and holds what the apiserver sent; another type's informer, and one whose mapping
// cannot be read, use the list-watch they were given.
func TestNewInformerListsOnItsOwnClient(t *testing.T) {
	scheme := testScheme(t)
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var paths []string
	// The watch-list stream the apiserver sends an informer: the binding, then the bookmark that ends the
	// initial events; then the watch stays open.
	stream := `{"type":"ADDED","object":{"apiVersion":"work.karmada.io/v1alpha2","kind":"ResourceBinding",` +
		`"metadata":{"name":"web","namespace":"team","resourceVersion":"5"},"spec":{"replicas":2}}}` + "\n" +
		`{"type":"BOOKMARK","object":{"apiVersion":"work.karmada.io/v1alpha2","kind":"ResourceBinding",` +
		`"metadata":{"resourceVersion":"7","annotations":{"k8s.io/initial-events-end":"true"}}}}` + "\n"
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		if r.URL.Query().Get("watch") != "true" || r.URL.Query().Get("sendInitialEvents") != "true" {
			http.Error(w, "a watch list only", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(stream))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer server.Close()

	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(workv1alpha2.SchemeGroupVersion.WithKind("ResourceBinding"), meta.RESTScopeNamespace)
	f := Informers{Clients: Clients{Config: &rest.Config{Host: server.URL}, HTTP: server.Client(), Mapper: mapper}, Scheme: scheme,
		Types: []client.Object{&workv1alpha2.ResourceBinding{}, &corev1.Pod{}}}

	// What controller-runtime would pass: it has no watch list, so the informer lists, then watches.
	given := &toolscache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			return &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}, nil
		},
		WatchFuncWithContext: func(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			if opts.SendInitialEvents != nil {
				return nil, errors.New("no watch list")
			}
			return watch.NewFake(), nil
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	bindings := f.NewInformer(given, &workv1alpha2.ResourceBinding{}, 0, nil)
	configMaps := f.NewInformer(given, &corev1.ConfigMap{}, 0, nil) // not of Types
	pods := f.NewInformer(given, &corev1.Pod{}, 0, nil)             // of Types, but the mapper does not know it
	for _, i := range []toolscache.SharedIndexInformer{bindings, configMaps, pods} {
		go i.RunWithContext(ctx)
	}
	if !toolscache.WaitForCacheSync(ctx.Done(), bindings.HasSynced, configMaps.HasSynced, pods.HasSynced) {
		t.Fatal("never synced")
	}
	keys := bindings.GetStore().ListKeys()
	if len(keys) != 1 || keys[0] != "team/web" {
		t.Errorf("the binding informer holds %v, want team/web", keys)
	}
	obj, _, _ := bindings.GetStore().GetByKey("team/web")
	if rb, ok := obj.(*workv1alpha2.ResourceBinding); !ok || rb.Spec.Replicas != 2 {
		t.Errorf("the binding informer holds %#v", obj)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(paths, " "); got != "/apis/work.karmada.io/v1alpha2/resourcebindings" {
		t.Errorf("the apiserver was asked for %s: only the bindings, once, are read on kindjson's client", got)
	}
}

// TestReadWholeRefusesNarrowing: kindjson's informers read a type whole, so ReadWhole refuses cache options that
// narrow the cache or one of its types, and keeps those that narrow only other types.
func TestReadWholeRefusesNarrowing(t *testing.T) {
	byTeam := labels.SelectorFromSet(labels.Set{"team": "web"})
	bindings := &workv1alpha2.ResourceBinding{}
	for name, opts := range map[string]cache.Options{
		"default namespaces":     {DefaultNamespaces: map[string]cache.Config{"team": {}}},
		"default label selector": {DefaultLabelSelector: byTeam},
		"default field selector": {DefaultFieldSelector: fields.OneTermEqualSelector("metadata.name", "web")},
		"label selector":         {ByObject: map[client.Object]cache.ByObject{&workv1alpha2.ResourceBinding{}: {Label: byTeam}}},
		"field selector": {ByObject: map[client.Object]cache.ByObject{&workv1alpha2.ResourceBinding{}: {
			Field: fields.OneTermEqualSelector("metadata.name", "web")}}},
		"namespaces": {ByObject: map[client.Object]cache.ByObject{&workv1alpha2.ResourceBinding{}: {
			Namespaces: map[string]cache.Config{"team": {}}}}},
	} {
		if _, err := ReadWhole(opts, Clients{}, testScheme(t), bindings); err == nil {
			t.Errorf("%s: ReadWhole took options its informers would not honour", name)
		}
	}

	httpClient := &http.Client{}
	opts, err := ReadWhole(cache.Options{ByObject: map[client.Object]cache.ByObject{&corev1.Pod{}: {Label: byTeam}}},
		Clients{HTTP: httpClient}, testScheme(t), bindings)
	if err != nil {
		t.Fatalf("another type narrowed: %v", err)
	}
	if opts.NewInformer == nil || opts.HTTPClient != httpClient || len(opts.ByObject) != 1 {
		t.Errorf("ReadWhole returned %+v: want the options given, with kindjson's informers on the clients' HTTP client", opts)
	}
}
