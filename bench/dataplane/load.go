package main

import (
	"time"

	"webfarm.dev/operator/bench/internal/benchkit"
)

// client is the load generator, the same for every path: wrk with a fixed
// number of keep-alive connections and threads (benchkit.Wrk, sending the
// site's Host), for a fixed time.
type client struct {
	benchkit.Wrk
	duration time.Duration
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
