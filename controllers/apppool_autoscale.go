package controllers

import (
	"context"
	"fmt"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/k8s"
)

// applyAutoscaling sets an autoscaled pool's replicas to the autoscaler's
// latest decision and records it in the pool's status: the AppPool
// controller is the one writer of the Deployment, the autoscaler only
// decides. Without a decision yet (a new pool, a new leader) the pool keeps
// the workers it has, within its bounds.
func (r *AppPoolReconciler) applyAutoscaling(ctx context.Context, pool *v1.AppPool, m *model.Pool) error {
	if m.Autoscaling == nil || m.Stopped || m.Idle {
		meta.RemoveStatusCondition(&pool.Status.Conditions, v1.ConditionMetricsAvailable)
		return nil
	}
	var live appsv1.Deployment
	var current *int32
	switch err := r.Get(ctx, types.NamespacedName{Namespace: pool.Namespace, Name: k8s.PoolName(pool.Name)}, &live); {
	case err == nil:
		n, _, _ := replicaCounts(&live)
		current = &n
	case !apierrors.IsNotFound(err):
		return err
	}
	var decision *ScaleDecision
	if r.Scaling != nil {
		if d, ok := r.Scaling.Get(types.NamespacedName{Namespace: pool.Namespace, Name: pool.Name}); ok {
			decision = &d
		}
	}
	replicas := autoscaledReplicas(*m.Autoscaling, current, decision)
	m.Replicas = &replicas
	if decision == nil {
		return nil
	}
	pool.Status.Capacity = capacityStatus(pool.Status.Capacity, decision, current, replicas)
	setCondition(&pool.Status.Conditions, metricsCondition(decision, pool.Generation))
	if current != nil && *current != replicas {
		reason := v1.ReasonScaledOut
		if replicas < *current {
			reason = v1.ReasonScaledIn
		}
		r.Recorder.Eventf(pool, nil, corev1.EventTypeNormal, reason, "Autoscale", "%d -> %d workers: %s", *current, replicas, decision.Reason)
	}
	return nil
}

// autoscaledReplicas is the count an autoscaled pool gets: the decision's,
// else the current count within the bounds, else (a new pool) the minimum.
func autoscaledReplicas(a model.Autoscaling, current *int32, d *ScaleDecision) int32 {
	switch {
	case d != nil:
		return d.Replicas
	case current != nil:
		return min(max(*current, a.MinReplicas), a.MaxReplicas)
	default:
		return a.MinReplicas
	}
}

// capacityStatus writes a decision's figures into status.capacity; a change
// of the replicas sets the last scale time and reason.
func capacityStatus(c v1.Capacity, d *ScaleDecision, current *int32, replicas int32) v1.Capacity {
	if m := d.Measured; m != nil {
		c.RequestsPerSecond = strconv.FormatFloat(m.RequestsPerSecond, 'f', 1, 64)
		c.CPUCores = strconv.FormatFloat(m.CPUCores, 'f', 3, 64)
		c.MegacyclesPerRequest = strconv.FormatFloat(m.MegacyclesPerRequest, 'f', 3, 64)
		c.RequiredMegahertz = strconv.FormatFloat(m.RequiredMHz, 'f', 0, 64)
		recommended := d.Recommended
		c.RecommendedReplicas = &recommended
	}
	if current != nil && *current != replicas {
		c.LastScaleTime = &metav1.Time{Time: d.At.Truncate(time.Second)}
		c.LastScaleReason = fmt.Sprintf("%d -> %d: %s", *current, replicas, d.Reason)
	}
	return c
}

// metricsCondition says whether the autoscaler could measure the pool.
func metricsCondition(d *ScaleDecision, generation int64) metav1.Condition {
	c := metav1.Condition{Type: v1.ConditionMetricsAvailable, Status: metav1.ConditionTrue, Reason: v1.ReasonMeasured,
		Message: d.Reason, ObservedGeneration: generation}
	if d.MetricsUnavailable {
		c.Status, c.Reason = metav1.ConditionFalse, v1.ReasonMetricsUnavailable
	}
	return c
}
