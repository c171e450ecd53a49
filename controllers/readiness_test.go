package controllers

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	v1 "webfarm.dev/operator/api/v1alpha1"
)

func deployment(replicas, ready, updated int32, generation, observed int64) *appsv1.Deployment {
	d := &appsv1.Deployment{}
	d.Generation = generation
	d.Spec.Replicas = ptr.To(replicas)
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: observed, ReadyReplicas: ready, UpdatedReplicas: updated}
	return d
}

func TestDeploymentVerdict(t *testing.T) {
	tests := []struct {
		name     string
		d        *appsv1.Deployment
		ready    bool
		degraded bool
		reason   string
		phase    v1.PoolPhase
	}{
		{"all replicas ready and up to date is Available", deployment(2, 2, 2, 3, 3), true, false, v1.ReasonAvailable, v1.PoolRunning},
		{"no replica ready yet is Progressing", deployment(2, 0, 0, 1, 1), false, false, v1.ReasonProgressing, v1.PoolPending},
		{"some replicas ready serves, degraded", deployment(3, 1, 3, 1, 1), true, true, v1.ReasonReplicasMissing, v1.PoolDegraded},
		{"a rollout the Deployment controller has not seen serves, degraded", deployment(2, 2, 2, 4, 3), true, true, v1.ReasonReplicasMissing, v1.PoolRunning},
		{"a rollout half done serves, degraded", deployment(2, 2, 1, 4, 4), true, true, v1.ReasonReplicasMissing, v1.PoolRunning},
		{"a rollout whose new pod is not ready while the old one serves is degraded", func() *appsv1.Deployment {
			d := deployment(1, 1, 1, 2, 2)
			d.Status.Replicas = 2
			return d
		}(), true, true, v1.ReasonReplicasMissing, v1.PoolRunning},
		{"zero replicas asked for is not ready, and idle", deployment(0, 0, 0, 1, 1), false, false, v1.ReasonScaledToZero, v1.PoolIdle},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := deploymentVerdict("workers", tt.d)
			if v.Ready != tt.ready || v.Degraded != tt.degraded || v.Reason != tt.reason {
				t.Errorf("verdict %+v, want ready=%v degraded=%v reason=%s", v, tt.ready, tt.degraded, tt.reason)
			}
			desired, ready, _ := replicaCounts(tt.d)
			if p := poolPhase(desired, ready); p != tt.phase {
				t.Errorf("phase %s, want %s", p, tt.phase)
			}
		})
	}
}

func TestFarmVerdictNamesWhatAPersonMustFixFirst(t *testing.T) {
	ready := deployment(2, 2, 2, 1, 1)
	tests := []struct {
		name    string
		refs    references
		front   *appsv1.Deployment
		reason  string
		message string
	}{
		{"a missing pool comes before an unready frontend", references{missingPools: []string{"blog"}}, deployment(2, 0, 0, 1, 1), v1.ReasonInvalidReference, `AppPool "blog"`},
		{"a missing policy is named too", references{missingPolicies: []string{"static"}}, ready, v1.ReasonInvalidReference, `CachePolicy "static"`},
		{"an unready frontend comes before unready pools", references{poolsNotReady: []string{"shop"}}, deployment(2, 0, 0, 1, 1), v1.ReasonProgressing, "frontend: 0/2"},
		{"unready pools are named", references{poolsNotReady: []string{"shop", "blog"}}, ready, v1.ReasonPoolsNotReady, "shop, blog"},
		{"everything serving is Available", references{}, ready, v1.ReasonAvailable, "frontend: 2/2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := farmVerdict(tt.refs, deploymentVerdict("frontend", tt.front))
			if v.Reason != tt.reason || !strings.Contains(v.Message, tt.message) {
				t.Errorf("verdict %+v, want reason %s and a message with %q", v, tt.reason, tt.message)
			}
		})
	}
}

func TestWorkloadVerdictSaysWhyPodsDoNotStart(t *testing.T) {
	pending := func(name string) corev1.Pod {
		p := corev1.Pod{}
		p.Name = name
		p.Status.Phase = corev1.PodPending
		return p
	}
	unschedulable := pending("www-pool-b")
	unschedulable.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes are available: 1 Insufficient cpu."}}
	rollout := deployment(2, 2, 1, 4, 4)
	rollout.Status.Replicas = 3
	tests := []struct {
		name     string
		d        *appsv1.Deployment
		pods     []corev1.Pod
		ready    bool
		degraded bool
		reason   string
		message  string
	}{
		{"no pod ready and one unschedulable is Unschedulable, not ready", deployment(1, 0, 1, 1, 1), []corev1.Pod{unschedulable}, false, false,
			v1.ReasonUnschedulable, "workers: pod www-pool-b cannot be scheduled: 0/1 nodes are available: 1 Insufficient cpu."},
		{"no pod ready and none blocked stays Progressing", deployment(1, 0, 1, 1, 1), []corev1.Pod{pending("www-pool-a")}, false, false,
			v1.ReasonProgressing, "workers: 0/1 replicas ready"},
		{"a scale-out whose new pod cannot be scheduled serves, degraded by the cause", deployment(3, 2, 3, 1, 1), []corev1.Pod{unschedulable}, true, true,
			v1.ReasonUnschedulable, "workers: 2/3 replicas ready; pod www-pool-b cannot be scheduled"},
		{"an update whose new pod cannot be scheduled is RolloutStalled while the old pods serve", rollout, []corev1.Pod{unschedulable}, true, true,
			v1.ReasonRolloutStalled, "workers: the update cannot finish, pod www-pool-b cannot be scheduled: 0/1 nodes are available: 1 Insufficient cpu.; 2/2 replicas ready keep serving"},
		{"every replica ready is Available whatever a stray pod says", deployment(2, 2, 2, 1, 1), []corev1.Pod{unschedulable}, true, false,
			v1.ReasonAvailable, "workers: 2/2 replicas ready"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := workloadVerdict("workers", tt.d, tt.pods)
			if v.Ready != tt.ready || v.Degraded != tt.degraded || v.Reason != tt.reason || !strings.Contains(v.Message, tt.message) {
				t.Errorf("verdict %+v, want ready=%v degraded=%v reason=%s and a message with %q", v, tt.ready, tt.degraded, tt.reason, tt.message)
			}
		})
	}
}
