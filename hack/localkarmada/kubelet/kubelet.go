package kubelet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
)

// Config describes one local kubelet.
type Config struct {
	// NodeName is the Node the kubelet registers and runs the pods of.
	NodeName string
	// RootDir holds the pods' sandboxes (volumes, working folders) and the files taken out of images.
	RootDir string
	// LogDir holds the containers' output, one file per run (see ContainerLogPath).
	LogDir string
	// ImageDirs are the folders of docker-archive image tarballs, the kubelet's "registry".
	ImageDirs []string
	// ProxyAddress is where the service proxy listens (host:port); it also answers GET /healthz.
	ProxyAddress string
	// APIServerURL and APIServerCA describe the host apiserver to pods: KUBERNETES_SERVICE_HOST/PORT and the
	// kubeconfig handed to pods with a service account token.
	APIServerURL string
	APIServerCA  string
	// ClusterDomain is the DNS suffix of Service names; cluster.local when empty.
	ClusterDomain string
	// Capacity is what the node offers; DefaultCapacity when empty.
	Capacity corev1.ResourceList
	// Runtime, when set (RuntimePodman), starts containers through that container runtime, its storage under
	// <root dir>/podman, instead of as local processes.
	Runtime string
}

// Kubelet plays the kubelet of one node whose pods are local processes, and the service network in front of
// them. See doc.go for what differs from a real kubelet.
type Kubelet struct {
	cfg        Config
	client     kubernetes.Interface
	images     *imageStore
	tokens     *tokenManager
	recorder   record.EventRecorder
	capacity   corev1.ResourceList
	serviceEnv map[string]string
	nodeUID    types.UID
	// runtime starts the containers when set; nil runs them as processes.
	runtime *podman

	secrets    corelisters.SecretLister
	configMaps corelisters.ConfigMapLister
	ready      atomic.Bool

	mu      sync.Mutex
	workers map[types.UID]*podWorker
	ctx     context.Context
}

// New checks the configuration and prepares a kubelet; Run starts it.
func New(cfg Config, client kubernetes.Interface) (*Kubelet, error) {
	if cfg.NodeName == "" || cfg.RootDir == "" || cfg.ProxyAddress == "" || cfg.APIServerURL == "" {
		return nil, errors.New("node name, root folder, proxy address and apiserver URL are required")
	}
	if cfg.LogDir == "" {
		cfg.LogDir = cfg.RootDir + "/logs"
	}
	if cfg.ClusterDomain == "" {
		cfg.ClusterDomain = "cluster.local"
	}
	if len(cfg.Capacity) == 0 {
		cfg.Capacity = DefaultCapacity
	}
	u, err := url.Parse(cfg.APIServerURL)
	if err != nil {
		return nil, fmt.Errorf("apiserver URL: %w", err)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		return nil, fmt.Errorf("apiserver URL %s has no port", cfg.APIServerURL)
	}
	var runtime *podman
	switch cfg.Runtime {
	case "":
	case RuntimePodman:
		if runtime, err = newPodman(runtimeDir(cfg.RootDir)); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("unknown container runtime %q: local-kubelet runs containers as processes or under %q", cfg.Runtime, RuntimePodman)
	}
	return &Kubelet{
		cfg: cfg, client: client, runtime: runtime,
		images:     newImageStore(cfg.ImageDirs, cfg.RootDir+"/images"),
		tokens:     newTokenManager(client),
		capacity:   cfg.Capacity,
		serviceEnv: serviceEnv(u.Hostname(), port),
		workers:    map[types.UID]*podWorker{},
	}, nil
}

// Run registers the node, serves the service proxy and runs the node's pods until ctx ends; then it stops every
// pod's processes and returns.
func (k *Kubelet) Run(ctx context.Context) error {
	k.ctx = ctx
	if k.runtime != nil {
		// Before any pod starts: containers of a kubelet that died hold their pods' ports.
		if err := k.runtime.removeContainers(ctx); err != nil {
			return err
		}
	}
	listener, err := net.Listen("tcp", k.cfg.ProxyAddress)
	if err != nil {
		return fmt.Errorf("service proxy: %w", err)
	}
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: k.client.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	k.recorder = broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "kubelet", Host: k.cfg.NodeName})

	shared := informers.NewSharedInformerFactory(k.client, 0)
	nodePods := informers.NewSharedInformerFactoryWithOptions(k.client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = "spec.nodeName=" + k.cfg.NodeName
	}))
	podInformer := nodePods.Core().V1().Pods()
	secretInformer := shared.Core().V1().Secrets()
	configMapInformer := shared.Core().V1().ConfigMaps()
	serviceInformer := shared.Core().V1().Services()
	k.secrets, k.configMaps = secretInformer.Lister(), configMapInformer.Lister()

	proxy := &serviceProxy{
		services: serviceInformer.Lister(), pods: podInformer.Lister(), clusterDomain: k.cfg.ClusterDomain,
		ready: k.ready.Load, next: map[string]int{},
	}
	server := &http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := server.Serve(listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.ErrorS(err, "Service proxy stopped")
		}
	}()
	defer server.Close()

	if err := k.registerNode(ctx); err != nil {
		return err
	}
	go k.heartbeat(ctx)

	if _, err := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { k.podChanged(obj) },
		UpdateFunc: func(_, obj any) { k.podChanged(obj) },
		DeleteFunc: k.podDeleted,
	}); err != nil {
		return err
	}
	sourceChanged := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { k.sourceChanged(obj) },
		UpdateFunc: func(_, obj any) { k.sourceChanged(obj) },
		DeleteFunc: k.sourceChanged,
	}
	for _, inf := range []cache.SharedIndexInformer{secretInformer.Informer(), configMapInformer.Informer()} {
		if _, err := inf.AddEventHandler(sourceChanged); err != nil {
			return err
		}
	}
	_ = serviceInformer.Informer()
	shared.Start(ctx.Done())
	nodePods.Start(ctx.Done())
	for typ, ok := range shared.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("the %v informer never synced", typ)
		}
	}
	for typ, ok := range nodePods.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("the %v informer never synced", typ)
		}
	}
	k.removeOrphanedSandboxes(podInformer.Lister())
	k.ready.Store(true)
	klog.InfoS("local-kubelet ready", "node", k.cfg.NodeName, "proxy", listener.Addr().String())

	<-ctx.Done()
	k.mu.Lock()
	workers := make([]*podWorker, 0, len(k.workers))
	for _, w := range k.workers {
		workers = append(workers, w)
	}
	k.mu.Unlock()
	for _, w := range workers {
		<-w.done
	}
	shared.Shutdown()
	nodePods.Shutdown()
	return nil
}

func (k *Kubelet) podChanged(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Spec.NodeName != k.cfg.NodeName {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.ctx.Err() != nil {
		return
	}
	if w, ok := k.workers[pod.UID]; ok {
		w.setPod(pod)
		return
	}
	w := newPodWorker(k, pod)
	k.workers[pod.UID] = w
	go w.run(k.ctx)
}

func (k *Kubelet) podDeleted(obj any) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	k.mu.Lock()
	w := k.workers[pod.UID]
	k.mu.Unlock()
	if w != nil {
		w.setGone()
	}
}

// sourceChanged wakes the pods of the namespace of a Secret or ConfigMap that changed, so their volumes follow
// within a moment.
func (k *Kubelet) sourceChanged(obj any) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	o, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, w := range k.workers {
		w.mu.Lock()
		same := w.pod.Namespace == o.GetNamespace()
		w.mu.Unlock()
		if same {
			w.notify()
		}
	}
}

// removeOrphanedSandboxes removes the sandboxes of pods deleted while no kubelet ran: their processes died with
// the kubelet that ran them.
func (k *Kubelet) removeOrphanedSandboxes(pods corelisters.PodLister) {
	list, err := pods.List(labels.Everything())
	if err != nil {
		return
	}
	known := map[string]bool{}
	for _, p := range list {
		known[string(p.UID)] = true
	}
	entries, _ := os.ReadDir(filepath.Join(k.cfg.RootDir, "pods"))
	for _, e := range entries {
		if !known[e.Name()] {
			_ = os.RemoveAll(filepath.Join(k.cfg.RootDir, "pods", e.Name()))
		}
	}
}

// forget drops a finished worker.
func (k *Kubelet) forget(uid types.UID) {
	k.mu.Lock()
	delete(k.workers, uid)
	k.mu.Unlock()
}

// sources reads what volumes and environments are built from: the informers' caches, then the API for an object
// the cache has not seen yet (created a moment before the pod).
func (k *Kubelet) sources(ctx context.Context) volumeSources {
	return kubeletSources{k: k, api: apiSources{ctx: ctx, client: k.client, tokens: k.tokens}}
}

type kubeletSources struct {
	k   *Kubelet
	api apiSources
}

func (s kubeletSources) secret(namespace, name string) (*corev1.Secret, error) {
	obj, err := s.k.secrets.Secrets(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return s.api.secret(namespace, name)
	}
	return obj, err
}

func (s kubeletSources) configMap(namespace, name string) (*corev1.ConfigMap, error) {
	obj, err := s.k.configMaps.ConfigMaps(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return s.api.configMap(namespace, name)
	}
	return obj, err
}

func (s kubeletSources) serviceAccountToken(pod *corev1.Pod, source *corev1.ServiceAccountTokenProjection) ([]byte, error) {
	return s.api.serviceAccountToken(pod, source)
}
