package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// h2loadOutput is h2load 1.52's output of an HTTP/2 run, as printed.
const h2loadOutput = `starting benchmark...
spawning thread #0: 2 total client(s). Timing-based test with 0s of warm-up time and 2s of main duration for measurements.
Main benchmark duration is started for thread #0.
TLS Protocol: TLSv1.3
Cipher: TLS_AES_128_GCM_SHA256
Server Temp Key: X25519 253 bits
Application protocol: h2
Process Request Failure:2
Main benchmark duration is over for thread #0. Stopping all clients.

finished in 2.00s, 5425.50 req/s, 14.78MB/s
requests: 10857 total, 10857 started, 10857 done, 10851 succeeded, 6 failed, 6 errored, 0 timeout
status codes: 10851 2xx, 0 3xx, 0 4xx, 0 5xx
traffic: 29.56MB (30994132) total, 214.84KB (220000) headers (space savings 38.89%), 29.30MB (30720000) data
`

func TestParseH2load(t *testing.T) {
	tests := []struct {
		name    string
		out     string
		want    h2loadSummary
		wantErr string
	}{
		{"the summary gives the rate, the counts and the negotiated session", h2loadOutput,
			h2loadSummary{requestsPerSecond: 5425.5, succeeded: 10851, errored: 6, session: "TLSv1.3, TLS_AES_128_GCM_SHA256, X25519, h2"}, ""},
		{"statuses other than 2xx are counted",
			strings.Replace(h2loadOutput, "10851 2xx, 0 3xx, 0 4xx, 0 5xx", "10840 2xx, 1 3xx, 4 4xx, 6 5xx", 1),
			h2loadSummary{requestsPerSecond: 5425.5, succeeded: 10851, errored: 6, non2xx: 11, session: "TLSv1.3, TLS_AES_128_GCM_SHA256, X25519, h2"}, ""},
		{"a run without TLS is refused", strings.Replace(h2loadOutput, "TLS Protocol: TLSv1.3\n", "", 1), h2loadSummary{}, "no TLS"},
		{"output without a summary is refused", "starting benchmark...\n", h2loadSummary{}, "no summary"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseH2load(tt.out)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestTheSessionEveryHTTPSMeasurementMustNegotiate(t *testing.T) {
	if got := wantSession(true); got != "TLSv1.3, TLS_AES_128_GCM_SHA256, X25519, h2" {
		t.Errorf("HTTP/2: %q", got)
	}
	if got := wantSession(false); got != "TLSv1.3, TLS_AES_128_GCM_SHA256, X25519, http/1.1" {
		t.Errorf("HTTP/1.1: %q", got)
	}
}

func TestReadH2loadLog(t *testing.T) {
	// Starts in µs since the epoch; the run's last response ends at 3,000,000 µs.
	log := strings.Join([]string{
		"1000000\t200\t1000",
		"1500000\t200\t3000",
		"2999000\t-1\t700",  // cut off by the end of the run
		"1000000\t-1\t2000", // failed in the middle of the run
		"2000000\t404\t500",
		"2990000\t200\t10000",
	}, "\n") + "\n"
	path := filepath.Join(t.TempDir(), "h2load.log")
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := readH2loadLog(f)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("the latencies are those of the successful requests", func(t *testing.T) {
		want := []time.Duration{time.Millisecond, 3 * time.Millisecond, 10 * time.Millisecond}
		if len(got.latencies) != len(want) {
			t.Fatalf("latencies %v, want %v", got.latencies, want)
		}
		for i := range want {
			if got.latencies[i] != want[i] {
				t.Errorf("latencies %v, want %v", got.latencies, want)
			}
		}
	})
	t.Run("only a failure long before the end of the run counts as one", func(t *testing.T) {
		if n := got.failedBefore(cutOffWindow); n != 1 {
			t.Errorf("%d failures before the cut-off window, want 1", n)
		}
	})
}

func TestPercentile(t *testing.T) {
	ms := func(vs ...int) []time.Duration {
		var out []time.Duration
		for _, v := range vs {
			out = append(out, time.Duration(v)*time.Millisecond)
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = 100 - i // unsorted
	}
	tests := []struct {
		name string
		lat  []time.Duration
		p    float64
		want time.Duration
	}{
		{"no latencies give zero", nil, 99, 0},
		{"one latency is every percentile", ms(7), 99, 7 * time.Millisecond},
		{"the 99th of 100 is the 99th smallest", ms(hundred...), 99, 99 * time.Millisecond},
		{"the median of 100 is the 50th smallest", ms(hundred...), 50, 50 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := percentile(tt.lat, tt.p); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestH2loadURIsWalkTheSequenceOnTheSite(t *testing.T) {
	lines := strings.Split(strings.TrimSuffix(h2loadURIs(webBench), "\n"), "\n")
	seq := webBench.sequence()
	if len(lines) != len(seq) {
		t.Fatalf("%d URLs for a sequence of %d", len(lines), len(seq))
	}
	for i, l := range lines {
		if l != "https://"+siteHost+seq[i] {
			t.Errorf("line %d is %q, want the site's %s", i, l, seq[i])
		}
	}
}
