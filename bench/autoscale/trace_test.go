package main

import (
	"math"
	"testing"
)

func TestTheTracesHaveTheSeedsFigures(t *testing.T) {
	contoso := contosoDays(1, 2)
	flash := product(contosoDays(1), surge(clock(20, 0), 60, 15*60, 4))
	tests := []struct {
		name         string
		load         trace
		from, to     float64
		mean, peak   float64
		meanAccuracy float64
	}{
		{"the normal day averages 139 requests/s (12,000,000 a day) and peaks at 300", contoso, 0, day, 139, 300, 1},
		{"the campaign day doubles it: 278 on average, 600 at the peak", contoso, day, 2 * day, 278, 600, 1},
		{"the evening peak holds 300 requests/s from 18:00 to 23:00", contoso, clock(18, 0), clock(23, 0), 300, 300, 1e-9},
		{"the campaign's evening holds 600", contoso, day + clock(18, 0), day + clock(23, 0), 600, 600, 1e-9},
		{"the flash crowd is 4x the evening's 300 for 15 minutes", flash, clock(20, 1), clock(20, 16), 1200, 1200, 1e-9},
		{"the flash crowd is over two minutes after it has fallen", flash, clock(20, 17), clock(20, 30), 300, 300, 1e-9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mean, peak := meanAndPeak(tt.load, tt.from, tt.to)
			if math.Abs(mean-tt.mean) > tt.meanAccuracy {
				t.Errorf("mean %.2f requests/s, want %.2f", mean, tt.mean)
			}
			if math.Abs(peak-tt.peak) > 1e-9 {
				t.Errorf("peak %.2f requests/s, want %.2f", peak, tt.peak)
			}
		})
	}
}

func TestPiecewiseLinear(t *testing.T) {
	tr := piecewiseLinear([]knot{{0, 10}, {10, 20}, {20, 0}})
	tests := []struct {
		name string
		at   float64
		want float64
	}{
		{"before the first knot holds its value", -5, 10},
		{"between two knots lies on the line joining them", 5, 15},
		{"on a knot is its value", 10, 20},
		{"a falling segment falls", 15, 10},
		{"after the last knot holds its value", 30, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tr(tt.at); math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("at %v: %v, want %v", tt.at, got, tt.want)
			}
		})
	}
}

func TestSurgeAndStep(t *testing.T) {
	s := surge(100, 60, 900, 4)
	dearer := step(100, 2.5, 3.5)
	tests := []struct {
		name string
		got  float64
		want float64
	}{
		{"a surge starts at 1x", s(100), 1},
		{"a surge is halfway up after half its rise", s(130), 2.5},
		{"a surge reaches its multiple within a minute", s(160), 4},
		{"a surge holds its multiple", s(1000), 4},
		{"a surge falls back to 1x over its rise", s(1120), 1},
		{"a release's cost is the old one before it", dearer(99), 2.5},
		{"a release's cost is the new one a minute after", dearer(160), 3.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if math.Abs(tt.got-tt.want) > 1e-9 {
				t.Errorf("%v, want %v", tt.got, tt.want)
			}
		})
	}
}
