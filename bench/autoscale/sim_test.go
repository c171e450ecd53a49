package main

import (
	"strings"
	"testing"
)

// fixed is a controller that keeps a count, whatever it reads.
type fixed int

func (f fixed) decide(int, int, func() reading) int { return int(f) }

// flat is a case of a constant load for an hour on 550 MHz pods.
func flat(rps float64) scenario {
	return scenario{key: "flat", length: int(hour), load: constant(rps), megacycles: constant(2.5), nodeMHz: sameNodes(slowMHz)}
}

func TestSimulate(t *testing.T) {
	c := defaults()
	tests := []struct {
		name    string
		sc      scenario
		ctl     controller
		initial int
		want    result
	}{
		{"a count that carries the load is never above the cap", flat(198), fixed(3), 3,
			result{replicaMinutes: 180, minutesAboveCap: 0, actions: 0, peakReplicas: 3}},
		{"one pod too few is above the cap every minute", flat(198), fixed(2), 2,
			result{replicaMinutes: 120, minutesAboveCap: 60, actions: 0, peakReplicas: 2}},
		{"a scale-out is an action, and its pods are above the cap until ready", flat(198), fixed(3), 2,
			result{replicaMinutes: 180 - 0.25, minutesAboveCap: 1, actions: 1, peakReplicas: 3}},
		{"a minute with load and no ready pod is above the cap", flat(10), fixed(1), 0,
			result{replicaMinutes: 60 - 0.25, minutesAboveCap: 1, actions: 1, peakReplicas: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := simulate(tt.sc, c, tt.ctl, c.sync, tt.initial)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("%+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestTheOracleIsNeverAboveTheCap(t *testing.T) {
	c := defaults()
	for _, sc := range scenarios() {
		if sc.key != "flash-crowd" {
			continue
		}
		need := needs(sc, c)
		r, err := simulate(sc, c, &oracle{plan: oraclePlan(need, c.podStartDelay/c.step), step: c.step}, c.step, initialReplicas(need, c))
		if err != nil {
			t.Fatal(err)
		}
		if r.minutesAboveCap != 0 || r.peakReplicas != 19 {
			t.Errorf("%+v, want no minute above the cap and a peak of 19 pods (1,200 requests/s)", r)
		}
	}
}

func TestSimulationErrors(t *testing.T) {
	c := defaults()
	tests := []struct {
		name string
		sc   scenario
		ctl  controller
		want string
	}{
		{"a count beyond the maximum is an error", flat(100), fixed(51), "outside"},
		{"a negative load is an error", flat(-1), fixed(1), "load"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := simulate(tt.sc, c, tt.ctl, c.sync, 1)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want it to say %q", err, tt.want)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(c *config)
		ok     bool
	}{
		{"the defaults are valid", func(*config) {}, true},
		{"a pod start delay that is not a multiple of the step is an error", func(c *config) { c.podStartDelay = 42 }, false},
		{"a rate window of fewer than two scrapes is an error", func(c *config) { c.rateWindow = 15 }, false},
		{"a step that does not divide a minute is an error", func(c *config) { c.step = 7 }, false},
		{"a zero step is an error, not a division by zero", func(c *config) { c.step = 0 }, false},
		{"a cap above 1 is an error", func(c *config) { c.utilizationCap = 1.5 }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := defaults()
			tt.change(&c)
			if err := c.validate(); (err == nil) != tt.ok {
				t.Errorf("error %v, want ok %v", err, tt.ok)
			}
		})
	}
}
