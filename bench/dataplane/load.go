package main

import (
	"context"
	"path/filepath"
	"time"

	"webfarm.dev/operator/bench/internal/benchkit"
)

// protocol is how the client talks to a path.
type protocol string

const (
	protoHTTP  protocol = "http"  // HTTP/1.1 in clear text, with wrk
	protoHTTPS protocol = "https" // HTTP/1.1 over TLS 1.3 (ALPN http/1.1), with h2load
	protoH2    protocol = "h2"    // HTTP/2 over TLS 1.3 (ALPN h2), with h2load
)

var protocols = []protocol{protoHTTP, protoHTTPS, protoH2}

// title names a protocol in the report.
func (p protocol) title() string {
	switch p {
	case protoHTTPS:
		return "HTTPS: HTTP/1.1 over TLS 1.3"
	case protoH2:
		return "HTTP/2 over TLS 1.3 (ALPN h2)"
	}
	return "HTTP/1.1 in clear text"
}

// client is the load generator, the same for every path of a protocol: wrk
// in clear text, h2load over TLS, each with a fixed number of keep-alive
// connections, for a fixed time.
type client struct {
	benchkit.Wrk
	h2load   h2load
	duration time.Duration
}

// loadInput is what the clients need for a workload: wrk's script and
// h2load's list of URLs, both the workload's sequence.
type loadInput struct {
	script, uris string
}

// loadResult is what a client measured in one run.
type loadResult struct {
	requests          int64
	requestsPerSecond float64
	p50, p99          time.Duration
}

// run loads a route for d with the client of its protocol and returns the
// figures and the client's CPU time.
func (c client) run(ctx context.Context, r *route, in loadInput, d time.Duration) (loadResult, time.Duration, error) {
	if r.proto == protoHTTP || r.proto == "" {
		res, cpu, err := c.Run(ctx, r.url, in.script, d)
		return loadResult{requests: res.Requests, requestsPerSecond: res.RequestsPerSecond(), p50: res.P50(), p99: res.P99()}, cpu, err
	}
	logPath := filepath.Join(filepath.Dir(in.uris), "h2load-"+r.id+".log")
	res, cpu, err := c.h2load.run(ctx, r.addr, in.uris, r.proto == protoH2, d, logPath)
	return loadResult{requests: res.succeeded, requestsPerSecond: res.requestsPerSecond, p50: res.p50, p99: res.p99}, cpu, err
}

// sample is one measurement of one path.
type sample struct {
	requestsPerSecond float64
	p50, p99          time.Duration
	// CPU per request of the proxy hop, the pool worker and the client.
	frontCPU, poolCPU, clientCPU time.Duration
	// otherCores is how many processors everything else on the machine kept
	// busy meanwhile, on average.
	otherCores float64
}
