package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
)

func TestFeaturePairs(t *testing.T) {
	full := &route{name: "farm", farm: true}
	noLog := &route{name: "farm, no log", farm: true, feature: "access log"}
	noIDs := &route{name: "farm, no ids", farm: true, feature: "request IDs"}
	minimal := &route{name: "minimal", minimal: true}
	pairs, others, got, err := featurePairs([]*route{minimal, full, noLog, noIDs})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pairs {
		if p.after != "farm" {
			t.Errorf("%s is measured against %s, not the farm as rendered", p.before, p.after)
		}
		names = append(names, p.before)
	}
	if want := []string{"access log", "request IDs", allOfOurs}; !slices.Equal(names, want) {
		t.Errorf("pairs %v, want %v", names, want)
	}
	if got != full || !slices.Equal(others, []*route{noLog, noIDs, minimal}) {
		t.Errorf("the farm %v, the others %v", got, others)
	}
	if _, _, _, err := featurePairs([]*route{noLog, minimal}); err == nil {
		t.Error("a run without the farm as rendered was accepted")
	}
}

func TestFeaturesMarkdown(t *testing.T) {
	p := &stepPair{before: "access log", after: "farm"}
	for _, cpu := range [][2]int{{110, 100}, {104, 100}, {90, 100}} {
		p.rounds = append(p.rounds, pairSample{
			before: sample{requestsPerSecond: 1000, frontCPU: time.Duration(cpu[1]) * time.Microsecond},
			after:  sample{requestsPerSecond: 1000, frontCPU: time.Duration(cpu[0]) * time.Microsecond},
		})
	}
	out := featuresMarkdown([]*stepPair{p})
	// The median of the rounds' deltas (+10, +4, -10 %) is +4 %.
	if want := "| access log | 104 µs | 100 µs | +4.0 % | +0.0 % | +10, +4, -10 |"; !strings.Contains(out, want) {
		t.Errorf("the table lacks %q:\n%s", want, out)
	}
}

func TestEachFeatureIsOnAsRenderedAndOffWithItsKnobs(t *testing.T) {
	full := farmHCM(t, benchFrontend(t, "").bootstrap)
	has := func(h *hcmv3.HttpConnectionManager, filter string) bool {
		return slices.ContainsFunc(h.HttpFilters, func(f *hcmv3.HttpFilter) bool { return f.Name == filter })
	}
	tests := []struct {
		name string
		knob string
		on   func(h *hcmv3.HttpConnectionManager) bool
	}{
		{"the access log writes a line", "no-log-line", func(h *hcmv3.HttpConnectionManager) bool { return len(h.AccessLog) > 0 }},
		{"header_to_metadata records for the log", "no-header-to-metadata", func(h *hcmv3.HttpConnectionManager) bool {
			return has(h, "envoy.filters.http.header_to_metadata")
		}},
		{"cookie affinity has its filter", "no-affinity", func(h *hcmv3.HttpConnectionManager) bool { return has(h, statefulSessionFilter) }},
		{"the queue-timeout filter answers refusals", "no-queue-timeout-filter", func(h *hcmv3.HttpConnectionManager) bool {
			return has(h, "envoy.filters.http.custom_response")
		}},
		{"local replies rewrite Envoy's own 503s", "no-local-replies", func(h *hcmv3.HttpConnectionManager) bool { return h.LocalReplyConfig != nil }},
		{"the routes edit headers", "no-header-edits", func(h *hcmv3.HttpConnectionManager) bool {
			return len(h.GetRouteConfig().RequestHeadersToAdd) > 0
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !tt.on(full) {
				t.Fatal("the farm as rendered lacks the feature")
			}
			if tt.on(farmHCM(t, benchFrontend(t, tt.knob).bootstrap)) {
				t.Errorf("%s leaves the feature on", tt.knob)
			}
		})
	}
	t.Run("the queue's circuit breakers are on the pool's cluster", func(t *testing.T) {
		if poolClusters(benchFrontend(t, "").bootstrap)[0].CircuitBreakers == nil {
			t.Fatal("the farm as rendered has no circuit breakers")
		}
		if poolClusters(benchFrontend(t, "no-queue-breakers").bootstrap)[0].CircuitBreakers != nil {
			t.Error("no-queue-breakers leaves them")
		}
	})
}

func TestTheLastFeatureSwitchesOffEveryOtherAtOnce(t *testing.T) {
	last := features[len(features)-1]
	if last.name != everyFeature || len(last.off) != len(features)-2 {
		t.Fatalf("the last feature %q switches off %d, want the %d features but the control", last.name, len(last.off), len(features)-2)
	}
	var names []string
	for _, s := range last.off {
		names = append(names, s.String())
	}
	h := farmHCM(t, benchFrontend(t, strings.Join(names, ",")).bootstrap)
	if len(h.HttpFilters) != 1 || len(h.AccessLog) > 0 {
		t.Errorf("filters %v, access logs %d", h.HttpFilters, len(h.AccessLog))
	}
}
