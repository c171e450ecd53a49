//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"webfarm.dev/operator/test/e2e/framework"
)

// A farm whose one frontend of 50m (its Envoy planned at 30 %, 15m) takes
// about 80 requests/s, more than that frontend carries, and which may run
// two.
var frontendScalingFarm = testAppPool("edge-pool", 2) + `apiVersion: webfarm.dev/v1alpha1
kind: WebFarm
metadata: {name: edge}
spec:
  sites:
  - name: main
    hosts: [edge.example]
    routes: [{appPool: edge-pool}]
  frontend:
    replicas: 1
    cpu: 50m
    autoscaling: {minReplicas: 1, maxReplicas: 2, stabilizationWindow: 30s}
`

// frontendLoad is a load on the edge farm from a client pod, in chunks
// (hey in the pod cannot be stopped from here), until stop or its bound.
type frontendLoad struct {
	stop     chan struct{}
	stopOnce sync.Once
	done     chan []heyResult
}

func startFrontendLoad(client *framework.Client, url string, workers, ratePerWorker int, bound time.Duration) *frontendLoad {
	l := &frontendLoad{stop: make(chan struct{}), done: make(chan []heyResult, 1)}
	const chunk = 15 * time.Second
	until := time.Now().Add(bound)
	go func() {
		var results []heyResult
		for {
			ctx, cancel := context.WithTimeout(context.Background(), chunk+time.Minute)
			out, err := client.Exec(ctx, "hey", "-z", chunk.String(), "-c", strconv.Itoa(workers),
				"-q", strconv.Itoa(ratePerWorker), "-host", "edge.example", url)
			cancel()
			results = append(results, heyResult{out, err})
			select {
			case <-l.stop:
				l.done <- results
				return
			default:
				if err != nil || time.Now().After(until) {
					l.done <- results
					return
				}
			}
		}
	}()
	return l
}

// end stops the load and gives the outcome of every request it made.
func (l *frontendLoad) end() (codes map[int]int, failed int, err error) {
	l.stopOnce.Do(func() { close(l.stop) })
	codes = map[int]int{}
	for _, r := range <-l.done {
		if r.err != nil {
			return codes, failed, fmt.Errorf("hey: %v\n%s", r.err, r.out)
		}
		c, f := heyOutcome(r.out)
		for code, n := range c {
			codes[code] += n
		}
		failed += f
	}
	return codes, failed, nil
}

// frontendCount is the frontends the edge farm's Deployment asks for, how
// many run (terminating ones included) and how many are ready.
func frontendCount(t *testing.T, ns string) (desired, running, ready int) {
	desired, _ = strconv.Atoi(strings.TrimSpace(cluster.Run(t, "get", "deployment", "edge-frontend", "-n", ns, "-o", "jsonpath={.spec.replicas}")))
	for _, p := range cluster.Pods(t, ns, "app.kubernetes.io/instance=edge,app.kubernetes.io/name=webfarm-frontend") {
		running++
		if p.Ready == "True" && !p.Deleting {
			ready++
		}
	}
	return desired, running, ready
}

// A load more than one frontend carries at the 30 % policy makes the farm
// add a frontend, measured by Prometheus from the real Envoy's requests and
// the kubelet's CPU counters; a light load after it makes the farm remove
// it once the window has passed, the leaving frontend draining its
// connections first. No request of either load fails.
func TestALoadBeyondOneFrontendAddsOneAndItLeavesDrainedWhenTheLoadFalls(t *testing.T) {
	t.Parallel()
	ns := cluster.Namespace(t)
	cluster.Apply(t, ns, frontendScalingFarm)
	cluster.WaitReady(t, ns, 3*time.Minute, "webfarm/edge", "apppool/edge-pool")
	client := cluster.ClientPod(t, ns)
	url := fmt.Sprintf("http://edge-frontend.%s.svc.cluster.local/", ns)
	started := time.Now()

	expectNoFailure := func(phase string, l *frontendLoad) int {
		codes, failed, err := l.end()
		if err != nil {
			t.Fatalf("%s: %v", phase, err)
		}
		total := 0
		for code, n := range codes {
			total += n
			if code != 200 {
				t.Errorf("%s: %d responses with status %d, want none", phase, n, code)
			}
		}
		if failed > 0 {
			t.Errorf("%s: %d requests failed without a response, want none", phase, failed)
		}
		t.Logf("%s: %d requests, responses by status %v", phase, total, codes)
		return total
	}

	heavy := startFrontendLoad(client, url, 8, 10, 5*time.Minute)
	framework.Eventually(t, 4*time.Minute, func() error {
		if desired, _, ready := frontendCount(t, ns); desired != 2 || ready != 2 {
			return fmt.Errorf("%d frontends asked for, %d ready; want 2", desired, ready)
		}
		return nil
	})
	capacity := cluster.Run(t, "get", "webfarm", "edge", "-n", ns, "-o",
		"jsonpath={.status.frontendCapacity.requestsPerSecond} req/s x {.status.frontendCapacity.megacyclesPerRequest} Mcycles/req: {.status.frontendCapacity.recommendedReplicas} recommended ({.status.frontendCapacity.lastScaleReason})")
	t.Logf("scaled out to 2 frontends %s into the load: %s", time.Since(started).Round(time.Second), capacity)
	// The new frontend takes its share of the load before it falls.
	framework.Eventually(t, time.Minute, func() error {
		out := cluster.Run(t, "get", "webfarm", "edge", "-n", ns, "-o", "jsonpath={.status.frontendReplicas}")
		if strings.TrimSpace(out) != "2/2" {
			return fmt.Errorf("status.frontendReplicas %q, want 2/2", out)
		}
		return nil
	})
	expectNoFailure("the heavy load", heavy)

	light := startFrontendLoad(client, url, 1, 2, 5*time.Minute)
	fell := time.Now()
	framework.Eventually(t, 4*time.Minute, func() error {
		if desired, running, _ := frontendCount(t, ns); desired != 1 || running != 1 {
			return fmt.Errorf("%d frontends asked for, %d running (terminating included); want 1", desired, running)
		}
		return nil
	})
	t.Logf("scaled in to 1 frontend, the leaving one gone, %s after the load fell", time.Since(fell).Round(time.Second))
	if n := expectNoFailure("the light load", light); n == 0 {
		t.Error("the light load made no request: nothing was served while the frontend left")
	}

	// The kubelet tells of a preStop hook that could not run (envoy-drain
	// missing from the image, say): the frontend would then leave undrained.
	if hooks := cluster.Run(t, "get", "events", "-n", ns, "--field-selector", "reason=FailedPreStopHook",
		"-o", "jsonpath={range .items[*]}{.involvedObject.name}: {.message}{\"\\n\"}{end}"); strings.TrimSpace(hooks) != "" {
		t.Errorf("preStop hooks failed:\n%s", hooks)
	}
	events := cluster.Run(t, "get", "events.events.k8s.io", "-n", ns, "--field-selector", "regarding.kind=WebFarm",
		"-o", "jsonpath={range .items[*]}{.reason} {.note}{\"\\n\"}{end}")
	if !strings.Contains(events, "ScaledOut 1 -> 2 frontends") || !strings.Contains(events, "ScaledIn 2 -> 1 frontends") {
		t.Errorf("events of the farm:\n%s\nwant ScaledOut 1 -> 2 frontends and ScaledIn 2 -> 1 frontends", events)
	}
}
