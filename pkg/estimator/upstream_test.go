package estimator

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/karmada-quota/karmada-quota/pkg/estimator/discovery"
	"github.com/karmada-quota/karmada-quota/pkg/metrics"
)

func externalName(name, host string, port, target int32) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "karmada-system", Name: name},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: host,
			Ports: []corev1.ServicePort{{Port: port, TargetPort: intstr.FromInt32(target)}}},
	}
}

// TestResolve: a member's estimator is found where karmada-scheduler finds it.
func TestResolve(t *testing.T) {
	services := fake.NewClientBuilder().WithObjects(
		externalName("karmada-scheduler-estimator-member1", "estimator.member1.example", 10352, 20000),
		externalName("karmada-scheduler-estimator-member2", "estimator.member2.example", 9999, 20000),
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "karmada-system", Name: "karmada-scheduler-estimator-member3"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP}},
	).Build()
	u := NewUpstream(services, discovery.Lookup{Namespace: "karmada-system", Prefix: "karmada-scheduler-estimator", Port: 10352})
	cases := map[string]struct {
		cluster, want, wantErr string
	}{
		"an ExternalName Service: its host and target port":      {cluster: "member1", want: "estimator.member1.example:20000"},
		"no Service in the karmada-apiserver: the host's by DNS": {cluster: "member4", want: "karmada-scheduler-estimator-member4.karmada-system.svc:10352"},
		"an ExternalName Service without the port":               {cluster: "member2", wantErr: "Service karmada-system/karmada-scheduler-estimator-member2 has no port 10352"},
		"a Service of another type":                              {cluster: "member3", wantErr: "Service karmada-system/karmada-scheduler-estimator-member3 in the karmada-apiserver is of type ClusterIP; karmada-scheduler reads only ExternalName ones"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := u.resolve(context.Background(), tc.cluster)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("resolve = %q, %v; want error %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("resolve = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// serveFixed serves the estimator protocol answering fixed values, as a member's karmada-scheduler-estimator would,
// and returns its port.
func serveFixed(t *testing.T, replicas, sets, unschedulable int32) int32 {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fixed := func(v int32) func(context.Context, []byte) (int32, error) {
		return func(context.Context, []byte) (int32, error) { return v, nil }
	}
	srv := grpc.NewServer(grpc.ForceServerCodec(codec{}))
	srv.RegisterService(&grpc.ServiceDesc{ServiceName: serviceName, HandlerType: (*estimatorService)(nil), Methods: []grpc.MethodDesc{
		unary("MaxAvailableReplicas", fixed(replicas)),
		unary("MaxAvailableComponentSets", fixed(sets)),
		unary("GetUnschedulableReplicas", fixed(unschedulable)),
	}}, &Server{})
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return int32(lis.Addr().(*net.TCPAddr).Port)
}

// replicasRequestBytes is a MaxAvailableReplicasRequest as karmada-scheduler writes one (karmada_pb_test.go checks
// the readers against Karmada's own client).
func replicasRequestBytes(cluster, namespace, cpu string) []byte {
	quantity := protowire.AppendString(protowire.AppendTag(nil, quantityString, protowire.BytesType), cpu)
	entry := protowire.AppendString(protowire.AppendTag(nil, entryKey, protowire.BytesType), "cpu")
	entry = protowire.AppendBytes(protowire.AppendTag(entry, entryValue, protowire.BytesType), quantity)
	reqs := protowire.AppendBytes(protowire.AppendTag(nil, requirementsResourceRequestBytes, protowire.BytesType), entry)
	reqs = protowire.AppendString(protowire.AppendTag(reqs, requirementsNamespace, protowire.BytesType), namespace)
	b := protowire.AppendString(protowire.AppendTag(nil, replicasCluster, protowire.BytesType), cluster)
	return protowire.AppendBytes(protowire.AppendTag(b, replicasRequirements, protowire.BytesType), reqs)
}

// TestUpstream: with the members' estimators, the answer is the least of theirs and the quotas'.
func TestUpstream(t *testing.T) {
	member1 := serveFixed(t, 1, 0, 3) // the nodes of member1 take 1 more replica; 3 are unschedulable there
	member2 := serveFixed(t, 50, 0, 0)
	services := fake.NewClientBuilder().WithObjects(
		externalName("karmada-scheduler-estimator-member1", "127.0.0.1", 10352, member1),
		externalName("karmada-scheduler-estimator-member2", "127.0.0.1", 10352, member2),
		// member3's estimator is not running.
		externalName("karmada-scheduler-estimator-member3", "127.0.0.1", 10352, 1),
	).Build()
	upstream := NewUpstream(services, discovery.Lookup{Namespace: "karmada-system", Prefix: "karmada-scheduler-estimator", Port: 10352})
	t.Cleanup(upstream.Close)

	conn := dial(t, &Server{Estimator: New(ledgersOf(quotas())), Upstream: upstream})
	ask := func(method string, request []byte) int32 {
		t.Helper()
		call, done := context.WithTimeout(context.Background(), 10*time.Second)
		defer done()
		out := &frame{}
		if err := conn.Invoke(call, "/"+serviceName+"/"+method, &frame{b: request}, out, grpc.ForceCodec(codec{})); err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		v, err := parseInt32Response(out.b)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct {
		cluster, cpu string
		want         int32
	}{
		{cluster: "member1", cpu: "500m", want: 1},         // the quotas leave 4 (the EU group's 2 CPU), the nodes 1
		{cluster: "member2", cpu: "500m", want: 4},         // the quotas leave 4, the nodes 50
		{cluster: "member3", cpu: "500m", want: unlimited}, // no member limit, the member's estimator down: no bound
	} {
		if got := ask("MaxAvailableReplicas", replicasRequestBytes(tc.cluster, "shop", tc.cpu)); got != tc.want {
			t.Errorf("MaxAvailableReplicas on %s = %d, want %d", tc.cluster, got, tc.want)
		}
	}
	unschedulable := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "member1")
	if got := ask("GetUnschedulableReplicas", unschedulable); got != 3 {
		t.Errorf("GetUnschedulableReplicas = %d, want member1's estimator's 3", got)
	}
}

// TestRequestsCounted: every call is counted by whether a member limit bounded its answer.
func TestRequestsCounted(t *testing.T) {
	conn := dial(t, &Server{Estimator: New(ledgersOf(quotas()))})
	counter := func(result string) float64 {
		return testutil.ToFloat64(metrics.EstimatorRequests.WithLabelValues("MaxAvailableReplicas", result))
	}
	bounded, unbounded, failed := counter(metrics.EstimatorBounded), counter(metrics.EstimatorUnbounded), counter(metrics.EstimatorError)
	for _, request := range [][]byte{
		replicasRequestBytes("member1", "shop", "500m"), // the EU group bounds it
		replicasRequestBytes("member3", "shop", "500m"), // no member limit
		replicasRequestBytes("member3", "", "500m"),     // no namespace: an error
	} {
		_ = conn.Invoke(context.Background(), "/"+serviceName+"/MaxAvailableReplicas", &frame{b: request}, &frame{}, grpc.ForceCodec(codec{}))
	}
	if got := counter(metrics.EstimatorBounded) - bounded; got != 1 {
		t.Errorf("bounded answers counted %v, want 1", got)
	}
	if got := counter(metrics.EstimatorUnbounded) - unbounded; got != 1 {
		t.Errorf("unbounded answers counted %v, want 1", got)
	}
	if got := counter(metrics.EstimatorError) - failed; got != 1 {
		t.Errorf("errors counted %v, want 1", got)
	}
}
