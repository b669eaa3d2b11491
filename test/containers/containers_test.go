// Package containers runs every image `make images` builds as a container under a real OCI runtime (podman with
// runc, started by local-kubelet as `make up CONTAINER_RUNTIME=podman` starts the host's pods), with exactly the
// security context, mounts, arguments and environment the charts render, against a real apiserver: what an admin's
// first install would meet, before any admin meets it. `make test-containers` installs podman and runc from
// Debian's packages when they are missing and runs it after `make images`.
package containers

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/karmada-quota/karmada-quota/hack/localkarmada"
	"github.com/karmada-quota/karmada-quota/internal/testenv"
	"github.com/karmada-quota/karmada-quota/operator/pkg/install"
	"github.com/karmada-quota/karmada-quota/operator/pkg/render"
)

const (
	release          = "karmada-quota"
	releaseNamespace = "karmada-quota-system"
	// operatorNamespace is where the operator's chart is installed.
	operatorNamespace = "karmada-quota-operator"
)

// TestImagesRunAsTheChartsRunThem starts one apiserver that plays both planes (the karmada-apiserver and the host
// cluster whose service account tokens and RBAC the pods run with) and local-kubelet as its node, with podman as
// its container runtime, then each pod as the charts render it, one at a time: the install's prepare phase, which must install
// karmada-quota into the karmada-apiserver and write the components' kubeconfig Secrets from the admin's; the
// controller, running with its Secret, which must create the webhook's serving certificate Secret through its host
// credentials; the webhook, serving TLS from that Secret; the operator. Each runs under its security context, which
// is then read back from the kernel; a workload must pass its readiness and liveness probes as a kubelet runs them
// and exit cleanly on SIGTERM when deleted, a Job must succeed.
func TestImagesRunAsTheChartsRunThem(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("the containers run under rootful podman: run as root (CI does)")
	}
	imagesDir := os.Getenv("IMAGES_DIR")
	if imagesDir == "" {
		imagesDir = filepath.Join(testenv.RepoRoot(), "bin", "images")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	registry, tag := imageNames(t, imagesDir)

	env, err := testenv.NewEnvironment()
	if err != nil {
		t.Fatal(err)
	}
	// Pods are admitted as a cluster admits them: envtest turns the ServiceAccount admission plugin off (its test
	// namespaces have no default ServiceAccount), and it is what gives a pod its service account token volume.
	env.ControlPlane.GetAPIServer().Configure().Disable("disable-admission-plugins")
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	})
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	n := startNode(t, cfg, imagesDir)
	admin, err := env.AddUser(envtest.User{Name: "karmada-admin", Groups: []string{"system:masters"}}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The karmada-apiserver's admin kubeconfig, which an admin gives the chart (karmada.kubeconfigSecret): its
	// certificates inline, as nothing else of this machine is in the container.
	adminKubeconfig, err := admin.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}

	in, err := render.Render(release, releaseNamespace, map[string]any{"image": map[string]any{"registry": registry, "tag": tag}})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{releaseNamespace, in.Config.Karmada.Namespace, operatorNamespace} {
		createNamespace(ctx, t, c, ns, cfg.CAData)
	}
	// The host cluster's identities and rights, as Helm installs them (the install phases' with their hooks); the
	// workloads themselves run here.
	applyKinds(ctx, t, c, in.Host, "ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding")
	applyKinds(ctx, t, c, in.Hooks, "ConfigMap", "ServiceAccount", "Role", "RoleBinding")
	deployments := objectsOf[appsv1.Deployment](t, in.Host, "Deployment")
	jobs := objectsOf[batchv1.Job](t, in.Hooks, "Job")

	// start runs a pod from a workload's template, named after the workload, with its one container.
	start := func(t *testing.T, namespace, workload string, template *corev1.PodTemplateSpec, image string) *corev1.Pod {
		t.Helper()
		if len(template.Spec.Containers) != 1 {
			t.Fatalf("%s has %d containers; this test runs one", workload, len(template.Spec.Containers))
		}
		if got := template.Spec.Containers[0].Image; got != image {
			t.Fatalf("%s runs image %s, want %s (the archive make images wrote)", workload, got, image)
		}
		return n.run(ctx, t, namespace, workload+"-0", template)
	}
	// run runs a Deployment's pod until the kubelet reports it Ready, then checks its liveness endpoint and the
	// security context its process runs with.
	run := func(t *testing.T, d *appsv1.Deployment, image string) *corev1.Pod {
		t.Helper()
		pod := n.ready(ctx, t, start(t, d.Namespace, d.Name, &d.Spec.Template, image))
		ctr := &pod.Spec.Containers[0]
		probe(ctx, t, n, pod, ctr.LivenessProbe, "liveness")
		checkProcess(t, pid(t, pod), &pod.Spec, ctr)
		return pod
	}
	stop := func(t *testing.T, pod *corev1.Pod) {
		t.Helper()
		if end := n.stop(ctx, t, pod); end.ExitCode != 0 {
			t.Errorf("%s on SIGTERM: exit code %d (%s); its output:\n%s", pod.Name, end.ExitCode, end.Reason, n.logTail(pod, 30))
		}
	}
	controller, webhook, prepare := deployments[release+"-controller"], deployments[release+"-webhook"], jobs[release+"-prepare"]
	if controller == nil || webhook == nil || prepare == nil {
		t.Fatalf("the chart rendered no controller or webhook Deployment, or no prepare Job: %v, %v", keys(deployments), keys(jobs))
	}

	// The install's first phase, as Helm's pre-install hook runs it, with the admin kubeconfig the admin provides
	// (karmada.kubeconfigSecret): it installs karmada-quota into the karmada-apiserver and writes each component's
	// kubeconfig Secret, of its own service account there, which the components then run with.
	t.Run("install job prepare", func(t *testing.T) {
		admin := secretOfVolume(t, prepare.Spec.Template.Spec.Volumes, "karmada-kubeconfig")
		var key string
		for _, v := range prepare.Spec.Template.Spec.Volumes {
			if v.Name == "karmada-kubeconfig" && v.Secret != nil && len(v.Secret.Items) == 1 {
				key = v.Secret.Items[0].Key
			}
		}
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: releaseNamespace, Name: admin}, Data: map[string][]byte{key: adminKubeconfig}}
		if err := c.Create(ctx, secret); err != nil {
			t.Fatal(err)
		}
		tokens, stopTokens := context.WithCancel(ctx)
		defer stopTokens()
		go n.issueTokenSecrets(tokens, in.Config.Karmada.Namespace, cfg.CAData)
		pod := start(t, prepare.Namespace, prepare.Name, &prepare.Spec.Template, fmt.Sprintf("%s/karmada-quota-operator:%s", registry, tag))
		deadline := time.Duration(ptr.Deref(prepare.Spec.ActiveDeadlineSeconds, 600)) * time.Second
		n.waitFor(ctx, t, pod, deadline, "the prepare phase did not succeed", func(p *corev1.Pod) (bool, error) {
			switch p.Status.Phase {
			case corev1.PodSucceeded:
				return true, nil
			case corev1.PodFailed:
				return false, errors.New("the prepare phase failed")
			}
			return false, nil
		})
	})

	t.Run("controller", func(t *testing.T) {
		pod := run(t, controller, fmt.Sprintf("%s/quota-controller:%s", registry, tag))
		// Its host credentials at work: the serving certificate the webhook mounts, made and stored by it.
		servingSecret := secretOfVolume(t, webhook.Spec.Template.Spec.Volumes, "serving-cert")
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			err := c.Get(ctx, client.ObjectKey{Namespace: releaseNamespace, Name: servingSecret}, &corev1.Secret{})
			return err == nil, client.IgnoreNotFound(err)
		})
		if err != nil {
			t.Fatalf("the controller never created the serving Secret %s: %v; its output:\n%s", servingSecret, err, n.logTail(pod, 30))
		}
		stop(t, pod)
	})

	t.Run("webhook", func(t *testing.T) {
		pod := run(t, webhook, fmt.Sprintf("%s/quota-webhook:%s", registry, tag))
		var secret corev1.Secret
		if err := c.Get(ctx, client.ObjectKey{Namespace: releaseNamespace, Name: secretOfVolume(t, webhook.Spec.Template.Spec.Volumes, "serving-cert")}, &secret); err != nil {
			t.Fatal(err)
		}
		servesTLS(t, n, pod, fmt.Sprintf("127.0.0.1:%d", localPort(t, pod, "webhook")), secret.Data["ca.crt"], secret.Data["tls.crt"])
		stop(t, pod)
	})

	t.Run("operator", func(t *testing.T) {
		objects := renderOperator(t, map[string]any{"image": map[string]any{
			"repository": registry + "/karmada-quota-operator", "tag": tag}})
		applyKinds(ctx, t, c, objects, "CustomResourceDefinition", "ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding")
		operators := objectsOf[appsv1.Deployment](t, objects, "Deployment")
		if len(operators) != 1 {
			t.Fatalf("the operator's chart rendered %d Deployments, want 1", len(operators))
		}
		for _, d := range operators {
			stop(t, run(t, d, fmt.Sprintf("%s/karmada-quota-operator:%s", registry, tag)))
		}
	})
}

// imageNames reads the registry and tag of the images from the webhook's archive, as the charts must name them.
func imageNames(t *testing.T, dir string) (registry, tag string) {
	t.Helper()
	manifest, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(filepath.Join(dir, "quota-webhook.tar")) })
	if err != nil {
		t.Fatalf("reading the webhook's image archive (run `make images`): %v", err)
	}
	for _, d := range manifest {
		for _, repoTag := range d.RepoTags {
			repo, tag, ok := strings.Cut(repoTag, ":")
			if ok && strings.HasSuffix(repo, "/quota-webhook") {
				return strings.TrimSuffix(repo, "/quota-webhook"), tag
			}
		}
	}
	t.Fatal("the webhook's image archive has no <registry>/quota-webhook:<tag> tag")
	return "", ""
}

// createNamespace creates a namespace with the CA ConfigMap kube-controller-manager publishes into each.
func createNamespace(ctx context.Context, t *testing.T, c client.Client, name string, ca []byte) {
	t.Helper()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "kube-root-ca.crt"}, Data: map[string]string{"ca.crt": string(ca)}}
	if err := c.Create(ctx, cm); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// applyKinds creates the rendered objects of the given kinds.
func applyKinds(ctx context.Context, t *testing.T, c client.Client, objects []*unstructured.Unstructured, kinds ...string) {
	t.Helper()
	for _, obj := range objects {
		if !slices.Contains(kinds, obj.GetKind()) {
			continue
		}
		if err := c.Create(ctx, obj.DeepCopy()); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating %s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
	}
}

// objectsOf decodes the rendered objects of one kind, by name.
func objectsOf[T any, PT interface {
	*T
	GetName() string
}](t *testing.T, objects []*unstructured.Unstructured, kind string) map[string]PT {
	t.Helper()
	out := map[string]PT{}
	for _, obj := range objects {
		if obj.GetKind() != kind {
			continue
		}
		typed := PT(new(T))
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, typed); err != nil {
			t.Fatal(err)
		}
		out[typed.GetName()] = typed
	}
	return out
}

// secretOfVolume is the Secret a pod's volume mounts.
func secretOfVolume(t *testing.T, volumes []corev1.Volume, volume string) string {
	t.Helper()
	for _, v := range volumes {
		if v.Name == volume && v.Secret != nil {
			return v.Secret.SecretName
		}
	}
	t.Fatalf("the pod mounts no Secret volume %s", volume)
	return ""
}

// renderOperator renders the operator's chart into its release namespace.
func renderOperator(t *testing.T, values map[string]any) []*unstructured.Unstructured {
	t.Helper()
	ch, err := localkarmada.OperatorChart()
	if err != nil {
		t.Fatal(err)
	}
	renderValues, err := chartutil.ToRenderValues(ch, values,
		chartutil.ReleaseOptions{Name: "karmada-quota-operator", Namespace: operatorNamespace, IsInstall: true, Revision: 1},
		chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	files, err := engine.Render(ch, renderValues)
	if err != nil {
		t.Fatal(err)
	}
	var manifests []string
	for name, content := range files {
		if strings.HasSuffix(name, ".yaml") {
			manifests = append(manifests, content)
		}
	}
	objects, err := install.ParseObjects([]byte(strings.Join(manifests, "\n---\n")))
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range objects {
		if obj.GetNamespace() == "" && obj.GetKind() != "CustomResourceDefinition" && !strings.HasPrefix(obj.GetKind(), "Cluster") {
			obj.SetNamespace(operatorNamespace)
		}
	}
	return objects
}

// probe runs a probe as the kubelet does until it succeeds, failing after a minute. Only httpGet is used by the
// charts.
func probe(ctx context.Context, t *testing.T, n *node, pod *corev1.Pod, p *corev1.Probe, kind string) {
	t.Helper()
	c := &pod.Spec.Containers[0]
	if p == nil {
		t.Fatalf("container %s has no %s probe", c.Name, kind)
	}
	if p.HTTPGet == nil {
		t.Fatalf("container %s: the %s probe is not httpGet, which this test runs", c.Name, kind)
	}
	scheme := strings.ToLower(string(p.HTTPGet.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	url := fmt.Sprintf("%s://127.0.0.1:%d%s", scheme, localPort(t, pod, p.HTTPGet.Port.String()), p.HTTPGet.Path)
	// The kubelet does not verify a probe's certificate.
	httpClient := &http.Client{Timeout: time.Duration(max(p.TimeoutSeconds, 1)) * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // as the kubelet probes
	var last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		resp, err := httpClient.Get(url)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		_ = resp.Body.Close()
		last = resp.Status
		// The kubelet's success: 200 to 399.
		return resp.StatusCode >= 200 && resp.StatusCode < 400, nil
	})
	if err != nil {
		t.Fatalf("%s never passed its %s probe (%s: last %s): %v; its output:\n%s", c.Name, kind, url, last, err, n.logTail(pod, 40))
	}
}

// servesTLS checks that addr serves the certificate of the mounted Secret, verified by the Secret's CA under the
// Service name the certificate was made for (the karmada-apiserver dials the webhook by that name).
func servesTLS(t *testing.T, n *node, pod *corev1.Pod, addr string, ca, certPEM []byte) {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		t.Fatal("the serving Secret holds no CA certificate")
	}
	block, _ := pem.Decode(certPEM)
	if block == nil {
		t.Fatal("the serving Secret holds no certificate")
	}
	mounted, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if len(mounted.DNSNames) == 0 {
		t.Fatal("the serving certificate names no DNS name")
	}
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, ServerName: mounted.DNSNames[0], MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatalf("the webhook serves no TLS verified by its Secret's CA on %s: %v; its output:\n%s", addr, err, n.logTail(pod, 30))
	}
	defer conn.Close()
	if served := conn.ConnectionState().PeerCertificates; !served[0].Equal(mounted) {
		t.Fatal("the webhook serves another certificate than the mounted Secret's")
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
