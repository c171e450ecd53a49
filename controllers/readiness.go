package controllers

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/startup"
)

// Small pure policies that decide readiness from observed state. Each returns
// a verdict with a reason and a message a person can act on.

// verdict is the outcome of a readiness policy.
type verdict struct {
	Ready   bool
	Reason  string
	Message string
	// Degraded: serving, but with less than was asked.
	Degraded bool
}

// replicaCounts reads a Deployment's progress; a Deployment whose controller
// has not seen the latest spec yet, or that still runs pods of an earlier
// version (a new pod counts as updated before it is ready), is not current.
func replicaCounts(d *appsv1.Deployment) (desired, ready int32, current bool) {
	desired = 1
	if d.Spec.Replicas != nil {
		desired = *d.Spec.Replicas
	}
	current = d.Status.ObservedGeneration >= d.Generation && d.Status.UpdatedReplicas >= desired &&
		d.Status.Replicas <= d.Status.UpdatedReplicas
	return desired, d.Status.ReadyReplicas, current
}

// deploymentVerdict decides whether a workload serves.
func deploymentVerdict(what string, d *appsv1.Deployment) verdict {
	desired, ready, current := replicaCounts(d)
	switch {
	case desired == 0:
		return verdict{Reason: v1.ReasonScaledToZero, Message: what + ": scaled to zero replicas"}
	case ready == 0:
		return verdict{Reason: v1.ReasonProgressing, Message: fmt.Sprintf("%s: 0/%d replicas ready", what, desired)}
	case ready < desired || !current:
		return verdict{Ready: true, Reason: v1.ReasonReplicasMissing, Degraded: true,
			Message: fmt.Sprintf("%s: %d/%d replicas ready and up to date", what, ready, desired)}
	default:
		return verdict{Ready: true, Reason: v1.ReasonAvailable, Message: fmt.Sprintf("%s: %d/%d replicas ready", what, ready, desired)}
	}
}

// workloadVerdict is deploymentVerdict told why the pods that do not serve
// do not start (startup.Find): with no pod ready the cause is the Ready
// reason; with some serving the workload is Degraded by it, and an update
// that cannot finish is RolloutStalled while the earlier pods serve.
func workloadVerdict(what string, d *appsv1.Deployment, pods []corev1.Pod) verdict {
	v := deploymentVerdict(what, d)
	if v.Reason == v1.ReasonAvailable || v.Reason == v1.ReasonScaledToZero {
		return v
	}
	b, found := startup.Find(d, pods)
	if !found {
		return v
	}
	if !v.Ready {
		return verdict{Reason: b.Reason, Message: what + ": " + b.Message}
	}
	desired, ready, _ := replicaCounts(d)
	if startup.RollingOut(d) {
		return verdict{Ready: true, Degraded: true, Reason: v1.ReasonRolloutStalled, Message: fmt.Sprintf(
			"%s: the update cannot finish, %s; %d/%d replicas ready keep serving", what, b.Message, ready, desired)}
	}
	return verdict{Ready: true, Degraded: true, Reason: b.Reason, Message: fmt.Sprintf(
		"%s: %d/%d replicas ready; %s", what, ready, desired, b.Message)}
}

// poolPhase names where a pool stands from its workers' counts.
func poolPhase(desired, ready int32) v1.PoolPhase {
	switch {
	case desired == 0:
		return v1.PoolIdle
	case ready == 0:
		return v1.PoolPending
	case ready < desired:
		return v1.PoolDegraded
	default:
		return v1.PoolRunning
	}
}

// setConditions writes Ready and Degraded from a verdict.
func setConditions(conds *[]metav1.Condition, generation int64, v verdict) {
	ready := metav1.ConditionFalse
	if v.Ready {
		ready = metav1.ConditionTrue
	}
	setCondition(conds, metav1.Condition{Type: v1.ConditionReady, Status: ready, Reason: v.Reason, Message: v.Message, ObservedGeneration: generation})
	degraded := metav1.Condition{Type: v1.ConditionDegraded, Status: metav1.ConditionFalse, Reason: v1.ReasonAsExpected, Message: "", ObservedGeneration: generation}
	if v.Degraded {
		degraded.Status, degraded.Reason, degraded.Message = metav1.ConditionTrue, v.Reason, v.Message
	}
	setCondition(conds, degraded)
}

// readyCount is "ready/desired", as kubectl shows for Deployments.
func readyCount(ready, desired int32) string { return fmt.Sprintf("%d/%d", ready, desired) }
