package controllers

import (
	"testing"

	"k8s.io/utils/ptr"

	"webfarm.dev/operator/internal/autoscale"
	"webfarm.dev/operator/internal/model"
)

func TestAutoscaledReplicas(t *testing.T) {
	bounds := model.Autoscaling{MinReplicas: 2, MaxReplicas: 8}
	decided := &ScaleDecision{Decision: autoscale.Decision{Replicas: 5}}
	for _, tt := range []struct {
		name     string
		current  *int32
		decision *ScaleDecision
		want     int32
	}{
		{"a new pool starts at its minimum", nil, nil, 2},
		{"a pool without a decision yet keeps its workers (a new leader)", ptr.To[int32](6), nil, 6},
		{"a pool without a decision comes into its bounds from below", ptr.To[int32](1), nil, 2},
		{"a pool without a decision comes into its bounds from above", ptr.To[int32](12), nil, 8},
		{"a decision sets the count", ptr.To[int32](3), decided, 5},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := autoscaledReplicas(bounds, tt.current, tt.decision); got != tt.want {
				t.Errorf("%d replicas, want %d", got, tt.want)
			}
		})
	}
}
