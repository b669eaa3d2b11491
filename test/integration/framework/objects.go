package framework

import (
	"context"
	"encoding/json"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	utiltesting "github.com/karmada-quota/karmada-quota/pkg/util/testing"
)

// List builds a resource list from name, quantity pairs.
var List = utiltesting.List

// Cluster is one entry of a placement.
func Cluster(name string, replicas int32) workv1alpha2.TargetCluster {
	return workv1alpha2.TargetCluster{Name: name, Replicas: replicas}
}

// Place writes a placement as Karmada's scheduler does: a JSON merge patch of spec.clusters.
func Place(ctx context.Context, c client.Client, rb *workv1alpha2.ResourceBinding, opts []client.PatchOption, clusters ...workv1alpha2.TargetCluster) error {
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"clusters": clusters}})
	if err != nil {
		return err
	}
	return c.Patch(ctx, rb, client.RawPatch(types.MergePatchType, patch), opts...)
}

// Canonical renders a resource list by value (1000m and 1 alike), for comparisons.
func Canonical(l corev1.ResourceList) string {
	out := map[string]int64{}
	for name, q := range l {
		out[string(name)] = q.MilliValue()
	}
	b, _ := json.Marshal(out)
	return string(b)
}
