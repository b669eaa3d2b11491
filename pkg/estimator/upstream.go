package estimator

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karmada-quota/karmada-quota/pkg/estimator/discovery"
)

// Upstream is the estimator each member cluster already has, karmada-scheduler-estimator, reached as
// karmada-scheduler reaches it. karmada-scheduler finds one estimator per member, by one Service prefix: pointed at
// karmada-quota's, it would no longer ask the member's, and would place by the Cluster's resource summary alone. So
// the estimator asks the member's too and answers the least of both, as karmada-scheduler would have.
type Upstream struct {
	// services reads the karmada-apiserver's Services, where an ExternalName Service may say where a member's
	// estimator is.
	services client.Reader
	lookup   discovery.Lookup

	mu sync.Mutex
	// conns are the connections by cluster; one that fails is dropped, and the next call resolves again.
	conns map[string]*grpc.ClientConn
}

// NewUpstream returns the member estimators found as karmada-scheduler finds karmada-scheduler-estimator (its
// --scheduler-estimator-service-namespace, -prefix and -port as they are set for it).
func NewUpstream(services client.Reader, lookup discovery.Lookup) *Upstream {
	return &Upstream{services: services, lookup: lookup, conns: map[string]*grpc.ClientConn{}}
}

// unauthentic is karmada-scheduler-estimator's "no answer" (Karmada's UnauthenticReplica).
const unauthentic = -1

// ask sends a request, as received, to cluster's estimator and returns its answer; ok is false when it gave none.
func (u *Upstream) ask(ctx context.Context, cluster, method string, request []byte) (answer int32, ok bool, err error) {
	conn, err := u.conn(ctx, cluster)
	if err != nil {
		return 0, false, err
	}
	out := &frame{}
	if err := conn.Invoke(ctx, "/"+serviceName+"/"+method, &frame{b: request}, out, grpc.ForceCodec(codec{})); err != nil {
		u.drop(cluster, conn)
		return 0, false, fmt.Errorf("asking the estimator of cluster %s: %w", cluster, err)
	}
	answer, err = parseInt32Response(out.b)
	if err != nil {
		return 0, false, fmt.Errorf("the answer of the estimator of cluster %s: %w", cluster, err)
	}
	return answer, answer != unauthentic, nil
}

func (u *Upstream) conn(ctx context.Context, cluster string) (*grpc.ClientConn, error) {
	u.mu.Lock()
	c, ok := u.conns[cluster]
	u.mu.Unlock()
	if ok {
		return c, nil
	}
	// Resolved without the lock: karmada-scheduler asks about every cluster at once, and one slow Service read must
	// not hold up the calls to the others' estimators.
	address, err := u.resolve(ctx, cluster)
	if err != nil {
		return nil, err
	}
	// Plain gRPC, as karmada-scheduler dials karmada-scheduler-estimator unless given certificates.
	c, err = grpc.NewClient(address, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("the estimator of cluster %s at %s: %w", cluster, address, err)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if first, ok := u.conns[cluster]; ok {
		// Another call resolved it meanwhile: one connection per cluster.
		_ = c.Close()
		return first, nil
	}
	u.conns[cluster] = c
	return c, nil
}

func (u *Upstream) drop(cluster string, c *grpc.ClientConn) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.conns[cluster] == c {
		delete(u.conns, cluster)
		_ = c.Close()
	}
}

// resolve finds cluster's estimator as karmada-scheduler v1.18.2 does (pkg/estimator/client, resolveCluster): an
// ExternalName Service <prefix>-<cluster> in the karmada-apiserver names its host and, as the int target port of
// the Service port numbered port, its port; without such a Service, the Service of that name in the host cluster,
// by its DNS name.
func (u *Upstream) resolve(ctx context.Context, cluster string) (string, error) {
	ns, name, port := u.lookup.Namespace, u.lookup.ServiceName(cluster), u.lookup.Port
	var svc corev1.Service
	err := u.services.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &svc)
	if apierrors.IsNotFound(err) {
		return net.JoinHostPort(name+"."+ns+".svc", strconv.Itoa(int(port))), nil
	}
	if err != nil {
		return "", fmt.Errorf("reading Service %s/%s: %w", ns, name, err)
	}
	if svc.Spec.Type != corev1.ServiceTypeExternalName {
		return "", fmt.Errorf("Service %s/%s in the karmada-apiserver is of type %s; karmada-scheduler reads only ExternalName ones", ns, name, svc.Spec.Type)
	}
	for _, p := range svc.Spec.Ports {
		if p.Port == port {
			if p.TargetPort.IntValue() == 0 {
				return "", fmt.Errorf("Service %s/%s: port %d has no numbered target port", ns, name, port)
			}
			return net.JoinHostPort(svc.Spec.ExternalName, strconv.Itoa(p.TargetPort.IntValue())), nil
		}
	}
	return "", fmt.Errorf("Service %s/%s has no port %d", ns, name, port)
}

// Close closes every connection.
func (u *Upstream) Close() {
	u.mu.Lock()
	defer u.mu.Unlock()
	for cluster, c := range u.conns {
		_ = c.Close()
		delete(u.conns, cluster)
	}
}

// parseInt32Response reads the one int32 field of a response.
func parseInt32Response(b []byte) (int32, error) {
	var v int32
	err := eachField(b, func(num protowire.Number, typ protowire.Type, _ []byte, number uint64) error {
		if num == responseValue && typ == protowire.VarintType {
			v = int32(number)
		}
		return nil
	})
	return v, err
}
