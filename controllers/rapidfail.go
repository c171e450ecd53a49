package controllers

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"webfarm.dev/operator/internal/health"
	"webfarm.dev/operator/internal/metrics"
	"webfarm.dev/operator/internal/observations"
	"webfarm.dev/operator/internal/vocabulary"
)

// Rapid-fail protection, as IIS does it for application pools: when a pool's
// workers fail maxFailures times within interval, the pool is stopped (no
// workers; the frontend answers its routes itself) until a person restarts it
// with the webfarm.dev/restart annotation. The decision is
// internal/lifecycle's; this file counts the failures pod updates show.

var poolStopped = metrics.PoolGauge("webfarm_pool_stopped",
	"1 while health monitoring keeps the pool stopped, else 0.")

// workerFailureHandler records the failures that pod updates show and
// requeues the pool whose worker failed; other pod events are ignored (the
// Deployment's status already tells the pool how many workers are ready).
type workerFailureHandler struct {
	observations *observations.Store
	clock        clock.PassiveClock
}

var _ handler.TypedEventHandler[*corev1.Pod, reconcile.Request] = workerFailureHandler{}

func (h workerFailureHandler) Update(_ context.Context, e event.TypedUpdateEvent[*corev1.Pod], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	pod := e.ObjectNew
	if pod.Labels[vocabulary.LabelComponent] != vocabulary.ComponentPool {
		return
	}
	found := health.PodFailures(e.ObjectOld, pod, readClock(h.clock))
	if len(found) == 0 || h.observations == nil {
		return
	}
	name := pod.Labels[vocabulary.LabelInstance]
	for _, f := range found {
		h.observations.AddFailure(types.NamespacedName{Namespace: pod.Namespace, Name: name}, f)
	}
	metrics.WorkerFailures.WithLabelValues(pod.Namespace, name).Add(float64(len(found)))
	q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: pod.Namespace, Name: name}})
}

func (workerFailureHandler) Create(context.Context, event.TypedCreateEvent[*corev1.Pod], workqueue.TypedRateLimitingInterface[reconcile.Request]) {
}
func (workerFailureHandler) Delete(context.Context, event.TypedDeleteEvent[*corev1.Pod], workqueue.TypedRateLimitingInterface[reconcile.Request]) {
}
func (workerFailureHandler) Generic(context.Context, event.TypedGenericEvent[*corev1.Pod], workqueue.TypedRateLimitingInterface[reconcile.Request]) {
}
