package lifecycle

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/autoscale"
	"webfarm.dev/operator/internal/cpu"
	"webfarm.dev/operator/internal/health"
	"webfarm.dev/operator/internal/model"
)

// administrator is IIS's "Stop application pool": spec.state Stopped stops
// the pool whatever else holds, and Started starts a pool its administrator
// stopped, with its failure count and CPU readings forgotten.
func administrator(in Input, d *Decision) bool {
	byAdministrator := stoppedFor(d.Status, v1.ReasonStoppedByAdministrator)
	if in.Pool.AdministratorStopped {
		if !byAdministrator {
			d.Events = append(d.Events, Event{Type: corev1.EventTypeNormal, Reason: v1.ReasonStoppedByAdministrator, Action: "Stop",
				Message: "spec.state is Stopped: no workers until it is Started"})
		}
		stop(in, d, v1.ReasonStoppedByAdministrator, "stopped by its administrator (spec.state: Stopped); "+
			"the frontend answers its routes as the farm's unavailableResponse says until spec.state is Started")
		return true
	}
	if byAdministrator {
		d.Restarted = true
		d.Status.Phase = v1.PoolPending
		meta.RemoveStatusCondition(&d.Status.Conditions, v1.ConditionStopped)
		d.Events = append(d.Events, Event{Type: corev1.EventTypeNormal, Reason: v1.ReasonStartedByAdministrator, Action: "Start",
			Message: "spec.state is Started: the workers start"})
	}
	return false
}

// stoppedFor: the status records the pool stopped for this reason.
func stoppedFor(status v1.AppPoolStatus, reason string) bool {
	c := meta.FindStatusCondition(status.Conditions, v1.ConditionStopped)
	return status.Phase == v1.PoolStopped && c != nil && c.Status == metav1.ConditionTrue && c.Reason == reason
}

// restart: a restart annotation value not acted on yet starts the pool
// again, with its failure count and CPU readings forgotten (IIS: starting a
// stopped application pool).
func restart(in Input, d *Decision) bool {
	if in.Restart == "" || in.Restart == d.Status.ObservedRestart {
		return false
	}
	d.Restarted = true
	d.Status.ObservedRestart = in.Restart
	d.Status.Phase = v1.PoolPending
	return false
}

// rapidFail is IIS's rapid-fail protection: a pool whose workers fail
// maxFailures times within interval is stopped, and stays stopped (for
// whatever reason it was stopped) until restarted.
func rapidFail(in Input, d *Decision) bool {
	rf := in.Pool.RapidFail
	observed := in.Observed.Failures
	if d.Restarted {
		observed, d.Status.RecentFailureTimes = nil, nil
	}
	times := failureTimes(d.Status.RecentFailureTimes, observed, in.Now.Add(-rf.Interval))
	stopped := d.Status.Phase == v1.PoolStopped || (rf.Enabled && len(times) >= int(rf.MaxFailures))
	if !stopped {
		meta.RemoveStatusCondition(&d.Status.Conditions, v1.ConditionStopped)
		d.Status.RecentFailures = int32(len(times))
		d.Status.RecentFailureTimes = times[max(0, len(times)-maxRecordedFailures):]
		if len(observed) > 0 {
			last := observed[len(observed)-1]
			d.Status.LastFailure = fmt.Sprintf("%s: %s at %s", orPool(last.Pod), last.Reason, last.At.UTC().Format(time.RFC3339))
		}
		return false
	}
	if d.Status.Phase == v1.PoolStopped {
		// Stopped earlier (by this protection or the CPU monitor): it stays
		// stopped as its Stopped condition says.
		if c := meta.FindStatusCondition(d.Status.Conditions, v1.ConditionStopped); c != nil && c.Status == metav1.ConditionTrue {
			stop(in, d, c.Reason, c.Message)
			return true
		}
	} else {
		d.Status.RecentFailures = int32(len(times))
		d.Status.RecentFailureTimes = times[max(0, len(times)-maxRecordedFailures):]
	}
	stop(in, d, v1.ReasonRapidFailProtection, fmt.Sprintf(
		"stopped after %d worker failures within %s (last: %s); the frontend answers its routes with 503 until a restart: %s",
		d.Status.RecentFailures, rf.Interval, orNone(d.Status.LastFailure), restartCommand(in.Pool.Name)))
	return true
}

// maxRecordedFailures bounds the failure times a pool's status keeps for a
// new leader (the API's limit); a maxFailures above it counts, after a
// failover, these and the failures the new leader sees.
const maxRecordedFailures = 100

// failureTimes are the failures within the window: those the status
// recorded (a leader before this one may have seen them) and those observed
// now, each once, oldest first. Recorded times keep microseconds, so a
// failure observed again is recognised.
func failureTimes(recorded []metav1.MicroTime, observed []health.Failure, since time.Time) []metav1.MicroTime {
	seen := map[time.Time]bool{}
	var out []metav1.MicroTime
	add := func(t time.Time) {
		t = t.UTC().Truncate(time.Microsecond)
		if t.Before(since) || seen[t] {
			return
		}
		seen[t] = true
		out = append(out, metav1.NewMicroTime(t))
	}
	for _, t := range recorded {
		add(t.Time)
	}
	for _, f := range observed {
		add(f.At)
	}
	slices.SortFunc(out, func(a, b metav1.MicroTime) int { return a.Compare(b.Time) })
	return out
}

// cpuLimit is IIS's CPU monitor: the pool's CPU over its limit for the
// limit's interval is reported, and with action Shutdown stops the pool.
// Throttle needs no monitor: the workers' CPU is capped at the limit (see
// model.ResolvePool).
func cpuLimit(in Input, d *Decision) bool {
	l := in.Pool.CPULimit
	if l == nil || l.Action == model.CPUThrottle || !in.Observed.CPUMonitored {
		meta.RemoveStatusCondition(&d.Status.Conditions, v1.ConditionCPULimitExceeded)
		return false
	}
	r := in.Observed.CPU
	if d.Restarted {
		r = cpu.Reading{}
	}
	c := condition(in, v1.ConditionCPULimitExceeded, metav1.ConditionFalse, v1.ReasonWithinLimit,
		fmt.Sprintf("within %d%% of the pool's CPU", l.Percent))
	if r.Over {
		c.Status, c.Reason = metav1.ConditionTrue, v1.ReasonCPULimitExceeded
		c.Message = fmt.Sprintf("over %d%% of the pool's CPU since %s (interval %s)", l.Percent, r.OverSince.UTC().Format(time.RFC3339), l.Interval)
	}
	wasOver := meta.IsStatusConditionTrue(d.Status.Conditions, v1.ConditionCPULimitExceeded)
	meta.SetStatusCondition(&d.Status.Conditions, c)
	if r.Over && !wasOver {
		d.Events = append(d.Events, Event{Type: corev1.EventTypeWarning, Reason: v1.ReasonCPULimitExceeded, Action: "CPULimit", Message: c.Message})
	}
	if !r.Over || l.Action != model.CPUShutdown {
		return false
	}
	stop(in, d, v1.ReasonCPULimitExceeded, fmt.Sprintf("stopped by the CPU monitor: %s; the frontend answers its routes with 503 until a restart: %s",
		c.Message, restartCommand(in.Pool.Name)))
	return true
}

// idle is IIS's idle timeout: a pool without requests for its timeout goes
// idle (no workers); a request after it went idle starts it again.
func idle(in Input, d *Decision) bool {
	p := in.Pool
	if !in.Observed.ActivityKnown {
		// Without the frontends' statistics no pool is known to be quiet.
		d.Status.IdleSince = nil
		return false
	}
	since := d.Status.IdleSince
	switch {
	case p.IdleTimeout <= 0:
		since = nil
	case since != nil && in.StartAsked.After(since.Time):
		since = nil
		d.StartedOnDemand = true
		d.Events = append(d.Events, Event{Type: corev1.EventTypeNormal, Reason: v1.ReasonStartedOnDemand, Action: "Start",
			Message: "a request for the idle pool starts it"})
	case since != nil:
	default:
		quiet := in.Now.Sub(in.Observed.LastActive)
		if quiet < p.IdleTimeout {
			d.Recheck = p.IdleTimeout - quiet
			break
		}
		since = &metav1.Time{Time: in.Now.Truncate(time.Second)}
		d.Events = append(d.Events, Event{Type: corev1.EventTypeNormal, Reason: v1.ReasonIdled, Action: "Idle",
			Message: fmt.Sprintf("no requests for %s: no workers until a request comes", p.IdleTimeout)})
	}
	d.Status.IdleSince = since
	if since == nil {
		return false
	}
	d.Idle, d.Replicas = true, 0
	meta.RemoveStatusCondition(&d.Status.Conditions, v1.ConditionMetricsAvailable)
	return true
}

// autoscaling sizes the pool as the autoscaler recommends; without a
// recommendation yet (a new pool, a new leader) the pool keeps the workers
// it has, within its bounds.
func autoscaling(in Input, d *Decision) bool {
	a := in.Pool.Autoscaling
	if a == nil {
		return false
	}
	current, s := in.Observed.CurrentReplicas, in.Observed.Scale
	d.Replicas = autoscaledReplicas(*a, current, s)
	if s == nil {
		return true
	}
	d.Status.Capacity = capacityStatus(d.Status.Capacity, s, current, d.Replicas)
	meta.SetStatusCondition(&d.Status.Conditions, metricsCondition(in, s))
	if current != nil && *current != d.Replicas {
		reason := v1.ReasonScaledOut
		if d.Replicas < *current {
			reason = v1.ReasonScaledIn
		}
		d.Events = append(d.Events, Event{Type: corev1.EventTypeNormal, Reason: reason, Action: "Autoscale",
			Message: fmt.Sprintf("%d -> %d workers: %s", *current, d.Replicas, s.Reason)})
	}
	return true
}

// fixedSize runs the workers the spec asks for, and records the capacity
// the autoscaler measured and recommends as a report: the recommendation
// never changes the count.
func fixedSize(in Input, d *Decision) bool {
	d.Replicas = v1.DefaultPoolReplicas
	if in.Pool.Replicas != nil {
		d.Replicas = *in.Pool.Replicas
	}
	s := in.Observed.Scale
	if s == nil {
		return true // not measured yet: the status keeps what it recorded
	}
	d.Status.Capacity = capacityStatus(d.Status.Capacity, s, nil, d.Replicas)
	meta.SetStatusCondition(&d.Status.Conditions, metricsCondition(in, s))
	return true
}

// metricsCondition says whether the autoscaler could measure the pool, and
// what it made of the figures.
func metricsCondition(in Input, s *Scale) metav1.Condition {
	c := condition(in, v1.ConditionMetricsAvailable, metav1.ConditionTrue, v1.ReasonMeasured, s.Reason)
	if s.MetricsUnavailable {
		c.Status, c.Reason = metav1.ConditionFalse, v1.ReasonMetricsUnavailable
	}
	return c
}

// stop records that health monitoring stops the pool for a reason: phase
// Stopped and the Stopped condition, which keeps the reason across decisions
// whatever the Ready condition says meanwhile. A stopped pool runs no
// workers, is not idle and is not measured.
func stop(in Input, d *Decision, reason, message string) {
	d.Status.Phase = v1.PoolStopped
	meta.SetStatusCondition(&d.Status.Conditions, condition(in, v1.ConditionStopped, metav1.ConditionTrue, reason, message))
	d.Stop = &Stop{Reason: reason, Message: message}
	d.Replicas = 0
	d.Status.IdleSince = nil
	meta.RemoveStatusCondition(&d.Status.Conditions, v1.ConditionMetricsAvailable)
}

func restartCommand(pool string) string {
	return fmt.Sprintf(`kubectl annotate apppool %s %s="$(date +%%s)" --overwrite`, pool, v1.RestartAnnotation)
}

// autoscaledReplicas is the count an autoscaled pool gets: the
// recommendation's, else the current count within the bounds, else (a new
// pool) the minimum.
func autoscaledReplicas(a model.Autoscaling, current *int32, s *Scale) int32 {
	switch {
	case s != nil:
		return s.Replicas
	case current != nil:
		return min(max(*current, a.MinReplicas), a.MaxReplicas)
	default:
		return a.MinReplicas
	}
}

// capacityStatus writes a recommendation's figures into status.capacity; a
// change of the replicas sets the last scale time and reason.
func capacityStatus(c v1.Capacity, s *Scale, current *int32, replicas int32) v1.Capacity {
	if m := s.Measured; m != nil {
		measured := MeasuredCapacity(*m, s.Recommended)
		measured.LastScaleTime, measured.LastScaleReason = c.LastScaleTime, c.LastScaleReason
		c = measured
	}
	if current != nil && *current != replicas {
		c.LastScaleTime = &metav1.Time{Time: s.At.Truncate(time.Second)}
		c.LastScaleReason = fmt.Sprintf("%d -> %d: %s", *current, replicas, s.Reason)
	}
	return c
}

// MeasuredCapacity is a measurement's figures and the replicas recommended
// for it, as a status shows them.
func MeasuredCapacity(m autoscale.Measurement, recommended int32) v1.Capacity {
	return v1.Capacity{
		RequestsPerSecond:    strconv.FormatFloat(m.RequestsPerSecond, 'f', 1, 64),
		CPUCores:             strconv.FormatFloat(m.CPUCores, 'f', 3, 64),
		MegacyclesPerRequest: strconv.FormatFloat(m.MegacyclesPerRequest, 'f', 3, 64),
		RequiredMegahertz:    strconv.FormatFloat(m.RequiredMHz, 'f', 0, 64),
		RecommendedReplicas:  &recommended,
	}
}

// orPool names who failed: a worker pod, or the pool as a whole (a burst of 5xx).
func orPool(pod string) string {
	if pod == "" {
		return "the pool's workers"
	}
	return pod
}

func orNone(s string) string {
	if s == "" {
		return "none recorded"
	}
	return s
}
