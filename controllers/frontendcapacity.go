package controllers

import (
	"context"
	"fmt"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/lifecycle"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/observations"
	"webfarm.dev/operator/internal/vocabulary"
)

// frontendCapacity is status.frontendCapacity from the autoscaler's latest
// report on a farm's frontends. A report without figures (Prometheus could
// not measure them) clears them: the farm has no condition to say that
// figures left standing are old, and no figure is better than a wrong one.
func frontendCapacity(s observations.ScaleDecision) v1.FrontendCapacity {
	if s.Measured == nil {
		return v1.FrontendCapacity{}
	}
	c := lifecycle.MeasuredCapacity(*s.Measured, s.Recommended)
	out := v1.FrontendCapacity{
		RequestsPerSecond:    c.RequestsPerSecond,
		CPUCores:             c.CPUCores,
		MegacyclesPerRequest: c.MegacyclesPerRequest,
		RequiredMegahertz:    c.RequiredMegahertz,
		RecommendedReplicas:  c.RecommendedReplicas,
	}
	if s.HTTPSRequestsPerSecond != nil {
		out.HTTPSRequestsPerSecond = strconv.FormatFloat(*s.HTTPSRequestsPerSecond, 'f', 1, 64)
	}
	return out
}

// frontendScaling is how many frontends a farm runs, what its status says
// of their capacity, and the event of a change of their count.
type frontendScaling struct {
	Replicas int32
	Capacity v1.FrontendCapacity
	// EventReason is ScaledOut or ScaledIn when the count changes (empty:
	// it does not); EventMessage says why.
	EventReason, EventMessage string
}

// scaleFrontends decides a farm's frontends from its model fe, the count
// its frontend Deployment asks for now (live; nil: none yet), the
// autoscaler's latest report (nil: none yet) and the status' capacity. A
// farm without frontend.autoscaling runs frontend.replicas and gets the
// report's figures. An autoscaled one follows the report within its bounds;
// before its first report it keeps the frontends it runs, and a new farm
// starts at frontend.replicas, both within the bounds.
func scaleFrontends(fe model.Frontend, live *int32, report *observations.ScaleDecision, status v1.FrontendCapacity, now time.Time) frontendScaling {
	out := frontendScaling{Replicas: fe.Replicas, Capacity: status}
	why := "within frontend.autoscaling's bounds"
	if report != nil {
		out.Capacity = frontendCapacity(*report)
		out.Capacity.LastScaleTime, out.Capacity.LastScaleReason = status.LastScaleTime, status.LastScaleReason
		why = report.Reason
	}
	a := fe.Autoscaling
	if a == nil {
		return out
	}
	switch {
	case report != nil:
		out.Replicas = report.Replicas
	case live != nil:
		out.Replicas = *live
	}
	out.Replicas = min(max(out.Replicas, a.MinReplicas), a.MaxReplicas)
	if live == nil || *live == out.Replicas {
		return out
	}
	out.EventReason = v1.ReasonScaledOut
	if out.Replicas < *live {
		out.EventReason = v1.ReasonScaledIn
	}
	out.EventMessage = fmt.Sprintf("%d -> %d frontends: %s", *live, out.Replicas, why)
	at := now
	if report != nil {
		at = report.At
	}
	out.Capacity.LastScaleTime = &metav1.Time{Time: at.Truncate(time.Second)}
	out.Capacity.LastScaleReason = fmt.Sprintf("%d -> %d: %s", *live, out.Replicas, why)
	return out
}

// scaleFrontends sizes the farm's frontends in m before its children are
// applied and records their capacity in its status; the event of a change
// is the caller's to record once it is applied.
func (r *WebFarmReconciler) scaleFrontends(ctx context.Context, farm *v1.WebFarm, m *model.Farm) (frontendScaling, error) {
	var live *int32
	var d appsv1.Deployment
	switch err := r.Get(ctx, types.NamespacedName{Namespace: farm.Namespace, Name: vocabulary.FrontendName(farm.Name)}, &d); {
	case err == nil:
		n, _, _ := replicaCounts(&d)
		live = &n
	case !apierrors.IsNotFound(err):
		return frontendScaling{}, err
	}
	var report *observations.ScaleDecision
	if r.Observations != nil {
		if s, ok := r.Observations.FrontendScale(client.ObjectKeyFromObject(farm)); ok {
			report = &s
		}
	}
	s := scaleFrontends(m.Frontend, live, report, farm.Status.FrontendCapacity, time.Now())
	m.Frontend.Replicas = s.Replicas
	farm.Status.FrontendCapacity = s.Capacity
	return s, nil
}
