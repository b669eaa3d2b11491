package interpreter

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	configv1alpha1 "github.com/karmada-io/karmada/pkg/apis/config/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"github.com/karmada-io/karmada/pkg/resourceinterpreter/default/native"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/karmada-quota/karmada-quota/pkg/resources"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
)

// Karmada's native interpreter is what the tests read through: it must be one.
var _ ReplicaInterpreter = native.NewDefaultInterpreter()

var sameQuantity = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

func requests(cpu, memory string) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(cpu),
		corev1.ResourceMemory: resource.MustParse(memory),
	}}
}

func resourceList(cpu, memory string) corev1.ResourceList {
	return requests(cpu, memory).Requests
}

// podTemplate is a pod of two containers and an init container bigger than both: Karmada's rule charges, per
// resource, the larger of the containers' sum (300m CPU, 128Mi) and the largest init container (1 CPU, 64Mi).
func podTemplate() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "setup", Image: "setup", Resources: requests("1", "64Mi")}},
			Containers: []corev1.Container{
				{Name: "agent", Image: "agent", Resources: requests("100m", "64Mi")},
				{Name: "shipper", Image: "shipper", Resources: requests("200m", "64Mi")},
			},
		},
	}
}

// onePodAsks is what one pod of podTemplate asks.
var onePodAsks = resourceList("1", "128Mi")

func unstructuredOf(t *testing.T, obj runtime.Object, gvk schema.GroupVersionKind) *unstructured.Unstructured {
	t.Helper()
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetGroupVersionKind(gvk)
	return u
}

func daemonSet(t *testing.T, edit func(*corev1.PodSpec)) *unstructured.Unstructured {
	template := podTemplate()
	if edit != nil {
		edit(&template.Spec)
	}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "agent"}, Spec: appsv1.DaemonSetSpec{Template: template}}
	return unstructuredOf(t, ds, appsv1.SchemeGroupVersion.WithKind("DaemonSet"))
}

func cronJob(t *testing.T, policy batchv1.ConcurrencyPolicy, parallelism, completions *int32) *unstructured.Unstructured {
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "report"},
		Spec: batchv1.CronJobSpec{
			Schedule:          "*/5 * * * *",
			ConcurrencyPolicy: policy,
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
				Parallelism: parallelism,
				Completions: completions,
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "report", Image: "report", Resources: requests("500m", "1Gi")}},
				}},
			}},
		},
	}
	return unstructuredOf(t, cj, batchv1.SchemeGroupVersion.WithKind("CronJob"))
}

func replicationController(t *testing.T, replicas *int32) *unstructured.Unstructured {
	template := podTemplate()
	rc := &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "legacy"},
		Spec:       corev1.ReplicationControllerSpec{Replicas: replicas, Template: &template},
	}
	u := unstructuredOf(t, rc, corev1.SchemeGroupVersion.WithKind("ReplicationController"))
	if replicas == nil {
		// ToUnstructured leaves out a nil pointer already; this says the test means it.
		unstructured.RemoveNestedField(u.Object, "spec", "replicas")
	}
	return u
}

func TestWorkload(t *testing.T) {
	jobAsks := resourceList("500m", "1Gi")
	allowMessage := "CronJob shop/report allows its Jobs to run concurrently (concurrencyPolicy: Allow), so the pods it runs at once have no bound: set spec.concurrencyPolicy to Forbid or Replace"
	unsetMessage := "CronJob shop/report allows its Jobs to run concurrently (concurrencyPolicy unset, which defaults to Allow), so the pods it runs at once have no bound: set spec.concurrencyPolicy to Forbid or Replace"

	tests := []struct {
		name   string
		obj    *unstructured.Unstructured
		want   Workload
		wantOK bool
	}{
		{
			name: "a DaemonSet runs one pod per node it fits, each asking what a bare Pod of its template asks",
			obj: daemonSet(t, func(spec *corev1.PodSpec) {
				spec.NodeSelector = map[string]string{"role": "edge"}
				spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
			}),
			want: Workload{
				Requirements: &workv1alpha2.ReplicaRequirements{
					ResourceRequest: onePodAsks,
					NodeClaim: &workv1alpha2.NodeClaim{
						NodeSelector: map[string]string{"role": "edge"},
						Tolerations:  []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
					},
				},
				PerNode: &NodeFit{
					NodeSelector: map[string]string{"role": "edge"},
					Tolerations:  []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
				},
			},
			wantOK: true,
		},
		{
			name: "a DaemonSet keeps its pods' node name, required affinity and host network for the count",
			obj: daemonSet(t, func(spec *corev1.PodSpec) {
				spec.NodeName = "n1"
				spec.HostNetwork = true
				spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution: zoneIn("a"),
					PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{
						{Weight: 1, Preference: zoneIn("b").NodeSelectorTerms[0]},
					},
				}}
			}),
			want: Workload{
				Requirements: &workv1alpha2.ReplicaRequirements{
					ResourceRequest: onePodAsks,
					NodeClaim:       &workv1alpha2.NodeClaim{HardNodeAffinity: zoneIn("a")},
				},
				PerNode: &NodeFit{NodeName: "n1", HostNetwork: true, RequiredNodeAffinity: zoneIn("a")},
			},
			wantOK: true,
		},
		{
			name:   "a CronJob that forbids concurrent runs runs one Job: its parallelism at the jobTemplate's requests",
			obj:    cronJob(t, batchv1.ForbidConcurrent, ptr.To[int32](2), nil),
			want:   Workload{Replicas: 2, Requirements: &workv1alpha2.ReplicaRequirements{ResourceRequest: jobAsks}},
			wantOK: true,
		},
		{
			name:   "a CronJob that replaces its running Job runs one Job",
			obj:    cronJob(t, batchv1.ReplaceConcurrent, ptr.To[int32](3), ptr.To[int32](5)),
			want:   Workload{Replicas: 3, Requirements: &workv1alpha2.ReplicaRequirements{ResourceRequest: jobAsks}},
			wantOK: true,
		},
		{
			name:   "a CronJob's Job runs no more pods than completions, as Karmada reads a Job",
			obj:    cronJob(t, batchv1.ForbidConcurrent, ptr.To[int32](3), ptr.To[int32](1)),
			want:   Workload{Replicas: 1, Requirements: &workv1alpha2.ReplicaRequirements{ResourceRequest: jobAsks}},
			wantOK: true,
		},
		{
			name:   "a CronJob's Job without parallelism runs one pod, as the apiserver defaults it",
			obj:    cronJob(t, batchv1.ForbidConcurrent, nil, ptr.To[int32](4)),
			want:   Workload{Replicas: 1, Requirements: &workv1alpha2.ReplicaRequirements{ResourceRequest: jobAsks}},
			wantOK: true,
		},
		{
			name:   "a CronJob that allows concurrent runs has no bound, and says what one Job runs",
			obj:    cronJob(t, batchv1.AllowConcurrent, ptr.To[int32](2), nil),
			want:   Workload{Replicas: 2, Requirements: &workv1alpha2.ReplicaRequirements{ResourceRequest: jobAsks}, Unbounded: allowMessage},
			wantOK: true,
		},
		{
			name:   "a CronJob without a concurrencyPolicy allows concurrent runs",
			obj:    cronJob(t, "", ptr.To[int32](2), nil),
			want:   Workload{Replicas: 2, Requirements: &workv1alpha2.ReplicaRequirements{ResourceRequest: jobAsks}, Unbounded: unsetMessage},
			wantOK: true,
		},
		{
			name:   "a ReplicationController runs its replicas",
			obj:    replicationController(t, ptr.To[int32](3)),
			want:   Workload{Replicas: 3, Requirements: &workv1alpha2.ReplicaRequirements{ResourceRequest: onePodAsks}},
			wantOK: true,
		},
		{
			name:   "a ReplicationController without replicas runs one, as the apiserver defaults it",
			obj:    replicationController(t, nil),
			want:   Workload{Replicas: 1, Requirements: &workv1alpha2.ReplicaRequirements{ResourceRequest: onePodAsks}},
			wantOK: true,
		},
		{
			name: "a Deployment is read by Karmada as before",
			obj: unstructuredOf(t, &appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
				Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](4), Template: podTemplate()},
			}, appsv1.SchemeGroupVersion.WithKind("Deployment")),
			want:   Workload{Replicas: 4, Requirements: &workv1alpha2.ReplicaRequirements{ResourceRequest: onePodAsks}},
			wantOK: true,
		},
		{
			name: "a StatefulSet is read by Karmada, and holds its claims per replica",
			obj:  statefulSet(t, 3, claim("data", inClass("gold"), storing("1Gi"))),
			want: Workload{
				Replicas:     3,
				Requirements: &workv1alpha2.ReplicaRequirements{ResourceRequest: onePodAsks},
				Held: usage.Held{PerReplica: resources.List{"persistentvolumeclaims": 1, "requests.storage": gi,
					resources.StorageClassClaims("gold"): 1, resources.StorageClassStorage("gold"): gi}},
			},
			wantOK: true,
		},
		{
			name:   "a PersistentVolumeClaim runs no pods and holds a claim on each member",
			obj:    pvc(t, storing("5Gi")),
			want:   Workload{Held: usage.Held{PerCluster: resources.List{"persistentvolumeclaims": 1, "requests.storage": 5 * gi}}},
			wantOK: true,
		},
		{
			name:   "a PersistentVolumeClaim requesting no storage still holds a claim",
			obj:    pvc(t),
			want:   Workload{Held: usage.Held{PerCluster: resources.List{"persistentvolumeclaims": 1}}},
			wantOK: true,
		},
		{
			name:   "a LoadBalancer Service runs no pods and holds a load balancer and node ports",
			obj:    service(t, corev1.ServiceTypeLoadBalancer, nil, 0),
			want:   Workload{Held: usage.Held{PerCluster: resources.List{"services.loadbalancers": 1, "services.nodeports": 1}}},
			wantOK: true,
		},
		{
			name:   "a ClusterIP Service neither runs pods nor holds anything",
			obj:    service(t, corev1.ServiceTypeClusterIP, nil, 0),
			wantOK: false,
		},
		{
			name: "a ConfigMap runs no pods",
			obj: unstructuredOf(t, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "settings"},
				Data:       map[string]string{"replicas": "3"},
			}, corev1.SchemeGroupVersion.WithKind("ConfigMap")),
			wantOK: false,
		},
	}
	interpreter := NewStarted(native.NewDefaultInterpreter())
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := interpreter.Workload(context.Background(), tc.obj)
			if err != nil {
				t.Fatal(err)
			}
			if ok != tc.wantOK {
				t.Errorf("ok = %v, want %v", ok, tc.wantOK)
			}
			if diff := cmp.Diff(tc.want, got, sameQuantity); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// A DaemonSet's pod is read by Karmada's own Pod reading: a customization or a change in Karmada's rule for Pods
// reads DaemonSet pods the same way.
func TestDaemonSetPodReadAsABarePod(t *testing.T) {
	template := podTemplate()
	template.Spec.Overhead = resourceList("50m", "16Mi")
	template.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
	ds := unstructuredOf(t, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "agent"},
		Spec: appsv1.DaemonSetSpec{Template: template}}, appsv1.SchemeGroupVersion.WithKind("DaemonSet"))
	pod := unstructuredOf(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "agent"}, Spec: template.Spec},
		corev1.SchemeGroupVersion.WithKind("Pod"))

	karmada := native.NewDefaultInterpreter()
	_, podAsks, err := karmada.GetReplicas(pod)
	if err != nil {
		t.Fatal(err)
	}
	w, ok, err := NewStarted(karmada).Workload(context.Background(), ds)
	if err != nil || !ok {
		t.Fatalf("ok = %v, err = %v", ok, err)
	}
	if diff := cmp.Diff(podAsks, w.Requirements, sameQuantity); diff != "" {
		t.Errorf("a DaemonSet pod is not read as a bare Pod (-pod +daemon pod):\n%s", diff)
	}
	// The overhead is charged on top of the larger of the containers and the init container.
	if diff := cmp.Diff(resourceList("1050m", "144Mi"), w.Requirements.ResourceRequest, sameQuantity); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// customizedDaemonSets is Karmada's interpreter with a ResourceInterpreterCustomization that reads DaemonSets'
// replicas, as a control plane may hold one.
type customizedDaemonSets struct {
	*native.DefaultInterpreter
}

func (c customizedDaemonSets) HookEnabled(gvk schema.GroupVersionKind, operation configv1alpha1.InterpreterOperation) bool {
	if gvk.Kind == "DaemonSet" && operation == configv1alpha1.InterpreterOperationInterpretReplica {
		return true
	}
	return c.DefaultInterpreter.HookEnabled(gvk, operation)
}

func (c customizedDaemonSets) GetReplicas(obj *unstructured.Unstructured) (int32, *workv1alpha2.ReplicaRequirements, error) {
	if obj.GetKind() == "DaemonSet" {
		return 7, &workv1alpha2.ReplicaRequirements{ResourceRequest: resourceList("2", "1Gi")}, nil
	}
	return c.DefaultInterpreter.GetReplicas(obj)
}

func TestCustomizationTakesPrecedence(t *testing.T) {
	w, ok, err := NewStarted(customizedDaemonSets{native.NewDefaultInterpreter()}).Workload(context.Background(), daemonSet(t, nil))
	if err != nil || !ok {
		t.Fatalf("ok = %v, err = %v", ok, err)
	}
	want := Workload{Replicas: 7, Requirements: &workv1alpha2.ReplicaRequirements{ResourceRequest: resourceList("2", "1Gi")}}
	if diff := cmp.Diff(want, w, sameQuantity); diff != "" {
		t.Errorf("the customization was not read (-want +got):\n%s", diff)
	}
}

// customizedWidgets is Karmada's interpreter with a ResourceInterpreterCustomization reading the replicas of a CRD.
type customizedWidgets struct {
	*native.DefaultInterpreter
}

func (c customizedWidgets) HookEnabled(gvk schema.GroupVersionKind, operation configv1alpha1.InterpreterOperation) bool {
	return gvk.Kind == "Widget" && operation == configv1alpha1.InterpreterOperationInterpretReplica || c.DefaultInterpreter.HookEnabled(gvk, operation)
}

func TestOpaque(t *testing.T) {
	widget := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	plain := NewStarted(native.NewDefaultInterpreter())
	for _, tc := range []struct {
		gvk  schema.GroupVersionKind
		want bool
	}{
		{gvk: widget, want: true},
		{gvk: schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"}, want: true},
		// Built in: read by Karmada, by a rule here, or running no pods.
		{gvk: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}},
		{gvk: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "DaemonSet"}},
		{gvk: schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "CronJob"}},
		{gvk: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}},
		{gvk: schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"}},
	} {
		if got := plain.Opaque(tc.gvk); got != tc.want {
			t.Errorf("Opaque(%s) = %v, want %v", tc.gvk, got, tc.want)
		}
	}
	if NewStarted(customizedWidgets{native.NewDefaultInterpreter()}).Opaque(widget) {
		t.Error("a kind a customization reads replicas from is known")
	}
}

func TestMalformedWorkloads(t *testing.T) {
	set := func(obj *unstructured.Unstructured, value any, path ...string) *unstructured.Unstructured {
		if err := unstructured.SetNestedField(obj.Object, value, path...); err != nil {
			t.Fatal(err)
		}
		return obj
	}
	without := func(obj *unstructured.Unstructured, path ...string) *unstructured.Unstructured {
		unstructured.RemoveNestedField(obj.Object, path...)
		return obj
	}
	tests := []struct {
		name string
		obj  *unstructured.Unstructured
		// wantInError are the object and the field the error must name.
		wantInError []string
	}{
		{
			name:        "a DaemonSet whose template is a string",
			obj:         set(daemonSet(t, nil), "agent", "spec", "template"),
			wantInError: []string{"DaemonSet shop/agent", "spec.template is of type string, not an object"},
		},
		{
			name:        "a DaemonSet without a template",
			obj:         without(daemonSet(t, nil), "spec", "template"),
			wantInError: []string{"DaemonSet shop/agent", "spec.template is missing"},
		},
		{
			name:        "a DaemonSet whose template's metadata is a list",
			obj:         set(daemonSet(t, nil), []any{"agent"}, "spec", "template", "metadata"),
			wantInError: []string{"DaemonSet shop/agent", "spec.template.metadata is of type []interface {}, not an object"},
		},
		{
			name:        "a DaemonSet whose containers are a string",
			obj:         set(daemonSet(t, nil), "agent", "spec", "template", "spec", "containers"),
			wantInError: []string{"DaemonSet shop/agent", "spec.template"},
		},
		{
			name:        "a DaemonSet whose CPU request is no quantity",
			obj:         set(daemonSet(t, nil), []any{map[string]any{"name": "agent", "resources": map[string]any{"requests": map[string]any{"cpu": "lots"}}}}, "spec", "template", "spec", "containers"),
			wantInError: []string{"DaemonSet shop/agent", "spec.template"},
		},
		{
			name:        "a DaemonSet whose tolerations are an object",
			obj:         set(daemonSet(t, nil), map[string]any{"key": "dedicated"}, "spec", "template", "spec", "tolerations"),
			wantInError: []string{"DaemonSet shop/agent", "spec.template"},
		},
		{
			name:        "a CronJob whose jobTemplate is a list",
			obj:         set(cronJob(t, batchv1.ForbidConcurrent, nil, nil), []any{}, "spec", "jobTemplate"),
			wantInError: []string{"CronJob shop/report", "spec.jobTemplate is of type []interface {}, not an object"},
		},
		{
			name:        "a CronJob whose jobTemplate's spec is a string",
			obj:         set(cronJob(t, batchv1.ForbidConcurrent, nil, nil), "run", "spec", "jobTemplate", "spec"),
			wantInError: []string{"CronJob shop/report", "spec.jobTemplate.spec is of type string, not an object"},
		},
		{
			name:        "a CronJob without a jobTemplate",
			obj:         without(cronJob(t, batchv1.ForbidConcurrent, nil, nil), "spec", "jobTemplate"),
			wantInError: []string{"CronJob shop/report", "spec.jobTemplate is missing"},
		},
		{
			name:        "a CronJob whose parallelism is a string",
			obj:         set(cronJob(t, batchv1.ForbidConcurrent, nil, nil), "2", "spec", "jobTemplate", "spec", "parallelism"),
			wantInError: []string{"CronJob shop/report", "spec.jobTemplate"},
		},
		{
			name:        "a CronJob whose concurrencyPolicy is a number",
			obj:         set(cronJob(t, batchv1.ForbidConcurrent, nil, nil), int64(1), "spec", "concurrencyPolicy"),
			wantInError: []string{"CronJob shop/report", "spec.concurrencyPolicy is of type int64, not a string"},
		},
		{
			name:        "a CronJob whose concurrencyPolicy is unknown",
			obj:         cronJob(t, "Sometimes", nil, nil),
			wantInError: []string{"CronJob shop/report", `spec.concurrencyPolicy is "Sometimes", not Allow, Forbid or Replace`},
		},
		{
			name:        "a CronJob whose spec is a string",
			obj:         set(cronJob(t, batchv1.ForbidConcurrent, nil, nil), "nightly", "spec"),
			wantInError: []string{"CronJob shop/report", "spec is of type string, not an object"},
		},
		{
			name:        "a PersistentVolumeClaim whose storage is no quantity",
			obj:         set(pvc(t), "lots", "spec", "resources", "requests", "storage"),
			wantInError: []string{"PersistentVolumeClaim shop/data", "spec.resources.requests.storage"},
		},
		{
			name:        "a StatefulSet whose claim templates are a string",
			obj:         set(statefulSet(t, 1), "data", "spec", "volumeClaimTemplates"),
			wantInError: []string{"StatefulSet shop/db", "spec.volumeClaimTemplates is of type string, not a list"},
		},
		{
			name:        "a ReplicationController whose replicas are a string",
			obj:         set(replicationController(t, nil), "3", "spec", "replicas"),
			wantInError: []string{"ReplicationController shop/legacy", "spec.replicas is 3 (of type string), not a count of pods"},
		},
		{
			name:        "a ReplicationController with negative replicas",
			obj:         set(replicationController(t, nil), int64(-1), "spec", "replicas"),
			wantInError: []string{"ReplicationController shop/legacy", "spec.replicas is -1 (of type int64), not a count of pods"},
		},
		{
			name:        "a ReplicationController without a template",
			obj:         without(replicationController(t, ptr.To[int32](2)), "spec", "template"),
			wantInError: []string{"ReplicationController shop/legacy", "spec.template is missing"},
		},
	}
	interpreter := NewStarted(native.NewDefaultInterpreter())
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, ok, err := interpreter.Workload(context.Background(), tc.obj)
			if err == nil {
				t.Fatalf("read as %+v (ok = %v), want an error", w, ok)
			}
			for _, want := range tc.wantInError {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}

func TestNewStartedCannotStartAgain(t *testing.T) {
	if err := NewStarted(native.NewDefaultInterpreter()).Start(context.Background()); err == nil {
		t.Error("a second start was accepted")
	}
}

func TestNotStartedReadsNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	notStarted := &Interpreter{started: make(chan struct{})}
	if err := notStarted.WaitStarted(ctx); err != ErrNotStarted {
		t.Errorf("WaitStarted = %v, want ErrNotStarted", err)
	}
	if _, ok, err := notStarted.Workload(ctx, daemonSet(t, nil)); ok || err != ErrNotStarted {
		t.Errorf("Workload: ok = %v, err = %v, want ErrNotStarted", ok, err)
	}
}
