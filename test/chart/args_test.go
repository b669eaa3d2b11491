package chart

import (
	"flag"
	"net"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	controllerapp "github.com/karmada-quota/karmada-quota/cmd/quota-controller/app"
	webhookapp "github.com/karmada-quota/karmada-quota/cmd/quota-webhook/app"
	operatorapp "github.com/karmada-quota/karmada-quota/operator/cmd/karmada-quota-operator/app"
	"github.com/karmada-quota/karmada-quota/operator/pkg/install"
)

// binaryOptions are the options of a component's binary, as its command builds them.
type binaryOptions interface {
	AddFlags(fs *pflag.FlagSet)
	Validate() error
}

// parseAsTheBinary parses args with the binary's own flags, klog's included, and validates them as the binary does
// before it starts: a flag the binary does not know, a value it refuses, a bound it enforces (a reservation TTL
// above 60s, lease timings that fit together) fails here rather than in a crash-looping pod.
func parseAsTheBinary(opts binaryOptions, args []string) error {
	fs := pflag.NewFlagSet("binary", pflag.ContinueOnError)
	opts.AddFlags(fs)
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	fs.AddGoFlagSet(klogFlags)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return &positionalError{fs.Args()}
	}
	return opts.Validate()
}

type positionalError struct{ args []string }

func (e *positionalError) Error() string {
	return "the binary takes no positional arguments, got " + strings.Join(e.args, " ")
}

// Each container's arguments are accepted by its binary.
func TestBinariesAcceptTheirArguments(t *testing.T) {
	forEachRendering(t, checkBinariesAcceptTheirArguments)
}

func checkBinariesAcceptTheirArguments(t reporter, r *rendering) {
	for _, w := range r.workloads(t) {
		c := w.template.Spec.Containers[0]
		if len(w.template.Spec.Containers) != 1 {
			t.Errorf("%s runs %d containers; the checks here know one", w, len(w.template.Spec.Containers))
		}
		var err error
		switch w.component {
		case "webhook":
			opts := webhookapp.NewOptions()
			if err = parseAsTheBinary(opts, c.Args); err == nil {
				shutdownFitsTheGracePeriod(t, w, opts.ShutdownDelay+opts.GracefulShutdownTimeout)
			}
		case "controller":
			opts := controllerapp.NewOptions()
			if err = parseAsTheBinary(opts, c.Args); err == nil {
				controllerReadsItsSecrets(t, r, w, opts)
				controllerMayLead(t, r, w, opts)
				shutdownFitsTheGracePeriod(t, w, opts.GracefulShutdownTimeout)
			}
		case "installer":
			err = parseOperatorInstall(c.Args)
		default:
			t.Errorf("%s: unknown component %q", w, w.component)
			continue
		}
		if err != nil {
			t.Errorf("%s: %s refuses its arguments %q: %v", w, c.Command, c.Args, err)
		}
		if want := "/usr/local/bin/" + imageName(c.Image); !slices.Equal(c.Command, []string{want}) {
			t.Errorf("%s: command %v, want [%s], where the image puts its binary", w, c.Command, want)
		}
	}
}

// imageName is the last path component of an image reference, without tag or digest.
func imageName(image string) string {
	image, _, _ = strings.Cut(image, "@")
	name := path.Base(image)
	name, _, _ = strings.Cut(name, ":")
	return name
}

// controllerMayLead: with its own identity, the controller may hold the leader-election Lease where its flags put
// it, in the karmada-apiserver (the Role is generated for karmada-system and moved with karmada.namespace).
func controllerMayLead(t reporter, r *rendering, w workload, opts *controllerapp.Options) {
	t.Helper()
	if !opts.LeaderElect || len(r.Config.Identities) == 0 {
		return
	}
	identity := ""
	for _, id := range r.Config.Identities {
		if strings.HasSuffix(id.ServiceAccount, "controller") {
			identity = id.ServiceAccount
		}
	}
	ns := opts.LeaderElectionNamespace
	for _, obj := range ofKind(r.Karmada, "RoleBinding") {
		rb := typed[rbacv1.RoleBinding](t, obj)
		if rb.Namespace != ns || !slices.ContainsFunc(rb.Subjects, func(s rbacv1.Subject) bool { return s.Kind == "ServiceAccount" && s.Name == identity }) {
			continue
		}
		for _, obj := range ofKind(r.Karmada, "Role") {
			if obj.GetNamespace() != ns || obj.GetName() != rb.RoleRef.Name {
				continue
			}
			for _, rule := range typed[rbacv1.Role](t, obj).Rules {
				if slices.Contains(rule.APIGroups, "coordination.k8s.io") && slices.Contains(rule.Resources, "leases") &&
					sets.New(rule.Verbs...).HasAll("get", "create", "update") {
					return
				}
			}
		}
	}
	t.Errorf("%s elects its leader with a Lease in %s, where its identity %s may not get, create and update Leases", w, ns, identity)
}

// shutdownFitsTheGracePeriod: the kubelet kills a container terminationGracePeriodSeconds after asking it to stop.
// A binary still draining then is cut off: the webhook drops binding writes in flight, the controller dies before it
// releases its lease and the standby waits out the lease duration.
func shutdownFitsTheGracePeriod(t reporter, w workload, shutdown time.Duration) {
	t.Helper()
	grace := 30 * time.Second // Kubernetes' default.
	if g := w.template.Spec.TerminationGracePeriodSeconds; g != nil {
		grace = time.Duration(*g) * time.Second
	}
	if grace <= shutdown {
		t.Errorf("%s: terminationGracePeriodSeconds %s leaves no margin after the binary's shutdown (%s)", w, grace, shutdown)
	}
}

// parseOperatorInstall parses the hook Jobs' arguments with the operator's command: subcommand, phase, flags,
// required flags.
func parseOperatorInstall(args []string) error {
	root := operatorapp.NewCommand()
	cmd, rest, err := root.Find(args)
	if err != nil {
		return err
	}
	if err := cmd.ParseFlags(rest); err != nil {
		return err
	}
	if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil {
		return err
	}
	return cmd.ValidateRequiredFlags()
}

// controllerReadsItsSecrets: the controller's host Role lets it do what it must with the Secrets its flags name.
func controllerReadsItsSecrets(t reporter, r *rendering, w workload, opts *controllerapp.Options) {
	t.Helper()
	certs := opts.Certs
	if certs.Namespace != w.namespace {
		t.Errorf("%s manages certificates in %q, not its own namespace %q", w, certs.Namespace, w.namespace)
	}
	need := []string{certs.ServingSecret}
	// Self-managed, it renews the certificates; with cert-manager it only reads the CA.
	verbs := []string{"get"}
	if r.Config.Certificates.Mode == install.CertificatesSelfManaged {
		verbs = append(verbs, "update")
		need = append(need, certs.CASecret)
		if certs.CASecret != r.Config.Certificates.CASecret || certs.ServingSecret != r.Config.Certificates.ServingSecret {
			t.Errorf("%s renews %s and %s, the install phases issue %s and %s", w, certs.ServingSecret, certs.CASecret,
				r.Config.Certificates.ServingSecret, r.Config.Certificates.CASecret)
		}
	}
	granted := sets.New[string]()
	for _, obj := range ofKind(r.Host, "RoleBinding") {
		rb := typed[rbacv1.RoleBinding](t, obj)
		if !slices.ContainsFunc(rb.Subjects, func(s rbacv1.Subject) bool { return s.Name == w.template.Spec.ServiceAccountName }) {
			continue
		}
		for _, obj := range ofKind(r.Host, "Role") {
			if obj.GetName() != rb.RoleRef.Name {
				continue
			}
			for _, rule := range typed[rbacv1.Role](t, obj).Rules {
				if slices.Contains(rule.Resources, "secrets") && sets.New(rule.Verbs...).HasAll(verbs...) {
					granted.Insert(rule.ResourceNames...)
				}
			}
		}
	}
	for _, secret := range need {
		if !granted.Has(secret) {
			t.Errorf("%s manages Secret %s, which its host Role does not let it %v (granted on: %v)", w, secret, verbs, sets.List(granted))
		}
	}
}

// fileFlags are the flags that name a file the container reads; dirFlags name a folder, with the files it must hold.
var (
	fileFlags = []string{"kubeconfig", "karmada-kubeconfig", "config", "manifests", "host-kubeconfig"}
	dirFlags  = map[string][]string{"cert-dir": {"tls.crt", "tls.key"}}
)

// Every file an argument names is in a volume the container mounts, under a key the volume projects; every listener
// an argument opens is a port the container declares, every declared port is listened on, and probes ask a declared
// port. A pod whose kubeconfig path misses its mount, or whose Service port leads nowhere, renders and never works.
func TestArgumentsMatchTheMountsAndPorts(t *testing.T) {
	forEachRendering(t, checkArgumentsMatchTheMountsAndPorts)
}

func checkArgumentsMatchTheMountsAndPorts(t reporter, r *rendering) {
	keys := r.volumeKeys(t)
	for _, w := range r.workloads(t) {
		volumes := map[string]corev1.Volume{}
		for _, v := range w.template.Spec.Volumes {
			volumes[v.Name] = v
		}
		for _, c := range w.template.Spec.Containers {
			files := mountedFiles(c, volumes, keys)
			args := flags(c)
			for _, f := range fileFlags {
				for _, file := range args[f] {
					if file != "" && !files.Has(file) {
						t.Errorf("%s: --%s=%s is no file the container mounts (it has %v)", w, f, file, sets.List(files))
					}
				}
			}
			for f, need := range dirFlags {
				for _, dir := range args[f] {
					for _, file := range need {
						if !files.Has(path.Join(dir, file)) {
							t.Errorf("%s: --%s=%s holds no %s", w, f, dir, file)
						}
					}
				}
			}

			declared := map[int32]string{}
			for _, p := range c.Ports {
				declared[p.ContainerPort] = p.Name
			}
			listened := sets.New[int32]()
			for name, values := range args {
				if !strings.HasSuffix(name, "bind-address") {
					continue
				}
				for _, address := range values {
					_, portText, err := net.SplitHostPort(address)
					port, convErr := strconv.Atoi(portText)
					if err != nil || convErr != nil {
						t.Errorf("%s: --%s=%s is no host:port", w, name, address)
						continue
					}
					if _, ok := declared[int32(port)]; !ok {
						t.Errorf("%s: --%s listens on %d, which the container does not declare", w, name, port)
					}
					listened.Insert(int32(port))
				}
			}
			for port, name := range declared {
				if !listened.Has(port) {
					t.Errorf("%s: port %s (%d) is declared but no argument listens on it", w, name, port)
				}
			}
			for probeName, probe := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe, "startup": c.StartupProbe} {
				if probe == nil {
					continue
				}
				var port intstr.IntOrString
				switch {
				case probe.HTTPGet != nil:
					port = probe.HTTPGet.Port
				case probe.TCPSocket != nil:
					port = probe.TCPSocket.Port
				case probe.GRPC != nil:
					port = intstr.FromInt32(probe.GRPC.Port)
				default:
					t.Errorf("%s: the %s probe runs a command; the images have no shell", w, probeName)
					continue
				}
				if !declaresPort(corev1.PodSpec{Containers: []corev1.Container{c}}, port, corev1.ProtocolTCP) {
					t.Errorf("%s: the %s probe asks port %s, which the container does not declare", w, probeName, port.String())
				}
			}
			if w.kind == "Deployment" && (c.ReadinessProbe == nil || c.LivenessProbe == nil) {
				t.Errorf("%s: a long-running container needs readiness and liveness probes", w)
			}
		}
	}
}

// mountedFiles are the paths of the files a container sees through its Secret and ConfigMap mounts; keys gives the
// keys of a volume mounted whole.
func mountedFiles(c corev1.Container, volumes map[string]corev1.Volume, keys func(corev1.Volume) sets.Set[string]) sets.Set[string] {
	files := sets.New[string]()
	for _, m := range c.VolumeMounts {
		v := volumes[m.Name]
		var items []corev1.KeyToPath
		switch {
		case v.Secret != nil:
			items = v.Secret.Items
		case v.ConfigMap != nil:
			items = v.ConfigMap.Items
		}
		if len(items) == 0 {
			for key := range keys(v) {
				items = append(items, corev1.KeyToPath{Key: key, Path: key})
			}
		}
		for _, item := range items {
			switch {
			case m.SubPath == "":
				files.Insert(path.Join(m.MountPath, item.Path))
			case m.SubPath == item.Path:
				files.Insert(m.MountPath)
			}
		}
	}
	return files
}

// volumeKeys returns the keys each Secret or ConfigMap volume of the rendering holds.
func (r *rendering) volumeKeys(t reporter) func(corev1.Volume) sets.Set[string] {
	secrets := r.secretSources(t)
	configMaps := map[string]sets.Set[string]{}
	for _, obj := range ofKind(r.all(), "ConfigMap") {
		cm := typed[corev1.ConfigMap](t, obj)
		configMaps[cm.Name] = sets.KeySet(cm.Data).Union(sets.KeySet(cm.BinaryData))
	}
	return func(v corev1.Volume) sets.Set[string] {
		switch {
		case v.Secret != nil:
			return secrets[v.Secret.SecretName]
		case v.ConfigMap != nil:
			return configMaps[v.ConfigMap.Name]
		}
		return nil
	}
}
