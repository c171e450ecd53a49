// Package observations holds what the collectors see of each pool's
// workers between two decisions: the requests the frontends sent each
// worker and each worker's memory. The collectors write; the AppPool
// controller reads when it decides. Safe for concurrent use.
package observations

import (
	"maps"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// Workers holds the per-worker figures of every pool.
type Workers struct {
	mu       sync.Mutex
	requests map[types.NamespacedName]map[string]int64 // pool -> worker IP -> requests
	memory   map[types.NamespacedName]map[string]int64 // pool -> worker pod -> bytes
}

// SetRequests replaces a pool's request counts, keyed by worker IP.
func (w *Workers) SetRequests(pool types.NamespacedName, byIP map[string]int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.requests == nil {
		w.requests = map[types.NamespacedName]map[string]int64{}
	}
	w.requests[pool] = maps.Clone(byIP)
}

// SetMemory replaces a pool's memory readings, keyed by worker pod name.
func (w *Workers) SetMemory(pool types.NamespacedName, byPod map[string]int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.memory == nil {
		w.memory = map[types.NamespacedName]map[string]int64{}
	}
	w.memory[pool] = maps.Clone(byPod)
}

// Requests is what the frontends sent the worker at ip; false when they
// have no count for it.
func (w *Workers) Requests(pool types.NamespacedName, ip string) (int64, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, ok := w.requests[pool][ip]
	return n, ok
}

// Memory is the worker pod's latest working set; false without a reading.
func (w *Workers) Memory(pool types.NamespacedName, pod string) (int64, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, ok := w.memory[pool][pod]
	return n, ok
}

// Forget drops a deleted pool's figures.
func (w *Workers) Forget(pool types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.requests, pool)
	delete(w.memory, pool)
}
