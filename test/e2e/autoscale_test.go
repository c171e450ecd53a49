//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"webfarm.dev/operator/internal/vocabulary"
	"webfarm.dev/operator/test/e2e/framework"
)

// An autoscaled pool of the test application: each worker may use 200m for
// the application and 50m for nginx, 250 MHz on the node labelled 1,000 MHz;
// at the 30 % policy it carries 75 MHz of load.
var autoscaleFarm = `apiVersion: webfarm.dev/v1alpha1
kind: AppPool
metadata: {name: elastic}
spec:
  app:
    image: localhost/webfarm-client:dev
    args: [webfarm-testapp, --listen=:9000]
    port: 9000
  cpu: 200m
  memory: 64Mi
  healthCheck: {path: /healthz, interval: 2s}
  autoscaling:
    minReplicas: 1
    maxReplicas: 6
    targetCPUUtilizationPercent: 30
    stabilizationWindow: 30s
---
` + oneRouteFarm("elastic", "elastic.example", "elastic")

const (
	autoscaleNodeMHz   = 1000
	autoscaleWorkerMHz = 0.25 * autoscaleNodeMHz
	autoscaleStepRate  = 20 // requests/s of one load step
	autoscaleSpin      = "10ms"
	// autoscaleLoadLength bounds a step of load; it ends earlier, within
	// autoscaleLoadChunk, once the pool has followed the doubled load.
	autoscaleLoadLength = 210 * time.Second
	autoscaleLoadChunk  = 20 * time.Second
)

// capacityFigures are an autoscaled pool's status.capacity and workers.
type capacityFigures struct {
	rps, megacycles, requiredMHz float64
	recommended, replicas        int
}

func readCapacity(t *testing.T, ns, pool string) (capacityFigures, error) {
	out := cluster.Run(t, "get", "apppool", pool, "-n", ns, "-o",
		"jsonpath={.status.capacity.requestsPerSecond} {.status.capacity.megacyclesPerRequest} {.status.capacity.requiredMegahertz} {.status.capacity.recommendedReplicas} {.status.replicas}")
	f := strings.Fields(out)
	if len(f) != 5 {
		return capacityFigures{}, fmt.Errorf("status.capacity %q: not measured yet", out)
	}
	var c capacityFigures
	var errs [5]error
	c.rps, errs[0] = strconv.ParseFloat(f[0], 64)
	c.megacycles, errs[1] = strconv.ParseFloat(f[1], 64)
	c.requiredMHz, errs[2] = strconv.ParseFloat(f[2], 64)
	c.recommended, errs[3] = strconv.Atoi(f[3])
	c.replicas, errs[4] = strconv.Atoi(f[4])
	for _, err := range errs {
		if err != nil {
			return c, fmt.Errorf("status.capacity %q: %v", out, err)
		}
	}
	return c, nil
}

// computedWorkers is the seed's arithmetic on the pool's own figures.
func computedWorkers(c capacityFigures) int {
	return min(6, max(1, int(math.Ceil(c.requiredMHz/autoscaleWorkerMHz-1e-9))))
}

// A step of load scales an autoscaled pool out to the count its measured
// cycles per request give (Prometheus scraping the real Envoy frontend and
// the kubelet's cAdvisor counters), a step that doubles the load scales it
// out further, and when the load stops it scales in after the window.
func TestAnAutoscaledPoolFollowsItsLoadInCyclesPerRequest(t *testing.T) {
	ns := cluster.Namespace(t)
	node := strings.TrimSpace(cluster.Run(t, "get", "nodes", "-o", "jsonpath={.items[0].metadata.name}"))
	cluster.Run(t, "label", "node", node, "--overwrite", fmt.Sprintf("%s=%d", vocabulary.NodeMHzLabel, autoscaleNodeMHz))
	t.Cleanup(func() { cluster.Run(t, "label", "node", node, vocabulary.NodeMHzLabel+"-") })
	cluster.Apply(t, ns, autoscaleFarm)
	cluster.WaitReady(t, ns, 3*time.Minute, "webfarm/elastic", "apppool/elastic")
	client := cluster.ClientPod(t, ns)
	url := fmt.Sprintf("http://elastic-frontend.%s.svc.cluster.local/?spin=%s", ns, autoscaleSpin)

	started := time.Now()
	// load runs one step of load until stop is closed or the step's bound
	// has passed. hey in the client pod cannot be stopped from here (ending
	// kubectl exec leaves it running), so it runs in chunks, and the load
	// ends at most a chunk after stop.
	stop := make(chan struct{})
	var stopOnce sync.Once
	stopLoad := func() { stopOnce.Do(func() { close(stop) }) }
	t.Cleanup(stopLoad)
	load := func() chan heyResult {
		done := make(chan heyResult, 1)
		bound := time.Now().Add(autoscaleLoadLength)
		go func() {
			for {
				ctx, cancel := context.WithTimeout(context.Background(), autoscaleLoadChunk+time.Minute)
				out, err := client.Exec(ctx, "hey", "-z", autoscaleLoadChunk.String(), "-c", "4",
					"-q", strconv.Itoa(autoscaleStepRate/4), "-host", "elastic.example", url)
				cancel()
				select {
				case <-stop:
				default:
					if err == nil && time.Now().Before(bound) {
						continue
					}
				}
				done <- heyResult{out, err}
				return
			}
		}()
		return done
	}
	// converged waits until the pool runs the count its own figures give,
	// with the load measured at about rps.
	converged := func(step string, rps float64, atLeast int) capacityFigures {
		var last capacityFigures
		// The requests' rate is over a minute: a step shows in full after it.
		framework.Eventually(t, 150*time.Second, func() error {
			c, err := readCapacity(t, ns, "elastic")
			if err != nil {
				return err
			}
			last = c
			if c.rps < 0.8*rps || c.rps > 1.2*rps {
				return fmt.Errorf("%s: %.1f requests/s measured, want about %.0f", step, c.rps, rps)
			}
			if want := computedWorkers(c); c.recommended != want || c.replicas != want || want < atLeast {
				return fmt.Errorf("%s: %d workers, %d recommended, %d computed from %.0f MHz (want at least %d)", step, c.replicas, c.recommended, want, c.requiredMHz, atLeast)
			}
			return nil
		})
		t.Logf("%s: %.1f requests/s x %.2f megacycles/request needs %.0f MHz at 30 %%: %d workers of %.0f MHz (%s into the load)",
			step, last.rps, last.megacycles, last.requiredMHz, last.replicas, autoscaleWorkerMHz, time.Since(started).Round(time.Second))
		return last
	}

	first := load()
	one := converged("one step of load", autoscaleStepRate, 2)
	second := load()
	two := converged("doubled load", 2*autoscaleStepRate, one.replicas+1)
	stopLoad()
	if two.megacycles < 0.5*one.megacycles || two.megacycles > 1.5*one.megacycles {
		t.Errorf("megacycles/request %.2f at double the load, %.2f before: the cost of a request should not depend on the load", two.megacycles, one.megacycles)
	}
	for _, done := range []chan heyResult{first, second} {
		if r := <-done; r.err != nil {
			t.Fatalf("hey: %v\n%s", r.err, r.out)
		}
	}

	t.Run("without load the pool scales in to its minimum after the window", func(t *testing.T) {
		stopped := time.Now()
		framework.Eventually(t, 3*time.Minute, func() error {
			c, err := readCapacity(t, ns, "elastic")
			if err != nil {
				return err
			}
			if c.replicas != 1 {
				return fmt.Errorf("%d workers at %.1f requests/s, want 1", c.replicas, c.rps)
			}
			return nil
		})
		t.Logf("scaled in to 1 worker %s after the load stopped", time.Since(stopped).Round(time.Second))
		events := cluster.Run(t, "get", "events.events.k8s.io", "-n", ns, "-o", "jsonpath={range .items[*]}{.reason} {.note}{\"\\n\"}{end}")
		if !strings.Contains(events, "ScaledOut") || !strings.Contains(events, "ScaledIn") {
			t.Errorf("events of the pool:\n%s\nwant ScaledOut and ScaledIn", events)
		}
	})

	t.Run("Prometheus has the pool's figures from the operator", func(t *testing.T) {
		expectPoolMetric(t, "webfarm_pool_megacycles_per_request", ns, "elastic", "> 0")
	})
}
