package controllers

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "webfarm.dev/operator/api/v1alpha1"
)

// Event filters. Each reconciler writes its own status; without these filters
// every status write would queue the object again, and every pool's status
// write would re-render the farms in front of it.

// specOrMetadataChanged passes creations, deletions and updates of spec,
// labels or annotations: not updates of status alone.
var specOrMetadataChanged = builder.WithPredicates(predicate.Or(
	predicate.GenerationChangedPredicate{},
	predicate.LabelChangedPredicate{},
	predicate.AnnotationChangedPredicate{},
))

// existenceChanged passes only creations and deletions: a farm needs to know
// that a CachePolicy it names exists, nothing more.
var existenceChanged = builder.WithPredicates(predicate.Funcs{
	UpdateFunc: func(event.UpdateEvent) bool { return false },
})

// poolReadinessChanged passes creations, deletions and updates that change a
// pool's Ready condition: what a farm's status depends on.
var poolReadinessChanged = builder.WithPredicates(predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		before, okBefore := e.ObjectOld.(*v1.AppPool)
		after, okAfter := e.ObjectNew.(*v1.AppPool)
		if !okBefore || !okAfter {
			return true
		}
		return meta.IsStatusConditionTrue(before.Status.Conditions, v1.ConditionReady) !=
			meta.IsStatusConditionTrue(after.Status.Conditions, v1.ConditionReady)
	},
})

// poolRoutingChanged passes creations, deletions and updates of what a farm's
// routing reads from a pool: its spec (queue limits, on-demand start) and
// whether it is stopped or idle.
var poolRoutingChanged = builder.WithPredicates(predicate.Or(
	predicate.GenerationChangedPredicate{},
	predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		before, okBefore := e.ObjectOld.(*v1.AppPool)
		after, okAfter := e.ObjectNew.(*v1.AppPool)
		if !okBefore || !okAfter {
			return true
		}
		return (before.Status.Phase == v1.PoolStopped) != (after.Status.Phase == v1.PoolStopped) ||
			(before.Status.IdleSince == nil) != (after.Status.IdleSince == nil)
	}},
))

// routesChanged passes creations, deletions and spec changes of a farm: what
// decides which pools a cache tier fronts.
var routesChanged = builder.WithPredicates(predicate.GenerationChangedPredicate{})

// batchDelay is how long a farm waits after a pool's readiness changes before
// it reconciles: pools of a farm tend to change together (a rollout, a node
// failure, a fresh install), and one reconcile then covers them all.
const batchDelay = time.Second

// enqueueBatched maps an event to requests like EnqueueRequestsFromMapFunc, but
// adds them after batchDelay; the work queue keeps one entry per request.
func enqueueBatched(mapFn handler.MapFunc) handler.EventHandler {
	add := func(ctx context.Context, obj client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		for _, req := range mapFn(ctx, obj) {
			q.AddAfter(req, batchDelay)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.Object, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.ObjectNew, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.Object, q)
		},
	}
}
