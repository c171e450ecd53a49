package observations

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// activity is when a pool last got a request, as the leader's frontend
// statistics saw it.
type activity struct{ last time.Time }

// Touch records requests for a pool at.
func (s *Store) Touch(pool types.NamespacedName, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.initialise()
	if at.After(s.active[pool].last) {
		s.active[pool] = activity{last: at}
	}
}

// TouchNamespace records requests for every pool known in a namespace: a
// frontend that cannot be read keeps its pools active (unknown is not quiet).
func (s *Store) TouchNamespace(namespace string, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for pool, a := range s.active {
		if pool.Namespace == namespace && at.After(a.last) {
			s.active[pool] = activity{last: at}
		}
	}
}

// LastActive is when the pool last got a request; a pool first asked about
// counts as active now (a new leader does not idle pools it has not watched
// for their timeout).
func (s *Store) LastActive(pool types.NamespacedName, now time.Time) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.initialise()
	if _, ok := s.active[pool]; !ok {
		s.active[pool] = activity{last: now}
	}
	return s.active[pool].last
}
