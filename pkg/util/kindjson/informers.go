package kindjson

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Informers builds a controller-runtime cache's informers of some types (Types) on a client of NegotiatedSerializer
// (its NewInformer is cache.Options.NewInformer). controller-runtime builds the clients of its informers on its own
// codec factory, with no option for the serializer; what it passes NewInformer is its list-watch of the type, and
// Informers replaces it with one of its own for Types. It lists and watches the whole type, in every namespace,
// without selectors: a type of Types must be cached whole (no ByObject selectors or namespaces), and so must the
// cache (no DefaultNamespaces or default selectors). Any other type keeps controller-runtime's list-watch, as does a
// type of Types whose REST mapping cannot be read (its informer reports the error as it would).
type Informers struct {
	Config     *rest.Config
	HTTPClient *http.Client
	Scheme     *runtime.Scheme
	Mapper     meta.RESTMapper
	Types      []client.Object
}

// NewInformer is the cache's informer of obj: on a list-watch of NegotiatedSerializer when obj is of Types, on lw
// otherwise.
func (f Informers) NewInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	for _, t := range f.Types {
		if reflect.TypeOf(t) != reflect.TypeOf(obj) {
			continue
		}
		if own, err := ListWatchOf(f.Config, f.HTTPClient, f.Scheme, f.Mapper, obj); err == nil {
			lw = own
		}
		break
	}
	return toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
}

// ListWatchOf lists and watches every object of obj's type (in all namespaces) on a REST client of cfg on
// NegotiatedSerializer(scheme), its requests sent by httpClient, at the resource mapper names: controller-runtime's
// structured list-watch (the same requests, the same parameter codec) on kindjson's serializer. The client speaks
// JSON alone, as the apiserver serves custom resources; a built-in type read on it would lose protobuf.
func ListWatchOf(cfg *rest.Config, httpClient *http.Client, scheme *runtime.Scheme, mapper meta.RESTMapper, obj runtime.Object) (*toolscache.ListWatch, error) {
	gvk, err := apiutil.GVKForObject(obj, scheme)
	if err != nil {
		return nil, err
	}
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, err
	}
	c, err := restClient(cfg, httpClient, scheme, gvk.GroupVersion())
	if err != nil {
		return nil, err
	}
	list, err := scheme.New(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err != nil {
		return nil, err
	}
	return listWatch(c, runtime.NewParameterCodec(scheme), mapping.Resource.Resource, list), nil
}

// restClient is a REST client of cfg for the API group version gv on NegotiatedSerializer(scheme), its requests sent
// by httpClient.
func restClient(cfg *rest.Config, httpClient *http.Client, scheme *runtime.Scheme, gv schema.GroupVersion) (rest.Interface, error) {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &gv
	c.APIPath = "/apis"
	if gv.Group == "" {
		c.APIPath = "/api"
	}
	c.ContentType = runtime.ContentTypeJSON
	c.AcceptContentTypes = runtime.ContentTypeJSON
	c.NegotiatedSerializer = NegotiatedSerializer(scheme)
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.RESTClientForConfigAndClient(c, httpClient)
	if err != nil {
		return nil, fmt.Errorf("a client of %s: %w", gv, err)
	}
	return rc, nil
}

// listWatch lists and watches every object of resource (in all namespaces) with c; a list is decoded into a copy of
// list.
func listWatch(c rest.Interface, params runtime.ParameterCodec, resource string, list runtime.Object) *toolscache.ListWatch {
	return &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			res := list.DeepCopyObject()
			if err := c.Get().Resource(resource).VersionedParams(&opts, params).Do(ctx).Into(res); err != nil {
				return nil, err
			}
			return res, nil
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.Watch = true
			opts.AllowWatchBookmarks = true
			return c.Get().Resource(resource).VersionedParams(&opts, params).Watch(ctx)
		},
	}
}
