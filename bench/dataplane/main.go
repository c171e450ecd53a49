// Command dataplane is the farm's data-path benchmark: on this host, over
// loopback, it serves the IIS 6 headline file and the WebBench static mix
// from a pool worker (nginx as the operator renders it) and loads three paths
// to it with the same client in one run: bare nginx, an nginx reverse proxy
// set up as ingress-nginx sets it up (the baseline), and the farm's Envoy
// frontend as the operator renders it, as is and tuned. See bench/README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"webfarm.dev/operator/bench/internal/benchkit"
)

// Targets of the farm path against the baseline proxy.
const (
	targetThroughput = 0.8 // at least this share of the proxy's requests/s
	targetP99        = 1.3 // at most this multiple of the proxy's p99
)

// recommended are the bench-side settings that the tuning steps found worth
// folding into the renderer; -tuning defaults to them.
const recommended = "no-histograms,upstream-max-requests=5000,upstream-h2"

// ladder is -steps default: a control step, the settings that keep every
// feature, then those that give one up (to measure its cost), then HTTP/2 to
// the pool.
const ladder = "control,no-request-id,no-histograms,buffer=32k,server-passthrough," +
	"skip-xff,no-stream-idle-timeout,stats-off,no-normalize,no-method-route,no-retry,no-overload," +
	"upstream-max-requests=5000+upstream-h2"

type options struct {
	client
	workloads    []workload
	protocols    []protocol
	rounds       int
	warmup       time.Duration
	proxyWorkers int
	tuning       []setting
	steps        [][]setting // set: run the tuning steps instead of the comparison
	features     bool        // run the features' table instead of the comparison
	// handshakes: instead of the comparison, Table 4.3 (requests/s with and
	// without TLS) and TLS handshakes per core, once per worker count.
	handshakes       bool
	workerCounts     []int
	handshakeClients int
	envoyWorkers     int  // Envoy's --concurrency in place of the rendered one (0: as rendered)
	pin              bool // -pin: fixed processors with one proxy worker
	exactBalance     bool // every Envoy listener balances connections exactly over its workers
	bufferedProxy    bool
	envoyGateway     bool // also measure Envoy with Envoy Gateway's configuration
	quietBelow       float64
	hopCPUs          string // processors of the proxy hop (nginx proxy, Envoy); the client and the pool worker have client.CPUs
	quietWait        time.Duration
	perfOut          string
	keep             bool
	nginx, envoy     string
}

func main() {
	os.Exit(run())
}

func run() int {
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	wd := benchkit.WorkDir{Pattern: "webfarm-dataplane-", Keep: o.keep, Holds: "configs and logs", Hint: "(-keep keeps the configs and logs)"}
	return wd.Run(func(ctx context.Context, dir string) (string, error) {
		rep, err := bench(ctx, o, dir)
		if rep == nil {
			return "", err
		}
		return rep.markdown(), err
	})
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("dataplane", flag.ContinueOnError)
	fs.IntVar(&o.Connections, "connections", 32, "client keep-alive connections (wrk -c), the same for every path")
	fs.IntVar(&o.Threads, "threads", 1, "client threads (wrk -t)")
	fs.IntVar(&o.h2load.H2Connections, "h2-connections", 8, "HTTP/2 connections of the client (h2load -c); over HTTPS the client has -connections")
	fs.IntVar(&o.h2load.Streams, "h2-streams", 4, "requests in flight on each HTTP/2 connection (h2load -m)")
	protos := fs.String("protocols", "http,https,h2", "protocols to measure: http (HTTP/1.1 in clear text, wrk), https (HTTP/1.1 over TLS 1.3, h2load), h2 (HTTP/2 over TLS 1.3, h2load)")
	fs.DurationVar(&o.duration, "duration", 2*time.Second, "length of one measurement (whole seconds)")
	fs.DurationVar(&o.warmup, "warmup", 2*time.Second, "an unmeasured run of each path before the first round")
	fs.IntVar(&o.rounds, "rounds", 6, "measurements of each path, interleaved with the other paths; the report gives medians")
	fs.Float64Var(&o.quietBelow, "quiet-below", 0.3, "before each measurement, wait until other work keeps fewer than this many processors busy...")
	fs.DurationVar(&o.quietWait, "quiet-wait", time.Second, "...but at most this long (0: do not wait)")
	fs.BoolVar(&o.pin, "pin", true, "with one proxy worker: run the proxy hop on the last processor, the client and the pool worker on the first (the same placement for every path)")
	fs.IntVar(&o.proxyWorkers, "proxy-workers", 1, "worker_processes of the nginx proxy, and the Envoy threads of the setting 'concurrency' (equal CPU budgets)")
	names := fs.String("workloads", "static-15k,webbench", "workloads to run: static-15k, webbench")
	tuning := fs.String("tuning", recommended, "settings of the tuned farm path (comma-separated; 'none' for no tuned path); knobs: "+knobNames())
	steps := fs.String("steps", "", "instead of the comparison, measure tuning steps: each step (comma-separated) adds its settings (joined by +) to the step before and is measured against it (-steps default: every knob in turn)")
	fs.BoolVar(&o.features, "features", false, "instead of the comparison, measure each of the farm's features alone: the farm as rendered against the farm without it, and against the minimal Envoy, both loaded at once")
	fs.BoolVar(&o.handshakes, "handshakes", false, "instead of the comparison, measure requests/s with and without TLS (the IIS 5 book's Table 4.3) and full and resumed TLS handshakes per second per core, for the nginx proxy, the minimal Envoy and the farm, once per count of -handshake-workers")
	workerCounts := fs.String("handshake-workers", "1,2", "with -handshakes: the proxy worker counts to measure, each with servers of its own (nginx worker processes and Envoy threads alike)")
	fs.BoolVar(&o.exactBalance, "exact-balance", false, "every Envoy listener, the farm's and the minimal Envoy's, hands each new connection to its least loaded worker (connection_balance_config exact_balance) in place of the kernel's spread")
	fs.IntVar(&o.handshakeClients, "handshake-clients", 16, "with -handshakes: connections the handshake client opens at once")
	fs.BoolVar(&o.envoyGateway, "envoy-gateway", true, "also measure Envoy with Envoy Gateway's configuration of the same case (its translator's output, testdata/envoygateway), on the same binary and arguments")
	fs.BoolVar(&o.bufferedProxy, "buffered-proxy", true, "also measure an nginx proxy with proxy_buffering on (nginx's default; ingress-nginx turns it off), for reference")
	fs.StringVar(&o.perfOut, "perf", "", "after the measurements, profile every proxy hop (nginx, Envoy) with perf under the first workload, and write perf's reports to this file")
	fs.BoolVar(&o.keep, "keep", false, "keep the work directory (configs, logs of nginx and Envoy); it is removed otherwise")
	fs.StringVar(&o.Bin, "wrk", "", "the wrk binary (default: wrk on PATH, else bin/wrk)")
	fs.StringVar(&o.h2load.Bin, "h2load", "", "the h2load binary (default: h2load on PATH, else bin/h2load)")
	fs.StringVar(&o.nginx, "nginx", "", "the nginx binary (default: nginx on PATH, else bin/nginx)")
	fs.StringVar(&o.envoy, "envoy", "", "the Envoy binary (default: bin/envoy)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage of dataplane (see bench/README.md):\n")
		fs.PrintDefaults()
		fmt.Fprintf(fs.Output(), "\nTuning knobs, for -tuning and -steps (NAME or NAME=VALUE); * gives up a feature, to measure its cost:\n")
		for _, k := range knobs {
			mark := " "
			if k.diagnostic {
				mark = "*"
			}
			fmt.Fprintf(fs.Output(), "%s %-22s %s\n", mark, k.name, k.about)
		}
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	for _, n := range strings.Split(*names, ",") {
		i := slices.IndexFunc(workloads, func(w workload) bool { return w.name == strings.TrimSpace(n) })
		if i < 0 {
			return o, fmt.Errorf("unknown workload %q", n)
		}
		o.workloads = append(o.workloads, workloads[i])
	}
	for _, p := range strings.Split(*protos, ",") {
		p := protocol(strings.TrimSpace(p))
		if !slices.Contains(protocols, p) {
			return o, fmt.Errorf("unknown protocol %q", p)
		}
		o.protocols = append(o.protocols, p)
	}
	if o.rounds < 1 || o.Connections < 1 || o.Threads < 1 || o.proxyWorkers < 1 || o.h2load.H2Connections < 1 || o.h2load.Streams < 1 || o.duration < time.Second {
		return o, errors.New("-rounds, -connections, -threads, -h2-connections, -h2-streams and -proxy-workers must be positive, -duration at least 1s")
	}
	o.h2load.Connections = o.Connections
	o.Headers = []string{"Host: " + siteHost}
	concurrencyDefault = o.proxyWorkers
	o.CPUs, o.hopCPUs, _ = benchkit.Placement(o.pin && o.proxyWorkers == 1)
	o.h2load.CPUs = o.CPUs
	var err error
	if o.tuning, err = parseSettings(*tuning); err != nil {
		return o, err
	}
	if *steps == "default" {
		*steps = ladder
	}
	if o.steps, err = parseSteps(*steps); err != nil {
		return o, err
	}
	if len(o.steps) > 0 && o.features {
		return o, errors.New("-steps and -features are two runs of their own")
	}
	if len(o.steps) > 0 {
		o.protocols = []protocol{protoHTTP} // the steps tune the clear-text farm
	}
	if o.handshakes {
		o.envoyGateway = false // Table 4.3 compares nginx, the minimal Envoy and the farm
	}
	if o.handshakes {
		if len(o.steps) > 0 || o.features {
			return o, errors.New("-handshakes, -steps and -features are runs of their own")
		}
		if o.workerCounts, err = parseCounts(*workerCounts); err != nil {
			return o, err
		}
		if o.handshakeClients < 1 {
			return o, errors.New("-handshake-clients must be positive")
		}
		// Every protocol, the servers as rendered: no tuned or buffered path.
		o.protocols, o.tuning, o.bufferedProxy = protocols, nil, false
	}
	bin, err := benchkit.BinDir()
	if err != nil {
		return o, err
	}
	if o.Bin, err = benchkit.Binary(o.Bin, "wrk", bin, "hack/install-tools.sh wrk"); err != nil {
		return o, err
	}
	if slices.ContainsFunc(o.protocols, func(p protocol) bool { return p != protoHTTP }) {
		if o.h2load.Bin, err = benchkit.Binary(o.h2load.Bin, "h2load", bin, "hack/install-tools.sh h2load"); err != nil {
			return o, err
		}
	}
	if o.nginx, err = benchkit.Binary(o.nginx, "nginx", bin, "make tools"); err != nil {
		return o, err
	}
	if o.envoy == "" {
		o.envoy = filepath.Join(bin, "envoy")
	}
	if _, err := os.Stat(o.envoy); err != nil {
		return o, fmt.Errorf("%v (run: make tools)", err)
	}
	return o, nil
}

// parseCounts reads a list of positive numbers such as "1,2".
func parseCounts(list string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("worker count %q: want a positive number", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// logf prints a progress line.
func logf(format string, args ...any) {
	fmt.Printf("%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}
