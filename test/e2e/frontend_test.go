//go:build e2e

package e2e

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"webfarm.dev/operator/test/e2e/framework"
)

// frontendChurn: under 200 requests/s (a new connection each), a frontend
// pod deleted and then a rollout of every frontend pod of farm "replacing"
// lose nothing. A leaving Envoy keeps serving while the Service's endpoints
// and the node's rules forget it, then stops.
func frontendChurn(t *testing.T, ns, front, host string) {
	selector := "app.kubernetes.io/component=frontend,app.kubernetes.io/instance=replacing"
	names := func() (ready int, all []string) {
		for _, p := range cluster.Pods(t, ns, selector) {
			all = append(all, p.Name)
			if p.Ready == "True" && !p.Deleting {
				ready++
			}
		}
		return ready, all
	}
	// replaced waits until none of the given pods is left and two frontends are Ready.
	replaced := func(step string, gone []string) {
		t.Helper()
		framework.EventuallyEvery(t, 3*time.Minute, time.Second, func() error {
			ready, all := names()
			for _, n := range all {
				if slices.Contains(gone, n) {
					return fmt.Errorf("%s: %s still there", step, n)
				}
			}
			if ready < 2 {
				return fmt.Errorf("%s: %d Ready frontends of %v", step, ready, all)
			}
			return nil
		})
	}

	load, loadStarted := startLoad(front+"/", 200, host), time.Now()
	defer load.stop()
	_, before := names()
	deleted := before[0]
	started := time.Now()
	t.Logf("frontend %s deleted %s after the load started", deleted, started.Sub(loadStarted).Round(time.Millisecond))
	cluster.Run(t, "delete", "pod", "-n", ns, deleted, "--wait=false")
	replaced("the deleted frontend", []string{deleted})
	deletion := time.Since(started)
	sentAtDeletion, failedAtDeletion := load.count()

	_, before = names()
	started = time.Now()
	t.Logf("frontends rolled %s after the load started", started.Sub(loadStarted).Round(time.Millisecond))
	cluster.Run(t, "rollout", "restart", "-n", ns, "deployment/replacing-frontend")
	replaced("the rollout", before)
	rollout := time.Since(started)
	sent, failures := load.stop()
	t.Logf("a frontend pod deleted: replaced in %s, %d requests sent, %d failed; a rollout of both: %s, %d requests in all, %d failed",
		deletion.Round(time.Second), sentAtDeletion, failedAtDeletion, rollout.Round(time.Second), sent, len(failures))
	if len(failures) > 0 {
		t.Errorf("%d of %d requests failed while frontends came and went (%s the load started), first: %s",
			len(failures), sent, load.failureWindow(loadStarted), failures[0])
	}
}
