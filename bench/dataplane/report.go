package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"webfarm.dev/operator/bench/internal/benchkit"
)

// report is everything the benchmark measured.
type report struct {
	o         options
	envoyArgs []string // of the farm as rendered
	start     time.Time
	wall      time.Duration
	machine   string
	// The machine's load average before and after the run: the other work
	// beside it (benchkit.LoadAverage).
	loadBefore, loadAfter string
	results               []*workloadResult
	workerRuns            []*workersRun // a run of -handshakes
}

type workloadResult struct {
	w      workload
	proto  protocol
	routes []*routeResult
	steps  []*stepPair // a run of tuning steps
	// features, in a run of features: the farm as rendered (after) against
	// the farm without one feature (before), one pair per feature.
	features []*stepPair
}

type routeResult struct {
	name           string
	farm, baseline bool
	minimal        bool
	envoyGateway   bool // Envoy with Envoy Gateway's configuration
	hop            bool // a proxy stands between the client and the pool
	samples        []sample
	failure        string // why the route was dropped, if it was
}

// failures lists the routes dropped from a workload.
func (r *report) failures() []string {
	var out []string
	for _, res := range r.results {
		for _, rr := range res.routes {
			if rr.failure != "" {
				out = append(out, fmt.Sprintf("%s, %s: %s", res.w.name, rr.name, rr.failure))
			}
		}
	}
	return out
}

// median takes the median of each figure over the rounds on its own.
func (r *routeResult) median() sample {
	pick := func(f func(sample) float64) float64 { return benchkit.MedianOf(r.samples, f) }
	dur := func(f func(sample) time.Duration) time.Duration {
		return time.Duration(pick(func(s sample) float64 { return float64(f(s)) }))
	}
	return sample{
		requestsPerSecond: pick(func(s sample) float64 { return s.requestsPerSecond }),
		p50:               dur(func(s sample) time.Duration { return s.p50 }),
		p99:               dur(func(s sample) time.Duration { return s.p99 }),
		frontCPU:          dur(func(s sample) time.Duration { return s.frontCPU }),
		poolCPU:           dur(func(s sample) time.Duration { return s.poolCPU }),
		clientCPU:         dur(func(s sample) time.Duration { return s.clientCPU }),
		otherCores:        pick(func(s sample) float64 { return s.otherCores }),
	}
}

// comparison is a route's median figures and its ratios to the baseline.
// Each ratio is the median over the rounds of the ratio within a round: the
// two measurements of a round are seconds apart, so the load that others put
// on a shared machine weighs on both alike.
type comparison struct {
	sample
	throughputRatio, p99Ratio float64
}

func compare(r, baseline *routeResult) comparison {
	return comparison{
		sample:          r.median(),
		throughputRatio: pairedRatio(r, baseline, func(s sample) float64 { return s.requestsPerSecond }),
		p99Ratio:        pairedRatio(r, baseline, func(s sample) float64 { return float64(s.p99) }),
	}
}

// pairedRatio is the median over the rounds of a figure of r divided by the
// same figure of other in the same round (benchkit.PairedRatio).
func pairedRatio(r, other *routeResult, figure func(sample) float64) float64 {
	return benchkit.PairedRatio(r.samples, other.samples, figure)
}

// meetsTargets: the farm path's requests/s at least 0.8x the proxy's, its p99
// at most 1.3x.
func (c comparison) meetsTargets() bool {
	return c.throughputRatio >= targetThroughput && c.p99Ratio <= targetP99
}

// placement says where the proxy hop, the client and the pool worker ran.
func placement(o options) string {
	if o.hopCPUs == "" {
		return "the scheduler's"
	}
	return fmt.Sprintf("proxy hop on CPU %s; client and pool worker on CPU %s", o.hopCPUs, o.CPUs)
}

// markdown renders the results, ready for bench/README.md.
func (r *report) markdown() string {
	var b strings.Builder
	o := r.o
	fmt.Fprintf(&b, "| | |\n|---|---|\n")
	fmt.Fprintf(&b, "| Date | %s |\n", r.start.UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "| Machine | %s |\n", r.machine)
	fmt.Fprintf(&b, "| Client | %s per measurement, %d interleaved rounds (medians shown), everything under nice 19 on 127.0.0.1; %s |\n",
		o.duration, o.rounds, clients(o))
	fmt.Fprintf(&b, "| Pool worker | nginx as `nginx.PoolConfig` renders it for a default AppPool (500m CPU: 1 worker process) |\n")
	switch {
	case o.features:
		fmt.Fprintf(&b, "| Mode | features: the farm as rendered against the farm without one feature (and against the minimal Envoy), both loaded at once, both hops on the same processor |\n")
	case len(o.steps) > 0:
		fmt.Fprintf(&b, "| Mode | tuning steps: each farm path measured against the step before, both loaded at once, both hops on the same processor |\n")
	default:
		fmt.Fprintf(&b, "| Baseline | nginx proxy as ingress-nginx sets it up: %d worker process(es), upstream keep-alive 320 connections, 10,000 requests, 60 s; proxy_buffering off, 4 KB buffer; its access log (upstreaminfo format, a write per request), as the farm's frontend logs every request (a JSON line, buffered) |\n",
			o.proxyWorkers)
		if hasTLS(o) {
			fmt.Fprintf(&b, "| HTTPS | the same certificate for every path (ECDSA P-256, from a CA made at the start); TLS 1.3 only, %s with %s, as every measurement checked. nginx: `listen ssl http2` with ingress-nginx's TLS settings (shared session cache 10m, session tickets off, 4k TLS records, 128 streams per connection). Farm: the site with `tls.secretName` and `frontend.tls.minVersion: \"1.3\"`, its certificate read through the rendered SDS files |\n",
				tlsCipher, tlsGroup)
		}
	}
	fmt.Fprintf(&b, "| Farm | Envoy 1.40 from `envoy.Bootstrap` + `envoy.FarmRouting` (inlined statically), started as `k8s.Frontend` starts it: `%s` |\n",
		strings.Join(shownArgs(r.envoyArgs), " "))
	if len(o.steps) == 0 {
		fmt.Fprintf(&b, "| Minimal Envoy | the same binary and arguments with a bootstrap of its own: a connection manager with one route to the pool worker and the router, nothing else (no request IDs, no access log, no x-envoy headers); TLS 1.3 from the same certificate's files |\n")
	}
	if o.envoyGateway && len(o.steps) == 0 && !o.features && !o.handshakes {
		fmt.Fprintf(&b, "| Envoy Gateway | %s |\n", envoyGatewayAbout)
	}
	if !o.handshakes {
		fmt.Fprintf(&b, "| Placement | %s |\n", placement(o))
	}
	if r.wall > 0 {
		fmt.Fprintf(&b, "| Benchmark wall time | %s |\n", r.wall.Round(time.Second))
	}
	fmt.Fprintf(&b, "| Load average (1, 5, 15 min) | before the run: %s; after: %s |\n", orUnknown(r.loadBefore), orUnknown(r.loadAfter))
	if o.handshakes {
		b.WriteString(workerRunsMarkdown(o, r.workerRuns))
		return b.String()
	}
	for _, res := range r.results {
		fmt.Fprintf(&b, "\n**%s; %s** (mean response %.1f KB)\n\n", res.w.title, res.proto.title(), res.w.meanSize()/kib)
		b.WriteString(res.markdown())
	}
	b.WriteString(overheadMarkdown(r.results))
	b.WriteString(envoyGatewayMarkdown(r.results))
	return b.String()
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// targetOverhead: the farm's frontend spends at most this multiple of the
// minimal Envoy's CPU per request.
const targetOverhead = 1.10

// overhead is the farm's frontend against the minimal Envoy on one
// workload and protocol.
type overhead struct {
	workload, protocol  string
	farmCPU, minimalCPU time.Duration // medians per request
	ratio               float64       // the median of the ratios within a round
}

// overheads pairs, in each workload and protocol, the farm as rendered (its
// first farm route) with the minimal Envoy.
func overheads(results []*workloadResult) []overhead {
	var out []overhead
	for _, res := range results {
		farm := slices.IndexFunc(res.routes, func(r *routeResult) bool { return r.farm && len(r.samples) > 0 })
		minimal := slices.IndexFunc(res.routes, func(r *routeResult) bool { return r.minimal && len(r.samples) > 0 })
		if farm < 0 || minimal < 0 {
			continue
		}
		f, m := res.routes[farm], res.routes[minimal]
		out = append(out, overhead{
			workload: res.w.title, protocol: res.proto.title(),
			farmCPU: f.median().frontCPU, minimalCPU: m.median().frontCPU,
			ratio: pairedRatio(f, m, func(s sample) float64 { return float64(s.frontCPU) }),
		})
	}
	return out
}

// overheadMarkdown is the table of the farm's overhead ("" without a
// minimal Envoy in the run).
func overheadMarkdown(results []*workloadResult) string {
	rows := overheads(results)
	if len(rows) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n**Our overhead: the farm's frontend against the minimal Envoy** (Envoy CPU per request; target at most %.2fx)\n\n", targetOverhead)
	b.WriteString("| Workload | Protocol | Farm, as rendered | Minimal Envoy | Ratio (median within rounds) | Target |\n")
	b.WriteString("|---|---|---:|---:|---:|---|\n")
	for _, o := range rows {
		verdict := "MISS"
		if o.ratio <= targetOverhead {
			verdict = "PASS"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %.2fx | %s |\n", o.workload, o.protocol, benchkit.Micros(o.farmCPU), benchkit.Micros(o.minimalCPU), o.ratio, verdict)
	}
	return b.String()
}

// markdown is one workload's table: each route's medians, its ratios to the
// baseline and, for farm routes, the targets; in a run of tuning steps, each
// step's gain over the step before.
func (res *workloadResult) markdown() string {
	if res.steps != nil {
		return stepsMarkdown(res.steps)
	}
	if res.features != nil {
		return featuresMarkdown(res.features)
	}
	var b strings.Builder
	base := &routeResult{}
	for _, r := range res.routes {
		if r.baseline {
			base = r
		}
	}
	b.WriteString("| Path | Requests/s | p50 | p99 | Req/s vs proxy | p99 vs proxy | Targets | Against the farm row above | CPU/request: hop, pool, client | Req/s by round | Other work |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---|---:|---|---|---:|\n")
	var previous *routeResult
	for _, r := range res.routes {
		if r.failure != "" {
			fmt.Fprintf(&b, "| %s | failed: %s | | | | | MISS | | | | |\n", r.name, r.failure)
			continue
		}
		if len(r.samples) == 0 {
			continue
		}
		c := compare(r, base)
		targets, gain := "", ""
		if r.farm {
			targets = "MISS"
			if c.meetsTargets() {
				targets = "PASS"
			}
			if previous != nil {
				// Paired by round, as the ratios to the baseline are.
				rps := pairedRatio(r, previous, func(s sample) float64 { return s.requestsPerSecond })
				cpu := pairedRatio(r, previous, func(s sample) float64 { return float64(s.frontCPU) })
				gain = fmt.Sprintf("%+.0f %% req/s, %+.0f %% hop CPU", (rps-1)*100, (cpu-1)*100)
			}
			previous = r
		}
		hop := "none"
		if r.hop {
			hop = benchkit.Micros(c.frontCPU)
		}
		var rounds []string
		for _, s := range r.samples {
			rounds = append(rounds, fmt.Sprintf("%.0f", s.requestsPerSecond))
		}
		fmt.Fprintf(&b, "| %s | %.0f | %s | %s | %.2fx | %.2fx | %s | %s | %s, %s, %s | %s | %.2f cores |\n",
			r.name, c.requestsPerSecond, benchkit.Millis(c.p50), benchkit.Millis(c.p99), c.throughputRatio, c.p99Ratio, targets, gain,
			hop, benchkit.Micros(c.poolCPU), benchkit.Micros(c.clientCPU), strings.Join(rounds, ", "), c.otherCores)
	}
	return b.String()
}

// hasTLS: the run measures HTTPS paths.
func hasTLS(o options) bool {
	return slices.ContainsFunc(o.protocols, func(p protocol) bool { return p != protoHTTP })
}

// clients describes the load generators of the run's protocols.
func clients(o options) string {
	var out []string
	if slices.Contains(o.protocols, protoHTTP) {
		out = append(out, fmt.Sprintf("HTTP/1.1 in clear text: wrk, %d keep-alive connections, %d thread(s)", o.Connections, o.Threads))
	}
	if hasTLS(o) && slices.Contains(o.protocols, protoHTTPS) {
		out = append(out, fmt.Sprintf("HTTPS: h2load, %d keep-alive connections with one request at a time each (HTTP/1.1, ALPN http/1.1), 1 thread", o.h2load.Connections))
	}
	if hasTLS(o) && slices.Contains(o.protocols, protoH2) {
		out = append(out, fmt.Sprintf("HTTP/2: h2load, %d connections with %d requests in flight on each (ALPN h2), 1 thread", o.h2load.H2Connections, o.h2load.Streams))
	}
	return strings.Join(out, "; ")
}

// shownArgs are Envoy's arguments with the bootstrap named by its file only:
// the work directory is gone after the run.
func shownArgs(args []string) []string {
	out := slices.Clone(args)
	for i := 1; i < len(out); i++ {
		if out[i-1] == "--config-path" {
			out[i] = filepath.Base(out[i])
		}
	}
	return out
}
