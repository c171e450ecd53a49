//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/envoy"
	"webfarm.dev/operator/internal/vocabulary"
	"webfarm.dev/operator/test/e2e/framework"
)

// A pool of the test application (test/testapp), whose requests can be made
// slow: 2 workers x 3 concurrent requests, and a queue of 10.
var queueFarm = testAppPool("slow", 2, "maxConcurrentRequests: 3", "queue: {length: 10}") + oneRouteFarm("queue", "queue.example", "slow")

const (
	queueWorkers    = 2
	queuePerWorker  = 3
	queueLength     = 10
	queueBurst      = 30
	queueSlowDelay  = 2 * time.Second
	queueRejectedBy = time.Second // a full queue answers at once: well under one slow request
)

type burstResult struct {
	path    string // unique to the request, to find its access log line
	status  int
	took    time.Duration
	body    string
	retryIn string
	err     error
}

// A burst of slow requests beyond workers x concurrency + queue length gets
// 503 at once for the excess, while the rest are served in turn (IIS
// AppPoolQueueLength semantics); Envoy counts each rejection.
func TestABurstBeyondAPoolsQueueGets503AtOnce(t *testing.T) {
	ns := cluster.Namespace(t)
	cluster.Apply(t, ns, queueFarm)
	cluster.WaitReady(t, ns, 3*time.Minute, "webfarm/queue", "apppool/slow")
	url := cluster.ServiceURL(t, ns, "queue-frontend")
	framework.ExpectBody(t, time.Minute, url+"/", "app on slow-", "Host: queue.example")

	// Open each worker's connections first: Envoy counts requests waiting for
	// a new connection against the queue, so a cold pool would refuse a
	// burst a little early.
	burst(url, queueWorkers*queuePerWorker, 300*time.Millisecond)

	results := burst(url, queueBurst, queueSlowDelay)
	admitted := queueWorkers*queuePerWorker + queueLength
	served, rejected, _, slowestRejection := tally(t, results, envoy.QueueFullBody)
	t.Logf("burst of %d slow requests: %d served, %d rejected (slowest rejection %s)", queueBurst, served, rejected, slowestRejection.Round(time.Millisecond))
	if served != admitted || rejected != queueBurst-admitted {
		t.Errorf("served %d and rejected %d, want %d (2 workers x 3 + queue 10) and %d", served, rejected, admitted, queueBurst-admitted)
	}
	if slowestRejection > queueRejectedBy {
		t.Errorf("a rejection took %s, want under %s", slowestRejection, queueRejectedBy)
	}

	t.Run("no worker ever ran more than its concurrency", func(t *testing.T) {
		for _, p := range cluster.Pods(t, ns, "app.kubernetes.io/instance=slow,app.kubernetes.io/component=pool") {
			if n := appStats(t, ns, p.Name).MaxInFlight; n > queuePerWorker {
				t.Errorf("worker %s ran %d requests at once, want at most %d", p.Name, n, queuePerWorker)
			}
		}
	})

	t.Run("the operator counts the rejections in the pool's status and its metrics", func(t *testing.T) {
		framework.Eventually(t, 30*time.Second, func() error {
			got := cluster.Run(t, "get", "apppool", "slow", "-n", ns, "-o", "jsonpath={.status.queue.rejected} {.status.queue.concurrency} {.status.queue.length}")
			if want := fmt.Sprintf("%d %d %d", queueBurst-admitted, queueWorkers*queuePerWorker, queueLength); strings.TrimSpace(got) != want {
				return fmt.Errorf("status.queue rejected, concurrency, length: %q, want %q", got, want)
			}
			return nil
		})
		expectPoolMetric(t, "webfarm_pool_queue_rejected_total", ns, "slow", "== "+strconv.Itoa(queueBurst-admitted))
	})

	t.Run("the access log has a served and a rejected request's outcome field by field", func(t *testing.T) {
		want := map[int]map[string]any{
			http.StatusOK: {"site": "main", "pool": "slow", "queue": envoy.QueueServed, "method": "GET", "host": "queue.example", "responseFlags": "-"},
			// Refused at once: it never reached a worker (UO: upstream overflow).
			http.StatusServiceUnavailable: {"site": "main", "pool": "slow", "queue": envoy.QueueRejected, "method": "GET", "host": "queue.example",
				"responseFlags": "UO", "worker": nil, "workerPod": nil},
		}
		for status, fields := range want {
			i := slices.IndexFunc(results, func(r burstResult) bool { return r.status == status })
			if i < 0 {
				t.Fatalf("no request of the burst got %d", status)
			}
			entry := cluster.AccessLogEntry(t, ns, "queue", results[i].path)
			fields["status"], fields["path"] = float64(status), results[i].path
			framework.CheckAccessLogFields(t, entry, fields)
			if pod, _ := entry["workerPod"].(string); status == http.StatusOK && !strings.HasPrefix(pod, "slow-pool-") {
				t.Errorf("a served request's workerPod is %q, want a worker of pool slow", pod)
			}
		}
	})

	t.Run("Envoy counts every rejection as a queue overflow", func(t *testing.T) {
		frontends := cluster.Pods(t, ns, "app.kubernetes.io/instance=queue,app.kubernetes.io/component=frontend")
		if len(frontends) != 1 {
			t.Fatalf("frontend pods %v, want 1", frontends)
		}
		stats := fmt.Sprintf("http://%s:%d%s", frontends[0].IP, vocabulary.FrontendStatusPort, vocabulary.FrontendMetricsPath)
		framework.Eventually(t, 10*time.Second, func() error {
			got, err := envoyCounter(stats, "envoy_cluster_upstream_rq_pending_overflow", fmt.Sprintf("envoy_cluster_name=%q", vocabulary.PoolCluster("slow")))
			if err != nil {
				return err
			}
			if got != queueBurst-admitted {
				return fmt.Errorf("pending overflow counter %d, want %d", got, queueBurst-admitted)
			}
			return nil
		})
	})

	t.Run("behind a layer 4 balancer the excess gets its connection cut before a byte of an answer", func(t *testing.T) {
		// IIS LoadBalancerCapabilities 1: HTTP.sys resets the connection of
		// a request its full queue refuses.
		cluster.Run(t, "patch", "webfarm", "queue", "-n", ns, "--type", "merge", "-p", `{"spec":{"unavailableResponse":"L4"}}`)
		var served, cut int
		framework.EventuallyEvery(t, time.Minute, time.Second, func() error {
			served, cut = 0, 0
			var answered []int
			for _, r := range burst(url, queueBurst, queueSlowDelay) {
				switch {
				case r.err != nil && r.status == 0:
					cut++ // the connection ended before a byte of an answer
				case r.status == http.StatusOK && r.err == nil:
					served++
				default:
					answered = append(answered, r.status)
				}
			}
			if served != admitted || cut != queueBurst-admitted || len(answered) > 0 {
				return fmt.Errorf("served %d, cut %d, answered %v; want %d served and %d cut, none answered otherwise",
					served, cut, answered, admitted, queueBurst-admitted)
			}
			return nil
		})
		t.Logf("in L4 mode, a burst of %d: %d served, %d connections cut", queueBurst, served, cut)
	})
}

// A pool with a queue timeout: one worker taking 2 requests at once, a queue
// long enough for the whole burst, and a timeout of half a slow request.
var queueTimeoutFarm = testAppPool("waits", 1, "maxConcurrentRequests: 2", "queue: {length: 20, timeout: 1s}") + oneRouteFarm("timeout", "queue.example", "waits")

// A request that waited in the queue longer than queue.timeout is refused
// with 503 when a worker takes it (IIS AspQueueTimeout), never reaching the
// application, while the requests that were on time are served; Envoy and
// the operator count each one apart from the application's own errors.
func TestARequestThatWaitsLongerThanTheQueueTimeoutGets503(t *testing.T) {
	const (
		concurrency = 2
		burstSize   = 14
		timeout     = time.Second
		slow        = 2 * time.Second
	)
	ns := cluster.Namespace(t)
	cluster.Apply(t, ns, queueTimeoutFarm)
	cluster.WaitReady(t, ns, 3*time.Minute, "webfarm/timeout", "apppool/waits")
	url := cluster.ServiceURL(t, ns, "timeout-frontend")
	framework.ExpectBody(t, time.Minute, url+"/", "app on waits-", "Host: queue.example")
	burst(url, concurrency, 300*time.Millisecond) // open the worker's connections
	workers := cluster.Pods(t, ns, "app.kubernetes.io/instance=waits,app.kubernetes.io/component=pool")
	if len(workers) != 1 {
		t.Fatalf("worker pods %v, want 1", workers)
	}
	before := appStats(t, ns, workers[0].Name)

	results := burst(url, burstSize, slow)
	served, timedOut, firstRefusal, lastRefusal := tally(t, results, envoy.QueueTimeoutBody)
	// Refused when the worker is free again: after the timeout, and without
	// running the slow request.
	if timedOut > 0 && (firstRefusal < timeout || lastRefusal > slow+time.Second) {
		t.Errorf("refusals came after %s to %s, want between the timeout (%s) and the first slow requests' end (%s) plus 1s", firstRefusal, lastRefusal, timeout, slow)
	}
	t.Logf("burst of %d slow requests on %d slots: %d served, %d refused after the queue timeout (answered after %s to %s)",
		burstSize, concurrency, served, timedOut, firstRefusal.Round(time.Millisecond), lastRefusal.Round(time.Millisecond))
	if served != concurrency || timedOut != burstSize-concurrency {
		t.Errorf("served %d and refused %d, want %d (the worker's concurrency) and %d", served, timedOut, concurrency, burstSize-concurrency)
	}
	after := appStats(t, ns, workers[0].Name)
	if got := after.Served - before.Served; got != concurrency {
		t.Errorf("the application served %d requests of the burst, want %d: refused requests must not reach it", got, concurrency)
	}

	t.Run("the access log says which requests the queue timed out and which it served", func(t *testing.T) {
		for _, status := range []int{http.StatusOK, http.StatusServiceUnavailable} {
			i := slices.IndexFunc(results, func(r burstResult) bool { return r.status == status })
			if i < 0 {
				t.Fatalf("no request of the burst got %d", status)
			}
			want := map[string]any{"status": float64(status), "path": results[i].path, "pool": "waits", "queue": envoy.QueueServed}
			if status == http.StatusServiceUnavailable {
				// The worker's nginx refused it: a worker took it, its app did not.
				want["queue"] = envoy.QueueTimedOut
			}
			framework.CheckAccessLogFields(t, cluster.AccessLogEntry(t, ns, "timeout", results[i].path), want)
		}
	})

	t.Run("Envoy counts the refusals by the workers' queue-timeout status", func(t *testing.T) {
		frontends := cluster.Pods(t, ns, "app.kubernetes.io/instance=timeout,app.kubernetes.io/component=frontend")
		if len(frontends) != 1 {
			t.Fatalf("frontend pods %v, want 1", frontends)
		}
		stats := fmt.Sprintf("http://%s:%d%s", frontends[0].IP, vocabulary.FrontendStatusPort, vocabulary.FrontendMetricsPath)
		framework.Eventually(t, 10*time.Second, func() error {
			got, err := envoyCounter(stats, "envoy_cluster_upstream_rq",
				fmt.Sprintf("envoy_response_code=%q", strconv.Itoa(model.QueueTimeoutStatus)), fmt.Sprintf("envoy_cluster_name=%q", vocabulary.PoolCluster("waits")))
			if err != nil {
				return err
			}
			if got != burstSize-concurrency {
				return fmt.Errorf("queue-timeout responses %d, want %d", got, burstSize-concurrency)
			}
			return nil
		})
	})

	t.Run("the operator counts them in the pool's status and metrics, not as worker failures", func(t *testing.T) {
		framework.Eventually(t, 30*time.Second, func() error {
			got := cluster.Run(t, "get", "apppool", "waits", "-n", ns, "-o", "jsonpath={.status.queue.timedOut}/{.status.queue.rejected}/{.status.phase}")
			// Counts are always written: no queue-full refusal reads 0.
			if want := fmt.Sprintf("%d/0/Running", burstSize-concurrency); strings.TrimSpace(got) != want {
				return fmt.Errorf("status.queue timedOut/rejected/phase: %q, want %q", got, want)
			}
			return nil
		})
		expectPoolMetric(t, "webfarm_pool_queue_timeouts_total", ns, "waits", "== "+strconv.Itoa(burstSize-concurrency))
		s, err := cluster.Query(fmt.Sprintf(`webfarm_pool_worker_failures_total{namespace=%q,pool="waits"} > 0`, ns))
		if err != nil {
			t.Fatal(err)
		}
		if len(s) != 0 {
			t.Errorf("the refusals counted as worker failures: %v", s)
		}
	})
}

// testAppStats are the test application's own counts of one worker.
type testAppStats struct {
	InFlight, MaxInFlight, Served int
}

// appStats reads a pool worker's test application counts.
func appStats(t *testing.T, ns, pod string) testAppStats {
	t.Helper()
	out := cluster.Run(t, "exec", "-n", ns, pod, "-c", "app", "--", "curl", "-sS", "http://127.0.0.1:9000/stats")
	var s testAppStats
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("stats of %s: %q: %v", pod, out, err)
	}
	return s
}

// tally counts a burst's answers: the requests served and those refused
// with 503, refusalBody and Retry-After 1, with the quickest and slowest
// refusal; anything else fails the test.
func tally(t *testing.T, results []burstResult, refusalBody string) (served, refused int, quickest, slowest time.Duration) {
	t.Helper()
	quickest = time.Hour
	for _, r := range results {
		switch {
		case r.err != nil:
			t.Errorf("request failed: %v", r.err)
		case r.status == http.StatusOK:
			served++
		case r.status == http.StatusServiceUnavailable:
			refused++
			quickest, slowest = min(quickest, r.took), max(slowest, r.took)
			if r.body != refusalBody || r.retryIn != "1" {
				t.Errorf("503 with body %q and Retry-After %q, want %q and 1", r.body, r.retryIn, refusalBody)
			}
		default:
			t.Errorf("unexpected status %d: %q", r.status, r.body)
		}
	}
	return served, refused, quickest, slowest
}

// burst sends n GETs at once, each on its own connection, asking the test
// application to take delay; it returns when all have answered.
func burst(url string, n int, delay time.Duration) []burstResult {
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	results := make([]burstResult, n)
	nonce := time.Now().UnixNano()
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path := fmt.Sprintf("/?delay=%s&burst=%d-%d", delay, nonce, i)
			results[i].path = path
			req, err := http.NewRequest(http.MethodGet, url+path, nil)
			if err != nil {
				results[i].err = err
				return
			}
			req.Host = "queue.example"
			start := time.Now()
			resp, err := client.Do(req)
			if err != nil {
				results[i].err = err
				return
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			results[i] = burstResult{path: path, status: resp.StatusCode, took: time.Since(start), body: string(body), retryIn: resp.Header.Get("Retry-After"), err: err}
		}()
	}
	wg.Wait()
	return results
}

// envoyCounter reads a counter from an Envoy's Prometheus page: the series
// of that name carrying every label given (name="value" each).
func envoyCounter(statsURL, name string, labels ...string) (int, error) {
	r, err := framework.HTTPGet(statsURL)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(r.Body, "\n") {
		series, value, ok := strings.Cut(line, " ")
		if !ok || !strings.HasPrefix(series, name+"{") {
			continue
		}
		matches := true
		for _, l := range labels {
			matches = matches && strings.Contains(series, l)
		}
		if matches {
			return strconv.Atoi(strings.TrimSpace(value))
		}
	}
	return 0, fmt.Errorf("no %s%v at %s", name, labels, statsURL)
}
