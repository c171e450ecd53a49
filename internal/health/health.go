// Package health decides from pod updates when a pool's workers fail, and
// counts failures for rapid-fail protection (IIS: a pool whose worker
// processes fail maxFailures times within an interval is stopped). Pure: the
// controllers feed it pods and clock readings.
package health

import (
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Failure is one worker failure.
type Failure struct {
	At     time.Time
	Pod    string
	Reason string // what a person reads: "container app exited with code 1"
}

// PodFailures are the failures an update of a worker pod shows: a container
// that stopped running (a crash, an exit, a failed liveness check), counted
// when the kubelet reports it stopped rather than when it restarts it after a
// back-off; or a running worker whose health check started failing. A pod
// being deleted (scale-in, rolling update) does not fail.
func PodFailures(old, updated *corev1.Pod, at time.Time) []Failure {
	if updated.DeletionTimestamp != nil {
		return nil
	}
	var out []Failure
	before := containerStatuses(old)
	for _, c := range updated.Status.ContainerStatuses {
		prev, seen := before[c.Name]
		if seen && stoppedRunning(prev, c) {
			out = append(out, Failure{At: at, Pod: updated.Name, Reason: exitReason(c)})
		}
	}
	if len(out) == 0 && PodReady(old) && !PodReady(updated) && allRunning(updated) {
		out = append(out, Failure{At: at, Pod: updated.Name, Reason: "health check failing"})
	}
	return out
}

// stoppedRunning: the container ran and now does not, or it ran and runs
// again with a higher restart count (it stopped and restarted between two
// reports).
func stoppedRunning(before, after corev1.ContainerStatus) bool {
	if before.State.Running == nil {
		return false
	}
	return after.State.Running == nil || after.RestartCount > before.RestartCount
}

func containerStatuses(p *corev1.Pod) map[string]corev1.ContainerStatus {
	m := make(map[string]corev1.ContainerStatus, len(p.Status.ContainerStatuses))
	for _, c := range p.Status.ContainerStatuses {
		m[c.Name] = c
	}
	return m
}

func exitReason(c corev1.ContainerStatus) string {
	t := c.State.Terminated
	if t == nil {
		t = c.LastTerminationState.Terminated
	}
	if t == nil {
		return fmt.Sprintf("container %s stopped", c.Name)
	}
	if t.Reason != "" && t.Reason != "Error" && t.Reason != "Completed" {
		return fmt.Sprintf("container %s stopped: %s (exit code %d)", c.Name, t.Reason, t.ExitCode)
	}
	return fmt.Sprintf("container %s exited with code %d", c.Name, t.ExitCode)
}

// PodReady is the pod's Ready condition.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// allRunning: every container runs, so a lost readiness is the health check's
// verdict rather than a crash (which the restart count reports).
func allRunning(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.ContainerStatuses {
		if c.State.Running == nil {
			return false
		}
	}
	return true
}

// Log remembers recent failures per pool. Safe for concurrent use. Kept in
// memory: after an operator restart counting starts again (a stopped pool
// stays stopped: that is in its status).
type Log struct {
	mu       sync.Mutex
	failures map[string][]Failure // pool key -> failures, oldest first
}

// maxKept bounds the failures kept per pool (rapid-fail protection counts at
// most maxFailures, which the API bounds to 10,000).
const maxKept = 10000

// Add records a failure of a pool's worker.
func (l *Log) Add(pool string, f Failure) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failures == nil {
		l.failures = map[string][]Failure{}
	}
	l.failures[pool] = append(l.failures[pool], f)
	if fs := l.failures[pool]; len(fs) > maxKept {
		l.failures[pool] = fs[len(fs)-maxKept:]
	}
}

// Recent returns a pool's failures in (now - interval, now], oldest first,
// and forgets older ones.
func (l *Log) Recent(pool string, now time.Time, interval time.Duration) []Failure {
	l.mu.Lock()
	defer l.mu.Unlock()
	fs := l.failures[pool]
	i := 0
	for i < len(fs) && !fs[i].At.After(now.Add(-interval)) {
		i++
	}
	fs = fs[i:]
	if len(fs) == 0 {
		delete(l.failures, pool)
		return nil
	}
	l.failures[pool] = fs
	return append([]Failure(nil), fs...)
}

// Forget drops a pool's failures (on restart or deletion).
func (l *Log) Forget(pool string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.failures, pool)
}
