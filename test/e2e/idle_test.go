//go:build e2e

package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"webfarm.dev/operator/test/e2e/framework"
)

// A pool of the test application that goes idle after a minute without
// requests (the shortest idle timeout the API takes).
var idleFarm = testAppPool("sleepy", 1, "idle: {timeout: 1m}") + oneRouteFarm("idle", "idle.example", "sleepy")

// A pool without requests for its idle timeout scales to zero (phase Idle);
// the first requests for it are held at the front while it starts and are
// served, not failed; the cold start is a metric.
func TestAnIdlePoolScalesToZeroAndItsFirstRequestsStartIt(t *testing.T) {
	t.Parallel() // it mostly waits: it runs beside the other waiting tests, after the rest
	ns := cluster.Namespace(t)
	cluster.Apply(t, ns, idleFarm)
	cluster.WaitReady(t, ns, 3*time.Minute, "webfarm/idle", "apppool/sleepy")
	url := cluster.ServiceURL(t, ns, "idle-frontend")
	framework.ExpectBody(t, time.Minute, url+"/", "app on sleepy-", "Host: idle.example")
	lastRequest := time.Now()

	framework.Eventually(t, 3*time.Minute, func() error {
		got := cluster.Run(t, "get", "apppool", "sleepy", "-n", ns, "-o", "jsonpath={.status.phase} {.status.replicas} {.status.idleSince}")
		if f := strings.Fields(got); len(f) != 3 || f[0] != "Idle" || f[1] != "0" {
			return fmt.Errorf("phase, replicas, idleSince: %q, want Idle 0 and a time", got)
		}
		if pods := cluster.Pods(t, ns, "app.kubernetes.io/instance=sleepy,app.kubernetes.io/component=pool"); len(pods) != 0 {
			return fmt.Errorf("idle pool still has pods %v", pods)
		}
		return nil
	})
	idleAfter := time.Since(lastRequest)
	t.Logf("idle with no workers %s after the last request (timeout 1m, frontend readings every 5 s)", idleAfter.Round(time.Second))
	if idleAfter < time.Minute {
		t.Errorf("idle %s after the last request, before its 1m timeout", idleAfter)
	}

	const first = 5
	type answer struct {
		status int
		body   string
		took   time.Duration
		err    error
	}
	answers := make([]answer, first)
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 90 * time.Second}
	for i := range first {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, err := http.NewRequest(http.MethodGet, url+"/", nil)
			if err != nil {
				answers[i].err = err
				return
			}
			req.Host = "idle.example"
			start := time.Now()
			resp, err := client.Do(req)
			if err != nil {
				answers[i] = answer{err: err, took: time.Since(start)}
				return
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			answers[i] = answer{status: resp.StatusCode, body: string(body), took: time.Since(start), err: err}
		}()
	}
	wg.Wait()
	var slowest time.Duration
	for _, a := range answers {
		slowest = max(slowest, a.took)
		if a.err != nil || a.status != http.StatusOK || !strings.Contains(a.body, "app on sleepy-") {
			t.Errorf("a first request got %d %q (%v) after %s, want the page", a.status, a.body, a.err, a.took.Round(time.Millisecond))
		}
	}
	t.Logf("%d first requests to the idle pool all answered within %s (the pool's cold start)", first, slowest.Round(time.Millisecond))

	t.Run("the pool runs again, with its events and cold-start metric", func(t *testing.T) {
		framework.Eventually(t, time.Minute, func() error {
			got := cluster.Run(t, "get", "apppool", "sleepy", "-n", ns, "-o", "jsonpath={.status.phase} {.status.replicas}")
			if strings.TrimSpace(got) != "Running 1" {
				return fmt.Errorf("phase, replicas: %q, want Running 1", got)
			}
			return nil
		})
		events := cluster.Run(t, "get", "events.events.k8s.io", "-n", ns, "-o", "jsonpath={range .items[*]}{.reason}{\"\\n\"}{end}")
		if !strings.Contains(events, "Idled") || !strings.Contains(events, "StartedOnDemand") {
			t.Errorf("events:\n%s\nwant Idled and StartedOnDemand", events)
		}
		expectPoolMetric(t, "webfarm_pool_cold_start_seconds_count", ns, "sleepy", ">= 1")
		// Later requests go to the worker directly again.
		framework.ExpectBody(t, 30*time.Second, url+"/", "app on sleepy-", "Host: idle.example")
	})
}
