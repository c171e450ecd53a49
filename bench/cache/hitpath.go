package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"webfarm.dev/operator/bench/internal/benchkit"
	"webfarm.dev/operator/internal/testutil/localcache"
	"webfarm.dev/operator/internal/vocabulary"
)

// hitSample is one measurement of one path of the cache-hit comparison.
type hitSample struct {
	requestsPerSecond float64
	p50, p99          time.Duration
	// CPU per request: the hop (cache tier nginx, or the proxy nginx), the
	// pool worker, and the benchmark's own process (the cache agent, which
	// counts the tier's requests from nginx's log).
	hopCPU, poolCPU, agentCPU time.Duration
}

// hitPath is one way to one file.
type hitPath struct {
	name     string
	file     file
	url      string
	script   string
	baseline bool
	proxy    *benchkit.Server // the baseline's nginx
	tier     *localcache.Tier // the cache tier
	samples  []hitSample
	sent     int64 // requests wrk counted, warm-up included
}

func (h *hitPath) hopCPU() (time.Duration, error) {
	if h.tier != nil {
		return tierCPU(h.tier)
	}
	return h.proxy.CPUTime()
}

// measureHit runs wrk once against a path and takes the CPU the processes
// spent meanwhile.
func measureHit(ctx context.Context, c benchkit.Wrk, h *hitPath, pool *benchkit.Server, d time.Duration) (hitSample, error) {
	hopBefore, err := h.hopCPU()
	if err != nil {
		return hitSample{}, err
	}
	poolBefore, err := pool.CPUTime()
	if err != nil {
		return hitSample{}, err
	}
	selfBefore := selfCPU()
	r, _, err := c.Run(ctx, h.url, h.script, d)
	h.sent += r.Requests
	if err != nil {
		return hitSample{}, fmt.Errorf("%s: %w", h.name, err)
	}
	selfAfter := selfCPU()
	hopAfter, err := h.hopCPU()
	if err != nil {
		return hitSample{}, err
	}
	poolAfter, err := pool.CPUTime()
	if err != nil {
		return hitSample{}, err
	}
	if err := pool.Exited(); err != nil {
		return hitSample{}, err
	}
	n := time.Duration(r.Requests)
	return hitSample{
		requestsPerSecond: r.RequestsPerSecond(),
		p50:               r.P50(),
		p99:               r.P99(),
		hopCPU:            (hopAfter - hopBefore) / n,
		poolCPU:           (poolAfter - poolBefore) / n,
		agentCPU:          (selfAfter - selfBefore) / n,
	}, nil
}

// hitResult is the hit path comparison: each file through the baseline and
// the cache, and what the cache's agent counted meanwhile.
type hitResult struct {
	paths []*hitPath
	// agentCounted are the requests the agent counted, against the
	// requests that reached the cache tier.
	agentCounted, tierRequests int64
}

// benchHitPath compares files answered by the cache tier (threshold 1,
// warmed: every request a hit) with the same files through the baseline
// nginx proxy to the pool worker, in interleaved rounds. The first file is
// the one the target is about.
func benchHitPath(ctx context.Context, o options, dir string, pool *benchkit.Server, poolPort int, files []file) (*hitResult, error) {
	ports, err := benchkit.FreePorts(1)
	if err != nil {
		return nil, err
	}
	// The data path benchmark's baseline, with its defaults: 1 worker,
	// proxy_buffering off.
	conf, err := benchkit.ProxyConfig(benchkit.ProxyLayout{TmpDir: filepath.Join(dir, "proxy"), Port: ports[0], Upstream: poolPort, Workers: 1})
	if err != nil {
		return nil, err
	}
	proxy, err := benchkit.StartNginx(o.nginx, "proxy nginx", filepath.Join(dir, "proxy"), conf, o.hopCPUs)
	if err != nil {
		return nil, err
	}
	defer proxy.Stop()
	proxyURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	if err := benchkit.WaitReady(ctx, proxy, proxyURL+files[0].path, siteHost, readyTimeout); err != nil {
		return nil, err
	}

	c, err := benchCache(cacheSettings{threshold: 1, period: 10 * time.Second, ttl: 180 * time.Second, memory: o.memory}, poolPort)
	if err != nil {
		return nil, err
	}
	tier, err := localcache.Start(o.nginx, c)
	if err != nil {
		return nil, fmt.Errorf("starting the cache tier: %w", err)
	}
	defer tier.Stop()
	if err := placeTier(tier, o.hopCPU); err != nil {
		return nil, err
	}
	res := &hitResult{}
	client := &http.Client{Timeout: 5 * time.Second}
	for i, f := range files {
		// Warm: the first request stores the file, the second must be a hit.
		var status string
		for range 2 {
			h, err := benchkit.Get(ctx, client, tier.URL+f.path, siteHost, map[string]string{vocabulary.PoolHeader: poolName}, content(f))
			if err != nil {
				return nil, fmt.Errorf("warming the cache tier: %w", err)
			}
			status = h.Get("X-Cache-Status")
			res.tierRequests++
		}
		if status != "HIT" {
			return nil, fmt.Errorf("the warmed cache tier answered %s with %q, want HIT", f.path, status)
		}
		script := filepath.Join(dir, fmt.Sprintf("hit-%d.lua", i))
		if err := os.WriteFile(script, []byte(benchkit.WrkScript(f.path)), 0o644); err != nil {
			return nil, err
		}
		res.paths = append(res.paths,
			&hitPath{name: "nginx proxy -> nginx (baseline)", file: f, baseline: true, url: proxyURL, script: script, proxy: proxy},
			&hitPath{name: "cache tier, hit", file: f, url: tier.URL, script: script, tier: tier})
	}
	for _, h := range res.paths {
		r, _, err := o.wrk.Run(ctx, h.url, h.script, o.hitWarmup)
		h.sent += r.Requests
		if err != nil {
			return res, fmt.Errorf("warming up %s: %w", h.name, err)
		}
	}
	for round := range o.hitRounds {
		for k := range res.paths {
			h := res.paths[(k+round)%len(res.paths)] // each round starts with another path
			if err := benchkit.WaitQuiet(ctx, o.quietBelow, o.quietWait); err != nil {
				return res, err
			}
			s, err := measureHit(ctx, o.wrk, h, pool, o.hitDuration)
			if err != nil {
				return res, err
			}
			h.samples = append(h.samples, s)
			logf("hit path, round %d/%d, %s, %s: %.0f req/s, p99 %s", round+1, o.hitRounds, h.file.path, h.name, s.requestsPerSecond, s.p99)
		}
	}
	for _, h := range res.paths {
		if h.tier != nil {
			res.tierRequests += h.sent
		}
	}
	// The agent counts from nginx's log datagrams: give the last ones time.
	st, err := settledStats(ctx, tier, res.tierRequests, 2*time.Second)
	if err != nil {
		return res, err
	}
	res.agentCounted = lookups(st)
	logf("hit path: the cache tier's agent counted %d requests (%d hits), wrk completed %d", res.agentCounted, st.Hits, res.tierRequests)
	return res, nil
}
