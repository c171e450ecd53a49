package main

import (
	"errors"
	"slices"
	"testing"
)

func TestFewestPods(t *testing.T) {
	tests := []struct {
		name    string
		rps     float64
		nodeMHz func(int) float64
		want    int
	}{
		{"600 requests/s of 2.5 megacycles at 30 % take 10 pods of 550 MHz (5,000 MHz)", 600, sameNodes(slowMHz), 10},
		{"594 requests/s take exactly 9", 594, sameNodes(slowMHz), 9},
		{"on alternating nodes 600 requests/s take 8 (4 x 550 + 4 x 900 = 5,800 MHz)", 600, alternateNodes, 8},
		{"no load keeps the minimum", 0, sameNodes(slowMHz), 1},
		{"a load beyond the maximum gets the maximum", 1e6, sameNodes(slowMHz), 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fewestPods(tt.rps, 2.5, 1, 0.30, tt.nodeMHz, 1, 50); got != tt.want {
				t.Errorf("%d pods, want %d", got, tt.want)
			}
		})
	}
}

func TestOraclePlan(t *testing.T) {
	tests := []struct {
		name       string
		need       []int
		delaySteps int
		want       []int
	}{
		{"a pod starts one start delay before it is needed", []int{1, 1, 1, 2, 2, 1, 1}, 2, []int{1, 2, 2, 2, 2, 1, 1}},
		{"a pod goes as soon as it is no longer needed", []int{3, 1, 1, 1}, 1, []int{3, 1, 1, 1}},
		{"a pod needed again within a start delay keeps running", []int{2, 1, 2, 1, 1}, 1, []int{2, 2, 2, 1, 1}},
		{"without a start delay the plan is the need", []int{1, 3, 2}, 0, []int{1, 3, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := oraclePlan(tt.need, tt.delaySteps); !slices.Equal(got, tt.want) {
				t.Errorf("plan %v, want %v", got, tt.want)
			}
		})
	}
}

func TestObservation(t *testing.T) {
	tests := []struct {
		name     string
		r        reading
		workers  int
		complete bool
		err      error
	}{
		{"ready pods with a CPU figure are the workers", reading{requestsMeasured: true, pods: []podReading{
			{ready: true, measured: true, cores: 0.3, mhz: 550}, {ready: true, measured: true, cores: 0.2, mhz: 900}}}, 2, true, nil},
		{"pods not yet ready are not workers", reading{requestsMeasured: true, pods: []podReading{
			{ready: true, measured: true, cores: 0.3, mhz: 550}, {ready: false, measured: true}}}, 1, true, nil},
		{"a ready pod without a CPU figure makes the observation incomplete", reading{requestsMeasured: true, pods: []podReading{
			{ready: true, measured: true, cores: 0.3, mhz: 550}, {ready: true}}}, 1, false, nil},
		{"no requests series is an error, not zero", reading{pods: []podReading{{ready: true, measured: true}}}, 0, true, errNoSeries},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := observation(tt.r)
			if len(o.Workers) != tt.workers || o.Complete != tt.complete || !errors.Is(o.Err, tt.err) {
				t.Errorf("%d workers, complete %v, error %v; want %d, %v, %v", len(o.Workers), o.Complete, o.Err, tt.workers, tt.complete, tt.err)
			}
		})
	}
}
