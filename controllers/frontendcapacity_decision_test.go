package controllers

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/autoscale"
	"webfarm.dev/operator/internal/observations"
)

func TestAFarmsStatusShowsItsFrontendsFiguresOrNone(t *testing.T) {
	measured := autoscale.Decision{Replicas: 2, Recommended: 3, Measured: &autoscale.Measurement{
		RequestsPerSecond: 100, CPUCores: 0.4, MegacyclesPerRequest: 8, RequiredMHz: 2666.67}}
	figures := v1.FrontendCapacity{RequestsPerSecond: "100.0", CPUCores: "0.400", MegacyclesPerRequest: "8.000",
		RequiredMegahertz: "2667", RecommendedReplicas: ptr.To[int32](3)}
	withTLS := figures
	withTLS.HTTPSRequestsPerSecond = "25.0"
	for _, tt := range []struct {
		name   string
		report observations.ScaleDecision
		want   v1.FrontendCapacity
	}{
		{"a measured report gives the pools' figures", observations.ScaleDecision{Decision: measured}, figures},
		{"a report that tells TLS apart gives its requests too",
			observations.ScaleDecision{Decision: measured, HTTPSRequestsPerSecond: ptr.To(25.0)}, withTLS},
		{"a report without figures clears them: no figure rather than an old one",
			observations.ScaleDecision{Decision: autoscale.Decision{Replicas: 2, MetricsUnavailable: true}}, v1.FrontendCapacity{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := frontendCapacity(tt.report); !equality.Semantic.DeepEqual(got, tt.want) {
				t.Errorf("status.frontendCapacity %+v, want %+v", got, tt.want)
			}
		})
	}
}
