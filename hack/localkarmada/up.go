package localkarmada

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/karmada-quota/karmada-quota/internal/testenv"
	"github.com/karmada-quota/karmada-quota/internal/testenv/loopback"
)

// Karmada's control plane answers as a cluster named "karmada"; members are member1, member2, ...
const karmadaName = "karmada"

// binaries are the programs of the topology, by the name they are built under.
var binaries = []string{
	"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok",
	"karmada-aggregated-apiserver", "karmada-controller-manager", "karmada-scheduler", "karmada-webhook",
	"local-kubelet",
}

// setup is what Up carries from one step to the next.
type setup struct {
	env   *Environment
	opts  Options
	bin   map[string]string
	pki   *pki
	serve keyPair
	// front-proxy client of the karmada-apiserver, for the aggregated API.
	frontProxy keyPair
	saPub      string
	saKey      string
	// etcd is each cluster's etcd client URL, by cluster name.
	etcd map[string]string
	// clusters are the etcd and apiserver of each cluster, by cluster name, decided before any starts.
	clusters map[string]*clusterPlan
}

// clusterPlan is where one cluster's etcd and kube-apiserver listen.
type clusterPlan struct {
	server               APIServer
	etcdClient, etcdPeer int
	secure               int
	// env is added to the apiserver's environment.
	env []string
}

// Up starts the topology in opts.Dir and returns once Karmada has every member joined and Ready and karmada-quota
// serves. When opts.Dir already holds a running environment, Up returns it untouched; a partly running one is
// stopped and started again.
func Up(ctx context.Context, opts Options) (*Environment, error) {
	if opts.Members <= 0 {
		opts.Members = 2
	}
	if !opts.Tied && len(opts.SupervisorCommand) == 0 {
		return nil, errors.New("an untied environment needs a SupervisorCommand to restart what exits")
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	opts.Dir = dir
	if previous, err := Load(dir); err == nil {
		previous.tied, previous.progress = opts.Tied, opts.Progress
		if previous.Running(ctx) {
			previous.logf("already running (started %s)", previous.Started)
			return previous, nil
		}
		previous.logf("a previous environment in %s is partly down: stopping what is left of it", dir)
		if err := previous.Down(); err != nil {
			return nil, fmt.Errorf("stopping the previous environment: %w", err)
		}
	}

	s := &setup{opts: opts, bin: map[string]string{}, etcd: map[string]string{}}
	for _, name := range binaries {
		if s.bin[name], err = lookPath(opts.ToolPath, name); err != nil {
			return nil, err
		}
	}
	for _, sub := range []string{"logs", "kubeconfigs", "etcd"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			return nil, err
		}
	}
	s.env = &Environment{
		Dir: dir, Health: map[string]string{}, Started: time.Now().Format(time.RFC3339),
		tied: opts.Tied, progress: opts.Progress,
	}
	env := s.env
	start := time.Now()
	if err := s.certificates(); err != nil {
		return nil, err
	}
	if err := s.run(ctx); err != nil {
		// Whatever started is stopped, so a failed start leaves nothing behind; the logs stay to tell why.
		if downErr := env.Down(); downErr != nil {
			err = fmt.Errorf("%w (and stopping what had started: %v)", err, downErr)
		}
		return nil, err
	}
	if opts.Tied {
		env.superviseHere()
	} else if err := env.superviseInBackground(opts.SupervisorCommand); err != nil {
		if downErr := env.Down(); downErr != nil {
			err = fmt.Errorf("%w (and stopping what had started: %v)", err, downErr)
		}
		return nil, fmt.Errorf("starting the supervisor: %w", err)
	}
	env.logf("ready in %s", time.Since(start).Round(100*time.Millisecond))
	return env, nil
}

func (s *setup) run(ctx context.Context) error {
	env := s.env
	step := func(what string, f func(context.Context) error) error {
		t := time.Now()
		if err := f(ctx); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		env.logf("  %-52s %6s", what, time.Since(t).Round(10*time.Millisecond))
		return env.save()
	}
	names := []string{karmadaName}
	for i := 1; i <= s.opts.Members; i++ {
		names = append(names, "member"+strconv.Itoa(i))
	}
	if err := s.plan(append(slices.Clone(names), hostName)); err != nil {
		return err
	}
	// The host cluster comes up on its own, alongside everything else: the karmada-apiserver only needs the
	// address of its service proxy, decided above, and nothing else needs the host until the end.
	hostCtx, stopHost := context.WithCancel(ctx)
	defer stopHost()
	host, hostCtx := errgroup.WithContext(hostCtx)
	host.Go(func() error {
		return step("host cluster: etcd, kube-apiserver, controllers, local-kubelet", func(context.Context) error {
			return s.hostCluster(hostCtx)
		})
	})
	var members *errgroup.Group
	// fail stops what still starts in the background and waits for it, so Up's clean-up finds every process.
	fail := func(err error) error {
		stopHost()
		_ = host.Wait()
		if members != nil {
			_ = members.Wait()
		}
		return err
	}
	if err := step("etcd and kube-apiserver for "+strings.Join(names, ", "), func(ctx context.Context) error {
		return s.apiservers(ctx, names)
	}); err != nil {
		return fail(err)
	}
	// The member clusters come up while Karmada installs its APIs: they only meet at the join.
	members, memberCtx := errgroup.WithContext(ctx)
	members.Go(func() error {
		return step("member controllers, schedulers and KWOK nodes", func(context.Context) error {
			return s.memberComponents(memberCtx, env.Members)
		})
	})
	if err := step("Karmada CRDs, aggregated API and karmada-webhook", s.karmadaAPIs); err != nil {
		return fail(err)
	}
	if err := step("karmada-controller-manager and karmada-scheduler", s.karmadaControllers); err != nil {
		return fail(err)
	}
	// The members join while karmada-quota installs into the host: neither needs the other.
	joined, joinCtx := errgroup.WithContext(ctx)
	joined.Go(func() error {
		if err := members.Wait(); err != nil {
			return err
		}
		return step("join "+strings.Join(names[1:], ", ")+" (Push) and wait until Ready", func(context.Context) error {
			return s.join(joinCtx)
		})
	})
	if err := host.Wait(); err != nil {
		_ = joined.Wait()
		return fail(err)
	}
	if err := step("karmada-quota: helm install into the host cluster", s.installQuota); err != nil {
		_ = joined.Wait()
		return fail(err)
	}
	if err := joined.Wait(); err != nil {
		return fail(err)
	}
	return nil
}

func (s *setup) certificates() error {
	var err error
	if s.pki, err = newPKI(filepath.Join(s.env.Dir, "pki")); err != nil {
		return err
	}
	if s.serve, err = s.pki.serving(); err != nil {
		return err
	}
	if s.env.AdminCert, err = s.pki.client("admin", "kubernetes-admin", "system:masters"); err != nil {
		return err
	}
	// The aggregator proves the user it forwards with this certificate; the apiserver accepts only this name.
	if s.frontProxy, err = s.pki.client("front-proxy-client", "front-proxy-client"); err != nil {
		return err
	}
	if s.saPub, s.saKey, err = s.pki.serviceAccountKeys(); err != nil {
		return err
	}
	s.env.CA = s.pki.caFile()
	return nil
}

// process records a process, starts it and waits until it is ready.
func (s *setup) process(ctx context.Context, name, health string, args ...string) error {
	return s.processEnv(ctx, name, health, nil, args...)
}

// processEnv is process with env added to the process's environment.
func (s *setup) processEnv(ctx context.Context, name, health string, env []string, args ...string) error {
	p := &Process{Name: name, Args: args, Env: env, Log: filepath.Join(s.env.Dir, "logs", name+".log")}
	if err := p.start(s.opts.Tied); err != nil {
		return err
	}
	s.env.record(p, health)
	return s.env.waitReady(ctx, p)
}

// plan decides the ports of every cluster's etcd and kube-apiserver and of the host's service proxy, and writes
// an admin kubeconfig for each cluster, before anything starts: the karmada-apiserver is told where the service
// proxy will listen, and the host cluster starts on its own, alongside the others.
func (s *setup) plan(names []string) error {
	ports, err := loopback.FreePorts(3*len(names) + 1)
	if err != nil {
		return err
	}
	s.clusters = map[string]*clusterPlan{}
	for i, name := range names {
		p := &clusterPlan{etcdClient: ports[3*i], etcdPeer: ports[3*i+1], secure: ports[3*i+2]}
		p.server = APIServer{
			Name: name, URL: fmt.Sprintf("https://127.0.0.1:%d", p.secure),
			Kubeconfig: filepath.Join(s.env.Dir, "kubeconfigs", name+".config"),
		}
		if err := s.kubeconfig(p.server.Kubeconfig, name, p.server.URL, s.env.AdminCert); err != nil {
			return err
		}
		s.etcd[name] = fmt.Sprintf("http://127.0.0.1:%d", p.etcdClient)
		s.clusters[name] = p
	}
	s.env.Karmada = s.clusters[karmadaName].server
	s.env.Members = nil
	for _, name := range names {
		if name != karmadaName && name != hostName {
			s.env.Members = append(s.env.Members, s.clusters[name].server)
		}
	}
	s.env.Host = s.clusters[hostName].server
	proxy := fmt.Sprintf("127.0.0.1:%d", ports[len(ports)-1])
	s.env.HostKubelet = KubeletInfo{
		Node:         HostNode,
		ImageDir:     filepath.Join(s.env.Dir, "images"),
		ImageDirs:    []string{filepath.Join(s.env.Dir, "images"), filepath.Join(testenv.RepoRoot(), "bin", "images")},
		RootDir:      filepath.Join(s.env.Dir, "host-kubelet"),
		LogDir:       filepath.Join(s.env.Dir, "logs", "host-pods"),
		ServiceProxy: proxy,
		Runtime:      s.opts.ContainerRuntime,
	}
	// The karmada-apiserver reaches the host's Services as in production, where it resolves "<svc>.<ns>.svc"
	// through the host's DNS: here through the kubelet's service proxy. Go never proxies loopback or localhost, so
	// its calls to etcd, to the aggregated apiserver and to webhooks on 127.0.0.1 are untouched. NO_PROXY is set to
	// override one the caller's environment may hold.
	s.clusters[karmadaName].env = []string{"HTTPS_PROXY=http://" + proxy, "NO_PROXY=127.0.0.1,localhost"}
	return nil
}

// apiservers starts the etcd and kube-apiserver of the named clusters, all at once.
func (s *setup) apiservers(ctx context.Context, names []string) error {
	g, gctx := errgroup.WithContext(ctx)
	for _, name := range names {
		g.Go(func() error { return s.cluster(gctx, name) })
	}
	return g.Wait()
}

// cluster starts one cluster's etcd, then its kube-apiserver, and waits until the apiserver is ready.
func (s *setup) cluster(ctx context.Context, name string) error {
	p := s.clusters[name]
	etcd := s.etcd[name]
	if err := s.process(ctx, name+"-etcd", etcd+"/health", s.bin["etcd"],
		"--name", name, "--data-dir", filepath.Join(s.env.Dir, "etcd", name),
		"--listen-client-urls", etcd, "--advertise-client-urls", etcd,
		"--listen-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", p.etcdPeer),
		"--initial-advertise-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", p.etcdPeer),
		"--initial-cluster", fmt.Sprintf("%s=http://127.0.0.1:%d", name, p.etcdPeer),
		// A throwaway environment: durability buys nothing and fsync costs every write.
		"--unsafe-no-fsync", "--log-level", "warn",
	); err != nil {
		return err
	}
	return s.processEnv(ctx, name+"-apiserver", p.server.URL+"/readyz", p.env, s.apiserverArgs(name, etcd, p.secure)...)
}

func (s *setup) apiserverArgs(name, etcd string, port int) []string {
	args := []string{s.bin["kube-apiserver"],
		"--etcd-servers", etcd,
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", strconv.Itoa(port),
		"--tls-cert-file", s.serve.Cert, "--tls-private-key-file", s.serve.Key,
		"--client-ca-file", s.pki.caFile(),
		"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file", s.saPub, "--service-account-signing-key-file", s.saKey,
		"--service-cluster-ip-range", "10.96.0.0/12",
		"--authorization-mode", "Node,RBAC",
		"--allow-privileged",
		// The aggregation layer: the karmada-apiserver serves cluster.karmada.io through it.
		"--proxy-client-cert-file", s.frontProxy.Cert, "--proxy-client-key-file", s.frontProxy.Key,
		"--requestheader-client-ca-file", s.pki.caFile(),
		"--requestheader-allowed-names", "front-proxy-client",
		"--requestheader-extra-headers-prefix", "X-Remote-Extra-",
		"--requestheader-group-headers", "X-Remote-Group",
		"--requestheader-username-headers", "X-Remote-User",
	}
	if name == karmadaName {
		// As Karmada's own installation runs it: the karmada-apiserver hosts no pods and no PVCs.
		args = append(args, "--disable-admission-plugins", "StorageObjectInUseProtection,ServiceAccount")
	}
	return args
}

// kubeconfig writes a kubeconfig for the server with the given client certificate.
func (s *setup) kubeconfig(path, cluster, server string, user keyPair) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[cluster] = &clientcmdapi.Cluster{Server: server, CertificateAuthority: s.pki.caFile()}
	cfg.AuthInfos[cluster] = &clientcmdapi.AuthInfo{ClientCertificate: user.Cert, ClientKey: user.Key}
	cfg.Contexts[cluster] = &clientcmdapi.Context{Cluster: cluster, AuthInfo: cluster}
	cfg.CurrentContext = cluster
	return clientcmd.WriteToFile(*cfg, path)
}
