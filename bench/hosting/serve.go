package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// poolServers stand in for the shared pools' workers: one HTTP server per
// pool that answers every request with the pool's name, so that a request
// through Envoy shows which pool its host was routed to.
type poolServers struct {
	address string
	ports   []int
	servers []*http.Server
}

// startPoolServers listens on an address of this host that is not loopback:
// the API server refuses loopback addresses in EndpointSlices.
func startPoolServers(pools int) (*poolServers, error) {
	address, err := hostAddress()
	if err != nil {
		return nil, err
	}
	ps := &poolServers{address: address}
	for p := range pools {
		l, err := net.Listen("tcp", net.JoinHostPort(address, "0"))
		if err != nil {
			ps.stop()
			return nil, err
		}
		body := []byte(poolName(p))
		s := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(body) }), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = s.Serve(l) }()
		ps.ports = append(ps.ports, l.Addr().(*net.TCPAddr).Port)
		ps.servers = append(ps.servers, s)
	}
	return ps, nil
}

// hostAddress is this host's first IPv4 address outside loopback and
// link-local ranges.
func hostAddress() (string, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "", err
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && n.IP.IsGlobalUnicast() {
			return n.IP.String(), nil
		}
	}
	return "", errors.New("this host has no IPv4 address outside loopback for the pools' endpoints")
}

func (ps *poolServers) stop() {
	for _, s := range ps.servers {
		_ = s.Close()
	}
}

// prober sends requests through the frontend with keep-alive connections.
type prober struct{ client *http.Client }

func newProber(conns int) prober {
	t := &http.Transport{MaxIdleConns: conns, MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns, IdleConnTimeout: time.Minute, DisableCompression: true}
	return prober{client: &http.Client{Transport: t, Timeout: 5 * time.Second}}
}

// errNotServed: the frontend did not route the host to its pool (yet).
var errNotServed = errors.New("not served")

// served: a request for host is answered by pool, through the frontend.
func (p prober) served(ctx context.Context, host, pool string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, frontendURL+"/", nil)
	if err != nil {
		return err
	}
	req.Host = host
	resp, err := p.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || string(body) != pool {
		return fmt.Errorf("%w: %s answered %s %q, want 200 %q", errNotServed, host, resp.Status, body, pool)
	}
	return nil
}

// sweep checks every route i in [from, to) with workers in parallel and
// returns the first route not served (-1: all are) and that error.
func (p prober) sweep(ctx context.Context, w workload, from, to, workers int) (int, error) {
	var next atomic.Int64
	next.Store(int64(from))
	var (
		mu       sync.Mutex
		firstBad = -1
		firstErr error
	)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= to || ctx.Err() != nil {
					return
				}
				if err := p.served(ctx, routeHost(i), w.routePool(i)); err != nil {
					mu.Lock()
					if firstBad == -1 || i < firstBad {
						firstBad, firstErr = i, err
					}
					mu.Unlock()
					next.Store(int64(to)) // one is enough: the caller sweeps again
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return -1, err
	}
	return firstBad, firstErr
}

// loadResult is a fixed-concurrency load's outcome.
type loadResult struct {
	requests, failures int64
	wall               time.Duration
}

func (r loadResult) rps() float64 { return float64(r.requests) / r.wall.Seconds() }

// load sends requests through the frontend from conns keep-alive
// connections for d, each request for the next of hosts (route indexes), and
// counts the answers; a request not answered 200 by its pool is a failure.
func (p prober) load(ctx context.Context, w workload, hosts, conns int, d time.Duration) loadResult {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var requests, failures, next atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) % int64(hosts))
				err := p.served(ctx, routeHost(i), w.routePool(i))
				if ctx.Err() != nil {
					return // the deadline cut this request short: not counted
				}
				requests.Add(1)
				if err != nil {
					failures.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return loadResult{requests: requests.Load(), failures: failures.Load(), wall: time.Since(start)}
}
