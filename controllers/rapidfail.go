package controllers

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/health"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/k8s"
)

// Rapid-fail protection, as IIS does it for application pools: when a pool's
// workers fail maxFailures times within interval, the pool is stopped (no
// workers; the frontend answers its routes itself) until a person restarts it
// with the webfarm.dev/restart annotation.

var (
	workerFailures = poolCounter("webfarm_pool_worker_failures_total",
		"Worker failures (container restarts, failed health checks) rapid-fail protection counted, per pool.")
	poolStopped = poolGauge("webfarm_pool_stopped",
		"1 while health monitoring keeps the pool stopped, else 0.")
)

// rapidFailDecision says whether a pool is stopped after what its status
// records, the restart annotation, and its recent failures.
//   - A restart (an annotation value not yet acted on) starts the pool again.
//   - A stopped pool stays stopped until restarted, whatever else changes.
//   - Otherwise the pool stops when protection is on and the failures within
//     the interval reach maxFailures.
func rapidFailDecision(status v1.AppPoolStatus, restart string, rf model.RapidFail, recentFailures int) (stopped, restarted bool) {
	if restart != "" && restart != status.ObservedRestart {
		return false, true
	}
	if status.Phase == v1.PoolStopped {
		return true, false
	}
	return rf.Enabled && recentFailures >= int(rf.MaxFailures), false
}

// applyRapidFail runs rapid-fail protection on a pool before its children are
// rendered: it updates the failure figures in the status and sets the phase
// to Stopped (or clears it on restart). It returns the verdict of a stopped
// pool, or nil.
func applyRapidFail(pool *v1.AppPool, rf model.RapidFail, failures *health.Log, now time.Time) *verdict {
	key := pool.Namespace + "/" + pool.Name
	restart := pool.Annotations[v1.RestartAnnotation]
	recent := failures.Recent(key, now, rf.Interval)
	stopped, restarted := rapidFailDecision(pool.Status, restart, rf, len(recent))
	if restarted {
		failures.Forget(key)
		recent = nil
		pool.Status.ObservedRestart = restart
		pool.Status.Phase = v1.PoolPending
	}
	if !stopped {
		meta.RemoveStatusCondition(&pool.Status.Conditions, v1.ConditionStopped)
		pool.Status.RecentFailures = int32(len(recent))
		if len(recent) > 0 {
			last := recent[len(recent)-1]
			pool.Status.LastFailure = fmt.Sprintf("%s: %s at %s", orPool(last.Pod), last.Reason, last.At.UTC().Format(time.RFC3339))
		}
		poolStopped.WithLabelValues(pool.Namespace, pool.Name).Set(0)
		return nil
	}
	if pool.Status.Phase == v1.PoolStopped {
		// Stopped earlier (by this protection or the CPU monitor): it stays
		// stopped as its Stopped condition says.
		if c := meta.FindStatusCondition(pool.Status.Conditions, v1.ConditionStopped); c != nil && c.Status == metav1.ConditionTrue {
			return stopPool(pool, verdict{Reason: c.Reason, Message: c.Message})
		}
	} else {
		pool.Status.RecentFailures = int32(len(recent))
	}
	return stopPool(pool, verdict{Reason: v1.ReasonRapidFailProtection, Message: fmt.Sprintf(
		"stopped after %d worker failures within %s (last: %s); the frontend answers its routes with 503 until a restart: "+
			"kubectl annotate apppool %s %s=\"$(date +%%s)\" --overwrite",
		pool.Status.RecentFailures, rf.Interval, orNone(pool.Status.LastFailure), pool.Name, v1.RestartAnnotation)})
}

// stopPool records that health monitoring stops the pool, for the reason the
// verdict gives: phase Stopped, the Stopped condition (which keeps the reason
// across reconciles, whatever the Ready condition says meanwhile), the metric.
func stopPool(pool *v1.AppPool, v verdict) *verdict {
	pool.Status.Phase = v1.PoolStopped
	setCondition(&pool.Status.Conditions, metav1.Condition{Type: v1.ConditionStopped, Status: metav1.ConditionTrue,
		Reason: v.Reason, Message: v.Message, ObservedGeneration: pool.Generation})
	poolStopped.WithLabelValues(pool.Namespace, pool.Name).Set(1)
	return &v
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

// workerFailureHandler records the failures that pod updates show and
// requeues the pool whose worker failed; other pod events are ignored (the
// Deployment's status already tells the pool how many workers are ready).
type workerFailureHandler struct{ failures *health.Log }

var _ handler.TypedEventHandler[*corev1.Pod, reconcile.Request] = workerFailureHandler{}

func (h workerFailureHandler) Update(_ context.Context, e event.TypedUpdateEvent[*corev1.Pod], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	pod := e.ObjectNew
	if pod.Labels[k8s.LabelComponent] != k8s.ComponentPool {
		return
	}
	found := health.PodFailures(e.ObjectOld, pod, time.Now())
	if len(found) == 0 {
		return
	}
	name := pod.Labels[k8s.LabelInstance]
	for _, f := range found {
		h.failures.Add(pod.Namespace+"/"+name, f)
	}
	workerFailures.WithLabelValues(pod.Namespace, name).Add(float64(len(found)))
	q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: pod.Namespace, Name: name}})
}

func (workerFailureHandler) Create(context.Context, event.TypedCreateEvent[*corev1.Pod], workqueue.TypedRateLimitingInterface[reconcile.Request]) {
}
func (workerFailureHandler) Delete(context.Context, event.TypedDeleteEvent[*corev1.Pod], workqueue.TypedRateLimitingInterface[reconcile.Request]) {
}
func (workerFailureHandler) Generic(context.Context, event.TypedGenericEvent[*corev1.Pod], workqueue.TypedRateLimitingInterface[reconcile.Request]) {
}
