package controllers

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/cpu"
	"webfarm.dev/operator/internal/model"
)

// applyCPULimit reports a pool's CPU monitor reading in its CPULimitExceeded
// condition and, for action Shutdown, returns the verdict that stops the
// pool while it is over its limit. Throttle needs no monitor: the workers'
// CPU is capped at the limit (see model.ResolvePool).
func applyCPULimit(pool *v1.AppPool, m model.Pool, readings *cpu.Tracker) *verdict {
	l := m.CPULimit
	if l == nil || l.Action == model.CPUThrottle || readings == nil {
		meta.RemoveStatusCondition(&pool.Status.Conditions, v1.ConditionCPULimitExceeded)
		return nil
	}
	r := readings.Latest(pool.Namespace + "/" + pool.Name)
	c := metav1.Condition{
		Type: v1.ConditionCPULimitExceeded, Status: metav1.ConditionFalse, Reason: v1.ReasonWithinLimit,
		Message: fmt.Sprintf("within %d%% of the pool's CPU", l.Percent), ObservedGeneration: pool.Generation,
	}
	if r.Over {
		c.Status, c.Reason = metav1.ConditionTrue, v1.ReasonCPULimitExceeded
		c.Message = fmt.Sprintf("over %d%% of the pool's CPU since %s (interval %s)", l.Percent, r.OverSince.UTC().Format(time.RFC3339), l.Interval)
	}
	setCondition(&pool.Status.Conditions, c)
	if !r.Over || l.Action != model.CPUShutdown {
		return nil
	}
	return &verdict{Reason: v1.ReasonCPULimitExceeded, Message: fmt.Sprintf(
		"stopped by the CPU monitor: %s; the frontend answers its routes with 503 until a restart: "+
			"kubectl annotate apppool %s %s=\"$(date +%%s)\" --overwrite", c.Message, pool.Name, v1.RestartAnnotation)}
}
