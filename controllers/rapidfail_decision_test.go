package controllers

import (
	"testing"
	"time"

	v1 "webfarm.dev/operator/api/v1alpha1"
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
