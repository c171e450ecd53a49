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

// A pool of one worker whose failures count for ten minutes.
var failoverFarm = testAppPool("brittle", 1, "rapidFailProtection: {maxFailures: 10, interval: 10m}") +
	oneRouteFarm("failover", "failover.example", "brittle")

// Rapid-fail protection's count survives a new leader: the failures one
// leader counted are still counted after it is deleted, and the standby that
// took over counts the next failure on top of them.
func TestARapidFailCountSurvivesAFailoverOfTheOperator(t *testing.T) {
	cluster.ScaleOperator(t, 2)
	t.Cleanup(func() { cluster.ScaleOperator(t, 1) })
	ns := cluster.Namespace(t)
	cluster.Apply(t, ns, failoverFarm)
	cluster.WaitReady(t, ns, 3*time.Minute, "webfarm/failover", "apppool/brittle")

	count := func() (string, int) {
		f := strings.Fields(cluster.Run(t, "get", "apppool", "brittle", "-n", ns, "-o", "jsonpath={.status.phase} {.status.recentFailures}"))
		if len(f) != 2 {
			return "", -1
		}
		n, _ := strconv.Atoi(f[1])
		return f[0], n
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
	// expect waits for a running pool whose count satisfies ok, and returns it.
	expect := func(what string, ok func(int) bool) int {
		t.Helper()
		var n int
		framework.Eventually(t, 2*time.Minute, func() error {
			phase, got := count()
			if phase != "Running" || !ok(got) {
				return fmt.Errorf("phase %s with %d failures, want Running with %s", phase, got, what)
			}
			n = got
			return nil
		})
		return n
	}

	crash()
	expect("at least 1", func(n int) bool { return n >= 1 })
	crash()
	expect("at least 2", func(n int) bool { return n >= 2 })
	// Once the worker is Ready again nothing more is counted for this crash.
	cluster.WaitReady(t, ns, 2*time.Minute, "apppool/brittle")
	_, before := count()

	leader := cluster.WaitLeader(t, time.Minute, func(framework.Leader) error { return nil })
	cluster.Run(t, "delete", "pod", "-n", cluster.Release.Namespace, leader.Pod, "--wait=false")
	next := cluster.WaitLeader(t, 2*time.Minute, func(l framework.Leader) error {
		if l.Pod == leader.Pod {
			return fmt.Errorf("the deleted leader %s still holds the lease", l.Pod)
		}
		return nil
	})
	t.Logf("%s took over from %s with %d failures counted", next.Pod, leader.Pod, before)
	// The new leader decides the pool again (a change of spec it must
	// observe) and keeps the count.
	cluster.Run(t, "patch", "apppool", "brittle", "-n", ns, "--type", "merge", "-p", `{"spec":{"rapidFailProtection":{"interval":"11m"}}}`)
	framework.Eventually(t, time.Minute, func() error {
		got := cluster.Run(t, "get", "apppool", "brittle", "-n", ns, "-o", "jsonpath={.metadata.generation} {.status.observedGeneration}")
		if f := strings.Fields(got); len(f) != 2 || f[0] != f[1] {
			return fmt.Errorf("generation and observedGeneration %q: the new leader has not decided yet", got)
		}
		return nil
	})
	if _, n := count(); n != before {
		t.Errorf("the new leader counts %d failures, the old one %d", n, before)
	}

	crash()
	after := expect(fmt.Sprintf("more than %d", before), func(n int) bool { return n > before })
	t.Logf("the next crash, seen by the new leader, brought the count from %d to %d", before, after)
}
