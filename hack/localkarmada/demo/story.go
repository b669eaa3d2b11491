package demo

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	policyv1alpha1 "github.com/karmada-io/karmada/pkg/apis/policy/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/hack/localkarmada"
	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
)

// story runs the steps in order; the first that fails ends the demo.
func (d *demo) story(ctx context.Context) error {
	d.intro()
	steps := []struct {
		title string
		run   func(context.Context) error
	}{
		{"An admin gives business A 100 CPU across all member clusters", d.adminGivesQuota},
		{"The team deploys web (Divided) and cache (Duplicated) and looks at the usage", d.teamDeploys},
		{"A deployment that would exceed the quota is refused", d.overQuotaRefused},
		{"Scaling web down frees quota: batch is scheduled without anyone touching it", d.scaleDownFreesQuota},
	}
	total := len(steps) + 1
	for i, s := range steps {
		d.step(i+1, total, s.title)
		if err := s.run(ctx); err != nil {
			return fmt.Errorf("step %d (%s): %w", i+1, s.title, err)
		}
		d.stepDone()
	}
	d.step(total, total, "What to try next")
	d.whatNext()
	return nil
}

func (d *demo) intro() {
	var members []string
	for _, m := range d.members {
		members = append(members, m.name)
	}
	d.say(fmt.Sprintf("karmada-quota demo on the local Karmada in %s: the karmada-apiserver at %s and member clusters %s, "+
		"each with %d fake nodes of %s CPU. Each step first says what the user does and what to look for, then shows "+
		"what happened, read back from the running system. `karmadactl` below is short for:",
		d.env.Dir, d.env.Karmada.URL, strings.Join(members, " and "), localkarmada.NodesPerMember, localkarmada.NodeCPU))
	d.block(fmt.Sprintf("  %s --kubeconfig %s", d.karmadactlPath, d.env.Karmada.Kubeconfig))
}

// Step 1.
func (d *demo) adminGivesQuota(ctx context.Context) error {
	d.say("The platform admin creates the namespace business-a on the karmada-apiserver and a KarmadaQuota that " +
		"limits everything the namespace uses, summed over all member clusters: " + resourceString(quotaHard) + ". " +
		"Look for: `karmadactl get kq` shows used/hard per resource, all at zero, and Ready=True once " +
		"quota-controller has counted.")
	if err := d.removeLeftovers(ctx); err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if err := d.karmada.Create(ctx, ns); err != nil {
		return fmt.Errorf("creating namespace %s: %w", namespace, err)
	}
	d.info("created namespace %s; the admin applies:", namespace)
	d.block(quotaYAML())
	if err := d.karmada.Create(ctx, quota()); err != nil {
		return fmt.Errorf("creating KarmadaQuota %s: %w", quotaName, err)
	}
	if err := d.waitQuotaSettled(ctx, 0); err != nil {
		return err
	}
	return d.karmadactl(ctx, "get", "kq", "-n", namespace)
}

// quotaYAML is the quota of step 1 as the admin would write it.
func quotaYAML() string {
	var hard []string
	for _, name := range sortedKeys(quotaHard) {
		q := quotaHard[name]
		value := q.String()
		// YAML would read a bare number as one; Kubernetes wants quantities as strings.
		if _, err := strconv.ParseFloat(value, 64); err == nil {
			value = strconv.Quote(value)
		}
		hard = append(hard, fmt.Sprintf("    %s: %s", name, value))
	}
	return fmt.Sprintf(`
apiVersion: %s
kind: KarmadaQuota
metadata:
  name: %s
  namespace: %s
spec:
  hard:
%s
`, quotav1alpha1.GroupVersion, quotaName, namespace, strings.Join(hard, "\n"))
}

// removeLeftovers deletes the namespace of an earlier run, so the demo starts over every time. Deleting it in
// Karmada deletes everything in it (Karmada's plane runs the namespace controller) and Karmada then removes it
// from the member clusters; the demo waits for all of that, or the pod counts it shows later would include
// leftovers.
func (d *demo) removeLeftovers(ctx context.Context) error {
	ns := &corev1.Namespace{}
	err := d.karmada.Get(ctx, client.ObjectKey{Name: namespace}, ns)
	if apierrors.IsNotFound(err) {
		return d.waitMembersForget(ctx)
	}
	if err != nil {
		return fmt.Errorf("reading namespace %s: %w", namespace, err)
	}
	d.info("namespace %s is left over from an earlier run: deleting it, and with it everything in it, first", namespace)
	if err := d.karmada.Delete(ctx, ns); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting namespace %s: %w", namespace, err)
	}
	// The namespace controller waits 5s before its first pass over a deleted namespace, and 5s more whenever a
	// pass leaves objects with finalizers behind: PropagationPolicies and ResourceBindings carry Karmada's. Deleting
	// the Deployments and the policies right away lets Karmada release them during the first wait, so that pass
	// finds nothing left and the namespace goes at once.
	for kind, obj := range map[string]client.Object{"Deployments": &appsv1.Deployment{}, "PropagationPolicies": &policyv1alpha1.PropagationPolicy{}} {
		if err := d.karmada.DeleteAllOf(ctx, obj, client.InNamespace(namespace)); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting the %s in %s: %w", kind, namespace, err)
		}
	}
	if err := d.waitFor(ctx, fmt.Sprintf("namespace %s to be gone from the karmada-apiserver", namespace),
		func(ctx context.Context) (bool, string, error) {
			err := d.karmada.Get(ctx, client.ObjectKey{Name: namespace}, ns)
			if apierrors.IsNotFound(err) {
				return true, "gone", nil
			}
			if err != nil {
				return false, "", err
			}
			return false, namespaceState(ns), nil
		}); err != nil {
		return err
	}
	return d.waitMembersForget(ctx)
}

// waitMembersForget waits until no member cluster has the namespace. Karmada removes it from the members once
// it is gone from the karmada-apiserver; a member namespace still Active after that (made by hand, or by a
// Karmada that was stopped mid-way) is deleted here, since the demo owns the name.
func (d *demo) waitMembersForget(ctx context.Context) error {
	present := false
	for _, m := range d.members {
		ns := &corev1.Namespace{}
		err := m.client.Get(ctx, client.ObjectKey{Name: namespace}, ns)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading namespace %s in %s: %w", namespace, m.name, err)
		}
		present = true
	}
	if !present {
		return nil
	}
	return d.waitFor(ctx, fmt.Sprintf("namespace %s to be gone from the member clusters", namespace),
		func(ctx context.Context) (bool, string, error) {
			var states []string
			for _, m := range d.members {
				ns := &corev1.Namespace{}
				err := m.client.Get(ctx, client.ObjectKey{Name: namespace}, ns)
				if apierrors.IsNotFound(err) {
					continue
				}
				if err != nil {
					return false, "", err
				}
				if ns.DeletionTimestamp == nil && time.Since(ns.CreationTimestamp.Time) > 10*time.Second {
					// Not being deleted, and not one Karmada is still creating for a namespace that came and went.
					if err := m.client.Delete(ctx, ns); err != nil && !apierrors.IsNotFound(err) {
						return false, "", err
					}
				}
				states = append(states, m.name+": "+namespaceState(ns))
			}
			if len(states) == 0 {
				return true, "gone", nil
			}
			return false, strings.Join(states, "; "), nil
		})
}

func namespaceState(ns *corev1.Namespace) string {
	state := string(ns.Status.Phase)
	for _, c := range ns.Status.Conditions {
		if c.Status == corev1.ConditionTrue && c.Message != "" {
			state += ": " + c.Message
		}
	}
	return state
}

// Step 2.
func (d *demo) teamDeploys(ctx context.Context) error {
	used := web.cpuUsed() + cacheStore.cpuUsed()
	d.say(fmt.Sprintf("The team deploys two workloads, each a Deployment with a PropagationPolicy. web runs %d replicas "+
		"of %s CPU, Divided 1:1 between the %d member clusters, so %d in each: %d CPU. cache runs %d replicas of %s CPU, "+
		"Duplicated, so all %d run in each cluster: %d clusters x %d x %s CPU = %d CPU. Together %d of the %d. "+
		"Look for: %d/%d CPU in `karmadactl get kq`, %d CPU in each cluster, and the quota's per-cluster numbers "+
		"matching the pods that really run in each member.",
		web.replicas, web.cpu, clusters, web.replicas/clusters, web.cpuUsed(),
		cacheStore.replicas, cacheStore.cpu, cacheStore.replicas, clusters, cacheStore.replicas, cacheStore.cpu, cacheStore.cpuUsed(),
		used, hardCPU(), used, hardCPU(), used/clusters))
	for _, w := range []workload{web, cacheStore} {
		if err := d.deploy(ctx, w); err != nil {
			return err
		}
	}
	for _, w := range []workload{web, cacheStore} {
		if err := d.waitScheduled(ctx, w); err != nil {
			return err
		}
	}
	if err := d.waitQuotaSettled(ctx, used); err != nil {
		return err
	}
	if err := d.waitMembersRun(ctx, web, cacheStore); err != nil {
		return err
	}
	if err := d.karmadactl(ctx, "get", "kq", "-n", namespace); err != nil {
		return err
	}
	if err := d.usageTable(ctx); err != nil {
		return err
	}
	d.info("what a team member reads with the kubectl plugin, with the view role of the namespace: the table of " +
		"`kubectl describe resourcequota`, and the usage per member cluster")
	return d.quotaPlugin(ctx, "describe", quotaName, "-n", namespace)
}

// deploy creates the workload's PropagationPolicy and Deployment on the karmada-apiserver.
func (d *demo) deploy(ctx context.Context, w workload) error {
	var members []string
	for _, m := range d.members {
		members = append(members, m.name)
	}
	policy := w.policy(members)
	if err := d.karmada.Create(ctx, policy); err != nil {
		return fmt.Errorf("creating PropagationPolicy %s: %w", policy.Name, err)
	}
	if err := d.karmada.Create(ctx, w.deployment()); err != nil {
		return fmt.Errorf("creating Deployment %s: %w", w.name, err)
	}
	split := "divided between " + strings.Join(members, " and ")
	if w.duplicated {
		split = "duplicated to each of " + strings.Join(members, " and ")
	}
	d.info("created Deployment %s (%d replicas x %s CPU, %s memory) and PropagationPolicy %s (%s, %s)",
		w.name, w.replicas, w.cpu, w.memory, policy.Name, w.strategy(), split)
	return nil
}

// Step 3.
func (d *demo) overQuotaRefused(ctx context.Context) error {
	used := web.cpuUsed() + cacheStore.cpuUsed()
	d.say(fmt.Sprintf("The team deploys batch: %d replicas of %s CPU, Divided. That would bring business A to %d CPU, "+
		"over its %d. Karmada's scheduler picks clusters as usual, but quota-webhook refuses to let it write the "+
		"placement (HTTP 403, reason QuotaExceeded). Look for: batch's ResourceBinding with condition "+
		"Scheduled=False, reason QuotaExceeded, and a message naming the quota and the CPU; a Warning event "+
		"ScheduleBindingFailed on the Deployment itself, where `kubectl describe deployment batch` shows it; and no "+
		"batch pod anywhere.", batch.replicas, batch.cpu, used+batch.cpuUsed(), hardCPU()))
	if err := d.deploy(ctx, batch); err != nil {
		return err
	}
	var refused *metav1.Condition
	if err := d.waitFor(ctx, fmt.Sprintf("binding %s to be refused for quota", batch.bindingName()),
		func(ctx context.Context) (bool, string, error) {
			rb, err := d.binding(ctx, batch)
			if err != nil {
				return false, "", err
			}
			refused = scheduledCondition(rb)
			done := refused != nil && refused.Status == metav1.ConditionFalse && refused.Reason == workv1alpha2.BindingReasonQuotaExceeded
			return done, bindingState(rb), nil
		}); err != nil {
		return err
	}
	d.heading("ResourceBinding %s, its Scheduled condition, written by karmada-scheduler:", batch.bindingName())
	d.lines(fmt.Sprintf("  status: %s\n  reason: %s\n  message:\n%s", refused.Status, refused.Reason,
		wrap(refused.Message, "    ", lineWidth)))

	var failed []corev1.Event
	if err := d.waitFor(ctx, "a ScheduleBindingFailed event on Deployment "+batch.name,
		func(ctx context.Context) (bool, string, error) {
			events, err := d.events(ctx, "Deployment", batch.name)
			if err != nil {
				return false, "", err
			}
			failed = failed[:0]
			var reasons []string
			for _, e := range events {
				reasons = append(reasons, e.Type+" "+e.Reason)
				if e.Type == corev1.EventTypeWarning && e.Reason == "ScheduleBindingFailed" {
					failed = append(failed, e)
				}
			}
			if len(reasons) == 0 {
				return false, "no events on the Deployment", nil
			}
			return len(failed) > 0, "events: " + strings.Join(reasons, ", "), nil
		}); err != nil {
		return err
	}
	d.heading("Events on Deployment %s/%s (what `kubectl describe deployment %s` lists):", namespace, batch.name, batch.name)
	for _, e := range failed {
		d.lines(eventString(e))
	}
	d.info("(karmada-scheduler records its events under its scheduler name, default-scheduler; it retries the " +
		"binding, and each refusal adds to the count.)")
	d.paragraphEnd()
	d.info("the team asks why batch does not run: the quota that refuses it, what is short and by how much, and " +
		"whether it can ever fit")
	if err := d.quotaPlugin(ctx, "why", "deployment/"+batch.name, "-n", namespace); err != nil {
		return err
	}
	if err := d.waitQuotaSettled(ctx, used); err != nil {
		return err
	}
	var counts []string
	for _, m := range d.members {
		pods, err := d.podsIn(ctx, m)
		if err != nil {
			return err
		}
		if n := pods.running[batch.name]; n != 0 {
			return fmt.Errorf("%s runs %d pods of batch, which was refused", m.name, n)
		}
		counts = append(counts, fmt.Sprintf("%s %d", m.name, pods.running[batch.name]))
	}
	d.info("the refused placement reserved nothing: the quota still shows %d CPU used. batch pods running: %s. "+
		"The binding waits; Karmada's scheduler keeps retrying it with a growing back-off.", used, strings.Join(counts, ", "))
	return nil
}

// Step 4.
func (d *demo) scaleDownFreesQuota(ctx context.Context) error {
	scaledWeb := web.scaledTo(webScaledTo)
	before := web.cpuUsed() + cacheStore.cpuUsed()
	freed := web.cpuUsed() - scaledWeb.cpuUsed()
	after := before - freed + batch.cpuUsed()
	d.say(fmt.Sprintf("The team scales web from %d to %d replicas; nobody touches batch. Karmada shrinks web's "+
		"placement; quota-controller recounts (%d - %d = %d CPU used), sees that batch's %d CPU now fit, and requeues "+
		"it by setting its spec.rescheduleTriggeredAt; Karmada's scheduler places batch again and this time "+
		"quota-webhook admits it. Look for: the live timeline below, in seconds since the scale-down; then %d/%d "+
		"CPU used and batch's %d pods running, %d in each cluster.", web.replicas, scaledWeb.replicas,
		before, freed, before-freed, batch.cpuUsed(), after, hardCPU(), batch.replicas, batch.replicas/clusters))
	watchCtx, stopWatching := context.WithCancel(ctx)
	defer stopWatching()
	tl, err := d.watchTimeline(watchCtx, web.bindingName(), batch.bindingName())
	if err != nil {
		return err
	}
	d.heading("The team runs the command below. The lines under it are the changes it sets off, in seconds since it " +
		"started, as the karmada-apiserver's watches report them:")
	tl.begin()
	if err := d.karmadactl(ctx, "patch", "deployment", web.name, "-n", namespace, "--type", "merge",
		"-p", fmt.Sprintf(`{"spec":{"replicas":%d}}`, webScaledTo)); err != nil {
		return err
	}
	if err := d.waitFor(ctx, "batch to be scheduled and the quota to settle",
		func(ctx context.Context) (bool, string, error) {
			var states []string
			done := true
			for _, w := range []workload{scaledWeb, batch} {
				rb, err := d.binding(ctx, w)
				if err != nil {
					return false, "", err
				}
				done = done && rb.Spec.Replicas == w.replicas && fullyScheduled(rb, w, len(d.members))
				state := bindingState(rb)
				if c := scheduledCondition(rb); c != nil && c.Status == metav1.ConditionFalse {
					// Why it still waits, in the scheduler's words: the message names what the quota charged.
					state += fmt.Sprintf(", generation %d: %s", rb.Generation, c.Message)
				}
				states = append(states, state)
			}
			q, err := d.quota(ctx)
			if err != nil {
				return false, "", err
			}
			reservations, err := d.reservations(ctx)
			if err != nil {
				return false, "", err
			}
			used := q.Status.Used[corev1.ResourceCPU]
			done = done && used.Cmp(*resource.NewQuantity(after, resource.DecimalSI)) == 0 && len(reservations) == 0 &&
				meta.IsStatusConditionTrue(q.Status.Conditions, quotav1alpha1.ConditionReady)
			states = append(states, "quota: "+quotaState(q, reservations))
			return done, strings.Join(states, "; "), nil
		}); err != nil {
		return err
	}
	// The timeline may still be printing the last change; the waits below read the same state from the
	// apiserver, so it can stop now.
	stopWatching()

	scheduledAt, scheduled := tl.scheduled(batch.bindingName())
	requeuedAt, requeued := tl.requeued(batch.bindingName())
	switch {
	case scheduled && requeued:
		d.heading("from the scale-down to batch Scheduled=True: %.2fs; quota-controller requeued batch %.2fs after the scale-down.",
			scheduledAt.Seconds(), requeuedAt.Seconds())
	case scheduled:
		d.heading("from the scale-down to batch Scheduled=True: %.2fs. karmada-scheduler's own retry got there before "+
			"quota-controller's requeue.", scheduledAt.Seconds())
	default:
		d.heading("batch is scheduled, %.2fs after the scale-down (the watch did not report the moment it turned Scheduled=True).", tl.since().Seconds())
	}
	if err := d.showRequeueEvents(ctx); err != nil {
		return err
	}
	if err := d.waitMembersRun(ctx, scaledWeb, cacheStore, batch); err != nil {
		return err
	}
	if err := d.karmadactl(ctx, "get", "kq", "-n", namespace); err != nil {
		return err
	}
	if err := d.usageTable(ctx); err != nil {
		return err
	}
	d.info("what a team member reads with the kubectl plugin, with the view role of the namespace: the table of " +
		"`kubectl describe resourcequota`, and the usage per member cluster")
	return d.quotaPlugin(ctx, "describe", quotaName, "-n", namespace)
}

// showRequeueEvents prints the events quota-controller recorded on the quota when it requeued a binding.
func (d *demo) showRequeueEvents(ctx context.Context) error {
	events, err := d.events(ctx, "KarmadaQuota", quotaName)
	if err != nil {
		return fmt.Errorf("listing events on KarmadaQuota %s: %w", quotaName, err)
	}
	var requeues []corev1.Event
	for _, e := range events {
		if e.Reason == "BindingRequeued" {
			requeues = append(requeues, e)
		}
	}
	if len(requeues) == 0 {
		return nil
	}
	d.heading("Events on KarmadaQuota %s/%s:", namespace, quotaName)
	for _, e := range requeues {
		d.lines(eventString(e))
	}
	d.paragraphEnd()
	return nil
}

// Step 5.
func (d *demo) whatNext() {
	kcDir := filepath.Dir(d.env.Karmada.Kubeconfig)
	// kubeconfig names a kubeconfig through $KC when it lives there, as all of `make up`'s do.
	kubeconfig := func(path string) string {
		if filepath.Dir(path) == kcDir {
			return "$KC/" + filepath.Base(path)
		}
		return path
	}
	karmadactl := "karmadactl"
	setup := fmt.Sprintf("export PATH=%s:$PATH KC=%s", filepath.Dir(d.karmadactlPath), kcDir)
	if filepath.Base(d.karmadactlPath) != "karmadactl" {
		karmadactl, setup = d.karmadactlPath, "export KC="+kcDir
	}
	// The final state of step 4, and a scale-up of the Duplicated cache that would go over the quota.
	used := web.scaledTo(webScaledTo).cpuUsed() + cacheStore.cpuUsed() + batch.cpuUsed()
	const more = 5
	biggerCache := cacheStore.scaledTo(cacheStore.replicas + more)
	karmada := karmadactl + " --kubeconfig " + kubeconfig(d.env.Karmada.Kubeconfig)
	kubectl := "kubectl --kubeconfig " + kubeconfig(d.env.Karmada.Kubeconfig)
	d.say("business-a stays as it is, so you can look around. First put this environment's karmadactl on your PATH " +
		"and name its kubeconfig folder (kubectl works the same way against the karmada-apiserver):")
	d.block(fmt.Sprintf(`  %[1]s

  # the quota: status.used, status.clusters[], reservations, conditions
  %[2]s get kq %[4]s -n %[5]s -o yaml

  # where Karmada placed each workload, and each binding's Scheduled condition
  %[3]s get resourcebindings -n %[5]s -o wide

  # the events on a Deployment (ScheduleBindingFailed while it waited for quota)
  %[2]s describe deployment batch -n %[5]s

  # the pods in each member cluster
  kubectl --kubeconfig %[6]s get pods -n %[5]s
  kubectl --kubeconfig %[7]s get pods -n %[5]s

  # ask for more than fits: cache is Duplicated, so %[8]d more replicas cost %[9]d clusters x %[8]d x %[10]s CPU = %[11]d
  # (%[12]d + %[11]d > %[13]d). The scale-up is refused, cache keeps its %[14]d per cluster, and its binding says why.
  %[2]s patch deployment cache -n %[5]s --type merge -p '{"spec":{"replicas":%[15]d}}'
  %[3]s get resourcebinding cache-deployment -n %[5]s \
      -o jsonpath='{.status.conditions[?(@.type=="Scheduled")].message}'
  # or, as the team would ask it, with the kubectl plugin (bin/kubectl-karmada-quota, `+"`make build`"+`):
  kubectl-karmada-quota why deployment/cache -n %[5]s --kubeconfig %[16]s
  kubectl-karmada-quota top -A --kubeconfig %[16]s

  # start over (the demo deletes business-a first), or stop everything `+"`make up`"+` started
  make demo
  make down`, setup, karmada, kubectl, quotaName, namespace,
		kubeconfig(d.members[0].kubeconfig), kubeconfig(d.members[1].kubeconfig),
		more, clusters, cacheStore.cpu, biggerCache.cpuUsed()-cacheStore.cpuUsed(), used, hardCPU(),
		cacheStore.replicas, biggerCache.replicas, kubeconfig(d.env.Karmada.Kubeconfig)))
}
