package controllers

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/autoscale"
	"webfarm.dev/operator/internal/model"
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

func TestAFarmsFrontendsFollowTheirAutoscalingWithinItsBounds(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	bounds := &model.Autoscaling{MinReplicas: 1, MaxReplicas: 3}
	fixed := model.Frontend{Replicas: 2}
	scaled := model.Frontend{Replicas: 2, Autoscaling: bounds}
	report := func(replicas int32) *observations.ScaleDecision {
		return &observations.ScaleDecision{At: now.Add(-time.Second), Decision: autoscale.Decision{
			Replicas: replicas, Recommended: replicas, Reason: "the load needs it",
			Measured: &autoscale.Measurement{RequestsPerSecond: 100, CPUCores: 0.4, MegacyclesPerRequest: 8, RequiredMHz: 2667}}}
	}
	for _, tt := range []struct {
		name         string
		fe           model.Frontend
		live         *int32
		report       *observations.ScaleDecision
		wantReplicas int32
		wantEvent    string
	}{
		{"a farm without autoscaling runs frontend.replicas whatever the report recommends", fixed, ptr.To[int32](2), report(3), 2, ""},
		{"a new autoscaled farm starts at frontend.replicas", scaled, nil, nil, 2, ""},
		{"a new autoscaled farm whose replicas exceed its maximum starts at the maximum",
			model.Frontend{Replicas: 5, Autoscaling: bounds}, nil, nil, 3, ""},
		{"an autoscaled farm keeps the frontends it runs until its first report", scaled, ptr.To[int32](1), nil, 1, ""},
		{"an autoscaled farm above a lowered maximum comes down to it at once", scaled, ptr.To[int32](5), nil, 3, v1.ReasonScaledIn},
		{"an autoscaled farm follows a report that asks for more", scaled, ptr.To[int32](1), report(2), 2, v1.ReasonScaledOut},
		{"an autoscaled farm follows a report that asks for fewer", scaled, ptr.To[int32](3), report(1), 1, v1.ReasonScaledIn},
		{"a report beyond the maximum gives the maximum", scaled, ptr.To[int32](3), report(8), 3, ""},
		{"a report that keeps the count changes nothing", scaled, ptr.To[int32](2), report(2), 2, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := scaleFrontends(tt.fe, tt.live, tt.report, v1.FrontendCapacity{}, now)
			if got.Replicas != tt.wantReplicas || got.EventReason != tt.wantEvent {
				t.Errorf("%d frontends, event %q; want %d, %q (%s)", got.Replicas, got.EventReason, tt.wantReplicas, tt.wantEvent, got.EventMessage)
			}
			if scaledNow := tt.wantEvent != ""; scaledNow != (got.Capacity.LastScaleTime != nil) || scaledNow != (got.Capacity.LastScaleReason != "") {
				t.Errorf("lastScaleTime %v, lastScaleReason %q: want them set only on a change", got.Capacity.LastScaleTime, got.Capacity.LastScaleReason)
			}
			if tt.report != nil && got.Capacity.MegacyclesPerRequest != "8.000" {
				t.Errorf("status.frontendCapacity %+v lost the report's figures", got.Capacity)
			}
		})
	}
	t.Run("a report keeps the status' last scaling", func(t *testing.T) {
		last := v1.FrontendCapacity{LastScaleTime: &metav1.Time{Time: now.Add(-time.Hour)}, LastScaleReason: "1 -> 2: earlier"}
		got := scaleFrontends(scaled, ptr.To[int32](2), report(2), last, now)
		if got.Capacity.LastScaleReason != last.LastScaleReason || !got.Capacity.LastScaleTime.Equal(last.LastScaleTime) {
			t.Errorf("last scaling %v %q, want the earlier one kept", got.Capacity.LastScaleTime, got.Capacity.LastScaleReason)
		}
	})
}
