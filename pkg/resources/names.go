// Package resources names what a KarmadaQuota can limit and converts quantities to the integers the accounting
// runs on: CPU in milli-units, everything else in base units. resource.Quantity appears only at the edges.
package resources

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Class says how a binding uses a quota resource.
type Class int

const (
	// Compute is a per-replica request multiplied by the replicas placed on member clusters.
	Compute Class = iota + 1
	// Pods counts the replicas placed on member clusters.
	Pods
	// ObjectCount counts bound objects of one kind: 1 per binding.
	ObjectCount
)

const (
	requestsPrefix  = "requests."
	limitsPrefix    = "limits."
	countPrefix     = "count/"
	hugePagesPrefix = "hugepages-"
)

// legacyObjectCounts are the object-count names Kubernetes accepted before count/<resource>.<group>; each is the
// same as its count/ form.
var legacyObjectCounts = map[corev1.ResourceName]corev1.ResourceName{
	corev1.ResourceServices:               "count/services",
	corev1.ResourceSecrets:                "count/secrets",
	corev1.ResourceConfigMaps:             "count/configmaps",
	corev1.ResourcePersistentVolumeClaims: "count/persistentvolumeclaims",
	corev1.ResourceReplicationControllers: "count/replicationcontrollers",
	corev1.ResourceQuotas:                 "count/resourcequotas",
}

// unenforceable explains, for names a Kubernetes ResourceQuota knows, why a binding cannot be charged for them.
var unenforceable = map[corev1.ResourceName]string{
	corev1.ResourceServicesLoadBalancers: "a ResourceBinding does not carry the Service type; limit services instead",
	corev1.ResourceServicesNodePorts:     "a ResourceBinding does not carry the Service type; limit services instead",
	corev1.ResourceRequestsStorage:       "a ResourceBinding does not carry PersistentVolumeClaim storage requests; limit persistentvolumeclaims instead",
}

// Canonical returns the single name the accounting uses for a quota key, and its class. Bare compute names and
// their requests. forms are the same resource (cpu and requests.cpu); legacy object-count names are their count/
// forms (services and count/services). The error says why a name cannot be enforced.
func Canonical(name corev1.ResourceName) (corev1.ResourceName, Class, error) {
	s := string(name)
	switch {
	case name == corev1.ResourcePods:
		return name, Pods, nil
	case strings.HasPrefix(s, limitsPrefix):
		return "", 0, fmt.Errorf("limits cannot be enforced: a ResourceBinding carries resource requests only; use %s%s or the bare name",
			requestsPrefix, strings.TrimPrefix(s, limitsPrefix))
	case strings.HasPrefix(s, countPrefix):
		if err := validateCountName(strings.TrimPrefix(s, countPrefix)); err != nil {
			return "", 0, err
		}
		return name, ObjectCount, nil
	}
	if c, ok := legacyObjectCounts[name]; ok {
		return c, ObjectCount, nil
	}
	if why, ok := unenforceable[name]; ok {
		return "", 0, fmt.Errorf("cannot be enforced: %s", why)
	}
	if strings.HasSuffix(s, ".storageclass.storage.k8s.io/requests.storage") ||
		strings.HasSuffix(s, ".storageclass.storage.k8s.io/persistentvolumeclaims") {
		return "", 0, fmt.Errorf("cannot be enforced: a ResourceBinding does not carry a PersistentVolumeClaim's storage class")
	}
	compute := strings.TrimPrefix(s, requestsPrefix)
	if !IsComputeName(corev1.ResourceName(compute)) {
		return "", 0, fmt.Errorf("unknown resource: not a compute resource (cpu, memory, ephemeral-storage, hugepages-<size>, " +
			"or an extended resource such as example.com/gpu), pods, or an object count (count/<resource>.<group>)")
	}
	return RequestName(corev1.ResourceName(compute)), Compute, nil
}

// RequestName is the canonical accounting name of a per-replica request, as found in a binding's
// replicaRequirements.resourceRequest.
func RequestName(name corev1.ResourceName) corev1.ResourceName {
	return corev1.ResourceName(requestsPrefix + string(name))
}

// IsComputeName reports whether a bare name can be requested by a container: the standard compute resources,
// huge pages, or an extended resource (a qualified name outside the kubernetes.io domain).
func IsComputeName(name corev1.ResourceName) bool {
	switch name {
	case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
		return true
	}
	s := string(name)
	if strings.HasPrefix(s, hugePagesPrefix) {
		return len(s) > len(hugePagesPrefix)
	}
	domain, _, ok := strings.Cut(s, "/")
	if !ok || domain == "kubernetes.io" || strings.HasSuffix(domain, ".kubernetes.io") {
		return false
	}
	// Kubernetes forbids requests.* inside an extended name: it would be ambiguous with the quota prefix.
	if strings.Contains(s, requestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(s)) == 0
}

// validateCountName checks <resource>[.<group>] as Kubernetes object-count quotas spell it.
func validateCountName(rg string) error {
	resource, group, _ := strings.Cut(rg, ".")
	if errs := validation.IsDNS1123Label(resource); len(errs) > 0 {
		return fmt.Errorf("count/<resource>.<group>: resource %q is not a lowercase plural resource name: %s", resource, strings.Join(errs, "; "))
	}
	if group != "" {
		if errs := validation.IsDNS1123Subdomain(group); len(errs) > 0 {
			return fmt.Errorf("count/<resource>.<group>: group %q is not a valid API group: %s", group, strings.Join(errs, "; "))
		}
	}
	return nil
}
