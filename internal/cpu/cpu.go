// Package cpu is the IIS CPU monitor's arithmetic: how much of its CPU a
// pool uses, and since when it has stayed over its limit. Pure; the
// operator feeds it readings and clock times.
package cpu

import (
	"sync"
	"time"
)

// Percent is the share of the pool's CPU (the sum of its workers' limits)
// that it used, in percent; 0 when the pool has no CPU (no workers).
func Percent(usedCores, limitCores float64) float64 {
	if limitCores <= 0 {
		return 0
	}
	return 100 * usedCores / limitCores
}

// Reading is a pool's latest CPU figure and since when it has been over
// its limit (zero: not over).
type Reading struct {
	Percent   float64
	OverSince time.Time
	// Over: over the limit for the whole interval.
	Over bool
}

// Tracker keeps each pool's latest reading. Safe for concurrent use.
type Tracker struct {
	mu    sync.Mutex
	pools map[string]Reading
}

// Observe records a pool's use against its limit (percent) and returns
// whether the pool is now over its limit for at least interval, and whether
// that changed with this reading.
func (t *Tracker) Observe(pool string, percent float64, limit int32, interval time.Duration, now time.Time) (over, changed bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pools == nil {
		t.pools = map[string]Reading{}
	}
	prev := t.pools[pool]
	next := Reading{Percent: percent}
	if percent > float64(limit) {
		next.OverSince = prev.OverSince
		if next.OverSince.IsZero() {
			next.OverSince = now
		}
	}
	next.Over = !next.OverSince.IsZero() && now.Sub(next.OverSince) >= interval
	t.pools[pool] = next
	return next.Over, next.Over != prev.Over
}

// Latest is a pool's latest reading.
func (t *Tracker) Latest(pool string) Reading {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.pools[pool]
}

// Forget drops a pool's readings (on restart or deletion).
func (t *Tracker) Forget(pool string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.pools, pool)
}
