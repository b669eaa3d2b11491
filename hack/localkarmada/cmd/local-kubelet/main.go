// Command local-kubelet plays the only node of the local environment's host cluster: it runs the pods scheduled
// to it as local processes, or as containers under podman, from docker-archive images, and serves the host's Services to clients outside the
// cluster through an HTTP CONNECT proxy. See hack/localkarmada/kubelet for what it does and how it differs from a
// real kubelet.
//
//	local-kubelet --kubeconfig FILE --node-name NAME --root-dir DIR --image-dir DIR [--image-dir DIR ...]
//	              --proxy-address 127.0.0.1:PORT --apiserver-url https://127.0.0.1:PORT --apiserver-ca FILE
//	              [--container-runtime podman]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/karmada-quota/karmada-quota/hack/localkarmada/kubelet"
)

// listFlag collects a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	var cfg kubelet.Config
	var kubeconfig string
	var imageDirs listFlag
	flag.StringVar(&kubeconfig, "kubeconfig", "", "Kubeconfig of the host cluster's apiserver.")
	flag.StringVar(&cfg.NodeName, "node-name", "local-node", "Name of the Node to register.")
	flag.StringVar(&cfg.RootDir, "root-dir", "", "Folder for the pods' sandboxes and the files taken out of images.")
	flag.StringVar(&cfg.LogDir, "log-dir", "", "Folder for the containers' output (default <root-dir>/logs).")
	flag.Var(&imageDirs, "image-dir", "Folder of docker-archive image tarballs; repeatable.")
	flag.StringVar(&cfg.ProxyAddress, "proxy-address", "127.0.0.1:0", "Where the service proxy (HTTP CONNECT) listens; GET /healthz answers there too.")
	flag.StringVar(&cfg.APIServerURL, "apiserver-url", "", "URL of the host apiserver, as pods are told it.")
	flag.StringVar(&cfg.APIServerCA, "apiserver-ca", "", "CA of the host apiserver, for the kubeconfig given to pods.")
	flag.StringVar(&cfg.ClusterDomain, "cluster-domain", "cluster.local", "DNS suffix of Service names.")
	flag.StringVar(&cfg.Runtime, "container-runtime", "", "Start containers through this runtime ("+kubelet.RuntimePodman+", rootful, storage under <root-dir>/podman) instead of as local processes.")
	klog.InitFlags(flag.CommandLine)
	flag.Parse()
	cfg.ImageDirs = imageDirs
	if err := run(kubeconfig, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "local-kubelet:", err)
		os.Exit(1)
	}
}

func run(kubeconfig string, cfg kubelet.Config) error {
	if kubeconfig == "" {
		return fmt.Errorf("--kubeconfig is required")
	}
	restConfig, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	restConfig.QPS, restConfig.Burst = 50, 100
	restConfig.UserAgent = "local-kubelet/" + cfg.NodeName
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return err
	}
	k, err := kubelet.New(cfg, client)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return k.Run(ctx)
}
