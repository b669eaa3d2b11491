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
	// Held is what the bound object itself holds on each member cluster it is sent to, whatever its pods: claims
	// and their storage (a PersistentVolumeClaim, a StatefulSet's claim per replica), load balancers and node ports
	// (a Service). Counted per member, as a member's own ResourceQuota would count the objects there.
	Held
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
	corev1.ResourceReplicationControllers: "count/replicationcontrollers",
	corev1.ResourceQuotas:                 "count/resourcequotas",
}

// held are the names of what a bound object holds on each member (class Held), beside the per-storage-class ones
// (StorageClassClaims, StorageClassStorage). persistentvolumeclaims counts the claims the members hold, as each
// member's ResourceQuota counts its claims; count/persistentvolumeclaims counts PersistentVolumeClaim templates in
// the Karmada control plane, as every count/ name counts templates.
var held = map[corev1.ResourceName]bool{
	corev1.ResourceRequestsStorage:        true,
	corev1.ResourcePersistentVolumeClaims: true,
	corev1.ResourceServicesLoadBalancers:  true,
	corev1.ResourceServicesNodePorts:      true,
}

// storageClassSuffix joins a storage class name to the claim resources limited in that class.
const storageClassSuffix = ".storageclass.storage.k8s.io/"

// StorageClassStorage is the storage claims of class request: <class>.storageclass.storage.k8s.io/requests.storage.
func StorageClassStorage(class string) corev1.ResourceName {
	return corev1.ResourceName(class + storageClassSuffix + string(corev1.ResourceRequestsStorage))
}

// StorageClassClaims is the number of claims of class: <class>.storageclass.storage.k8s.io/persistentvolumeclaims.
func StorageClassClaims(class string) corev1.ResourceName {
	return corev1.ResourceName(class + storageClassSuffix + string(corev1.ResourcePersistentVolumeClaims))
}

// ClaimsOf names, for a storage name (requests.storage or a class's), the claims that must request it: a claim
// counted there without a storage request would hold storage no quota counts. ok is false for any other name.
func ClaimsOf(storage corev1.ResourceName) (claims corev1.ResourceName, ok bool) {
	if storage == corev1.ResourceRequestsStorage {
		return corev1.ResourcePersistentVolumeClaims, true
	}
	class, found := strings.CutSuffix(string(storage), storageClassSuffix+string(corev1.ResourceRequestsStorage))
	if !found {
		return "", false
	}
	return StorageClassClaims(class), true
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
	if held[name] {
		return name, Held, nil
	}
	if class, resource, ok := strings.Cut(s, storageClassSuffix); ok {
		if resource != string(corev1.ResourceRequestsStorage) && resource != string(corev1.ResourcePersistentVolumeClaims) {
			return "", 0, fmt.Errorf("unknown resource: a storage class limits only <class>%srequests.storage and <class>%spersistentvolumeclaims",
				storageClassSuffix, storageClassSuffix)
		}
		if errs := validation.IsDNS1123Subdomain(class); len(errs) > 0 {
			return "", 0, fmt.Errorf("storage class %q is not a valid StorageClass name: %s", class, strings.Join(errs, "; "))
		}
		return name, Held, nil
	}
	compute := strings.TrimPrefix(s, requestsPrefix)
	if !IsComputeName(corev1.ResourceName(compute)) {
		return "", 0, fmt.Errorf("unknown resource: not a compute resource (cpu, memory, ephemeral-storage, hugepages-<size>, " +
			"or an extended resource such as example.com/gpu), pods, storage (requests.storage, persistentvolumeclaims, " +
			"<class>.storageclass.storage.k8s.io/...), services.loadbalancers, services.nodeports, or an object count (count/<resource>.<group>)")
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
