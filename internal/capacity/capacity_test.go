package capacity

import (
	"errors"
	"math"
	"testing"
)

// saturated is n processors of mhz each, all busy.
func saturated(n int, mhz float64) []Worker {
	ws := make([]Worker, n)
	for i := range ws {
		ws[i] = Worker{Cores: 1, MHz: mhz}
	}
	return ws
}

func near(got, want, tolerance float64) bool { return math.Abs(got-want) <= tolerance }

// The figures of the IIS 6.0 case study (seed 000); Table 7.13 rounds its
// figures (2,200 / 900 = 2.44 is printed 2.45, 5,800 / 1,900 = 3.05 is 3.1).
func TestMegacyclesPerRequestReproduceTheCaseStudy(t *testing.T) {
	tests := []struct {
		name     string
		workers  []Worker
		rps      float64
		want     float64
		accuracy float64
	}{
		{"4 x 550 MHz saturated at 893 requests/s cost about 2.46 megacycles a request", saturated(4, 550), 893, 2.4636, 0.0001},
		{"Table 7.13: 4 x 550 MHz at 900 requests/s is 2.45", saturated(4, 550), 900, 2.45, 0.05},
		{"Table 7.13: 8 x 900 MHz at 1,900 requests/s is 3.8", saturated(8, 900), 1900, 3.8, 0.05},
		{"Table 7.13: 4 x 550 MHz + 4 x 900 MHz at 1,900 requests/s is 3.1", append(saturated(4, 550), saturated(4, 900)...), 1900, 3.1, 0.05},
		{"one pod using half a core of a 900 MHz node at 180 requests/s is 2.5", []Worker{{Cores: 0.5, MHz: 900}}, 180, 2.5, 1e-9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := MegacyclesPerRequest(tt.workers, tt.rps)
			if err != nil {
				t.Fatal(err)
			}
			if !near(got, tt.want, tt.accuracy) {
				t.Errorf("%.4f megacycles/request, want %.4f", got, tt.want)
			}
		})
	}
}

func TestRequiredMegahertzReproduceTheCaseStudy(t *testing.T) {
	tests := []struct {
		name                       string
		forecast, observed, mc, tu float64
		want                       float64
	}{
		{"150 requests/s x 2.5 megacycles at full use is 375 MHz", 150, 0, 2.5, 1, 375},
		{"600 requests/s x 2.5 at the 30 % policy is 5,000 MHz", 600, 0, 2.5, 0.30, 5000},
		{"the observed load counts when it exceeds the forecast", 300, 600, 2.5, 0.30, 5000},
		{"the forecast counts when it exceeds the observed load (an announced peak)", 600, 139, 2.5, 0.30, 5000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := RequiredMegahertz(tt.forecast, tt.observed, tt.mc, tt.tu)
			if err != nil {
				t.Fatal(err)
			}
			if !near(got, tt.want, 1e-6) {
				t.Errorf("%.3f MHz, want %.3f", got, tt.want)
			}
		})
	}
}

func TestReplicas(t *testing.T) {
	tests := []struct {
		name             string
		required, perPod float64
		minimum, maximum int32
		want             int32
	}{
		{"5,000 MHz on 4 x 550 MHz servers takes 3 of them", 5000, 2200, 1, 10, 3},
		{"5,000 MHz on 8 x 900 MHz servers takes 1", 5000, 7200, 1, 10, 1},
		{"an exact multiple takes no extra worker", 4400, 2200, 1, 10, 2},
		{"a rounding excess over a whole number starts no extra worker", 4400.000001, 2200, 1, 10, 2},
		{"no load still keeps the minimum", 0, 2200, 2, 10, 2},
		{"the maximum caps the count", 1e6, 2200, 1, 10, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Replicas(tt.required, tt.perPod, tt.minimum, tt.maximum)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("%d replicas, want %d", got, tt.want)
			}
		})
	}
}

func TestMeasurementsThatGiveNoFigureAreErrorsNotZero(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	tests := []struct {
		name string
		err  func() error
		is   error
	}{
		{"no requests", func() error { _, err := MegacyclesPerRequest(saturated(1, 550), 0); return err }, ErrNoRequests},
		{"NaN requests per second", func() error { _, err := MegacyclesPerRequest(saturated(1, 550), nan); return err }, ErrInvalid},
		{"infinite CPU", func() error { _, err := MegacyclesPerRequest([]Worker{{Cores: inf, MHz: 550}}, 10); return err }, ErrInvalid},
		{"a negative clock rate", func() error { _, err := MegacyclesPerRequest([]Worker{{Cores: 1, MHz: -550}}, 10); return err }, ErrInvalid},
		{"a NaN cost", func() error { _, err := RequiredMegahertz(10, 10, nan, 0.3); return err }, ErrInvalid},
		{"a zero target utilisation", func() error { _, err := RequiredMegahertz(10, 10, 2.5, 0); return err }, nil},
		{"a replica of zero megahertz", func() error { _, err := Replicas(100, 0, 1, 10); return err }, ErrInvalid},
		{"a minimum above the maximum", func() error { _, err := Replicas(100, 550, 5, 2); return err }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.err()
			if err == nil {
				t.Fatal("no error")
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v, want %v", err, tt.is)
			}
		})
	}
}

// A CPU-% autoscaler sees the 550 MHz pod twice as busy as the 900 MHz pod
// doing the same work; counting cycles gives the same cost for both.
func TestWorkersOnSlowerNodesCostTheSameCyclesPerRequest(t *testing.T) {
	slow, err := MegacyclesPerRequest([]Worker{{Cores: 0.9, MHz: 550}}, 200)
	if err != nil {
		t.Fatal(err)
	}
	fast, err := MegacyclesPerRequest([]Worker{{Cores: 0.55, MHz: 900}}, 200)
	if err != nil {
		t.Fatal(err)
	}
	if !near(slow, fast, 1e-9) {
		t.Errorf("%.4f and %.4f megacycles/request for the same work", slow, fast)
	}
}
