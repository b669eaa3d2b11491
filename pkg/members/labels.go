package members

import (
	"context"

	clusterv1alpha1 "github.com/karmada-io/karmada/pkg/apis/cluster/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/pkg/quota"
)

// TrimCluster is the transform of an informer over Karmada's Cluster objects: it keeps what karmada-quota reads of
// a member cluster (its name and labels, for the quotas' cluster groups; whether it is Ready and being deleted, for
// reading its pods), and drops the rest, mostly the resource summaries of its status, refreshed every few seconds.
// Trimming a trimmed Cluster changes nothing; anything that is not a Cluster is returned as it came.
func TrimCluster(obj any) (any, error) {
	c, ok := obj.(*clusterv1alpha1.Cluster)
	if !ok {
		return obj, nil
	}
	return &clusterv1alpha1.Cluster{
		TypeMeta: c.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name: c.Name, UID: c.UID, ResourceVersion: c.ResourceVersion, Generation: c.Generation,
			DeletionTimestamp: c.DeletionTimestamp, Labels: c.Labels,
		},
		Status: clusterv1alpha1.ClusterStatus{Conditions: c.Status.Conditions},
	}, nil
}

// Labels reads member clusters' labels from reader, an informer's cache over Clusters (TrimCluster), for the
// quotas' cluster groups (quota.Ledger.SetClusterLabels). A cluster that is not there (not joined, or unjoined) has
// no labels, and belongs to no group.
func Labels(reader client.Reader) quota.ClusterLabels {
	return func(name string) (labels.Set, bool) {
		var c clusterv1alpha1.Cluster
		// The cache answers from memory; no request leaves the process. Not deep-copied: admission and the
		// scheduler estimator look a cluster up per group per decision, and the labels are only matched, never
		// changed.
		if err := reader.Get(context.Background(), client.ObjectKey{Name: name}, &c, client.UnsafeDisableDeepCopy); err != nil {
			return nil, false
		}
		return labels.Set(c.Labels), true
	}
}
