package cli

import (
	"fmt"
	"time"

	workv1alpha1 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"github.com/karmada-io/karmada/pkg/util/names"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
//   - team-d: quota team-d. db and cache are placed; agent (a DaemonSet, placed with no replicas as the scheduler
//     places one) and report (a CronJob allowing concurrent Jobs) are placed, but the Work webhook refuses their
//     Works, which Karmada reports in SyncWorkFailed events on their bindings (createWorkEvents); cache's Work was
//     refused once and synced since. Two reservations outstanding: a write of cache's binding, and db's Work on
//     member1 (an OverridePolicy raising its cpu there). A user team-d-viewer may read quotas, bindings and
//     DaemonSets, but not events.
//   - shop-dev and shop-prod: the business shop (createBusinessFixtures).
func createFixtures() {
	for _, ns := range []string{"team-a", "team-b", "team-c", "team-d"} {
		Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}
	for _, d := range []struct{ ns, name string }{
		{"team-a", "web"}, {"team-a", "api"}, {"team-a", "batch"}, {"team-a", "train"},
		{"team-a", "pending"}, {"team-a", "nofit"}, {"team-a", "orphan"}, {"team-b", "worker"},
		{"team-d", "db"}, {"team-d", "cache"},
	} {
		Expect(k8s.Create(ctx, deployment(d.ns, d.name))).To(Succeed())
	}
	Expect(k8s.Create(ctx, daemonSet("team-d", "agent"))).To(Succeed())
	Expect(k8s.Create(ctx, cronJob("team-d", "report"))).To(Succeed())

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
		binding("team-d", "db").Replicas(1).Requests(list("cpu", "700m", "memory", "1Gi")).
			Cluster("member1", 1).Scheduled(true, placed),
		binding("team-d", "cache").Replicas(1).Requests(list("cpu", "100m", "memory", "128Mi")).
			Cluster("member2", 1).Scheduled(true, placed),
		// Karmada reads no replicas from a DaemonSet or a CronJob: the scheduler lists their clusters with none.
		boundTo(utiltesting.MakeBinding("team-d", "agent-daemonset"), "apps/v1", "DaemonSet", "agent").
			Cluster("member1", 0).Cluster("member2", 0).Scheduled(true, placed),
		boundTo(utiltesting.MakeBinding("team-d", "report-cronjob"), "batch/v1", "CronJob", "report").
			Cluster("member1", 0).Scheduled(true, placed),
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
		utiltesting.MakeQuota("team-d", "team-d").Hard(list("cpu", "1", "memory", "2Gi", "pods", "10")).Obj(),
	}
	for _, q := range quotas {
		q.UID, q.Generation = "", 0
		Expect(k8s.Create(ctx, q)).To(Succeed())
	}
	createBusinessFixtures()
	computeStatus()

	// An admission of worker's next write, not yet observed: in the ledger as the webhook writes it, and summed in
	// status.reserved as the controller shows it.
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
	moveToLedger(&teamB)
	Expect(k8s.Status().Update(ctx, &teamB)).To(Succeed())

	// Two admissions not yet observed in team-d: a write of cache's binding, and db's Work on member1, which an
	// OverridePolicy makes ask more cpu there than the binding places (reserved by the Work webhook, owned by the Work).
	var teamD quotav1alpha1.KarmadaQuota
	Expect(k8s.Get(ctx, types.NamespacedName{Namespace: "team-d", Name: "team-d"}, &teamD)).To(Succeed())
	var cache workv1alpha2.ResourceBinding
	Expect(k8s.Get(ctx, types.NamespacedName{Namespace: "team-d", Name: "cache-deployment"}, &cache)).To(Succeed())
	teamD.Status.Reservations = []quotav1alpha1.Reservation{
		{
			ReservedBy: utiltesting.ReservationOwner(&cache), Generation: cache.Generation + 1,
			Reserved:       list("cpu", "100m", "memory", "128Mi", "pods", "1"),
			ExpirationTime: metav1.NewTime(time.Date(2030, time.January, 1, 0, 0, 0, 0, time.UTC)),
		},
		{
			ReservedBy: quotav1alpha1.ReservationOwner{
				APIVersion: workv1alpha1.SchemeGroupVersion.String(), Kind: "Work",
				Namespace: names.GenerateExecutionSpaceName("member1"), Name: workName("Deployment", "db", "team-d"),
				UID: "0b6f1f53-6f2c-4d0e-9a53-2f5f4c1e7d21",
			},
			Generation:     2,
			Reserved:       list("cpu", "200m"),
			ExpirationTime: metav1.NewTime(time.Date(2030, time.January, 1, 0, 0, 30, 0, time.UTC)),
		},
	}
	teamD.Status.Reserved = list("cpu", "300m", "memory", "128Mi", "pods", "1")
	moveToLedger(&teamD)
	Expect(k8s.Status().Update(ctx, &teamD)).To(Succeed())
	createWorkEvents()

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

	// Everything `why` reads in team-d but events: the plugin must still answer, and say what it could not know.
	Expect(k8s.Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-d", Name: "team-d-viewer"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{quotav1alpha1.GroupVersion.Group}, Resources: []string{"karmadaquotas"}, Verbs: []string{"get", "list"}},
			{APIGroups: []string{workv1alpha2.GroupVersion.Group}, Resources: []string{"resourcebindings"}, Verbs: []string{"get", "list"}},
			{APIGroups: []string{appsv1.GroupName}, Resources: []string{"daemonsets"}, Verbs: []string{"get", "list"}},
		},
	})).To(Succeed())
	Expect(k8s.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-d", Name: "team-d-viewer"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "team-d-viewer"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "team-d-viewer"}},
	})).To(Succeed())
}

// workRefused is the Work webhook's refusal as Karmada's binding controller gets it back from the apiserver: the
// message of workRefused in pkg/admission, after the apiserver's "admission webhook ... denied the request: ".
func workRefused(cluster, kind, workload, binding, found string) string {
	return fmt.Sprintf(`admission webhook "work.quota.karmada.io" denied the request: `+
		`Work %s/%s would have member cluster %s run more than quota allows for ResourceBinding team-d/%s: %s. `+
		`The member keeps what it runs; to change it, raise the quota, or lower what the resource template, its `+
		`OverridePolicy or the Work asks`,
		names.GenerateExecutionSpaceName(cluster), workName(kind, workload, "team-d"), cluster, binding, found)
}

// workName is the name Karmada gives a workload's Work in every execution namespace.
func workName(kind, name, namespace string) string {
	return names.GenerateWorkName(kind, name, namespace)
}

// createWorkEvents records on team-d's bindings the events Karmada's binding controller records when it syncs
// their Works (ResourceBindingController.syncBinding): a Warning SyncWorkFailed with the error of every member
// joined as utilerrors.NewAggregate joins them, or a Normal SyncWorkSucceed, as client-go's recorder writes them
// (named after the binding and the time, counted, with first and last timestamps). The figures are those of
// team-d at the time: 800m of cpu used (db's 700m and cache's 100m) of 1.
func createWorkEvents() {
	at := func(hour, minute int) time.Time { return time.Date(2025, time.June, 1, hour, minute, 0, 0, time.UTC) }
	synced := func(binding string) string {
		return fmt.Sprintf("Sync work of ResourceBinding(team-d/%s) successful.", binding)
	}
	// agent: three nodes on member1 and two on member2, a pod of 200m on each; synced at 09:00 before its
	// template asked for that much, refused on both members since 10:00.
	agent := workRefused("member1", "DaemonSet", "agent", "agent-daemonset",
		"exceeded quota: team-d, cpu: requested 600m, used 800m, reserved 0, hard 1")
	agent2 := workRefused("member2", "DaemonSet", "agent", "agent-daemonset",
		"exceeded quota: team-d, cpu: requested 400m, used 800m, reserved 0, hard 1")
	report := workRefused("member1", "CronJob", "report", "report-cronjob",
		"quota team-d limits what it runs: CronJob team-d/report allows its Jobs to run concurrently (concurrencyPolicy "+
			"unset, which defaults to Allow), so the pods it runs at once have no bound: set spec.concurrencyPolicy to Forbid or Replace")
	cache := workRefused("member2", "Deployment", "cache", "cache-deployment",
		"exceeded quota: team-d, cpu: requested 400m, used 800m, reserved 0, hard 1")
	for _, e := range []struct {
		binding, eventType, reason, message string
		count                               int32
		first, last                         time.Time
		// previous records the event on an earlier binding of the same name, since deleted: not this one's.
		previous bool
	}{
		{"agent-daemonset", corev1.EventTypeNormal, "SyncWorkSucceed", synced("agent-daemonset"), 1, at(9, 0), at(9, 0), false},
		{"agent-daemonset", corev1.EventTypeWarning, "SyncWorkFailed", "[" + agent + ", " + agent2 + "]", 4, at(10, 0), at(10, 7), false},
		{"agent-daemonset", corev1.EventTypeNormal, "SyncWorkSucceed", synced("agent-daemonset"), 1, at(11, 0), at(11, 0), true},
		{"report-cronjob", corev1.EventTypeWarning, "SyncWorkFailed", report, 12, at(10, 0), at(10, 20), false},
		{"cache-deployment", corev1.EventTypeWarning, "SyncWorkFailed", cache, 2, at(10, 0), at(10, 1), false},
		{"cache-deployment", corev1.EventTypeNormal, "SyncWorkSucceed", synced("cache-deployment"), 1, at(10, 30), at(10, 30), false},
	} {
		var rb workv1alpha2.ResourceBinding
		Expect(k8s.Get(ctx, types.NamespacedName{Namespace: "team-d", Name: e.binding}, &rb)).To(Succeed())
		uid := rb.UID
		if e.previous {
			uid = "5c1d8f0e-previous-binding"
		}
		Expect(k8s.Create(ctx, &corev1.Event{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team-d", Name: fmt.Sprintf("%s.%x", e.binding, e.first.UnixNano())},
			InvolvedObject: corev1.ObjectReference{
				APIVersion: workv1alpha2.GroupVersion.String(), Kind: "ResourceBinding",
				Namespace: "team-d", Name: e.binding, UID: uid, ResourceVersion: rb.ResourceVersion,
			},
			Type: e.eventType, Reason: e.reason, Message: e.message, Count: e.count,
			FirstTimestamp: metav1.NewTime(e.first), LastTimestamp: metav1.NewTime(e.last),
			Source: corev1.EventSource{Component: "binding-controller"},
		})).To(Succeed())
	}
}

// computeStatus runs the real controller until every quota's status is current, and every business quota's with
// the AppliedBusinessQuota of each of its namespaces, then stops it. It starts after every binding exists, so its
// first count is complete and the golden files never see a partial one.
func computeStatus() {
	c, err := framework.StartController(ctx, cfg, controller.Options{ResyncPeriod: time.Hour, Workers: 1, RequeueCooldown: time.Minute}, framework.Lag{})
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
		return businessCounted()
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

func daemonSet(ns, name string) *appsv1.DaemonSet {
	labels := map[string]string{"app": name}
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "registry.k8s.io/pause:3.10",
					Resources: corev1.ResourceRequirements{Requests: list("cpu", "200m", "memory", "256Mi")}}}},
			},
		},
	}
}

// cronJob is a CronJob leaving concurrencyPolicy unset: Allow, so the Jobs it runs at once have no bound.
func cronJob(ns, name string) *batchv1.CronJob {
	return &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: batchv1.CronJobSpec{
			Schedule: "*/5 * * * *",
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
					Name: "report", Image: "registry.k8s.io/pause:3.10",
					Resources: corev1.ResourceRequirements{Requests: list("cpu", "100m", "memory", "64Mi")}}}},
			}}},
		},
	}
}

// boundTo makes b bind another kind of workload, named as Karmada's detector names the binding: <name>-<kind>.
func boundTo(b *utiltesting.BindingWrapper, apiVersion, kind, name string) *utiltesting.BindingWrapper {
	b.Resource(apiVersion, kind)
	b.Spec.Resource.Name = name
	b.Name = names.GenerateBindingName(kind, name)
	return b
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

// moveToLedger writes the reservations listed in q's status into its ledger, as the webhook would have (creating
// it for a quota nothing was reserved on before), and leaves their sum in q's status, as the controller shows it.
func moveToLedger(q *quotav1alpha1.KarmadaQuota) {
	GinkgoHelper()
	moved := utiltesting.MoveToLedger(q)
	var stored quotav1alpha1.KarmadaQuotaLedger
	err := k8s.Get(ctx, types.NamespacedName{Namespace: q.Namespace, Name: q.Name}, &stored)
	if apierrors.IsNotFound(err) {
		// Nothing was reserved on the quota before: the first admission creates its ledger.
		Expect(k8s.Create(ctx, moved)).To(Succeed())
		return
	}
	Expect(err).NotTo(HaveOccurred())
	stored.Reservations, stored.ReservationCount = moved.Reservations, moved.ReservationCount
	Expect(k8s.Update(ctx, &stored)).To(Succeed())
}
