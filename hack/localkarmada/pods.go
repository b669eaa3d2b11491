package localkarmada

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"syscall"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/hack/localkarmada/kubelet"
)

// HostPod is a pod of the host cluster as local-kubelet runs it.
type HostPod struct {
	Namespace, Name string
	UID             types.UID
	Phase           corev1.PodPhase
	Ready           bool
	Terminating     bool
	// PIDs is the process id of each running container, by container name.
	PIDs map[string]int
	// RestartCounts is each container's restart count, by container name.
	RestartCounts map[string]int32
	// Ports is the local port each declared containerPort was given, by port name (number when unnamed): the way
	// to reach this one pod rather than its Service.
	Ports map[string]int
	Pod   *corev1.Pod
}

// HostPods lists the host cluster's pods in a namespace that match selector, with their processes and ports,
// ordered by name.
func (e *Environment) HostPods(ctx context.Context, namespace string, selector labels.Selector) ([]HostPod, error) {
	c, err := Client(e.Host.Kubeconfig)
	if err != nil {
		return nil, err
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return nil, err
	}
	sort.Slice(pods.Items, func(i, j int) bool { return pods.Items[i].Name < pods.Items[j].Name })
	out := make([]HostPod, 0, len(pods.Items))
	for i := range pods.Items {
		out = append(out, hostPod(&pods.Items[i]))
	}
	return out, nil
}

// DeploymentPods lists the pods of a Deployment of the host cluster (by its selector), with their processes and
// ports.
func (e *Environment) DeploymentPods(ctx context.Context, namespace, name string) ([]HostPod, error) {
	c, err := Client(e.Host.Kubeconfig)
	if err != nil {
		return nil, err
	}
	var d appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &d); err != nil {
		return nil, err
	}
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, err
	}
	return e.HostPods(ctx, namespace, selector)
}

func hostPod(pod *corev1.Pod) HostPod {
	p := HostPod{
		Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, Phase: pod.Status.Phase,
		Terminating: pod.DeletionTimestamp != nil,
		PIDs:        map[string]int{}, RestartCounts: map[string]int32{}, Pod: pod,
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			p.Ready = c.Status == corev1.ConditionTrue
		}
	}
	for _, s := range append(append([]corev1.ContainerStatus(nil), pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		p.RestartCounts[s.Name] = s.RestartCount
		if s.State.Running != nil {
			if pid, err := kubelet.PIDOf(s.ContainerID); err == nil {
				p.PIDs[s.Name] = pid
			}
		}
	}
	p.Ports, _ = kubelet.PodPorts(pod)
	return p
}

// KillPodProcess kills a pod container's process group at once (SIGKILL), as a crash would; the kubelet restarts
// it as the pod's restart policy says.
func (e *Environment) KillPodProcess(ctx context.Context, namespace, pod, container string) error {
	p, err := e.hostPodByName(ctx, namespace, pod)
	if err != nil {
		return err
	}
	pid, ok := p.PIDs[container]
	if !ok {
		return fmt.Errorf("container %s of pod %s/%s is not running", container, namespace, pod)
	}
	// Each container leads its own process group.
	return syscall.Kill(-pid, syscall.SIGKILL)
}

func (e *Environment) hostPodByName(ctx context.Context, namespace, name string) (HostPod, error) {
	c, err := Client(e.Host.Kubeconfig)
	if err != nil {
		return HostPod{}, err
	}
	var pod corev1.Pod
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &pod); err != nil {
		return HostPod{}, err
	}
	return hostPod(&pod), nil
}

// PodLogTail returns the last lines of the output of a pod container's current (or last) run.
func (e *Environment) PodLogTail(ctx context.Context, namespace, pod, container string, lines int) string {
	p, err := e.hostPodByName(ctx, namespace, pod)
	if err != nil {
		return err.Error()
	}
	return e.podLogTail(p.Pod, container, lines)
}

func (e *Environment) podLogTail(pod *corev1.Pod, container string, lines int) string {
	restarts := int32(0)
	for _, s := range append(append([]corev1.ContainerStatus(nil), pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		if s.Name == container {
			restarts = s.RestartCount
		}
	}
	return tail(kubelet.ContainerLogPath(e.HostKubelet.LogDir, pod.Namespace, pod.Name, pod.UID, container, restarts), lines)
}

// FailingPodLogs reports, for every pod of the host cluster that failed, is not ready or restarted a container,
// its status and the last lines of each container's output: what a failed test shows, since CI keeps no files.
func (e *Environment) FailingPodLogs(ctx context.Context, lines int) string {
	if e.Host.Kubeconfig == "" {
		return ""
	}
	c, err := Client(e.Host.Kubeconfig)
	if err != nil {
		return err.Error()
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods); err != nil {
		return "listing the host's pods: " + err.Error()
	}
	var out strings.Builder
	for i := range pods.Items {
		p := hostPod(&pods.Items[i])
		restarted := false
		for _, n := range p.RestartCounts {
			restarted = restarted || n > 0
		}
		if p.Phase == corev1.PodSucceeded || p.Ready && !restarted {
			continue
		}
		fmt.Fprintf(&out, "\n--- host pod %s/%s: phase %s, ready %v, restarts %v ---\n", p.Namespace, p.Name, p.Phase, p.Ready, p.RestartCounts)
		for _, s := range append(append([]corev1.ContainerStatus(nil), p.Pod.Status.InitContainerStatuses...), p.Pod.Status.ContainerStatuses...) {
			if s.State.Waiting != nil {
				fmt.Fprintf(&out, "%s waiting: %s %s\n", s.Name, s.State.Waiting.Reason, s.State.Waiting.Message)
			}
			log := kubelet.ContainerLogPath(e.HostKubelet.LogDir, p.Namespace, p.Name, p.UID, s.Name, s.RestartCount)
			if _, err := os.Stat(log); errors.Is(err, os.ErrNotExist) {
				continue
			}
			fmt.Fprintf(&out, "%s (%s):\n%s\n", s.Name, log, e.podLogTail(p.Pod, s.Name, lines))
		}
	}
	return out.String()
}
