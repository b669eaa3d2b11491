package cli

import (
	"fmt"
	"time"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/karmada-quota/karmada-quota/internal/testenv"
	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/controller"
	"github.com/karmada-quota/karmada-quota/pkg/kubectlplugin/report"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
	"github.com/karmada-quota/karmada-quota/test/integration/framework"
)

var list = framework.List

// The webhook's denials, as Karmada's scheduler copies them into the Scheduled condition (an apiserver error
// wrapping the webhook's message), for the quota figures below.
const (
	batchRefused = `admission webhook "resourcebinding.quota.karmada.io" denied the request: exceeded quota: team-a, ` +
		`cpu: requested 8, used 3500m, reserved 0, hard 10, memory: requested 16Gi, used 7Gi, reserved 0, hard 20Gi`
	trainRefused = `admission webhook "resourcebinding.quota.karmada.io" denied the request: exceeded quota: gpu, ` +
		`cpu: requested 4, used 2, reserved 0, hard 4, nvidia.com/gpu: requested 4, used 2, reserved 0, hard 2 ` +
		`(can never fit: the request alone exceeds hard)`
)

// createFixtures makes three namespaces of workloads, bindings and quotas, lets the real controller compute every
// quota's status, stops it, and then writes the two states a running controller would not hold still long
// enough for a golden file: a reservation not yet settled, and a spec the controller has not caught up with.
//
//   - team-a: quota team-a (unscoped) and gpu (PriorityClass high). web and api are placed; batch waits, short of
//     cpu and memory under team-a; train (high) waits under gpu, short of cpu and never fitting its GPUs; pending
//     has no Scheduled condition yet; nofit was refused for want of cluster capacity; orphan has no binding.
//   - team-b: quota team-b, nearly full, limiting services by their legacy name; one reservation outstanding.
//     A user quota-reader may read its quotas but not its bindings.
//   - team-c: quota team-c, its spec changed after the controller last ran.
func createFixtures() {
	for _, ns := range []string{"team-a", "team-b", "team-c"} {
		Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}
	for _, d := range []struct{ ns, name string }{
		{"team-a", "web"}, {"team-a", "api"}, {"team-a", "batch"}, {"team-a", "train"},
		{"team-a", "pending"}, {"team-a", "nofit"}, {"team-a", "orphan"}, {"team-b", "worker"},
	} {
		Expect(k8s.Create(ctx, deployment(d.ns, d.name))).To(Succeed())
	}

	placed := workv1alpha2.BindingReasonSuccess
	bindings := []*utiltesting.BindingWrapper{
		binding("team-a", "web").Replicas(3).Requests(list("cpu", "500m", "memory", "1Gi")).
			Cluster("member1", 2).Cluster("member2", 1).Scheduled(true, placed),
		binding("team-a", "api").Replicas(2).PriorityClass("high").
			Requests(list("cpu", "1", "memory", "2Gi", "nvidia.com/gpu", "1")).Cluster("member1", 2).Scheduled(true, placed),
		refused(binding("team-a", "batch").Replicas(8).Requests(list("cpu", "1", "memory", "2Gi")), batchRefused),
		refused(binding("team-a", "train").Replicas(4).PriorityClass("high").
			Requests(list("cpu", "1", "memory", "1Gi", "nvidia.com/gpu", "1")), trainRefused),
		binding("team-a", "pending").Replicas(1).Requests(list("cpu", "100m", "memory", "128Mi")),
		unschedulable(binding("team-a", "nofit").Replicas(1).Requests(list("cpu", "100m", "memory", "128Mi"))),
		binding("team-b", "worker").Replicas(3).Requests(list("cpu", "600m", "memory", "1Gi")).
			Cluster("member1", 3).Scheduled(true, placed),
		service("team-b", "frontend").Cluster("member1", 0).Cluster("member2", 0).Scheduled(true, placed),
	}
	for _, b := range bindings {
		createBinding(b)
	}

	quotas := []*quotav1alpha1.KarmadaQuota{
		utiltesting.MakeQuota("team-a", "team-a").
			Hard(list("cpu", "10", "memory", "20Gi", "pods", "20", "count/deployments.apps", "10")).Obj(),
		utiltesting.MakeQuota("team-a", "gpu").Hard(list("cpu", "4", "nvidia.com/gpu", "2")).
			Scope(corev1.ScopeSelectorOpIn, "high").Obj(),
		utiltesting.MakeQuota("team-b", "team-b").Hard(list("requests.cpu", "2", "requests.memory", "4Gi", "pods", "4", "services", "2")).Obj(),
		utiltesting.MakeQuota("team-c", "team-c").Hard(list("pods", "10")).Obj(),
	}
	for _, q := range quotas {
		q.UID, q.Generation = "", 0
		Expect(k8s.Create(ctx, q)).To(Succeed())
	}
	computeStatus()

	// An admission of worker's next write, not yet observed: status.reserved as the webhook writes it.
	var teamB quotav1alpha1.KarmadaQuota
	Expect(k8s.Get(ctx, types.NamespacedName{Namespace: "team-b", Name: "team-b"}, &teamB)).To(Succeed())
	var worker workv1alpha2.ResourceBinding
	Expect(k8s.Get(ctx, types.NamespacedName{Namespace: "team-b", Name: "worker-deployment"}, &worker)).To(Succeed())
	teamB.Status.Reservations = []quotav1alpha1.Reservation{{
		ReservedBy: utiltesting.ReservationOwner(&worker), Generation: worker.Generation + 1,
		Reserved:       list("requests.cpu", "200m", "pods", "1"),
		ExpirationTime: metav1.NewTime(time.Date(2030, time.January, 1, 0, 0, 0, 0, time.UTC)),
	}}
	teamB.Status.Reserved = list("requests.cpu", "200m", "requests.memory", "0", "pods", "1", "services", "0")
	Expect(k8s.Status().Update(ctx, &teamB)).To(Succeed())

	// A spec change the controller has not seen: generation 2, status for generation 1.
	var teamC quotav1alpha1.KarmadaQuota
	Expect(k8s.Get(ctx, types.NamespacedName{Namespace: "team-c", Name: "team-c"}, &teamC)).To(Succeed())
	teamC.Spec.Hard = list("pods", "12")
	Expect(k8s.Update(ctx, &teamC)).To(Succeed())

	// Read access to team-b's quotas only: the plugin must still describe them, and say what it could not read.
	Expect(k8s.Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "quota-reader"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{quotav1alpha1.GroupVersion.Group}, Resources: []string{"karmadaquotas"}, Verbs: []string{"get", "list"}}},
	})).To(Succeed())
	Expect(k8s.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "quota-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "quota-reader"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "quota-reader"}},
	})).To(Succeed())
}

// computeStatus runs the real controller until every quota's status is current, then stops it. It starts after
// every binding exists, so its first count is complete and the golden files never see a partial one.
func computeStatus() {
	c, err := framework.StartController(ctx, cfg, controller.Options{ResyncPeriod: time.Hour, Workers: 1, RequeueCooldown: time.Minute}, 0)
	Expect(err).NotTo(HaveOccurred())
	defer func() { Expect(c.Stop()).To(Succeed()) }()
	Eventually(func() error {
		var quotas quotav1alpha1.KarmadaQuotaList
		if err := k8s.List(ctx, &quotas); err != nil {
			return err
		}
		for i := range quotas.Items {
			if s := report.StatusOf(&quotas.Items[i]); s.State != report.Current {
				return fmt.Errorf("quota %s/%s: %s", quotas.Items[i].Namespace, quotas.Items[i].Name, s.State)
			}
		}
		return nil
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

func deployment(ns, name string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
			},
		},
	}
}

// binding is a Deployment's binding, named as Karmada's detector names it.
func binding(ns, workload string) *utiltesting.BindingWrapper {
	b := utiltesting.MakeBinding(ns, workload)
	b.Name = workload + "-deployment"
	return b
}

func service(ns, name string) *utiltesting.BindingWrapper {
	b := utiltesting.MakeBinding(ns, name).Resource("v1", "Service")
	b.Name = name + "-service"
	return b
}

func refused(b *utiltesting.BindingWrapper, message string) *utiltesting.BindingWrapper {
	b.Scheduled(false, workv1alpha2.BindingReasonQuotaExceeded)
	b.Status.Conditions[0].Message = message
	return b
}

func unschedulable(b *utiltesting.BindingWrapper) *utiltesting.BindingWrapper {
	b.Scheduled(false, workv1alpha2.BindingReasonNoClusterFit)
	b.Status.Conditions[0].Message = "0/2 clusters are available: 2 cluster(s) did not have enough resource."
	return b
}

// createBinding creates a binding and then writes its status, as Karmada's scheduler does after placing it.
func createBinding(b *utiltesting.BindingWrapper) {
	rb, err := testenv.CreateBinding(ctx, k8s, b)
	Expect(err).NotTo(HaveOccurred())
	if len(b.Status.Conditions) == 0 {
		return
	}
	rb.Status = *b.Status.DeepCopy()
	for i := range rb.Status.Conditions {
		rb.Status.Conditions[i].ObservedGeneration = rb.Generation
	}
	Expect(k8s.Status().Update(ctx, rb)).To(Succeed())
}
