package controllers

import (
	"strconv"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/lifecycle"
	"webfarm.dev/operator/internal/observations"
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

// setFrontendCapacity puts the autoscaler's latest report on the farm's
// frontends into its status; without one (no Prometheus, not measured
// yet) the status keeps what it shows.
func (r *WebFarmReconciler) setFrontendCapacity(farm *v1.WebFarm) {
	if r.Observations == nil {
		return
	}
	if s, ok := r.Observations.FrontendScale(client.ObjectKeyFromObject(farm)); ok {
		farm.Status.FrontendCapacity = frontendCapacity(s)
	}
}
