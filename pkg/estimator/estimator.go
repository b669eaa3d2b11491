// Package estimator tells Karmada's scheduler how many replicas the quotas leave room for on each member cluster,
// so that it divides a workload over the clusters that can take it instead of placing it where admission would
// refuse it. It speaks karmada-scheduler-estimator's gRPC protocol: karmada-scheduler, started with
// --enable-scheduler-estimator and --scheduler-estimator-service-prefix naming our Services (package discovery),
// asks it MaxAvailableReplicas for every candidate cluster and takes, per cluster, the least answer of all its
// estimators.
//
// What Karmada v1.18.2 does with the answers, by replica scheduling type (pkg/scheduler/core):
//   - Divided, dynamic weight (ReplicaDivisionPreference Weighted with DynamicWeight: AvailableReplicas) and
//     Aggregated: replicas are divided in proportion to the answers (scale-up divides the new replicas only; a fresh
//     schedule adds a binding's own replicas back to its clusters' answers), and a binding whose answers sum below
//     its replicas is unschedulable ("Clusters available replicas N are not enough to schedule"). Steered.
//   - Divided, static weight (or no weight preference): divided by the weights alone. Not steered.
//   - Duplicated: every candidate gets all replicas. Not steered.
//
// Members that run karmada-scheduler-estimator keep it: the same call is put to it (Upstream) and the answer is the
// least of both, as karmada-scheduler would have taken it.
//
// The answer is only advice: admission (pkg/admission) decides every placement exactly, with the reservations the
// answer reads, so a stale answer costs the scheduler one refused write and a retry, never a placement over hard.
package estimator

import (
	"context"
	"math"

	corev1 "k8s.io/api/core/v1"

	"github.com/karmada-quota/karmada-quota/pkg/quota"
	"github.com/karmada-quota/karmada-quota/pkg/resources"
	"github.com/karmada-quota/karmada-quota/pkg/usage"
)

// Ledgers reads a namespace's quotas, parsed, with their member clusters' labels known (quota.Ledger's
// SetClusterLabels), from the webhook's informers.
type Ledgers func(ctx context.Context, namespace string) ([]*quota.Ledger, error)

// Estimator answers from the quotas of the namespace asked about.
type Estimator struct {
	ledgers Ledgers
}

// New returns an Estimator reading quotas through ledgers.
func New(ledgers Ledgers) *Estimator {
	return &Estimator{ledgers: ledgers}
}

// unlimited is the answer where no quota bounds a placement: Karmada takes the least answer of its estimators, so
// the largest int32 leaves the decision to the others (its general estimator, from the Cluster's resource summary).
const unlimited = math.MaxInt32

// MaxReplicas is how many more replicas, each requesting requests, the quotas of namespace that select
// priorityClass leave room for on cluster by their limits on member clusters: the least over those quotas of what
// their room there takes (quota.Ledger.RoomOn: the cluster's own limit and its groups').
//
// The namespace-wide hard does not bound the answer: no placement changes what it can take, so the scheduler could
// not place around it, and admission refuses a placement past it with a QuotaExceeded that names the quota and that
// the controller requeues once room frees; an estimate of 0 would make the scheduler fail the binding with its own
// "not enough" message instead. A replica is charged as admission charges it: one pod and its requests. What the
// protocol does not carry cannot bound the answer (limits.*, a StatefulSet's claims, the requests an OverridePolicy
// raises on one cluster): admission checks those when the placement is written.
func (e *Estimator) MaxReplicas(ctx context.Context, cluster, namespace, priorityClass string, requests corev1.ResourceList) (int32, error) {
	ledgers, err := e.ledgers(ctx, namespace)
	if err != nil {
		return 0, err
	}
	perReplica, err := usage.ReplicasCharge(requests, 1)
	if err != nil {
		return 0, err
	}
	fit := int64(unlimited)
	for _, l := range ledgers {
		if !l.Selector.Matches(priorityClass) {
			continue
		}
		fit = min(fit, quota.ReplicasThatFit(l.RoomOn(cluster), perReplica))
	}
	return int32(fit), nil
}

// Component is one component of a multi-component workload (Karmada's MultiplePodTemplatesScheduling): its
// replicas in one set, and what each requests.
type Component struct {
	Replicas      int64
	PriorityClass string
	Requests      corev1.ResourceList
}

// MaxSets is how many more whole sets of components the quotas of namespace leave room for on cluster: each quota
// charges a set with the components its scope selects.
func (e *Estimator) MaxSets(ctx context.Context, cluster, namespace string, components []Component) (int32, error) {
	ledgers, err := e.ledgers(ctx, namespace)
	if err != nil {
		return 0, err
	}
	charges := make([]resources.List, len(components))
	for i, c := range components {
		if charges[i], err = usage.ReplicasCharge(c.Requests, c.Replicas); err != nil {
			return 0, err
		}
	}
	fit := int64(unlimited)
	for _, l := range ledgers {
		perSet := resources.List{}
		for i, c := range components {
			if l.Selector.Matches(c.PriorityClass) {
				perSet.Add(charges[i])
			}
		}
		fit = min(fit, quota.ReplicasThatFit(l.RoomOn(cluster), perSet))
	}
	return int32(fit), nil
}
