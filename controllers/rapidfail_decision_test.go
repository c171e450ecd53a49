package controllers

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/cpu"
	"webfarm.dev/operator/internal/model"
)

func TestRapidFailDecision(t *testing.T) {
	on := model.RapidFail{Enabled: true, MaxFailures: 5, Interval: 5 * time.Minute}
	off := model.RapidFail{Enabled: false, MaxFailures: 5, Interval: 5 * time.Minute}
	running := v1.AppPoolStatus{Phase: v1.PoolRunning}
	stopped := v1.AppPoolStatus{Phase: v1.PoolStopped, ObservedRestart: "1"}
	for _, tt := range []struct {
		name                   string
		status                 v1.AppPoolStatus
		restart                string
		rf                     model.RapidFail
		failures               int
		wantStopped, wantStart bool
	}{
		{"a pool with fewer failures than the maximum keeps running", running, "", on, 4, false, false},
		{"the maximum number of failures within the interval stops the pool", running, "", on, 5, true, false},
		{"with protection off, failures never stop the pool", running, "", off, 50, false, false},
		{"a stopped pool stays stopped without new failures", stopped, "1", on, 0, true, false},
		{"a stopped pool stays stopped when protection is turned off", stopped, "1", off, 0, true, false},
		{"a new restart value starts a stopped pool", stopped, "2", on, 5, false, true},
		{"a restart value already acted on changes nothing", running, "", on, 0, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stopped, restarted := rapidFailDecision(tt.status, tt.restart, tt.rf, tt.failures)
			if stopped != tt.wantStopped || restarted != tt.wantStart {
				t.Errorf("stopped, restarted = %v, %v; want %v, %v", stopped, restarted, tt.wantStopped, tt.wantStart)
			}
		})
	}
}

func TestErrorBurst(t *testing.T) {
	for _, tt := range []struct {
		name   string
		totals poolTotals
		want   bool
	}{
		{"ten 5xx out of twenty answers are a burst", poolTotals{responses5xx: 10, requests: 20}, true},
		{"nine 5xx are too few to count", poolTotals{responses5xx: 9, requests: 9}, false},
		{"a few 5xx among many good answers are not a burst", poolTotals{responses5xx: 40, requests: 1000}, false},
		{"the frontend's own 503s for a full queue are not the workers' errors", poolTotals{responses5xx: 30, requests: 40, rejected: 25}, false},
		{"worker errors beside queue rejections still count", poolTotals{responses5xx: 40, requests: 50, rejected: 20}, true},
		{"requests refused for waiting past the queue timeout are not the workers' errors", poolTotals{responses5xx: 30, requests: 40, timedOut: 30}, false},
		{"an overloaded pool refusing both ways is not failing", poolTotals{responses5xx: 60, requests: 70, rejected: 30, timedOut: 30}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, got := errorBurst(&tt.totals, 5*time.Second, time.Now())
			if got != tt.want {
				t.Errorf("errorBurst(%+v) = %v, want %v", tt.totals, got, tt.want)
			}
		})
	}
}

func TestApplyCPULimit(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 4, 0, 0, 0, time.UTC)
	over := &cpu.Tracker{}
	over.Observe("web/shop", 90, 50, 10*time.Second, t0)
	over.Observe("web/shop", 90, 50, 10*time.Second, t0.Add(10*time.Second))
	limit := func(action string) model.Pool {
		return model.Pool{CPULimit: &model.CPULimit{Percent: 50, Interval: 10 * time.Second, Action: action}}
	}
	for _, tt := range []struct {
		name          string
		pool          model.Pool
		readings      *cpu.Tracker
		wantCondition metav1.ConditionStatus // "" for none
		wantStop      bool
	}{
		{"Report over the limit sets the condition and keeps the pool", limit(model.CPUReport), over, metav1.ConditionTrue, false},
		{"Shutdown over the limit stops the pool", limit(model.CPUShutdown), over, metav1.ConditionTrue, true},
		{"a pool within its limit has the condition False", limit(model.CPUShutdown), &cpu.Tracker{}, metav1.ConditionFalse, false},
		{"Throttle needs no monitor and no condition", limit(model.CPUThrottle), over, "", false},
		{"a pool without a cpuLimit has no condition", model.Pool{}, over, "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pool := &v1.AppPool{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "shop"}}
			stop := applyCPULimit(pool, tt.pool, tt.readings)
			var got metav1.ConditionStatus
			if c := meta.FindStatusCondition(pool.Status.Conditions, v1.ConditionCPULimitExceeded); c != nil {
				got = c.Status
			}
			if got != tt.wantCondition || (stop != nil) != tt.wantStop {
				t.Errorf("condition %q, stop %v; want %q, %v", got, stop, tt.wantCondition, tt.wantStop)
			}
		})
	}
}
