//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"webfarm.dev/operator/test/e2e/framework"
)

const trafficFarm = `apiVersion: v1
kind: ConfigMap
metadata: {name: traffic-content}
data:
  index.html: "steady traffic\n"
---
apiVersion: webfarm.dev/v1alpha1
kind: AppPool
metadata: {name: steady}
spec:
  content: {configMap: {name: traffic-content}}
  replicas: 2
  cpu: 100m
  memory: 64Mi
---
apiVersion: webfarm.dev/v1alpha1
kind: AppPool
metadata: {name: steady-b}
spec:
  content: {configMap: {name: traffic-content}}
  replicas: 2
  cpu: 50m
  memory: 64Mi
---
apiVersion: webfarm.dev/v1alpha1
kind: WebFarm
metadata: {name: traffic}
spec:
  sites:
  - name: main
    hosts: [traffic.example]
    routes: [{pathPrefix: /, appPool: steady}]
  frontend:
    replicas: 1
    cpu: 300m
    # The test reads which worker answered.
    debugHeaders: true
`

// routesTo is a merge patch giving the traffic farm's site these routes.
func routesTo(routes string) string {
	return `{"spec":{"sites":[{"name":"main","hosts":["traffic.example"],"routes":` + routes + `}]}}`
}

// Load figures: hey's 10 workers at 50 requests/s each.
const (
	loadWorkers       = 10
	loadRatePerWorker = 50
	loadDuration      = 90 * time.Second
)

// Under a steady 500 requests/s from a client pod, scaling a pool 2 -> 5 ->
// 2, rolling it to a new configuration, adding a route and moving the loaded
// route to another pool and back lose no request.
func TestScalingAndRollingAPoolUnderLoadLoseNoRequest(t *testing.T) {
	ns := cluster.Namespace(t)
	cluster.Apply(t, ns, trafficFarm)
	cluster.WaitReady(t, ns, 3*time.Minute, "webfarm/traffic", "apppool/steady", "apppool/steady-b")
	client := cluster.ClientPod(t, ns)
	url := fmt.Sprintf("http://traffic-frontend.%s.svc.cluster.local/", ns)
	if status, body, err := client.Get(url, "Host: traffic.example"); err != nil || status != 200 {
		t.Fatalf("before the load: %d %q %v", status, body, err)
	}

	done := make(chan heyResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), loadDuration+time.Minute)
		defer cancel()
		out, err := client.Exec(ctx, "hey", "-z", loadDuration.String(), "-c", strconv.Itoa(loadWorkers),
			"-q", strconv.Itoa(loadRatePerWorker), "-host", "traffic.example", url)
		done <- heyResult{out, err}
	}()

	started := time.Now()
	steps := []struct {
		what, wait string
		apply      []string
	}{
		{"scale to 5", "apppool/steady", []string{"scale", "apppool", "steady", "-n", ns, "--replicas=5"}},
		{"scale to 2", "apppool/steady", []string{"scale", "apppool", "steady", "-n", ns, "--replicas=2"}},
		{"roll to a new configuration", "apppool/steady", []string{"patch", "apppool", "steady", "-n", ns, "--type=merge", "-p", `{"spec":{"memory":"96Mi"}}`}},
		{"add a route", "webfarm/traffic", []string{"patch", "webfarm", "traffic", "-n", ns, "--type=merge", "-p",
			routesTo(`[{"pathPrefix":"/","appPool":"steady"},{"pathPrefix":"/b","appPool":"steady-b"}]`)}},
		{"move the loaded route to another pool", "webfarm/traffic", []string{"patch", "webfarm", "traffic", "-n", ns, "--type=merge", "-p",
			routesTo(`[{"pathPrefix":"/","appPool":"steady-b"}]`)}},
		{"move it back", "webfarm/traffic", []string{"patch", "webfarm", "traffic", "-n", ns, "--type=merge", "-p",
			routesTo(`[{"pathPrefix":"/","appPool":"steady"}]`)}},
	}
	for _, s := range steps {
		cluster.Run(t, s.apply...)
		cluster.WaitReady(t, ns, 2*time.Minute, s.wait)
		t.Logf("%s: done %s into the load", s.what, time.Since(started).Round(time.Second))
	}
	// The workers scaled away and rolled out drain and exit under the load too.
	framework.Eventually(t, loadDuration, func() error {
		pods := cluster.Pods(t, ns, "app.kubernetes.io/instance=steady,app.kubernetes.io/name=webfarm-pool")
		if len(pods) != 2 || pods[0].Deleting || pods[1].Deleting {
			return fmt.Errorf("pool pods %+v, want 2 and no terminating one", pods)
		}
		return nil
	})
	t.Logf("old workers gone %s into the load", time.Since(started).Round(time.Second))
	if elapsed := time.Since(started); elapsed > loadDuration-5*time.Second {
		t.Errorf("the steps took %s, longer than the load (%s): part of them ran without load", elapsed, loadDuration)
	}

	r := <-done
	if r.err != nil {
		t.Fatalf("hey: %v\n%s", r.err, r.out)
	}
	codes, errors := heyOutcome(r.out)
	t.Logf("hey: responses by status %v, errors %d\n%s", codes, errors, r.out)
	total := 0
	for code, n := range codes {
		total += n
		if code != 200 {
			t.Errorf("%d responses with status %d, want none", n, code)
		}
	}
	if errors > 0 {
		t.Errorf("%d requests failed without a response, want none", errors)
	}
	if want := int(0.8 * loadWorkers * loadRatePerWorker * loadDuration.Seconds()); total < want {
		t.Errorf("%d responses in %s, want at least %d (80 %% of the offered load)", total, loadDuration, want)
	}
}

// heyResult is hey's output from a client pod.
type heyResult struct {
	out string
	err error
}

var (
	heyStatusLine = regexp.MustCompile(`\[(\d{3})\]\s+(\d+) responses`)
	heyErrorLine  = regexp.MustCompile(`\[(\d+)\]\s+Get `)
)

// heyOutcome reads hey's "Status code distribution" and "Error distribution".
func heyOutcome(out string) (codes map[int]int, errors int) {
	codes = map[int]int{}
	for _, m := range heyStatusLine.FindAllStringSubmatch(out, -1) {
		code, _ := strconv.Atoi(m[1])
		n, _ := strconv.Atoi(m[2])
		codes[code] += n
	}
	if i := strings.Index(out, "Error distribution:"); i >= 0 {
		for _, m := range heyErrorLine.FindAllStringSubmatch(out[i:], -1) {
			n, _ := strconv.Atoi(m[1])
			errors += n
		}
	}
	return codes, errors
}

// A worker whose nginx exits is restarted by the kubelet, leaves the
// frontend's rotation while it is down, and serves again once ready; the
// farm answers throughout.
func TestACrashedWorkerRestartsAndTheFarmKeepsServing(t *testing.T) {
	t.Parallel() // it mostly waits: it runs beside the other waiting tests, after the rest
	ns := cluster.Namespace(t)
	cluster.Apply(t, ns, trafficFarm)
	cluster.WaitReady(t, ns, 3*time.Minute, "webfarm/traffic", "apppool/steady")
	url := cluster.ServiceURL(t, ns, "traffic-frontend") + "/"
	// A Ready farm may not be in kube-proxy's rules yet: serve once first.
	framework.ExpectBody(t, time.Minute, url, "steady traffic", "Host: traffic.example")
	selector := "app.kubernetes.io/instance=steady,app.kubernetes.io/name=webfarm-pool"
	victim := cluster.Pods(t, ns, selector)[0].Name
	restarts := func() string {
		return cluster.Run(t, "get", "pod", "-n", ns, victim, "-o", "jsonpath={.status.containerStatuses[0].restartCount}")
	}
	if got := restarts(); got != "0" {
		t.Fatalf("%s restarted %s times before the test", victim, got)
	}

	// nginx is PID 1 of its container: SIGTERM makes it exit at once, as a crash would.
	if _, err := cluster.Kubectl.Run(t.Context(), "exec", "-n", ns, victim, "-c", "nginx", "--", "bash", "-c", "kill -TERM 1"); err != nil {
		t.Logf("exec ended with the container: %v", err)
	}
	served, failed := 0, 0
	var failures []string
	framework.Eventually(t, 90*time.Second, func() error {
		for i := 0; i < 10; i++ {
			if r, err := framework.HTTPGet(url, "Host: traffic.example"); err == nil && r.Status == 200 {
				served++
			} else {
				failed++
				failures = append(failures, fmt.Sprintf("%d %q %v", r.Status, r.Body, err))
			}
		}
		if got := restarts(); got != "1" {
			return fmt.Errorf("%s restarted %s times, want 1", victim, got)
		}
		for _, p := range cluster.Pods(t, ns, selector) {
			if p.Name == victim && p.Ready != "True" {
				return fmt.Errorf("%s restarted but is not ready yet", victim)
			}
		}
		return nil
	})
	t.Logf("while %s crashed and restarted: %d requests served, %d failed", victim, served, failed)
	if failed > 0 {
		t.Errorf("%d of %d requests failed while one of two workers restarted, want none: %v", failed, served+failed, failures)
	}
	framework.Eventually(t, 30*time.Second, func() error { // back in the rotation
		for i := 0; i < 20; i++ {
			r, err := framework.HTTPGet(url, "Host: traffic.example")
			if err != nil {
				return err
			}
			if r.Header.Get(workerHeader) == victim {
				return nil
			}
		}
		return fmt.Errorf("20 requests and none reached the restarted %s", victim)
	})
}
