package main

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// twoWorkerCounts is a run of -handshakes with made-up figures: the nginx
// proxy and the farm on 1 and 2 workers.
func twoWorkerCounts() []*workersRun {
	w := workloads[1]
	result := func(p protocol, proxyRPS, farmRPS float64, cpu time.Duration) *workloadResult {
		return &workloadResult{w: w, proto: p, routes: []*routeResult{
			{name: "nginx proxy", baseline: true, hop: true, samples: []sample{{requestsPerSecond: proxyRPS, frontCPU: cpu}}},
			{name: "farm", farm: true, hop: true, samples: []sample{{requestsPerSecond: farmRPS, frontCPU: 2 * cpu}}},
		}}
	}
	conns := func(kind string, mode connectionMode, cpu time.Duration, resumed float64) *handshakeResult {
		return &handshakeResult{kind: kind, mode: mode, samples: []handshakeSample{{perSecond: 1000, hopCPU: cpu, resumedShare: resumed}}}
	}
	var runs []*workersRun
	for _, n := range []int{1, 2} {
		runs = append(runs, &workersRun{
			workers: n,
			results: []*workloadResult{
				result(protoHTTP, 10000*float64(n), 5000*float64(n), 100*time.Microsecond),
				result(protoHTTPS, 8000*float64(n), 4000*float64(n), 125*time.Microsecond),
				result(protoH2, 9000*float64(n), 4500*float64(n), 110*time.Microsecond),
			},
			handshakes: []*handshakeResult{
				conns("nginx proxy", connClear, 200*time.Microsecond, 0),
				conns("nginx proxy", connFull, 450*time.Microsecond, 0),
				conns("nginx proxy", connResumed, 400*time.Microsecond, 1),
			},
		})
	}
	return runs
}

func TestTable43GivesEachServerAndWorkerCountItsRequestsWithAndWithoutTLS(t *testing.T) {
	got := table43Markdown(twoWorkerCounts(), workloads[1])
	for _, want := range []string{
		"| nginx proxy | 1 | 10000 | 8000 | 9000 | 0.80x | 0.90x | 100 µs, 125 µs, 110 µs |",
		"| nginx proxy | 2 | 20000 | 16000 | 18000 | 0.80x | 0.90x | 100 µs, 125 µs, 110 µs |",
		"| farm's Envoy, as rendered | 1 | 5000 | 4000 | 4500 | 0.80x | 0.90x | 200 µs, 250 µs, 220 µs |",
		"| minimal Envoy | 2 | - | - | - | - | - | -, -, - |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing row %q in\n%s", want, got)
		}
	}
	// Rows by server, then worker count.
	if strings.Index(got, "| nginx proxy | 2 |") > strings.Index(got, "| minimal Envoy | 1 |") {
		t.Errorf("rows out of order:\n%s", got)
	}
}

func TestTheHandshakeTableTakesTheClearTextConnectionOffTheTLSOnes(t *testing.T) {
	got := handshakeMarkdown(twoWorkerCounts(), workloads[1])
	for _, want := range []string{
		"| nginx proxy | 1 | clear text | 1000 | 200 µs | 5000 | - | - | - | - |",
		// 450 - 200 = 250 µs a handshake, 4,000 a core, twice a TLS request's 125 µs.
		"| nginx proxy | 1 | TLS, full | 1000 | 450 µs | 2222 | 0 % | 250 µs | 4000 | 2.00x |",
		"| nginx proxy | 2 | TLS, resumed | 1000 | 400 µs | 2500 | 100 % | 200 µs | 5000 | 1.60x |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing row %q in\n%s", want, got)
		}
	}
	if strings.Contains(got, "farm's Envoy") {
		t.Errorf("a server without connections measured has rows:\n%s", got)
	}
}

func TestWorkerConnectionsReadsEachWorkersCountOfOneListener(t *testing.T) {
	stats := `listener.127.0.0.1_8443.downstream_cx_total: 30
listener.127.0.0.1_8443.worker_1.downstream_cx_total: 14
listener.127.0.0.1_8443.worker_0.downstream_cx_total: 16
listener.127.0.0.1_9000.worker_0.downstream_cx_total: 99
listener.admin.downstream_cx_total: 3
`
	if got, want := workerConnections(stats, "127.0.0.1_8443"), []int64{16, 14}; !slices.Equal(got, want) {
		t.Errorf("workerConnections = %v, want %v", got, want)
	}
	if got := joinInts([]int64{16, 14}); got != "16 / 14" {
		t.Errorf("joinInts = %q", got)
	}
}

func TestWorkerCountsAreAListOfPositiveNumbers(t *testing.T) {
	if got, err := parseCounts("1, 2"); err != nil || !slices.Equal(got, []int{1, 2}) {
		t.Errorf("parseCounts(1, 2) = %v, %v", got, err)
	}
	for _, bad := range []string{"0", "1,x", ""} {
		if _, err := parseCounts(bad); err == nil {
			t.Errorf("parseCounts(%q): want an error", bad)
		}
	}
}

func TestWithConcurrencyReplacesTheRenderedWorkerCountOrAddsOne(t *testing.T) {
	rendered := []string{"--config-path", "x", "--concurrency", "1"}
	if got := withConcurrency(rendered, 2); !slices.Equal(got, []string{"--config-path", "x", "--concurrency", "2"}) {
		t.Errorf("replaced: %v", got)
	}
	if rendered[3] != "1" {
		t.Error("withConcurrency changed its argument")
	}
	if got := withConcurrency([]string{"--config-path", "x"}, 2); !slices.Equal(got, []string{"--config-path", "x", "--concurrency", "2"}) {
		t.Errorf("added: %v", got)
	}
}

func TestEachConnectionFetchesTheSmallestFileOfTheWorkloads(t *testing.T) {
	if got := smallestFile(workloads); got != "/webbench/512b.html" {
		t.Errorf("smallestFile = %q", got)
	}
}

func TestTheBalanceLineSeparatesKeptAliveConnectionsFromNewOnes(t *testing.T) {
	got := balanceLine(&route{name: "farm"}, []int64{30, 10}, []int64{1030, 1010})
	if want := "farm: connections per worker, kept alive (requests/s) 30 / 10, new (handshakes) 1000 / 1000"; got != want {
		t.Errorf("balanceLine = %q, want %q", got, want)
	}
}

func TestExactBalanceReachesEveryListener(t *testing.T) {
	b := minimalBootstrap(minimalLayout{Port: 41030, AdminPort: 41031, Upstream: 41000})
	balanceExactly(b)
	for _, l := range b.StaticResources.Listeners {
		if l.GetConnectionBalanceConfig().GetExactBalance() == nil {
			t.Errorf("listener %s balances by the kernel", l.Name)
		}
	}
}
