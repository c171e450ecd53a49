package controllers

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "webfarm.dev/operator/api/v1alpha1"
)

func TestWhenAPoolsCachedEntriesArePurged(t *testing.T) {
	at := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	old := poolRevision{template: "aaa", configMap: "10"}
	newImage := poolRevision{template: "bbb", configMap: "10"}
	newData := poolRevision{template: "aaa", configMap: "11"}
	since := func(ago time.Duration) *metav1.Time { return &metav1.Time{Time: at.Add(-ago)} }
	tests := []struct {
		name      string
		rec       *v1.PoolContent
		now       poolRevision
		rolledOut bool
		want      contentStep
		wantWait  time.Duration
	}{
		{"a pool seen for the first time is recorded without a purge", nil, old, true, contentRecord, 0},
		{"unchanged content needs nothing", &v1.PoolContent{Revision: old.String()}, old, true, contentCurrent, 0},
		{"a new revision is noted first", &v1.PoolContent{Revision: old.String()}, newImage, false, contentRecord, 0},
		{"a new image waits for the pool's rollout", &v1.PoolContent{Revision: old.String(), Pending: newImage.String(), PendingSince: since(time.Second)}, newImage, false, contentWait, contentPoll},
		{"a new image is purged once the rollout is complete", &v1.PoolContent{Revision: old.String(), Pending: newImage.String(), PendingSince: since(time.Second)}, newImage, true, contentPurge, 0},
		{"new ConfigMap data waits for kubelet to update the workers' files", &v1.PoolContent{Revision: old.String(), Pending: newData.String(), PendingSince: since(30 * time.Second)}, newData, true, contentWait, configMapSettle - 30*time.Second},
		{"new ConfigMap data is purged after the settle time", &v1.PoolContent{Revision: old.String(), Pending: newData.String(), PendingSince: since(configMapSettle)}, newData, true, contentPurge, 0},
		{"a revision that changed again while pending is noted again", &v1.PoolContent{Revision: old.String(), Pending: newImage.String(), PendingSince: since(time.Minute)}, newData, true, contentRecord, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, wait := decideContent(tt.rec, tt.now, tt.rolledOut, at)
			if got != tt.want || wait != tt.wantWait {
				t.Errorf("step %d after %s, want %d after %s", got, wait, tt.want, tt.wantWait)
			}
		})
	}
}

func TestARevisionReadsBackAsItWasWritten(t *testing.T) {
	for _, r := range []poolRevision{{"0123abcd", "42"}, {"0123abcd", ""}, {"x", "missing"}} {
		if got := parseRevision(r.String()); got != r {
			t.Errorf("%q read back as %+v", r.String(), got)
		}
	}
}

func TestHowLongAPolicyHasBeenUnreferencedIsReadOnTheReconcilersClock(t *testing.T) {
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	condition := func(reason string, ago time.Duration) *v1.CachePolicy {
		p := &v1.CachePolicy{}
		p.Status.Conditions = []metav1.Condition{{Type: v1.ConditionReady, Status: metav1.ConditionFalse, Reason: reason,
			LastTransitionTime: metav1.Time{Time: at.Add(-ago)}}}
		return p
	}
	tests := []struct {
		name   string
		policy *v1.CachePolicy
		want   time.Duration
	}{
		{"a policy reported unreferenced 4 s before the clock's time has waited 4 s", condition(v1.ReasonNotReferenced, 4*time.Second), 4 * time.Second},
		{"a policy not reported unreferenced has not begun to wait", condition(v1.ReasonProgressing, time.Hour), 0},
		{"a policy without a Ready condition has not begun to wait", &v1.CachePolicy{}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := unreferencedFor(tt.policy, at); got != tt.want {
				t.Errorf("unreferenced for %s, want %s", got, tt.want)
			}
		})
	}
}

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
