// Package workload drives ResourceBinding writes the way Karmada's controllers make them: the detector creates
// a binding unscheduled, with the workload's replicas and per-replica requests; the scheduler then places it by
// patching spec.clusters (a JSON merge patch, helper.GenMergePatch of its cached copy against the new one,
// with the policy.karmada.io/applied-placement annotation on a first placement). Only those placement patches are
// timed.
package workload

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/internal/testenv"
	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

// Per-replica requests of every bound workload, and the two member clusters placements go to.
var (
	ReplicaCPU    = resource.MustParse("500m")
	ReplicaMemory = resource.MustParse("64Mi")
	Clusters      = []string{"member1", "member2"}
)

// GroupLabels label every member cluster, so that a cluster group selecting them covers all that is placed.
var GroupLabels = map[string]string{"region": "bench"}

// JoinClusters registers the member clusters as Karmada's Cluster objects, labelled with GroupLabels: what a
// cluster group's selector reads. The apiserver serves them from Karmada's Cluster CRD (testenv); nothing reaches
// a member, and none is Ready, so karmada-quota never reads their pods. They are cluster-scoped and created once per
// control plane, so every configuration runs with the same clusters joined, as in a Karmada installation.
func JoinClusters(ctx context.Context, c client.Client) error {
	for _, name := range Clusters {
		cluster := &clusterv1alpha1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: GroupLabels},
			Spec:       clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Push},
		}
		if err := c.Create(ctx, cluster); err != nil {
			return fmt.Errorf("joining member cluster %s: %w", name, err)
		}
	}
	return nil
}

// placementAnnotation is util.PolicyPlacementAnnotation, which the scheduler writes with every first placement.
const placementAnnotation = "policy.karmada.io/applied-placement"

const placement = `{"clusterAffinity":{"clusterNames":["member1","member2"]},"replicaScheduling":{"replicaSchedulingType":"Divided","replicaDivisionPreference":"Weighted"}}`

// Divide splits replicas over the member clusters as a Divided placement does: the first cluster takes the
// remainder. Clusters that get none are left out, as the scheduler leaves them out.
func Divide(replicas int32) []workv1alpha2.TargetCluster {
	var out []workv1alpha2.TargetCluster
	n := int32(len(Clusters))
	for i, name := range Clusters {
		r := replicas / n
		if int32(i) < replicas%n {
			r++
		}
		if r > 0 {
			out = append(out, workv1alpha2.TargetCluster{Name: name, Replicas: r})
		}
	}
	return out
}

// placementPatch is the merge patch the scheduler sends: spec.clusters replaced whole (merge patches replace
// lists), plus the applied-placement annotation when the binding had none.
func placementPatch(rb *workv1alpha2.ResourceBinding, clusters []workv1alpha2.TargetCluster) ([]byte, error) {
	patch := map[string]any{"spec": map[string]any{"clusters": clusters}}
	if _, ok := rb.Annotations[placementAnnotation]; !ok {
		patch["metadata"] = map[string]any{"annotations": map[string]string{placementAnnotation: placement}}
	}
	return json.Marshal(patch)
}

// Place patches rb's placement. On success rb is what the apiserver stored.
func Place(ctx context.Context, c client.Client, rb *workv1alpha2.ResourceBinding, clusters []workv1alpha2.TargetCluster) error {
	patch, err := placementPatch(rb, clusters)
	if err != nil {
		return err
	}
	return c.Patch(ctx, rb, client.RawPatch(types.MergePatchType, patch))
}

// parallel runs fn for every index in [0, n) on workers goroutines and returns the first error.
func parallel(ctx context.Context, n, workers int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(ctx, i); err != nil {
					errs <- err
					cancel()
					return
				}
			}
		}()
	}
	func() {
		defer close(next)
		for i := 0; i < n; i++ {
			select {
			case next <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	return ctx.Err()
}

// retry runs a setup write until it succeeds, giving up after a minute of failures. Setup writes are not
// measured, but they go through the same webhooks, which may refuse some under load (Karmada's returns 500
// when its status writes keep conflicting); a quota denial is final and returned as is.
func retry(ctx context.Context, what string, fn func() error) error {
	deadline := time.Now().Add(time.Minute)
	for attempt := 0; ; attempt++ {
		err := fn()
		if err == nil || apierrors.IsAlreadyExists(err) || isQuotaExceeded(err) {
			return err
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		time.Sleep(time.Duration(min(attempt+1, 20)) * 50 * time.Millisecond)
	}
}

func isQuotaExceeded(err error) bool {
	return apierrors.IsForbidden(err) && apierrors.ReasonForError(err) == "QuotaExceeded"
}

// createBindings creates unscheduled bindings name-0000... in each namespace, perNamespace each.
func createBindings(ctx context.Context, c client.Client, namespaces []string, perNamespace, workers int, replicas int32) ([]*workv1alpha2.ResourceBinding, error) {
	out := make([]*workv1alpha2.ResourceBinding, len(namespaces)*perNamespace)
	err := parallel(ctx, len(out), workers, func(ctx context.Context, i int) error {
		ns, name := namespaces[i%len(namespaces)], fmt.Sprintf("rb-%04d", i/len(namespaces))
		return retry(ctx, "creating binding "+ns+"/"+name, func() error {
			// As Karmada's detector creates it for a Deployment: the resource reference, the desired replicas and
			// the per-replica requirements, no placement yet.
			rb, err := testenv.CreateBinding(ctx, c, utiltesting.MakeBinding(ns, name).Replicas(replicas).
				Requests(corev1.ResourceList{corev1.ResourceCPU: ReplicaCPU, corev1.ResourceMemory: ReplicaMemory}))
			if apierrors.IsAlreadyExists(err) {
				// A create that timed out on the client but committed.
				err = c.Get(ctx, client.ObjectKeyFromObject(rb), rb)
			}
			if err == nil {
				out[i] = rb
			}
			return err
		})
	})
	return out, err
}
