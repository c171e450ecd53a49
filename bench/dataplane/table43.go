package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"webfarm.dev/operator/bench/internal/benchkit"
)

// A run of -handshakes answers the IIS 5 book's Table 4.3 for the frontends:
// requests/s with and without TLS, on 1 and 2 proxy workers, and what a TLS
// handshake costs, full and resumed, per core. Each worker count starts its
// own servers; within one, every measurement is interleaved as elsewhere.

// workersRun is one worker count's measurements.
type workersRun struct {
	workers    int
	placement  string
	results    []*workloadResult // requests/s, per workload and protocol
	handshakes []*handshakeResult
	// balance: how each Envoy spread its connections over its workers.
	balance  []string
	farmArgs []string // the farm's Envoy's arguments
}

// connectionMode is how each connection of the handshake client begins.
type connectionMode string

const (
	connClear   connectionMode = "clear text"   // no TLS: the control, what a connection costs without a handshake
	connFull    connectionMode = "TLS, full"    // no session cache
	connResumed connectionMode = "TLS, resumed" // a session cache: PSK resumption
)

var connectionModes = []connectionMode{connClear, connFull, connResumed}

// handshakeResult is one server's new connections of one mode.
type handshakeResult struct {
	server  string
	kind    string // serverKind
	mode    connectionMode
	samples []handshakeSample
}

// median is the median of each figure over the rounds.
func (h *handshakeResult) median() handshakeSample {
	pick := func(f func(handshakeSample) float64) float64 { return benchkit.MedianOf(h.samples, f) }
	return handshakeSample{
		perSecond:    pick(func(s handshakeSample) float64 { return s.perSecond }),
		resumedShare: pick(func(s handshakeSample) float64 { return s.resumedShare }),
		hopCPU:       time.Duration(pick(func(s handshakeSample) float64 { return float64(s.hopCPU) })),
		otherCores:   pick(func(s handshakeSample) float64 { return s.otherCores }),
	}
}

// benchWorkerCounts runs the servers once per worker count: first the
// requests/s of every protocol, then the handshakes.
func benchWorkerCounts(ctx context.Context, o options, dir string, inputs map[string]loadInput, rep *report) error {
	for _, n := range o.workerCounts {
		run, err := benchWorkers(ctx, withWorkers(o, n), filepath.Join(dir, fmt.Sprintf("workers-%d", n)), inputs)
		if run != nil {
			rep.workerRuns = append(rep.workerRuns, run)
			if rep.envoyArgs == nil {
				rep.envoyArgs = run.farmArgs
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// withWorkers is o for n proxy workers: nginx's worker processes and Envoy's
// threads alike, pinned only with one.
func withWorkers(o options, n int) options {
	o.proxyWorkers, o.envoyWorkers = n, n
	o.CPUs, o.hopCPUs, _ = benchkit.Placement(o.pin && n == 1)
	o.h2load.CPUs = o.CPUs
	return o
}

func benchWorkers(ctx context.Context, o options, dir string, inputs map[string]loadInput) (*workersRun, error) {
	var procs servers
	defer procs.stopAll()
	run := &workersRun{workers: o.proxyWorkers, placement: placement(o)}
	// Every worker count serves the run's files, from the work directory.
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.Symlink(filepath.Join("..", "www"), filepath.Join(dir, "www")); err != nil {
		return nil, err
	}
	routes, pool, err := startRoutes(ctx, o, dir, &procs)
	if err != nil {
		return nil, err
	}
	// Table 4.3 is about the proxy hop: bare nginx has none.
	routes = slices.DeleteFunc(routes, func(r *route) bool { return r.front == nil })
	if err := verify(ctx, routes, o.workloads); err != nil {
		return nil, err
	}
	for _, r := range routes {
		if r.farm && run.farmArgs == nil {
			run.farmArgs = r.args
		}
	}
	logf("%d worker(s): servers ready, %d routes", o.proxyWorkers, len(routes))
	for _, w := range o.workloads {
		for _, p := range o.protocols {
			group := slices.DeleteFunc(slices.Clone(routes), func(r *route) bool { return r.proto != p })
			res, err := measureWorkload(ctx, o, w, p, group, pool, inputs[w.name])
			if res != nil {
				run.results = append(run.results, res)
			}
			if err != nil {
				return run, err
			}
		}
	}
	// Envoy's connections per worker so far: the kept-alive ones.
	keptAlive := map[*route][]int64{}
	for _, r := range routes {
		if r.admin != "" && r.proto != protoH2 && o.proxyWorkers > 1 {
			if keptAlive[r], err = workerCounts(ctx, r); err != nil {
				return run, err
			}
		}
	}
	// One route per server and mode: clear text, and HTTP/1.1 over TLS.
	servers := slices.DeleteFunc(slices.Clone(routes), func(r *route) bool { return r.proto == protoH2 })
	if run.handshakes, err = measureHandshakes(ctx, o, servers, smallestFile(o.workloads)); err != nil {
		return run, err
	}
	for _, r := range routes {
		if before, ok := keptAlive[r]; ok {
			all, err := workerCounts(ctx, r)
			if err != nil {
				return run, err
			}
			run.balance = append(run.balance, balanceLine(r, before, all))
		}
	}
	return run, nil
}

// smallestFile is the path of the workloads' smallest file: the request of
// each handshake's connection, so that the handshake weighs the most.
func smallestFile(ws []workload) string {
	var best file
	for _, w := range ws {
		for _, f := range w.files {
			if best.path == "" || f.size < best.size {
				best = f
			}
		}
	}
	return best.path
}

// measureHandshakes measures every server's full handshakes, then its
// resumed ones, each in interleaved rounds after an unmeasured run that
// also fills the session caches.
func measureHandshakes(ctx context.Context, o options, routes []*route, path string) ([]*handshakeResult, error) {
	if o.CPUs != "" {
		// The client is this process: on the client's processor, as wrk and
		// h2load are; put back afterwards, for the processes it starts next.
		restore, err := pinProcess(o.CPUs)
		if err != nil {
			return nil, err
		}
		defer restore()
	}
	var out []*handshakeResult
	for _, mode := range connectionModes {
		var clients []handshakeClient
		var results []*handshakeResult
		var fronts []*benchkit.Server
		for _, r := range routes {
			if (mode == connClear) != (r.proto == protoHTTP) {
				continue
			}
			c := handshakeClient{addr: r.dialAddr(), serverName: siteHost, path: path, clients: o.handshakeClients}
			if r.cert != nil {
				c.roots = r.cert.ca.Pool
			}
			if mode == connResumed {
				c.cache = tls.NewLRUClientSessionCache(16)
			}
			if o.warmup > 0 {
				if _, err := c.run(ctx, o.warmup); err != nil {
					return out, fmt.Errorf("warming up connections of %s: %w", r.name, err)
				}
			}
			clients, fronts = append(clients, c), append(fronts, r.front)
			results = append(results, &handshakeResult{server: r.name, kind: serverKind(r.baseline, r.minimal, r.farm), mode: mode})
		}
		for round := range o.rounds {
			for k := range clients {
				i := (k + round) % len(clients)
				if err := benchkit.WaitQuiet(ctx, o.quietBelow, o.quietWait); err != nil {
					return out, err
				}
				s, err := measureHandshake(ctx, clients[i], fronts[i], o.duration)
				if err != nil {
					return out, fmt.Errorf("%s: %w", results[i].server, err)
				}
				results[i].samples = append(results[i].samples, s)
				logf("new connections, %s, round %d/%d, %s: %.0f/s, %s hop CPU each, %.0f %% resumed", mode, round+1, o.rounds,
					results[i].server, s.perSecond, benchkit.Micros(s.hopCPU), 100*s.resumedShare)
			}
		}
		out = append(out, results...)
	}
	return out, nil
}

// dialAddr is where a client connects to the route's server.
func (r *route) dialAddr() string {
	if r.addr != "" {
		return r.addr
	}
	return strings.TrimPrefix(r.url, "http://")
}

// measureHandshake runs the client once and takes the server's CPU time.
func measureHandshake(ctx context.Context, c handshakeClient, front *benchkit.Server, d time.Duration) (handshakeSample, error) {
	cpuBefore, err := front.CPUTime()
	if err != nil {
		return handshakeSample{}, err
	}
	busyBefore, err := benchkit.MachineBusy()
	if err != nil {
		return handshakeSample{}, err
	}
	var ru0, ru1 unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ru0)
	count, err := c.run(ctx, d)
	if err != nil {
		return handshakeSample{}, err
	}
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ru1)
	busyAfter, err := benchkit.MachineBusy()
	if err != nil {
		return handshakeSample{}, err
	}
	cpuAfter, err := front.CPUTime()
	if err != nil {
		return handshakeSample{}, err
	}
	if err := front.Exited(); err != nil {
		return handshakeSample{}, err
	}
	hop := cpuAfter - cpuBefore
	perConn, err := hopCPUPerConnection(hop, count)
	if err != nil {
		return handshakeSample{}, err
	}
	client := rusageCPU(ru1) - rusageCPU(ru0)
	others := busyAfter - busyBefore - hop - client
	return handshakeSample{
		perSecond:    count.perSecond(),
		resumedShare: count.resumedShare(),
		hopCPU:       perConn,
		otherCores:   max(0, others.Seconds()/count.elapsed.Seconds()),
	}, nil
}

func rusageCPU(ru unix.Rusage) time.Duration {
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// pinProcess puts every thread of this process on cpus (threads started
// later inherit it) and returns what puts them back on every processor.
func pinProcess(cpus string) (func(), error) {
	var set unix.CPUSet
	for _, c := range strings.Split(cpus, ",") {
		n, err := strconv.Atoi(c)
		if err != nil {
			return nil, fmt.Errorf("processor %q: %w", c, err)
		}
		set.Set(n)
	}
	var all unix.CPUSet
	for n := range runtime.NumCPU() {
		all.Set(n)
	}
	if err := setThreadsAffinity(&set); err != nil {
		return nil, err
	}
	return func() { _ = setThreadsAffinity(&all) }, nil
}

func setThreadsAffinity(set *unix.CPUSet) error {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, set); err != nil && err != unix.ESRCH { // a thread may have ended
			return err
		}
	}
	return nil
}

// workerCounts reads how many connections each of an Envoy's workers has
// accepted on the route's listener so far.
func workerCounts(ctx context.Context, r *route) ([]int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.admin+"/stats?filter=downstream_cx_total", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return workerConnections(string(body), strings.ReplaceAll(r.dialAddr(), ":", "_")), nil
}

// balanceLine says how a route's Envoy spread its connections over its
// workers: the kept-alive ones of the requests' measurements, then the new
// ones of the handshakes' (after less before).
func balanceLine(r *route, keptAlive, all []int64) string {
	fresh := make([]int64, len(all))
	for i := range all {
		fresh[i] = all[i]
		if i < len(keptAlive) {
			fresh[i] -= keptAlive[i]
		}
	}
	return fmt.Sprintf("%s: connections per worker, kept alive (requests/s) %s, new (handshakes) %s", r.name, joinInts(keptAlive), joinInts(fresh))
}

var workerStat = regexp.MustCompile(`^listener\.([^ ]+)\.worker_(\d+)\.downstream_cx_total: (\d+)$`)

// workerConnections reads, from Envoy's admin stats, the connections each
// worker accepted on the listener of that stat name (address_port).
func workerConnections(stats, listener string) []int64 {
	var out []int64
	for _, line := range strings.Split(stats, "\n") {
		m := workerStat.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil || m[1] != listener {
			continue
		}
		w, _ := strconv.Atoi(m[2])
		n, _ := strconv.ParseInt(m[3], 10, 64)
		for len(out) <= w {
			out = append(out, 0)
		}
		out[w] = n
	}
	return out
}

func joinInts(ns []int64) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.FormatInt(n, 10)
	}
	return strings.Join(s, " / ")
}
