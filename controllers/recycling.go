package controllers

import (
	"context"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/health"
	"webfarm.dev/operator/internal/lifecycle"
	"webfarm.dev/operator/internal/observations"
	"webfarm.dev/operator/internal/vocabulary"
)

// Worker recycling: the decision is internal/lifecycle's; this file lists a
// pool's workers with their figures for it, and marks the worker it
// recycles.

var poolRecycles = func() *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "webfarm_pool_recycles_total",
		Help: "Workers recycled (replaced one at a time), per pool and reason: Memory, Requests, Schedule, Interval."},
		[]string{"namespace", "pool", "reason"})
	metrics.Registry.MustRegister(c)
	return c
}()

// lowestDeletionCost is the pod-deletion-cost of a worker being recycled:
// when the pool returns to its size, its ReplicaSet removes that worker
// rather than another.
var lowestDeletionCost = strconv.Itoa(-1 << 31)

// deletionCostAnnotation is the ReplicaSet's pod-deletion-cost.
const deletionCostAnnotation = "controller.kubernetes.io/pod-deletion-cost"

// poolWorkers lists a pool's worker pods with what the collectors saw of
// each (figures nil: none known).
func poolWorkers(ctx context.Context, c client.Reader, pool types.NamespacedName, figures *observations.Store) ([]lifecycle.Worker, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(pool.Namespace), client.MatchingLabels{
		vocabulary.LabelManagedBy: vocabulary.ManagedBy, vocabulary.LabelComponent: vocabulary.ComponentPool, vocabulary.LabelInstance: pool.Name,
	}); err != nil {
		return nil, err
	}
	out := make([]lifecycle.Worker, 0, len(pods.Items))
	for _, p := range pods.Items {
		w := lifecycle.Worker{
			Name: p.Name, Started: p.CreationTimestamp.Time, Ready: health.PodReady(&p),
			Leaving: p.DeletionTimestamp != nil, Recycling: v1.RecycleReason(p.Annotations[v1.RecycleAnnotation]),
		}
		if p.Status.StartTime != nil {
			w.Started = p.Status.StartTime.Time
		}
		if figures != nil {
			if ip := p.Status.PodIP; ip != "" {
				w.Requests, w.RequestsKnown = figures.Requests(pool, ip)
			}
			w.MemoryBytes, w.MemoryKnown = figures.Memory(pool, p.Name)
		}
		out = append(out, w)
	}
	return out, nil
}

// markForRecycling annotates the worker a decision recycles: the reason,
// and the lowest deletion cost for its ReplicaSet.
func markForRecycling(ctx context.Context, c client.Client, namespace string, r lifecycle.Recycle) error {
	pod := &corev1.Pod{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: r.Worker}, pod); err != nil {
		return err
	}
	patch := client.MergeFromWithOptions(pod.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[v1.RecycleAnnotation] = string(r.Reason)
	pod.Annotations[deletionCostAnnotation] = lowestDeletionCost
	return c.Patch(ctx, pod, patch)
}
