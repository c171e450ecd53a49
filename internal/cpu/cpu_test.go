package cpu

import (
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	for _, tt := range []struct {
		name        string
		used, limit float64
		want        float64
	}{
		{"half of the pool's CPU is 50 percent", 0.05, 0.1, 50},
		{"a pool without workers uses nothing", 0.3, 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Percent(tt.used, tt.limit); got != tt.want {
				t.Errorf("Percent(%v, %v) = %v, want %v", tt.used, tt.limit, got, tt.want)
			}
		})
	}
}

func TestTrackerActsOnlyAfterTheWholeInterval(t *testing.T) {
	var tr Tracker
	t0 := time.Date(2026, 11, 22, 4, 0, 0, 0, time.UTC)
	interval := 10 * time.Second
	steps := []struct {
		name          string
		at            time.Duration
		percent       float64
		over, changed bool
	}{
		{"a pool under its limit is not over", 0, 40, false, false},
		{"the first reading over the limit starts the clock", 5 * time.Second, 90, false, false},
		{"before the interval has passed nothing happens", 10 * time.Second, 95, false, false},
		{"once the interval has passed the pool is over", 15 * time.Second, 99, true, true},
		{"staying over changes nothing", 20 * time.Second, 99, true, false},
		{"one reading under the limit ends it", 25 * time.Second, 10, false, true},
		{"going over again starts a new interval", 30 * time.Second, 90, false, false},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			over, changed := tr.Observe("web/shop", s.percent, 50, interval, t0.Add(s.at))
			if over != s.over || changed != s.changed {
				t.Errorf("over, changed = %v, %v; want %v, %v", over, changed, s.over, s.changed)
			}
		})
	}
}
