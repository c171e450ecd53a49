//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"webfarm.dev/operator/internal/vocabulary"
	"webfarm.dev/operator/test/e2e/framework"
)

// A farm with a steady static pool at / and a fragile application pool at
// /fragile whose workers the test crashes; rapid-fail protection stops it
// after 3 failures within 2 minutes.
var rapidFailFarm = `apiVersion: v1
kind: ConfigMap
metadata: {name: steady-content}
data:
  index.html: "steady page\n"
---
apiVersion: webfarm.dev/v1alpha1
kind: AppPool
metadata: {name: steady}
spec:
  content: {configMap: {name: steady-content}}
  replicas: 1
  cpu: 50m
  memory: 64Mi
---
` + testAppPool("fragile", 2, "rapidFailProtection: {maxFailures: 3, interval: 2m}") +
	pathFarm("guarded", "guarded.example", "100m", [2]string{"/", "steady"}, [2]string{"/fragile", "fragile"})

// restartLoad is how long the load on the stopped pool runs: it sees the
// stop, the restart and the pool serving again.
const restartLoad = 30 * time.Second

// Workers that crash 3 times within the interval stop their pool: the
// frontend answers its routes 503 within 2 s of the stop, the farm's other
// pool serves throughout, an event and a metric say so, and the documented
// restart annotation brings the pool back.
func TestRapidFailProtectionStopsAPoolAndARestartBringsItBack(t *testing.T) {
	ns := cluster.Namespace(t)
	cluster.Apply(t, ns, rapidFailFarm)
	cluster.WaitReady(t, ns, 3*time.Minute, "webfarm/guarded", "apppool/steady", "apppool/fragile")
	front := cluster.ServiceURL(t, ns, "guarded-frontend")
	host := "Host: guarded.example"
	framework.ExpectBody(t, time.Minute, front+"/fragile/", "app on fragile-", host)
	framework.ExpectBody(t, time.Minute, front+"/", "steady page", host)

	client := cluster.ClientPod(t, ns)
	inCluster := fmt.Sprintf("http://guarded-frontend.%s.svc.cluster.local", ns)

	// The steady pool is polled every 100 ms for the whole test.
	steady := pollSteady(front+"/", host)
	defer steady.stop()

	workers := cluster.Pods(t, ns, "app.kubernetes.io/instance=fragile,app.kubernetes.io/component=pool")
	if len(workers) != 2 {
		t.Fatalf("fragile workers %v, want 2", workers)
	}
	// Crash each worker's application directly, then the first one again once
	// the kubelet has restarted it: three failures.
	crash := func(ip string) {
		t.Helper()
		framework.Eventually(t, 2*time.Minute, func() error {
			if _, err := framework.HTTPGet("http://" + ip + ":9000/healthz"); err != nil {
				return fmt.Errorf("worker %s not serving yet: %w", ip, err)
			}
			return nil
		})
		_, _ = framework.HTTPGet("http://" + ip + ":9000/?exit=1") // the worker dies before answering
	}
	crash(workers[0].IP)
	crash(workers[1].IP)
	crash(workers[0].IP)

	crashed := time.Now()

	// The frontend's first 503 for the stopped pool, polled every 50 ms.
	var rejectedAt time.Time
	framework.EventuallyEvery(t, 2*time.Minute, 50*time.Millisecond, func() error {
		r, err := framework.HTTPGet(front+"/fragile/", host)
		if err != nil {
			return err
		}
		if r.Status != http.StatusServiceUnavailable || r.Body != vocabulary.PoolStoppedBody {
			return fmt.Errorf("GET /fragile/: %d %q, want 503 %q", r.Status, r.Body, vocabulary.PoolStoppedBody)
		}
		rejectedAt = time.Now()
		return nil
	})
	// The stop's time is the Stopped condition's transition, in whole
	// seconds (rounded down, so the lag below is if anything overstated).
	// Not the Ready condition's: it may have gone False earlier, while both
	// workers were restarting, and keeps that time through the stop.
	transition := cluster.Run(t, "get", "apppool", "fragile", "-n", ns, "-o", `jsonpath={.status.conditions[?(@.type=="Stopped")].lastTransitionTime}`)
	stoppedAt, err := time.Parse(time.RFC3339, strings.TrimSpace(transition))
	if err != nil {
		t.Fatalf("Stopped condition's transition time %q: %v", transition, err)
	}
	lag := rejectedAt.Sub(stoppedAt)
	t.Logf("third crash at %s; the pool's Stopped condition came %s later (to the second); the frontend answered 503 %s after that",
		crashed.Format("15:04:05.000"), stoppedAt.Sub(crashed).Round(time.Millisecond), lag.Round(time.Millisecond))
	if lag > 2*time.Second {
		t.Errorf("503 came %s after the stop, want within 2 s", lag)
	}

	t.Run("the stop is reported: condition, event, metric and the chart's alert", func(t *testing.T) {
		reason := cluster.Run(t, "get", "apppool", "fragile", "-n", ns, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].reason}`)
		if strings.TrimSpace(reason) != "RapidFailProtection" {
			t.Errorf("Ready reason %q, want RapidFailProtection", reason)
		}
		events := cluster.Run(t, "get", "events", "-n", ns, "--field-selector", "reason=RapidFailProtection", "-o", "jsonpath={.items[*].message}")
		if !strings.Contains(events, "stopped after 3 worker failures") {
			t.Errorf("events %q, want one saying the pool stopped after 3 failures", events)
		}
		expectPoolMetric(t, "webfarm_pool_stopped", ns, "fragile", "== 1")
		expectPoolMetric(t, "webfarm_pool_worker_failures_total", ns, "fragile", ">= 3")
		// The chart's PrometheusRule, loaded by the Prometheus Operator:
		// WebfarmPoolWorkersFailing fires at 3 failures in 10 minutes.
		alert := fmt.Sprintf(`ALERTS{alertname="WebfarmPoolWorkersFailing",alertstate="firing",namespace=%q,pool="fragile"}`, ns)
		cluster.EventuallyQuery(t, time.Minute, alert, func(s []framework.Sample) error {
			if len(s) != 1 {
				return fmt.Errorf("%s: samples %v, want the alert firing", alert, s)
			}
			return nil
		})
	})

	t.Run("the restart annotation starts the pool again under 500 requests/s, losing none", func(t *testing.T) {
		done := make(chan heyResult, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), restartLoad+time.Minute)
			defer cancel()
			out, err := client.Exec(ctx, "hey", "-z", restartLoad.String(), "-c", strconv.Itoa(loadWorkers),
				"-q", strconv.Itoa(loadRatePerWorker), "-host", "guarded.example", inCluster+"/fragile/")
			done <- heyResult{out, err}
		}()
		// Let the load meet the stopped pool first: 100 of the frontend's 503s.
		frontends := cluster.Pods(t, ns, "app.kubernetes.io/instance=guarded,app.kubernetes.io/component=frontend")
		stats := fmt.Sprintf("http://%s:%d%s", frontends[0].IP, vocabulary.FrontendStatusPort, vocabulary.FrontendMetricsPath)
		rejected := func() int {
			n, _ := envoyCounter(stats, "envoy_http_downstream_rq_xx", `envoy_response_code_class="5"`, `envoy_http_conn_manager_prefix="farm"`)
			return n
		}
		before := rejected()
		framework.Eventually(t, 30*time.Second, func() error {
			if n := rejected() - before; n < 100 {
				return fmt.Errorf("%d 503s under the load so far", n)
			}
			return nil
		})
		cluster.Run(t, "annotate", "apppool", "fragile", "-n", ns, "webfarm.dev/restart=1", "--overwrite")
		restarted := time.Now()
		framework.ExpectBody(t, 2*time.Minute, front+"/fragile/", "app on fragile-", host)
		t.Logf("the pool served again %s after the restart", time.Since(restarted).Round(100*time.Millisecond))
		cluster.WaitReady(t, ns, 2*time.Minute, "apppool/fragile")

		r := <-done
		if r.err != nil {
			t.Fatalf("hey: %v\n%s", r.err, r.out)
		}
		codes, errors := heyOutcome(r.out)
		t.Logf("hey during the restart: responses by status %v, errors %d", codes, errors)
		for code, n := range codes {
			if code != http.StatusOK && code != http.StatusServiceUnavailable {
				t.Errorf("%d responses with status %d, want only 200 and the frontend's 503s", n, code)
			}
		}
		if errors > 0 || codes[http.StatusOK] == 0 || codes[http.StatusServiceUnavailable] == 0 {
			t.Errorf("errors %d, 200s %d, 503s %d: want no error, 503s while stopped or starting, then 200s",
				errors, codes[http.StatusOK], codes[http.StatusServiceUnavailable])
		}
	})

	t.Run("an administrator's stop answers 503 within 2 s, and a start brings the pool back", func(t *testing.T) {
		cluster.Run(t, "patch", "apppool", "fragile", "-n", ns, "--type", "merge", "-p", `{"spec":{"state":"Stopped"}}`)
		stopped := time.Now()
		framework.EventuallyEvery(t, 2*time.Second, 50*time.Millisecond, func() error {
			if r, err := framework.HTTPGet(front+"/fragile/", host); err != nil || r.Status != http.StatusServiceUnavailable {
				return fmt.Errorf("GET /fragile/: %d %v, want the frontend's 503", r.Status, err)
			}
			return nil
		})
		t.Logf("503 %s after the stop", time.Since(stopped).Round(time.Millisecond))
		if got := cluster.Run(t, "get", "apppool", "fragile", "-n", ns, "-o", `jsonpath={.status.phase} {.status.conditions[?(@.type=="Stopped")].reason}`); got != "Stopped StoppedByAdministrator" {
			t.Errorf("phase and Stopped reason %q, want Stopped StoppedByAdministrator", got)
		}
		cluster.Run(t, "patch", "apppool", "fragile", "-n", ns, "--type", "merge", "-p", `{"spec":{"state":"Started"}}`)
		framework.ExpectBody(t, 2*time.Minute, front+"/fragile/", "app on fragile-", host)
	})

	if n, failures := steady.stop(); len(failures) > 0 {
		t.Errorf("the steady pool failed %d of %d requests while the other was stopped: %v", len(failures), n, failures)
	} else {
		t.Logf("the steady pool answered all %d requests", n)
	}
}

// steadyPoller sends a GET every 100 ms until stopped (at most 10 minutes)
// and keeps the failures.
type steadyPoller struct {
	done     chan struct{}
	wg       sync.WaitGroup
	once     sync.Once
	sent     int
	failures []string
}

func pollSteady(url string, headers ...string) *steadyPoller {
	p := &steadyPoller{done: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		bound := time.After(10 * time.Minute) // a test that never stops it
		for {
			select {
			case <-p.done:
				return
			case <-bound:
				return
			case <-tick.C:
			}
			p.sent++
			r, err := framework.HTTPGet(url, headers...)
			switch {
			case err != nil:
				p.failures = append(p.failures, err.Error())
			case r.Status != http.StatusOK:
				p.failures = append(p.failures, fmt.Sprintf("%d %q", r.Status, r.Body))
			}
		}
	}()
	return p
}

// stop ends the polling (once) and returns the requests sent and the failures.
func (p *steadyPoller) stop() (int, []string) {
	p.once.Do(func() { close(p.done) })
	p.wg.Wait()
	return p.sent, p.failures
}

var errorBurstFarm = testAppPool("erratic", 1, "rapidFailProtection: {maxFailures: 2, interval: 2m}") + oneRouteFarm("erratic", "erratic.example", "erratic")

// A pool whose workers answer mostly 5xx fails as surely as one whose
// workers crash: each burst (read from the frontend's counters every 5 s)
// is one failure, and two stop this pool.
func TestBurstsOf5xxCountAsWorkerFailures(t *testing.T) {
	t.Parallel() // it mostly waits: it runs beside the other waiting tests, after the rest
	ns := cluster.Namespace(t)
	cluster.Apply(t, ns, errorBurstFarm)
	cluster.WaitReady(t, ns, 3*time.Minute, "webfarm/erratic", "apppool/erratic")
	front := cluster.ServiceURL(t, ns, "erratic-frontend")
	host := "Host: erratic.example"
	framework.ExpectBody(t, time.Minute, front+"/", "app on erratic-", host)

	burst := func() {
		t.Helper()
		for range 30 {
			if r, err := framework.HTTPGet(front+"/?status=500", host); err != nil || r.Status != http.StatusInternalServerError {
				t.Fatalf("GET ?status=500: %d %v, want the worker's 500", r.Status, err)
			}
		}
	}
	failures := func() string {
		return strings.TrimSpace(cluster.Run(t, "get", "apppool", "erratic", "-n", ns, "-o", "jsonpath={.status.recentFailures} {.status.phase}"))
	}
	started := time.Now()
	burst()
	framework.Eventually(t, 30*time.Second, func() error {
		if got := failures(); got != "1 Running" {
			return fmt.Errorf("recent failures and phase %q, want \"1 Running\"", got)
		}
		return nil
	})
	t.Logf("the first burst was counted %s after it began", time.Since(started).Round(100*time.Millisecond))

	burst()
	framework.Eventually(t, 30*time.Second, func() error {
		if got := cluster.Run(t, "get", "apppool", "erratic", "-n", ns, "-o", "jsonpath={.status.phase}"); got != "Stopped" {
			return fmt.Errorf("phase %q, want Stopped", got)
		}
		return nil
	})
	if last := cluster.Run(t, "get", "apppool", "erratic", "-n", ns, "-o", "jsonpath={.status.lastFailure}"); !strings.Contains(last, "responses were 5xx") {
		t.Errorf("last failure %q, want the burst of 5xx", last)
	}
	framework.Eventually(t, 10*time.Second, func() error {
		r, err := framework.HTTPGet(front+"/", host)
		if err != nil || r.Status != http.StatusServiceUnavailable || r.Body != vocabulary.PoolStoppedBody {
			return fmt.Errorf("GET /: %d %q %v, want 503 %q", r.Status, r.Body, err, vocabulary.PoolStoppedBody)
		}
		return nil
	})
}

// Two pools of the test application whose workers may use 10 % of their CPU
// (nginx's and the application's limits together) for 10 s: one only
// reports, the other is shut down.
var cpuLimitFarm = testAppPool("hot-report", 1, "cpuLimit: {percent: 10, interval: 10s, action: Report}") +
	testAppPool("hot-stop", 1, "cpuLimit: {percent: 10, interval: 10s, action: Shutdown}") +
	pathFarm("hot", "hot.example", "100m", [2]string{"/report", "hot-report"}, [2]string{"/stop", "hot-stop"})

// The CPU monitor reads the pools' CPU from Prometheus (the kubelet's
// cAdvisor counters): a pool that stays over its cpuLimit for the interval
// is reported (condition, event, metric) or, with action Shutdown, stopped
// until restarted.
func TestTheCPUMonitorReportsOrStopsAPoolOverItsLimit(t *testing.T) {
	t.Parallel() // it mostly waits: it runs beside the other waiting tests, after the rest
	ns := cluster.Namespace(t)
	cluster.Apply(t, ns, cpuLimitFarm)
	cluster.WaitReady(t, ns, 3*time.Minute, "webfarm/hot", "apppool/hot-report", "apppool/hot-stop")
	front := cluster.ServiceURL(t, ns, "hot-frontend")
	host := "Host: hot.example"
	framework.ExpectBody(t, time.Minute, front+"/report/", "app on hot-report-", host)
	framework.ExpectBody(t, time.Minute, front+"/stop/", "app on hot-stop-", host)

	// Each pool's application spins on a CPU, a minute at a time, up to three
	// times (on a busy machine the readings may take longer than one spin to
	// cross the limit) or until the test ends.
	done := make(chan struct{})
	defer close(done)
	spin := func(path string, times int) {
		client := &http.Client{Timeout: 70 * time.Second}
		for range times {
			select {
			case <-done:
				return
			default:
			}
			req, _ := http.NewRequest(http.MethodGet, front+path+"?spin=60s", nil)
			req.Host = "hot.example"
			if resp, err := client.Do(req); err == nil {
				resp.Body.Close()
			}
		}
	}
	go spin("/report/", 3)
	go spin("/stop/", 3) // it stops at the first reading over the limit; later spins get 503 at once
	started := time.Now()

	t.Run("Shutdown stops the pool and the frontend answers 503", func(t *testing.T) {
		framework.Eventually(t, 2*time.Minute, func() error {
			got := cluster.Run(t, "get", "apppool", "hot-stop", "-n", ns, "-o", `jsonpath={.status.phase} {.status.conditions[?(@.type=="Ready")].reason}`)
			if strings.TrimSpace(got) != "Stopped CPULimitExceeded" {
				return fmt.Errorf("phase and Ready reason %q, want Stopped CPULimitExceeded", got)
			}
			return nil
		})
		t.Logf("stopped %s after the load began", time.Since(started).Round(time.Second))
		framework.Eventually(t, 10*time.Second, func() error {
			r, err := framework.HTTPGet(front+"/stop/", host)
			if err != nil || r.Status != http.StatusServiceUnavailable || r.Body != vocabulary.PoolStoppedBody {
				return fmt.Errorf("GET /stop/: %d %q %v, want 503 %q", r.Status, r.Body, err, vocabulary.PoolStoppedBody)
			}
			return nil
		})
	})

	t.Run("Report sets the condition and an event while the pool serves on", func(t *testing.T) {
		framework.Eventually(t, 2*time.Minute, func() error {
			got := cluster.Run(t, "get", "apppool", "hot-report", "-n", ns, "-o", `jsonpath={.status.phase} {.status.conditions[?(@.type=="CPULimitExceeded")].status}`)
			if strings.TrimSpace(got) != "Running True" {
				return fmt.Errorf("phase and CPULimitExceeded %q, want Running True", got)
			}
			return nil
		})
		events := cluster.Run(t, "get", "events", "-n", ns, "--field-selector", "reason=CPULimitExceeded,involvedObject.name=hot-report", "-o", "jsonpath={.items[*].message}")
		if !strings.Contains(events, "over 10% of the pool's CPU") {
			t.Errorf("events %q, want one saying the pool is over 10%% of its CPU", events)
		}
		expectPoolMetric(t, "webfarm_pool_cpu_percent", ns, "hot-report", "> 10")
		framework.ExpectBody(t, 10*time.Second, front+"/report/", "app on hot-report-", host)
	})

	t.Run("the restart annotation starts the stopped pool again", func(t *testing.T) {
		cluster.Run(t, "annotate", "apppool", "hot-stop", "-n", ns, "webfarm.dev/restart=1", "--overwrite")
		framework.ExpectBody(t, 2*time.Minute, front+"/stop/", "app on hot-stop-", host)
	})
}

// A farm behind a layer 4 balancer (unavailableResponse: L4): a stopped
// pool's requests get their connection cut rather than a 503 page.
var l4Farm = `apiVersion: v1
kind: ConfigMap
metadata: {name: l4-content}
data:
  index.html: "still here\n"
---
apiVersion: webfarm.dev/v1alpha1
kind: AppPool
metadata: {name: l4-steady}
spec:
  content: {configMap: {name: l4-content}}
  replicas: 1
  cpu: 50m
  memory: 64Mi
---
` + testAppPool("l4-fragile", 1, "rapidFailProtection: {maxFailures: 1, interval: 1m}") + `apiVersion: webfarm.dev/v1alpha1
kind: WebFarm
metadata: {name: l4}
spec:
  unavailableResponse: L4
  sites:
  - name: main
    hosts: [l4.example]
    routes:
    - {pathPrefix: /, appPool: l4-steady}
    - {pathPrefix: /fragile, appPool: l4-fragile}
  frontend:
    replicas: 1
    cpu: 100m
`

func TestInL4ModeAStoppedPoolsConnectionsAreCut(t *testing.T) {
	ns := cluster.Namespace(t)
	cluster.Apply(t, ns, l4Farm)
	cluster.WaitReady(t, ns, 3*time.Minute, "webfarm/l4", "apppool/l4-steady", "apppool/l4-fragile")
	front := cluster.ServiceURL(t, ns, "l4-frontend")
	host := "Host: l4.example"
	framework.ExpectBody(t, time.Minute, front+"/fragile/", "app on l4-fragile-", host)

	worker := cluster.Pods(t, ns, "app.kubernetes.io/instance=l4-fragile,app.kubernetes.io/component=pool")[0]
	_, _ = framework.HTTPGet("http://" + worker.IP + ":9000/?exit=1") // one failure stops this pool
	framework.Eventually(t, time.Minute, func() error {
		if got := strings.TrimSpace(cluster.Run(t, "get", "apppool", "l4-fragile", "-n", ns, "-o", "jsonpath={.status.phase}")); got != "Stopped" {
			return fmt.Errorf("phase %q, want Stopped", got)
		}
		return nil
	})
	stopped := time.Now()
	// Cut: the connection closes before a byte of an answer.
	cutBeforeAnswer := func(path string) error {
		n, err := framework.BytesBeforeClose(front+path, host)
		if err != nil || n > 0 {
			return fmt.Errorf("GET %s: %d bytes of an answer (%v), want the connection cut before any", path, n, err)
		}
		return nil
	}
	framework.EventuallyEvery(t, 2*time.Second, 50*time.Millisecond, func() error { return cutBeforeAnswer("/fragile/") })
	t.Logf("%s after the pool's status said Stopped, its connections closed before a byte of an answer", time.Since(stopped).Round(time.Millisecond))
	framework.ExpectBody(t, 10*time.Second, front+"/", "still here", host)

	// An administrator's stop cuts the connections too, and a start brings the pool back.
	cluster.Run(t, "patch", "apppool", "l4-steady", "-n", ns, "--type", "merge", "-p", `{"spec":{"state":"Stopped"}}`)
	adminStopped := time.Now()
	framework.EventuallyEvery(t, 2*time.Second, 50*time.Millisecond, func() error { return cutBeforeAnswer("/") })
	t.Logf("connections cut %s after the administrator's stop", time.Since(adminStopped).Round(time.Millisecond))
	cluster.Run(t, "patch", "apppool", "l4-steady", "-n", ns, "--type", "merge", "-p", `{"spec":{"state":"Started"}}`)
	framework.ExpectBody(t, 2*time.Minute, front+"/", "still here", host)
}
