// Package usage says what one Karmada ResourceBinding uses, per member cluster, and which part of that a quota
// with a given scope counts. It is pure: the webhook and the controller call the same functions, so an admission
// and the recount that settles it always agree.
package usage

import (
	"fmt"
	"slices"

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
	// for a multi-component binding. An unscheduled binding places nothing.
	Placed []Placed
	// Works holds, by member cluster, what the binding's Work there asks that member to run (its manifests read as
	// the member receives them: overrides applied, replicas revised, a DaemonSet's pod per node, a CronJob's Jobs
	// at once). A member runs what its Work says, not what the binding places: where the Work asks more of a
	// resource, it is charged (Charge). Nil for a binding alone (admission of binding writes, clusters without a
	// Work yet).
	Works map[string][]Placed
}

// Placed is a set of identical replicas placed on one member cluster.
type Placed struct {
	Cluster       string
	PriorityClass string
	Replicas      int64
	// PerReplica holds each replica's requests under their canonical names (requests.cpu, ...). A request of
	// zero is kept: it was made, which matters to the rule that a limited resource must be requested.
	PerReplica resources.List
}

// Charge is the part of a binding's usage that one quota counts.
type Charge struct {
	// Total over all member clusters, object counts included.
	Total resources.List
	// Clusters splits compute and pods by member cluster.
	Clusters map[string]resources.List
}

// MaxPlacedSets bounds the replica sets Of lists for one multi-component binding (components × clusters). No
// real workload comes near it (tens of components on hundreds of clusters); a binding crafted with thousands of
// each would otherwise make every count of it allocate gigabytes. A single-template binding lists one set per
// cluster, bounded by the size of the object itself.
const MaxPlacedSets = 100_000

// Of computes what rb uses. It refuses, with a field path, what no real binding carries: negative replicas,
// negative requests, an unparsable resource reference. Deleting bindings count like any other: their workloads
// run until they are gone.
func Of(rb *workv1alpha2.ResourceBinding) (Usage, error) {
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

	if len(rb.Spec.Components) > 0 {
		// Karmada places a multi-component workload as whole sets: every cluster it lists runs each component at
		// the component's replica count.
		if sets := len(rb.Spec.Components) * len(rb.Spec.Clusters); sets > MaxPlacedSets {
			return Usage{}, field.Invalid(spec.Child("components"), len(rb.Spec.Components), fmt.Sprintf(
				"%d components on %d clusters make %d replica sets, more than the %d karmada-quota counts for one binding",
				len(rb.Spec.Components), len(rb.Spec.Clusters), sets, MaxPlacedSets))
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
		for _, tc := range rb.Spec.Clusters {
			for _, p := range components {
				p.Cluster = tc.Name
				u.Placed = append(u.Placed, p)
			}
		}
		return u, nil
	}

	perReplicaRequests, err := perReplica(bindingRequests, spec.Child("replicaRequirements", "resourceRequest"))
	if err != nil {
		return Usage{}, err
	}
	for i, tc := range rb.Spec.Clusters {
		if tc.Replicas < 0 {
			return Usage{}, field.Invalid(spec.Child("clusters").Index(i).Child("replicas"), tc.Replicas, "must not be negative")
		}
		// A cluster listed with no replicas holds a non-workload object (a ConfigMap, a Service): no compute.
		if tc.Replicas == 0 {
			continue
		}
		u.Placed = append(u.Placed, Placed{
			Cluster:       tc.Name,
			PriorityClass: bindingClass,
			Replicas:      int64(tc.Replicas),
			PerReplica:    perReplicaRequests,
		})
	}
	return u, nil
}

// Charge returns the part of u that a quota with selector sel counts. A scoped quota counts the replica sets
// whose priority class it selects; object counts have no priority class and only unscoped quotas count them
// (validation refuses object counts under a scope, as Kubernetes does). On each member cluster, the charge is the
// larger, resource by resource, of what the binding places there and what its Work asks there: the placement is
// what the scheduler was admitted for, the Work what the member runs (an OverridePolicy raising requests on one
// member, a DaemonSet's pods, a CronJob's Jobs), and each was admitted against the quota in its own write, so
// the larger is never less than what runs and never charges one pod twice.
func (u Usage) Charge(sel Selector) Charge {
	c := Charge{Total: resources.List{}, Clusters: map[string]resources.List{}}
	if !sel.Scoped() {
		c.Total.Add(u.Objects)
	}
	on := func(cluster string) resources.List {
		l := c.Clusters[cluster]
		if l == nil {
			l = resources.List{}
			c.Clusters[cluster] = l
		}
		return l
	}
	for _, p := range u.Placed {
		if !sel.Matches(p.PriorityClass) {
			continue
		}
		used := p.used()
		on(p.Cluster).Add(used)
		c.Total.Add(used)
	}
	for cluster, sets := range u.Works {
		asked := resources.List{}
		for _, p := range sets {
			if sel.Matches(p.PriorityClass) {
				asked.Add(p.used())
			}
		}
		if len(asked) == 0 {
			continue
		}
		placed := on(cluster)
		for name, v := range asked {
			if more := resources.Sub(v, placed[name]); more > 0 {
				placed[name] = v
				c.Total[name] = resources.Add(c.Total[name], more)
			}
		}
	}
	return c
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

// MissingRequests returns the CPU and memory requests, among limited (canonical names), that some replica set
// selected by sel places replicas without making. Such a binding must not be admitted under a quota that limits
// them: without a request, its replicas would run unlimited. Like a Kubernetes ResourceQuota, it asks nothing
// else to be requested: a replica that requests no GPU or huge pages gets none, so a quota on them must not
// refuse every workload that does not use them.
func (u Usage) MissingRequests(sel Selector, limited []corev1.ResourceName) []corev1.ResourceName {
	var missing []corev1.ResourceName
	seen := map[corev1.ResourceName]bool{}
	check := func(p Placed) {
		if p.Replicas == 0 || !sel.Matches(p.PriorityClass) {
			return
		}
		for _, name := range limited {
			if !mustBeRequested[name] || seen[name] {
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

func (p Placed) used() resources.List {
	used := make(resources.List, len(p.PerReplica)+1)
	used[corev1.ResourcePods] = p.Replicas
	for name, v := range p.PerReplica {
		used[name] = resources.Mul(v, p.Replicas)
	}
	return used
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
