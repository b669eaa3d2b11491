package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha1 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apitypes "k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/hack/localkarmada"
	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
)

// The fault suite (issue 13): each fault is injected while users create, scale and delete Deployments in a
// namespace whose quota part of that load exceeds, and each ends the same way: nothing admitted past hard at any
// moment (a sampler reads used + reserved, and what the bindings place, all along), and once the load has stopped
// and the fault is healed, no reservation left, status.used and status.clusters equal to what the bindings use, and
// the members running exactly what is placed (reported rather than failed after the faults that take part of
// Karmada away: that is Karmada's convergence). Each spec restores what it broke, so the others run on a whole
// environment.
//
// Sizes: FAULT_OPS user operations per fault (CI's default fits a 2-core machine), FAULT_RATE of them per second.
// `make test-faults FAULT_OPS=1000` runs only these specs, at that size, and writes their figures to FAULT_REPORT
// (docs/faults.md).

var (
	faultOps  = envInt("FAULT_OPS", 80)
	faultRate = envFloat("FAULT_RATE", 4)
)

const (
	faultWorkers = 4
	// faultMaxLive bounds the load's Deployments at once, so the members' pods stay bounded at any size.
	faultMaxLive = 8
	// settleTimeout outlasts a reservation: a write the webhook admitted but the karmada-apiserver never committed
	// (it, or its etcd, went away in between) leaves its reservation to expire (the chart's 2 minutes), and the
	// controller drops it on its next pass.
	settleTimeout = 3 * time.Minute
	// outageGrace is how long after a restarted apiserver answers ready a client may still see its old connections
	// fail.
	outageGrace = 5 * time.Second
	// faultFiguresEntry names the report entry each fault spec leaves its figures in.
	faultFiguresEntry = "fault figures"
)

// faultHard is the quota of every fault's namespace: the load asks for about half as much again CPU (up to 8
// Deployments of 1 to 4 replicas of 500m or 1 CPU, a third of them on both members), so part of it is refused.
func faultHard() corev1.ResourceList { return list("cpu", "10", "pods", "40") }

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func envFloat(name string, def float64) float64 {
	if v, err := strconv.ParseFloat(os.Getenv(name), 64); err == nil && v > 0 {
		return v
	}
	return def
}

var _ = Describe("Faults under load", Label("faults"), Serial, func() {
	It("karmada-apiserver restarted: users' writes fail only while it is away, and the quota stays exact", func() {
		r := startFault("karmada-apiserver restarted", 0, nil)
		r.disruptsKarmada = true
		r.load.waitEnded(faultOps / 4)
		restoreProcess("karmada-apiserver")
		r.outage("karmada-apiserver restarting", func() {
			// As a restart does it: SIGTERM, so requests in flight finish (the listener closes at once), then
			// SIGKILL after a few seconds, as its watches proxied to the aggregated apiserver would hold it for
			// their whole timeout; then it starts again with the same command.
			Expect(env.Stop("karmada-apiserver", 5*time.Second)).To(Succeed())
			Expect(env.Start(ctx, "karmada-apiserver")).To(Succeed())
		})
		r.finish()
	})

	It("its etcd restarted: users' writes fail only while etcd is away, and the quota stays exact", func() {
		r := startFault("etcd restarted", 0, nil)
		r.disruptsKarmada = true
		r.load.waitEnded(faultOps / 4)
		restoreProcess("karmada-etcd")
		r.outage("karmada-etcd restarting", func() {
			// As a crash does it: no graceful stop, writes in flight lost.
			Expect(env.Kill("karmada-etcd")).To(Succeed())
			Expect(env.Start(ctx, "karmada-etcd")).To(Succeed())
			Eventually(env.Running).WithContext(ctx).WithTimeout(timeout).WithPolling(poll).Should(BeTrue(),
				"the karmada-apiserver ready again on the restarted etcd")
		})
		r.finish()
	})

	It("one of two webhook replicas killed: the other decides meanwhile, and no user write fails", func() {
		pods, err := env.DeploymentPods(ctx, localkarmada.KarmadaNamespace, localkarmada.QuotaWebhookDeployment)
		Expect(err).NotTo(HaveOccurred())
		Expect(pods).To(HaveLen(2), "the chart runs two webhook replicas")
		victim := pods[0]
		container := victim.Pod.Spec.Containers[0].Name
		restarts := victim.RestartCounts[container]

		r := startFault("one of two webhook replicas killed", 0, nil)
		r.load.waitEnded(faultOps / 4)
		// Killed as a crash would: connections in flight cut; the host's kubelet restarts it.
		killedAt := time.Now()
		r.cutAt(killedAt)
		Expect(env.KillPodProcess(ctx, victim.Namespace, victim.Name, container)).To(Succeed())
		Eventually(func(g Gomega) {
			p := hostPod(g, localkarmada.KarmadaNamespace, localkarmada.QuotaWebhookDeployment, victim.Name)
			g.Expect(p.RestartCounts[container]).To(BeNumerically(">", restarts), "restarted")
			g.Expect(p.Ready).To(BeTrue(), "ready again")
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
		r.healed()
		r.note("webhook pod %s killed, ready again after %s", victim.Name, since(killedAt))
		r.finish()
	})

	It("the controller's leader killed: the other replica takes the Lease and keeps counting", func() {
		var leader localkarmada.HostPod
		var identity string
		Eventually(func(g Gomega) { leader, identity = controllerLeader(g) }).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
		container := leader.Pod.Spec.Containers[0].Name
		pid, restarts := leader.PIDs[container], leader.RestartCounts[container]
		Expect(pid).To(BeNumerically(">", 0))

		// The Lease outlives its holder by its duration (15s): the load runs past the takeover.
		r := startFault("the controller's leader killed", 30*time.Second, nil)
		r.load.waitEnded(faultOps / 4)
		// A killed container is restarted by its kubelet within a second, and its new process would race the
		// standby for the Lease once it expires. To see the standby take over, as when the leader's node is lost,
		// the leader is first frozen (SIGSTOP, so it neither renews nor releases the Lease and its kubelet sees
		// nothing to restart), then killed once the standby leads.
		frozenAt := time.Now()
		Expect(syscall.Kill(-pid, syscall.SIGSTOP)).To(Succeed())
		killed := false
		DeferCleanup(func() {
			if !killed {
				_ = syscall.Kill(-pid, syscall.SIGKILL)
			}
		})
		var next localkarmada.HostPod
		var nextIdentity string
		Eventually(func(g Gomega) {
			next, nextIdentity = controllerLeader(g)
			g.Expect(nextIdentity).NotTo(Equal(identity), "the frozen leader's Lease has not been taken over yet")
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
		takeover := since(frozenAt)
		Expect(next.Name).NotTo(Equal(leader.Name), "the other replica took the Lease")
		Expect(syscall.Kill(-pid, syscall.SIGKILL)).To(Succeed())
		killed = true

		By("the killed leader is restarted by its kubelet and stands by; the other replica keeps the Lease")
		Eventually(func(g Gomega) {
			p := hostPod(g, localkarmada.KarmadaNamespace, localkarmada.QuotaControllerDeployment, leader.Name)
			g.Expect(p.RestartCounts[container]).To(BeNumerically(">", restarts), "restarted")
			g.Expect(p.Ready).To(BeTrue(), "ready again")
			now, nowIdentity := controllerLeader(g)
			g.Expect(now.Name).To(Equal(next.Name))
			g.Expect(nowIdentity).To(Equal(nextIdentity))
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
		r.healed()
		r.note("leader %s frozen, then killed; %s took the Lease after %s", leader.Name, next.Name, takeover)
		r.finish()
	})

	It("a member cluster's apiserver down for a while: its usage stays while Karmada keeps the placements", func() {
		const member = "member2"
		// A Deployment on both members that the load never touches: something is placed on the member throughout.
		r := startFault("member apiserver down", time.Minute, func(ns string) {
			deploy(ns, "anchor", 1, "500m", "64Mi", duplicated())
			expectScheduled(ns, "anchor", 1)
		})
		r.disruptsKarmada = true
		r.load.waitEnded(faultOps / 4)
		restoreProcess(member + "-apiserver")
		downAt := time.Now()
		Expect(env.Kill(member + "-apiserver")).To(Succeed())

		By("Karmada notices: the member turns not Ready (its cluster-failure-threshold is 30s)")
		Eventually(func(g Gomega) {
			g.Expect(clusterReady(g, member)).To(BeFalse())
		}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		notReady := since(downAt)

		By("the bindings keep their placements there (a not-Ready member is tainted NoSchedule only, failover or not), so the quota keeps counting them")
		Eventually(func(g Gomega) {
			q := &quotav1alpha1.KarmadaQuota{}
			g.Expect(karmada.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: r.quota}, q)).To(Succeed())
			truth := trueClusterUsage(g, q)
			g.Expect(truth[member]["requests.cpu"]).To(BeNumerically(">=", cpu(0.5)), "the anchor is placed on %s", member)
			g.Expect(statusClusters(q.Status)[member]).To(Equal(truth[member]), "status.clusters[%s]", member)
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())

		Expect(env.Start(ctx, member+"-apiserver")).To(Succeed())
		r.healed()
		down := since(downAt)
		Eventually(func(g Gomega) {
			g.Expect(clusterReady(g, member)).To(BeTrue())
		}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		r.note("%s's apiserver down for %s (Karmada reported it not Ready after %s, Ready again %s after it came back)",
			member, down, notReady, since(downAt)-down)
		r.finish()

		// The member's kube-controller-manager and kube-scheduler lose their leases while their apiserver is away
		// and are restarted, as their kubelet would: one that rode the outage out in the same process once kept
		// running without giving new namespaces their default ServiceAccount, and a later spec waited for pods
		// the member could not create.
		By("the member's own controllers work again: a workload in a namespace made after the outage runs there")
		after := newNamespace("after-outage")
		deploy(after, "probe", 1, "100m", "16Mi", onlyOn(member))
		expectMemberRuns(after, member, 1, "100m", "16Mi")
	})
})

// The unjoin runs last of the whole suite, in a container of its own (Ginkgo orders outer containers, taking a
// container's priority from its specs). Karmada keeps a deleted Cluster while any binding in any namespace places
// something there: a binding an earlier spec left there would hold it, as would one a later spec made while the
// member is away. So the spec waits for the namespaces earlier specs are deleting, drains the member as an admin
// would (asking the scheduler to place again every other namespace's binding still there, and releasing bindings
// Karmada left in a namespace already gone; Karmada moves another team's workload, part of the spec, by itself
// within seconds), and on failure says what holds the Cluster: each binding's deletion state, finalizers and
// namespace.
var _ = Describe("Faults under load: a member cluster unjoined", Label("faults", "unjoin"), Serial, SpecPriority(-1), func() {
	It("a member cluster unjoined: its usage goes when Karmada moves or drops the placements, not before", func() {
		const member = "member1"
		By("another team's workload on " + member + ": the unjoin moves it too")
		// Divided over both members, as the bindings a CI run found holding the Cluster were.
		bystander := newNamespace("bystander")
		deploy(bystander, "idle", 4, "100m", "64Mi", divided())
		expectScheduled(bystander, "idle", 4)
		idle, err := binding(bystander, "idle", "Deployment")
		Expect(err).NotTo(HaveOccurred())
		Expect(idle.Spec.TargetContains(member)).To(BeTrue(), "the other team's workload runs on %s: %v", member, idle.Spec.Clusters)
		r := startFault("member unjoined", time.Minute, func(ns string) {
			// waiting runs one replica on each member and waits for a scale-up the quota can never admit: when the
			// member leaves, Karmada's scheduler moves the binding's desired replicas, not its placed ones, so the
			// quota refuses the move and the placement stays on the leaving member.
			deploy(ns, "waiting", 2, "500m", "64Mi", divided())
			expectScheduled(ns, "waiting", 2)
			scale(ns, "waiting", 24)
			expectRefused(ns, "waiting")
			// pinned may only run on the member that leaves: Karmada has nowhere to move it and drops its placement.
			deploy(ns, "pinned", 1, "500m", "64Mi", onlyOn(member))
			expectScheduled(ns, "pinned", 1)
		})
		r.disruptsKarmada = true
		r.load.waitEnded(faultOps / 4)

		DeferCleanup(func() { rejoin(r.ns, member) })
		unjoinedAt := time.Now()
		By("unjoining " + member + " as `karmadactl unjoin` does: deleting its Cluster object")
		Expect(env.Unjoin(ctx, member)).To(Succeed())

		By("Karmada moves every placement it can, drops pinned's; what the quota refuses to move stays, and is counted")
		var stuck []string
		Eventually(func(g Gomega) {
			var bindings workv1alpha2.ResourceBindingList
			g.Expect(karmada.List(ctx, &bindings, client.InNamespace(r.ns))).To(Succeed())
			stuck = nil
			for _, rb := range bindings.Items {
				if !rb.Spec.TargetContains(member) {
					continue
				}
				cond := meta.FindStatusCondition(rb.Status.Conditions, workv1alpha2.Scheduled)
				g.Expect(cond).NotTo(BeNil())
				g.Expect(cond.Reason).To(Equal(workv1alpha2.BindingReasonQuotaExceeded),
					"%s is still placed on %s: %v (generation %d, scheduler saw %d)", rb.Name, member, rb.Spec.Clusters,
					rb.Generation, rb.Status.SchedulerObservedGeneration)
				stuck = append(stuck, rb.Name)
			}
			g.Expect(stuck).To(ContainElement(bindingName("waiting", "Deployment")))
			pinned, err := binding(r.ns, "pinned", "Deployment")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pinned.Spec.Clusters).To(BeEmpty(), "pinned's placement dropped")
			q := &quotav1alpha1.KarmadaQuota{}
			g.Expect(karmada.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: r.quota}, q)).To(Succeed())
			truth := trueClusterUsage(g, q)
			g.Expect(truth[member]["requests.cpu"]).To(BeNumerically(">=", cpu(0.5)), "waiting's replica on %s", member)
			g.Expect(statusClusters(q.Status)).To(Equal(truth), "status.clusters")
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
		moved := since(unjoinedAt)

		By("while anything is placed there, " + member + "'s usage stays, though Karmada is deleting the cluster")
		Consistently(func(g Gomega) {
			var cluster clusterv1alpha1.Cluster
			g.Expect(karmada.Get(ctx, client.ObjectKey{Name: member}, &cluster)).To(Succeed())
			g.Expect(cluster.DeletionTimestamp).NotTo(BeNil(), "the Cluster is being deleted")
			g.Expect(statusClusters(quotaStatus(r.ns, r.quota))[member]["requests.cpu"]).To(BeNumerically(">=", cpu(0.5)),
				"status.clusters[%s]", member)
		}).WithTimeout(5 * time.Second).WithPolling(poll).Should(Succeed())

		By("scaling what waits back to what it has placed, as an admin unblocking the unjoin: Karmada moves it, and " +
			member + " leaves status.clusters with it")
		// Once the users have stopped: a Deployment the load scales up while still placed there would be stuck the
		// same way, after this pass.
		r.load.waitEnded(faultOps)
		releasedAt := time.Now()
		released := unblockUnjoin(r.ns, member)
		Eventually(func(g Gomega) {
			gone, err := env.Unjoined(ctx, member)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(gone).To(BeTrue(), "the Cluster object is gone (Karmada keeps it until nothing is placed there); "+
				"what still holds it: %s", unjoinBlockers(g, member))
			g.Expect(statusClusters(quotaStatus(r.ns, r.quota))).NotTo(HaveKey(member))
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
		idle, err = binding(bystander, "idle", "Deployment")
		Expect(err).NotTo(HaveOccurred())
		Expect(idle.Spec.TargetContains(member)).To(BeFalse(), "the other team's workload left %s: %v", member, idle.Spec.Clusters)
		Expect(placedReplicas(idle)).To(Equal(int32(4)), "the other team's workload kept its replicas: %v", idle.Spec.Clusters)
		r.note("%s unjoined: every placement Karmada could move was moved, pinned's dropped, within %s; %d bindings "+
			"waiting on the quota kept theirs, and %s's usage, until scaled back to what they had placed (%v); "+
			"the Cluster was gone, and its usage with it, %s after that", member, moved, len(stuck), member, released, since(releasedAt))

		By("joining " + member + " again")
		Expect(env.Join(ctx, member)).To(Succeed())
		r.healed()
		r.finish()
	})
})

// faultRun is one fault's spec: its namespace and quota, the load, the sampler and the observer, and the periods
// during which users' writes may fail because the fault took the karmada-apiserver away.
type faultRun struct {
	name, ns, quota string
	load            *userLoad
	sampler         *admissionSampler
	observer        *schedulingObserver
	outages         []outage
	// disruptsKarmada is set for the faults that take part of Karmada away (its apiserver, its etcd, a member),
	// after which the members are compared with the placements for the record only (see finish).
	disruptsKarmada bool
	// cuts are when a webhook replica was killed with calls in flight (see cutAt).
	cuts       []time.Time
	stopNoting func()
	// healedAt is when the fault was healed: what it stopped runs again, what it removed is back.
	healedAt time.Time

	mu    sync.Mutex
	notes []string
}

// outage is a period during which users' writes may fail: the karmada-apiserver, or its etcd, was not serving.
type outage struct {
	what     string
	from, to time.Time
}

// startFault creates the fault's namespace and quota, runs prepare in it, then starts the sampler, the observer and
// the load: faultOps operations spread over at least minDuration.
func startFault(name string, minDuration time.Duration, prepare func(ns string)) *faultRun {
	GinkgoHelper()
	expectNoNamespaceDeleting()
	r := &faultRun{name: name, ns: newNamespace("fault"), quota: "compute"}
	createQuota(r.ns, r.quota, faultHard())
	if prepare != nil {
		prepare(r.ns)
	}
	r.sampler = sampleAdmissions(r.ns, r.quota)
	r.observer = observeScheduling(r.ns)
	duration := max(minDuration, time.Duration(float64(faultOps)/faultRate*float64(time.Second)))
	r.load = startLoad(r.ns, faultOps, faultWorkers, duration, faultMaxLive)
	r.stopNoting = r.noteRestarts()
	DeferCleanup(func() {
		r.load.halt()
		r.sampler.finish()
		r.observer.stop()
		r.stopNoting()
	})
	return r
}

// expectNoNamespaceDeleting waits until no namespace an earlier spec deleted is still being deleted, before a fault
// disrupts Karmada. A full e2e run in which the karmada-apiserver restart fault began while the previous spec's
// namespace was being deleted ended with that namespace gone and 20 of its ResourceBindings left behind, placed,
// with their finalizer; an earlier CI run had two such bindings of another spec. The likely cause is the namespace
// controller's discovery right after the restart, before the apiserver serves the CRDs again, finding no
// ResourceBindings to wait for. Left behind, such bindings can never be updated (their namespace does not exist),
// so they hold the member they place on if it is later unjoined: see releaseOrphans.
func expectNoNamespaceDeleting() {
	GinkgoHelper()
	By("no namespace of an earlier spec still being deleted")
	Eventually(func(g Gomega) {
		var namespaces corev1.NamespaceList
		g.Expect(karmada.List(ctx, &namespaces)).To(Succeed())
		for _, ns := range namespaces.Items {
			g.Expect(ns.DeletionTimestamp).To(BeNil(), "namespace %s is still being deleted", ns.Name)
		}
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
}

// karmadaDeployments are the processes of the local Karmada that run as Deployments in a real one.
var karmadaDeployments = []string{
	"karmada-aggregated-apiserver", "karmada-webhook", "karmada-controller-manager", "karmada-scheduler",
	"karmada-kube-controller-manager",
}

// noteRestarts notes, while the fault runs, every restart of Karmada's own components by the environment's
// supervisor, which restarts them as their kubelet would: karmada-controller-manager and karmada-scheduler exit
// when they cannot renew their leader lease for their renew deadline (10s), as while the karmada-apiserver is away,
// and the new process lists everything afresh. Each restart is noted with the last line the process wrote. It
// returns what stops it.
func (r *faultRun) noteRestarts() func() {
	seen := map[string]int{}
	for _, name := range karmadaDeployments {
		restarts, _, err := env.Restarts(name)
		Expect(err).NotTo(HaveOccurred())
		seen[name] = restarts
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		defer GinkgoRecover()
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Second):
			}
			for _, name := range karmadaDeployments {
				restarts, lastExit, err := env.Restarts(name)
				if err != nil || restarts == seen[name] {
					continue
				}
				why := lastExit
				if i := strings.Index(why, "] "); i >= 0 {
					why = why[i+2:]
				}
				r.note("%s exited (%s); restarted by the environment (%d time(s)), as its kubelet would", name, why, restarts-seen[name])
				seen[name] = restarts
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(stop) })
		<-done
	}
}

// outage runs f, which takes the karmada-apiserver away and brings it back, and records the period.
func (r *faultRun) outage(what string, f func()) {
	GinkgoHelper()
	from := time.Now()
	f()
	r.healed()
	r.outages = append(r.outages, outage{what: what, from: from, to: time.Now().Add(outageGrace)})
	r.note("%s: away for %s", what, since(from))
}

// healed records that the fault is healed from now on.
func (r *faultRun) healed() { r.healedAt = time.Now() }

func (r *faultRun) note(format string, args ...any) {
	n := fmt.Sprintf(format, args...)
	r.mu.Lock()
	r.notes = append(r.notes, n)
	r.mu.Unlock()
	fmt.Fprintf(GinkgoWriter, "%s: %s\n", r.name, n)
}

// legitimate reports which outage explains a failed operation: one that overlapped it, failing as a client sees
// an apiserver that is away.
func (r *faultRun) legitimate(res opResult) (string, bool) {
	if !unavailable(res.err) {
		return "", false
	}
	end := res.at.Add(res.took)
	for _, o := range r.outages {
		if !res.at.After(o.to) && !end.Before(o.from) {
			return o.what, true
		}
	}
	return "", false
}

// finish waits for the load to end, then for the namespace to settle, checks every invariant and records the
// fault's figures.
func (r *faultRun) finish() {
	GinkgoHelper()
	results := r.load.wait()
	loadEnd, failedOps := r.load.start, 0
	for _, res := range results {
		if end := res.at.Add(res.took); end.After(loadEnd) {
			loadEnd = end
		}
		if res.err != nil {
			failedOps++
		}
	}
	loadTime := loadEnd.Sub(r.load.start)
	fmt.Fprintf(GinkgoWriter, "%s: the load ran %s: %d operations, %d failed\n", r.name, loadTime.Round(100*time.Millisecond), len(results), failedOps)

	By("the load has ended and the fault is healed: every binding scheduled or refused, the quota true, the members running what is placed")
	// Time to settle counts from when both the load had ended and the fault was healed.
	settleFrom := loadEnd
	if r.healedAt.After(settleFrom) {
		settleFrom = r.healedAt
	}
	endScheduled, endRefused, held := expectBindingsEnded(r.ns)
	if len(held) > 0 {
		r.note("Karmada's scheduler held back, for reasons of its own, %v", held)
	}
	r.note("bindings ended %s after the load and the fault", since(settleFrom))
	expectQuotaTrue(r.ns, r.quota)
	r.note("quota true %s after", since(settleFrom))
	var orphans map[string][]string
	if r.disruptsKarmada {
		// After an outage of part of Karmada, Karmada does not always bring the members back in line with the
		// placements. After a member's, it re-created a workload from a Work it was replacing and left it at its
		// old replicas: its execution and work-status controllers stop syncing a Work while the cluster is not
		// ready and leave what was there (karmada-io/karmada#2989, open). After its etcd's, it left a workload on
		// a member its binding no longer places anything on: Karmada does not remove what it applied to a member
		// once the binding has moved away from it, until something touches it again (karmada-io/karmada#5071,
		// open). That is Karmada's convergence, not the quota's (whose figures above are already checked), so
		// here it is reported in the figures, with those issues, rather than failed.
		if err := InterceptGomegaFailure(func() { orphans = expectMembersRunPlaced(r.ns) }); err != nil {
			r.note("Karmada had not brought the members in line with the placements %s after the fault "+
				"(karmada-io/karmada#2989, #5071): %v", settleTimeout, err)
		}
	} else {
		orphans = expectMembersRunPlaced(r.ns)
	}
	if len(orphans) > 0 {
		r.note("Karmada left workloads running in members for bindings that are gone (unplaced, uncharged; "+
			"karmada-io/karmada#7896): %v", orphans)
	}
	settle := time.Since(settleFrom)
	r.sampler.finish()
	r.observer.stop()
	r.stopNoting()
	r.mu.Lock()
	notes := slices.Clone(r.notes)
	r.mu.Unlock()

	f := faultFigures{
		Fault: r.name, Ops: len(results), Samples: r.sampler.samples.Load(), Unreadable: r.sampler.unreadable.Load(),
		EndScheduled: endScheduled, EndRefused: endRefused, Failed: map[string]int{},
		LoadSeconds: loadTime.Seconds(), SettleSeconds: settle.Seconds(), Notes: notes,
	}
	var unexplained []string
	took := make([]time.Duration, 0, len(results))
	for _, res := range results {
		took = append(took, res.took)
		switch res.kind {
		case opCreate:
			f.Creates++
		case opScale:
			f.Scales++
		default:
			f.Deletes++
		}
		if res.err == nil {
			continue
		}
		why, ok := r.legitimate(res)
		if !ok {
			why = "unexplained"
			unexplained = append(unexplained, fmt.Sprintf("%s %s, sent %s, after %s: %v",
				res.kind, res.name, res.at.Format("15:04:05.000"), res.took.Round(time.Millisecond), res.err))
		}
		f.Failed[why]++
		if len(f.FailureSamples) < 3 {
			f.FailureSamples = append(f.FailureSamples, fmt.Sprintf("%s %s: %v", res.kind, res.name, res.err))
		}
	}
	if len(took) > 0 {
		slices.Sort(took)
		f.OpMedianSeconds, f.OpMaxSeconds = took[len(took)/2].Seconds(), took[len(took)-1].Seconds()
	}
	f.Scheduled, f.Refused, f.SchedulingFailed, f.SchedulingFailures, f.SchedulingFailureSamples = r.observer.counts()
	admitted, placed, hard := r.sampler.worst()
	f.MaxAdmitted, f.MaxPlaced, f.Hard = humanList(admitted), humanList(placed), humanList(hard)
	AddReportEntry(faultFiguresEntry, f)

	undecidedAll := r.observer.undecided()
	fmt.Fprintf(GinkgoWriter, "%s: the scheduler saw %d placements scheduled, %d refused by quota, %d failed otherwise (%d undecided by a webhook); used + reserved peaked at %s against hard %s\n",
		r.name, f.Scheduled, f.Refused, f.SchedulingFailed, len(undecidedAll), f.MaxAdmitted, f.Hard)
	r.sampler.expectNeverAboveHard()
	Expect(unexplained).To(BeEmpty(), "users' writes failed that no outage of the karmada-apiserver explains")

	// Karmada's own writes through the webhooks: a placement the karmada-apiserver could not get a decision for
	// failed closed. Only an outage of the karmada-apiserver (or its etcd) explains one; a fault that leaves a
	// webhook replica serving must cost none.
	var undecided []string
	cut := 0
	for _, u := range undecidedAll {
		switch {
		case r.duringOutage(u.at):
		case r.cutInFlight(u):
			cut++
		default:
			undecided = append(undecided, u.at.Format("15:04:05.000")+" "+u.message)
		}
	}
	if cut > 0 {
		r.note("%d of Karmada's placements were in flight to the killed webhook replica and failed closed; the scheduler placed them again", cut)
	}
	Expect(cut).To(BeNumerically("<=", faultMaxLive), "more placements cut by the kill than workloads were live")
	Expect(undecided).To(BeEmpty(), "Karmada's placements failed for want of a webhook's decision outside any outage of the karmada-apiserver, "+
		"and not as a call in flight to a killed replica")

	// The fault was tried against a full quota, or its "never above hard" checks would hold whatever the product
	// did: the quota refused placements, and used + reserved came within one replica's charge of hard (the largest,
	// 1 CPU on both members).
	Expect(f.Refused).To(BeNumerically(">", 0), "the quota refused no placement: nothing contended for it")
	Expect(admitted["requests.cpu"]).To(BeNumerically(">=", hard["requests.cpu"]-cpu(2)),
		"used + reserved of cpu never came within one replica of hard: the quota was never full")
}

// cutAt records that a webhook replica is killed at t. The karmada-apiserver's calls in flight to it end without an
// answer (EOF, or the connection reset) and it does not retry an admission webhook's call, so the binding writes
// they decided fail closed and Karmada's scheduler tries them again: no replica serving can prevent that. Only such
// failures, seen within inFlightWindow of the kill, are explained by it; a call the Service sends to the dead
// replica afterwards (connection refused) is not.
func (r *faultRun) cutAt(t time.Time) { r.cuts = append(r.cuts, t) }

// inFlightWindow bounds when a call in flight at a kill is reported failed: the scheduler writes the binding's
// condition right after its write fails, and the observer sees it moments later.
const inFlightWindow = 5 * time.Second

func (r *faultRun) cutInFlight(f observedFailure) bool {
	if !strings.HasSuffix(f.message, ": EOF") && !strings.Contains(f.message, "connection reset by peer") {
		return false
	}
	for _, t := range r.cuts {
		if !f.at.Before(t) && f.at.Sub(t) <= inFlightWindow {
			return true
		}
	}
	return false
}

// duringOutage reports whether t falls in an outage of the karmada-apiserver, grace included.
func (r *faultRun) duringOutage(t time.Time) bool {
	for _, o := range r.outages {
		if !t.Before(o.from) && !t.After(o.to) {
			return true
		}
	}
	return false
}

// faultFigures are what one fault's run measured, for the test output and docs/faults.md.
type faultFigures struct {
	Fault string `json:"fault"`
	// Ops are the users' operations, by kind; Failed counts the failed ones by the outage that explains them
	// ("unexplained" fails the spec), with a few of their messages.
	Ops, Creates, Scales, Deletes int
	Failed                        map[string]int
	FailureSamples                []string
	// OpMedianSeconds and OpMaxSeconds are how long an operation took.
	OpMedianSeconds, OpMaxSeconds float64
	// Scheduled, Refused and SchedulingFailed count the scheduler's outcomes Karmada reported on the bindings:
	// placements scheduled, refused by the quota, and failed otherwise (retried), by reason.
	Scheduled, Refused, SchedulingFailed int
	SchedulingFailures                   map[string]int
	SchedulingFailureSamples             []string
	// EndScheduled and EndRefused are how the bindings ended: scheduled, or refused by the quota.
	EndScheduled, EndRefused int
	// MaxAdmitted and MaxPlaced are the largest used + reserved and the largest sum of placements the sampler saw,
	// per resource, against Hard; Samples how many times it read both, Unreadable how many times it could not.
	MaxAdmitted, MaxPlaced, Hard map[string]string
	Samples, Unreadable          int64
	// LoadSeconds is how long the load ran; SettleSeconds how long the namespace then took to settle.
	LoadSeconds, SettleSeconds float64
	Notes                      []string
}

func (f faultFigures) failed() int {
	n := 0
	for _, c := range f.Failed {
		n += c
	}
	return n
}

func (f faultFigures) String() string {
	return fmt.Sprintf("%s: %d operations (%d creates, %d scales, %d deletes; median %.0fms, max %.1fs), %d failed %v; scheduler: %d scheduled, "+
		"%d refused by the quota, %d failed otherwise %v; bindings ended %d scheduled, %d refused; max used+reserved %v, "+
		"max placed %v, hard %v (%d samples, %d unreadable); load %.1fs, settled in %.1fs; %s",
		f.Fault, f.Ops, f.Creates, f.Scales, f.Deletes, f.OpMedianSeconds*1000, f.OpMaxSeconds, f.failed(), f.Failed, f.Scheduled, f.Refused, f.SchedulingFailed,
		f.SchedulingFailures, f.EndScheduled, f.EndRefused, f.MaxAdmitted, f.MaxPlaced, f.Hard, f.Samples, f.Unreadable,
		f.LoadSeconds, f.SettleSeconds, strings.Join(append(slices.Clone(f.Notes), f.FailureSamples...), "; "))
}

// humanList writes amounts in the units users write them in (cpu: "9500m").
func humanList(l resources.List) map[string]string {
	out := map[string]string{}
	for name, v := range l {
		q := resources.Quantity(name, v)
		out[string(name)] = q.String()
	}
	return out
}

func since(t time.Time) time.Duration { return time.Since(t).Round(100 * time.Millisecond) }

// restoreProcess starts a recorded process again after the spec if it is not running, so a spec that fails while
// its fault is in force leaves a whole environment to the others.
func restoreProcess(name string) {
	DeferCleanup(func() {
		p, err := env.Process(name)
		Expect(err).NotTo(HaveOccurred())
		if !p.Alive() {
			Expect(env.Start(ctx, name)).To(Succeed())
		}
	})
}

// expectBindingsEnded waits until every binding of the namespace has ended: scheduled at its latest generation,
// refused by the quota, or held back by Karmada's scheduler for a reason of its own. The last happens now and then
// on this small environment (the scheduler's estimate of what the members can still take goes below zero while
// they catch up, "Clusters available replicas -2 are not enough"), and Karmada retries such a binding only minutes
// later; it keeps its last placement, which is what the quota counts. It returns how many ended each way, and the
// names of the last kind.
func expectBindingsEnded(ns string) (scheduled, refused int, heldByKarmada []string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		var bindings workv1alpha2.ResourceBindingList
		g.Expect(karmada.List(ctx, &bindings, client.InNamespace(ns))).To(Succeed())
		scheduled, refused, heldByKarmada = 0, 0, nil
		for _, rb := range bindings.Items {
			g.Expect(rb.DeletionTimestamp).To(BeNil(), "%s is still being deleted", rb.Name)
			cond := meta.FindStatusCondition(rb.Status.Conditions, workv1alpha2.Scheduled)
			g.Expect(cond).NotTo(BeNil(), "%s not scheduled yet", rb.Name)
			switch {
			case cond.Status == metav1.ConditionTrue && rb.Status.SchedulerObservedGeneration == rb.Generation:
				scheduled++
			case cond.Status == metav1.ConditionFalse && cond.Reason == workv1alpha2.BindingReasonQuotaExceeded:
				refused++
			case cond.Status == metav1.ConditionFalse && (cond.Reason == workv1alpha2.BindingReasonUnschedulable ||
				cond.Reason == workv1alpha2.BindingReasonNoClusterFit):
				// Capacity as Karmada estimates it. Any other refusal (an admission error among them) must still
				// end scheduled or refused by the quota.
				heldByKarmada = append(heldByKarmada, fmt.Sprintf("%s (%s: %s)", rb.Name, cond.Reason, cond.Message))
			default:
				g.Expect(cond).To(BeNil(), "%s (generation %d, scheduler saw %d) is neither scheduled nor refused",
					rb.Name, rb.Generation, rb.Status.SchedulerObservedGeneration)
			}
		}
	}).WithTimeout(settleTimeout).WithPolling(time.Second).Should(Succeed(), "the bindings of %s ended", ns)
	return scheduled, refused, heldByKarmada
}

// expectQuotaTrue waits until the quota has no reservation left and its status.used and status.clusters equal what
// the namespace's bindings use, computed from scratch.
func expectQuotaTrue(ns, name string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		q := &quotav1alpha1.KarmadaQuota{}
		g.Expect(karmada.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, q)).To(Succeed())
		expectNothingReserved(g, ns, name)
		truth := trueUsage(g, q)
		g.Expect(canonical(q.Status.Used)).To(Equal(truth), "status.used")
		g.Expect(statusClusters(q.Status)).To(Equal(trueClusterUsage(g, q)), "status.clusters")
	}).WithTimeout(settleTimeout).WithPolling(poll).Should(Succeed(), func() string {
		// Told only on failure: per member the quota counts the larger of what a binding places and what its Work
		// asks, so a count the bindings do not explain names a Work.
		return fmt.Sprintf("quota %s/%s true; last read %s", ns, name, describeNow(ns, name))
	})
}

// describeNow is describeOver for the quota as it is now.
func describeNow(ns, name string) string {
	q := &quotav1alpha1.KarmadaQuota{}
	stored := &quotav1alpha1.KarmadaQuotaLedger{}
	var bindings workv1alpha2.ResourceBindingList
	if err := karmada.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, q); err != nil {
		return err.Error()
	}
	if err := karmada.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, stored); err != nil {
		stored = nil
	}
	if err := karmada.List(ctx, &bindings, client.InNamespace(ns)); err != nil {
		return err.Error()
	}
	return describeOver(q, stored, bindings.Items)
}

// trueClusterUsage sums, per member cluster, what the quota counts of the namespace's bindings there, only the
// resources it limits, leaving out zeros and clusters where nothing is placed.
func trueClusterUsage(g Gomega, q *quotav1alpha1.KarmadaQuota) map[string]resources.List {
	var bindings workv1alpha2.ResourceBindingList
	g.Expect(karmada.List(ctx, &bindings, client.InNamespace(q.Namespace))).To(Succeed())
	sel, err := usage.NewSelector(q.Spec.ScopeSelector)
	g.Expect(err).NotTo(HaveOccurred())
	limited := canonical(q.Spec.Hard)
	sums := map[string]resources.List{}
	for i := range bindings.Items {
		u, err := usage.Of(&bindings.Items[i])
		g.Expect(err).NotTo(HaveOccurred())
		for cluster, used := range u.Charge(sel).Clusters {
			if sums[cluster] == nil {
				sums[cluster] = resources.List{}
			}
			for name := range limited {
				sums[cluster][name] += used[name]
			}
		}
	}
	return positiveClusters(sums)
}

// statusClusters is status.clusters in accounting units, leaving out zeros and clusters where nothing is used.
func statusClusters(status quotav1alpha1.KarmadaQuotaStatus) map[string]resources.List {
	sums := map[string]resources.List{}
	for _, c := range status.Clusters {
		sums[c.Name] = canonical(c.Used)
	}
	return positiveClusters(sums)
}

func positiveClusters(sums map[string]resources.List) map[string]resources.List {
	out := map[string]resources.List{}
	for cluster, l := range sums {
		if p := l.Positive(); p != nil {
			out[cluster] = p
		}
	}
	return out
}

// expectMembersRunPlaced waits until each member runs, in the namespace, pods whose requests add up to what the
// bindings place there, leaving out what Karmada itself left behind: a Work whose binding is gone (see
// orphanedWorkloads). It returns those, per member, for the figures.
func expectMembersRunPlaced(ns string) (orphans map[string][]string) {
	GinkgoHelper()
	compute := []corev1.ResourceName{"requests.cpu", "requests.memory", "pods"}
	Eventually(func(g Gomega) {
		var bindings workv1alpha2.ResourceBindingList
		g.Expect(karmada.List(ctx, &bindings, client.InNamespace(ns))).To(Succeed())
		placed := map[string]resources.List{}
		for i := range bindings.Items {
			u, err := usage.Of(&bindings.Items[i])
			g.Expect(err).NotTo(HaveOccurred())
			for cluster, used := range u.Charge(usage.Selector{}).Clusters {
				if placed[cluster] == nil {
					placed[cluster] = resources.List{}
				}
				for _, name := range compute {
					placed[cluster][name] += used[name]
				}
			}
		}
		orphans = orphanedWorkloads(g, ns, bindings.Items)
		for _, m := range memberNames() {
			running := memberRunningRequests(g, ns, m, orphans[m]...)
			g.Expect(running.Positive()).To(Equal(placed[m].Positive()), "pods running in %s, against what is placed there; by workload:\n%s",
				m, workloadsDiff(g, ns, m, bindings.Items))
		}
	}).WithTimeout(settleTimeout).WithPolling(time.Second).Should(Succeed(), "the members run what is placed")
	return orphans
}

// orphanedWorkloads lists, per member, the workloads of the namespace that Karmada applied there for a binding that
// is gone, and left running. Karmada v1.18.2 does so when a Deployment is deleted a second after its first
// placement: its binding controller can create a Work after the binding's cleanup ran, and nothing removes it; or
// its execution controller applies a Work to the member just as the Work is deleted, before marking it Applied,
// and so does not delete what it applied. Either way the workload keeps running in the member with nothing placed,
// and nothing charged, as no binding asks for it: a Work left without a deletionTimestamp after its template and
// binding were deleted within milliseconds of its creation (karmada-io/karmada#7896, open; #4483 before it). That
// is Karmada's, and what a quota makes of it is issue 15's business (what the members run); here it is counted and
// reported, not hidden. Karmada's annotation on what it
// applies names the binding.
func orphanedWorkloads(g Gomega, ns string, bindings []workv1alpha2.ResourceBinding) map[string][]string {
	alive := map[string]bool{}
	for _, rb := range bindings {
		alive[rb.Name] = true
	}
	orphans := map[string][]string{}
	for _, m := range memberNames() {
		var deployments appsv1.DeploymentList
		g.Expect(members[m].List(ctx, &deployments, client.InNamespace(ns))).To(Succeed())
		for _, d := range deployments.Items {
			if name, ok := d.Annotations[workv1alpha2.ResourceBindingNameAnnotationKey]; ok && !alive[name] {
				orphans[m] = append(orphans[m], d.Name)
			}
		}
	}
	return orphans
}

// workloadsDiff lists, for a failure message, each workload whose running pods in a member differ from what its
// binding places there.
func workloadsDiff(g Gomega, ns, member string, bindings []workv1alpha2.ResourceBinding) string {
	var pods corev1.PodList
	g.Expect(members[member].List(ctx, &pods, client.InNamespace(ns))).To(Succeed())
	running := map[string]int32{}
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			running[p.Labels["app"]]++
		}
	}
	placed := map[string]int32{}
	for _, rb := range bindings {
		for _, tc := range rb.Spec.Clusters {
			if tc.Name == member {
				placed[rb.Spec.Resource.Name] += tc.Replicas
			}
		}
	}
	var out []string
	for _, name := range slices.Sorted(maps.Keys(mergeKeys(running, placed))) {
		if running[name] != placed[name] {
			out = append(out, fmt.Sprintf("  %s: %d running, %d placed", name, running[name], placed[name]))
		}
	}
	return strings.Join(out, "\n")
}

func mergeKeys(a, b map[string]int32) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// controllerLeader returns the quota-controller pod that holds the controller's Lease, and the Lease's holder
// identity. In a cluster the identity starts with the pod's name, its hostname; local-kubelet runs pods as
// processes of the machine, whose hostname they all share, so there the leader is the pod whose metrics say it
// leads (controller-runtime's leader_election_master_status).
func controllerLeader(g Gomega) (localkarmada.HostPod, string) {
	lease := &coordinationv1.Lease{}
	g.Expect(karmada.Get(ctx, client.ObjectKey{Namespace: "karmada-system", Name: "karmada-quota-controller"}, lease)).To(Succeed())
	g.Expect(lease.Spec.HolderIdentity).NotTo(BeNil(), "nobody holds the Lease")
	identity := *lease.Spec.HolderIdentity
	g.Expect(identity).NotTo(BeEmpty(), "nobody holds the Lease")
	pods, err := env.DeploymentPods(ctx, localkarmada.KarmadaNamespace, localkarmada.QuotaControllerDeployment)
	g.Expect(err).NotTo(HaveOccurred())
	var leaders []localkarmada.HostPod
	for _, p := range pods {
		if strings.HasPrefix(identity, p.Name+"_") || leads(p) {
			leaders = append(leaders, p)
		}
	}
	g.Expect(leaders).To(HaveLen(1), "the pod holding the Lease (%s)", identity)
	return leaders[0], identity
}

// leads reports whether a quota-controller pod says, on its metrics port, that it holds the Lease.
func leads(p localkarmada.HostPod) bool {
	port, ok := p.Ports["metrics"]
	if !ok || len(p.PIDs) == 0 {
		return false
	}
	hc := &http.Client{Timeout: 2 * time.Second}
	resp, err := hc.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return err == nil && strings.Contains(string(body), `leader_election_master_status{name="karmada-quota-controller"} 1`)
}

func clusterReady(g Gomega, name string) bool {
	var cluster clusterv1alpha1.Cluster
	g.Expect(karmada.Get(ctx, client.ObjectKey{Name: name}, &cluster)).To(Succeed())
	return meta.IsStatusConditionTrue(cluster.Status.Conditions, clusterv1alpha1.ClusterConditionReady)
}

// unblockUnjoin does what an admin draining a member Karmada is deleting does. In the spec's namespace it scales
// every Deployment whose binding still places replicas there back to the replicas it has placed, so that the
// scheduler's move off the member asks for nothing more and the quota admits it. Elsewhere, it asks the scheduler
// to place again every binding still placing there (spec.rescheduleTriggeredAt): Karmada moves most bindings off
// a deleted cluster by itself, but a CI run found two it had left there, which held the Cluster. It returns what
// it did.
func unblockUnjoin(ns, member string) []string {
	GinkgoHelper()
	var bindings workv1alpha2.ResourceBindingList
	Expect(karmada.List(ctx, &bindings)).To(Succeed())
	var scaled []string
	orphans := map[string][]workv1alpha2.ResourceBinding{}
	gone := map[string]bool{} // namespace → gone, read once each
	for _, rb := range bindings.Items {
		if !rb.Spec.TargetContains(member) {
			continue
		}
		if rb.Namespace != ns {
			if _, read := gone[rb.Namespace]; !read {
				err := karmada.Get(ctx, client.ObjectKey{Name: rb.Namespace}, &corev1.Namespace{})
				gone[rb.Namespace] = apierrors.IsNotFound(err)
			}
			if gone[rb.Namespace] {
				orphans[rb.Namespace] = append(orphans[rb.Namespace], rb)
				continue
			}
			patch := fmt.Sprintf(`{"spec":{"rescheduleTriggeredAt":%q}}`, time.Now().UTC().Format(time.RFC3339))
			Expect(karmada.Patch(ctx, &rb, client.RawPatch(apitypes.MergePatchType, []byte(patch)))).To(Succeed())
			scaled = append(scaled, fmt.Sprintf("%s/%s rescheduled", rb.Namespace, rb.Name))
			continue
		}
		if rb.Spec.Resource.Kind != "Deployment" {
			continue
		}
		replicas := placedReplicas(&rb)
		if rb.Spec.Placement != nil && rb.Spec.Placement.ReplicaSchedulingType() == policyv1alpha1.ReplicaSchedulingTypeDuplicated {
			replicas = rb.Spec.Clusters[0].Replicas
		}
		scale(ns, rb.Spec.Resource.Name, replicas)
		scaled = append(scaled, fmt.Sprintf("%s to %d", rb.Spec.Resource.Name, replicas))
	}
	for namespace, bindings := range orphans {
		scaled = append(scaled, releaseOrphans(namespace, bindings))
	}
	return scaled
}

// releaseOrphans frees a member of the bindings of a namespace that is gone (expectNoNamespaceDeleting says how
// they came to be). The apiserver refuses every update to them, as their namespace does not exist, so Karmada can
// neither move nor finish them, and they hold a deleted Cluster for ever. An admin's way out, taken
// here: create the namespace again, delete the bindings, let Karmada finish them (their Works, their finalizer),
// and delete the namespace. What was found is reported, so the leak stays visible.
func releaseOrphans(namespace string, bindings []workv1alpha2.ResourceBinding) string {
	GinkgoHelper()
	found := make([]string, 0, len(bindings))
	for _, rb := range bindings {
		found = append(found, fmt.Sprintf("%s (created %v, deleting since %v, finalizers %v, %d owners, placing %v)",
			rb.Name, rb.CreationTimestamp, rb.DeletionTimestamp, rb.Finalizers, len(rb.OwnerReferences), rb.Spec.Clusters))
	}
	report := fmt.Sprintf("namespace %s is gone, but Karmada left %d of its bindings: %s", namespace, len(found), strings.Join(found, "; "))
	AddReportEntry("bindings Karmada left in a deleted namespace", report)
	GinkgoWriter.Println(report)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	Expect(client.IgnoreAlreadyExists(karmada.Create(ctx, ns))).To(Succeed())
	for i := range bindings {
		Expect(client.IgnoreNotFound(karmada.Delete(ctx, &bindings[i]))).To(Succeed())
	}
	Eventually(func(g Gomega) {
		var left workv1alpha2.ResourceBindingList
		g.Expect(karmada.List(ctx, &left, client.InNamespace(namespace))).To(Succeed())
		g.Expect(left.Items).To(BeEmpty(), "Karmada finished the bindings of %s once it was back", namespace)
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	Expect(client.IgnoreNotFound(karmada.Delete(ctx, ns))).To(Succeed())
	return "released: " + report
}

// unjoinBlockers says what keeps Karmada's cluster controller from removing a deleted Cluster: it waits for the
// member's execution namespace (and the Works in it) to be gone, then for every ResourceBinding and
// ClusterResourceBinding to place nothing there.
func unjoinBlockers(g Gomega, member string) string {
	var blockers []string
	space := "karmada-es-" + member
	var ns corev1.Namespace
	if err := karmada.Get(ctx, client.ObjectKey{Name: space}, &ns); err == nil {
		var works workv1alpha1.WorkList
		g.Expect(karmada.List(ctx, &works, client.InNamespace(space))).To(Succeed())
		names := make([]string, 0, len(works.Items))
		for _, w := range works.Items {
			names = append(names, fmt.Sprintf("%s (finalizers %v)", w.Name, w.Finalizers))
		}
		blockers = append(blockers, fmt.Sprintf("execution namespace %s (%s) with %d Works %v", space, ns.Status.Phase, len(names), names))
	}
	placing := func(what string, obj metav1.Object, spec *workv1alpha2.ResourceBindingSpec, status *workv1alpha2.ResourceBindingStatus) {
		if spec.TargetContains(member) {
			blockers = append(blockers, fmt.Sprintf("%s placing %v (Scheduled: %s; deleting since %v, finalizers %v)",
				what, spec.Clusters, conditionText(meta.FindStatusCondition(status.Conditions, workv1alpha2.Scheduled)),
				obj.GetDeletionTimestamp(), obj.GetFinalizers()))
		}
	}
	var rbs workv1alpha2.ResourceBindingList
	g.Expect(karmada.List(ctx, &rbs)).To(Succeed())
	for i := range rbs.Items {
		rb := &rbs.Items[i]
		// Where its namespace is: a CI run saw bindings of a namespace its spec had deleted long before.
		namespace := "exists"
		var ns corev1.Namespace
		if err := karmada.Get(ctx, client.ObjectKey{Name: rb.Namespace}, &ns); err != nil {
			namespace = err.Error()
		} else if ns.DeletionTimestamp != nil {
			namespace = fmt.Sprintf("deleting since %v: %v", ns.DeletionTimestamp, ns.Status.Conditions)
		}
		placing(fmt.Sprintf("ResourceBinding %s/%s (namespace: %s)", rb.Namespace, rb.Name, namespace), rb, &rb.Spec, &rb.Status)
	}
	var crbs workv1alpha2.ClusterResourceBindingList
	g.Expect(karmada.List(ctx, &crbs)).To(Succeed())
	for i := range crbs.Items {
		crb := &crbs.Items[i]
		placing("ClusterResourceBinding "+crb.Name, crb, &crb.Spec, &crb.Status)
	}
	if len(blockers) == 0 {
		return "nothing Karmada waits for (its cluster controller rechecks every few seconds)"
	}
	return strings.Join(blockers, "; ")
}

func conditionText(c *metav1.Condition) string {
	if c == nil {
		return "none"
	}
	return fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message)
}

// rejoin brings an unjoined member back, whatever state the spec left it in: what kept Karmada from finishing the
// unjoin unblocked, the Cluster object gone, the member joined again and Ready.
func rejoin(ns, member string) {
	GinkgoHelper()
	var cluster clusterv1alpha1.Cluster
	err := karmada.Get(ctx, client.ObjectKey{Name: member}, &cluster)
	if err == nil && cluster.DeletionTimestamp == nil {
		return // joined
	}
	Expect(client.IgnoreNotFound(err)).To(Succeed())
	if err == nil {
		unblockUnjoin(ns, member)
		Eventually(func(g Gomega) {
			gone, err := env.Unjoined(ctx, member)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(gone).To(BeTrue(), "%s's Cluster object deleted; what still holds it: %s", member, unjoinBlockers(g, member))
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	}
	Expect(env.Join(ctx, member)).To(Succeed())
}

// The figures of every fault that ran go to FAULT_REPORT (docs/faults.md), when it is set.
var _ = ReportAfterSuite("fault figures", func(report Report) {
	out := os.Getenv("FAULT_REPORT")
	if out == "" {
		return
	}
	var figures []faultFigures
	for _, spec := range report.SpecReports {
		for _, entry := range spec.ReportEntries {
			if entry.Name != faultFiguresEntry {
				continue
			}
			// In one process the entry keeps the value itself; AsJSON is only filled in when the report crosses
			// processes (ginkgo -p).
			raw := []byte(entry.Value.AsJSON)
			if len(raw) == 0 {
				var err error
				raw, err = json.Marshal(entry.Value.GetRawValue())
				Expect(err).NotTo(HaveOccurred())
			}
			var f faultFigures
			Expect(json.Unmarshal(raw, &f)).To(Succeed(), "the figures of %q", spec.FullText())
			figures = append(figures, f)
		}
	}
	if len(figures) == 0 {
		return
	}
	Expect(os.WriteFile(out, []byte(faultsDoc(figures, report)), 0o644)).To(Succeed())
})

// faultsDoc renders docs/faults.md from the figures of the faults that ran.
// faultsMethod is how every fault is judged, after the sizes faultsDoc writes before it.
const faultsMethod = `every 50 ms throughout; once the load had ended and the fault was healed, each run waited for every binding to
end scheduled or refused, for the quota to hold no reservation with ` + "`status.used` and `status.clusters`" + ` equal to
the bindings' usage computed from scratch, and for the members to run exactly what is placed. That last check
fails a run after the webhook and controller faults; after the faults that take part of Karmada away it is
Karmada's own convergence, and a divergence is reported under the fault instead, with Karmada's open issues
(karmada-io/karmada#2989: Works not synced while their cluster is not ready; #5071: what a binding moved away
from is left in the member). Workloads Karmada left running for bindings that are gone (karmada-io/karmada#7896)
are left out of the comparison and listed.
A run also fails unless the quota was contended (the scheduler saw refusals, and used + reserved came within
one replica's charge of hard), and when any of Karmada's placements failed for want of a webhook's decision
outside an outage of the karmada-apiserver or its etcd, bar the calls in flight to a killed webhook replica (which
end in EOF, and the karmada-apiserver does not retry).
`

func faultsDoc(figures []faultFigures, report Report) string {
	sort.SliceStable(figures, func(i, j int) bool { return faultOrder(figures[i].Fault) < faultOrder(figures[j].Fault) })
	command := os.Getenv("FAULT_COMMAND")
	if command == "" {
		command = fmt.Sprintf("FAULT_OPS=%d FAULT_RATE=%g go test ./test/e2e/... -ginkgo.label-filter=faults", faultOps, faultRate)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Faults under load: figures\n\n")
	fmt.Fprintf(&b, "Generated by `%s` (%s, %d CPUs, %s): do not edit by hand. The specs are in\n", command,
		runtime.GOOS+"/"+runtime.GOARCH, runtime.NumCPU(), time.Now().UTC().Format("2006-01-02"))
	fmt.Fprintf(&b, "[test/e2e/faults_test.go](../test/e2e/faults_test.go); the suite ran %s, %d of %d faults passing.\n\n",
		report.RunTime.Round(time.Second), passed(report), len(figures))
	fmt.Fprintf(&b, "Each fault was injected once, a quarter into a load of %d user operations (%d workers creating Deployments with\n", faultOps, faultWorkers)
	fmt.Fprintf(&b, "their PropagationPolicies, a third Duplicated on both members and the rest Divided, scaling them between 0 and 4\n")
	fmt.Fprintf(&b, "replicas of 500m or 1 CPU, deleting them; at most %d at once), %g per second or spread over the time the fault\n", faultMaxLive, faultRate)
	fmt.Fprintf(&b, "needs, into a namespace whose quota (`%s`) part of the load exceeds. A sampler read the quota and the bindings\n", quotaString(faultHard()))
	b.WriteString(faultsMethod + "\n")

	b.WriteString("| fault | operations (create/scale/delete) | failed | scheduler: scheduled / refused / failed otherwise | bindings ended: scheduled / refused | max used+reserved (cpu, pods) | max placed (cpu, pods) | hard | load | settled in |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, f := range figures {
		fmt.Fprintf(&b, "| %s | %d (%d/%d/%d) | %d | %d / %d / %d | %d / %d | %s, %s | %s, %s | %s, %s | %.0fs | %.1fs |\n",
			f.Fault, f.Ops, f.Creates, f.Scales, f.Deletes, f.failed(), f.Scheduled, f.Refused, f.SchedulingFailed,
			f.EndScheduled, f.EndRefused, f.MaxAdmitted["requests.cpu"], f.MaxAdmitted["pods"],
			f.MaxPlaced["requests.cpu"], f.MaxPlaced["pods"], f.Hard["requests.cpu"], f.Hard["pods"], f.LoadSeconds, f.SettleSeconds)
	}
	b.WriteString("\n## Per fault\n")
	for _, f := range figures {
		fmt.Fprintf(&b, "\n### %s\n\n", f.Fault)
		for _, n := range f.Notes {
			fmt.Fprintf(&b, "- %s.\n", n)
		}
		if f.failed() == 0 {
			b.WriteString("- No user operation failed.\n")
		} else {
			fmt.Fprintf(&b, "- User operations failed: %s; for instance:\n", counts(f.Failed))
			for _, m := range f.FailureSamples {
				fmt.Fprintf(&b, "  - `%s`\n", m)
			}
		}
		if f.SchedulingFailed > 0 {
			fmt.Fprintf(&b, "- Scheduling attempts that failed otherwise than by the quota, retried by Karmada's scheduler: %s; for instance:\n",
				counts(f.SchedulingFailures))
			for _, m := range f.SchedulingFailureSamples {
				fmt.Fprintf(&b, "  - `%s`\n", m)
			}
		}
		fmt.Fprintf(&b, "- The sampler read the quota and the bindings %d times (%d times they could not be read).\n", f.Samples, f.Unreadable)
	}
	return b.String()
}

func passed(report Report) int {
	n := 0
	for _, spec := range report.SpecReports {
		for _, entry := range spec.ReportEntries {
			if entry.Name == faultFiguresEntry && spec.State.Is(types.SpecStatePassed) {
				n++
			}
		}
	}
	return n
}

// counts renders a count per reason, largest first.
func counts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] || m[keys[i]] == m[keys[j]] && keys[i] < keys[j] })
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d %s", m[k], k))
	}
	return strings.Join(parts, ", ")
}

func quotaString(l corev1.ResourceList) string {
	names := make([]string, 0, len(l))
	for name := range l {
		names = append(names, string(name))
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, name := range names {
		q := l[corev1.ResourceName(name)]
		parts = append(parts, name+": "+q.String())
	}
	return strings.Join(parts, ", ")
}

func faultOrder(name string) int {
	for i, n := range []string{"karmada-apiserver restarted", "etcd restarted", "one of two webhook replicas killed",
		"the controller's leader killed", "member apiserver down", "member unjoined"} {
		if n == name {
			return i
		}
	}
	return 100
}
