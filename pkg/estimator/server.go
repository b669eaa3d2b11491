package estimator

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"

	"github.com/karmada-quota/karmada-quota/pkg/metrics"
)

// Server serves an Estimator to karmada-scheduler over gRPC. It is a controller-runtime Runnable of every webhook
// replica (no leader election: each answers from its own informer).
type Server struct {
	// Address is host:port to listen on.
	Address   string
	Estimator *Estimator
	// TLS, when set, makes the server serve TLS (karmada-scheduler's --scheduler-estimator-ca-file then verifies
	// it); nil serves plain gRPC, as karmada-scheduler-estimator does by default.
	TLS *tls.Config
	// Upstream, when set, are the members' own estimators: each call is put to the member's too, and the answer is
	// the least of both.
	Upstream *Upstream
}

// NeedLeaderElection: every replica serves.
func (s *Server) NeedLeaderElection() bool { return false }

// Start serves until ctx ends, then stops gracefully.
func (s *Server) Start(ctx context.Context) error {
	lis, err := (&net.ListenConfig{}).Listen(ctx, "tcp", s.Address)
	if err != nil {
		return fmt.Errorf("estimator: listening on %s: %w", s.Address, err)
	}
	return s.serve(ctx, lis)
}

// serve serves on lis until ctx ends.
func (s *Server) serve(ctx context.Context, lis net.Listener) error {
	opts := []grpc.ServerOption{grpc.ForceServerCodec(codec{})}
	if s.TLS != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(s.TLS)))
	}
	srv := grpc.NewServer(opts...)
	srv.RegisterService(s.serviceDesc(), s)
	klog.FromContext(ctx).Info("Serving the scheduler estimator", "address", lis.Addr().String(), "tls", s.TLS != nil)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	select {
	case <-ctx.Done():
		// In-flight calls finish: karmada-scheduler bounds each by its --scheduler-estimator-timeout (3s).
		srv.GracefulStop()
		<-served
		if s.Upstream != nil {
			s.Upstream.Close()
		}
		return nil
	case err := <-served:
		return fmt.Errorf("estimator: serving on %s: %w", lis.Addr(), err)
	}
}

// noNamespace is the answer to a request that names no namespace: Karmada v1.18 puts a binding's namespace (and
// priority class) into its replica requirements only with karmada-controller-manager's ResourceQuotaEstimate gate.
// karmada-scheduler logs the answer and places without this estimator.
const noNamespace = "the request names no namespace, so no quota can be told: start karmada-controller-manager with " +
	"--feature-gates=ResourceQuotaEstimate=true, which writes it into each binding's spec.replicaRequirements"

// estimatorService is the HandlerType grpc.RegisterService checks Server against.
type estimatorService interface {
	Start(context.Context) error
}

func (s *Server) serviceDesc() *grpc.ServiceDesc {
	return &grpc.ServiceDesc{
		ServiceName: serviceName,
		HandlerType: (*estimatorService)(nil),
		Methods: []grpc.MethodDesc{
			unary("MaxAvailableReplicas", s.maxAvailableReplicas),
			unary("MaxAvailableComponentSets", s.maxAvailableComponentSets),
			unary("GetUnschedulableReplicas", s.unschedulableReplicas),
		},
		Metadata: "service.proto",
	}
}

// unary adapts an answer to a gRPC method: the request's bytes in, one int32 out.
func unary(method string, answer func(ctx context.Context, request []byte) (int32, error)) grpc.MethodDesc {
	return grpc.MethodDesc{
		MethodName: method,
		Handler: func(_ any, ctx context.Context, decode func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			in := &frame{}
			if err := decode(in); err != nil {
				return nil, err
			}
			v, err := answer(ctx, in.b)
			switch {
			case err != nil:
				metrics.EstimatorRequests.WithLabelValues(method, metrics.EstimatorError).Inc()
				return nil, err
			case v < unlimited:
				metrics.EstimatorRequests.WithLabelValues(method, metrics.EstimatorBounded).Inc()
			default:
				metrics.EstimatorRequests.WithLabelValues(method, metrics.EstimatorUnbounded).Inc()
			}
			return &frame{b: int32Response(v)}, nil
		},
	}
}

func (s *Server) maxAvailableReplicas(ctx context.Context, b []byte) (int32, error) {
	r, err := parseReplicasRequest(b)
	if err != nil {
		return 0, status.Errorf(codes.InvalidArgument, "MaxAvailableReplicasRequest: %v", err)
	}
	if r.cluster == "" {
		return 0, status.Error(codes.InvalidArgument, "MaxAvailableReplicasRequest: no cluster")
	}
	if r.namespace == "" {
		return 0, status.Error(codes.InvalidArgument, noNamespace)
	}
	n, err := s.Estimator.MaxReplicas(ctx, r.cluster, r.namespace, r.priorityClass, r.requests)
	if err != nil {
		return 0, status.Errorf(codes.Unavailable, "namespace %s: %v", r.namespace, err)
	}
	n = s.leastWithUpstream(ctx, r.cluster, "MaxAvailableReplicas", b, n)
	klog.FromContext(ctx).V(4).Info("Estimated", "cluster", r.cluster, "namespace", r.namespace, "priorityClass", r.priorityClass,
		"requests", r.requests, "maxReplicas", n)
	return n, nil
}

// leastWithUpstream is the least of ours and the member estimator's answer to the same request. A member estimator
// that cannot answer leaves ours: the quotas' room holds whatever the nodes can take, and karmada-scheduler still
// has the Cluster's resource summary.
func (s *Server) leastWithUpstream(ctx context.Context, cluster, method string, request []byte, ours int32) int32 {
	if s.Upstream == nil {
		return ours
	}
	theirs, ok, err := s.Upstream.ask(ctx, cluster, method, request)
	if err != nil {
		klog.FromContext(ctx).V(2).Info("The member's estimator did not answer; answering from the quotas alone", "cluster", cluster, "err", err)
	}
	if ok {
		return min(ours, theirs)
	}
	return ours
}

func (s *Server) maxAvailableComponentSets(ctx context.Context, b []byte) (int32, error) {
	r, err := parseComponentSetsRequest(b)
	if err != nil {
		return 0, status.Errorf(codes.InvalidArgument, "MaxAvailableComponentSetsRequest: %v", err)
	}
	if r.cluster == "" {
		return 0, status.Error(codes.InvalidArgument, "MaxAvailableComponentSetsRequest: no cluster")
	}
	if r.namespace == "" {
		return 0, status.Error(codes.InvalidArgument, noNamespace)
	}
	n, err := s.Estimator.MaxSets(ctx, r.cluster, r.namespace, r.components)
	if err != nil {
		return 0, status.Errorf(codes.Unavailable, "namespace %s: %v", r.namespace, err)
	}
	return s.leastWithUpstream(ctx, r.cluster, "MaxAvailableComponentSets", b, n), nil
}

// unschedulableReplicas answers karmada-descheduler: a quota makes no placed replica unschedulable (admission
// refuses a placement before its pods exist), so the answer is the member estimator's, or none.
func (s *Server) unschedulableReplicas(ctx context.Context, b []byte) (int32, error) {
	if s.Upstream == nil {
		return 0, nil
	}
	cluster, err := parseCluster(b)
	if err != nil {
		return 0, status.Errorf(codes.InvalidArgument, "UnschedulableReplicasRequest: %v", err)
	}
	n, ok, err := s.Upstream.ask(ctx, cluster, "GetUnschedulableReplicas", b)
	if err != nil {
		return 0, status.Error(codes.Unavailable, err.Error())
	}
	if !ok {
		return 0, nil
	}
	return n, nil
}
