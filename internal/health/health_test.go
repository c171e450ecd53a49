package health

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)

// worker is a pool pod with an nginx and an app container; a stopped app
// has just exited with code 1.
func worker(ready bool, appRestarts int32, appRunning bool) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	app := corev1.ContainerStatus{Name: "app", RestartCount: appRestarts}
	if appRunning {
		app.State.Running = &corev1.ContainerStateRunning{}
	} else {
		app.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}
	}
	if appRestarts > 0 {
		app.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "shop-pool-1"},
		Status: corev1.PodStatus{
			Phase:      corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}},
			ContainerStatuses: []corev1.ContainerStatus{
				{Name: "nginx", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
				app,
			},
		},
	}
}

func TestPodFailures(t *testing.T) {
	deleting := worker(false, 0, true)
	deleting.DeletionTimestamp = &metav1.Time{Time: t0}
	for _, tt := range []struct {
		name     string
		old, new *corev1.Pod
		want     []string
	}{
		{"a container that stops running is a failure, with its exit code", worker(true, 0, true), worker(false, 0, false), []string{"container app exited with code 1"}},
		{"a crash and restart between two reports is one failure", worker(true, 0, true), worker(true, 1, true), []string{"container app exited with code 1"}},
		{"the restart after a back-off is not a second failure", worker(false, 0, false), worker(false, 1, true), nil},
		{"a crash counts once: the readiness it takes away is not a second failure", worker(true, 0, true), worker(false, 1, true), []string{"container app exited with code 1"}},
		{"a running worker that turns unready failed its health check", worker(true, 0, true), worker(false, 0, true), []string{"health check failing"}},
		{"a worker that was never ready has not failed yet", worker(false, 0, true), worker(false, 0, true), nil},
		{"a worker becoming ready is no failure", worker(false, 0, true), worker(true, 0, true), nil},
		{"a pod being deleted does not fail", worker(true, 0, true), deleting, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := PodFailures(tt.old, tt.new, t0)
			if len(got) != len(tt.want) {
				t.Fatalf("failures %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i].Reason != tt.want[i] || got[i].Pod != "shop-pool-1" || !got[i].At.Equal(t0) {
					t.Errorf("failure %d: %+v, want reason %q", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestLogKeepsOnlyFailuresWithinTheInterval(t *testing.T) {
	var l Log
	for i := range 5 {
		l.Add("web/shop", Failure{At: t0.Add(time.Duration(i) * time.Minute)})
	}
	l.Add("web/blog", Failure{At: t0})
	if got := len(l.Recent("web/shop", t0.Add(4*time.Minute), 5*time.Minute)); got != 5 {
		t.Errorf("failures within 5 min: %d, want 5", got)
	}
	if got := len(l.Recent("web/shop", t0.Add(6*time.Minute), 5*time.Minute)); got != 3 {
		t.Errorf("failures in the 5 min before minute 6: %d, want 3 (minutes 2, 3 and 4)", got)
	}
	l.Forget("web/shop")
	if got := len(l.Recent("web/shop", t0.Add(6*time.Minute), time.Hour)); got != 0 {
		t.Errorf("failures after Forget: %d, want 0", got)
	}
	if got := len(l.Recent("web/blog", t0, time.Minute)); got != 1 {
		t.Errorf("another pool's failures: %d, want 1", got)
	}
}

// livenessKilled is the worker after the kubelet killed its hung app for a
// failed liveness check (a ping unanswered): SIGKILL, exit code 137, reason
// Error. running: the kubelet has restarted it since (restartCount up).
func livenessKilled(running bool) *corev1.Pod {
	p := worker(false, 1, running)
	killed := &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "Error"}
	app := &p.Status.ContainerStatuses[1]
	app.LastTerminationState.Terminated = killed
	if !running {
		app.State.Terminated, app.RestartCount = killed, 0
	}
	return p
}

// A hung worker the kubelet restarts counts for rapid-fail protection as a
// crash does, whether the kill or the restart is the next report.
func TestALivenessKillIsAWorkerFailure(t *testing.T) {
	for _, tt := range []struct {
		name     string
		old, new *corev1.Pod
	}{
		{"the killed app is reported terminated", worker(true, 0, true), livenessKilled(false)},
		{"the killed app is reported running again with a higher restart count", worker(true, 0, true), livenessKilled(true)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := PodFailures(tt.old, tt.new, t0)
			if len(got) != 1 || got[0].Reason != "container app exited with code 137" {
				t.Errorf("failures %v, want one: container app exited with code 137", got)
			}
		})
	}
}
