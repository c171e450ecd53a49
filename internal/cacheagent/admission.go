package cacheagent

import (
	"sync"
	"time"
)

// FrequentHits decides when a response may be cached: once its key was asked
// for Threshold times within Period (IIS frequentHitThreshold and
// frequentHitTimePeriod), counted over a sliding window. nginx's own
// proxy_cache_min_uses counts within the cache's inactive time instead, which
// would tie the hit window to objectTTL.
type FrequentHits struct {
	threshold int
	period    time.Duration
	maxKeys   int

	mu        sync.Mutex
	keys      map[string][]time.Time // the last threshold request times of each key, oldest first
	lastSweep time.Time
}

// NewFrequentHits remembers at most maxKeys keys; a key it has no room for
// counts its requests one at a time (it is cached only with threshold 1).
func NewFrequentHits(threshold int, period time.Duration, maxKeys int) *FrequentHits {
	return &FrequentHits{threshold: max(1, threshold), period: period, maxKeys: maxKeys, keys: map[string][]time.Time{}}
}

// Request counts a request for key at now and says whether the key is now
// frequent enough to cache.
func (f *FrequentHits) Request(key string, now time.Time) bool {
	if f.threshold == 1 {
		return true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if now.Sub(f.lastSweep) >= f.period || len(f.keys) >= f.maxKeys {
		f.sweep(now)
	}
	times, known := f.keys[key]
	if !known && len(f.keys) >= f.maxKeys {
		return false
	}
	times = append(inWindow(times, now.Add(-f.period)), now)
	if len(times) >= f.threshold {
		delete(f.keys, key) // cached from now on; a later miss (evicted) counts afresh
		return true
	}
	f.keys[key] = times
	return false
}

// Tracked is how many keys the window holds.
func (f *FrequentHits) Tracked() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.keys)
}

// sweep forgets keys whose last request left the window.
func (f *FrequentHits) sweep(now time.Time) {
	since := now.Add(-f.period)
	for k, times := range f.keys {
		if !times[len(times)-1].After(since) {
			delete(f.keys, k)
		}
	}
	f.lastSweep = now
}

// inWindow drops the times at or before since (times are in order).
func inWindow(times []time.Time, since time.Time) []time.Time {
	i := 0
	for i < len(times) && !times[i].After(since) {
		i++
	}
	return times[i:]
}
