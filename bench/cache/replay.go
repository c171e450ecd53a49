package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"webfarm.dev/operator/internal/vocabulary"
)

// replayer sends a request sequence over a fixed number of keep-alive
// connections: paced (request k leaves at start + k/rate, or as soon as a
// connection is free when the server falls behind), or as fast as the
// connections go.
type replayer struct {
	url         string // http://host:port
	pool        string // the pool header's value; "" sends none (straight to the pool)
	concurrency int
	files       []file
}

// replayResult is what one replay saw.
type replayResult struct {
	requests  int
	bytes     int64
	wall      time.Duration // from the first request's start to the last answer
	latencies []time.Duration
	// cacheStatus counts the X-Cache-Status header of the answers ("" when
	// there is none).
	cacheStatus map[string]int
}

func (r replayResult) requestsPerSecond() float64 {
	if r.wall <= 0 {
		return 0
	}
	return float64(r.requests) / r.wall.Seconds()
}

// replay sends seq[from], seq[from+1], ... (wrapping around): count requests
// paced at rate per second when rate > 0, else as many as fit in duration,
// unpaced. An answer other than 200 with the file's length fails the replay.
func (rp replayer) replay(ctx context.Context, seq []int, from, count int, rate float64, duration time.Duration) (replayResult, error) {
	transport := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: rp.concurrency,
		MaxConnsPerHost:     rp.concurrency,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, Timeout: 10 * time.Second}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var interval time.Duration
	if rate > 0 {
		interval = time.Duration(float64(time.Second) / rate)
	}
	type worker struct {
		latencies []time.Duration
		status    map[string]int
		bytes     int64
		last      time.Time
		err       error
	}
	workers := make([]worker, rp.concurrency)
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := range workers {
		wg.Add(1)
		go func(me *worker) {
			defer wg.Done()
			me.status = map[string]int{}
			for ctx.Err() == nil {
				k := int(next.Add(1) - 1)
				if rate > 0 {
					if k >= count {
						return
					}
					if wait := time.Until(start.Add(time.Duration(k) * interval)); wait > 0 {
						select {
						case <-time.After(wait):
						case <-ctx.Done():
							return
						}
					}
				} else if time.Since(start) >= duration {
					return
				}
				f := rp.files[seq[(from+k)%len(seq)]]
				sent := time.Now()
				status, n, err := rp.fetch(ctx, client, f)
				if err != nil {
					if ctx.Err() == nil {
						me.err = err
						cancel()
					}
					return
				}
				me.last = time.Now()
				me.latencies = append(me.latencies, me.last.Sub(sent))
				me.status[status]++
				me.bytes += n
			}
		}(&workers[w])
	}
	wg.Wait()
	res := replayResult{cacheStatus: map[string]int{}}
	var last time.Time
	for _, w := range workers {
		if w.err != nil {
			return res, w.err
		}
		res.latencies = append(res.latencies, w.latencies...)
		res.bytes += w.bytes
		for k, v := range w.status {
			res.cacheStatus[k] += v
		}
		if w.last.After(last) {
			last = w.last
		}
	}
	if err := ctx.Err(); err != nil && len(res.latencies) == 0 {
		return res, err
	}
	res.requests = len(res.latencies)
	res.wall = last.Sub(start)
	slices.Sort(res.latencies)
	return res, nil
}

// fetch gets one file and reads its body; it returns the answer's cache
// status and the bytes read.
func (rp replayer) fetch(ctx context.Context, client *http.Client, f file) (string, int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rp.url+f.path, nil)
	if err != nil {
		return "", 0, err
	}
	req.Host = siteHost
	if rp.pool != "" {
		req.Header.Set(vocabulary.PoolHeader, rp.pool)
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		return "", n, err
	}
	if resp.StatusCode != http.StatusOK || n != int64(f.size) {
		return "", n, fmt.Errorf("GET %s: %s, %d bytes, want 200 and %d bytes", f.path, resp.Status, n, f.size)
	}
	return resp.Header.Get("X-Cache-Status"), n, nil
}

// percentile is the nearest-rank percentile p (0 < p <= 100) of sorted
// values: the smallest value that at least p % of them do not exceed; of
// none, 0.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}
