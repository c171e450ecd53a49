package main

import (
	"fmt"
	"strings"

	"webfarm.dev/operator/bench/internal/benchkit"
)

// serverKind names a proxy hop in the tables of a run of -handshakes.
func serverKind(baseline, minimal, farm bool) string {
	switch {
	case baseline:
		return "nginx proxy"
	case minimal:
		return "minimal Envoy"
	case farm:
		return "farm's Envoy, as rendered"
	}
	return "other"
}

// serverKinds is the tables' order of rows.
var serverKinds = []string{"nginx proxy", "minimal Envoy", "farm's Envoy, as rendered"}

// table43Protocols are Table 4.3's columns: without TLS, then with it.
var table43Protocols = []protocol{protoHTTP, protoHTTPS, protoH2}

// requestFigures finds a server's median figures in a run, by workload and
// protocol (ok false: not measured).
func (run *workersRun) requestFigures(w string, p protocol, kind string) (sample, bool) {
	for _, res := range run.results {
		if res.w.name != w || res.proto != p {
			continue
		}
		for _, rr := range res.routes {
			if serverKind(rr.baseline, rr.minimal, rr.farm) == kind && len(rr.samples) > 0 {
				return rr.median(), true
			}
		}
	}
	return sample{}, false
}

// table43Markdown is the IIS 5 book's Table 4.3 for a workload: requests/s
// without and with TLS, per server and worker count. The ratios are of
// medians: the protocols are measured one after the other, not in the same
// rounds.
func table43Markdown(runs []*workersRun, w workload) string {
	var b strings.Builder
	b.WriteString("| Server | Workers | Req/s: HTTP/1.1 clear | HTTP/1.1 over TLS | HTTP/2 over TLS | TLS vs clear: HTTP/1.1 | HTTP/2 | Hop CPU/request: clear, HTTP/1.1 TLS, HTTP/2 TLS |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---|\n")
	for _, kind := range serverKinds {
		for _, run := range runs {
			var rps, cpu []string
			var figures [3]float64
			for i, p := range table43Protocols {
				s, ok := run.requestFigures(w.name, p, kind)
				if !ok {
					rps, cpu = append(rps, "-"), append(cpu, "-")
					continue
				}
				figures[i] = s.requestsPerSecond
				rps = append(rps, fmt.Sprintf("%.0f", s.requestsPerSecond))
				cpu = append(cpu, benchkit.Micros(s.frontCPU))
			}
			fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s |\n", kind, run.workers, strings.Join(rps, " | "),
				ratio(figures[1], figures[0]), ratio(figures[2], figures[0]), strings.Join(cpu, ", "))
		}
	}
	return b.String()
}

// ratio is a/b as "0.85x", or "-" without both.
func ratio(a, b float64) string {
	if a <= 0 || b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", a/b)
}

// handshakeMarkdown is the table of new connections: per server, worker
// count and mode (clear text, full TLS, resumed TLS), connections per
// second, the hop's CPU per connection and what one core would serve at
// that cost. Each connection carries one small request. "TLS handshake"
// is a TLS connection's CPU less a clear-text one's: what the handshake
// alone costs; "vs a TLS request" sets that against a request's CPU over a
// kept-alive TLS connection (w, HTTP/1.1 over TLS).
func handshakeMarkdown(runs []*workersRun, w workload) string {
	var b strings.Builder
	b.WriteString("| Server | Workers | New connection | Conn/s | Hop CPU each | Per core/s | Resumed | TLS handshake: hop CPU | per core/s | vs a TLS request |\n")
	b.WriteString("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, kind := range serverKinds {
		for _, run := range runs {
			control := run.handshake(kind, connClear)
			for _, mode := range connectionModes {
				h := run.handshake(kind, mode)
				if h == nil || len(h.samples) == 0 {
					continue
				}
				m := h.median()
				resumed, alone, alonePerCore, vsRequest := "-", "-", "-", "-"
				if mode != connClear {
					resumed = fmt.Sprintf("%.0f %%", 100*m.resumedShare)
					if control != nil && len(control.samples) > 0 {
						handshake := m.hopCPU - control.median().hopCPU
						alone, alonePerCore = benchkit.Micros(handshake), fmt.Sprintf("%.0f", perCore(handshake))
						if s, ok := run.requestFigures(w.name, protoHTTPS, kind); ok {
							vsRequest = ratio(float64(handshake), float64(s.frontCPU))
						}
					}
				}
				fmt.Fprintf(&b, "| %s | %d | %s | %.0f | %s | %.0f | %s | %s | %s | %s |\n", kind, run.workers, mode,
					m.perSecond, benchkit.Micros(m.hopCPU), perCore(m.hopCPU), resumed, alone, alonePerCore, vsRequest)
			}
		}
	}
	return b.String()
}

// handshake finds a server's new connections of a mode in a run.
func (run *workersRun) handshake(kind string, mode connectionMode) *handshakeResult {
	for _, h := range run.handshakes {
		if h.kind == kind && h.mode == mode {
			return h
		}
	}
	return nil
}

// workerRunsMarkdown is a run of -handshakes: Table 4.3 per workload, then
// the handshakes, then how the Envoys spread connections over workers.
func workerRunsMarkdown(o options, runs []*workersRun) string {
	var b strings.Builder
	for _, run := range runs {
		fmt.Fprintf(&b, "| Placement, %d worker(s) | %s |\n", run.workers, run.placement)
	}
	if o.exactBalance {
		b.WriteString("| Connection balance | every Envoy listener with `connection_balance_config: exact_balance` |\n")
	}
	fmt.Fprintf(&b, "| New connections | Go client in the benchmark's process (on the client's processor when pinned), %d connections at once, each new, one GET of %s with `Connection: close`; clear text (the control), TLS 1.3 full (X25519, ALPN http/1.1, no session cache), TLS 1.3 resumed (a session cache per server: PSK with X25519) |\n",
		o.handshakeClients, smallestFile(o.workloads))
	for _, w := range o.workloads {
		fmt.Fprintf(&b, "\n**Table 4.3: %s** (mean response %.1f KB)\n\n", w.title, w.meanSize()/kib)
		b.WriteString(table43Markdown(runs, w))
	}
	fmt.Fprintf(&b, "\n**New connections: clear text, TLS 1.3 full and resumed, per core**\n\n")
	b.WriteString(handshakeMarkdown(runs, o.workloads[0]))
	for _, run := range runs {
		for _, line := range run.balance {
			fmt.Fprintf(&b, "\n%d workers, %s", run.workers, line)
		}
	}
	if len(runs) > 0 {
		b.WriteString("\n")
	}
	return b.String()
}
