// Package usage says what one Karmada ResourceBinding uses, per member cluster, and which part of that a quota
// with a given scope counts. It is pure: the webhook and the controller call the same functions, so an admission
// and the recount that settles it always agree.
package usage

import (
	"fmt"
	"slices"
	"time"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/karmada-quota/karmada-quota/pkg/resources"
)

// Usage is what one ResourceBinding uses.
type Usage struct {
	// Objects counts the bound object: count/<resource>.<group> is 1 from the moment the binding exists.
	Objects resources.List
	// Placed lists the replica sets placed on member clusters: one per cluster, or one per cluster and component
	// for a multi-component binding. An unscheduled binding places nothing. A cluster that receives the object
	// without replicas (a PersistentVolumeClaim, a Service) has a set of no replicas when the object holds
	// something there (Held.PerCluster).
	Placed []Placed
	// Works holds, by member cluster, what the binding's Work there asks that member to run (its manifests read as
	// the member receives them: overrides applied, replicas revised, a DaemonSet's pod per node, a CronJob's Jobs
	// at once). A member runs what its Work says, not what the binding places: where the Work asks more of a
	// resource, it is charged (Charge). Nil for a binding alone (admission of binding writes, clusters without a
	// Work yet).
	Works map[string][]Placed
	// Evicting lists the replica sets Karmada keeps on clusters it is gracefully evicting the binding from
	// (spec.gracefulEvictionTasks): no longer placed, still running until the task ends. They are charged, on their
	// cluster, like placed ones; Evictions says until when.
	Evicting []Placed
	// Evictions are the binding's graceful eviction tasks, one per cluster, in its order.
	Evictions []Eviction
	// Target is what the binding asks in all (Wanted): the size a failover's replacement restores. Set only while
	// something evicts; see Charge.Entitled.
	Target []Placed
}

// Placed is a set of identical replicas placed on one member cluster.
type Placed struct {
	Cluster       string
	PriorityClass string
	Replicas      int64
	// PerReplica holds each replica's requests under their canonical names (requests.cpu, ...), and what each
	// replica holds besides (a StatefulSet's claims, Held.PerReplica). A request of zero is kept: it was made,
	// which matters to the rule that a limited resource must be requested.
	PerReplica resources.List
	// PerCluster is what the set holds on its cluster once, whatever its replicas (Held.PerCluster).
	PerCluster resources.List
}

// Held is what a binding's template makes each member hold besides its pods' requests, under the canonical names
// of class resources.Held. The template says it, the binding does not: callers read it from the template
// (interpreter.HeldBy) and hand it to With.
type Held struct {
	// PerReplica is held once for each replica placed: a StatefulSet's claim per volumeClaimTemplate.
	PerReplica resources.List
	// PerCluster is held once on each member cluster the object is sent to: a PersistentVolumeClaim's claim and
	// storage, a Service's load balancer and node ports.
	PerCluster resources.List
}

// Eviction is one cluster Karmada is gracefully evicting a binding from.
type Eviction struct {
	Cluster string
	// Since is when the task was made (zero if Karmada did not stamp it).
	Since time.Time
	// GracePeriod is the task's own grace period; nil leaves it to karmada-controller-manager's
	// --graceful-eviction-timeout.
	GracePeriod *time.Duration
	// Held is set when nothing ends the task but someone releasing it (suppressDeletion, purgeMode Never).
	Held bool
}

// Until is when the eviction ends at the latest, given Karmada's default timeout; ok is false while it is held
// until released, or when Karmada did not stamp the task's creation.
func (e Eviction) Until(defaultTimeout time.Duration) (until time.Time, ok bool) {
	if e.Held || e.Since.IsZero() {
		return time.Time{}, false
	}
	grace := defaultTimeout
	if e.GracePeriod != nil {
		grace = *e.GracePeriod
	}
	return e.Since.Add(grace), true
}

// Charge is the part of a binding's usage that one quota counts.
type Charge struct {
	// Total over all member clusters, object counts included.
	Total resources.List
	// Clusters splits what members hold and run by member cluster (all but object counts).
	Clusters map[string]resources.List
	// Evicting is the part of Clusters kept only through a graceful eviction, by cluster; nil when none is.
	Evicting map[string]resources.List
	// Entitled is what admission holds the binding to: Total, except while a graceful eviction runs, when the
	// replicas that replace the evicting ones are a move, not growth. It is nil when it equals Total (Admitted).
	Entitled resources.List
}

// Admitted is what admission checks against hard for the binding (Entitled, or Total when nothing evicts).
func (c Charge) Admitted() resources.List {
	if c.Entitled != nil {
		return c.Entitled
	}
	return c.Total
}

// MaxPlacedSets bounds the replica sets Of lists for one multi-component binding (components × clusters). No
// real workload comes near it (tens of components on hundreds of clusters); a binding crafted with thousands of
// each would otherwise make every count of it allocate gigabytes. A single-template binding lists one set per
// cluster, bounded by the size of the object itself.
const MaxPlacedSets = 100_000

// Of computes what rb uses, from the binding alone: for a binding whose template holds nothing on members
// besides its pods (With).
func Of(rb *workv1alpha2.ResourceBinding) (Usage, error) {
	return With(rb, Held{})
}

// With computes what rb uses, held being what its template holds on members besides its pods. It refuses, with a
// field path, what no real binding carries: negative replicas, negative requests, an unparsable resource
// reference. Deleting bindings count like any other: their workloads run until they are gone.
func With(rb *workv1alpha2.ResourceBinding, held Held) (Usage, error) {
	spec := field.NewPath("spec")
	objects, err := objectCount(rb.Spec.Resource, spec.Child("resource"))
	if err != nil {
		return Usage{}, err
	}
	u := Usage{Objects: objects}

	bindingClass := ""
	var bindingRequests corev1.ResourceList
	if rr := rb.Spec.ReplicaRequirements; rr != nil {
		bindingClass = rr.PriorityClassName
		bindingRequests = rr.ResourceRequest
	}

	// appendSets appends to dst the replica sets of cluster, where it runs replicas (for a multi-component binding,
	// the whole set of components) or holds what the object holds there. Appending in place keeps the count of a
	// binding to one allocation per list, whatever its clusters.
	var appendSets func(dst []Placed, cluster string, replicas int32) []Placed
	if len(rb.Spec.Components) > 0 {
		// Karmada places a multi-component workload as whole sets: every cluster it lists runs each component at
		// the component's replica count.
		if n := len(rb.Spec.Components) * (len(rb.Spec.Clusters) + len(rb.Spec.GracefulEvictionTasks)); n > MaxPlacedSets {
			return Usage{}, field.Invalid(spec.Child("components"), len(rb.Spec.Components), fmt.Sprintf(
				"%d components on %d clusters make %d replica sets, more than the %d karmada-quota counts for one binding",
				len(rb.Spec.Components), len(rb.Spec.Clusters)+len(rb.Spec.GracefulEvictionTasks), n, MaxPlacedSets))
		}
		components := make([]Placed, 0, len(rb.Spec.Components))
		for i, c := range rb.Spec.Components {
			path := spec.Child("components").Index(i)
			if c.Replicas < 0 {
				return Usage{}, field.Invalid(path.Child("replicas"), c.Replicas, "must not be negative")
			}
			p := Placed{PriorityClass: bindingClass, Replicas: int64(c.Replicas)}
			if rr := c.ReplicaRequirements; rr != nil {
				if rr.PriorityClassName != "" {
					p.PriorityClass = rr.PriorityClassName
				}
				if p.PerReplica, err = perReplica(rr.ResourceRequest, path.Child("replicaRequirements", "resourceRequest")); err != nil {
					return Usage{}, err
				}
			}
			components = append(components, p)
		}
		appendSets = func(dst []Placed, cluster string, _ int32) []Placed {
			for i, p := range components {
				p.Cluster = cluster
				if i == 0 {
					p.PerCluster = held.PerCluster
				}
				dst = append(dst, p)
			}
			return dst
		}
	} else {
		perReplicaRequests, err := perReplica(bindingRequests, spec.Child("replicaRequirements", "resourceRequest"))
		if err != nil {
			return Usage{}, err
		}
		if len(held.PerReplica) > 0 {
			perReplicaRequests = perReplicaRequests.Clone()
			if perReplicaRequests == nil {
				perReplicaRequests = resources.List{}
			}
			perReplicaRequests.Add(held.PerReplica)
		}
		appendSets = func(dst []Placed, cluster string, replicas int32) []Placed {
			// A cluster listed with no replicas holds a non-workload object (a ConfigMap, a Service): no compute,
			// and whatever the object itself holds there.
			if replicas == 0 && len(held.PerCluster) == 0 {
				return dst
			}
			p := Placed{Cluster: cluster, PriorityClass: bindingClass, Replicas: int64(replicas), PerCluster: held.PerCluster}
			if replicas > 0 {
				p.PerReplica = perReplicaRequests
			}
			return append(dst, p)
		}
	}

	for i, tc := range rb.Spec.Clusters {
		if tc.Replicas < 0 {
			return Usage{}, field.Invalid(spec.Child("clusters").Index(i).Child("replicas"), tc.Replicas, "must not be negative")
		}
		u.Placed = appendSets(u.Placed, tc.Name, tc.Replicas)
	}
	if len(held.PerCluster) > 0 && len(rb.Spec.Clusters) == 0 {
		// An object pulled in by its dependents (propagateDeps) is sent wherever they are: its binding lists no
		// clusters of its own, and names them under requiredBy.
		for _, cluster := range requiredClusters(rb) {
			u.Placed = appendSets(u.Placed, cluster, 0)
		}
	}
	for i, task := range rb.Spec.GracefulEvictionTasks {
		path := spec.Child("gracefulEvictionTasks").Index(i)
		var replicas int32
		if task.Replicas != nil {
			if replicas = *task.Replicas; replicas < 0 {
				return Usage{}, field.Invalid(path.Child("replicas"), replicas, "must not be negative")
			}
		}
		u.Evicting = appendSets(u.Evicting, task.FromCluster, replicas)
		e := Eviction{Cluster: task.FromCluster, Held: task.SuppressDeletion != nil && *task.SuppressDeletion}
		if task.CreationTimestamp != nil {
			e.Since = task.CreationTimestamp.Time
		}
		if task.GracePeriodSeconds != nil {
			grace := time.Duration(*task.GracePeriodSeconds) * time.Second
			e.GracePeriod = &grace
		}
		u.Evictions = append(u.Evictions, e)
	}
	if len(u.Evicting) > 0 {
		u.Target = appendSets(nil, "", rb.Spec.Replicas)
	}
	return u, nil
}

// requiredClusters are the clusters the bindings that depend on rb place it on, each once, in order.
func requiredClusters(rb *workv1alpha2.ResourceBinding) []string {
	var out []string
	seen := map[string]bool{}
	for _, by := range rb.Spec.RequiredBy {
		for _, tc := range by.Clusters {
			if !seen[tc.Name] {
				seen[tc.Name] = true
				out = append(out, tc.Name)
			}
		}
	}
	return out
}

// Charge returns the part of u that a quota with selector sel counts. A scoped quota counts the replica sets
// whose priority class it selects; object counts have no priority class and only unscoped quotas count them
// (validation refuses object counts and held resources under a scope, as Kubernetes does). On each member cluster,
// the charge is the larger, resource by resource, of what the binding places or keeps evicting there and what its
// Work asks there: the placement is what the scheduler was admitted for, the Work what the member runs (an
// OverridePolicy raising requests on one member, a DaemonSet's pods, a CronJob's Jobs), and each was admitted
// against the quota in its own write, so the larger is never less than what runs and never charges one pod twice.
//
// Replicas kept through a graceful eviction are charged where they run, like placed ones. What admission holds
// the binding to (Entitled) is less while they run: the larger of the placement and the binding's Target, but
// never more than placement and evicting replicas together. So the eviction (replicas leave spec.clusters for
// an eviction task) and their replacement (the scheduler places them again elsewhere, up to the binding's
// replicas) are moves, admitted in a namespace at its limit, while the namespace is charged both until the task
// ends; any other growth is checked, and a namespace over hard because of a failover admits no other growth.
func (u Usage) Charge(sel Selector) Charge {
	c := Charge{Total: resources.List{}, Clusters: map[string]resources.List{}}
	on := func(cluster string) resources.List {
		l := c.Clusters[cluster]
		if l == nil {
			l = resources.List{}
			c.Clusters[cluster] = l
		}
		return l
	}
	// The totals of what is placed and what evicts are kept only while something evicts, for Entitled: a recount
	// charges every binding of the namespace, and most never evict.
	var placed, evicting resources.List
	if len(u.Evicting) > 0 {
		placed, evicting = resources.List{}, resources.List{}
	}
	sum(u.Placed, sel, on, placed)
	if len(u.Evicting) > 0 {
		c.Evicting = map[string]resources.List{}
		sum(u.Evicting, sel, func(cluster string) resources.List {
			l := c.Evicting[cluster]
			if l == nil {
				l = resources.List{}
				c.Evicting[cluster] = l
			}
			return l
		}, evicting)
		for cluster, l := range c.Evicting {
			on(cluster).Add(l)
		}
	}
	for cluster, sets := range u.Works {
		asked := resources.List{}
		for _, p := range sets {
			if sel.Matches(p.PriorityClass) {
				p.addTo(asked)
			}
		}
		if len(asked) == 0 {
			continue
		}
		charged := on(cluster)
		out := c.Evicting[cluster]
		for name, v := range asked {
			more := resources.Sub(v, charged[name])
			if more <= 0 {
				continue
			}
			charged[name] = v
			if out != nil {
				// The Work of a cluster being evicted runs only until the task ends, as its placement did.
				out[name] = resources.Add(out[name], more)
				evicting[name] = resources.Add(evicting[name], more)
			} else if placed != nil {
				placed[name] = resources.Add(placed[name], more)
			}
		}
	}
	for _, l := range c.Clusters {
		c.Total.Add(l)
	}
	if len(c.Evicting) > 0 {
		// Entitled = max(placed, min(target, placed + evicting)), resource by resource.
		target := resources.List{}
		sum(u.Target, sel, func(string) resources.List { return resources.List{} }, target)
		c.Entitled = placed.Clone()
		for name, v := range target {
			if room := resources.Add(placed[name], evicting[name]); v > room {
				v = room
			}
			if v > c.Entitled[name] {
				c.Entitled[name] = v
			}
		}
	}
	if !sel.Scoped() {
		c.Total.Add(u.Objects)
		if c.Entitled != nil {
			c.Entitled.Add(u.Objects)
		}
	}
	return c
}

// sum adds what the sets sel selects use into the list at(cluster) gives for each set's cluster, and into total
// unless it is nil.
func sum(sets []Placed, sel Selector, at func(cluster string) resources.List, total resources.List) {
	for _, p := range sets {
		if !sel.Matches(p.PriorityClass) {
			continue
		}
		p.addTo(at(p.Cluster))
		if total != nil {
			p.addTo(total)
		}
	}
}

func sortedKeys(m map[string][]Placed) []string {
	if len(m) == 0 {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// MissingRequests returns the requests, among limited (canonical names), that some replica set selected by sel
// places replicas or claims without making. Such a binding must not be admitted under a quota that limits them:
// without a request, its replicas would run unlimited, its claims take storage no quota counts. Like a Kubernetes
// ResourceQuota, it asks nothing else to be requested: a replica that requests no GPU or huge pages gets none,
// so a quota on them must not refuse every workload that does not use them.
func (u Usage) MissingRequests(sel Selector, limited []corev1.ResourceName) []corev1.ResourceName {
	var missing []corev1.ResourceName
	seen := map[corev1.ResourceName]bool{}
	check := func(p Placed) {
		if !sel.Matches(p.PriorityClass) {
			return
		}
		for _, name := range limited {
			if seen[name] {
				continue
			}
			if claims, ok := resources.ClaimsOf(name); ok {
				// A claim in that class (or any claim, for requests.storage) that requests no storage.
				if claimsWithout(p.PerCluster, claims, name) || (p.Replicas > 0 && claimsWithout(p.PerReplica, claims, name)) {
					seen[name] = true
					missing = append(missing, name)
				}
				continue
			}
			if p.Replicas == 0 || !mustBeRequested[name] {
				continue
			}
			if _, ok := p.PerReplica[name]; !ok {
				seen[name] = true
				missing = append(missing, name)
			}
		}
	}
	for _, p := range u.Placed {
		check(p)
	}
	// A Work is what the member runs: pods it makes without the request run unlimited whatever the binding says.
	for _, cluster := range sortedKeys(u.Works) {
		for _, p := range u.Works[cluster] {
			check(p)
		}
	}
	return missing
}

// claimsWithout reports whether held counts claims without storage: a claim that requests none is still counted,
// and its storage is then absent (interpreter.HeldBy).
func claimsWithout(held resources.List, claims, storage corev1.ResourceName) bool {
	if held[claims] == 0 {
		return false
	}
	_, requested := held[storage]
	return !requested
}

// mustBeRequested are the resources a quota can only limit if every replica requests them explicitly, the ones
// Kubernetes requires for a ResourceQuota (its pod evaluator's Constraints).
var mustBeRequested = map[corev1.ResourceName]bool{
	resources.RequestName(corev1.ResourceCPU):    true,
	resources.RequestName(corev1.ResourceMemory): true,
}

var mustBeRequestedNames = []corev1.ResourceName{resources.RequestName(corev1.ResourceCPU), resources.RequestName(corev1.ResourceMemory)}

// Delta is what moving from old to new adds to a quota's total: positive entries are increases. A nil old means
// the binding is being created.
func Delta(newCharge Charge, old *Charge) resources.List {
	// Not newCharge.Total.Clone(): the zero Charge has a nil Total, and subtracting from a nil list panics.
	d := resources.List{}
	d.Add(newCharge.Total)
	if old != nil {
		d.Sub(old.Total)
	}
	return d
}

// EntitledDelta is Delta of what admission holds a binding to (Charge.Admitted).
func EntitledDelta(newCharge Charge, old *Charge) resources.List {
	d := resources.List{}
	d.Add(newCharge.Admitted())
	if old != nil {
		d.Sub(old.Admitted())
	}
	return d
}

// addTo adds what the set uses into l: its replicas as pods (a set of none that holds something is no pods), its
// per-replica amounts times its replicas, and what it holds on its cluster. It adds in place: a recount charges
// every set of every binding, and a list built for each would be garbage at once.
func (p Placed) addTo(l resources.List) {
	if p.Replicas > 0 || len(p.PerCluster) == 0 {
		l[corev1.ResourcePods] = resources.Add(l[corev1.ResourcePods], p.Replicas)
	}
	for name, v := range p.PerReplica {
		l[name] = resources.Add(l[name], resources.Mul(v, p.Replicas))
	}
	for name, v := range p.PerCluster {
		l[name] = resources.Add(l[name], v)
	}
}

// ReplicasCharge is what replicas replicas requesting requests are charged, as a binding's placed replicas are:
// their pods, and their requests under the names quotas limit them by (requests.cpu for cpu). What a template makes
// them hold besides is not in it. The scheduler estimator (pkg/estimator) charges a replica it is asked about so.
func ReplicasCharge(requests corev1.ResourceList, replicas int64) (resources.List, error) {
	per, err := perReplica(requests, field.NewPath("resourceRequest"))
	if err != nil {
		return nil, err
	}
	out := make(resources.List, len(per)+1)
	Placed{Replicas: replicas, PerReplica: per}.addTo(out)
	return out, nil
}

func perReplica(requests corev1.ResourceList, path *field.Path) (resources.List, error) {
	if len(requests) == 0 {
		return nil, nil
	}
	l := make(resources.List, len(requests))
	for name, q := range requests {
		if q.Sign() < 0 {
			return nil, field.Invalid(path.Key(string(name)), q.String(), "must not be negative")
		}
		canonical := resources.RequestName(name)
		l[canonical] = resources.Value(canonical, q)
	}
	return l, nil
}

// objectCount names the bound object's kind as an object-count quota does: count/<resource>.<group>, with the
// resource guessed from the kind the way Kubernetes guesses it (Deployment → deployments, Ingress → ingresses).
func objectCount(ref workv1alpha2.ObjectReference, path *field.Path) (resources.List, error) {
	if ref.Kind == "" {
		return nil, field.Required(path.Child("kind"), "the bound object's kind")
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	// ParseGroupVersion accepts "", "/" and "<group>/" without error; none of them names a version.
	if err != nil || gv.Version == "" {
		return nil, field.Invalid(path.Child("apiVersion"), ref.APIVersion, "must be <group>/<version> or <version>")
	}
	plural, _ := meta.UnsafeGuessKindToResource(gv.WithKind(ref.Kind))
	name := "count/" + plural.Resource
	if gv.Group != "" {
		name += "." + gv.Group
	}
	return resources.List{corev1.ResourceName(name): 1}, nil
}

// String renders a charge for logs and test failures.
func (c Charge) String() string {
	return fmt.Sprintf("total=%v clusters=%v", c.Total, c.Clusters)
}
