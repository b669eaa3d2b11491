package demo

import (
	"strings"

	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
)

// The story's namespace and its quota share the business's name.
const (
	namespace = "business-a"
	quotaName = "business-a"
)

// quotaHard is what the admin gives business A across all member clusters. Only CPU is tight in this story: memory
// and pods leave room, so every refusal the demo shows is about CPU.
var quotaHard = corev1.ResourceList{
	corev1.ResourceCPU:    resource.MustParse("100"),
	corev1.ResourceMemory: resource.MustParse("200Gi"),
	corev1.ResourcePods:   resource.MustParse("200"),
}

// workload is one Deployment of the story and the PropagationPolicy that spreads it over the member clusters.
type workload struct {
	name     string
	replicas int32
	// cpu and memory are what each replica requests.
	cpu, memory string
	// duplicated runs every replica in every member cluster; otherwise the replicas are divided between them.
	duplicated bool
}

// The team's Deployments. web and cache together use 80 of the 100 CPU; batch's 30 do not fit until web shrinks.
var (
	web        = workload{name: "web", replicas: 40, cpu: "1", memory: "1Gi"}
	cacheStore = workload{name: "cache", replicas: 10, cpu: "2", memory: "2Gi", duplicated: true}
	batch      = workload{name: "batch", replicas: 30, cpu: "1", memory: "1Gi"}
)

// webScaledTo is web's size after the scale-down of step 4: it frees 20 CPU, enough for batch's 30 with 10 to spare.
const webScaledTo = 20

// clusters is how many member clusters the story spreads its workloads over.
const clusters = 2

// hardCPU is the quota's CPU limit, in whole CPUs.
func hardCPU() int64 {
	hard := quotaHard[corev1.ResourceCPU]
	return hard.Value()
}

// cpuUsed is the CPU the workload uses once every replica is placed, in whole CPUs: a Duplicated workload places
// all its replicas in every cluster.
func (w workload) cpuUsed() int64 {
	perReplica := resource.MustParse(w.cpu)
	used := int64(w.replicas) * perReplica.Value()
	if w.duplicated {
		used *= clusters
	}
	return used
}

func (w workload) scaledTo(replicas int32) workload {
	w.replicas = replicas
	return w
}

// bindingName is the ResourceBinding Karmada's detector creates for the Deployment: "<name>-<kind>", lower case,
// as Karmada's names.GenerateBindingName makes it (importing that package would pull in dependencies the module
// does not otherwise need).
func (w workload) bindingName() string {
	return strings.ToLower(w.name + "-deployment")
}

// strategy names the propagation for the narration.
func (w workload) strategy() string {
	if w.duplicated {
		return "Duplicated"
	}
	return "Divided"
}

func (w workload) deployment() *appsv1.Deployment {
	labels := map[string]string{"app": w.name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: w.name, Namespace: namespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(w.replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{
						Name: w.name,
						// KWOK's fake nodes never pull or run it; any image would do.
						Image: "registry.k8s.io/pause:3.10",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU:    resource.MustParse(w.cpu),
							corev1.ResourceMemory: resource.MustParse(w.memory),
						}},
					}},
				},
			},
		},
	}
}

// policy propagates the Deployment to the given member clusters. A Divided policy weighs them 1:1 statically, so
// the split is the same on every run and the numbers the demo prints can be checked by hand.
func (w workload) policy(members []string) *policyv1alpha1.PropagationPolicy {
	scheduling := &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDuplicated}
	if !w.duplicated {
		var weights []policyv1alpha1.StaticClusterWeight
		for _, m := range members {
			weights = append(weights, policyv1alpha1.StaticClusterWeight{
				TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{m}}, Weight: 1,
			})
		}
		scheduling = &policyv1alpha1.ReplicaSchedulingStrategy{
			ReplicaSchedulingType:     policyv1alpha1.ReplicaSchedulingTypeDivided,
			ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted,
			WeightPreference:          &policyv1alpha1.ClusterPreferences{StaticWeightList: weights},
		}
	}
	return &policyv1alpha1.PropagationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: w.name + "-" + strings.ToLower(w.strategy()), Namespace: namespace},
		Spec: policyv1alpha1.PropagationSpec{
			ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Name: w.name}},
			Placement: policyv1alpha1.Placement{
				ClusterAffinity:   &policyv1alpha1.ClusterAffinity{ClusterNames: members},
				ReplicaScheduling: scheduling,
			},
		},
	}
}

func quota() *quotav1alpha1.KarmadaQuota {
	return &quotav1alpha1.KarmadaQuota{
		ObjectMeta: metav1.ObjectMeta{Name: quotaName, Namespace: namespace},
		Spec:       quotav1alpha1.KarmadaQuotaSpec{Hard: quotaHard.DeepCopy()},
	}
}
