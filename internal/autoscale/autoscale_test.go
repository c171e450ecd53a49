package autoscale

import (
	"errors"
	"strings"
	"testing"
	"time"

	"webfarm.dev/operator/internal/capacity"
)

var t0 = time.Date(2026, 11, 22, 18, 0, 0, 0, time.UTC)

// contoso is the case study's policy for workers of one 550 MHz core (each
// offers 550 MHz; at 30 % a worker carries 165 MHz of load, 66 requests/s of
// 2.5 megacycles).
func contoso() Policy {
	return Policy{
		MinReplicas: 1, MaxReplicas: 20, TargetUtilization: 0.30,
		StabilizationWindow: 5 * time.Minute, ReplicaCores: 1, DefaultMHz: 550,
	}
}

// load is an observation of rps requests/s of 2.5 megacycles each, spread
// over n workers of mhz.
func load(at time.Time, rps float64, n int, mhz float64) Observation {
	ws := make([]capacity.Worker, n)
	for i := range ws {
		ws[i] = capacity.Worker{Cores: rps * 2.5 / mhz / float64(n), MHz: mhz}
	}
	return Observation{At: at, RequestsPerSecond: rps, Workers: ws, Complete: true}
}

func TestDecide(t *testing.T) {
	fallback := int32(6)
	tests := []struct {
		name    string
		policy  func(p *Policy)
		current int32
		history []Observation // decided first, from the same current count
		obs     Observation
		want    int32
		reason  string // a part of the reason
	}{
		{"150 requests/s of 2.5 megacycles at 30 % on 550 MHz workers need 3 (1,250 MHz)", nil, 1, nil,
			load(t0, 150, 1, 550), 3, "needs 1250 MHz"},
		{"the campaign's 600 requests/s need 10 workers (5,000 MHz)", nil, 3, nil,
			load(t0, 600, 3, 550), 10, "10 workers"},
		{"an announced peak is planned before it comes", func(p *Policy) { p.ForecastRequestsPerSecond = 600 }, 3, nil,
			load(t0, 150, 3, 550), 10, ""},
		{"the count stays within maxReplicas", func(p *Policy) { p.MaxReplicas = 4 }, 3, nil,
			load(t0, 600, 3, 550), 4, ""},
		{"a lower need waits for the stabilisation window", nil, 10, nil,
			load(t0, 150, 10, 550), 10, "holding until the stabilisation window"},
		{"after a window of lower need the pool scales in", nil, 10,
			[]Observation{load(t0, 150, 10, 550), load(t0.Add(3*time.Minute), 150, 10, 550)},
			load(t0.Add(6*time.Minute), 150, 10, 550), 3, ""},
		{"a peak within the window keeps its count", nil, 10,
			[]Observation{load(t0, 150, 10, 550), load(t0.Add(3*time.Minute), 400, 10, 550)},
			load(t0.Add(6*time.Minute), 150, 10, 550), 7, "most recommended"},
		{"incomplete data never scales in", nil, 10,
			[]Observation{load(t0, 150, 10, 550)},
			func() Observation { o := load(t0.Add(6*time.Minute), 150, 10, 550); o.Complete = false; return o }(), 10, "not every worker"},
		{"incomplete data still scales out", nil, 3, nil,
			func() Observation { o := load(t0, 600, 3, 550); o.Complete = false; return o }(), 10, ""},
		{"unavailable metrics hold the count", nil, 5, nil,
			Observation{At: t0, Err: errors.New("prometheus: timeout")}, 5, "metrics unavailable"},
		{"unavailable metrics follow the fallback upwards", func(p *Policy) { p.FallbackReplicas = &fallback }, 5, nil,
			Observation{At: t0, Err: errors.New("no series")}, 6, "holding 6"},
		{"unavailable metrics never go below the current count, whatever the fallback", func(p *Policy) { p.FallbackReplicas = &fallback }, 8, nil,
			Observation{At: t0, Err: errors.New("no series")}, 8, ""},
		{"a NaN reading is unavailable, not zero", nil, 5, nil,
			Observation{At: t0, RequestsPerSecond: nanValue(), Complete: true}, 5, "metrics unavailable"},
		{"no requests keep the minimum, not zero (idle shutdown is separate)", func(p *Policy) { p.MinReplicas = 2 }, 2, nil,
			load(t0, 0, 2, 550), 2, ""},
		{"a pool above a lowered maximum comes down to it at once", func(p *Policy) { p.MaxReplicas = 4 }, 8, nil,
			load(t0, 600, 8, 550), 4, "down to maxReplicas"},
		{"workers on 900 MHz nodes carry more: 600 requests/s need 6 (5,000 / 900 = 5.6)", nil, 3, nil,
			load(t0, 600, 3, 900), 6, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := contoso()
			if tt.policy != nil {
				tt.policy(&p)
			}
			var s State
			for _, o := range tt.history {
				s.Decide(p, tt.current, o)
			}
			d := s.Decide(p, tt.current, tt.obs)
			if d.Replicas != tt.want {
				t.Errorf("%d replicas, want %d (%s)", d.Replicas, tt.want, d.Reason)
			}
			if d.Scaled != (d.Replicas != tt.current) {
				t.Errorf("Scaled %v for %d -> %d", d.Scaled, tt.current, d.Replicas)
			}
			if !strings.Contains(d.Reason, tt.reason) {
				t.Errorf("reason %q, want it to say %q", d.Reason, tt.reason)
			}
		})
	}
}

// Seed Table 7.13's scale-out: 4 x 550 MHz and 4 x 900 MHz at 1,900
// requests/s, both saturated. A CPU-% autoscaler sees both at 100 % and
// cannot tell that a 900 MHz worker carries 1.6 times the load; counting
// cycles, the pool's cost is 3.05 megacycles a request whichever node serves.
func TestWorkersOnNodesOfDifferentClockRatesAddUpInCycles(t *testing.T) {
	p := contoso()
	p.MaxReplicas = 100
	var ws []capacity.Worker
	for range 4 {
		ws = append(ws, capacity.Worker{Cores: 1, MHz: 550}, capacity.Worker{Cores: 1, MHz: 900})
	}
	var s State
	d := s.Decide(p, 8, Observation{At: t0, RequestsPerSecond: 1900, Workers: ws, Complete: true})
	if got := d.Measured.MegacyclesPerRequest; got < 3.05 || got > 3.06 {
		t.Errorf("%.3f megacycles/request, want 3.05", got)
	}
	// 5,800 MHz used at 30 % needs 19,333 MHz: 27 workers at the pool's mean of 725 MHz.
	if d.Replicas != 27 {
		t.Errorf("%d replicas, want 27 (%s)", d.Replicas, d.Reason)
	}
}

func TestAWorkerWhoseNodeNamesNoClockCountsAtTheDefault(t *testing.T) {
	var s State
	d := s.Decide(contoso(), 1, Observation{At: t0, RequestsPerSecond: 220, Workers: []capacity.Worker{{Cores: 1}}, Complete: true})
	if got := d.Measured.MegacyclesPerRequest; got != 2.5 {
		t.Errorf("%.3f megacycles/request, want 550 / 220 = 2.5", got)
	}
}

// Requests while no worker is measured (all of them starting) say nothing
// of what a request costs: the last known cost stays, and without one the
// figures are unknown.
func TestRequestsWithoutAMeasuredWorkerKeepTheLastKnownCost(t *testing.T) {
	var s State
	noWorker := Observation{At: t0, RequestsPerSecond: 150, Complete: true}
	if d := s.Decide(contoso(), 3, noWorker); !d.MetricsUnavailable || d.Replicas != 3 {
		t.Errorf("without any known cost: %+v, want metrics unavailable and 3 held", d)
	}
	s.Decide(contoso(), 3, load(t0.Add(15*time.Second), 150, 3, 550))
	noWorker.At = t0.Add(30 * time.Second)
	d := s.Decide(contoso(), 3, noWorker)
	if d.Measured == nil || d.Measured.MegacyclesPerRequest != 2.5 || d.Replicas != 3 {
		t.Errorf("%+v, want the last cost 2.5 and 3 workers", d)
	}
}

func nanValue() float64 {
	zero := 0.0
	return zero / zero
}

// Four 550 MHz workers: 220 requests/s (1,833 MHz) need all four; 190
// (1,583 MHz) need three, but not with 15 % more (1,821 MHz); 120 (1,000
// MHz) need two, and three with 15 % more.
func TestAPoolScalesInWithAMarginForNoise(t *testing.T) {
	at := func(minutes int, rps float64) Observation {
		return load(t0.Add(time.Duration(minutes)*time.Minute), rps, 4, 550)
	}
	tests := []struct {
		name    string
		history []Observation
		obs     Observation
		want    int32
		reason  string
	}{
		{"a need within 15 % of the count keeps a count needed within the last three windows",
			[]Observation{at(0, 220), at(3, 190), at(6, 190)}, at(9, 190), 4, "holding: 4 is the most recommended within the last 5m0s with a 15 % margin"},
		{"three windows after the count was last needed the pool scales in, even within the margin",
			[]Observation{at(0, 220), at(3, 190), at(6, 190), at(9, 190), at(12, 190)}, at(16, 190), 3, "3 is the most recommended within the last 15m0s"},
		{"a need that falls further scales in after one window, to the count that leaves the margin",
			[]Observation{at(0, 220), at(3, 120)}, at(6, 120), 3, "3 is the most recommended within the last 5m0s with a 15 % margin"},
		{"a need that has stayed low for three windows scales in to the count it needs",
			[]Observation{at(0, 220), at(3, 120), at(6, 120), at(9, 120), at(12, 120)}, at(16, 120), 2, "within the last 15m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s State
			for _, o := range tt.history {
				s.Decide(contoso(), 4, o)
			}
			d := s.Decide(contoso(), 4, tt.obs)
			if d.Replicas != tt.want || !strings.Contains(d.Reason, tt.reason) {
				t.Errorf("%d replicas (%s), want %d (%s)", d.Replicas, d.Reason, tt.want, tt.reason)
			}
		})
	}
}

// A fixed pool's report measures and recommends as Decide would, by the same
// rules for unknown figures, and never changes the pool's workers.
func TestReport(t *testing.T) {
	tests := []struct {
		name            string
		history         []Observation
		current         int32
		obs             Observation
		wantMeasured    bool
		wantRecommended int32
		reason          string
	}{
		{"the case study's 600 requests/s recommend 10 workers to a pool fixed at 3, which keeps 3", nil, 3,
			load(t0, 600, 3, 550), true, 10, "10 workers recommended; a report only: keeping its fixed 3"},
		{"a light load recommends fewer workers than the pool runs, and it keeps them", nil, 10,
			load(t0, 150, 10, 550), true, 3, "needs 1250 MHz: 3 workers recommended"},
		{"a worker without figures is reported as an understatement", nil, 3,
			func() Observation { o := load(t0, 600, 3, 550); o.Complete = false; return o }(), true, 10, "may understate"},
		{"unavailable metrics give no figures", nil, 3,
			Observation{At: t0, Err: errors.New("prometheus: timeout")}, false, 3, "metrics unavailable (prometheus: timeout)"},
		{"a NaN reading gives no figures, not zero", nil, 3,
			Observation{At: t0, RequestsPerSecond: nanValue(), Complete: true}, false, 3, "metrics unavailable"},
		{"requests without a measured worker and no earlier cost give no figures", nil, 3,
			Observation{At: t0, RequestsPerSecond: 150, Complete: true}, false, 3, "no worker measured"},
		{"a pool without load is planned at its last known cost", []Observation{load(t0, 150, 2, 550)}, 2,
			load(t0.Add(15*time.Second), 0, 2, 550), true, 1, "0.0 requests/s x 2.50 megacycles/request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s State
			for _, o := range tt.history {
				s.Report(contoso(), tt.current, o)
			}
			d := s.Report(contoso(), tt.current, tt.obs)
			if d.Replicas != tt.current || d.Scaled {
				t.Errorf("%d replicas (scaled %v), want the fixed %d kept", d.Replicas, d.Scaled, tt.current)
			}
			if (d.Measured != nil) != tt.wantMeasured || d.MetricsUnavailable == tt.wantMeasured {
				t.Errorf("measured %+v, metrics unavailable %v; want measured %v", d.Measured, d.MetricsUnavailable, tt.wantMeasured)
			}
			if tt.wantMeasured && d.Recommended != tt.wantRecommended {
				t.Errorf("%d recommended, want %d (%s)", d.Recommended, tt.wantRecommended, d.Reason)
			}
			if !strings.Contains(d.Reason, tt.reason) {
				t.Errorf("reason %q, want it to say %q", d.Reason, tt.reason)
			}
		})
	}
}
