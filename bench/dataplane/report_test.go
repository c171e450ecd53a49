package main

import (
	"strings"
	"testing"
	"time"
)

func rps(p99ms int, values ...float64) *routeResult {
	r := &routeResult{}
	for _, v := range values {
		r.samples = append(r.samples, sample{requestsPerSecond: v, p99: time.Duration(p99ms) * time.Millisecond, frontCPU: 50 * time.Microsecond})
	}
	return r
}

func TestCompare(t *testing.T) {
	tests := []struct {
		name         string
		route, base  *routeResult
		throughput   float64
		p99          float64
		meetsTargets bool
	}{
		{"ratios are taken within each round, then the median over the rounds",
			// Round ratios 0.9, 0.85, 0.8: the machine was twice as busy in round 2, for both.
			rps(10, 9000, 4250, 8000), rps(10, 10000, 5000, 10000), 0.85, 1, true},
		{"a farm path under 0.8x of the proxy misses the targets",
			rps(10, 7000, 7000, 7000), rps(10, 10000, 10000, 10000), 0.7, 1, false},
		{"a farm path whose p99 is over 1.3x the proxy's misses the targets",
			rps(14, 10000, 10000, 10000), rps(10, 10000, 10000, 10000), 1, 1.4, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := compare(tt.route, tt.base)
			if d := c.throughputRatio - tt.throughput; d > 1e-9 || d < -1e-9 {
				t.Errorf("throughput ratio %g, want %g", c.throughputRatio, tt.throughput)
			}
			if d := c.p99Ratio - tt.p99; d > 1e-9 || d < -1e-9 {
				t.Errorf("p99 ratio %g, want %g", c.p99Ratio, tt.p99)
			}
			if c.meetsTargets() != tt.meetsTargets {
				t.Errorf("meets targets: %v, want %v", c.meetsTargets(), tt.meetsTargets)
			}
		})
	}
}

func TestWorkloadMarkdown(t *testing.T) {
	base := rps(10, 10000, 10000)
	base.name, base.baseline, base.hop = "proxy", true, true
	farm := rps(10, 9000, 9000)
	farm.name, farm.farm, farm.hop = "farm", true, true
	step := rps(10, 9900, 9900)
	step.name, step.farm, step.hop = "farm, + no-request-id", true, true
	broken := &routeResult{name: "farm, + upstream-h2", farm: true, failure: "wrong answers: 3 status errors"}
	bare := rps(5, 20000, 20000)
	bare.name = "bare"
	out := (&workloadResult{w: headline, routes: []*routeResult{bare, base, farm, step, broken}}).markdown()
	for _, want := range []string{
		"| bare | 20000 |", "| 2.00x | 0.50x |  |  | none,",
		"| proxy | 10000 |", "| 1.00x | 1.00x |  |  |",
		"| farm | 9000 |", "| 0.90x | 1.00x | PASS |  |",
		"| farm, + no-request-id | 9900 |", "| 0.99x | 1.00x | PASS | +10 % req/s, +0 % hop CPU |",
		"| farm, + upstream-h2 | failed: wrong answers: 3 status errors |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks %q:\n%s", want, out)
		}
	}
}

func TestTheReportNamesEachTablesProtocolAndClient(t *testing.T) {
	o := options{protocols: []protocol{protoHTTP, protoHTTPS, protoH2}, rounds: 3}
	o.duration = 2 * time.Second
	o.Connections, o.Threads = 32, 1
	o.h2load = h2load{Connections: 32, H2Connections: 8, Streams: 4}
	base := rps(10, 10000, 10000)
	base.name, base.baseline, base.hop = "nginx proxy with TLS -> nginx (baseline)", true, true
	r := &report{o: o, results: []*workloadResult{{w: headline, proto: protoH2, routes: []*routeResult{base}}}}
	out := r.markdown()
	for _, want := range []string{
		"HTTP/1.1 in clear text: wrk, 32 keep-alive connections, 1 thread(s)",
		"HTTPS: h2load, 32 keep-alive connections with one request at a time each",
		"HTTP/2: h2load, 8 connections with 4 requests in flight on each (ALPN h2)",
		"| HTTPS | the same certificate for every path", "TLS_AES_128_GCM_SHA256 with X25519",
		"**IIS 6 headline: one 15 KB file, keep-alive; HTTP/2 over TLS 1.3 (ALPN h2)**",
		"| Minimal Envoy | the same binary and arguments",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
}

// hopCPU is a route measured in rounds with these CPU times per request.
func hopCPU(micros ...int) *routeResult {
	r := &routeResult{}
	for _, m := range micros {
		r.samples = append(r.samples, sample{requestsPerSecond: 1000, frontCPU: time.Duration(m) * time.Microsecond})
	}
	return r
}

func TestOverheadMarkdown(t *testing.T) {
	tests := []struct {
		name          string
		farm, minimal *routeResult
		want          []string
	}{
		{"the ratio is the median of the rounds' ratios, and within 1.10x passes",
			// Round ratios 1.05, 1.08, 1.2: the machine was busier in round 3 for the farm only.
			hopCPU(105, 108, 120), hopCPU(100, 100, 100),
			[]string{"| 108 µs | 100 µs | 1.08x | PASS |", "target at most 1.10x"}},
		{"a farm above 1.10x the minimal Envoy misses",
			hopCPU(150, 160), hopCPU(100, 100),
			[]string{"| 1.55x | MISS |"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.farm.farm, tt.minimal.minimal = true, true
			res := &workloadResult{w: headline, proto: protoH2, routes: []*routeResult{tt.minimal, tt.farm}}
			out := overheadMarkdown([]*workloadResult{res})
			for _, want := range append(tt.want, "| IIS 6 headline: one 15 KB file, keep-alive | HTTP/2 over TLS 1.3 (ALPN h2) |") {
				if !strings.Contains(out, want) {
					t.Errorf("the table lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

func TestOverheadIsLeftOutWithoutAMinimalEnvoy(t *testing.T) {
	farm := hopCPU(100)
	farm.farm = true
	if out := overheadMarkdown([]*workloadResult{{w: headline, routes: []*routeResult{farm}}}); out != "" {
		t.Errorf("a table without a minimal Envoy:\n%s", out)
	}
}

func TestTheReportStatesTheLoadAverageBeforeAndAfter(t *testing.T) {
	r := &report{loadBefore: "0.50, 0.40, 0.30", loadAfter: "1.50, 0.60, 0.35"}
	want := "| Load average (1, 5, 15 min) | before the run: 0.50, 0.40, 0.30; after: 1.50, 0.60, 0.35 |"
	if out := r.markdown(); !strings.Contains(out, want) {
		t.Errorf("the report lacks %q:\n%s", want, out)
	}
}
