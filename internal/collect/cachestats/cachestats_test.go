package cachestats

import (
	"testing"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/vocabulary"
)

func TestACacheAgentsGrowthIsCountedOnce(t *testing.T) {
	tests := []struct {
		name        string
		before, now vocabulary.AgentStats
		want        v1.CacheCounters
	}{
		{"growth since the previous reading", vocabulary.AgentStats{Hits: 10, Misses: 2, Stored: 1}, vocabulary.AgentStats{Hits: 15, Misses: 3, Stored: 1, Evicted: 1},
			v1.CacheCounters{Hits: 5, Misses: 1, Evicted: 1}},
		{"a restarted agent counts from zero: all it counted is new", vocabulary.AgentStats{Hits: 100, Bypasses: 7}, vocabulary.AgentStats{Hits: 3, Bypasses: 1},
			v1.CacheCounters{Hits: 3, Bypasses: 1}},
		{"objects and memory are levels, not counters", vocabulary.AgentStats{Objects: 5, MemoryBytes: 1 << 20}, vocabulary.AgentStats{Objects: 9, MemoryBytes: 2 << 20},
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
