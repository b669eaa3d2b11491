package chart

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// reporter is what a check reports through: the test, or a recorder while the check runs on a broken rendering.
// It has no Skip on purpose: a check decides every rendering it is given, or a mutation could pass unseen.
type reporter interface {
	Helper()
	Error(args ...any)
	Errorf(format string, args ...any)
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// recorder stands in for a test while a check runs on a broken rendering: it keeps the failures instead of
// failing the test.
type recorder struct {
	failures []string
}

// stopped ends a check that called Fatal.
type stopped struct{}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}
func (r *recorder) Error(args ...any) { r.failures = append(r.failures, fmt.Sprint(args...)) }
func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	panic(stopped{})
}
func (r *recorder) Fatal(args ...any) {
	r.Error(args...)
	panic(stopped{})
}

// failuresOf runs check on r and returns what it reported.
func failuresOf(check func(reporter, *rendering), r *rendering) (failures []string) {
	rec := &recorder{}
	defer func() {
		if p := recover(); p != nil {
			if _, ok := p.(stopped); !ok {
				panic(p)
			}
		}
		failures = rec.failures
	}()
	check(rec, r)
	return rec.failures
}

// find is the object of a kind whose name ends with suffix.
func find(t reporter, objects []*unstructured.Unstructured, kind, suffix string) *unstructured.Unstructured {
	t.Helper()
	for _, obj := range objects {
		if obj.GetKind() == kind && strings.HasSuffix(obj.GetName(), suffix) {
			return obj
		}
	}
	t.Fatalf("no %s *%s", kind, suffix)
	return nil
}

// edit changes an object through its Go type.
func edit[T any](t reporter, obj *unstructured.Unstructured, change func(*T)) {
	t.Helper()
	typedObj := typed[T](t, obj)
	change(typedObj)
	out, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typedObj)
	if err != nil {
		t.Fatal(err)
	}
	obj.Object = out
}

func editDeployment(t reporter, r *rendering, component string, change func(*appsv1.Deployment)) {
	t.Helper()
	edit(t, r.deployment(t, component).obj, change)
}

func replaceArg(t reporter, c *corev1.Container, prefix, replacement string) {
	t.Helper()
	i := slices.IndexFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, prefix) })
	if i < 0 {
		t.Fatalf("container %s has no argument %s...", c.Name, prefix)
	}
	c.Args[i] = replacement
}

// Each check catches the bug class it is there for: a rendering broken on purpose fails it. Without this, a check
// that silently matches nothing would pass forever.
func TestChecksCatchBrokenRenderings(t *testing.T) {
	const allToggles = "all-toggles-values.yaml"
	for _, tc := range []struct {
		name   string
		values string // a ci/ file; empty: the defaults
		check  func(reporter, *rendering)
		break_ func(t reporter, r *rendering)
		want   string
	}{
		{
			name: "a mount without its volume", check: checkPodsReadOnlyWhatExists, want: "does not have",
			break_: func(t reporter, r *rendering) {
				editDeployment(t, r, "webhook", func(d *appsv1.Deployment) {
					d.Spec.Template.Spec.Volumes = slices.DeleteFunc(d.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool { return v.Secret.Items[0].Key == "tls.crt" })
				})
			},
		},
		{
			name: "a Secret nobody creates", check: checkPodsReadOnlyWhatExists, want: "nothing in the installation creates",
			break_: func(t reporter, r *rendering) {
				editDeployment(t, r, "controller", func(d *appsv1.Deployment) {
					d.Spec.Template.Spec.Volumes[0].Secret.SecretName = "karmada-quota-kubeconfig"
				})
			},
		},
		{
			name: "a key the Secret lacks", check: checkPodsReadOnlyWhatExists, want: "reads key",
			break_: func(t reporter, r *rendering) {
				editDeployment(t, r, "webhook", func(d *appsv1.Deployment) {
					for _, v := range d.Spec.Template.Spec.Volumes {
						for i := range v.Secret.Items {
							if v.Secret.Items[i].Key == "tls.crt" {
								v.Secret.Items[i].Key = "tls.cert"
							}
						}
					}
				})
			},
		},
		{
			name: "a Service port to an undeclared container port", check: checkServicesReachDeclaredPorts, want: "is not declared",
			break_: func(t reporter, r *rendering) {
				edit(t, find(t, r.Host, "Service", "-webhook"), func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromString("webhooks") })
			},
		},
		{
			name: "a Service selecting nothing", check: checkServicesReachDeclaredPorts, want: "selects no pods",
			break_: func(t reporter, r *rendering) {
				edit(t, find(t, r.Host, "Service", "-controller"), func(s *corev1.Service) { s.Spec.Selector[componentLabel] = "controllers" })
			},
		},
		{
			name: "a ServiceMonitor scraping a port the Service lacks", values: allToggles, check: checkServicesReachDeclaredPorts, want: "does not name",
			break_: func(t reporter, r *rendering) {
				sm := find(t, r.Host, "ServiceMonitor", "-webhook")
				endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
				endpoints[0].(map[string]any)["port"] = "http-metrics"
				_ = unstructured.SetNestedSlice(sm.Object, endpoints, "spec", "endpoints")
			},
		},
		{
			name: "a hook without a delete policy", check: checkHooks, want: "stays behind",
			break_: func(t reporter, r *rendering) {
				job := find(t, r.Hooks, "Job", "-cleanup")
				annotations := job.GetAnnotations()
				delete(annotations, hookDeleteAnnotation)
				job.SetAnnotations(annotations)
			},
		},
		{
			name: "a hook Job outliving its ConfigMap", check: checkHooks, want: "exists only at",
			break_: func(t reporter, r *rendering) {
				cm := find(t, r.Hooks, "ConfigMap", "-install")
				annotations := cm.GetAnnotations()
				annotations[hookAnnotation] = "pre-install,pre-upgrade"
				cm.SetAnnotations(annotations)
			},
		},
		{
			name: "a hook Job created before its ServiceAccount", check: checkHooks, want: "may start before",
			break_: func(t reporter, r *rendering) {
				sa := find(t, r.Hooks, "ServiceAccount", "-install")
				annotations := sa.GetAnnotations()
				annotations[hookWeightAnnotation] = "5"
				sa.SetAnnotations(annotations)
			},
		},
		{
			name: "a PodDisruptionBudget that blocks every drain", check: checkPodDisruptionBudgets, want: "no node drain",
			break_: func(t reporter, r *rendering) {
				edit(t, find(t, r.Host, "PodDisruptionBudget", "-webhook"), func(p *policyv1.PodDisruptionBudget) { p.Spec.MinAvailable = ptr.To(intstr.FromInt32(2)) })
			},
		},
		{
			name: "a PodDisruptionBudget covering nothing", check: checkPodDisruptionBudgets, want: "covers no pods",
			break_: func(t reporter, r *rendering) {
				edit(t, find(t, r.Host, "PodDisruptionBudget", "-controller"), func(p *policyv1.PodDisruptionBudget) {
					p.Spec.Selector.MatchLabels[componentLabel] = "controllers"
				})
			},
		},
		{
			name: "a webhook rollout that takes a replica away", check: checkWebhookRolloutKeepsEveryReplica, want: "lets a rollout take",
			break_: func(t reporter, r *rendering) {
				editDeployment(t, r, "webhook", func(d *appsv1.Deployment) {
					d.Spec.Strategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromString("10%"))
				})
			},
		},
		{
			name: "a pod running as root", check: checkPodsMeetTheRestrictedStandard, want: "runAsNonRoot",
			break_: func(t reporter, r *rendering) {
				editDeployment(t, r, "controller", func(d *appsv1.Deployment) {
					d.Spec.Template.Spec.SecurityContext.RunAsNonRoot = nil
					d.Spec.Template.Spec.SecurityContext.RunAsUser = ptr.To(int64(0))
				})
			},
		},
		{
			name: "a container that may escalate its privileges", check: checkPodsMeetTheRestrictedStandard, want: "allowPrivilegeEscalation",
			break_: func(t reporter, r *rendering) {
				edit(t, find(t, r.Hooks, "Job", "-prepare"), func(j *batchv1.Job) {
					j.Spec.Template.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = ptr.To(true)
				})
			},
		},
		{
			name: "a pod without a seccomp profile", check: checkPodsMeetTheRestrictedStandard, want: "seccompProfile",
			break_: func(t reporter, r *rendering) {
				editDeployment(t, r, "webhook", func(d *appsv1.Deployment) { d.Spec.Template.Spec.SecurityContext.SeccompProfile = nil })
			},
		},
		{
			name: "a component running another's image", check: checkImages, want: "runs",
			break_: func(t reporter, r *rendering) {
				editDeployment(t, r, "controller", func(d *appsv1.Deployment) {
					d.Spec.Template.Spec.Containers[0].Image = strings.Replace(d.Spec.Template.Spec.Containers[0].Image, "quota-controller", "quota-webhook", 1)
				})
			},
		},
		{
			name: "a Deployment selecting another's pods", check: checkSelectorsAreDisjoint, want: "picks the pods of",
			break_: func(t reporter, r *rendering) {
				editDeployment(t, r, "controller", func(d *appsv1.Deployment) { delete(d.Spec.Selector.MatchLabels, componentLabel) })
			},
		},
		{
			name: "a binding to a role nobody installs", check: checkServiceAccountsAndBindings, want: "does not install there",
			break_: func(t reporter, r *rendering) {
				edit(t, find(t, r.Karmada, "ClusterRoleBinding", "-webhook"), func(b *rbacv1.ClusterRoleBinding) { b.RoleRef.Name = "karmada-quota-webhooks" })
			},
		},
		{
			name: "a karmada-apiserver object cleanup cannot find", check: checkLabels, want: "cleanup would not find it",
			break_: func(t reporter, r *rendering) {
				obj := find(t, r.Karmada, "ServiceAccount", "-controller")
				labels := obj.GetLabels()
				delete(labels, "app.kubernetes.io/instance")
				obj.SetLabels(labels)
			},
		},
		{
			name: "a flag the binary does not know", check: checkBinariesAcceptTheirArguments, want: "unknown flag",
			break_: func(t reporter, r *rendering) {
				editDeployment(t, r, "webhook", func(d *appsv1.Deployment) {
					replaceArg(t, &d.Spec.Template.Spec.Containers[0], "--reservation-ttl=", "--reservation-tll=3m")
				})
			},
		},
		{
			name: "a value the binary refuses", check: checkBinariesAcceptTheirArguments, want: "--reservation-ttl must exceed",
			break_: func(t reporter, r *rendering) {
				editDeployment(t, r, "webhook", func(d *appsv1.Deployment) {
					replaceArg(t, &d.Spec.Template.Spec.Containers[0], "--reservation-ttl=", "--reservation-ttl=30s")
				})
			},
		},
		{
			name: "lease timings that do not fit together", check: checkBinariesAcceptTheirArguments, want: "renew-deadline must be shorter",
			break_: func(t reporter, r *rendering) {
				editDeployment(t, r, "controller", func(d *appsv1.Deployment) {
					replaceArg(t, &d.Spec.Template.Spec.Containers[0], "--leader-elect-renew-deadline=", "--leader-elect-renew-deadline=20s")
				})
			},
		},
		{
			name: "an install phase that does not exist", check: checkBinariesAcceptTheirArguments, want: "invalid argument",
			break_: func(t reporter, r *rendering) {
				edit(t, find(t, r.Hooks, "Job", "-register"), func(j *batchv1.Job) { j.Spec.Template.Spec.Containers[0].Args[1] = "registration" })
			},
		},
		{
			name: "a Lease in a namespace the controller may not write", check: checkBinariesAcceptTheirArguments, want: "may not get, create and update Leases",
			break_: func(t reporter, r *rendering) {
				editDeployment(t, r, "controller", func(d *appsv1.Deployment) {
					replaceArg(t, &d.Spec.Template.Spec.Containers[0], "--leader-elect-resource-namespace=", "--leader-elect-resource-namespace=kube-system")
				})
			},
		},
		{
			name: "a grace period that cuts the shutdown short", check: checkBinariesAcceptTheirArguments, want: "leaves no margin",
			break_: func(t reporter, r *rendering) {
				editDeployment(t, r, "webhook", func(d *appsv1.Deployment) { d.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To(int64(30)) })
			},
		},
		{
			name: "the controller's Role missing a Secret it manages", check: checkBinariesAcceptTheirArguments, want: "which its host Role does not let it",
			break_: func(t reporter, r *rendering) {
				edit(t, find(t, r.Host, "Role", "-controller"), func(role *rbacv1.Role) {
					role.Rules[0].ResourceNames = role.Rules[0].ResourceNames[1:]
				})
			},
		},
		{
			name: "a kubeconfig path outside the mount", check: checkArgumentsMatchTheMountsAndPorts, want: "is no file the container mounts",
			break_: func(t reporter, r *rendering) {
				editDeployment(t, r, "controller", func(d *appsv1.Deployment) {
					replaceArg(t, &d.Spec.Template.Spec.Containers[0], "--kubeconfig=", "--kubeconfig=/etc/karmada-quota/kubeconfig")
				})
			},
		},
		{
			name: "a listener on an undeclared port", check: checkArgumentsMatchTheMountsAndPorts, want: "listens on 9090",
			break_: func(t reporter, r *rendering) {
				editDeployment(t, r, "webhook", func(d *appsv1.Deployment) {
					replaceArg(t, &d.Spec.Template.Spec.Containers[0], "--metrics-bind-address=", "--metrics-bind-address=:9090")
				})
			},
		},
		{
			name: "a value that does not reach the pods", values: allToggles, check: checkValuesReachTheWorkloads, want: "nodeSelector",
			break_: func(t reporter, r *rendering) {
				editDeployment(t, r, "webhook", func(d *appsv1.Deployment) { d.Spec.Template.Spec.NodeSelector = nil })
			},
		},
		{
			name: "an argument that does not follow its value", check: checkValuesReachTheWorkloads, want: "--resync-period=",
			break_: func(t reporter, r *rendering) {
				editDeployment(t, r, "controller", func(d *appsv1.Deployment) {
					replaceArg(t, &d.Spec.Template.Spec.Containers[0], "--resync-period=", "--resync-period=1m")
				})
			},
		},
		{
			name: "a toggle that renders nothing", values: allToggles, check: checkTogglesRenderWhatTheySay, want: "ServiceMonitors with",
			break_: func(t reporter, r *rendering) {
				r.Host = slices.DeleteFunc(r.Host, func(o *unstructured.Unstructured) bool { return o.GetKind() == "ServiceMonitor" })
			},
		},
		{
			name: "register waiting for another Deployment", check: checkInstallConfigAgreesWithTheObjects, want: "register waits",
			break_: func(t reporter, r *rendering) { r.Config.Webhook.Deployment = "karmada-quota" },
		},
		{
			name: "a certificate for another host", check: checkInstallConfigAgreesWithTheObjects, want: "not the URL's host",
			break_: func(t reporter, r *rendering) {
				r.Config.Certificates.DNSNames = []string{"karmada-quota.karmada-system.svc"}
			},
		},
		{
			name: "a Certificate cert-manager refuses", values: allToggles, check: checkCertificatesAreAcceptedByCertManager, want: "renewBefore",
			break_: func(t reporter, r *rendering) {
				_ = unstructured.SetNestedField(find(t, r.Host, "Certificate", "-webhook").Object, "3000h", "spec", "renewBefore")
			},
		},
		{
			name: "an object outside the release namespace", check: checkNamespaces, want: "not the release's",
			break_: func(t reporter, r *rendering) { find(t, r.Host, "Service", "-webhook").SetNamespace("default") },
		},
		{
			name: "a field the API server does not know", check: checkRenderedObjectsMatchTheirSchemas, want: "field not declared in schema",
			break_: func(t reporter, r *rendering) {
				_ = unstructured.SetNestedField(find(t, r.Host, "Service", "-webhook").Object, "None", "spec", "clusterIp")
			},
		},
		{
			name: "a custom resource field its CRD does not know", values: allToggles, check: checkRenderedObjectsMatchTheirSchemas, want: "unknown fields",
			break_: func(t reporter, r *rendering) {
				_ = unstructured.SetNestedField(find(t, r.Host, "PrometheusRule", "").Object, "x", "spec", "rule")
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := valuesCases(t)[0]
			if tc.values != "" {
				i := slices.IndexFunc(valuesCases(t), func(c valuesCase) bool { return c.name == "ci/"+tc.values })
				c = valuesCases(t)[i]
			}
			if clean := failuresOf(tc.check, renderCase(t, c)); len(clean) > 0 {
				t.Fatalf("the unbroken rendering already fails: %v", clean)
			}
			r := renderCase(t, c)
			tc.break_(t, r)
			failures := failuresOf(tc.check, r)
			if !slices.ContainsFunc(failures, func(f string) bool { return strings.Contains(f, tc.want) }) {
				t.Errorf("the check missed it: want a failure mentioning %q, got %q", tc.want, failures)
			}
		})
	}
}
