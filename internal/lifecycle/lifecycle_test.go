package lifecycle

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/autoscale"
	"webfarm.dev/operator/internal/cpu"
	"webfarm.dev/operator/internal/health"
	"webfarm.dev/operator/internal/model"
)

// now is the injected clock of every decision here.
var now = time.Date(2026, 11, 22, 18, 0, 0, 0, time.UTC)

func failures(n int) []health.Failure {
	out := make([]health.Failure, n)
	for i := range out {
		out[i] = health.Failure{At: now.Add(time.Duration(i-n) * time.Second), Pod: fmt.Sprintf("shop-pool-%d", i), Reason: "container app exited with code 1"}
	}
	return out
}

func TestRapidFailProtection(t *testing.T) {
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
			d := Decide(Input{Pool: model.Pool{Name: "shop", RapidFail: tt.rf, Replicas: ptr.To[int32](2)}, Status: tt.status,
				Restart: tt.restart, Observed: Observations{Failures: failures(tt.failures)}, Now: now})
			if (d.Stop != nil) != tt.wantStopped || d.Restarted != tt.wantStart {
				t.Errorf("stopped, restarted = %v, %v; want %v, %v", d.Stop != nil, d.Restarted, tt.wantStopped, tt.wantStart)
			}
			if tt.wantStopped && (d.Replicas != 0 || d.Status.Phase != v1.PoolStopped || !meta.IsStatusConditionTrue(d.Status.Conditions, v1.ConditionStopped)) {
				t.Errorf("a stopped pool: %d workers, phase %s, conditions %v", d.Replicas, d.Status.Phase, d.Status.Conditions)
			}
		})
	}
}

func TestTheCPUMonitor(t *testing.T) {
	over := cpu.Reading{Percent: 90, Over: true, OverSince: now.Add(-10 * time.Second)}
	limit := func(action string) model.Pool {
		return model.Pool{Name: "shop", Replicas: ptr.To[int32](2), CPULimit: &model.CPULimit{Percent: 50, Interval: 10 * time.Second, Action: action}}
	}
	for _, tt := range []struct {
		name          string
		pool          model.Pool
		reading       cpu.Reading
		wantCondition metav1.ConditionStatus // "" for none
		wantStop      bool
	}{
		{"Report over the limit sets the condition and keeps the pool", limit(model.CPUReport), over, metav1.ConditionTrue, false},
		{"Shutdown over the limit stops the pool", limit(model.CPUShutdown), over, metav1.ConditionTrue, true},
		{"a pool within its limit has the condition False", limit(model.CPUShutdown), cpu.Reading{}, metav1.ConditionFalse, false},
		{"Throttle needs no monitor and no condition", limit(model.CPUThrottle), over, "", false},
		{"a pool without a cpuLimit has no condition", model.Pool{Name: "shop", Replicas: ptr.To[int32](2)}, over, "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(Input{Pool: tt.pool, Observed: Observations{CPU: tt.reading, CPUMonitored: true}, Now: now})
			var got metav1.ConditionStatus
			if c := meta.FindStatusCondition(d.Status.Conditions, v1.ConditionCPULimitExceeded); c != nil {
				got = c.Status
			}
			if got != tt.wantCondition || (d.Stop != nil) != tt.wantStop {
				t.Errorf("condition %q, stop %v; want %q, %v", got, d.Stop, tt.wantCondition, tt.wantStop)
			}
		})
	}
}

func TestTheIdleTimeout(t *testing.T) {
	idleAt := &metav1.Time{Time: now.Add(-time.Hour)}
	pool := model.Pool{Name: "shop", Replicas: ptr.To[int32](2), IdleTimeout: 20 * time.Minute, OnDemandStart: true}
	never := pool
	never.IdleTimeout = 0
	for _, tt := range []struct {
		name        string
		pool        model.Pool
		status      v1.AppPoolStatus
		startAsked  time.Time
		lastActive  time.Time
		wantIdle    bool
		wantEvent   string
		wantRecheck time.Duration
	}{
		{"a pool with requests 5 minutes ago stays up and looks again when its 20 minutes would pass", pool, v1.AppPoolStatus{}, time.Time{}, now.Add(-5 * time.Minute), false, "", 15 * time.Minute},
		{"a pool without requests for 20 minutes goes idle", pool, v1.AppPoolStatus{}, time.Time{}, now.Add(-20 * time.Minute), true, v1.ReasonIdled, 0},
		{"an idle pool stays idle until a start is asked", pool, v1.AppPoolStatus{IdleSince: idleAt}, time.Time{}, now.Add(-2 * time.Hour), true, "", 0},
		{"a start asked before the pool went idle does not wake it", pool, v1.AppPoolStatus{IdleSince: idleAt}, idleAt.Add(-time.Minute), now.Add(-2 * time.Hour), true, "", 0},
		{"a start asked after the pool went idle starts it", pool, v1.AppPoolStatus{IdleSince: idleAt}, now.Add(-time.Second), now.Add(-2 * time.Hour), false, v1.ReasonStartedOnDemand, 0},
		{"a pool with idle timeout 0s never goes idle", never, v1.AppPoolStatus{}, time.Time{}, now.Add(-48 * time.Hour), false, "", 0},
		{"turning the idle timeout off starts an idle pool", never, v1.AppPoolStatus{IdleSince: idleAt}, time.Time{}, now.Add(-48 * time.Hour), false, "", 0},
		{"a stopped pool is not idle: its restart decides", pool, v1.AppPoolStatus{Phase: v1.PoolStopped, IdleSince: idleAt}, time.Time{}, now.Add(-48 * time.Hour), false, "", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(Input{Pool: tt.pool, Status: tt.status, StartAsked: tt.startAsked,
				Observed: Observations{LastActive: tt.lastActive, ActivityKnown: true}, Now: now})
			var event string
			if len(d.Events) > 0 {
				event = d.Events[0].Reason
			}
			if (d.Status.IdleSince != nil) != tt.wantIdle || d.Idle != tt.wantIdle || event != tt.wantEvent || d.Recheck != tt.wantRecheck {
				t.Errorf("idle %v, event %q, recheck %s; want %v, %q, %s", d.Status.IdleSince != nil, event, d.Recheck, tt.wantIdle, tt.wantEvent, tt.wantRecheck)
			}
			if tt.wantIdle && d.Replicas != 0 {
				t.Errorf("an idle pool runs %d workers", d.Replicas)
			}
		})
	}
}

func TestAutoscaledReplicas(t *testing.T) {
	pool := model.Pool{Name: "shop", Replicas: ptr.To[int32](2), Autoscaling: &model.Autoscaling{MinReplicas: 2, MaxReplicas: 8}}
	decided := &Scale{Decision: autoscale.Decision{Replicas: 5, Reason: "150 req/s need 5 workers"}, At: now}
	for _, tt := range []struct {
		name      string
		current   *int32
		scale     *Scale
		want      int32
		wantEvent string
	}{
		{"a new pool starts at its minimum", nil, nil, 2, ""},
		{"a pool without a decision yet keeps its workers (a new leader)", ptr.To[int32](6), nil, 6, ""},
		{"a pool without a decision comes into its bounds from below", ptr.To[int32](1), nil, 2, ""},
		{"a pool without a decision comes into its bounds from above", ptr.To[int32](12), nil, 8, ""},
		{"a decision sets the count", ptr.To[int32](3), decided, 5, v1.ReasonScaledOut},
		{"a decision below the current count scales in", ptr.To[int32](7), decided, 5, v1.ReasonScaledIn},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(Input{Pool: pool, Observed: Observations{CurrentReplicas: tt.current, Scale: tt.scale}, Now: now})
			var event string
			if len(d.Events) > 0 {
				event = d.Events[0].Reason
			}
			if d.Replicas != tt.want || event != tt.wantEvent {
				t.Errorf("%d replicas, event %q; want %d, %q", d.Replicas, event, tt.want, tt.wantEvent)
			}
		})
	}
}

// The chain: a policy that settles the decision keeps the later ones from
// changing it.
func TestTheChainInTheOrderIISAppliesIt(t *testing.T) {
	autoscaled := model.Pool{Name: "shop", Replicas: ptr.To[int32](2), RapidFail: model.RapidFail{Enabled: true, MaxFailures: 5, Interval: time.Minute},
		Autoscaling: &model.Autoscaling{MinReplicas: 2, MaxReplicas: 8}, IdleTimeout: 20 * time.Minute, OnDemandStart: true}
	scaleOut := &Scale{Decision: autoscale.Decision{Replicas: 6}, At: now}
	for _, tt := range []struct {
		name         string
		in           Input
		wantReplicas int32
		wantStop     string
		wantIdle     bool
	}{
		{"a pool stopped by rapid-fail runs no workers whatever the autoscaler recommends",
			Input{Pool: autoscaled, Observed: Observations{Failures: failures(5), Scale: scaleOut}}, 0, v1.ReasonRapidFailProtection, false},
		{"a pool stopped by the CPU monitor stays stopped with its reason once the CPU falls",
			Input{Pool: autoscaled, Status: v1.AppPoolStatus{Phase: v1.PoolStopped, Conditions: []metav1.Condition{{Type: v1.ConditionStopped,
				Status: metav1.ConditionTrue, Reason: v1.ReasonCPULimitExceeded, Message: "stopped by the CPU monitor"}}}}, 0, v1.ReasonCPULimitExceeded, false},
		{"a restart starts a stopped pool and forgets the failures before it",
			Input{Pool: autoscaled, Restart: "2", Status: v1.AppPoolStatus{Phase: v1.PoolStopped, ObservedRestart: "1"},
				Observed: Observations{Failures: failures(9), Scale: scaleOut}}, 6, "", false},
		{"an idle pool runs no workers whatever the autoscaler recommends",
			Input{Pool: autoscaled, Observed: Observations{ActivityKnown: true, LastActive: now.Add(-time.Hour), Scale: scaleOut}}, 0, "", true},
		{"a busy autoscaled pool runs what the autoscaler recommends",
			Input{Pool: autoscaled, Observed: Observations{ActivityKnown: true, LastActive: now, Scale: scaleOut}}, 6, "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.Now = now
			d := Decide(tt.in)
			stop := ""
			if d.Stop != nil {
				stop = d.Stop.Reason
			}
			if d.Replicas != tt.wantReplicas || stop != tt.wantStop || d.Idle != tt.wantIdle {
				t.Errorf("%d workers, stop %q, idle %v; want %d, %q, %v", d.Replicas, stop, d.Idle, tt.wantReplicas, tt.wantStop, tt.wantIdle)
			}
			if rt := d.Runtime(); (d.Stop != nil) != rt.Stopped || d.Idle != rt.Idle {
				t.Errorf("runtime %+v disagrees with the decision", rt)
			}
		})
	}
}

func TestTheDecisionLeavesItsInputAlone(t *testing.T) {
	status := v1.AppPoolStatus{Phase: v1.PoolRunning, Conditions: []metav1.Condition{{Type: v1.ConditionStopped, Status: metav1.ConditionFalse}}}
	before := status.DeepCopy()
	Decide(Input{Pool: model.Pool{Name: "shop", RapidFail: model.RapidFail{Enabled: true, MaxFailures: 1}}, Status: status,
		Observed: Observations{Failures: failures(1)}, Now: now})
	if len(status.Conditions) != len(before.Conditions) || status.Phase != before.Phase || status.Conditions[0] != before.Conditions[0] {
		t.Errorf("the input's status changed: %+v, was %+v", status, before)
	}
}

func TestAnAdministratorStopsAndStartsAPool(t *testing.T) {
	pool := model.Pool{Name: "shop", Replicas: ptr.To[int32](2), RapidFail: model.RapidFail{Enabled: true, MaxFailures: 5, Interval: time.Minute}}
	stoppedPool := pool
	stoppedPool.AdministratorStopped = true
	adminStopped := v1.AppPoolStatus{Phase: v1.PoolStopped, Conditions: []metav1.Condition{{Type: v1.ConditionStopped,
		Status: metav1.ConditionTrue, Reason: v1.ReasonStoppedByAdministrator}}}
	rapidFailStopped := v1.AppPoolStatus{Phase: v1.PoolStopped, Conditions: []metav1.Condition{{Type: v1.ConditionStopped,
		Status: metav1.ConditionTrue, Reason: v1.ReasonRapidFailProtection}}}
	for _, tt := range []struct {
		name         string
		in           Input
		wantStop     string
		wantReplicas int32
		wantEvent    string
	}{
		{"state Stopped stops a running pool, with an event", Input{Pool: stoppedPool, Status: v1.AppPoolStatus{Phase: v1.PoolRunning}},
			v1.ReasonStoppedByAdministrator, 0, v1.ReasonStoppedByAdministrator},
		{"a pool its administrator stopped stays stopped, without another event", Input{Pool: stoppedPool, Status: adminStopped}, v1.ReasonStoppedByAdministrator, 0, ""},
		{"a restart annotation does not start a pool its administrator stopped", Input{Pool: stoppedPool, Status: adminStopped, Restart: "9"},
			v1.ReasonStoppedByAdministrator, 0, ""},
		{"state Stopped takes over from rapid-fail protection", Input{Pool: stoppedPool, Status: rapidFailStopped}, v1.ReasonStoppedByAdministrator, 0, v1.ReasonStoppedByAdministrator},
		{"state Started starts a pool its administrator stopped, its old failures forgotten", Input{Pool: pool, Status: adminStopped,
			Observed: Observations{Failures: failures(7)}}, "", 2, v1.ReasonStartedByAdministrator},
		{"state Started does not start a pool rapid-fail protection stopped", Input{Pool: pool, Status: rapidFailStopped}, v1.ReasonRapidFailProtection, 0, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.Now = now
			d := Decide(tt.in)
			stop, event := "", ""
			if d.Stop != nil {
				stop = d.Stop.Reason
			}
			if len(d.Events) > 0 {
				event = d.Events[0].Reason
			}
			if stop != tt.wantStop || d.Replicas != tt.wantReplicas || event != tt.wantEvent {
				t.Errorf("stop %q, %d workers, event %q; want %q, %d, %q", stop, d.Replicas, event, tt.wantStop, tt.wantReplicas, tt.wantEvent)
			}
		})
	}
}

func recorded(fs []health.Failure) []metav1.MicroTime {
	out := make([]metav1.MicroTime, len(fs))
	for i, f := range fs {
		out[i] = metav1.NewMicroTime(f.At)
	}
	return out
}

// Rapid-fail's count survives a new leader: the failure times are in the
// pool's status, and the new leader counts them with those it sees.
func TestTheFailureCountSurvivesANewLeader(t *testing.T) {
	pool := model.Pool{Name: "shop", Replicas: ptr.To[int32](2), RapidFail: model.RapidFail{Enabled: true, MaxFailures: 5, Interval: 5 * time.Minute}}
	four := failures(4)
	fifth := []health.Failure{{At: now, Pod: "shop-pool-9", Reason: "container app exited with code 1"}}
	old := []health.Failure{{At: now.Add(-10 * time.Minute)}, {At: now.Add(-9 * time.Minute)}}
	for _, tt := range []struct {
		name     string
		recorded []metav1.MicroTime
		observed []health.Failure
		want     int32
		stopped  bool
	}{
		{"a new leader that saw one failure counts the four its predecessor recorded, and stops the pool", recorded(four), fifth, 5, true},
		{"a failure both recorded and observed counts once", recorded(four), four, 4, false},
		{"recorded failures older than the interval no longer count", recorded(old), fifth, 1, false},
		{"a new leader that saw none keeps the recorded count", recorded(four), nil, 4, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(Input{Pool: pool, Status: v1.AppPoolStatus{Phase: v1.PoolRunning, RecentFailureTimes: tt.recorded},
				Observed: Observations{Failures: tt.observed}, Now: now})
			if d.Status.RecentFailures != tt.want || (d.Stop != nil) != tt.stopped || len(d.Status.RecentFailureTimes) != int(tt.want) {
				t.Errorf("%d failures (%d times recorded), stopped %v; want %d, %v", d.Status.RecentFailures, len(d.Status.RecentFailureTimes), d.Stop != nil, tt.want, tt.stopped)
			}
		})
	}
	t.Run("a restart forgets the recorded failures", func(t *testing.T) {
		d := Decide(Input{Pool: pool, Restart: "2", Status: v1.AppPoolStatus{Phase: v1.PoolStopped, ObservedRestart: "1", RecentFailureTimes: recorded(four)}, Now: now})
		if d.Stop != nil || d.Status.RecentFailures != 0 || d.Status.RecentFailureTimes != nil {
			t.Errorf("stopped %v, %d failures, times %v; want running with none", d.Stop != nil, d.Status.RecentFailures, d.Status.RecentFailureTimes)
		}
	})
}

func TestAPoolCannotStartWhenItsStatusSaysSoForItsGeneration(t *testing.T) {
	ready := func(status metav1.ConditionStatus, reason string, generation int64) []metav1.Condition {
		return []metav1.Condition{{Type: v1.ConditionReady, Status: status, Reason: reason, ObservedGeneration: generation}}
	}
	idleSince := metav1.NewTime(now)
	for _, tt := range []struct {
		name   string
		status v1.AppPoolStatus
		want   bool
	}{
		{"a pool whose image cannot be pulled cannot start", v1.AppPoolStatus{Phase: v1.PoolRunning, Conditions: ready(metav1.ConditionFalse, v1.ReasonImagePullFailed, 3)}, true},
		{"a pool whose workers fail their startup check cannot start", v1.AppPoolStatus{Phase: v1.PoolRunning, Conditions: ready(metav1.ConditionFalse, v1.ReasonStartupCheckFailed, 3)}, true},
		{"a pool without room on the nodes cannot start", v1.AppPoolStatus{Phase: v1.PoolRunning, Conditions: ready(metav1.ConditionFalse, v1.ReasonUnschedulable, 3)}, true},
		{"a pool held for a missing ConfigMap cannot start", v1.AppPoolStatus{Phase: v1.PoolPending, Conditions: ready(metav1.ConditionFalse, v1.ReasonInvalidReference, 3)}, true},
		{"a pool that is still starting may start", v1.AppPoolStatus{Phase: v1.PoolRunning, Conditions: ready(metav1.ConditionFalse, v1.ReasonProgressing, 3)}, false},
		{"a pool whose rollout stalled keeps its old workers", v1.AppPoolStatus{Phase: v1.PoolRunning, Conditions: ready(metav1.ConditionFalse, v1.ReasonRolloutStalled, 3)}, false},
		{"a cause found for an earlier generation no longer counts after an edit", v1.AppPoolStatus{Phase: v1.PoolRunning, Conditions: ready(metav1.ConditionFalse, v1.ReasonImagePullFailed, 2)}, false},
		{"an idle pool is started by its next request, whatever its last cause", v1.AppPoolStatus{Phase: v1.PoolIdle, IdleSince: &idleSince, Conditions: ready(metav1.ConditionFalse, v1.ReasonStartupCheckFailed, 3)}, false},
		{"a stopped pool is stopped, not unable to start", v1.AppPoolStatus{Phase: v1.PoolStopped, Conditions: ready(metav1.ConditionFalse, v1.ReasonImagePullFailed, 3)}, false},
		{"a pool without a Ready condition yet may start", v1.AppPoolStatus{}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := CannotStart(3, tt.status); got != tt.want {
				t.Errorf("CannotStart = %v, want %v", got, tt.want)
			}
		})
	}
}

// A pool of fixed size shows the autoscaler's figures and recommendation in
// its status, as a report: its workers stay at spec.replicas.
func TestAFixedPoolReportsItsCapacityAndKeepsItsReplicas(t *testing.T) {
	pool := model.Pool{Name: "www", Replicas: ptr.To[int32](2)}
	measured := &Scale{Decision: autoscale.Decision{Replicas: 2, Recommended: 6, Reason: "a report only: keeping its fixed 2",
		Measured: &autoscale.Measurement{RequestsPerSecond: 100, CPUCores: 0.8, MegacyclesPerRequest: 16, RequiredMHz: 5333.3}}, At: now}
	unavailable := &Scale{Decision: autoscale.Decision{Replicas: 2, Recommended: 2, MetricsUnavailable: true, Reason: "metrics unavailable (no series)"}, At: now}
	for _, tt := range []struct {
		name          string
		scale         *Scale
		wantFigures   string
		wantCondition metav1.ConditionStatus // "" for none
	}{
		{"a measured fixed pool shows its figures and the recommendation, and keeps 2 workers", measured,
			"100.0 req/s, 0.800 cores, 16.000 Mc/req, 5333 MHz, 6 recommended", metav1.ConditionTrue},
		{"a fixed pool the autoscaler cannot measure shows no figures and says why", unavailable, "", metav1.ConditionFalse},
		{"a fixed pool not measured yet shows nothing", nil, "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(Input{Pool: pool, Observed: Observations{CurrentReplicas: ptr.To[int32](2), Scale: tt.scale}, Now: now})
			if d.Replicas != 2 || len(d.Events) != 0 {
				t.Errorf("%d replicas, events %v; want the fixed 2 and no event", d.Replicas, d.Events)
			}
			c := d.Status.Capacity
			got := ""
			if c.RecommendedReplicas != nil {
				got = fmt.Sprintf("%s req/s, %s cores, %s Mc/req, %s MHz, %d recommended", c.RequestsPerSecond, c.CPUCores, c.MegacyclesPerRequest, c.RequiredMegahertz, *c.RecommendedReplicas)
			}
			if got != tt.wantFigures || c.LastScaleTime != nil {
				t.Errorf("status.capacity %q (last scale %v), want %q and no scale", got, c.LastScaleTime, tt.wantFigures)
			}
			cond := meta.FindStatusCondition(d.Status.Conditions, v1.ConditionMetricsAvailable)
			switch {
			case tt.wantCondition == "" && cond != nil:
				t.Errorf("MetricsAvailable %+v, want none", cond)
			case tt.wantCondition != "" && (cond == nil || cond.Status != tt.wantCondition || cond.Message != tt.scale.Reason):
				t.Errorf("MetricsAvailable %+v, want %s saying %q", cond, tt.wantCondition, tt.scale.Reason)
			}
		})
	}
}
