package interpreter

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/karmada-quota/karmada-quota/pkg/resources"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
)

const gi = int64(1) << 30

var (
	pvcKind         = corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim")
	serviceKind     = corev1.SchemeGroupVersion.WithKind("Service")
	statefulSetKind = appsv1.SchemeGroupVersion.WithKind("StatefulSet")
)

// claimOption edits a claim, a PersistentVolumeClaim's or a volumeClaimTemplate.
type claimOption func(*corev1.PersistentVolumeClaim)

func inClass(class string) claimOption {
	return func(c *corev1.PersistentVolumeClaim) { c.Spec.StorageClassName = ptr.To(class) }
}

func storing(quantity string) claimOption {
	return func(c *corev1.PersistentVolumeClaim) {
		c.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(quantity)}
	}
}

func annotatedClass(class string) claimOption {
	return func(c *corev1.PersistentVolumeClaim) {
		c.Annotations = map[string]string{corev1.BetaStorageClassAnnotation: class}
	}
}

func claim(name string, options ...claimOption) corev1.PersistentVolumeClaim {
	c := corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
		Spec:       corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}},
	}
	for _, option := range options {
		option(&c)
	}
	return c
}

func pvc(t *testing.T, options ...claimOption) *unstructured.Unstructured {
	c := claim("data", options...)
	return unstructuredOf(t, &c, pvcKind)
}

func service(t *testing.T, kind corev1.ServiceType, allocate *bool, nodePorts ...int32) *unstructured.Unstructured {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "front"},
		Spec:       corev1.ServiceSpec{Type: kind, AllocateLoadBalancerNodePorts: allocate, Selector: map[string]string{"app": "front"}},
	}
	// One port per node port given, 0 for one the Service leaves to allocation.
	for i, nodePort := range nodePorts {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{
			Name: string(rune('a' + i)), Port: 80 + int32(i), TargetPort: intstr.FromInt32(8080), NodePort: nodePort,
		})
	}
	return unstructuredOf(t, svc, serviceKind)
}

func statefulSet(t *testing.T, replicas int32, templates ...corev1.PersistentVolumeClaim) *unstructured.Unstructured {
	set := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db"},
		Spec: appsv1.StatefulSetSpec{
			Replicas:             ptr.To(replicas),
			Template:             podTemplate(),
			VolumeClaimTemplates: templates,
		},
	}
	return unstructuredOf(t, set, statefulSetKind)
}

func TestHeld(t *testing.T) {
	gold, silver := "gold", "silver"
	tests := []struct {
		name string
		obj  *unstructured.Unstructured
		want usage.Held
	}{
		{
			name: "a claim of a class counts under the generic names and the class's",
			obj:  pvc(t, inClass(gold), storing("10Gi")),
			want: usage.Held{PerCluster: resources.List{
				"persistentvolumeclaims": 1, "requests.storage": 10 * gi,
				resources.StorageClassClaims(gold): 1, resources.StorageClassStorage(gold): 10 * gi,
			}},
		},
		{
			name: "a claim without a class counts under the generic names only: the member applies its default class",
			obj:  pvc(t, storing("1Gi")),
			want: usage.Held{PerCluster: resources.List{"persistentvolumeclaims": 1, "requests.storage": gi}},
		},
		{
			name: "an empty class is no class",
			obj:  pvc(t, inClass(""), storing("1Gi")),
			want: usage.Held{PerCluster: resources.List{"persistentvolumeclaims": 1, "requests.storage": gi}},
		},
		{
			name: "the beta annotation names the class before spec.storageClassName, as Kubernetes reads it",
			obj:  pvc(t, annotatedClass(silver), inClass(gold), storing("1Gi")),
			want: usage.Held{PerCluster: resources.List{
				"persistentvolumeclaims": 1, "requests.storage": gi,
				resources.StorageClassClaims(silver): 1, resources.StorageClassStorage(silver): gi,
			}},
		},
		{
			name: "a claim without a storage request counts as a claim, and its storage names are absent",
			obj:  pvc(t, inClass(gold)),
			want: usage.Held{PerCluster: resources.List{"persistentvolumeclaims": 1, resources.StorageClassClaims(gold): 1}},
		},
		{
			name: "a storage request of zero is a request",
			obj:  pvc(t, storing("0")),
			want: usage.Held{PerCluster: resources.List{"persistentvolumeclaims": 1, "requests.storage": 0}},
		},
		{
			name: "storage is rounded up to whole bytes",
			obj:  pvc(t, storing("1500m")),
			want: usage.Held{PerCluster: resources.List{"persistentvolumeclaims": 1, "requests.storage": 2}},
		},
		{
			name: "a ClusterIP Service holds nothing",
			obj:  service(t, corev1.ServiceTypeClusterIP, nil, 0, 0),
		},
		{
			name: "a Service without a type is a ClusterIP one",
			obj:  service(t, "", nil, 0),
		},
		{
			name: "an ExternalName Service holds nothing",
			obj:  service(t, corev1.ServiceTypeExternalName, nil),
		},
		{
			name: "a NodePort Service holds a node port per port",
			obj:  service(t, corev1.ServiceTypeNodePort, nil, 0, 30080),
			want: usage.Held{PerCluster: resources.List{"services.nodeports": 2}},
		},
		{
			name: "a LoadBalancer holds a load balancer and a node port per port",
			obj:  service(t, corev1.ServiceTypeLoadBalancer, nil, 0, 0, 30443),
			want: usage.Held{PerCluster: resources.List{"services.loadbalancers": 1, "services.nodeports": 3}},
		},
		{
			name: "a LoadBalancer allocating node ports explicitly holds one per port",
			obj:  service(t, corev1.ServiceTypeLoadBalancer, ptr.To(true), 0, 0),
			want: usage.Held{PerCluster: resources.List{"services.loadbalancers": 1, "services.nodeports": 2}},
		},
		{
			name: "a LoadBalancer allocating no node ports holds only those it names",
			obj:  service(t, corev1.ServiceTypeLoadBalancer, ptr.To(false), 0, 30080, 0, 30443),
			want: usage.Held{PerCluster: resources.List{"services.loadbalancers": 1, "services.nodeports": 2}},
		},
		{
			name: "a LoadBalancer allocating no node ports and naming none holds a load balancer",
			obj:  service(t, corev1.ServiceTypeLoadBalancer, ptr.To(false), 0, 0),
			want: usage.Held{PerCluster: resources.List{"services.loadbalancers": 1}},
		},
		{
			name: "a StatefulSet holds, per replica, a claim of each template, by class",
			obj:  statefulSet(t, 3, claim("data", inClass(gold), storing("1Gi")), claim("logs", inClass(silver), storing("2Gi"))),
			want: usage.Held{PerReplica: resources.List{
				"persistentvolumeclaims": 2, "requests.storage": 3 * gi,
				resources.StorageClassClaims(gold): 1, resources.StorageClassStorage(gold): gi,
				resources.StorageClassClaims(silver): 1, resources.StorageClassStorage(silver): 2 * gi,
			}},
		},
		{
			name: "a StatefulSet's templates of one class add up under it",
			obj:  statefulSet(t, 1, claim("data", inClass(gold), storing("1Gi")), claim("logs", inClass(gold), storing("2Gi")), claim("tmp", storing("1Gi"))),
			want: usage.Held{PerReplica: resources.List{
				"persistentvolumeclaims": 3, "requests.storage": 4 * gi,
				resources.StorageClassClaims(gold): 2, resources.StorageClassStorage(gold): 3 * gi,
			}},
		},
		{
			name: "a StatefulSet template without storage leaves out requests.storage and its class's storage, not another class's",
			obj:  statefulSet(t, 2, claim("data", inClass(gold), storing("1Gi")), claim("logs", inClass(silver))),
			want: usage.Held{PerReplica: resources.List{
				"persistentvolumeclaims":           2,
				resources.StorageClassClaims(gold): 1, resources.StorageClassStorage(gold): gi,
				resources.StorageClassClaims(silver): 1,
			}},
		},
		{
			name: "a StatefulSet without claim templates holds nothing",
			obj:  statefulSet(t, 2),
		},
		{
			name: "a ConfigMap holds nothing",
			obj: unstructuredOf(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "settings"}},
				corev1.SchemeGroupVersion.WithKind("ConfigMap")),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.obj.DeepCopy()
			got, err := HeldBy(tc.obj)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.obj); diff != "" {
				t.Errorf("reading changed the object (-before +after):\n%s", diff)
			}
		})
	}
}

func TestHeldMalformed(t *testing.T) {
	set := func(obj *unstructured.Unstructured, value any, path ...string) *unstructured.Unstructured {
		if err := unstructured.SetNestedField(obj.Object, value, path...); err != nil {
			t.Fatal(err)
		}
		return obj
	}
	tests := []struct {
		name string
		obj  *unstructured.Unstructured
		// wantInError is the field the error must name, and what is wrong with it; empty when the object is read.
		wantInError []string
	}{
		{
			name:        "a claim whose storage is no quantity",
			obj:         set(pvc(t), "lots", "spec", "resources", "requests", "storage"),
			wantInError: []string{"spec.resources.requests.storage: quantities must match"},
		},
		{
			name:        "a claim of negative storage",
			obj:         pvc(t, storing("-1Gi")),
			wantInError: []string{"spec.resources.requests.storage is -1Gi", "negative"},
		},
		{
			name:        "a claim whose class is a number",
			obj:         set(pvc(t), int64(3), "spec", "storageClassName"),
			wantInError: []string{"spec.storageClassName: "},
		},
		{
			name:        "a claim whose requests are a string",
			obj:         set(pvc(t), "10Gi", "spec", "resources", "requests"),
			wantInError: []string{"spec.resources.requests is of type string, not an object"},
		},
		{
			name:        "a claim whose spec is a string",
			obj:         set(pvc(t), "big", "spec"),
			wantInError: []string{"spec is of type string, not an object"},
		},
		{
			name: "a claim malformed where Held does not read",
			obj:  set(pvc(t, storing("1Gi")), "everyone", "spec", "accessModes"),
		},
		{
			name:        "a Service whose ports are a string",
			obj:         set(service(t, corev1.ServiceTypeNodePort, nil), "80", "spec", "ports"),
			wantInError: []string{"spec.ports: "},
		},
		{
			name:        "a Service with a node port that is a string",
			obj:         set(service(t, corev1.ServiceTypeNodePort, nil), []any{map[string]any{"port": int64(80)}, map[string]any{"port": int64(81), "nodePort": "high"}}, "spec", "ports"),
			wantInError: []string{"spec.ports[1]: "},
		},
		{
			name:        "a Service whose allocateLoadBalancerNodePorts is a string",
			obj:         set(service(t, corev1.ServiceTypeLoadBalancer, nil, 0), "no", "spec", "allocateLoadBalancerNodePorts"),
			wantInError: []string{"spec.allocateLoadBalancerNodePorts: "},
		},
		{
			name: "a Service malformed where Held does not read",
			obj:  set(service(t, corev1.ServiceTypeLoadBalancer, nil, 0), []any{"front"}, "spec", "selector"),
		},
		{
			name:        "a StatefulSet whose claim templates are an object",
			obj:         set(statefulSet(t, 1), map[string]any{"name": "data"}, "spec", "volumeClaimTemplates"),
			wantInError: []string{"spec.volumeClaimTemplates is of type map[string]interface {}, not a list"},
		},
		{
			name:        "a StatefulSet whose claim template is a string",
			obj:         set(statefulSet(t, 1), []any{"data"}, "spec", "volumeClaimTemplates"),
			wantInError: []string{"spec.volumeClaimTemplates[0] is of type string, not an object"},
		},
		{
			name: "a StatefulSet whose second claim template's storage is no quantity",
			obj: set(statefulSet(t, 1), []any{
				map[string]any{"metadata": map[string]any{"name": "data"}, "spec": map[string]any{"resources": map[string]any{"requests": map[string]any{"storage": "1Gi"}}}},
				map[string]any{"metadata": map[string]any{"name": "logs"}, "spec": map[string]any{"resources": map[string]any{"requests": map[string]any{"storage": "much"}}}},
			}, "spec", "volumeClaimTemplates"),
			wantInError: []string{"spec.volumeClaimTemplates[1]: spec.resources.requests.storage: quantities must match"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			held, err := HeldBy(tc.obj)
			if len(tc.wantInError) == 0 {
				if err != nil {
					t.Errorf("err = %v, want the fields Held reads read", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("read as %+v, want an error", held)
			}
			for _, want := range tc.wantInError {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}
