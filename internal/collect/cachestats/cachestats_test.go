package cachestats

import (
	"testing"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/cacheagent"
)

func TestACacheAgentsGrowthIsCountedOnce(t *testing.T) {
	tests := []struct {
		name        string
		before, now cacheagent.Stats
		want        v1.CacheCounters
	}{
		{"growth since the previous reading", cacheagent.Stats{Hits: 10, Misses: 2, Stored: 1}, cacheagent.Stats{Hits: 15, Misses: 3, Stored: 1, Evicted: 1},
			v1.CacheCounters{Hits: 5, Misses: 1, Evicted: 1}},
		{"a restarted agent counts from zero: all it counted is new", cacheagent.Stats{Hits: 100, Bypasses: 7}, cacheagent.Stats{Hits: 3, Bypasses: 1},
			v1.CacheCounters{Hits: 3, Bypasses: 1}},
		{"objects and memory are levels, not counters", cacheagent.Stats{Objects: 5, MemoryBytes: 1 << 20}, cacheagent.Stats{Objects: 9, MemoryBytes: 2 << 20},
			v1.CacheCounters{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := counterGrowth(tt.before, tt.now); got != tt.want {
				t.Errorf("growth %+v, want %+v", got, tt.want)
			}
		})
	}
}
