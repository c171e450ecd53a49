// Command cache is the cache tier's benchmark: on this host, over loopback,
// it replays one Zipf-popular request sequence for an image gallery (large
// images, small thumbnails) through the cache tier as the operator renders it
// (the real nginx and the real agent) with IIS's default settings and with the
// tuned ones, and straight to the pool worker without a cache; then it races
// the cache's hit path against an nginx reverse proxy in front of the pool
// worker. See bench/README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"webfarm.dev/operator/bench/internal/benchkit"
	"webfarm.dev/operator/internal/vocabulary"
)

// targetHitRatio: the cache's hit path serves at least the baseline proxy's
// requests/s.
const targetHitRatio = 1.0

type options struct {
	images               int
	imageSize, thumbSize int
	zipf                 float64
	seed                 uint64
	rate                 float64
	replay               time.Duration
	concurrency          int
	burst                time.Duration
	memory               int64
	cases                []caseSpec

	wrk         benchkit.Wrk
	hitDuration time.Duration
	hitWarmup   time.Duration
	hitRounds   int
	hitPath     bool

	quietBelow float64
	quietWait  time.Duration
	cpus       string // the pool worker and wrk
	hopCPUs    string // the baseline proxy and the cache tier's nginx
	hopCPU     int    // the same, as a number; -1: any

	out   string
	keep  bool
	nginx string
	args  []string // the command line, for the report
}

// caseSpec is one way the replay reaches the pool: through a cache tier with
// these settings, or (cache nil) straight.
type caseSpec struct {
	name  string // for -cases
	title string
	cache *cacheSettings
}

// allCases are the replay's cases, in the order they run and are shown.
func allCases(memory int64) []caseSpec {
	c := func(threshold int32, ttl time.Duration) *cacheSettings {
		return &cacheSettings{threshold: threshold, period: 10 * time.Second, ttl: ttl, memory: memory}
	}
	return []caseSpec{
		{"defaults", "(a) IIS defaults: threshold 2 in 10 s, TTL 30 s", c(2, 30*time.Second)},
		{"tuned-60", "(b) tuned: threshold 1, TTL 60 s", c(1, 60*time.Second)},
		{"tuned-180", "(b') tuned: threshold 1, TTL 180 s", c(1, 180*time.Second)},
		{"none", "(c) no cache: straight to the pool worker", nil},
	}
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
	niceSelf()
	wd := benchkit.WorkDir{Pattern: "webfarm-bench-cache-", Keep: o.keep, Holds: "configs, content and logs"}
	return wd.Run(func(ctx context.Context, dir string) (string, error) {
		rep, err := bench(ctx, o, dir)
		if rep == nil {
			return "", err
		}
		md := rep.markdown()
		if o.out != "" {
			if werr := os.WriteFile(o.out, []byte(md), 0o644); werr != nil && err == nil {
				err = werr
			}
		}
		return md, err
	})
}

func parseFlags(args []string) (options, error) {
	o := options{args: args}
	fs := flag.NewFlagSet("cache", flag.ContinueOnError)
	fs.IntVar(&o.images, "images", 2000, "images in the gallery, and as many thumbnails")
	imageKiB := fs.Int("image-kib", 100, "size of an image, KiB")
	thumbKiB := fs.Int("thumb-kib", 10, "size of a thumbnail, KiB")
	fs.Float64Var(&o.zipf, "zipf", 1.1, "Zipf exponent of the files' popularity, over images and thumbnails together (above 1)")
	fs.Uint64Var(&o.seed, "seed", 2, "seed of the request sequence")
	fs.Float64Var(&o.rate, "rate", 500, "requests per second of the replay (paced: the cache's time windows see the same sequence in every case)")
	fs.DurationVar(&o.replay, "replay", 50*time.Second, "length of the replay of each case; the sequence has rate x replay requests")
	fs.IntVar(&o.concurrency, "concurrency", 16, "keep-alive connections of the replay client")
	fs.DurationVar(&o.burst, "burst", 2*time.Second, "after each replay, continue the sequence unpaced this long on the same connections, for the case's top requests/s (0: skip)")
	memMiB := fs.Int64("memory-mib", 16, "the cache's memorySize, MiB (smaller than the files asked for more than once)")
	names := fs.String("cases", "defaults,tuned-60,tuned-180,none", "replay cases to run: defaults, tuned-60, tuned-180, none")
	fs.BoolVar(&o.hitPath, "hit-path", true, "compare the cache's hit path with an nginx proxy (wrk)")
	fs.IntVar(&o.wrk.Connections, "connections", 32, "hit path: wrk keep-alive connections")
	fs.IntVar(&o.wrk.Threads, "threads", 1, "hit path: wrk threads")
	fs.DurationVar(&o.hitDuration, "duration", 2*time.Second, "hit path: length of one measurement (whole seconds)")
	fs.DurationVar(&o.hitWarmup, "warmup", time.Second, "hit path: an unmeasured run of each path first")
	fs.IntVar(&o.hitRounds, "rounds", 5, "hit path: measurements of each path, interleaved; the report gives medians")
	fs.Float64Var(&o.quietBelow, "quiet-below", 0.3, "hit path: before each measurement, wait until other work keeps fewer than this many processors busy...")
	fs.DurationVar(&o.quietWait, "quiet-wait", time.Second, "...but at most this long (0: do not wait)")
	pin := fs.Bool("pin", true, "run the cache tier's nginx and the baseline proxy on the last processor, the pool worker and wrk on the first")
	fs.StringVar(&o.out, "out", "", "also write the report to this file")
	fs.BoolVar(&o.keep, "keep", false, "keep the work directory (content, configs, nginx logs)")
	fs.StringVar(&o.wrk.Bin, "wrk", "", "the wrk binary (default: wrk on PATH, else bin/wrk)")
	fs.StringVar(&o.nginx, "nginx", "", "the nginx binary (default: nginx on PATH, else bin/nginx)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage of cache (see bench/README.md):\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.imageSize, o.thumbSize, o.memory = *imageKiB*1024, *thumbKiB*1024, *memMiB<<20
	for _, n := range strings.Split(*names, ",") {
		cases := allCases(o.memory)
		i := slices.IndexFunc(cases, func(c caseSpec) bool { return c.name == strings.TrimSpace(n) })
		if i < 0 {
			return o, fmt.Errorf("unknown case %q", n)
		}
		o.cases = append(o.cases, cases[i])
	}
	switch {
	case o.images < 1 || o.imageSize < 1 || o.thumbSize < 1:
		return o, errors.New("-images, -image-kib and -thumb-kib must be positive")
	case o.zipf <= 1:
		return o, errors.New("-zipf must be above 1")
	case o.rate <= 0 || o.replay < time.Second || o.concurrency < 1 || o.memory < 1<<20:
		return o, errors.New("-rate and -concurrency must be positive, -replay at least 1s, -memory-mib at least 1")
	case o.hitRounds < 1 || o.wrk.Connections < 1 || o.wrk.Threads < 1 || o.hitDuration < time.Second:
		return o, errors.New("-rounds, -connections and -threads must be positive, -duration at least 1s")
	}
	o.wrk.Headers = []string{"Host: " + siteHost, vocabulary.PoolHeader + ": " + poolName}
	o.cpus, o.hopCPUs, o.hopCPU = benchkit.Placement(*pin)
	o.wrk.CPUs = o.cpus
	bin, err := benchkit.BinDir()
	if err != nil {
		return o, err
	}
	if o.hitPath {
		if o.wrk.Bin, err = benchkit.Binary(o.wrk.Bin, "wrk", bin, "hack/install-tools.sh wrk"); err != nil {
			return o, err
		}
	}
	if o.nginx, err = benchkit.Binary(o.nginx, "nginx", bin, "make tools"); err != nil {
		return o, err
	}
	return o, nil
}

// logf prints a progress line on stderr (the report goes to stdout).
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}
