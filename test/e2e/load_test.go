package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// userLoad plays the users of one namespace: a few workers that create Deployments with their
// PropagationPolicies (Divided or Duplicated over every member), scale them up and down and delete them, a fixed
// number of operations spread evenly over a duration, so that a fault injected meanwhile meets writes in flight.
// Every operation is one user action (a create writes the Deployment and its policy, a delete removes both); each
// is recorded with its time and error, so a fault's legitimate failures can be told from the others.
type userLoad struct {
	ns       string
	ops      int
	interval time.Duration
	maxLive  int

	start time.Time
	next  int // the next operation to issue; guarded by mu
	mu    sync.Mutex
	// idle are the Deployments no worker is operating on, by name; a worker takes one out for its operation, so no
	// two operations race on one object.
	idle    map[string]*loadDeployment
	busy    int
	created int
	results []opResult
	// progress is signalled after every operation, for waitEnded.
	progress *sync.Cond

	stop chan struct{}
	done sync.WaitGroup
}

// loadDeployment is what the load knows of one of its Deployments.
type loadDeployment struct {
	name       string
	replicas   int32
	cpu        string
	duplicated bool
}

type opKind string

const (
	opCreate opKind = "create"
	opScale  opKind = "scale"
	opDelete opKind = "delete"
)

// opResult is how one user operation ended.
type opResult struct {
	kind opKind
	name string
	// at is when the operation was sent; took how long it took.
	at   time.Time
	took time.Duration
	err  error
}

// Requests of the load's replicas: two sizes, so that placements of different widths compete for the quota.
var loadCPUs = []string{"500m", "1"}

// startLoad starts workers issuing ops operations in ns, evenly spread over duration, with at most maxLive
// Deployments at once.
func startLoad(ns string, ops, workers int, duration time.Duration, maxLive int) *userLoad {
	l := &userLoad{
		ns: ns, ops: ops, interval: duration / time.Duration(max(ops, 1)), maxLive: maxLive,
		idle: map[string]*loadDeployment{}, stop: make(chan struct{}), start: time.Now(),
	}
	l.progress = sync.NewCond(&l.mu)
	for w := range workers {
		l.done.Add(1)
		go func() {
			defer l.done.Done()
			defer GinkgoRecover()
			rng := rand.New(rand.NewPCG(uint64(GinkgoRandomSeed()), uint64(w)))
			for l.work(rng) {
			}
		}()
	}
	return l
}

// work issues the next operation when it is due; false once every operation has been issued or the load stopped.
func (l *userLoad) work(rng *rand.Rand) bool {
	l.mu.Lock()
	if l.next >= l.ops {
		l.mu.Unlock()
		return false
	}
	i := l.next
	l.next++
	l.mu.Unlock()
	select {
	case <-time.After(time.Until(l.start.Add(time.Duration(i) * l.interval))):
	case <-l.stop:
		return false
	}
	kind, d := l.pick(rng)
	at := time.Now()
	err := l.do(kind, d)
	l.mu.Lock()
	defer l.mu.Unlock()
	defer l.progress.Broadcast()
	l.results = append(l.results, opResult{kind: kind, name: d.name, at: at, took: time.Since(at), err: err})
	l.busy--
	switch {
	case kind == opDelete:
		// Gone, or, when the delete failed, maybe gone: nobody acts on it again, so no later operation is refused
		// for a name that may no longer exist.
	case kind == opCreate && err != nil:
		// The create may or may not have happened (or only the Deployment, without its policy): left alone too.
	default:
		l.idle[d.name] = d
	}
	return true
}

// pick chooses the next operation and takes its Deployment out of the pool: creates while the namespace holds
// few Deployments, otherwise mostly scales, sometimes deletes.
func (l *userLoad) pick(rng *rand.Rand) (opKind, *loadDeployment) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.busy++
	live := len(l.idle) + l.busy - 1
	roll := rng.Float64()
	if len(l.idle) == 0 || (live < l.maxLive && roll < 0.35) {
		l.created++
		return opCreate, &loadDeployment{
			name:       fmt.Sprintf("load-%04d", l.created),
			replicas:   int32(1 + rng.IntN(3)),
			cpu:        loadCPUs[rng.IntN(len(loadCPUs))],
			duplicated: rng.IntN(3) == 0,
		}
	}
	names := make([]string, 0, len(l.idle))
	for name := range l.idle {
		names = append(names, name)
	}
	sort.Strings(names)
	d := l.idle[names[rng.IntN(len(names))]]
	delete(l.idle, d.name)
	if roll > 0.8 {
		return opDelete, d
	}
	replicas := int32(rng.IntN(5))
	if replicas == d.replicas {
		replicas = (replicas + 1) % 5
	}
	d.replicas = replicas
	return opScale, d
}

func (l *userLoad) do(kind opKind, d *loadDeployment) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	switch kind {
	case opCreate:
		placement := divided()
		if d.duplicated {
			placement = duplicated()
		}
		if err := karmada.Create(ctx, deployment(l.ns, d.name, d.replicas, d.cpu, "64Mi")); err != nil {
			return err
		}
		return karmada.Create(ctx, propagation(l.ns, d.name, "apps/v1", "Deployment", placement))
	case opScale:
		patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, d.replicas)
		return karmada.Patch(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: l.ns, Name: d.name}},
			client.RawPatch(types.MergePatchType, []byte(patch)))
	default:
		if err := karmada.Delete(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: l.ns, Name: d.name}}); err != nil {
			return err
		}
		return karmada.Delete(ctx, propagation(l.ns, d.name, "apps/v1", "Deployment", divided()))
	}
}

// waitEnded waits until n operations have ended.
func (l *userLoad) waitEnded(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.results) < min(n, l.ops) {
		l.progress.Wait()
	}
}

// wait waits until every operation has been issued and has ended.
func (l *userLoad) wait() []opResult {
	l.done.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]opResult(nil), l.results...)
}

// halt stops issuing operations (a spec that failed midway) and waits for those in flight.
func (l *userLoad) halt() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	l.done.Wait()
}

// unavailable reports whether err says the karmada-apiserver, or the etcd behind it, could not serve the request:
// what a client sees while one of them restarts. Anything else (a denial, a conflict, a missing object) is never
// explained by a restart.
func unavailable(err error) bool {
	if err == nil {
		return false
	}
	if apierrors.IsServiceUnavailable(err) || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) ||
		apierrors.IsTooManyRequests(err) || apierrors.IsInternalError(err) {
		return true
	}
	var netErr net.Error
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) {
		return true
	}
	// What etcd and the apiserver's HTTP/2 connections say when the other end goes away mid-request.
	for _, s := range []string{"etcdserver:", "http2: client connection lost", "http2: server sent GOAWAY",
		"connection reset by peer", "connection refused", "apiserver is shutting down"} {
		if strings.Contains(err.Error(), s) {
			return true
		}
	}
	return false
}
