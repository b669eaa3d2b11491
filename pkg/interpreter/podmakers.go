package interpreter

import (
	"fmt"
	"math"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// podMaker reads the pods an object of a kind Karmada reads no replicas from makes a member run. It reads the
// requests of those pods through karmada, from the Pod or the Job the object makes, so that they are read exactly
// as Karmada reads a bare Pod's or a Job's.
type podMaker func(karmada ReplicaInterpreter, obj *unstructured.Unstructured) (Workload, error)

// podMakers are the kinds that run pods on a member although Karmada reads no replicas from them. Workload turns
// to them only when Karmada has no InterpretReplica hook for the kind: a ResourceInterpreterCustomization describing
// one of them is what the binding was written from, so it takes precedence.
var podMakers = map[schema.GroupVersionKind]podMaker{
	appsv1.SchemeGroupVersion.WithKind("DaemonSet"):             daemonSetPods,
	batchv1.SchemeGroupVersion.WithKind("CronJob"):              cronJobPods,
	corev1.SchemeGroupVersion.WithKind("ReplicationController"): replicationControllerPods,
}

var (
	podKind = corev1.SchemeGroupVersion.WithKind("Pod")
	jobKind = batchv1.SchemeGroupVersion.WithKind("Job")
)

// daemonSetPods reads a DaemonSet: one pod of spec.template on every node of the member it fits. The count depends
// on the member's nodes, so Replicas stays 0 until Workload.OnNodes counts them.
func daemonSetPods(karmada ReplicaInterpreter, daemonSet *unstructured.Unstructured) (Workload, error) {
	pod, err := madeFromTemplate(daemonSet, podKind, "spec", "template")
	if err != nil {
		return Workload{}, err
	}
	// Karmada reads a Pod as one replica; only its requirements matter here, the nodes make the count.
	_, requirements, err := karmada.GetReplicas(pod)
	if err != nil {
		return Workload{}, fmt.Errorf("reading spec.template as Karmada reads a Pod: %w", err)
	}
	typed := &corev1.Pod{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(pod.Object, typed); err != nil {
		return Workload{}, fmt.Errorf("spec.template is not a pod template: %w", err)
	}
	return Workload{Requirements: requirements, PerNode: nodeFitOf(&typed.Spec)}, nil
}

// cronJobPods reads a CronJob as the Job it starts on each run. With concurrencyPolicy Forbid or Replace, at most
// one of its Jobs runs at once (Forbid skips a run while one is active, Replace deletes the active one as it starts
// the next), so one Job is what it runs. With Allow, the default, runs pile up without limit: the Workload still
// says what one Job runs, and Unbounded says why that is no bound.
func cronJobPods(karmada ReplicaInterpreter, cronJob *unstructured.Unstructured) (Workload, error) {
	policy, err := stringAt(cronJob.Object, "spec", "concurrencyPolicy")
	if err != nil {
		return Workload{}, err
	}
	var unbounded string
	switch batchv1.ConcurrencyPolicy(policy) {
	case batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent:
	case batchv1.AllowConcurrent:
		unbounded = concurrentJobs(cronJob, "concurrencyPolicy: Allow")
	case "":
		unbounded = concurrentJobs(cronJob, "concurrencyPolicy unset, which defaults to Allow")
	default:
		return Workload{}, fmt.Errorf("spec.concurrencyPolicy is %q, not Allow, Forbid or Replace", policy)
	}

	job, err := madeFromTemplate(cronJob, jobKind, "spec", "jobTemplate")
	if err != nil {
		return Workload{}, err
	}
	// The apiserver defaults a Job's parallelism to 1 when the CronJob controller creates the Job, but leaves it
	// unset in the CronJob's jobTemplate: read as it is, the Job would run no pod.
	jobSpec := map[string]any{}
	if spec, found := job.Object["spec"].(map[string]any); found {
		for field, value := range spec {
			jobSpec[field] = value
		}
	}
	if jobSpec["parallelism"] == nil {
		jobSpec["parallelism"] = int64(1)
	}
	job.Object["spec"] = jobSpec

	// Karmada's Job reading: parallelism pods, no more than completions.
	replicas, requirements, err := karmada.GetReplicas(job)
	if err != nil {
		return Workload{}, fmt.Errorf("reading spec.jobTemplate as Karmada reads a Job: %w", err)
	}
	return Workload{Replicas: replicas, Requirements: requirements, Unbounded: unbounded}, nil
}

// concurrentJobs says why a CronJob's pods have no bound, and how to give them one.
func concurrentJobs(cronJob *unstructured.Unstructured, policy string) string {
	return fmt.Sprintf("CronJob %s/%s allows its Jobs to run concurrently (%s), so the pods it runs at once have no bound: set spec.concurrencyPolicy to Forbid or Replace",
		cronJob.GetNamespace(), cronJob.GetName(), policy)
}

// replicationControllerPods reads a ReplicationController: spec.replicas pods of spec.template.
func replicationControllerPods(karmada ReplicaInterpreter, controller *unstructured.Unstructured) (Workload, error) {
	replicas, err := replicasOf(controller)
	if err != nil {
		return Workload{}, err
	}
	pod, err := madeFromTemplate(controller, podKind, "spec", "template")
	if err != nil {
		return Workload{}, err
	}
	_, requirements, err := karmada.GetReplicas(pod)
	if err != nil {
		return Workload{}, fmt.Errorf("reading spec.template as Karmada reads a Pod: %w", err)
	}
	return Workload{Replicas: replicas, Requirements: requirements}, nil
}

// replicasOf reads a ReplicationController's spec.replicas, 1 when unset as the apiserver defaults it.
func replicasOf(controller *unstructured.Unstructured) (int32, error) {
	spec, _, err := objectAt(controller.Object, "spec")
	if err != nil {
		return 0, err
	}
	value := spec["replicas"]
	if value == nil {
		return 1, nil
	}
	count, isInteger := value.(int64)
	if !isInteger || count < 0 || count > math.MaxInt32 {
		return 0, fmt.Errorf("spec.replicas is %v (of type %T), not a count of pods", value, value)
	}
	return int32(count), nil
}

// madeFromTemplate builds the object of kind made that owner makes from its template at templatePath (a Pod from a
// pod template, a Job from a job template): the template's metadata and spec, named and placed as owner. The
// template's maps are shared, not copied: Karmada's interpreter only reads them.
func madeFromTemplate(owner *unstructured.Unstructured, made schema.GroupVersionKind, templatePath ...string) (*unstructured.Unstructured, error) {
	_, found, err := objectAt(owner.Object, templatePath...)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("%s is missing", strings.Join(templatePath, "."))
	}
	templateMetadata, _, err := objectAt(owner.Object, fieldPath(templatePath, "metadata")...)
	if err != nil {
		return nil, err
	}
	spec, specFound, err := objectAt(owner.Object, fieldPath(templatePath, "spec")...)
	if err != nil {
		return nil, err
	}

	metadata := map[string]any{}
	for field, value := range templateMetadata {
		metadata[field] = value
	}
	metadata["namespace"] = owner.GetNamespace()
	metadata["name"] = owner.GetName()
	obj := &unstructured.Unstructured{Object: map[string]any{"metadata": metadata}}
	if specFound {
		obj.Object["spec"] = spec
	}
	obj.SetGroupVersionKind(made)
	return obj, nil
}

// fieldPath is path followed by field, in a slice of its own: appending to path could write into its caller's.
func fieldPath(path []string, field string) []string {
	return append(append(make([]string, 0, len(path)+1), path...), field)
}

// objectAt returns the object at path in obj; found is false when a field on the way is absent or null. A field on
// the way that is not an object is an error naming it, not a panic.
func objectAt(obj map[string]any, path ...string) (object map[string]any, found bool, err error) {
	for depth, field := range path {
		value := obj[field]
		if value == nil {
			return nil, false, nil
		}
		next, isObject := value.(map[string]any)
		if !isObject {
			return nil, false, fmt.Errorf("%s is of type %T, not an object", strings.Join(path[:depth+1], "."), value)
		}
		obj = next
	}
	return obj, true, nil
}

// stringAt returns the string at path in obj, "" when absent or null.
func stringAt(obj map[string]any, path ...string) (string, error) {
	parent, _, err := objectAt(obj, path[:len(path)-1]...)
	if err != nil {
		return "", err
	}
	value := parent[path[len(path)-1]]
	if value == nil {
		return "", nil
	}
	text, isString := value.(string)
	if !isString {
		return "", fmt.Errorf("%s is of type %T, not a string", strings.Join(path, "."), value)
	}
	return text, nil
}

// NodeFit is what the DaemonSet controller reads of a daemon pod to decide which nodes run one, and nothing else of
// the pod: a NodeFit is kept with every Work that carries a DaemonSet.
type NodeFit struct {
	// NodeName, when set, is the only node the pods run on.
	NodeName string
	// NodeSelector and RequiredNodeAffinity are the pod's required placement (its preferred placement decides
	// nothing about where a daemon pod runs).
	NodeSelector         map[string]string
	RequiredNodeAffinity *corev1.NodeSelector
	// Tolerations are the pod template's own. The ones the DaemonSet controller adds to every daemon pod are the same
	// for all, so Fits adds them instead of each NodeFit storing them.
	Tolerations []corev1.Toleration
	// HostNetwork earns the pods the toleration of a node whose network is unavailable: they do not use it.
	HostNetwork bool
}

// nodeFitOf keeps what the DaemonSet controller reads of a pod spec to place it.
func nodeFitOf(spec *corev1.PodSpec) *NodeFit {
	fit := &NodeFit{
		NodeName:     spec.NodeName,
		NodeSelector: spec.NodeSelector,
		Tolerations:  spec.Tolerations,
		HostNetwork:  spec.HostNetwork,
	}
	if spec.Affinity != nil && spec.Affinity.NodeAffinity != nil {
		fit.RequiredNodeAffinity = spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	return fit
}

// Fits says whether the DaemonSet controller runs a daemon pod on node.
func (f *NodeFit) Fits(node *corev1.Node) bool {
	return f.fits(node, f.requiredAffinity())
}

// Count is how many of nodes run a daemon pod.
func (f *NodeFit) Count(nodes []corev1.Node) int32 {
	// The node selector and affinity are parsed once for all the nodes.
	affinity := f.requiredAffinity()
	var count int32
	for i := range nodes {
		if f.fits(&nodes[i], affinity) {
			count++
		}
	}
	return count
}

func (f *NodeFit) requiredAffinity() nodeaffinity.RequiredNodeAffinity {
	pod := &corev1.Pod{Spec: corev1.PodSpec{NodeSelector: f.NodeSelector}}
	if f.RequiredNodeAffinity != nil {
		pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: f.RequiredNodeAffinity}}
	}
	return nodeaffinity.GetRequiredNodeAffinity(pod)
}

// fits is the DaemonSet controller's rule for creating a daemon pod on a node (NodeShouldRunDaemonPod in
// k8s.io/kubernetes/pkg/controller/daemon): the node is the one named, if one is; it matches the required node
// selector and affinity; and the pod tolerates each of its NoSchedule and NoExecute taints. A pod already running
// on a node that has since been tainted NoSchedule is left there by the controller but not counted here: the rule
// says where daemon pods are created, which is what the count of a new DaemonSet is.
func (f *NodeFit) fits(node *corev1.Node, affinity nodeaffinity.RequiredNodeAffinity) bool {
	if f.NodeName != "" && f.NodeName != node.Name {
		return false
	}
	// Like the controller, a selector that does not parse matches no node, and its error is not reported.
	if matches, _ := affinity.Match(node); !matches {
		return false
	}
	for i := range node.Spec.Taints {
		taint := &node.Spec.Taints[i]
		// A PreferNoSchedule taint keeps no daemon pod off a node.
		if taint.Effect != corev1.TaintEffectNoSchedule && taint.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		if !f.tolerates(taint) {
			return false
		}
	}
	return true
}

// tolerationComparisonOperators is the TaintTolerationComparisonOperators feature gate of the members'
// kube-controller-manager: alpha and off by default in Kubernetes 1.35, so Lt and Gt tolerations tolerate nothing.
const tolerationComparisonOperators = false

func (f *NodeFit) tolerates(taint *corev1.Taint) bool {
	// The logger only reports comparison operator values that do not parse.
	logger := klog.Background()
	if corev1helpers.TolerationsTolerateTaint(logger, f.Tolerations, taint, tolerationComparisonOperators) ||
		corev1helpers.TolerationsTolerateTaint(logger, daemonPodTolerations, taint, tolerationComparisonOperators) {
		return true
	}
	return f.HostNetwork && corev1helpers.TolerationsTolerateTaint(logger, hostNetworkDaemonPodTolerations, taint, tolerationComparisonOperators)
}

// daemonPodTolerations are the tolerations the DaemonSet controller adds to every daemon pod
// (AddOrUpdateDaemonPodTolerations in k8s.io/kubernetes/pkg/controller/daemon/util): a daemon pod stays on a node
// that is not ready or unreachable, and runs on a node under pressure or cordoned, since it is often what keeps
// the node working.
var daemonPodTolerations = []corev1.Toleration{
	{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeDiskPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodePIDPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
}

// hostNetworkDaemonPodTolerations are added to a daemon pod on the host's network only: it needs no pod network.
var hostNetworkDaemonPodTolerations = []corev1.Toleration{
	{Key: corev1.TaintNodeNetworkUnavailable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
}
