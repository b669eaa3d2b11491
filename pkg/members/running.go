// Package members reads what the member clusters actually run, from the members themselves through Karmada's
// cluster proxy: the requests of every pod that has not terminated, per namespace and priority class, counted as
// the member's own ResourceQuota would count them. The controller compares it with what each quota charges there.
// And the members' nodes (Nodes), which the webhook and the controller read to charge a DaemonSet one pod per node
// it fits.
package members

import (
	corev1 "k8s.io/api/core/v1"
	podresource "k8s.io/component-helpers/resource"

	"github.com/karmada-quota/karmada-quota/pkg/resources"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
)

// Running is what one namespace's pods request on one member, by priority class ("" for none).
type Running map[string]resources.List

// Charge is the part of r a quota with selector sel counts: the pods of the classes it matches.
func (r Running) Charge(sel usage.Selector) resources.List {
	out := resources.List{}
	for class, requests := range r {
		if sel.Matches(class) {
			out.Add(requests)
		}
	}
	return out
}

// Requests is what one pod counts against a quota, as a Kubernetes ResourceQuota counts it: the larger of its
// containers' requests summed and of each init container's (sidecars included), plus its overhead, under the
// canonical names (requests.cpu, ...); and one pod. A pod that has terminated counts nothing.
func Requests(pod *corev1.Pod) resources.List {
	if terminated(pod) {
		return nil
	}
	out := resources.List{corev1.ResourcePods: 1}
	for name, q := range podresource.PodRequests(pod, podresource.PodResourcesOptions{}) {
		canonical := resources.RequestName(name)
		out.Add(resources.List{canonical: resources.Value(canonical, q)})
	}
	return out
}

func terminated(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// Sum adds up the pods of one member by namespace and priority class, keeping the namespaces governed says a quota
// governs.
func Sum(pods []corev1.Pod, governed func(namespace string) bool) map[string]Running {
	out := map[string]Running{}
	Add(out, pods, governed)
	return out
}

// Add adds pods into sums, as Sum does: a member is read a page at a time, and no page is kept.
func Add(sums map[string]Running, pods []corev1.Pod, governed func(namespace string) bool) {
	for i := range pods {
		p := &pods[i]
		if !governed(p.Namespace) {
			continue
		}
		requests := Requests(p)
		if requests == nil {
			continue
		}
		byClass := sums[p.Namespace]
		if byClass == nil {
			byClass = Running{}
			sums[p.Namespace] = byClass
		}
		class := p.Spec.PriorityClassName
		if byClass[class] == nil {
			byClass[class] = resources.List{}
		}
		byClass[class].Add(requests)
	}
}
