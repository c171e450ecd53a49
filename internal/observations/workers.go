package observations

import (
	"maps"

	"k8s.io/apimachinery/pkg/types"
)

// SetRequests replaces a pool's request counts, keyed by worker IP.
func (s *Store) SetRequests(pool types.NamespacedName, byIP map[string]int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.initialise()
	s.requests[pool] = maps.Clone(byIP)
}

// SetMemory replaces a pool's memory readings, keyed by worker pod name.
func (s *Store) SetMemory(pool types.NamespacedName, byPod map[string]int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.initialise()
	s.memory[pool] = maps.Clone(byPod)
}

// Requests is what the frontends sent the worker at ip; false when they
// have no count for it.
func (s *Store) Requests(pool types.NamespacedName, ip string) (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.requests[pool][ip]
	return n, ok
}

// Memory is the worker pod's latest working set; false without a reading.
func (s *Store) Memory(pool types.NamespacedName, pod string) (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.memory[pool][pod]
	return n, ok
}
