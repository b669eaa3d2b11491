package localkarmada

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/karmada-quota/karmada-quota/internal/testenv"
	"github.com/karmada-quota/karmada-quota/internal/testenv/loopback"
)

// fieldOwner is the server-side-apply manager of everything the environment installs.
const fieldOwner = client.FieldOwner("local-karmada")

// karmadaAPIs installs Karmada's APIs into the karmada-apiserver as Karmada's installer does: the CRDs, the
// cluster.karmada.io aggregated API, the karmada-webhook with its webhook configurations, and a
// kube-controller-manager for garbage collection and namespace deletion (without it a deleted Deployment keeps its
// ResourceBinding forever).
func (s *setup) karmadaAPIs(ctx context.Context) error {
	karmada := s.env.Karmada
	cfg, err := RESTConfig(karmada.Kubeconfig)
	if err != nil {
		return err
	}
	c, err := Client(karmada.Kubeconfig)
	if err != nil {
		return err
	}
	if err := apply(ctx, c, []byte(`
apiVersion: v1
kind: Namespace
metadata: {name: karmada-system}
---
apiVersion: v1
kind: Namespace
metadata: {name: karmada-cluster}
`)); err != nil {
		return err
	}
	dirs, err := testenv.KarmadaCRDDirs()
	if err != nil {
		return err
	}
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: dirs, ErrorIfPathMissing: true}); err != nil {
		return fmt.Errorf("installing Karmada's CRDs: %w", err)
	}

	ports, err := loopback.FreePorts(5)
	if err != nil {
		return err
	}
	kcm, aggregated, webhook, webhookProbe, webhookMetrics := ports[0], ports[1], ports[2], ports[3], ports[4]
	if err := s.process(ctx, "karmada-kube-controller-manager", fmt.Sprintf("https://127.0.0.1:%d/healthz", kcm),
		s.kubeControllerManagerArgs(karmada, kcm,
			"--controllers", "namespace,garbagecollector,serviceaccount-token,clusterrole-aggregation")...); err != nil {
		return err
	}
	if err := s.process(ctx, "karmada-aggregated-apiserver", fmt.Sprintf("https://127.0.0.1:%d/readyz", aggregated),
		s.bin["karmada-aggregated-apiserver"],
		"--kubeconfig", karmada.Kubeconfig,
		"--authentication-kubeconfig", karmada.Kubeconfig, "--authorization-kubeconfig", karmada.Kubeconfig,
		"--etcd-servers", s.etcd[karmadaName],
		"--bind-address", "127.0.0.1", "--secure-port", fmt.Sprint(aggregated),
		"--tls-cert-file", s.serve.Cert, "--tls-private-key-file", s.serve.Key,
	); err != nil {
		return err
	}
	// The aggregator dials an ExternalName Service's name, and checks the certificate against
	// "<service>.<namespace>.svc".
	if err := apply(ctx, c, []byte(fmt.Sprintf(`
apiVersion: v1
kind: Service
metadata: {name: karmada-aggregated-apiserver, namespace: karmada-system}
spec: {type: ExternalName, externalName: localhost}
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1alpha1.cluster.karmada.io}
spec:
  group: cluster.karmada.io
  version: v1alpha1
  groupPriorityMinimum: 2000
  versionPriority: 10
  caBundle: %s
  service: {name: karmada-aggregated-apiserver, namespace: karmada-system, port: %d}
`, base64.StdEncoding.EncodeToString(s.pki.caPEM), aggregated))); err != nil {
		return err
	}
	if err := waitFor(ctx, "the cluster.karmada.io API to be served", func(ctx context.Context) error {
		return c.List(ctx, &clusterv1alpha1.ClusterList{})
	}); err != nil {
		return err
	}

	// karmada-webhook registers no health checks: it is ready once it serves TLS.
	if err := s.process(ctx, "karmada-webhook", "",
		s.bin["karmada-webhook"],
		"--kubeconfig", karmada.Kubeconfig,
		"--bind-address", "127.0.0.1", "--secure-port", fmt.Sprint(webhook),
		"--cert-dir", filepath.Dir(s.serve.Cert),
		"--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", webhookProbe),
		"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", webhookMetrics),
	); err != nil {
		return err
	}
	if err := waitTLS(ctx, s.env, fmt.Sprintf("127.0.0.1:%d", webhook)); err != nil {
		return err
	}
	return s.karmadaWebhookConfigurations(ctx, c, fmt.Sprintf("127.0.0.1:%d", webhook))
}

// karmadaWebhookConfigurations registers Karmada's own webhook configurations, pointed at where karmada-webhook
// listens.
func (s *setup) karmadaWebhookConfigurations(ctx context.Context, c client.Client, addr string) error {
	mutating, validating, err := testenv.KarmadaWebhookConfigurations(addr, s.pki.caPEM)
	if err != nil {
		return err
	}
	for _, conf := range []client.Object{mutating, validating} {
		if err := c.Create(ctx, conf); err != nil {
			return fmt.Errorf("registering Karmada's webhooks: %w", err)
		}
	}
	return nil
}

// rateLimiterMaxDelay caps how long karmada-controller-manager and karmada-scheduler wait before retrying an
// object whose sync keeps failing: its back-off doubles from 5ms per failure, up to 1000s by default. Neither
// requeues anything when the karmada-apiserver or a member comes back (karmada-io/karmada#3959), so after an outage
// of a minute, a Work or a binding that failed throughout waits minutes more. Here it waits at most 10s, so that a
// test sees Karmada converge once a fault is healed; docs/faults.md gives the figures with the default.
const rateLimiterMaxDelay = "--rate-limiter-max-delay=10s"

// Taint-based cluster failover (Karmada v1.18): the Failover feature gate (beta, off by default) registers the
// NoExecute taint manager and the ClusterTaintPolicy controller; --enable-no-execute-taint-eviction lets the taint
// manager act. A binding on a Cluster tainted NoExecute that its policy does not tolerate then leaves that cluster
// for a graceful eviction task (spec.gracefulEvictionTasks, purge mode Gracefully unless the policy's
// spec.failover.cluster says Directly): the scheduler places its replicas elsewhere, and the graceful eviction
// controller (feature gate GracefulEviction, on by default) removes the task, and with it the replicas left on the
// tainted cluster, once the new placement is healthy, after --graceful-eviction-timeout (10m, the default, kept),
// or when an admin sets the task's suppressDeletion to false.
//
// It changes nothing else: in v1.18 Karmada's cluster controller taints a not-ready or unreachable Cluster with
// NoSchedule only (it keeps its placements); a NoExecute taint comes from an admin or a ClusterTaintPolicy, and
// this environment has none. So a member restarted by a fault test keeps its bindings, as with failover off.
const (
	failoverFeatureGate    = "--feature-gates=Failover=true"
	noExecuteTaintEviction = "--enable-no-execute-taint-eviction=true"
)

// EstimatorArgs are the edits (RestartWith) that run karmada-scheduler and karmada-controller-manager as the chart
// tells admins to for karmada-quota's scheduler estimator (schedulerEstimator in its values), on when on:
// karmada-scheduler asks the estimators at the Services the quota controller keeps, one per member, named with the
// chart's default prefix, which point at the webhook's Service in the host cluster; it reaches them, like the
// karmada-apiserver, through the kubelet's service proxy (its HTTPS_PROXY; gRPC honours it). The
// ResourceQuotaEstimate gate (alpha) has karmada-controller-manager write a binding's namespace and priority class
// into spec.replicaRequirements, which karmada-scheduler sends estimators: without them the estimator cannot tell
// which quotas apply.
func EstimatorArgs(on bool) (scheduler, controllerManager func(args []string) []string) {
	enable := WithFlag("enable-scheduler-estimator", fmt.Sprint(on))
	prefix := WithFlag("scheduler-estimator-service-prefix", "karmada-quota-estimator")
	return func(args []string) []string { return prefix(enable(args)) }, WithFeatureGate("ResourceQuotaEstimate", on)
}

// karmadaControllers starts karmada-controller-manager and karmada-scheduler as Karmada deploys them, with
// Karmada's defaults for what karmada-quota's scheduler estimator needs: karmada-scheduler without estimators and
// karmada-controller-manager without ResourceQuotaEstimate, as most installations run. A test of the estimator
// turns both on (EstimatorArgs) and off again.
//
// karmada-controller-manager runs with taint-based cluster failover on, as a production Karmada with failover does
// (failoverFeatureGate, noExecuteTaintEviction), so that the replicas Karmada keeps running through a graceful
// eviction can be tested.
func (s *setup) karmadaControllers(ctx context.Context) error {
	kubeconfig := s.env.Karmada.Kubeconfig
	ports, err := loopback.FreePorts(4)
	if err != nil {
		return err
	}
	if err := s.process(ctx, "karmada-controller-manager", fmt.Sprintf("http://127.0.0.1:%d/healthz", ports[0]),
		s.bin["karmada-controller-manager"],
		"--kubeconfig", kubeconfig,
		"--cluster-status-update-frequency", "10s",
		rateLimiterMaxDelay,
		failoverFeatureGate, noExecuteTaintEviction,
		"--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", ports[0]),
		"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", ports[1]),
	); err != nil {
		return err
	}
	return s.processEnv(ctx, "karmada-scheduler", fmt.Sprintf("http://127.0.0.1:%d/healthz", ports[2]), s.clusters[karmadaName].env,
		s.bin["karmada-scheduler"],
		"--kubeconfig", kubeconfig,
		"--enable-scheduler-estimator=false",
		rateLimiterMaxDelay,
		"--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", ports[2]),
		"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", ports[3]),
	)
}

// kubeControllerManagerArgs are a kube-controller-manager's arguments. It elects a leader, as a kubeadm control
// plane's does (and so does every kube-scheduler here): one that cannot renew its lease for its renew deadline (10s),
// as while its apiserver is away, exits, and the supervisor starts it afresh, as a kubelet restarts its static pod.
// One that rode a member apiserver's minute-long outage out in the same process once stopped giving new namespaces
// their default ServiceAccount, and that member could not create their pods.
func (s *setup) kubeControllerManagerArgs(server APIServer, port int, extra ...string) []string {
	return append([]string{s.bin["kube-controller-manager"],
		"--kubeconfig", server.Kubeconfig,
		"--authentication-kubeconfig", server.Kubeconfig, "--authorization-kubeconfig", server.Kubeconfig,
		"--bind-address", "127.0.0.1", "--secure-port", fmt.Sprint(port),
		"--tls-cert-file", s.serve.Cert, "--tls-private-key-file", s.serve.Key,
		"--cluster-name", server.Name,
		"--service-account-private-key-file", s.saKey, "--root-ca-file", s.pki.caFile(),
		"--use-service-account-credentials=false",
	}, extra...)
}

// apply server-side applies every object of a multi-document YAML manifest.
func apply(ctx context.Context, c client.Client, manifest []byte) error {
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifest), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := decoder.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if len(obj.Object) == 0 {
			continue
		}
		if err := c.Patch(ctx, obj, client.Apply, fieldOwner, client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
}

// applyFiles applies every YAML file of the given folders.
func applyFiles(ctx context.Context, c client.Client, dirs ...string) error {
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		if err != nil {
			return err
		}
		if len(files) == 0 {
			return fmt.Errorf("no manifests in %s", dir)
		}
		for _, f := range files {
			raw, err := os.ReadFile(f)
			if err != nil {
				return err
			}
			if err := apply(ctx, c, raw); err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
		}
	}
	return nil
}

// waitFor polls check until it succeeds, for at most two minutes.
func waitFor(ctx context.Context, what string, check func(context.Context) error) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		last = check(ctx)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s: %w (last: %v)", what, err, last)
	}
	return nil
}

// waitTLS waits until addr serves TLS with the environment's certificate (see loopback.ServesTLS).
func waitTLS(ctx context.Context, env *Environment, addr string) error {
	ca, err := os.ReadFile(env.CA)
	if err != nil {
		return err
	}
	return waitFor(ctx, addr+" to serve TLS", func(context.Context) error {
		if !loopback.ServesTLS(addr, ca) {
			return errors.New("no TLS handshake yet")
		}
		return nil
	})
}
