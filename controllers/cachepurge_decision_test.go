package controllers

import (
	"context"
	"fmt"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestAFailedPurgeNeedsNoRetryOnlyWhereTheCacheCannotHoldEntries(t *testing.T) {
	ready := corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	starting := corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}}}
	refused := fmt.Errorf("dial tcp 10.244.0.51:8083: connect: %w", syscall.ECONNREFUSED)
	for _, tc := range []struct {
		name string
		pod  corev1.Pod
		err  error
		want bool
	}{
		{"a starting pod whose agent does not listen yet has nothing to purge", starting, refused, true},
		{"a Ready pod whose agent refuses is retried: it serves and may hold entries", ready, refused, false},
		{"a starting pod whose agent times out is retried: the agent may be up", starting, context.DeadlineExceeded, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := nothingToPurge(&tc.pod, tc.err); got != tc.want {
				t.Errorf("nothingToPurge = %v, want %v", got, tc.want)
			}
		})
	}
}
