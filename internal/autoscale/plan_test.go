package autoscale

import (
	"slices"
	"strings"
	"testing"
	"time"

	"webfarm.dev/operator/internal/capacity"
)

// One 550 MHz worker carries 66 requests/s of 2.5 megacycles at 30 %: 132
// requests/s need 2 workers, 198 need 3, 264 need 4.
func TestARisingLoadIsPlannedOneLeadAhead(t *testing.T) {
	tests := []struct {
		name    string
		lead    time.Duration
		history []Observation
		obs     Observation
		want    int32
		reason  string
	}{
		{"without a lead the measured load is planned", 0,
			[]Observation{load(t0, 132, 3, 550)},
			load(t0.Add(2*time.Minute), 198, 3, 550), 3, ""},
		{"a load that rose over the lead is planned to rise as much again", 2 * time.Minute,
			[]Observation{load(t0, 132, 3, 550), load(t0.Add(time.Minute), 165, 3, 550)},
			load(t0.Add(2*time.Minute), 198, 3, 550), 4, "rising to 264.0 requests/s within 2m0s"},
		{"only the rise within the lead counts", 2 * time.Minute,
			[]Observation{load(t0, 66, 3, 550), load(t0.Add(time.Minute), 198, 3, 550)},
			load(t0.Add(3*time.Minute), 198, 3, 550), 3, ""},
		{"a falling load is planned as measured", 2 * time.Minute,
			[]Observation{load(t0, 264, 3, 550)},
			load(t0.Add(2*time.Minute), 198, 3, 550), 3, ""},
		{"the first observation has no rise to plan", 2 * time.Minute, nil,
			load(t0, 198, 3, 550), 3, ""},
		{"unavailable metrics in the history plan nothing", 2 * time.Minute,
			[]Observation{{At: t0, RequestsPerSecond: nanValue(), Complete: true}},
			load(t0.Add(time.Minute), 198, 3, 550), 3, ""},
		{"a reading above the one a lead ago plans no rise when the trend of the last ten minutes is flat", 2 * time.Minute,
			every(15*time.Second, slices.Repeat([]float64{132, 198, 140, 190}, 9)...),
			load(t0.Add(36*15*time.Second), 198, 3, 550), 3, ""},
		{"a step plans no rise once the reading a lead ago has it too", 2 * time.Minute,
			every(15*time.Second, 66, 66, 66, 66, 66, 66, 66, 66, 66, 66, 198, 198, 198, 198, 198, 198, 198, 198),
			load(t0.Add(18*15*time.Second), 198, 3, 550), 3, ""},
		{"a steady rise over ten minutes is planned a lead ahead", 2 * time.Minute,
			every(time.Minute, 110, 118.8, 127.6, 136.4, 145.2, 154, 162.8, 171.6, 180.4, 189.2),
			load(t0.Add(10*time.Minute), 198, 3, 550), 4, "rising to 215.6 requests/s within 2m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := contoso()
			p.ScaleUpLead = tt.lead
			var s State
			for _, o := range tt.history {
				s.Decide(p, 3, o)
			}
			d := s.Decide(p, 3, tt.obs)
			if d.Replicas != tt.want {
				t.Errorf("%d replicas, want %d (%s)", d.Replicas, tt.want, d.Reason)
			}
			if d.Measured.RequestsPerSecond != tt.obs.RequestsPerSecond {
				t.Errorf("measured %.1f requests/s, want the observation's %.1f", d.Measured.RequestsPerSecond, tt.obs.RequestsPerSecond)
			}
			if !strings.Contains(d.Reason, tt.reason) {
				t.Errorf("reason %q, want it to say %q", d.Reason, tt.reason)
			}
		})
	}
}

// A round-robin frontend gives every worker the same requests, so on mixed
// nodes the cycles a pool offers depend on which workers it keeps.
func TestWorkersOnMixedClocksCountAtTheirOwnClocks(t *testing.T) {
	mixed := func(rps float64, mhz ...float64) Observation {
		ws := make([]capacity.Worker, len(mhz))
		for i, m := range mhz {
			ws[i] = capacity.Worker{Cores: rps * 2.5 / float64(len(mhz)) / m, MHz: m}
		}
		return Observation{At: t0, RequestsPerSecond: rps, Workers: ws, Complete: true}
	}
	tests := []struct {
		name string
		obs  Observation
		want int32
	}{
		{"70 requests/s (583 MHz) keep both a 550 and a 900 MHz worker: the 900 may be the one removed",
			mixed(70, 550, 900), 2},
		{"60 requests/s (500 MHz) fit the slower worker alone", mixed(60, 900, 550), 1},
		{"2,000 MHz fit the two slowest of four alternating workers and one fast one",
			mixed(240, 550, 900, 550, 900), 3},
		{"new workers count at the pool's mean clock: 2,500 MHz on 550 + 900 need 2 more of 725",
			mixed(300, 550, 900), 4},
		{"three 900 MHz workers and one 550 offer 3,250 MHz: 3,300 need one more",
			mixed(396, 900, 900, 900, 550), 5},
		{"no load keeps the minimum", mixed(0, 550, 900), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s State
			d := s.Decide(contoso(), int32(len(tt.obs.Workers)), tt.obs)
			if d.Recommended != tt.want {
				t.Errorf("%d recommended, want %d (%s)", d.Recommended, tt.want, d.Reason)
			}
		})
	}
}

// every is observations of the loads (requests/s on 3 workers of 550 MHz)
// from t0, one every interval.
func every(interval time.Duration, loads ...float64) []Observation {
	obs := make([]Observation, len(loads))
	for i, rps := range loads {
		obs[i] = load(t0.Add(time.Duration(i)*interval), rps, 3, 550)
	}
	return obs
}

func TestTrendPerSecond(t *testing.T) {
	at := func(seconds ...float64) []measuredLoad {
		loads := make([]measuredLoad, len(seconds))
		for i, rps := range seconds {
			loads[i] = measuredLoad{at: t0.Add(time.Duration(i) * 15 * time.Second), requestsPerSecond: rps}
		}
		return loads
	}
	tests := []struct {
		name     string
		loads    []measuredLoad
		from, to float64
	}{
		{"a straight line's trend is its slope", at(100, 103, 106, 109), 0.2, 0.2},
		{"noise around a flat line has no trend", at(100, 130, 80, 120, 90, 110, 70, 125, 100), -100, 0},
		{"a noisy rise counts for less than its slope", at(100, 115, 105, 125, 115, 135, 125, 145), 0.1, 0.6},
		{"two readings give no trend", at(100, 200), 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := trendPerSecond(tt.loads); got < tt.from-1e-9 || got > tt.to+1e-9 {
				t.Errorf("%.4f requests/s per second, want %.4f to %.4f", got, tt.from, tt.to)
			}
		})
	}
}
