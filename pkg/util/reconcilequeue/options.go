// Package reconcilequeue sets the work queue every controller of karmada-quota runs on.
package reconcilequeue

import (
	"k8s.io/utils/ptr"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
)

// Options are a controller's options with workers reconciling at once, on client-go's rate-limited work queue
// rather than controller-runtime's priority queue, its default since v0.22.
//
// The priority queue of controller-runtime v0.23 can deadlock on shutdown (kubernetes-sigs/controller-runtime#3538,
// fixed in v0.25 by #3540, which needs Kubernetes 0.37 libraries that Karmada v1.18 does not build with): its
// dispatcher hands a ready item to a worker by an unbuffered send while holding the queue's lock, and a worker that
// left on shutdown never receives it, so every worker that next asks for an item waits on that lock for good. The
// manager then waits out its whole graceful-shutdown timeout, and a replica leaving the lead releases its Lease that
// much later (met in test/integration/controller: a worker still waiting 5 s after the stop). Nothing here uses the
// priority queue's priorities.
func Options(workers int) crcontroller.Options {
	return crcontroller.Options{MaxConcurrentReconciles: workers, UsePriorityQueue: ptr.To(false)}
}
