package kindjson

import (
	"context"
	"errors"
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
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Clients are what kindjson's list-watches are made of (ListWatch): the config, the HTTP client their requests are
// sent by, and the REST mapper that names their resources. Made up front (NewClients) for a manager whose cache
// reads by kindjson (ReadWhole), they are shared with it: its cache's HTTP client, and its mapper
// (ctrl.Options.MapperProvider), so the types are discovered once.
type Clients struct {
	Config *rest.Config
	HTTP   *http.Client
	Mapper meta.RESTMapper
}

// NewClients makes the HTTP client and REST mapper for cfg, as a manager would make them itself.
func NewClients(cfg *rest.Config) (Clients, error) {
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return Clients{}, fmt.Errorf("an HTTP client for %s: %w", cfg.Host, err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return Clients{}, fmt.Errorf("a REST mapper for %s: %w", cfg.Host, err)
	}
	return Clients{Config: cfg, HTTP: httpClient, Mapper: mapper}, nil
}

// MapperProvider is ctrl.Options.MapperProvider: the mapper of c.
func (c Clients) MapperProvider(*rest.Config, *http.Client) (meta.RESTMapper, error) {
	return c.Mapper, nil
}

// ReadWhole returns opts with the informers of types reading on kindjson's serializer (Informers), on clients (whose
// mapper the manager must be given too). Those informers read a type whole, in every namespace and without
// selectors, so ReadWhole refuses options that narrow the cache, or narrow one of types, rather than let the
// narrowing be silently dropped.
func ReadWhole(opts cache.Options, clients Clients, scheme *runtime.Scheme, types ...client.Object) (cache.Options, error) {
	if opts.DefaultNamespaces != nil || opts.DefaultLabelSelector != nil || opts.DefaultFieldSelector != nil {
		return opts, errors.New("the cache is narrowed by default, and kindjson's informers read their types whole")
	}
	for obj, by := range opts.ByObject {
		for _, t := range types {
			if reflect.TypeOf(obj) == reflect.TypeOf(t) && (by.Label != nil || by.Field != nil || by.Namespaces != nil) {
				return opts, fmt.Errorf("%T is narrowed in the cache options, and kindjson's informer reads it whole", obj)
			}
		}
	}
	opts.HTTPClient = clients.HTTP
	opts.NewInformer = Informers{Clients: clients, Scheme: scheme, Types: types}.NewInformer
	return opts, nil
}

// Informers builds a controller-runtime cache's informers of some types (Types) on a client of NegotiatedSerializer
// (its NewInformer is cache.Options.NewInformer). controller-runtime builds the clients of its informers on its own
// codec factory, with no option for the serializer; what it passes NewInformer is its list-watch of the type, and
// Informers replaces it with one of its own for Types (Clients.ListWatch). It lists and watches the whole type, in
// every namespace, without selectors: a type of Types must be cached whole (no ByObject selectors or namespaces),
// and so must the cache (no DefaultNamespaces or default selectors), which ReadWhole checks. Any other type keeps
// controller-runtime's list-watch, as does a type of Types whose REST mapping cannot be read (its informer reports
// the error as it would).
type Informers struct {
	Clients
	Scheme *runtime.Scheme
	Types  []client.Object
}

// NewInformer is the cache's informer of obj: on a list-watch of NegotiatedSerializer when obj is of Types, on lw
// otherwise.
func (f Informers) NewInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	for _, t := range f.Types {
		if reflect.TypeOf(t) != reflect.TypeOf(obj) {
			continue
		}
		if own, err := f.ListWatch(f.Scheme, obj); err == nil {
			lw = own
		}
		break
	}
	return toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
}

// ListWatch lists and watches every object of obj's type (in all namespaces) on a REST client of c.Config on
// NegotiatedSerializer(scheme), its requests sent by c.HTTP, at the resource c.Mapper names: controller-runtime's
// structured list-watch (the same requests, the same parameter codec) on kindjson's serializer. The client speaks
// JSON alone, as the apiserver serves custom resources; a built-in type read on it would lose protobuf.
func (c Clients) ListWatch(scheme *runtime.Scheme, obj runtime.Object) (*toolscache.ListWatch, error) {
	gvk, err := apiutil.GVKForObject(obj, scheme)
	if err != nil {
		return nil, err
	}
	mapping, err := c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, err
	}
	rc, err := c.restClient(scheme, gvk.GroupVersion())
	if err != nil {
		return nil, err
	}
	list, err := scheme.New(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err != nil {
		return nil, err
	}
	return listWatch(rc, runtime.NewParameterCodec(scheme), mapping.Resource.Resource, list), nil
}

// restClient is a REST client of c.Config for the API group version gv on NegotiatedSerializer(scheme), its requests
// sent by c.HTTP.
func (c Clients) restClient(scheme *runtime.Scheme, gv schema.GroupVersion) (rest.Interface, error) {
	cfg := rest.CopyConfig(c.Config)
	cfg.GroupVersion = &gv
	cfg.APIPath = "/apis"
	if gv.Group == "" {
		cfg.APIPath = "/api"
	}
	cfg.ContentType = runtime.ContentTypeJSON
	cfg.AcceptContentTypes = runtime.ContentTypeJSON
	cfg.NegotiatedSerializer = NegotiatedSerializer(scheme)
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.RESTClientForConfigAndClient(cfg, c.HTTP)
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
