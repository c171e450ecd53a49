package observations

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// QueueRefusals are the requests a pool's queue refused, full or waited
// too long, that its status does not hold yet, and when the last was seen.
type QueueRefusals struct {
	Rejected, TimedOut int64
	Last               time.Time
}

// AddRefusals counts a pool's new refusals, seen at.
func (s *Store) AddRefusals(pool types.NamespacedName, rejected, timedOut int64, at time.Time) {
	if rejected == 0 && timedOut == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.initialise()
	r := s.refusals[pool]
	r.Rejected += rejected
	r.TimedOut += timedOut
	r.Last = at
	s.refusals[pool] = r
}

// Refusals are a pool's refusals not yet in its status; false: none.
func (s *Store) Refusals(pool types.NamespacedName) (QueueRefusals, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.refusals[pool]
	return r, ok
}

// RefusalsWritten takes what a successful status write added out of a
// pool's refusals; those counted since stay for the next write.
func (s *Store) RefusalsWritten(pool types.NamespacedName, written QueueRefusals) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.refusals[pool]
	if !ok {
		return
	}
	r.Rejected -= written.Rejected
	r.TimedOut -= written.TimedOut
	if r.Rejected == 0 && r.TimedOut == 0 {
		delete(s.refusals, pool)
		return
	}
	s.refusals[pool] = r
}
