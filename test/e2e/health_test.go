//go:build e2e

package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"webfarm.dev/operator/test/e2e/framework"
)

// Pinging as the hung-worker test sets it: a ping every 2 s, 3 s to answer.
const (
	hangPingInterval     = 2 * time.Second
	hangPingResponseTime = 3 * time.Second
	// hangKill is the kubelet's part: the hung app's drain pause cut to the
	// ping's 1 s grace period, then its least grace period of 2 s.
	hangKill = 3 * time.Second
	// hangRestartBound is the documented bound, pingInterval +
	// pingResponseTime and the kill (8 s).
	hangRestartBound = hangPingInterval + hangPingResponseTime + hangKill
	// hangReportSlack is for the kubelet to report the restart to the API
	// server and for this test to poll it.
	hangReportSlack = 5 * time.Second
)

// A pool of two test-application workers that pings them every 2 s; rapid-fail
// protection counts failures for ten minutes and stops the pool only after
// ten, so the hung worker's failures are counted without stopping it.
var hangFarm = `apiVersion: webfarm.dev/v1alpha1
kind: AppPool
metadata: {name: pinged}
spec:
  app:
    image: localhost/webfarm-client:dev
    args: [webfarm-testapp, --listen=:9000]
    port: 9000
  replicas: 2
  cpu: 50m
  memory: 64Mi
  healthCheck: {path: /healthz, interval: 2s, timeout: 1s, pingInterval: 2s, pingResponseTime: 3s, startupTimeLimit: 60s}
  rapidFailProtection: {maxFailures: 10, interval: 10m}
---
` + oneRouteFarm("pinging", "pinging.example", "pinged")

// A worker whose application hangs (it answers nothing, its health check
// included) is restarted by the kubelet within pingInterval +
// pingResponseTime and the kill, the restart counts as a worker failure for
// rapid-fail protection, and under steady load the pool keeps serving from
// its other worker.
func TestAHungWorkerIsRestartedWithinItsPingBoundWhileThePoolServes(t *testing.T) {
	ns := cluster.Namespace(t)
	cluster.Apply(t, ns, hangFarm)
	cluster.WaitReady(t, ns, 3*time.Minute, "webfarm/pinging", "apppool/pinged")
	front := cluster.ServiceURL(t, ns, "pinging-frontend")
	host := "Host: pinging.example"
	framework.ExpectBody(t, time.Minute, front+"/", "app on pinged-", host)

	workers := cluster.Pods(t, ns, "app.kubernetes.io/instance=pinged,app.kubernetes.io/component=pool")
	if len(workers) != 2 || workers[0].IP == "" {
		t.Fatalf("pinged workers %v, want 2 with addresses", workers)
	}
	hung := workers[0]
	restarts := func() int {
		out := cluster.Run(t, "get", "pod", hung.Name, "-n", ns, "-o", `jsonpath={.status.containerStatuses[?(@.name=="app")].restartCount}`)
		n, err := strconv.Atoi(strings.TrimSpace(out))
		if err != nil {
			t.Fatalf("restart count of %s: %q", hung.Name, out)
		}
		return n
	}
	before := restarts()
	failuresBefore := recentFailures(t, ns, "pinged")

	// Steady load: a GET every 100 ms, each given 2 s.
	steady := pollSteady(front+"/", host)
	defer steady.stop()
	// Both workers answer through the frontend before one hangs.
	seen := map[string]bool{}
	framework.Eventually(t, time.Minute, func() error {
		r, err := framework.HTTPGet(front+"/", host)
		if err != nil {
			return err
		}
		for _, w := range workers {
			if strings.Contains(r.Body, "app on "+w.Name) {
				seen[w.Name] = true
			}
		}
		if len(seen) < 2 {
			return fmt.Errorf("workers answered %v, want both", seen)
		}
		return nil
	})

	// The hanging request itself gets no answer either.
	hungAt := time.Now()
	_, _ = framework.HTTPGet("http://" + hung.IP + ":9000/?hang=1")
	if _, err := framework.HTTPGet("http://" + hung.IP + ":9000/healthz"); err == nil {
		t.Fatalf("worker %s still answers its health check after ?hang=1", hung.Name)
	}

	var restartedAt time.Time
	framework.EventuallyEvery(t, hangRestartBound+hangReportSlack+time.Minute, 250*time.Millisecond, func() error {
		if n := restarts(); n <= before {
			return fmt.Errorf("worker %s's app restarted %d times, want more than %d", hung.Name, n, before)
		}
		restartedAt = time.Now()
		return nil
	})
	took := restartedAt.Sub(hungAt)
	t.Logf("the hung worker %s was restarted %s after the hang (bound %s, with %s to report it)",
		hung.Name, took.Round(100*time.Millisecond), hangRestartBound, hangReportSlack)
	if took > hangRestartBound+hangReportSlack {
		t.Errorf("the hung worker was restarted %s after the hang, want within %s + %s", took, hangRestartBound, hangReportSlack)
	}

	t.Run("the kubelet restarted it for its unanswered ping", func(t *testing.T) {
		events := cluster.Run(t, "get", "events", "-n", ns, "--field-selector", "involvedObject.name="+hung.Name+",reason=Killing",
			"-o", "jsonpath={.items[*].message}")
		if !strings.Contains(events, "failed liveness probe") {
			t.Errorf("Killing events %q, want one for a failed liveness probe", events)
		}
	})

	t.Run("the restart counts as a worker failure", func(t *testing.T) {
		framework.Eventually(t, time.Minute, func() error {
			if n := recentFailures(t, ns, "pinged"); n <= failuresBefore {
				return fmt.Errorf("recentFailures %d, want more than %d", n, failuresBefore)
			}
			return nil
		})
		phase := strings.TrimSpace(cluster.Run(t, "get", "apppool", "pinged", "-n", ns, "-o", "jsonpath={.status.phase}"))
		if phase == "Stopped" {
			t.Errorf("the pool stopped after one hung worker")
		}
	})

	// The restarted worker comes back; the load then ends.
	cluster.WaitReady(t, ns, 2*time.Minute, "apppool/pinged")
	framework.Eventually(t, time.Minute, func() error {
		_, err := framework.HTTPGet("http://" + hung.IP + ":9000/healthz")
		return err
	})
	sent, failures := steady.stop()
	// Requests fail only while the hung worker is still in rotation: from
	// the hang until the kill (within hangRestartBound) takes it out and the
	// frontend hears of it (about a second). The poller waits 2 s on each
	// request the hung worker holds, so at most one in two seconds fails:
	// (8 s + 2 s) / 2 s = 5, and as many again for requests cut by the kill.
	const maxFailed = 10
	t.Logf("%d of %d requests failed during the hang: %v", len(failures), sent, failures)
	if len(failures) > maxFailed {
		t.Errorf("%d requests failed, want at most %d: the hung worker stayed in rotation too long", len(failures), maxFailed)
	}
	if sent-len(failures) < sent/2 {
		t.Errorf("only %d of %d requests answered: the other worker did not carry the load", sent-len(failures), sent)
	}
}

// recentFailures is the pool's status.recentFailures.
func recentFailures(t *testing.T, ns, pool string) int {
	t.Helper()
	out := strings.TrimSpace(cluster.Run(t, "get", "apppool", pool, "-n", ns, "-o", "jsonpath={.status.recentFailures}"))
	n, err := strconv.Atoi(out)
	if err != nil {
		t.Fatalf("recentFailures of %s: %q", pool, out)
	}
	return n
}
