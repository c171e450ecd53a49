//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"webfarm.dev/operator/test/e2e/framework"
)

// One farm for the tests of workers and frontends replaced under load: two
// frontend replicas; pool "recycled" with IIS PeriodicRestartRequests at
// 3,000 requests per worker (200 requests/s over two workers brings each
// to it in about 30 s); pool "leaky" with PeriodicRestartPrivateMemory at
// 40 MiB per worker (an idle test application and its nginx hold about
// 15 MiB; one asked to keep 32 MiB more crosses the limit). Each frontend
// gets 300m: one Envoy carries all 200 requests/s while the other is
// replaced (it used up to 170m doing so, never throttled); at 100m both
// were throttled in every CFS period, and on a busy machine requests
// queued past the client's 2 s timeout.
var replacementFarm = testAppPool("recycled", 2, "recycling: {requests: 3000}") +
	testAppPool("leaky", 2, "recycling: {memory: 40Mi}") + `apiVersion: webfarm.dev/v1alpha1
kind: WebFarm
metadata: {name: replacing}
spec:
  sites:
  - name: requests
    hosts: [recycling.example]
    routes: [{pathPrefix: /, appPool: recycled}]
  - name: memory
    hosts: [leaking.example]
    routes: [{pathPrefix: /, appPool: leaky}]
  frontend:
    replicas: 2
    cpu: 300m
`

// Workers recycled and frontend pods replaced under 200 requests/s (a new
// connection each) lose no request; the subtests share one farm.
func TestWorkersAndFrontendsAreReplacedUnderLoadWithoutAFailedRequest(t *testing.T) {
	ns := cluster.Namespace(t)
	cluster.Apply(t, ns, replacementFarm)
	cluster.WaitReady(t, ns, 3*time.Minute, "webfarm/replacing", "apppool/recycled", "apppool/leaky")
	front := cluster.ServiceURL(t, ns, "replacing-frontend")
	framework.ExpectBody(t, time.Minute, front+"/", "app on recycled-", "Host: recycling.example")
	framework.ExpectBody(t, time.Minute, front+"/", "app on leaky-", "Host: leaking.example")
	t.Run("each worker is recycled after its request limit, its replacement Ready first", func(t *testing.T) {
		requestRecycle(t, ns, front)
	})
	t.Run("a worker over its memory limit is recycled, its replacement Ready first, the other kept", func(t *testing.T) {
		memoryRecycle(t, ns, front)
	})
	t.Run("a frontend pod deleted and a rollout of the frontends lose nothing", func(t *testing.T) {
		frontendChurn(t, ns, front, "Host: recycling.example")
	})
}

// requestRecycle: each original worker of pool "recycled" is replaced once
// it served its limit; the pool never has fewer than two Ready workers.
func requestRecycle(t *testing.T, ns, front string) {
	host := "Host: recycling.example"
	selector := "app.kubernetes.io/component=pool,app.kubernetes.io/instance=recycled"
	originals := podNames(t, ns, selector)

	started := time.Now()
	load := startLoad(front+"/", 200, host)
	defer load.stop()
	fewestReady := 2
	framework.EventuallyEvery(t, 4*time.Minute, time.Second, func() error {
		ready, left := 0, 0
		for _, p := range cluster.Pods(t, ns, selector) {
			if p.Ready == "True" && !p.Deleting {
				ready++
			}
			if slices.Contains(originals, p.Name) {
				left++
			}
		}
		fewestReady = min(fewestReady, ready)
		if left > 0 {
			return fmt.Errorf("%d of the original workers %v still there (%d Ready workers)", left, originals, ready)
		}
		return nil
	})
	recycledIn := time.Since(started)
	sent, failures := load.stop()
	t.Logf("both original workers recycled %s after the load started; %d requests sent at 200/s, %d failed; fewest Ready workers seen: %d",
		recycledIn.Round(time.Second), sent, len(failures), fewestReady)
	if len(failures) > 0 {
		t.Errorf("%d of %d requests failed while workers were recycled, first: %s", len(failures), sent, failures[0])
	}
	if fewestReady < 2 {
		t.Errorf("the pool had %d Ready workers during a recycle; the replacement must be Ready first", fewestReady)
	}

	var status struct {
		LastRecycles []struct{ Reason, Worker, Message string } `json:"lastRecycles"`
	}
	if err := json.Unmarshal([]byte(cluster.Run(t, "get", "apppool", "recycled", "-n", ns, "-o", "jsonpath={.status}")), &status); err != nil {
		t.Fatal(err)
	}
	if len(status.LastRecycles) == 0 || status.LastRecycles[0].Reason != "Requests" {
		t.Errorf("status.lastRecycles = %+v, want a Requests recycle", status.LastRecycles)
	} else {
		t.Logf("last recycle: %s: %s", status.LastRecycles[0].Worker, status.LastRecycles[0].Message)
	}
	events := cluster.Run(t, "get", "events", "-n", ns, "--field-selector", "reason=Recycled", "-o", "jsonpath={.items[*].message}")
	for _, name := range originals {
		if !strings.Contains(events, name) {
			t.Errorf("no Recycled event names %s; events: %s", name, events)
		}
	}
	expectPoolMetric(t, "webfarm_pool_recycles_total", ns, "recycled", ">= 2")
}

// podNames are the names of the pods the selector finds.
func podNames(t *testing.T, ns, selector string) []string {
	t.Helper()
	var names []string
	for _, p := range cluster.Pods(t, ns, selector) {
		names = append(names, p.Name)
	}
	return names
}

// load sends GETs at a fixed rate until stopped (at most five minutes),
// each on its own goroutine with 2 s to answer (framework.HTTPGet), and keeps the failures.
type load struct {
	done     chan struct{}
	once     sync.Once
	wg       sync.WaitGroup
	sent     atomic.Int64
	mu       sync.Mutex
	failures []string
	failedAt []time.Time // when each failure's request was sent
	started  time.Time
	stopped  time.Time // when stop was first called
}

func startLoad(url string, perSecond int, headers ...string) *load {
	return startRequests(perSecond, func() (framework.Response, error) { return framework.HTTPGet(url, headers...) })
}

// startRequests sends perSecond requests a second with send, each on its
// own, until stopped (or for 5 minutes at most); a request fails on an
// error or a status other than 200.
func startRequests(perSecond int, send func() (framework.Response, error)) *load {
	l := &load{done: make(chan struct{}), started: time.Now()}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		tick := time.NewTicker(time.Second / time.Duration(perSecond))
		defer tick.Stop()
		bound := time.After(5 * time.Minute)
		for {
			select {
			case <-l.done:
				return
			case <-bound:
				return
			case <-tick.C:
			}
			// A ticker drops the ticks a busy machine delays: send what
			// is due by the clock, so the rate holds on shared cores.
			due := int64(time.Since(l.started) * time.Duration(perSecond) / time.Second)
			for l.sent.Load() < due {
				l.sent.Add(1)
				l.wg.Add(1)
				go l.request(send)
			}
		}
	}()
	return l
}

// request sends one request and keeps its failure, if any.
func (l *load) request(send func() (framework.Response, error)) {
	defer l.wg.Done()
	sentAt := time.Now()
	r, err := send()
	var failure string
	switch {
	case err != nil:
		failure = err.Error()
	case r.Status != http.StatusOK:
		failure = fmt.Sprintf("%d %q", r.Status, r.Body)
	}
	if failure != "" {
		l.mu.Lock()
		l.failures = append(l.failures, failure)
		l.failedAt = append(l.failedAt, sentAt)
		l.mu.Unlock()
	}
}

// rate is the requests sent a second from the start to the stop (the
// requests still in flight at the stop do not lengthen it).
func (l *load) rate() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return float64(l.sent.Load()) / l.stopped.Sub(l.started).Seconds()
}

// count is what was sent and failed so far.
func (l *load) count() (sent, failed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return int(l.sent.Load()), len(l.failures)
}

// failureWindow says when the failed requests were sent, from since: the
// first and the last (a burst points at one moment, a spread at a rate).
func (l *load) failureWindow(since time.Time) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.failedAt) == 0 {
		return "none"
	}
	first, last := slices.MinFunc(l.failedAt, time.Time.Compare), slices.MaxFunc(l.failedAt, time.Time.Compare)
	return fmt.Sprintf("sent from %s to %s after", first.Sub(since).Round(time.Millisecond), last.Sub(since).Round(time.Millisecond))
}

// stop ends the load (once), waits for the requests in flight and returns
// the requests sent and the failures.
func (l *load) stop() (int, []string) {
	l.once.Do(func() {
		close(l.done)
		l.mu.Lock()
		l.stopped = time.Now()
		l.mu.Unlock()
	})
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return int(l.sent.Load()), slices.Clone(l.failures)
}

// loadAcross sends perSecond requests a second with send while event runs
// and for five seconds of them after it, on what the event changed; then it
// logs what the event returned with the load's count and rate, and checks
// that no request failed and that the load held its rate. The event returns
// once its change is served.
func loadAcross(t *testing.T, perSecond int, send func() (framework.Response, error), event func() string) {
	t.Helper()
	load, loadStarted := startRequests(perSecond, send), time.Now()
	defer load.stop()
	what := event()
	sentAtSwitch, _ := load.count()
	framework.Eventually(t, time.Minute, func() error {
		if sent, _ := load.count(); sent < sentAtSwitch+perSecond*5 {
			return fmt.Errorf("%d requests sent since the switch", sent-sentAtSwitch)
		}
		return nil
	})
	sent, failures := load.stop()
	t.Logf("%s; %d requests at %.0f/s, %d failed", what, sent, load.rate(), len(failures))
	if len(failures) > 0 {
		t.Errorf("%d of %d requests failed (%s the load started), first: %s",
			len(failures), sent, load.failureWindow(loadStarted), failures[0])
	}
	if rate := load.rate(); rate < 0.8*float64(perSecond) {
		t.Errorf("%d requests at %.0f/s: the load did not run at %d/s", sent, rate, perSecond)
	}
}

// memoryRecycle: the worker of pool "leaky" whose memory grows past the
// recycling limit is replaced; the worker within its limit keeps running.
func memoryRecycle(t *testing.T, ns, front string) {
	host := "Host: leaking.example"
	selector := "app.kubernetes.io/component=pool,app.kubernetes.io/instance=leaky"
	originals := podNames(t, ns, selector)

	load := startLoad(front+"/", 200, host)
	defer load.stop()
	r := framework.ExpectBody(t, 30*time.Second, front+"/?grow=32", "holds 32 MiB", host)
	leaking := strings.TrimSuffix(strings.Fields(r.Body)[2], ":") // "app on <pod>: holds 32 MiB"
	if !slices.Contains(originals, leaking) {
		t.Fatalf("the grown worker %q is not one of %v", leaking, originals)
	}
	grown := time.Now()
	fewestReady := 2
	framework.EventuallyEvery(t, 3*time.Minute, time.Second, func() error {
		ready, present := 0, false
		for _, p := range cluster.Pods(t, ns, selector) {
			if p.Ready == "True" && !p.Deleting {
				ready++
			}
			present = present || p.Name == leaking
		}
		fewestReady = min(fewestReady, ready)
		if present {
			return fmt.Errorf("%s still there (%d Ready workers)", leaking, ready)
		}
		return nil
	})
	recycledIn := time.Since(grown)
	sent, failures := load.stop()
	t.Logf("%s recycled %s after it grew past 40 MiB; %d requests sent at 200/s, %d failed; fewest Ready workers seen: %d",
		leaking, recycledIn.Round(time.Second), sent, len(failures), fewestReady)
	if len(failures) > 0 {
		t.Errorf("%d of %d requests failed while the worker was recycled, first: %s", len(failures), sent, failures[0])
	}
	if fewestReady < 2 {
		t.Errorf("the pool had %d Ready workers during the recycle; the replacement must be Ready first", fewestReady)
	}
	for _, p := range cluster.Pods(t, ns, selector) {
		if slices.Contains(originals, p.Name) && p.Name == leaking {
			t.Errorf("%s is still there", p.Name)
		}
	}
	var kept bool
	for _, p := range cluster.Pods(t, ns, selector) {
		kept = kept || (slices.Contains(originals, p.Name) && p.Name != leaking)
	}
	if !kept {
		t.Errorf("the worker within its memory limit was recycled too")
	}
	message := cluster.Run(t, "get", "apppool", "leaky", "-n", ns, "-o",
		`jsonpath={.status.lastRecycles[?(@.reason=="Memory")].message}`)
	if !strings.Contains(message, "over the limit of 40Mi") {
		t.Errorf("status.lastRecycles for Memory: %q, want the limit crossed", message)
	}
	t.Logf("status says: %s", message)
}
