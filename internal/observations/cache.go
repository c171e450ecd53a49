package observations

import (
	"time"

	"k8s.io/apimachinery/pkg/types"

	v1 "webfarm.dev/operator/api/v1alpha1"
)

// CacheTier is what a cache tier's status is to show: the counters grown
// since its status last took them, and its current use over its pods.
type CacheTier struct {
	Grown       v1.CacheCounters
	Objects     int64
	MemoryBytes int64
}

// cacheTier keeps a tier's growth apart until it is published: its status
// changes at the collector's pace, not at every reading.
type cacheTier struct {
	growing   v1.CacheCounters
	published CacheTier
	ready     bool // published at least once
	// unreferencedSince is when the CachePolicy reconciler first saw no
	// route name the policy (zero: not seen so, or named again since).
	unreferencedSince time.Time
}

// AddCacheGrowth counts what a tier's agents counted since their previous reading.
func (s *Store) AddCacheGrowth(policy types.NamespacedName, grown v1.CacheCounters) {
	s.mu.Lock()
	defer s.mu.Unlock()
	AddCacheCounters(&s.tier(policy).growing, grown)
}

// PublishCacheTier makes a tier's growth so far, and its current use, due
// for its status.
func (s *Store) PublishCacheTier(policy types.NamespacedName, objects, memoryBytes int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tier(policy)
	AddCacheCounters(&t.published.Grown, t.growing)
	t.growing = v1.CacheCounters{}
	t.published.Objects, t.published.MemoryBytes, t.ready = objects, memoryBytes, true
}

// CacheTierDue is what a tier's status is to take; false: nothing published.
func (s *Store) CacheTierDue(policy types.NamespacedName) (CacheTier, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.cache[policy]
	if !ok || !t.ready {
		return CacheTier{}, false
	}
	return t.published, true
}

// CacheTierWritten takes the growth a successful status write added out of
// what is due; what was published since stays for the next write.
func (s *Store) CacheTierWritten(policy types.NamespacedName, written CacheTier) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.cache[policy]; ok {
		addScaled(&t.published.Grown, written.Grown, -1)
	}
}

// CacheTierUnreferencedSince is when the CachePolicy reconciler first saw
// no route name the policy (zero: it has not noted that).
func (s *Store) CacheTierUnreferencedSince(policy types.NamespacedName) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.cache[policy]; ok {
		return t.unreferencedSince
	}
	return time.Time{}
}

// NoteCacheTierUnreferenced notes since when no route names the policy; zero
// forgets the note (a route names it again). The tier's removal grace counts
// from this note. It lives in memory only: after the operator restarts, the
// grace starts again, so the tier serves a little longer, never less than
// the frontends need to stop routing through it.
func (s *Store) NoteCacheTierUnreferenced(policy types.NamespacedName, since time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if since.IsZero() {
		if t, ok := s.cache[policy]; ok {
			t.unreferencedSince = time.Time{}
		}
		return
	}
	s.tier(policy).unreferencedSince = since
}

// tier is a policy's figures, made on first use; s.mu is held.
func (s *Store) tier(policy types.NamespacedName) *cacheTier {
	s.initialise()
	t := s.cache[policy]
	if t == nil {
		t = &cacheTier{}
		s.cache[policy] = t
	}
	return t
}

// AddCacheCounters adds c to the counters at to.
func AddCacheCounters(to *v1.CacheCounters, c v1.CacheCounters) { addScaled(to, c, 1) }

func addScaled(to *v1.CacheCounters, c v1.CacheCounters, k int64) {
	to.Hits += k * c.Hits
	to.Misses += k * c.Misses
	to.Bypasses += k * c.Bypasses
	to.Stored += k * c.Stored
	to.Evicted += k * c.Evicted
	to.Flushed += k * c.Flushed
}
