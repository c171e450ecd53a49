package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"webfarm.dev/operator/bench/internal/benchkit"
)

// report is everything the benchmark measured.
type report struct {
	o           options
	start       time.Time
	wall        time.Duration
	machine     string
	site        site
	requests    int
	working     workingSet
	staticShare float64
	cases       []*caseResult
	hit         *hitResult
}

const mib = 1 << 20

// slowAnswer is the latency the report counts answers above: nginx's cache
// lock makes the requests that wait for an entry look again every 500 ms.
const slowAnswer = 400 * time.Millisecond

// atLeast counts the sorted values at or above limit.
func atLeast(sorted []time.Duration, limit time.Duration) int {
	i, _ := slices.BinarySearch(sorted, limit)
	return len(sorted) - i
}

// hitPercent is hits as a share of all the tier's lookups, as the
// CachePolicy's status reports it.
func hitPercent(hits, misses, bypasses int64) float64 {
	if total := hits + misses + bypasses; total > 0 {
		return 100 * float64(hits) / float64(total)
	}
	return 0
}

// avoidedPercent is the share of the no-cache case's pool requests that a
// case did not send to the pool.
func avoidedPercent(poolRequests, withoutCache int64) float64 {
	if withoutCache <= 0 {
		return 0
	}
	return 100 * float64(withoutCache-poolRequests) / float64(withoutCache)
}

// commandLine is how the run was started.
func (r *report) commandLine() string {
	parts := []string{"go", "run", "./bench/cache"}
	for _, a := range r.o.args {
		if a == "" || strings.ContainsAny(a, " \t\"'$\\") {
			a = strconv.Quote(a)
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}

// markdown renders the results, ready for bench/README.md.
func (r *report) markdown() string {
	var b strings.Builder
	o := r.o
	images := len(r.site.files) / 2
	fmt.Fprintf(&b, "Command: `%s`\n\n", r.commandLine())
	fmt.Fprintf(&b, "| | |\n|---|---|\n")
	fmt.Fprintf(&b, "| Date | %s |\n", r.start.UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "| Machine | %s |\n", r.machine)
	fmt.Fprintf(&b, "| Site | %d images of %d KiB and %d thumbnails of %d KiB (%.0f MiB), served by the pool worker: nginx as `nginx.PoolConfig` renders it for a default AppPool (1 worker process) |\n",
		images, o.imageSize/1024, images, o.thumbSize/1024, float64(r.site.bytes())/mib)
	fmt.Fprintf(&b, "| Requests | %d, Zipf s=%.2f over the %d files together (seed %d), the same sequence in every case |\n",
		r.requests, o.zipf, len(r.site.files), o.seed)
	w := r.working
	fmt.Fprintf(&b, "| Files asked for | %d (%.0f MiB); %d at least twice (%.0f MiB); %d twice within 10 s at least once (%.0f MiB) |\n",
		w.distinct, float64(w.distinctBytes)/mib, w.repeated, float64(w.repeatedBytes)/mib, w.frequent, float64(w.frequentBytes)/mib)
	fmt.Fprintf(&b, "| Cache | a CachePolicy with the API's defaults (250m CPU: 1 nginx worker; maxObjectSize 256 KiB) but memorySize %d MiB and the case's threshold and TTL; a fresh tier per case (the real nginx and agent, `localcache`) |\n",
		o.memory/mib)
	fmt.Fprintf(&b, "| Ideal | a cache of %d MiB that held the most requested files per byte from the start would answer %.1f %% of the requests |\n",
		o.memory/mib, 100*r.staticShare)
	fmt.Fprintf(&b, "| Replay | Go client, %d keep-alive connections, paced at %.0f requests/s (%s per case); then %s unpaced on the same connections (\"Top req/s\") |\n",
		o.concurrency, o.rate, o.replay, o.burst)
	if o.hitPath {
		fmt.Fprintf(&b, "| Hit path | wrk, %d keep-alive connections, %d thread(s), %d interleaved rounds of %s (medians shown) |\n",
			o.wrk.Connections, o.wrk.Threads, o.hitRounds, o.hitDuration)
	}
	placement := "the scheduler's"
	if o.hopCPUs != "" {
		placement = fmt.Sprintf("cache tier nginx and baseline proxy on CPU %s; pool worker and wrk on CPU %s; the benchmark's process (replay client and cache agent) anywhere; everything under nice 19", o.hopCPUs, o.cpus)
	}
	fmt.Fprintf(&b, "| Placement | %s |\n", placement)
	if r.wall > 0 {
		fmt.Fprintf(&b, "| Benchmark wall time | %s |\n", r.wall.Round(time.Second))
	}

	if len(r.cases) > 0 {
		b.WriteString("\n**Replay through the cache tier**\n\n")
		b.WriteString(r.casesMarkdown())
	}
	if r.hit != nil && len(r.hit.paths) > 0 {
		b.WriteString("\n**Cache-hit path: one file, already cached, against the nginx proxy**\n\n")
		b.WriteString(r.hitMarkdown())
	}
	return b.String()
}

func (r *report) casesMarkdown() string {
	var b strings.Builder
	var withoutCache int64 = -1
	var noCacheRPS float64
	for _, c := range r.cases {
		if c.spec.cache == nil {
			withoutCache = c.poolRequests
			noCacheRPS = c.burst.requestsPerSecond()
		}
	}
	b.WriteString("| Case | Hit % | Hits / misses / bypasses | Stored / evicted | Objects (peak) | Cache memory, MiB (peak) | Pool requests | Pool requests avoided | Pool CPU | Replay req/s | Replay p99 | Top req/s | Top req/s vs no cache | p99 at top |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, c := range r.cases {
		hit, lookups, stored, objects, memory := "-", "-", "-", "-", "-"
		if c.spec.cache != nil {
			s := c.stats
			hit = fmt.Sprintf("%.1f %%", hitPercent(s.Hits, s.Misses, s.Bypasses))
			lookups = fmt.Sprintf("%d / %d / %d", s.Hits, s.Misses, s.Bypasses)
			stored = fmt.Sprintf("%d / %d", s.Stored, s.Evicted)
			objects = fmt.Sprintf("%d (%d)", s.Objects, c.peakObjects)
			memory = fmt.Sprintf("%.1f (%.1f)", float64(s.MemoryBytes)/mib, float64(c.peakMem)/mib)
		}
		avoided := "n/a"
		if withoutCache > 0 {
			avoided = fmt.Sprintf("%.1f %%", avoidedPercent(c.poolRequests, withoutCache))
		}
		top, topRatio, topP99 := "-", "-", "-"
		if c.burst.requests > 0 {
			top = fmt.Sprintf("%.0f", c.burst.requestsPerSecond())
			topP99 = benchkit.Millis(percentile(c.burst.latencies, 99))
			if noCacheRPS > 0 {
				topRatio = fmt.Sprintf("%.2fx", c.burst.requestsPerSecond()/noCacheRPS)
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %d | %s | %.1f s | %.0f | %s | %s | %s | %s |\n",
			c.spec.title, hit, lookups, stored, objects, memory, c.poolRequests, avoided, c.poolCPU.Seconds(),
			c.replay.requestsPerSecond(), benchkit.Millis(percentile(c.replay.latencies, 99)), top, topRatio, topP99)
	}
	// What the client saw against what the agent counted.
	var notes []string
	for _, c := range r.cases {
		if c.spec.cache == nil {
			continue
		}
		seen := c.replay.cacheStatus
		clientHits := seen["HIT"] + seen["STALE"] + seen["UPDATING"] + seen["REVALIDATED"]
		if int64(clientHits) != c.stats.Hits || c.counted != c.sentRequests {
			notes = append(notes, fmt.Sprintf("%s: the client saw %d hits (X-Cache-Status %v), the agent counted %d hits in %d of %d requests",
				c.spec.name, clientHits, seen, c.stats.Hits, c.counted, c.sentRequests))
		}
		if c.stats.Misses+c.stats.Bypasses != c.poolRequests {
			notes = append(notes, fmt.Sprintf("%s: %d misses and bypasses, but %d requests reached the pool", c.spec.name, c.stats.Misses+c.stats.Bypasses, c.poolRequests))
		}
		if n := atLeast(c.replay.latencies, slowAnswer); n > 0 {
			notes = append(notes, fmt.Sprintf("%s: %d answers of the replay took %s or more (the slowest %s)", c.spec.name, n, slowAnswer, benchkit.Millis(c.replay.latencies[len(c.replay.latencies)-1])))
		}
		if c.peakMem > r.o.memory {
			notes = append(notes, fmt.Sprintf("%s: the cache held up to %.1f MiB, over its memorySize of %d MiB", c.spec.name, float64(c.peakMem)/mib, r.o.memory/mib))
		}
	}
	if len(notes) > 0 {
		b.WriteString("\nChecks that did not hold:\n\n")
		for _, n := range notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	} else {
		b.WriteString("\nChecks: in every cache case the client's X-Cache-Status hits equal the agent's, the agent counted every request, the pool saw exactly the misses and bypasses, and the cache stayed within its memory.\n")
	}
	return b.String()
}

func (r *report) hitMarkdown() string {
	var b strings.Builder
	b.WriteString("| File | Path | Requests/s | p50 | p99 | Req/s vs proxy | p99 vs proxy | CPU/request: hop, pool, agent | Req/s by round |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---|---|\n")
	rps := func(s hitSample) float64 { return s.requestsPerSecond }
	p99 := func(s hitSample) float64 { return float64(s.p99) }
	var verdicts []string
	for _, h := range r.hit.paths {
		if len(h.samples) == 0 {
			continue
		}
		base := h
		for _, other := range r.hit.paths {
			if other.baseline && other.file == h.file {
				base = other
			}
		}
		var rounds []string
		for _, s := range h.samples {
			rounds = append(rounds, fmt.Sprintf("%.0f", s.requestsPerSecond))
		}
		d := func(f func(hitSample) time.Duration) time.Duration {
			return time.Duration(benchkit.MedianOf(h.samples, func(s hitSample) float64 { return float64(f(s)) }))
		}
		agent := "-"
		if h.tier != nil {
			agent = benchkit.Micros(d(func(s hitSample) time.Duration { return s.agentCPU }))
		}
		ratio := benchkit.PairedRatio(h.samples, base.samples, rps)
		fmt.Fprintf(&b, "| %s (%.0f KB) | %s | %.0f | %s | %s | %.2fx | %.2fx | %s, %s, %s | %s |\n",
			h.file.path, float64(h.file.size)/1024, h.name, benchkit.MedianOf(h.samples, rps),
			benchkit.Millis(d(func(s hitSample) time.Duration { return s.p50 })), benchkit.Millis(d(func(s hitSample) time.Duration { return s.p99 })),
			ratio, benchkit.PairedRatio(h.samples, base.samples, p99),
			benchkit.Micros(d(func(s hitSample) time.Duration { return s.hopCPU })), benchkit.Micros(d(func(s hitSample) time.Duration { return s.poolCPU })), agent,
			strings.Join(rounds, ", "))
		if h.tier != nil {
			verdict := "MISS"
			if ratio >= targetHitRatio {
				verdict = "PASS"
			}
			line := fmt.Sprintf("%s: cache hit / nginx proxy **%.2fx** requests/s (median of per-round ratios)", h.file.path, ratio)
			if h.file == r.hit.paths[0].file { // the first file is the target's
				line += fmt.Sprintf(", target >= %.1fx: **%s**", targetHitRatio, verdict)
			} else {
				line += " (for information, no target)"
			}
			verdicts = append(verdicts, line)
		}
	}
	b.WriteString("\n")
	for _, v := range verdicts {
		fmt.Fprintf(&b, "- %s\n", v)
	}
	if hr := r.hit; hr.tierRequests > 0 {
		fmt.Fprintf(&b, "- The cache's agent counted %d of the %d requests that wrk completed through the cache tier (%.1f %%).\n",
			hr.agentCounted, hr.tierRequests, 100*float64(hr.agentCounted)/float64(hr.tierRequests))
	}
	return b.String()
}
