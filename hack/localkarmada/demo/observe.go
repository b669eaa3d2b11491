package demo

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
)

// binding reads the ResourceBinding Karmada made for the workload's Deployment.
func (d *demo) binding(ctx context.Context, w workload) (*workv1alpha2.ResourceBinding, error) {
	rb := &workv1alpha2.ResourceBinding{}
	err := d.karmada.Get(ctx, client.ObjectKey{Namespace: namespace, Name: w.bindingName()}, rb)
	return rb, err
}

func (d *demo) quota(ctx context.Context) (*quotav1alpha1.KarmadaQuota, error) {
	q := &quotav1alpha1.KarmadaQuota{}
	err := d.karmada.Get(ctx, client.ObjectKey{Namespace: namespace, Name: quotaName}, q)
	return q, err
}

// reservations lists the admissions the quota's ledger holds for the controller to observe; none before the first.
func (d *demo) reservations(ctx context.Context) ([]quotav1alpha1.Reservation, error) {
	stored := &quotav1alpha1.KarmadaQuotaLedger{}
	if err := d.karmada.Get(ctx, client.ObjectKey{Namespace: namespace, Name: quotaName}, stored); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return stored.Reservations, nil
}

// placement is how many replicas the binding places in each member cluster.
func placement(rb *workv1alpha2.ResourceBinding) map[string]int32 {
	placed := map[string]int32{}
	for _, c := range rb.Spec.Clusters {
		placed[c.Name] += c.Replicas
	}
	return placed
}

// placementString renders a placement as "member1 20, member2 20".
func placementString(clusters []workv1alpha2.TargetCluster) string {
	if len(clusters) == 0 {
		return "nowhere"
	}
	parts := make([]string, len(clusters))
	for i, c := range clusters {
		parts[i] = fmt.Sprintf("%s %d", c.Name, c.Replicas)
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

func scheduledCondition(rb *workv1alpha2.ResourceBinding) *metav1.Condition {
	return meta.FindStatusCondition(rb.Status.Conditions, workv1alpha2.Scheduled)
}

func conditionString(c *metav1.Condition) string {
	if c == nil {
		return "no Scheduled condition yet"
	}
	return fmt.Sprintf("Scheduled=%s (%s)", c.Status, c.Reason)
}

// bindingState describes a binding in one line, for progress and timeout messages.
func bindingState(rb *workv1alpha2.ResourceBinding) string {
	state := fmt.Sprintf("binding %s: spec.replicas %d, placed %s, %s", rb.Name, rb.Spec.Replicas,
		placementString(rb.Spec.Clusters), conditionString(scheduledCondition(rb)))
	if c := scheduledCondition(rb); c != nil && c.Status == metav1.ConditionTrue && rb.Status.SchedulerObservedGeneration != rb.Generation {
		// Scheduled=True may still describe an earlier spec (before a scale-down, say) until the scheduler catches up.
		state += fmt.Sprintf(", but for generation %d, not yet the current %d", rb.Status.SchedulerObservedGeneration, rb.Generation)
	}
	return state
}

// fullyScheduled reports whether the scheduler has placed every replica of the binding's current spec: the
// Scheduled condition alone is not enough, it stays True from the previous placement while a scale-down waits to
// be scheduled.
func fullyScheduled(rb *workv1alpha2.ResourceBinding, w workload, members int) bool {
	c := scheduledCondition(rb)
	if c == nil || c.Status != metav1.ConditionTrue || rb.Status.SchedulerObservedGeneration != rb.Generation {
		return false
	}
	placed := placement(rb)
	if w.duplicated {
		if len(placed) != members {
			return false
		}
		for _, n := range placed {
			if n != rb.Spec.Replicas {
				return false
			}
		}
		return true
	}
	var sum int32
	for _, n := range placed {
		sum += n
	}
	return sum == rb.Spec.Replicas
}

// waitScheduled waits until the workload's binding places all its replicas.
func (d *demo) waitScheduled(ctx context.Context, w workload) error {
	return d.waitFor(ctx, fmt.Sprintf("Karmada to schedule %s (binding %s)", w.name, w.bindingName()),
		func(ctx context.Context) (bool, string, error) {
			rb, err := d.binding(ctx, w)
			if err != nil {
				return false, "", err
			}
			return fullyScheduled(rb, w, len(d.members)), bindingState(rb), nil
		})
}

// quotaState describes the quota's status, and the reservations its ledger holds, in one line.
func quotaState(q *quotav1alpha1.KarmadaQuota, reservations []quotav1alpha1.Reservation) string {
	ready := "unknown"
	if c := meta.FindStatusCondition(q.Status.Conditions, quotav1alpha1.ConditionReady); c != nil {
		ready = string(c.Status)
	}
	reserved := "nothing"
	if len(reservations) > 0 {
		// Whose admissions are still unsettled tells, when a wait fails, which write the quota is holding room for.
		var holders []string
		for _, r := range reservations {
			holders = append(holders, fmt.Sprintf("%s at generation %d", r.ReservedBy.Name, r.Generation))
		}
		reserved = fmt.Sprintf("%s (for %s)", resourceString(q.Status.Reserved), strings.Join(holders, ", "))
	}
	return fmt.Sprintf("used %s; reserved %s; Ready=%s", resourceString(q.Status.Used), reserved, ready)
}

// waitQuotaSettled waits until the controller has counted everything at the given CPU: status current, no
// admission still waiting to be observed.
func (d *demo) waitQuotaSettled(ctx context.Context, cpu int64) error {
	want := *resource.NewQuantity(cpu, resource.DecimalSI)
	return d.waitFor(ctx, fmt.Sprintf("KarmadaQuota %s to show %d CPU used", quotaName, cpu),
		func(ctx context.Context) (bool, string, error) {
			q, err := d.quota(ctx)
			if err != nil {
				return false, "", err
			}
			reservations, err := d.reservations(ctx)
			if err != nil {
				return false, "", err
			}
			used := q.Status.Used[corev1.ResourceCPU]
			done := meta.IsStatusConditionTrue(q.Status.Conditions, quotav1alpha1.ConditionReady) &&
				q.Status.ObservedGeneration == q.Generation && len(reservations) == 0 && used.Cmp(want) == 0
			return done, quotaState(q, reservations), nil
		})
}

// memberPods is what one member cluster runs in the story's namespace, counted in the member itself.
type memberPods struct {
	// running counts the Running pods by their Deployment (the app label).
	running map[string]int32
	// notRunning counts pods still starting or already terminating.
	notRunning int
	// cpu and memory sum the requests of the Running pods.
	cpu, memory resource.Quantity
}

func (p memberPods) total() int32 {
	var sum int32
	for _, n := range p.running {
		sum += n
	}
	return sum
}

func (p memberPods) byDeployment() string {
	if len(p.running) == 0 {
		return "none"
	}
	var parts []string
	for _, app := range sortedKeys(p.running) {
		parts = append(parts, fmt.Sprintf("%s %d", app, p.running[app]))
	}
	return strings.Join(parts, ", ")
}

func (d *demo) podsIn(ctx context.Context, m member) (memberPods, error) {
	var pods corev1.PodList
	if err := m.client.List(ctx, &pods, client.InNamespace(namespace)); err != nil {
		return memberPods{}, fmt.Errorf("listing pods in %s: %w", m.name, err)
	}
	counted := memberPods{running: map[string]int32{}}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
			counted.notRunning++
			continue
		}
		counted.running[p.Labels["app"]]++
		for _, c := range p.Spec.Containers {
			counted.cpu.Add(c.Resources.Requests[corev1.ResourceCPU])
			counted.memory.Add(c.Resources.Requests[corev1.ResourceMemory])
		}
	}
	return counted, nil
}

// waitMembersRun waits until every member cluster runs exactly the replicas Karmada placed there for each
// workload, and nothing else: the quota's per-cluster numbers are then checked against what really runs.
func (d *demo) waitMembersRun(ctx context.Context, workloads ...workload) error {
	var names []string
	for _, w := range workloads {
		names = append(names, w.name)
	}
	return d.waitFor(ctx, fmt.Sprintf("the member clusters to run every placed replica of %s", strings.Join(names, ", ")),
		func(ctx context.Context) (bool, string, error) {
			want := map[string]map[string]int32{} // member -> app -> replicas
			for _, w := range workloads {
				rb, err := d.binding(ctx, w)
				if err != nil {
					return false, "", err
				}
				for cluster, n := range placement(rb) {
					if want[cluster] == nil {
						want[cluster] = map[string]int32{}
					}
					want[cluster][w.name] = n
				}
			}
			done := true
			var states []string
			for _, m := range d.members {
				pods, err := d.podsIn(ctx, m)
				if err != nil {
					return false, "", err
				}
				var parts []string
				var wanted int32
				for _, w := range workloads {
					parts = append(parts, fmt.Sprintf("%s %d/%d", w.name, pods.running[w.name], want[m.name][w.name]))
					wanted += want[m.name][w.name]
					done = done && pods.running[w.name] == want[m.name][w.name]
				}
				// Pods of anything else, or pods on their way in or out, would make the table below lie.
				done = done && pods.total() == wanted && pods.notRunning == 0
				state := fmt.Sprintf("%s runs %s", m.name, strings.Join(parts, ", "))
				if pods.notRunning > 0 {
					state += fmt.Sprintf(" (+%d starting or terminating)", pods.notRunning)
				}
				states = append(states, state)
			}
			return done, strings.Join(states, "; "), nil
		})
}

// karmadactl runs the real karmadactl against the karmada-apiserver and prints the command line and its output,
// as a user would see them in a terminal.
func (d *demo) karmadactl(ctx context.Context, args ...string) error {
	return d.command(ctx, "karmadactl", d.karmadactlPath, args)
}

// quotaPlugin runs the kubectl plugin `kubectl karmada quota` against the karmada-apiserver, as a team member
// reads their quota, and prints the command line and its output.
func (d *demo) quotaPlugin(ctx context.Context, args ...string) error {
	return d.command(ctx, "kubectl karmada quota", d.pluginPath, args)
}

// command runs a program with the karmada-apiserver's kubeconfig, shown as shown followed by the arguments.
func (d *demo) command(ctx context.Context, shown, path string, args []string) error {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = shellQuote(a)
	}
	d.write("$ "+shown+" "+strings.Join(quoted, " ")+"\n", true, false)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, append(args, "--kubeconfig", d.env.Karmada.Kubeconfig)...)
	// The output streams into the narration as it comes, so it lands in order with the live timeline of step 4.
	cmd.Stdout, cmd.Stderr = d.narrator, d.narrator
	err := cmd.Run()
	d.paragraphEnd()
	if err != nil {
		return fmt.Errorf("%s %s: %w", shown, strings.Join(args, " "), err)
	}
	return nil
}

// shellQuote quotes an argument the way a user would type it into a shell.
func shellQuote(arg string) string {
	if arg != "" && !strings.ContainsAny(arg, " \t\"'{}[]$*?;&|<>()\\") {
		return arg
	}
	return "'" + strings.ReplaceAll(arg, "'", `'\''`) + "'"
}

// usageTable prints, per member cluster, what the quota charges there next to what the member really runs.
func (d *demo) usageTable(ctx context.Context) error {
	q, err := d.quota(ctx)
	if err != nil {
		return fmt.Errorf("reading KarmadaQuota %s: %w", quotaName, err)
	}
	charged := map[string]corev1.ResourceList{}
	for _, c := range q.Status.Clusters {
		charged[c.Name] = c.Used
	}
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  CLUSTER\tCPU\tMEMORY\tPODS\t|\tPODS RUNNING\tCPU REQUESTED\tBY DEPLOYMENT")
	var runningPods int32
	var runningCPU resource.Quantity
	for _, m := range d.members {
		pods, err := d.podsIn(ctx, m)
		if err != nil {
			return err
		}
		runningPods += pods.total()
		runningCPU.Add(pods.cpu)
		used := charged[m.name]
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t|\t%d\t%s\t%s\n", m.name,
			quantity(corev1.ResourceCPU, used), quantity(corev1.ResourceMemory, used), quantity(corev1.ResourcePods, used),
			pods.total(), cpuString(pods.cpu), pods.byDeployment())
	}
	fraction := func(name corev1.ResourceName) string {
		return quantity(name, q.Status.Used) + "/" + quantity(name, q.Status.Hard)
	}
	fmt.Fprintf(tw, "  all clusters\t%s\t%s\t%s\t|\t%d\t%s\t\n",
		fraction(corev1.ResourceCPU), fraction(corev1.ResourceMemory), fraction(corev1.ResourcePods),
		runningPods, cpuString(runningCPU))
	if err := tw.Flush(); err != nil {
		return err
	}
	var table []string
	for _, line := range strings.Split(strings.TrimRight(buf.String(), "\n"), "\n") {
		table = append(table, strings.TrimRight(line, " "))
	}
	d.block(strings.Join(table, "\n") + "\n" + wrap(fmt.Sprintf("Left of |: what KarmadaQuota %s charges, from its status.clusters[] "+
		"(per cluster) and status.used/status.hard (all clusters). Right of |: the pods Running in each member cluster, "+
		"counted there through the member's own kubeconfig.", quotaName), "  ", lineWidth))
	return nil
}

// quantity renders one resource of a list in the unit a person reads: whole CPUs, Gi for memory.
func quantity(name corev1.ResourceName, list corev1.ResourceList) string {
	q, ok := list[name]
	if !ok {
		return "0"
	}
	switch name {
	case corev1.ResourceCPU:
		return cpuString(q)
	case corev1.ResourceMemory:
		if v := q.Value(); v%(1<<30) == 0 {
			return fmt.Sprintf("%dGi", v>>30)
		}
	}
	return q.String()
}

func cpuString(q resource.Quantity) string {
	if m := q.MilliValue(); m%1000 == 0 {
		return fmt.Sprint(m / 1000)
	}
	return q.String()
}

// resourceString renders a list as "cpu 80, memory 80Gi, pods 60".
func resourceString(list corev1.ResourceList) string {
	if len(list) == 0 {
		return "nothing"
	}
	var parts []string
	for _, name := range sortedKeys(list) {
		parts = append(parts, fmt.Sprintf("%s %s", name, quantity(name, list)))
	}
	return strings.Join(parts, ", ")
}

func sortedKeys[K ~string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return keys
}

// events lists the events about one object of the story's namespace, oldest first, the way `kubectl describe`
// finds them: by the involved object's kind and name.
func (d *demo) events(ctx context.Context, kind, name string) ([]corev1.Event, error) {
	var list corev1.EventList
	if err := d.karmada.List(ctx, &list, client.InNamespace(namespace),
		client.MatchingFields{"involvedObject.kind": kind, "involvedObject.name": name}); err != nil {
		return nil, err
	}
	sort.Slice(list.Items, func(i, j int) bool { return lastSeen(list.Items[i]).Before(lastSeen(list.Items[j])) })
	return list.Items, nil
}

func lastSeen(e corev1.Event) time.Time {
	if !e.LastTimestamp.IsZero() {
		return e.LastTimestamp.Time
	}
	return e.EventTime.Time
}

// eventString renders an event as `kubectl describe` would, with the message wrapped under it.
func eventString(e corev1.Event) string {
	from := e.Source.Component
	if from == "" {
		from = e.ReportingController
	}
	count := ""
	if e.Count > 1 {
		count = fmt.Sprintf(", %d times", e.Count)
	}
	return fmt.Sprintf("  %s  %s  from %s%s, last %s ago\n%s", e.Type, e.Reason, from, count,
		time.Since(lastSeen(e)).Round(time.Second), wrap(e.Message, "      ", lineWidth))
}
