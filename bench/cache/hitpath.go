package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/testutil/localcache"
)

// wrkClient is the load generator of the cache-hit path: wrk with a fixed
// number of keep-alive connections and threads, for a fixed time.
type wrkClient struct {
	wrk         string
	connections int
	threads     int
	cpus        string // processors the client runs on ("": any)
}

// wrkResult is what the script's done() prints.
type wrkResult struct {
	Requests   int64 `json:"requests"`
	DurationUS int64 `json:"duration_us"`
	Errors     struct {
		Connect, Read, Write, Status, Timeout int64
	} `json:"errors"`
	Latency struct {
		P50, P99 int64
	} `json:"latency_us"`
}

// resultMarker starts the line of wrk's output that holds the results.
const resultMarker = "WEBFARM-RESULT "

// wrkScript asks for one path and prints wrk's figures as one JSON line.
func wrkScript(path string) string {
	return fmt.Sprintf("wrk.path = %q\n", path) + `
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('` + resultMarker + `{"requests":%d,"duration_us":%d,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latency_us":{"p50":%d,"p99":%d}}\n',
    summary.requests, summary.duration,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99)))
end
`
}

// run loads url for duration with the script. Errors of any kind fail the
// measurement.
func (c wrkClient) run(ctx context.Context, url, script string, duration time.Duration) (wrkResult, error) {
	args := niced(c.cpus, []string{c.wrk,
		"-c", strconv.Itoa(c.connections), "-t", strconv.Itoa(c.threads),
		"-d", fmt.Sprintf("%ds", max(1, int(duration.Round(time.Second)/time.Second))),
		"--timeout", "5s", "--latency",
		"-H", "Host: " + siteHost,
		"-H", model.PoolHeader + ": " + poolName,
		"-s", script, url})
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return wrkResult{}, fmt.Errorf("wrk: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	r, err := parseWrk(stdout.String())
	if err != nil {
		return r, err
	}
	e := r.Errors
	if bad := e.Connect + e.Read + e.Write + e.Status + e.Timeout; bad > 0 || r.Requests == 0 {
		return r, fmt.Errorf("wrong answers: %d requests, errors: connect %d, read %d, write %d, status %d, timeout %d",
			r.Requests, e.Connect, e.Read, e.Write, e.Status, e.Timeout)
	}
	return r, nil
}

// parseWrk finds the result line in wrk's output.
func parseWrk(out string) (wrkResult, error) {
	for _, line := range strings.Split(out, "\n") {
		if js, ok := strings.CutPrefix(line, resultMarker); ok {
			var r wrkResult
			if err := json.Unmarshal([]byte(js), &r); err != nil {
				return r, fmt.Errorf("wrk's result line %q: %w", js, err)
			}
			return r, nil
		}
	}
	return wrkResult{}, fmt.Errorf("no result line in wrk's output:\n%s", out)
}

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
	proxy    *server          // the baseline's nginx
	tier     *localcache.Tier // the cache tier
	samples  []hitSample
	sent     int64 // requests wrk counted, warm-up included
}

func (h *hitPath) hopCPU() (time.Duration, error) {
	if h.tier != nil {
		return tierCPU(h.tier)
	}
	return h.proxy.cpuTime()
}

// measureHit runs wrk once against a path and takes the CPU the processes
// spent meanwhile.
func measureHit(ctx context.Context, c wrkClient, h *hitPath, pool *server, d time.Duration) (hitSample, error) {
	hopBefore, err := h.hopCPU()
	if err != nil {
		return hitSample{}, err
	}
	poolBefore, err := pool.cpuTime()
	if err != nil {
		return hitSample{}, err
	}
	selfBefore := selfCPU()
	r, err := c.run(ctx, h.url, h.script, d)
	h.sent += r.Requests
	if err != nil {
		return hitSample{}, fmt.Errorf("%s: %w", h.name, err)
	}
	selfAfter := selfCPU()
	hopAfter, err := h.hopCPU()
	if err != nil {
		return hitSample{}, err
	}
	poolAfter, err := pool.cpuTime()
	if err != nil {
		return hitSample{}, err
	}
	if err := pool.exited(); err != nil {
		return hitSample{}, err
	}
	n := time.Duration(r.Requests)
	return hitSample{
		requestsPerSecond: float64(r.Requests) / (float64(r.DurationUS) / 1e6),
		p50:               time.Duration(r.Latency.P50) * time.Microsecond,
		p99:               time.Duration(r.Latency.P99) * time.Microsecond,
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
func benchHitPath(ctx context.Context, o options, dir string, pool *server, poolPort int, files []file) (*hitResult, error) {
	ports, err := freePorts(1)
	if err != nil {
		return nil, err
	}
	conf, err := proxyConfig(proxyLayout{TmpDir: filepath.Join(dir, "proxy"), Port: ports[0], Upstream: poolPort})
	if err != nil {
		return nil, err
	}
	proxy, err := startNginx(o.nginx, "proxy nginx", filepath.Join(dir, "proxy"), conf, o.hopCPUs)
	if err != nil {
		return nil, err
	}
	defer proxy.stop()
	proxyURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	if err := waitReady(ctx, proxy, proxyURL+files[0].path); err != nil {
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
			h, err := getHeader(ctx, client, tier.URL+f.path, map[string]string{model.PoolHeader: poolName}, content(f))
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
		if err := os.WriteFile(script, []byte(wrkScript(f.path)), 0o644); err != nil {
			return nil, err
		}
		res.paths = append(res.paths,
			&hitPath{name: "nginx proxy -> nginx (baseline)", file: f, baseline: true, url: proxyURL, script: script, proxy: proxy},
			&hitPath{name: "cache tier, hit", file: f, url: tier.URL, script: script, tier: tier})
	}
	for _, h := range res.paths {
		r, err := o.wrk.run(ctx, h.url, h.script, o.hitWarmup)
		h.sent += r.Requests
		if err != nil {
			return res, fmt.Errorf("warming up %s: %w", h.name, err)
		}
	}
	for round := range o.hitRounds {
		for k := range res.paths {
			h := res.paths[(k+round)%len(res.paths)] // each round starts with another path
			if err := waitQuiet(ctx, o.quietBelow, o.quietWait); err != nil {
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
