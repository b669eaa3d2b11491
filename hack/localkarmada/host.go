package localkarmada

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/internal/testenv/loopback"
)

const (
	// hostName is the host cluster's name in the environment.
	hostName = "host"
	// HostNode is the host cluster's only node, played by local-kubelet.
	HostNode = "host-node"
	// HostKubelet is the process name of the host's local-kubelet.
	HostKubelet = "host-local-kubelet"
	// KarmadaNamespace is where Karmada's control plane and its add-ons live in the host.
	KarmadaNamespace = "karmada-system"
	// KarmadaKubeconfigSecret holds, under the key "kubeconfig", an admin kubeconfig of the karmada-apiserver with
	// inline certificates: what Karmada's chart creates for its add-ons.
	KarmadaKubeconfigSecret = "karmada-kubeconfig"
)

// hostControllers are the kube-controller-manager controllers a host cluster needs to run karmada-quota's chart:
// Deployments and their ReplicaSets, hook Jobs and their clean-up, PodDisruptionBudgets, garbage collection,
// namespaces, service accounts with their tokens and kube-root-ca.crt (which every pod's projected token volume
// reads), aggregated ClusterRoles, and the node lifecycle controller, which lifts the not-ready taint the
// apiserver puts on a new Node once the kubelet reports it Ready.
var hostControllers = []string{
	"deployment-controller", "replicaset-controller", "job-controller", "ttl-after-finished-controller",
	"disruption-controller", "garbage-collector-controller", "namespace-controller", "serviceaccount-controller",
	"serviceaccount-token-controller", "root-ca-certificate-publisher-controller", "clusterrole-aggregation-controller",
	"node-lifecycle-controller", "pod-garbage-collector-controller",
}

// hostCluster starts the host cluster: etcd and kube-apiserver (with the ServiceAccount admission plugin, so pods
// get their token volume), kube-controller-manager, kube-scheduler and local-kubelet as its only node; then the
// karmada-system namespace with the karmada-apiserver's admin kubeconfig, and waits until the node takes pods.
func (s *setup) hostCluster(ctx context.Context) error {
	if err := s.cluster(ctx, hostName); err != nil {
		return err
	}
	host := s.env.Host
	kubelet := s.env.HostKubelet
	for _, dir := range []string{kubelet.ImageDir, kubelet.RootDir, kubelet.LogDir} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	ports, err := loopback.FreePorts(2)
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		return s.process(gctx, hostName+"-kube-controller-manager", fmt.Sprintf("https://127.0.0.1:%d/healthz", ports[0]),
			s.kubeControllerManagerArgs(host, ports[0], "--controllers", strings.Join(hostControllers, ","))...)
	})
	g.Go(func() error {
		return s.process(gctx, hostName+"-kube-scheduler", fmt.Sprintf("https://127.0.0.1:%d/healthz", ports[1]),
			s.bin["kube-scheduler"],
			"--kubeconfig", host.Kubeconfig,
			"--authentication-kubeconfig", host.Kubeconfig, "--authorization-kubeconfig", host.Kubeconfig,
			"--bind-address", "127.0.0.1", "--secure-port", fmt.Sprint(ports[1]),
			"--tls-cert-file", s.serve.Cert, "--tls-private-key-file", s.serve.Key,
		)
	})
	g.Go(func() error {
		args := []string{s.bin["local-kubelet"],
			"--kubeconfig", host.Kubeconfig,
			"--node-name", kubelet.Node,
			"--root-dir", kubelet.RootDir,
			"--log-dir", kubelet.LogDir,
			"--proxy-address", kubelet.ServiceProxy,
			"--apiserver-url", host.URL,
			"--apiserver-ca", s.pki.caFile(),
		}
		for _, dir := range kubelet.ImageDirs {
			args = append(args, "--image-dir", dir)
		}
		if kubelet.Runtime != "" {
			args = append(args, "--container-runtime", kubelet.Runtime)
		}
		return s.process(gctx, HostKubelet, "http://"+kubelet.ServiceProxy+"/healthz", args...)
	})
	g.Go(func() error { return s.karmadaKubeconfigSecret(gctx) })
	if err := g.Wait(); err != nil {
		return err
	}
	return s.hostNodeSchedulable(ctx)
}

// karmadaKubeconfigSecret creates karmada-system and the Secret holding the karmada-apiserver's admin kubeconfig
// with inline certificates, as Karmada's chart does for add-ons installed next to it.
func (s *setup) karmadaKubeconfigSecret(ctx context.Context) error {
	c, err := Client(s.env.Host.Kubeconfig)
	if err != nil {
		return err
	}
	cert, err := os.ReadFile(s.env.AdminCert.Cert)
	if err != nil {
		return err
	}
	key, err := os.ReadFile(s.env.AdminCert.Key)
	if err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[karmadaName] = &clientcmdapi.Cluster{Server: s.env.Karmada.URL, CertificateAuthorityData: s.pki.caPEM}
	cfg.AuthInfos[karmadaName+"-admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key}
	cfg.Contexts[karmadaName] = &clientcmdapi.Context{Cluster: karmadaName, AuthInfo: karmadaName + "-admin"}
	cfg.CurrentContext = karmadaName
	raw, err := clientcmd.Write(*cfg)
	if err != nil {
		return err
	}
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: KarmadaNamespace}},
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: KarmadaNamespace, Name: KarmadaKubeconfigSecret},
			Data:       map[string][]byte{"kubeconfig": raw},
		},
	} {
		if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %s %s in the host: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
		}
	}
	return nil
}

// hostNodeSchedulable waits until the host's node is Ready and has lost the not-ready taint the apiserver put on
// it at registration, so the scheduler places pods on it.
func (s *setup) hostNodeSchedulable(ctx context.Context) error {
	c, err := Client(s.env.Host.Kubeconfig)
	if err != nil {
		return err
	}
	return waitFor(ctx, "the host's node to take pods", func(ctx context.Context) error {
		var node corev1.Node
		if err := c.Get(ctx, client.ObjectKey{Name: s.env.HostKubelet.Node}, &node); err != nil {
			return err
		}
		ready := slices.ContainsFunc(node.Status.Conditions, func(c corev1.NodeCondition) bool {
			return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
		})
		if !ready {
			return errors.New("not Ready")
		}
		if len(node.Spec.Taints) > 0 {
			return fmt.Errorf("tainted %v", node.Spec.Taints)
		}
		return nil
	})
}
