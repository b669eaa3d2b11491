package usage

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	quotav1alpha1 "github.com/karmada-quota/karmada-quota/pkg/apis/quota/v1alpha1"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

const daemonsets corev1.ResourceName = "count/daemonsets.apps"

// set is a replica set as Of lists it, or as a Work asks it of its member: replicas × perReplica on cluster.
func set(cluster, class string, replicas int64, perReplica resources.List) Placed {
	return Placed{Cluster: cluster, PriorityClass: class, Replicas: replicas, PerReplica: perReplica}
}

func cpuMilli(milli int64) resources.List { return resources.List{requestsCPU: milli} }

// TestChargeWithWorks charges, on each member cluster, the larger, resource by resource, of what the binding places
// there and what its Work asks there, and adds only the excess to the total.
func TestChargeWithWorks(t *testing.T) {
	oneDeployment := resources.List{deployments: 1}
	cpuMem := func(milli, bytes int64) resources.List {
		return resources.List{requestsCPU: milli, requestsMemory: bytes}
	}
	cases := map[string]struct {
		usage      Usage
		scope      []quotav1alpha1.ScopedResourceSelectorRequirement
		wantCharge Charge
	}{
		"no Works: the placement alone": {
			usage: Usage{Objects: oneDeployment, Placed: []Placed{set("member1", "", 2, cpuMilli(1000))}},
			wantCharge: Charge{
				Total:    resources.List{deployments: 1, pods: 2, requestsCPU: 2000},
				Clusters: map[string]resources.List{"member1": {pods: 2, requestsCPU: 2000}},
			},
		},
		// An OverridePolicy raising requests on member1: placed 2 × 1 CPU, its Work asks 2 × 2 CPU.
		"a Work asking more cpu than placed on one member is charged there, and the excess in the total": {
			usage: Usage{
				Objects: oneDeployment,
				Placed:  []Placed{set("member1", "", 2, cpuMilli(1000)), set("member2", "", 2, cpuMilli(1000))},
				Works: map[string][]Placed{
					"member1": {set("member1", "", 2, cpuMilli(2000))},
					"member2": {set("member2", "", 2, cpuMilli(1000))},
				},
			},
			wantCharge: Charge{
				Total: resources.List{deployments: 1, pods: 4, requestsCPU: 4000 + 2000},
				Clusters: map[string]resources.List{
					"member1": {pods: 2, requestsCPU: 4000},
					"member2": {pods: 2, requestsCPU: 2000},
				},
			},
		},
		"a Work asking less than placed (a lowering override) keeps the placed amount": {
			usage: Usage{
				Objects: oneDeployment,
				Placed:  []Placed{set("member1", "", 2, cpuMilli(1000))},
				Works:   map[string][]Placed{"member1": {set("member1", "", 2, cpuMilli(500))}},
			},
			wantCharge: Charge{
				Total:    resources.List{deployments: 1, pods: 2, requestsCPU: 2000},
				Clusters: map[string]resources.List{"member1": {pods: 2, requestsCPU: 2000}},
			},
		},
		// A DaemonSet: the binding places no replicas; its Work runs a pod per node, 2 nodes on member1, 3 on member2.
		"a Work on a cluster the binding places nothing on is charged in full": {
			usage: Usage{
				Objects: resources.List{daemonsets: 1},
				Works: map[string][]Placed{
					"member1": {set("member1", "", 2, cpuMilli(3000))},
					"member2": {set("member2", "", 3, cpuMilli(3000))},
				},
			},
			wantCharge: Charge{
				Total: resources.List{daemonsets: 1, pods: 5, requestsCPU: 15000},
				Clusters: map[string]resources.List{
					"member1": {pods: 2, requestsCPU: 6000},
					"member2": {pods: 3, requestsCPU: 9000},
				},
			},
		},
		"a Work on another cluster than the placement adds that cluster and leaves the placed one": {
			usage: Usage{
				Placed: []Placed{set("member1", "", 2, cpuMilli(1000))},
				Works:  map[string][]Placed{"member2": {set("member2", "", 1, cpuMilli(3000))}},
			},
			wantCharge: Charge{
				Total: resources.List{pods: 3, requestsCPU: 5000},
				Clusters: map[string]resources.List{
					"member1": {pods: 2, requestsCPU: 2000},
					"member2": {pods: 1, requestsCPU: 3000},
				},
			},
		},
		"mixed resources: more cpu, less memory asked, the max per resource": {
			usage: Usage{
				Placed: []Placed{set("member1", "", 2, cpuMem(1000, 2*gi))},
				Works:  map[string][]Placed{"member1": {set("member1", "", 2, cpuMem(2000, gi))}},
			},
			wantCharge: Charge{
				Total:    resources.List{pods: 2, requestsCPU: 4000, requestsMemory: 4 * gi},
				Clusters: map[string]resources.List{"member1": {pods: 2, requestsCPU: 4000, requestsMemory: 4 * gi}},
			},
		},
		"a resource only the Work requests is charged": {
			usage: Usage{
				Placed: []Placed{set("member1", "", 2, cpuMilli(1000))},
				Works:  map[string][]Placed{"member1": {set("member1", "", 2, resources.List{requestsCPU: 1000, requestsGPU: 1})}},
			},
			wantCharge: Charge{
				Total:    resources.List{pods: 2, requestsCPU: 2000, requestsGPU: 2},
				Clusters: map[string]resources.List{"member1": {pods: 2, requestsCPU: 2000, requestsGPU: 2}},
			},
		},
		// Pods follow the same rule: 3 pods asked of 2 placed is 3; their cpu (1500m) is under the placed 2 CPU.
		"more pods asked than placed: pods are the max too, per resource": {
			usage: Usage{
				Placed: []Placed{set("member1", "", 2, cpuMilli(1000))},
				Works:  map[string][]Placed{"member1": {set("member1", "", 3, cpuMilli(500))}},
			},
			wantCharge: Charge{
				Total:    resources.List{pods: 3, requestsCPU: 2000},
				Clusters: map[string]resources.List{"member1": {pods: 3, requestsCPU: 2000}},
			},
		},
		"fewer pods asked than placed, each asking more": {
			usage: Usage{
				Placed: []Placed{set("member1", "", 2, cpuMilli(1000))},
				Works:  map[string][]Placed{"member1": {set("member1", "", 1, cpuMilli(4000))}},
			},
			wantCharge: Charge{
				Total:    resources.List{pods: 2, requestsCPU: 4000},
				Clusters: map[string]resources.List{"member1": {pods: 2, requestsCPU: 4000}},
			},
		},
		// Two manifests (or components) on one member: 2 + 2 pods of 1 CPU against 3 placed. Each alone is less
		// than the placement; together they are more.
		"several Work sets on one cluster are summed before the max": {
			usage: Usage{
				Placed: []Placed{set("member1", "", 3, cpuMilli(1000))},
				Works: map[string][]Placed{"member1": {
					set("member1", "", 2, cpuMilli(1000)),
					set("member1", "", 2, cpuMilli(1000)),
				}},
			},
			wantCharge: Charge{
				Total:    resources.List{pods: 4, requestsCPU: 4000},
				Clusters: map[string]resources.List{"member1": {pods: 4, requestsCPU: 4000}},
			},
		},
		"several placed sets on one cluster are summed before the max": {
			usage: Usage{
				Placed: []Placed{set("member1", "", 1, cpuMilli(1000)), set("member1", "", 2, cpuMilli(2000))},
				Works:  map[string][]Placed{"member1": {set("member1", "", 3, cpuMilli(1500))}},
			},
			wantCharge: Charge{
				Total:    resources.List{pods: 3, requestsCPU: 5000},
				Clusters: map[string]resources.List{"member1": {pods: 3, requestsCPU: 5000}},
			},
		},
		// The binding's replicas run at "low"; the Work adds a "high" set. A quota scoped to high counts only it.
		"a scoped selector counts only the Work sets of its class": {
			usage: Usage{
				Objects: oneDeployment,
				Placed:  []Placed{set("member1", "low", 2, cpuMilli(1000))},
				Works: map[string][]Placed{"member1": {
					set("member1", "high", 1, cpuMilli(2000)),
					set("member1", "low", 2, cpuMilli(1000)),
				}},
			},
			scope: []quotav1alpha1.ScopedResourceSelectorRequirement{priorityClass(corev1.ScopeSelectorOpIn, "high")},
			wantCharge: Charge{
				Total:    resources.List{pods: 1, requestsCPU: 2000},
				Clusters: map[string]resources.List{"member1": {pods: 1, requestsCPU: 2000}},
			},
		},
		"a scoped selector leaves out the Work sets of another class, however large": {
			usage: Usage{
				Objects: oneDeployment,
				Placed:  []Placed{set("member1", "low", 2, cpuMilli(1000))},
				Works: map[string][]Placed{"member1": {
					set("member1", "high", 8, cpuMilli(8000)),
					set("member1", "low", 2, cpuMilli(1000)),
				}},
			},
			scope: []quotav1alpha1.ScopedResourceSelectorRequirement{priorityClass(corev1.ScopeSelectorOpIn, "low")},
			wantCharge: Charge{
				Total:    resources.List{pods: 2, requestsCPU: 2000},
				Clusters: map[string]resources.List{"member1": {pods: 2, requestsCPU: 2000}},
			},
		},
		"a Work whose sets the selector does not match adds no cluster": {
			usage: Usage{
				Works: map[string][]Placed{"member1": {set("member1", "low", 2, cpuMilli(1000))}},
			},
			scope:      []quotav1alpha1.ScopedResourceSelectorRequirement{priorityClass(corev1.ScopeSelectorOpIn, "high")},
			wantCharge: Charge{Total: resources.List{}, Clusters: map[string]resources.List{}},
		},
		// Object counts are the binding's: a Work neither adds one nor, under a scope, brings one in.
		"objects are unaffected by Works, unscoped": {
			usage: Usage{
				Objects: oneDeployment,
				Works: map[string][]Placed{
					"member1": {set("member1", "", 1, nil)},
					"member2": {set("member2", "", 1, nil)},
				},
			},
			wantCharge: Charge{
				Total: resources.List{deployments: 1, pods: 2},
				Clusters: map[string]resources.List{
					"member1": {pods: 1},
					"member2": {pods: 1},
				},
			},
		},
		"objects are unaffected by Works, scoped": {
			usage: Usage{
				Objects: oneDeployment,
				Works:   map[string][]Placed{"member1": {set("member1", "high", 1, cpuMilli(1000))}},
			},
			scope: []quotav1alpha1.ScopedResourceSelectorRequirement{priorityClass(corev1.ScopeSelectorOpExists)},
			wantCharge: Charge{
				Total:    resources.List{pods: 1, requestsCPU: 1000},
				Clusters: map[string]resources.List{"member1": {pods: 1, requestsCPU: 1000}},
			},
		},
		"a Work asking exactly what is placed changes nothing": {
			usage: Usage{
				Objects: oneDeployment,
				Placed:  []Placed{set("member1", "", 2, cpuMem(1000, gi))},
				Works:   map[string][]Placed{"member1": {set("member1", "", 2, cpuMem(1000, gi))}},
			},
			wantCharge: Charge{
				Total:    resources.List{deployments: 1, pods: 2, requestsCPU: 2000, requestsMemory: 2 * gi},
				Clusters: map[string]resources.List{"member1": {pods: 2, requestsCPU: 2000, requestsMemory: 2 * gi}},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := cloneUsage(tc.usage)
			got := tc.usage.Charge(selector(t, tc.scope...))
			if diff := cmp.Diff(tc.wantCharge, got); diff != "" {
				t.Errorf("Charge() (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.usage); diff != "" {
				t.Errorf("Charge modified the usage (-before +after):\n%s", diff)
			}
			// Charging again gives the same: nothing of the first charge is shared with the usage.
			if diff := cmp.Diff(got, tc.usage.Charge(selector(t, tc.scope...))); diff != "" {
				t.Errorf("Charge() a second time (-first +second):\n%s", diff)
			}
		})
	}
}

// TestChargeWithWorksOfABinding charges the Works of a real binding read by Of: a multi-component binding whose
// Work on member2 raises the taskmanager's request.
func TestChargeWithWorksOfABinding(t *testing.T) {
	rb := utiltesting.MakeBinding("ns", "flink").Resource("flink.apache.org/v1beta1", "FlinkDeployment").
		Component("jobmanager", 1, requests("cpu", "1")).
		Component("taskmanager", 2, requests("cpu", "2")).
		Cluster("member1", 0).Cluster("member2", 0).Obj()
	u, err := Of(rb)
	if err != nil {
		t.Fatalf("Of: %v", err)
	}
	u.Works = map[string][]Placed{
		"member1": {set("member1", "", 1, cpuMilli(1000)), set("member1", "", 2, cpuMilli(2000))},
		"member2": {set("member2", "", 1, cpuMilli(1000)), set("member2", "", 2, cpuMilli(3000))},
	}
	want := Charge{
		Total: resources.List{"count/flinkdeployments.flink.apache.org": 1, pods: 6, requestsCPU: 5000 + 7000},
		Clusters: map[string]resources.List{
			"member1": {pods: 3, requestsCPU: 5000},
			"member2": {pods: 3, requestsCPU: 7000},
		},
	}
	if diff := cmp.Diff(want, u.Charge(Selector{})); diff != "" {
		t.Errorf("Charge() (-want +got):\n%s", diff)
	}
}

// TestDeltaWithWorks: what a Work write adds is the difference of the charges with the old and the new Work.
func TestDeltaWithWorks(t *testing.T) {
	placed := []Placed{set("member1", "", 2, cpuMilli(1000))}
	charge := func(works []Placed) Charge {
		u := Usage{Placed: placed}
		if works != nil {
			u.Works = map[string][]Placed{"member1": works}
		}
		return u.Charge(Selector{})
	}
	cases := map[string]struct {
		old, new []Placed
		want     resources.List
	}{
		"a created Work asking what is placed adds nothing": {
			new:  []Placed{set("member1", "", 2, cpuMilli(1000))},
			want: resources.List{pods: 0, requestsCPU: 0},
		},
		"a created Work raising requests adds the excess": {
			new:  []Placed{set("member1", "", 2, cpuMilli(2000))},
			want: resources.List{pods: 0, requestsCPU: 2000},
		},
		"a Work raised further adds the difference": {
			old:  []Placed{set("member1", "", 2, cpuMilli(2000))},
			new:  []Placed{set("member1", "", 3, cpuMilli(2000))},
			want: resources.List{pods: 1, requestsCPU: 2000},
		},
		"a Work lowered back to the placement gives the excess back": {
			old:  []Placed{set("member1", "", 2, cpuMilli(2000))},
			new:  []Placed{set("member1", "", 2, cpuMilli(500))},
			want: resources.List{pods: 0, requestsCPU: -2000},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			old := charge(tc.old)
			if diff := cmp.Diff(tc.want, Delta(charge(tc.new), &old)); diff != "" {
				t.Errorf("Delta() (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMissingRequestsOfWorks: a Work is what the member runs, so a set it asks for without a request a quota
// requires is reported, whatever the binding requests.
func TestMissingRequestsOfWorks(t *testing.T) {
	both := resources.List{requestsCPU: 1000, requestsMemory: gi}
	memOnly := resources.List{requestsMemory: gi}
	cases := map[string]struct {
		usage       Usage
		scope       []quotav1alpha1.ScopedResourceSelectorRequirement
		limited     []corev1.ResourceName
		wantMissing []corev1.ResourceName
	}{
		"a Work set without requests.cpu under a cpu limit is reported, though the binding requests it": {
			usage: Usage{
				Placed: []Placed{set("member1", "", 2, both)},
				Works:  map[string][]Placed{"member1": {set("member1", "", 2, memOnly)}},
			},
			limited:     []corev1.ResourceName{requestsCPU, requestsMemory},
			wantMissing: []corev1.ResourceName{requestsCPU},
		},
		"a Work on a cluster the binding places nothing on (a DaemonSet)": {
			usage: Usage{
				Works: map[string][]Placed{"member1": {set("member1", "", 3, nil)}},
			},
			limited:     []corev1.ResourceName{requestsMemory, requestsCPU},
			wantMissing: []corev1.ResourceName{requestsMemory, requestsCPU},
		},
		"a Work set of zero replicas runs nothing unlimited": {
			usage: Usage{
				Placed: []Placed{set("member1", "", 2, both)},
				Works:  map[string][]Placed{"member1": {set("member1", "", 0, memOnly), set("member1", "", 2, both)}},
			},
			limited: []corev1.ResourceName{requestsCPU, requestsMemory},
		},
		"a Work making every request": {
			usage: Usage{
				Placed: []Placed{set("member1", "", 2, both)},
				Works:  map[string][]Placed{"member1": {set("member1", "", 2, resources.List{requestsCPU: 0, requestsMemory: 0})}},
			},
			limited: []corev1.ResourceName{requestsCPU, requestsMemory},
		},
		"a Work missing a request the quota does not limit": {
			usage: Usage{
				Works: map[string][]Placed{"member1": {set("member1", "", 2, memOnly)}},
			},
			limited: []corev1.ResourceName{requestsMemory, pods, requestsGPU},
		},
		"a Work set of a class the scope does not select": {
			usage: Usage{
				Placed: []Placed{set("member1", "high", 2, both)},
				Works:  map[string][]Placed{"member1": {set("member1", "low", 2, memOnly), set("member1", "high", 2, both)}},
			},
			scope:   []quotav1alpha1.ScopedResourceSelectorRequirement{priorityClass(corev1.ScopeSelectorOpIn, "high")},
			limited: []corev1.ResourceName{requestsCPU},
		},
		"a Work set of the class the scope selects": {
			usage: Usage{
				Placed: []Placed{set("member1", "low", 2, both)},
				Works:  map[string][]Placed{"member1": {set("member1", "high", 1, memOnly)}},
			},
			scope:       []quotav1alpha1.ScopedResourceSelectorRequirement{priorityClass(corev1.ScopeSelectorOpIn, "high")},
			limited:     []corev1.ResourceName{requestsCPU},
			wantMissing: []corev1.ResourceName{requestsCPU},
		},
		"missing from the placement and the Work alike is reported once": {
			usage: Usage{
				Placed: []Placed{set("member1", "", 2, memOnly), set("member2", "", 2, memOnly)},
				Works: map[string][]Placed{
					"member1": {set("member1", "", 2, memOnly)},
					"member2": {set("member2", "", 2, memOnly)},
				},
			},
			limited:     []corev1.ResourceName{requestsCPU, requestsMemory},
			wantMissing: []corev1.ResourceName{requestsCPU},
		},
		// The placement is read first, then the Works by cluster name, whatever the map's order.
		"Works of several clusters are read in cluster order": {
			usage: Usage{
				Placed: []Placed{set("member1", "", 1, both)},
				Works: map[string][]Placed{
					"member3": {set("member3", "", 1, resources.List{requestsCPU: 1000})},
					"member2": {set("member2", "", 1, memOnly)},
				},
			},
			limited:     []corev1.ResourceName{requestsMemory, requestsCPU},
			wantMissing: []corev1.ResourceName{requestsCPU, requestsMemory},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			// Works is a map: the answer must not depend on its iteration order.
			for range 20 {
				got := tc.usage.MissingRequests(selector(t, tc.scope...), tc.limited)
				if diff := cmp.Diff(tc.wantMissing, got); diff != "" {
					t.Fatalf("MissingRequests(%v) (-want +got):\n%s", tc.limited, diff)
				}
			}
		})
	}
}

// cloneUsage deep-copies u, to check that reading it changes nothing.
func cloneUsage(u Usage) Usage {
	cloneSets := func(sets []Placed) []Placed {
		if sets == nil {
			return nil
		}
		out := make([]Placed, len(sets))
		for i, p := range sets {
			p.PerReplica = p.PerReplica.Clone()
			out[i] = p
		}
		return out
	}
	out := Usage{Objects: u.Objects.Clone(), Placed: cloneSets(u.Placed)}
	if u.Works != nil {
		out.Works = make(map[string][]Placed, len(u.Works))
		for cluster, sets := range u.Works {
			out.Works[cluster] = cloneSets(sets)
		}
	}
	return out
}
