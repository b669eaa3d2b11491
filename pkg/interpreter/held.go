package interpreter

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	storagehelpers "k8s.io/component-helpers/storage/volume"

	"github.com/karmada-quota/karmada-quota/pkg/resources"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
)

// holders are the kinds that hold something on a member besides their pods' requests (HeldBy), each read by the
// rule of Kubernetes' own quota evaluator for it.
var holders = map[schema.GroupVersionKind]func(*unstructured.Unstructured) (usage.Held, error){
	corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"): claimHolds,
	corev1.SchemeGroupVersion.WithKind("Service"):               serviceHolds,
	appsv1.SchemeGroupVersion.WithKind("StatefulSet"):           statefulSetHolds,
}

// HeldBy reads what obj makes each member cluster it is sent to hold besides its pods' requests: a
// PersistentVolumeClaim's claim and storage, a StatefulSet's claims for each replica, a Service's load balancer
// and node ports. Any other object holds nothing. It reads the object alone, not a binding (which carries none of
// it) nor a member, so that a resource template (the binding webhook, the recount) and each Work's manifest as a
// member receives it, overrides applied (the Work gate, Workload), are read alike; usage.With charges what it
// returns.
//
// The rules are those of Kubernetes' quota evaluators (k8s.io/kubernetes pkg/quota/v1/evaluator/core,
// persistent_volume_claims.go and services.go, v1.35), restated because karmada-quota cannot import
// k8s.io/kubernetes, so that a KarmadaQuota charges an object what a member's ResourceQuota would charge it there.
// Where Kubernetes charges a zero (a ClusterIP Service's node ports), the name is left out; a claim that requests no
// storage is the one case where a name's absence says something (claimSet).
func HeldBy(obj *unstructured.Unstructured) (usage.Held, error) {
	read, holds := holders[obj.GroupVersionKind()]
	if !holds {
		return usage.Held{}, nil
	}
	return read(obj)
}

// claimHolds reads a PersistentVolumeClaim: one claim, and its storage, on each member it is sent to.
func claimHolds(obj *unstructured.Unstructured) (usage.Held, error) {
	claim, err := typed[corev1.PersistentVolumeClaim](obj.Object, claimFields...)
	if err != nil {
		return usage.Held{}, err
	}
	var claims claimSet
	if err := claims.add(claim); err != nil {
		return usage.Held{}, err
	}
	return usage.Held{PerCluster: claims.held()}, nil
}

// statefulSetHolds reads a StatefulSet's spec.volumeClaimTemplates: the StatefulSet controller makes every
// replica a claim of each template, so each replica placed holds one claim per template. Claims outlive the
// replicas they were made for (persistentVolumeClaimRetentionPolicy whenScaled defaults to Retain): a member
// scaled down keeps holding them, while the charge follows the replicas placed, as the binding's compute does.
func statefulSetHolds(obj *unstructured.Unstructured) (usage.Held, error) {
	value, found, err := valueAt(obj.Object, "spec", "volumeClaimTemplates")
	if err != nil || !found {
		return usage.Held{}, err
	}
	templates, isList := value.([]any)
	if !isList {
		return usage.Held{}, fmt.Errorf("spec.volumeClaimTemplates is of type %T, not a list", value)
	}
	var claims claimSet
	for i, item := range templates {
		template, isObject := item.(map[string]any)
		if !isObject {
			return usage.Held{}, fmt.Errorf("spec.volumeClaimTemplates[%d] is of type %T, not an object", i, item)
		}
		// Each claim is its template, named after the replica: its class and storage are the template's.
		claim, err := typed[corev1.PersistentVolumeClaim](template, claimFields...)
		if err == nil {
			err = claims.add(claim)
		}
		if err != nil {
			return usage.Held{}, fmt.Errorf("spec.volumeClaimTemplates[%d]: %w", i, err)
		}
	}
	return usage.Held{PerReplica: claims.held()}, nil
}

// claimFields are what Kubernetes' PersistentVolumeClaim evaluator reads of a claim, besides its status: a claim
// being expanded is charged the larger of spec and status.allocatedResources there, and what a member is sent has
// no status.
var claimFields = [][]string{
	{"metadata", "annotations", corev1.BetaStorageClassAnnotation},
	{"spec", "storageClassName"},
	{"spec", "resources", "requests", string(corev1.ResourceStorage)},
}

// claimSet adds up claims as Kubernetes' evaluator charges each one: 1 in persistentvolumeclaims, its storage
// request in requests.storage, and the same two under its class's names when it has a class.
type claimSet struct {
	list resources.List
	// unrequested are the storage names some claim counted without requesting storage: no request, no admission,
	// so held leaves them out for the whole object, and usage.Usage.MissingRequests finds the claims counted
	// without storage. Kubernetes charges such a claim no storage, and the member's apiserver refuses it anyway.
	unrequested map[corev1.ResourceName]bool
}

func (s *claimSet) add(claim *corev1.PersistentVolumeClaim) error {
	if s.list == nil {
		s.list = resources.List{}
	}
	// The beta annotation first, as Kubernetes reads it. A claim without a class has the member's default
	// StorageClass set at its creation, by the member's admission: which one is known only there, so the claim is
	// charged under the names of no class. An empty class is no class, for Kubernetes as here.
	class := storagehelpers.GetPersistentVolumeClaimClass(claim)
	storageNames := []corev1.ResourceName{corev1.ResourceRequestsStorage}
	s.list[corev1.ResourcePersistentVolumeClaims] = resources.Add(s.list[corev1.ResourcePersistentVolumeClaims], 1)
	if class != "" {
		claims := resources.StorageClassClaims(class)
		s.list[claims] = resources.Add(s.list[claims], 1)
		storageNames = append(storageNames, resources.StorageClassStorage(class))
	}
	storage, requested := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	if requested && storage.Sign() < 0 {
		return fmt.Errorf("spec.resources.requests.storage is %s: a claim cannot request negative storage", storage.String())
	}
	for _, name := range storageNames {
		if !requested {
			if s.unrequested == nil {
				s.unrequested = map[corev1.ResourceName]bool{}
			}
			s.unrequested[name] = true
			continue
		}
		// Rounded up to whole bytes, as Kubernetes rounds it.
		s.list[name] = resources.Add(s.list[name], resources.Value(name, storage))
	}
	return nil
}

// held is what the claims hold, without the storage some claim did not request.
func (s *claimSet) held() resources.List {
	for name := range s.unrequested {
		delete(s.list, name)
	}
	return s.list
}

// serviceHolds reads a Service: a LoadBalancer holds a load balancer, and a NodePort or LoadBalancer Service a node
// port for each of its ports on each member it is sent to. A LoadBalancer whose node ports are not allocated
// (spec.allocateLoadBalancerNodePorts false) holds only the node ports it names. Kubernetes still checks the
// ServiceLBNodePortControl feature gate for that; it is GA and locked on since 1.24.
func serviceHolds(obj *unstructured.Unstructured) (usage.Held, error) {
	service, err := typed[corev1.Service](obj.Object,
		[]string{"spec", "type"}, []string{"spec", "ports"}, []string{"spec", "allocateLoadBalancerNodePorts"})
	if err != nil {
		return usage.Held{}, err
	}
	spec := &service.Spec
	var loadBalancers, nodePorts int64
	switch spec.Type {
	case corev1.ServiceTypeNodePort:
		nodePorts = int64(len(spec.Ports))
	case corev1.ServiceTypeLoadBalancer:
		loadBalancers = 1
		if spec.AllocateLoadBalancerNodePorts != nil && !*spec.AllocateLoadBalancerNodePorts {
			// Node ports not allocated yet cannot be counted by value: only the intent says which will exist.
			for _, port := range spec.Ports {
				if port.NodePort != 0 {
					nodePorts++
				}
			}
		} else {
			nodePorts = int64(len(spec.Ports))
		}
	}
	if loadBalancers == 0 && nodePorts == 0 {
		return usage.Held{}, nil
	}
	held := resources.List{}
	if loadBalancers > 0 {
		held[corev1.ResourceServicesLoadBalancers] = loadBalancers
	}
	if nodePorts > 0 {
		held[corev1.ResourceServicesNodePorts] = nodePorts
	}
	return usage.Held{PerCluster: held}, nil
}

// typed converts the fields of obj at paths, and only those, into a T, with the converter Kubernetes' clients
// convert unstructured objects with: a field HeldBy does not read cannot fail the reading, and one it reads that is
// malformed is named in the error, which the converter's own errors do not do.
func typed[T any](obj map[string]any, paths ...[]string) (*T, error) {
	pruned := map[string]any{}
	for _, path := range paths {
		value, found, err := valueAt(obj, path...)
		if err != nil {
			return nil, err
		}
		if found {
			setAt(pruned, value, path)
		}
	}
	out := new(T)
	err := runtime.DefaultUnstructuredConverter.FromUnstructured(pruned, out)
	if err == nil {
		return out, nil
	}
	// Converted alone, each field (each item of a list) tells whether it is the malformed one.
	for _, path := range paths {
		value, _, _ := valueAt(obj, path...)
		if list, isList := value.([]any); isList {
			for i, item := range list {
				if err := convertAlone[T](path, []any{item}); err != nil {
					return nil, fmt.Errorf("%s[%d]: %w", strings.Join(path, "."), i, err)
				}
			}
		}
		if value != nil {
			if err := convertAlone[T](path, value); err != nil {
				return nil, fmt.Errorf("%s: %w", strings.Join(path, "."), err)
			}
		}
	}
	return nil, err
}

// convertAlone converts an object holding only value, at path, into a T.
func convertAlone[T any](path []string, value any) error {
	alone := map[string]any{}
	setAt(alone, value, path)
	return runtime.DefaultUnstructuredConverter.FromUnstructured(alone, new(T))
}

// valueAt returns the value at path in obj; found is false when it, or a field on the way, is absent or null.
func valueAt(obj map[string]any, path ...string) (value any, found bool, err error) {
	parent, found, err := objectAt(obj, path[:len(path)-1]...)
	if err != nil || !found {
		return nil, false, err
	}
	value = parent[path[len(path)-1]]
	return value, value != nil, nil
}

// setAt sets value at path in obj, making the objects on the way. obj holds only what setAt put there: it never
// writes into a map of the object read.
func setAt(obj map[string]any, value any, path []string) {
	for _, field := range path[:len(path)-1] {
		next, exists := obj[field].(map[string]any)
		if !exists {
			next = map[string]any{}
			obj[field] = next
		}
		obj = next
	}
	obj[path[len(path)-1]] = value
}
