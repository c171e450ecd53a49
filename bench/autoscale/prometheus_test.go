package main

import (
	"math"
	"testing"
)

func TestRate(t *testing.T) {
	// Scraped every 15 s from 10 s on: idle, then 20 a second between the
	// scrapes at 40 and 55 s, then 10 a second.
	var s series
	for _, sm := range []sample{{10, 0}, {25, 0}, {40, 0}, {55, 300}, {70, 450}, {85, 600}, {100, 750}} {
		s.record(sm.at, sm.value, 1000)
	}
	tests := []struct {
		name     string
		now      int
		window   int
		want     float64
		wantLast int
		ok       bool
	}{
		{"a counter's rate is its increase between the first and last samples in the window", 100, 60, 10, 100, true},
		{"a sample exactly a window old is left out", 85, 45, 10, 85, true},
		{"samples newer than now are not seen", 60, 60, 300.0 / 45, 55, true},
		{"one sample in the window gives no rate", 100, 15, 0, 0, false},
		{"no sample in the window gives no rate", 400, 60, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, last, ok := s.rate(tt.now, tt.window)
			if ok != tt.ok || math.Abs(got-tt.want) > 1e-9 || last != tt.wantLast {
				t.Errorf("rate %v (newest %d, %v), want %v (newest %d, %v)", got, last, ok, tt.want, tt.wantLast, tt.ok)
			}
		})
	}
}

func TestASeriesKeepsOnlyWhatAWindowReaches(t *testing.T) {
	var s series
	for at := 0; at <= 300; at += 15 {
		s.record(at, 0, 75)
	}
	if got := len(s.samples); got != 5 {
		t.Errorf("%d samples kept, want the 5 of the last 75 s", got)
	}
}
