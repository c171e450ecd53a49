//go:build e2e

package e2e

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"webfarm.dev/operator/internal/render/envoy"
	"webfarm.dev/operator/test/e2e/framework"
)

// A pool of the test application (test/testapp), whose requests can be made
// slow: 2 workers x 3 concurrent requests, and a queue of 10.
var queueFarm = testAppPool("slow", 2, "maxConcurrentRequests: 3", "queue: {length: 10}") + `apiVersion: webfarm.dev/v1alpha1
kind: WebFarm
metadata: {name: queue}
spec:
  sites:
  - name: main
    hosts: [queue.example]
    routes: [{pathPrefix: /, appPool: slow}]
  frontend:
    replicas: 1
    cpu: 100m
`

const (
	queueWorkers    = 2
	queuePerWorker  = 3
	queueLength     = 10
	queueBurst      = 30
	queueSlowDelay  = 2 * time.Second
	queueRejectedBy = time.Second // a full queue answers at once: well under one slow request
)

type burstResult struct {
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
	var served, rejected int
	var slowestRejection time.Duration
	for _, r := range results {
		switch {
		case r.err != nil:
			t.Errorf("request failed: %v", r.err)
		case r.status == http.StatusOK:
			served++
		case r.status == http.StatusServiceUnavailable:
			rejected++
			slowestRejection = max(slowestRejection, r.took)
			if r.body != envoy.QueueFullBody || r.retryIn != "1" {
				t.Errorf("503 with body %q and Retry-After %q, want %q and 1", r.body, r.retryIn, envoy.QueueFullBody)
			}
		default:
			t.Errorf("unexpected status %d: %q", r.status, r.body)
		}
	}
	t.Logf("burst of %d slow requests: %d served, %d rejected (slowest rejection %s)", queueBurst, served, rejected, slowestRejection.Round(time.Millisecond))
	if served != admitted || rejected != queueBurst-admitted {
		t.Errorf("served %d and rejected %d, want %d (2 workers x 3 + queue 10) and %d", served, rejected, admitted, queueBurst-admitted)
	}
	if slowestRejection > queueRejectedBy {
		t.Errorf("a rejection took %s, want under %s", slowestRejection, queueRejectedBy)
	}

	t.Run("no worker ever ran more than its concurrency", func(t *testing.T) {
		for _, p := range cluster.Pods(t, ns, "app.kubernetes.io/instance=slow,app.kubernetes.io/component=pool") {
			stats := cluster.Run(t, "exec", "-n", ns, p.Name, "-c", "app", "--", "curl", "-sS", "http://127.0.0.1:9000/stats")
			m := regexp.MustCompile(`"maxInFlight":(\d+)`).FindStringSubmatch(stats)
			if m == nil {
				t.Fatalf("stats of %s: %s", p.Name, stats)
			}
			if n, _ := strconv.Atoi(m[1]); n > queuePerWorker {
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
		cluster.EventuallyQuery(t, time.Minute, fmt.Sprintf(`webfarm_pool_queue_rejected_total{namespace=%q,pool="slow"}`, ns), func(s []framework.Sample) error {
			if len(s) != 1 || int(s[0].Value) != queueBurst-admitted {
				return fmt.Errorf("webfarm_pool_queue_rejected_total %v, want %d", s, queueBurst-admitted)
			}
			return nil
		})
	})

	t.Run("Envoy counts every rejection as a queue overflow", func(t *testing.T) {
		frontends := cluster.Pods(t, ns, "app.kubernetes.io/instance=queue,app.kubernetes.io/component=frontend")
		if len(frontends) != 1 {
			t.Fatalf("frontend pods %v, want 1", frontends)
		}
		stats := fmt.Sprintf("http://%s:%d%s", frontends[0].IP, envoy.StatusPort, envoy.MetricsPath)
		framework.Eventually(t, 10*time.Second, func() error {
			got, err := envoyCounter(stats, "envoy_cluster_upstream_rq_pending_overflow", fmt.Sprintf("envoy_cluster_name=%q", envoy.PoolCluster("slow")))
			if err != nil {
				return err
			}
			if got != queueBurst-admitted {
				return fmt.Errorf("pending overflow counter %d, want %d", got, queueBurst-admitted)
			}
			return nil
		})
	})
}

// burst sends n GETs at once, each on its own connection, asking the test
// application to take delay; it returns when all have answered.
func burst(url string, n int, delay time.Duration) []burstResult {
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	results := make([]burstResult, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/?delay=%s", url, delay), nil)
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
			results[i] = burstResult{status: resp.StatusCode, took: time.Since(start), body: string(body), retryIn: resp.Header.Get("Retry-After"), err: err}
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
