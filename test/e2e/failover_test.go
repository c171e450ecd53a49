//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"webfarm.dev/operator/test/e2e/framework"
)

// A pool of one worker that three failures within ten minutes stop.
var failoverFarm = testAppPool("brittle", 1, "rapidFailProtection: {maxFailures: 3, interval: 10m}") +
	oneRouteFarm("failover", "failover.example", "brittle")

// Rapid-fail protection's count survives a new leader: two failures seen
// by one leader, then the leader is deleted, and the third failure, seen by
// the standby that took over, stops the pool.
func TestARapidFailCountSurvivesAFailoverOfTheOperator(t *testing.T) {
	cluster.ScaleOperator(t, 2)
	t.Cleanup(func() { cluster.ScaleOperator(t, 1) })
	ns := cluster.Namespace(t)
	cluster.Apply(t, ns, failoverFarm)
	cluster.WaitReady(t, ns, 3*time.Minute, "webfarm/failover", "apppool/brittle")

	failures := func() string {
		return strings.TrimSpace(cluster.Run(t, "get", "apppool", "brittle", "-n", ns, "-o", "jsonpath={.status.phase} {.status.recentFailures}"))
	}
	crash := func() {
		t.Helper()
		var ip string
		framework.Eventually(t, 2*time.Minute, func() error {
			pods := cluster.Pods(t, ns, "app.kubernetes.io/instance=brittle,app.kubernetes.io/component=pool")
			if len(pods) != 1 || pods[0].IP == "" {
				return fmt.Errorf("brittle workers %v, want one with an address", pods)
			}
			if _, err := framework.HTTPGet("http://" + pods[0].IP + ":9000/healthz"); err != nil {
				return fmt.Errorf("worker not serving yet: %w", err)
			}
			ip = pods[0].IP
			return nil
		})
		_, _ = framework.HTTPGet("http://" + ip + ":9000/?exit=1") // the worker dies before answering
	}
	expect := func(want string) {
		t.Helper()
		framework.Eventually(t, 2*time.Minute, func() error {
			if got := failures(); got != want {
				return fmt.Errorf("phase and failures %q, want %q", got, want)
			}
			return nil
		})
	}

	crash()
	expect("Running 1")
	crash()
	expect("Running 2")

	leader := cluster.WaitLeader(t, time.Minute, func(framework.Leader) error { return nil })
	cluster.Run(t, "delete", "pod", "-n", cluster.Release.Namespace, leader.Pod, "--wait=false")
	next := cluster.WaitLeader(t, 2*time.Minute, func(l framework.Leader) error {
		if l.Pod == leader.Pod {
			return fmt.Errorf("the deleted leader %s still holds the lease", l.Pod)
		}
		return nil
	})
	t.Logf("%s took over from %s", next.Pod, leader.Pod)
	// The new leader decides the pool again (its first reconcile) and keeps the count.
	cluster.Run(t, "annotate", "apppool", "brittle", "-n", ns, "e2e.webfarm.dev/nudge=1", "--overwrite")
	expect("Running 2")

	crash()
	expect("Stopped 3")
}
