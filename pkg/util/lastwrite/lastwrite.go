// Package lastwrite remembers the objects a process wrote until its informer has seen them, so that the process
// decides its next write on the newest version it knows, not on the informer's older copy. Kubernetes'
// ResourceQuota admission keeps the same memory of its own quota updates, comparing resourceVersions as integers.
// Whatever it returns may still be stale (another writer moved on): it is only ever a base for a write with a
// resourceVersion precondition, which catches that.
package lastwrite

import (
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Store holds, per object, the last version this process wrote while it is newer than the informer's.
type Store[T client.Object] struct {
	mu      sync.Mutex
	written map[types.NamespacedName]T
}

// NewStore returns an empty store.
func NewStore[T client.Object]() *Store[T] {
	return &Store[T]{written: map[types.NamespacedName]T{}}
}

// Remember keeps a copy of obj, as a write returned it.
func (s *Store[T]) Remember(obj T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.written[client.ObjectKeyFromObject(obj)] = obj.DeepCopyObject().(T)
}

// Newest returns a copy of the newer of cached (the informer's copy) and the last write of the same object, and
// forgets the write once the informer has caught up with it or the object was recreated.
func (s *Store[T]) Newest(cached T) T {
	key := client.ObjectKeyFromObject(cached)
	s.mu.Lock()
	defer s.mu.Unlock()
	own, ok := s.written[key]
	if ok && own.GetUID() == cached.GetUID() && Newer(own.GetResourceVersion(), cached.GetResourceVersion()) {
		return own.DeepCopyObject().(T)
	}
	if ok {
		delete(s.written, key)
	}
	return cached.DeepCopyObject().(T)
}

// Written returns a copy of the last write of the object at key, while one is remembered: for an object the
// informer has not listed yet (this process just created it). It may have been deleted since; whoever finds so
// calls Forget.
func (s *Store[T]) Written(key types.NamespacedName) (T, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	own, ok := s.written[key]
	if !ok {
		return own, false
	}
	return own.DeepCopyObject().(T), true
}

// Forget drops what is remembered of the object at key (it was deleted).
func (s *Store[T]) Forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.written, key)
}

// Len is how many writes are remembered.
func (s *Store[T]) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.written)
}

// Newer reports whether resourceVersion a is newer than b. The apiserver hands out etcd's revisions, increasing
// integers; a version that is not one is never called newer, so the informer's copy is used.
func Newer(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	return errA == nil && errB == nil && x > y
}
