//go:build kubernetes_protomessage_one_more_release

// Karmada's generated estimator messages marshal only with this build tag (wire.go says why); `make test-unit`
// runs this package with it, so that the readers are checked against the client karmada-scheduler runs.

package estimator

import (
	"context"
	"math"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"

	workv1alpha2 "github.com/karmada-io/karmada/pkg/apis/work/v1alpha2"
	"github.com/karmada-io/karmada/pkg/estimator/pb"
	"github.com/karmada-io/karmada/pkg/estimator/service"
)

// TestKarmadaClient asks a served Estimator what karmada-scheduler asks, with Karmada's own generated client.
func TestKarmadaClient(t *testing.T) {
	conn := dial(t, &Server{Estimator: New(ledgersOf(quotas()))})
	client := service.NewEstimatorClient(conn)
	call, done := context.WithTimeout(context.Background(), 10*time.Second)
	defer done()

	replicas := func(cluster, priorityClass string, requests corev1.ResourceList) *pb.MaxAvailableReplicasRequest {
		req := &pb.MaxAvailableReplicasRequest{Cluster: cluster, ReplicaRequirements: &pb.ReplicaRequirements{
			Namespace: "shop", PriorityClassName: priorityClass,
			NodeClaim: &pb.NodeClaim{NodeSelector: map[string]string{"disk": "ssd"}},
		}}
		if err := req.ReplicaRequirements.SetResourceRequest(requests); err != nil {
			t.Fatal(err)
		}
		if err := req.ReplicaRequirements.NodeClaim.SetTolerations([]corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}); err != nil {
			t.Fatal(err)
		}
		return req
	}
	for _, tc := range []struct {
		req  *pb.MaxAvailableReplicasRequest
		want int32
	}{
		{req: replicas("member1", "", list("cpu", "1", "memory", "1Gi")), want: 2},
		{req: replicas("member3", "", list("cpu", "500m")), want: math.MaxInt32},
		{req: replicas("member3", "gold", list("cpu", "300m")), want: 3},
	} {
		res, err := client.MaxAvailableReplicas(call, tc.req)
		if err != nil {
			t.Fatalf("MaxAvailableReplicas(%s, %v): %v", tc.req.Cluster, tc.req.ReplicaRequirements.ResourceRequestBytes, err)
		}
		if res.MaxReplicas != tc.want {
			t.Errorf("MaxAvailableReplicas(%s, priority class %q) = %d, want %d", tc.req.Cluster, tc.req.ReplicaRequirements.PriorityClassName, res.MaxReplicas, tc.want)
		}
	}

	// A writer of the deprecated field alone (Karmada before v1.16) is read too.
	old := replicas("member1", "", list("cpu", "1"))
	old.ReplicaRequirements.ResourceRequestBytes = nil
	if res, err := client.MaxAvailableReplicas(call, old); err != nil || res.MaxReplicas != 2 {
		t.Errorf("MaxAvailableReplicas from the deprecated field = %v, %v; want 2", res, err)
	}

	components := []*pb.Component{}
	for _, c := range []workv1alpha2.Component{
		{Name: "jobmanager", Replicas: 1, ReplicaRequirements: &workv1alpha2.ComponentReplicaRequirements{ResourceRequest: list("cpu", "500m")}},
		{Name: "taskmanager", Replicas: 2, ReplicaRequirements: &workv1alpha2.ComponentReplicaRequirements{ResourceRequest: list("cpu", "500m")}},
	} {
		req := &pb.ComponentReplicaRequirements{PriorityClassName: c.ReplicaRequirements.PriorityClassName}
		if err := req.SetResourceRequest(c.ReplicaRequirements.ResourceRequest); err != nil {
			t.Fatal(err)
		}
		components = append(components, &pb.Component{Name: c.Name, Replicas: c.Replicas, ReplicaRequirements: req})
	}
	sets, err := client.MaxAvailableComponentSets(call, &pb.MaxAvailableComponentSetsRequest{Cluster: "member1", Namespace: "shop", Components: components})
	if err != nil || sets.MaxSets != 1 {
		t.Errorf("MaxAvailableComponentSets = %v, %v; want 1", sets, err)
	}

	unschedulable, err := client.GetUnschedulableReplicas(call, &pb.UnschedulableReplicasRequest{Cluster: "member1",
		Resource: &pb.ObjectReference{ApiVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"}, UnschedulableThreshold: int64(time.Minute)})
	if err != nil || unschedulable.UnschedulableReplicas != 0 {
		t.Errorf("GetUnschedulableReplicas = %v, %v; want 0", unschedulable, err)
	}

	_, err = client.MaxAvailableReplicas(call, &pb.MaxAvailableReplicasRequest{Cluster: "member1"})
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("a request without a namespace: %v, want InvalidArgument", err)
	}
}
