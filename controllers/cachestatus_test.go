package controllers

import (
	"testing"

	v1 "webfarm.dev/operator/api/v1alpha1"
)

func TestTheHitPercentIsHitsOverEveryRequest(t *testing.T) {
	tests := []struct {
		name string
		c    v1.CacheCounters
		want string
	}{
		{"no request yet shows nothing", v1.CacheCounters{}, ""},
		{"bypasses count as requests not served from the cache", v1.CacheCounters{Hits: 9, Misses: 0, Bypasses: 1}, "90.0%"},
		{"one decimal", v1.CacheCounters{Hits: 2, Misses: 1}, "66.7%"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := hitPercent(tt.c); got != tt.want {
				t.Errorf("%q, want %q", got, tt.want)
			}
		})
	}
}
