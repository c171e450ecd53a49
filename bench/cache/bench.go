package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"webfarm.dev/operator/bench/internal/benchkit"
	"webfarm.dev/operator/internal/testutil/localcache"
	"webfarm.dev/operator/internal/vocabulary"
)

// readyTimeout bounds each server's start.
const readyTimeout = 20 * time.Second

// caseResult is what one replay case measured.
type caseResult struct {
	spec caseSpec
	// stats are the cache tier's counters over the replay (the lookups and
	// stored/evicted as differences, objects and memory at its end); peak*
	// are the largest seen while it ran.
	stats                 vocabulary.AgentStats
	peakObjects, peakMem  int64
	poolRequests          int64 // requests that reached the pool worker
	poolCPU, benchCPU     time.Duration
	tierCPU               time.Duration // the cache tier's nginx
	replay, burst         replayResult
	countedAfter          time.Duration // how long the agent's counters took to reach the replay's requests
	counted, sentRequests int64
}

// bench writes the content, starts the pool worker, replays the sequence for
// every case, then measures the hit path. Every process it started is
// stopped when it returns, also on error or Ctrl-C.
func bench(ctx context.Context, o options, dir string) (*report, error) {
	rep := &report{o: o, start: time.Now(), machine: benchkit.Machine()}
	s := newSite(o.images, o.imageSize, o.thumbSize)
	rep.site = s
	count := int(o.rate * o.replay.Seconds())
	seq := zipfSequence(len(s.files), count, o.zipf, o.seed)
	sizes := make([]int, len(s.files))
	for i, f := range s.files {
		sizes[i] = f.size
	}
	rep.requests = count
	rep.working = measureWorkingSet(seq, sizes, o.rate, 10*time.Second)
	rep.staticShare = topShare(seq, sizes, o.memory)

	if err := os.Chmod(dir, 0o755); err != nil { // nginx workers run as another user
		return nil, err
	}
	contentDir := filepath.Join(dir, "www")
	logf("writing %d files (%.0f MiB) to %s", len(s.files)+1, float64(s.bytes())/(1<<20), contentDir)
	if err := writeContent(contentDir, append(s.files, hotFile)); err != nil {
		return nil, err
	}
	ports, err := benchkit.FreePorts(2)
	if err != nil {
		return nil, err
	}
	layout := benchkit.PoolLayout{ContentDir: contentDir, TmpDir: filepath.Join(dir, "pool"), HTTPPort: ports[0], StatusPort: ports[1]}
	poolModel, err := benchPool()
	if err != nil {
		return nil, err
	}
	conf, err := benchkit.PoolConfig(poolModel, layout)
	if err != nil {
		return nil, err
	}
	pool, err := benchkit.StartNginx(o.nginx, "pool nginx", layout.TmpDir, conf, o.cpus)
	if err != nil {
		return nil, err
	}
	defer pool.Stop()
	if err := benchkit.WaitReady(ctx, pool, fmt.Sprintf("http://127.0.0.1:%d%s", layout.HTTPPort, hotFile.path), siteHost, readyTimeout); err != nil {
		return nil, err
	}
	logf("pool nginx ready (pid %d); replay: %d requests at %.0f/s over %d connections per case", pool.PID(), count, o.rate, o.concurrency)

	for _, cs := range o.cases {
		res, err := runCase(ctx, o, cs, s, seq, pool, layout)
		if err != nil {
			return rep, fmt.Errorf("%s: %w", cs.name, err)
		}
		rep.cases = append(rep.cases, res)
	}
	if o.hitPath {
		// The target's file, and the gallery's most requested image.
		files := []file{hotFile, s.files[mostRequested(seq, o.images)]}
		hit, err := benchHitPath(ctx, o, dir, pool, layout.HTTPPort, files)
		rep.hit = hit
		if err != nil {
			return rep, fmt.Errorf("hit path: %w", err)
		}
	}
	rep.wall = time.Since(rep.start)
	return rep, nil
}

// runCase replays the sequence through a fresh cache tier with the case's
// settings, or straight to the pool worker, and reads what the tier and the
// pool counted.
func runCase(ctx context.Context, o options, cs caseSpec, s site, seq []int, pool *benchkit.Server, l benchkit.PoolLayout) (*caseResult, error) {
	res := &caseResult{spec: cs}
	rp := replayer{url: fmt.Sprintf("http://127.0.0.1:%d", l.HTTPPort), concurrency: o.concurrency, files: s.files}
	var tier *localcache.Tier
	var before vocabulary.AgentStats
	if cs.cache != nil {
		c, err := benchCache(*cs.cache, l.HTTPPort)
		if err != nil {
			return nil, err
		}
		tier, err = localcache.Start(o.nginx, c)
		if err != nil {
			return nil, fmt.Errorf("starting the cache tier: %w", err)
		}
		defer tier.Stop()
		if err := placeTier(tier, o.hopCPU); err != nil {
			return nil, err
		}
		// A request with a query string passes by the cache (BYPASS): it
		// checks the way to the pool without storing anything.
		f := s.files[0]
		if _, err := benchkit.Get(ctx, &http.Client{Timeout: 5 * time.Second}, tier.URL+f.path+"?check=1", siteHost, map[string]string{vocabulary.PoolHeader: poolName}, content(f)); err != nil {
			return nil, fmt.Errorf("the cache tier does not serve the pool's files: %w", err)
		}
		rp.url, rp.pool = tier.URL, poolName
		if before, err = settledStats(ctx, tier, 1, 3*time.Second); err != nil {
			return nil, err
		}
	}
	statusURL := fmt.Sprintf("http://127.0.0.1:%d/nginx_status", l.StatusPort)
	poolBefore, err := stubRequests(ctx, statusURL)
	if err != nil {
		return nil, err
	}
	poolCPUBefore, err := pool.CPUTime()
	if err != nil {
		return nil, err
	}
	var tierCPUBefore time.Duration
	if tier != nil {
		if tierCPUBefore, err = tierCPU(tier); err != nil {
			return nil, err
		}
	}
	selfBefore := selfCPU()

	// The tier's objects and memory, every second.
	var peaks sync.WaitGroup
	stopPeaks := make(chan struct{})
	if tier != nil {
		peaks.Add(1)
		go func() {
			defer peaks.Done()
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for {
				select {
				case <-stopPeaks:
					return
				case <-tick.C:
				}
				if st, err := tier.Stats(); err == nil {
					res.peakObjects = max(res.peakObjects, st.Objects)
					res.peakMem = max(res.peakMem, st.MemoryBytes)
				}
			}
		}()
	}
	logf("%s: replaying %d requests", cs.title, len(seq))
	res.replay, err = rp.replay(ctx, seq, 0, len(seq), o.rate, 0)
	close(stopPeaks)
	peaks.Wait()
	if err != nil {
		return nil, err
	}
	res.benchCPU = selfCPU() - selfBefore
	poolAfter, err := stubRequests(ctx, statusURL)
	if err != nil {
		return nil, err
	}
	res.poolRequests = poolAfter - poolBefore - 1 // the second read counts itself
	poolCPUAfter, err := pool.CPUTime()
	if err != nil {
		return nil, err
	}
	res.poolCPU = poolCPUAfter - poolCPUBefore
	if tier != nil {
		tierCPUAfter, err := tierCPU(tier)
		if err != nil {
			return nil, err
		}
		res.tierCPU = tierCPUAfter - tierCPUBefore
		// The agent counts from nginx's log datagrams: wait for the last ones.
		want := lookups(before) + int64(res.replay.requests)
		waited := time.Now()
		after, err := settledStats(ctx, tier, want, 3*time.Second)
		if err != nil {
			return nil, err
		}
		res.countedAfter = time.Since(waited)
		res.stats = vocabulary.AgentStats{
			Hits: after.Hits - before.Hits, Misses: after.Misses - before.Misses, Bypasses: after.Bypasses - before.Bypasses,
			Stored: after.Stored - before.Stored, Evicted: after.Evicted - before.Evicted,
			Objects: after.Objects, MemoryBytes: after.MemoryBytes,
		}
		res.counted, res.sentRequests = lookups(res.stats), int64(res.replay.requests)
		res.peakObjects = max(res.peakObjects, after.Objects)
		res.peakMem = max(res.peakMem, after.MemoryBytes)
	}
	logf("%s: %.0f req/s, p99 %s, pool requests %d, cache statuses %v, tier stats %+v",
		cs.name, res.replay.requestsPerSecond(), percentile(res.replay.latencies, 99), res.poolRequests, res.replay.cacheStatus, res.stats)
	if o.burst > 0 {
		res.burst, err = rp.replay(ctx, seq, len(seq), 0, 0, o.burst)
		if err != nil {
			return nil, fmt.Errorf("burst: %w", err)
		}
		logf("%s: burst %.0f req/s, p99 %s", cs.name, res.burst.requestsPerSecond(), percentile(res.burst.latencies, 99))
	}
	return res, nil
}

// mostRequested is the file below limit that seq asks for most often (the
// lowest of equals).
func mostRequested(seq []int, limit int) int {
	counts := make([]int, limit)
	for _, f := range seq {
		if f < limit {
			counts[f]++
		}
	}
	best := 0
	for f, c := range counts {
		if c > counts[best] {
			best = f
		}
	}
	return best
}

// lookups are the requests the tier counted.
func lookups(s vocabulary.AgentStats) int64 { return s.Hits + s.Misses + s.Bypasses }

// settledStats reads the tier's counters until they count at least want
// requests, for at most wait; then it returns what they count.
func settledStats(ctx context.Context, t *localcache.Tier, want int64, wait time.Duration) (vocabulary.AgentStats, error) {
	deadline := time.Now().Add(wait)
	for {
		s, err := t.Stats()
		if err != nil {
			return s, err
		}
		if lookups(s) >= want || time.Now().After(deadline) || ctx.Err() != nil {
			return s, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
}
