package controllers

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "webfarm.dev/operator/api/v1alpha1"
)

// isPaused: the resource carries webfarm.dev/paused=true.
func isPaused(o client.Object) bool { return o.GetAnnotations()[v1.PausedAnnotation] == "true" }

// syncPaused records in the status whether reconciliation of obj is paused
// (condition Paused), and says so: a paused resource's children, routes and
// status figures stay as they are. The condition's observedGeneration shows
// which spec the operator saw and left alone.
func syncPaused[T statusObject](ctx context.Context, c client.Client, before, obj T) (bool, error) {
	paused := isPaused(obj)
	conds := obj.StatusConditions()
	if paused {
		setCondition(conds, metav1.Condition{Type: v1.ConditionPaused, Status: metav1.ConditionTrue, Reason: v1.ReasonPaused,
			Message:            "reconciliation is paused by the " + v1.PausedAnnotation + " annotation: the operator changes nothing until it is removed",
			ObservedGeneration: obj.GetGeneration()})
	} else {
		meta.RemoveStatusCondition(conds, v1.ConditionPaused)
	}
	if !paused || equality.Semantic.DeepEqual(before, obj) {
		return paused, nil
	}
	return true, c.Status().Patch(ctx, obj, client.MergeFrom(before))
}
