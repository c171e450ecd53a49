package main

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// rounds is a route measured in rounds with these requests/s and CPU
// times per request.
func rounds(rps []float64, micros []int) *routeResult {
	r := &routeResult{}
	for i := range rps {
		r.samples = append(r.samples, sample{requestsPerSecond: rps[i], frontCPU: time.Duration(micros[i]) * time.Microsecond})
	}
	return r
}

func TestEnvoyGatewayMarkdown(t *testing.T) {
	tests := []struct {
		name     string
		farm, eg *routeResult
		want     []string
	}{
		{"a farm as fast and as cheap as Envoy Gateway's configuration passes both",
			// Round ratios of req/s 1.0, 1.1, 0.95 (median 1.0); of CPU 1.0, 0.9, 1.05 (median 1.0).
			rounds([]float64{1000, 1100, 950}, []int{100, 90, 105}), rounds([]float64{1000, 1000, 1000}, []int{100, 100, 100}),
			[]string{"| 1000 | 1000 | 1.00x | PASS | 100 µs | 100 µs | 1.00x | PASS |"}},
		{"a farm slower and dearer than Envoy Gateway's configuration misses both",
			rounds([]float64{900, 900}, []int{120, 120}), rounds([]float64{1000, 1000}, []int{100, 100}),
			[]string{"| 900 | 1000 | 0.90x | MISS | 120 µs | 100 µs | 1.20x | MISS |"}},
		{"the two targets are judged apart",
			rounds([]float64{1100, 1100}, []int{110, 110}), rounds([]float64{1000, 1000}, []int{100, 100}),
			[]string{"| 1.10x | PASS |", "| 1.10x | MISS |"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.farm.farm, tt.eg.envoyGateway = true, true
			minimal := rounds([]float64{2000}, []int{50})
			minimal.minimal = true
			res := &workloadResult{w: headline, proto: protoH2, routes: []*routeResult{minimal, tt.eg, tt.farm}}
			out := envoyGatewayMarkdown([]*workloadResult{res})
			for _, w := range slices.Concat(tt.want, []string{"| IIS 6 headline: one 15 KB file, keep-alive | HTTP/2 over TLS 1.3 (ALPN h2) |", "egctl " + envoyGatewayVersion}) {
				if !strings.Contains(out, w) {
					t.Errorf("the table lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestEnvoyGatewayIsLeftOutOfARunWithoutIt(t *testing.T) {
	farm := hopCPU(100)
	farm.farm = true
	if out := envoyGatewayMarkdown([]*workloadResult{{w: headline, routes: []*routeResult{farm}}}); out != "" {
		t.Errorf("a table without Envoy Gateway's configuration:\n%s", out)
	}
	r := &report{o: options{}, results: []*workloadResult{{w: headline, routes: []*routeResult{farm}}}}
	if out := r.markdown(); strings.Contains(out, "Envoy Gateway") {
		t.Errorf("a report of a run without Envoy Gateway's configuration names it:\n%s", out)
	}
}

func TestTheReportDescribesEnvoyGatewaysPathWhenItRuns(t *testing.T) {
	r := &report{o: options{envoyGateway: true}}
	if out := r.markdown(); !strings.Contains(out, "| Envoy Gateway | the same binary and arguments with Envoy Gateway's configuration") {
		t.Errorf("the report does not describe Envoy Gateway's path:\n%s", out)
	}
}
