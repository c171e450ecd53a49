package cacheagent

import (
	"testing"
	"time"
)

func TestFrequentHitsCountOverASlidingWindow(t *testing.T) {
	at := func(s float64) time.Time { return time.Unix(0, 0).Add(time.Duration(s * float64(time.Second))) }
	tests := []struct {
		name      string
		threshold int
		requests  []float64 // seconds
		want      []bool
	}{
		{"threshold 1 admits every request", 1, []float64{0, 100}, []bool{true, true}},
		{"threshold 2 admits the second request within the period", 2, []float64{0, 9.9}, []bool{false, true}},
		{"a second request after the period starts afresh", 2, []float64{0, 10, 15}, []bool{false, false, true}},
		{"threshold 3 needs three requests within any 10 s", 3, []float64{0, 6, 12, 14}, []bool{false, false, false, true}},
		{"a steady stream slower than threshold per period is never admitted", 3, []float64{0, 6, 12, 18, 24}, []bool{false, false, false, false, false}},
		{"once admitted a key counts afresh (a later miss means it was evicted)", 2, []float64{0, 1, 2, 3}, []bool{false, true, false, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := NewFrequentHits(tt.threshold, 10*time.Second, 100)
			for i, s := range tt.requests {
				if got := f.Request("k", at(s)); got != tt.want[i] {
					t.Errorf("request at %gs: %v, want %v", s, got, tt.want[i])
				}
			}
		})
	}
}

func TestFrequentHitsForgetQuietKeysAndStayBounded(t *testing.T) {
	f := NewFrequentHits(2, time.Second, 3)
	start := time.Unix(0, 0)
	for _, k := range []string{"a", "b", "c"} {
		f.Request(k, start)
	}
	if f.Request("d", start) {
		t.Error("a key beyond the bound was admitted at threshold 2")
	}
	if n := f.Tracked(); n != 3 {
		t.Errorf("%d keys tracked, want the bound 3", n)
	}
	f.Request("e", start.Add(2*time.Second))
	if n := f.Tracked(); n != 1 {
		t.Errorf("%d keys tracked after the period, want only the new one", n)
	}
}
