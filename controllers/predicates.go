package controllers

import (
	"context"
	"slices"
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
	"webfarm.dev/operator/internal/vocabulary"
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

// nodeClockChanged passes a Node's creation with a clock rate and changes of
// its clock rate (vocabulary.NodeMHzLabel): a node's status reports every few
// seconds and would otherwise re-render every farm with a worker on it. A
// deleted node's workers leave the EndpointSlices by themselves.
var nodeClockChanged = builder.WithPredicates(nodeClockFilter)

var nodeClockFilter = predicate.Funcs{
	CreateFunc: func(e event.CreateEvent) bool {
		_, labelled := e.Object.GetLabels()[vocabulary.NodeMHzLabel]
		return labelled
	},
	UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetLabels()[vocabulary.NodeMHzLabel] != e.ObjectNew.GetLabels()[vocabulary.NodeMHzLabel]
	},
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// routesChanged passes creations, deletions and spec changes of a farm, and
// changes of the pools its Gateway routes send through a cache tier (a status
// field the farm's reconcile writes): together they decide which pools a
// cache tier fronts.
var routesChanged = builder.WithPredicates(predicate.Or(
	predicate.GenerationChangedPredicate{},
	predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		before, okBefore := e.ObjectOld.(*v1.WebFarm)
		after, okAfter := e.ObjectNew.(*v1.WebFarm)
		return !okBefore || !okAfter || !slices.Equal(before.Status.GatewayCachedPools, after.Status.GatewayCachedPools)
	}},
))

// poolRoutesChanged passes creations, deletions and spec changes of a farm,
// and changes of the pools its Gateway routes send to, directly or through a
// cache tier: together they decide who reaches a pool.
var poolRoutesChanged = builder.WithPredicates(predicate.Or(
	predicate.GenerationChangedPredicate{},
	gatewayBackendsChanged,
))

// routingInputsChanged passes what specOrMetadataChanged passes, and changes
// of the pools and cache tiers a farm's Gateway routes reach: the farm
// indexes (IndexFarmPools, indexFarmPolicies) read them from its status, so
// an EndpointSlice event that came before the status named its pool found
// no farm, and the farm must look at its endpoints again once it does.
var routingInputsChanged = builder.WithPredicates(routingInputs)

var routingInputs = predicate.Or[client.Object](
	predicate.GenerationChangedPredicate{},
	predicate.LabelChangedPredicate{},
	predicate.AnnotationChangedPredicate{},
	gatewayBackendsChanged,
)

// gatewayBackendsChanged passes a farm's updates that change the pools its
// Gateway routes send to, directly or through a cache tier (status fields
// the farm's reconcile writes).
var gatewayBackendsChanged = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	before, okBefore := e.ObjectOld.(*v1.WebFarm)
	after, okAfter := e.ObjectNew.(*v1.WebFarm)
	return !okBefore || !okAfter || !slices.Equal(before.Status.GatewayAppPools, after.Status.GatewayAppPools) ||
		!slices.Equal(before.Status.GatewayCachedPools, after.Status.GatewayCachedPools)
}}

// routeSpecChanged passes an HTTPRoute's creation, deletion and spec
// changes: its translation reads no status, and the operator's own status
// writes (one per route) would otherwise wake every Gateway controller again.
var routeSpecChanged = builder.WithPredicates(predicate.GenerationChangedPredicate{})

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
