package startup

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	v1 "webfarm.dev/operator/api/v1alpha1"
)

// pod is a worker pod with an app container and a content init container,
// as the pool renderer makes them.
func pod(name string, edit func(*corev1.Pod)) corev1.Pod {
	p := corev1.Pod{}
	p.Name = name
	p.Spec.InitContainers = []corev1.Container{{Name: "content", Image: "registry.example/site:v2"}}
	p.Spec.Containers = []corev1.Container{{Name: "nginx", Image: "webfarm/nginx:1.27"}, {Name: "app", Image: "registry.example/app:v1"}}
	p.Status.Phase = corev1.PodPending
	edit(&p)
	return p
}

func waiting(name, reason, message string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}}
}

func TestPodBlocker(t *testing.T) {
	tests := []struct {
		name    string
		pod     corev1.Pod
		reason  string // "" for no blocker
		message string
	}{
		{"a pod the scheduler cannot place is Unschedulable with the scheduler's words", pod("w-1", func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
				Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes are available: 1 Insufficient cpu."}}
		}), v1.ReasonUnschedulable, "pod w-1 cannot be scheduled: 0/1 nodes are available: 1 Insufficient cpu."},
		{"a pod not yet looked at by the scheduler is on its way", pod("w-1", func(p *corev1.Pod) {}), "", ""},
		{"an app image that cannot be pulled names the image the pod asks for", pod("w-1", func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{waiting("app", "ErrImagePull", `failed to resolve reference "registry.example/app:v1"`)}
		}), v1.ReasonImagePullFailed, `pod w-1: image "registry.example/app:v1" of container app cannot be pulled: ErrImagePull: failed to resolve`},
		{"an image pull in back-off is the same cause", pod("w-1", func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{waiting("app", "ImagePullBackOff", `Back-off pulling image "registry.example/app:v1"`)}
		}), v1.ReasonImagePullFailed, `ImagePullBackOff: Back-off pulling image`},
		{"a content image that cannot be pulled is found on the init container", pod("w-1", func(p *corev1.Pod) {
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{waiting("content", "ErrImagePull", "not found")}
		}), v1.ReasonImagePullFailed, `image "registry.example/site:v2" of container content`},
		{"a container whose configuration is refused cannot start", pod("w-1", func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{waiting("app", "CreateContainerConfigError", `configmap "settings" not found`)}
		}), v1.ReasonContainerCannotStart, `pod w-1: container app cannot start: CreateContainerConfigError: configmap "settings" not found`},
		{"a container whose command does not exist cannot start, in back-off too", pod("w-1", func(p *corev1.Pod) {
			s := waiting("app", "CrashLoopBackOff", "back-off 10s restarting failed container")
			s.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{Reason: "StartError", ExitCode: 128,
				Message: `exec: "no-such-server": executable file not found in $PATH`}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{s}
		}), v1.ReasonContainerCannotStart, `container app cannot start: StartError: exec: "no-such-server"`},
		{"a container just refused, before its back-off, cannot start", pod("w-1", func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				Reason: "StartError", ExitCode: 128, Message: `exec: "no-such-server": executable file not found in $PATH`}}}}
		}), v1.ReasonContainerCannotStart, `container app cannot start: StartError: exec: "no-such-server"`},
		{"a container running again after a refused start is on its way", pod("w-1", func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "StartError"}}}}
		}), "", ""},
		{"a program that ran and crashed is rapid-fail's, not a start failure", pod("w-1", func(p *corev1.Pod) {
			s := waiting("app", "CrashLoopBackOff", "back-off 10s restarting failed container")
			s.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{s}
		}), "", ""},
		{"a container the kubelet keeps restarting for a startup check it never passes says which check", pod("w-1", func(p *corev1.Pod) {
			p.Spec.Containers[0].StartupProbe = &corev1.Probe{PeriodSeconds: 1, FailureThreshold: 90,
				ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromString("http")}}}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "nginx", RestartCount: 2, Started: ptr.To(false),
				State:                corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed", ExitCode: 0}}}}
		}), v1.ReasonStartupCheckFailed, "pod w-1: container nginx was restarted 2 times without passing its startup check (GET / on port http, within 90s)"},
		{"a container restarted after a crash while starting is rapid-fail's", pod("w-1", func(p *corev1.Pod) {
			p.Spec.Containers[1].StartupProbe = &corev1.Probe{PeriodSeconds: 1, FailureThreshold: 90,
				ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9000}}}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", RestartCount: 1, Started: ptr.To(false),
				State:                corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 2}}}}
		}), "", ""},
		{"an app stopped for its startup check that exits 2 on SIGTERM (a Go program as PID 1) says which check",
			appExited2(3, 4, 3*time.Second), v1.ReasonStartupCheckFailed,
			"pod w-1: container app was restarted 4 times without passing its startup check (GET /healthz on port app, within 3s)"},
		{"an app that exits 2 by itself before its startup check's limit is rapid-fail's", appExited2(90, 1, 12*time.Second), "", ""},
		{"a container that passed its startup check after a restart is on its way", pod("w-1", func(p *corev1.Pod) {
			p.Spec.Containers[0].StartupProbe = &corev1.Probe{PeriodSeconds: 1, FailureThreshold: 90}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "nginx", RestartCount: 1, Started: ptr.To(true),
				State:                corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137}}}}
		}), "", ""},
		{"a container still being created is on its way", pod("w-1", func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{waiting("app", "ContainerCreating", "")}
		}), "", ""},
		{"a pod being deleted is not looked at", pod("w-1", func(p *corev1.Pod) {
			p.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{waiting("app", "ErrImagePull", "not found")}
		}), "", ""},
		{"a finished pod is not looked at", pod("w-1", func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodFailed
			p.Status.ContainerStatuses = []corev1.ContainerStatus{waiting("app", "ErrImagePull", "not found")}
		}), "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, found := PodBlocker(&tt.pod)
			if found != (tt.reason != "") || b.Reason != tt.reason || !strings.Contains(b.Message, tt.message) {
				t.Errorf("PodBlocker = %+v, %v; want reason %q and a message with %q", b, found, tt.reason, tt.message)
			}
		})
	}
}

func TestFind(t *testing.T) {
	pullFails := func(name string) corev1.Pod {
		return pod(name, func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{waiting("app", "ErrImagePull", "not found")}
		})
	}
	withCondition := func(c appsv1.DeploymentCondition) *appsv1.Deployment {
		return &appsv1.Deployment{Status: appsv1.DeploymentStatus{Conditions: []appsv1.DeploymentCondition{c}}}
	}
	tests := []struct {
		name    string
		d       *appsv1.Deployment
		pods    []corev1.Pod
		reason  string
		message string
	}{
		{"the first blocked pod by name is the answer, whatever the list's order", &appsv1.Deployment{},
			[]corev1.Pod{pullFails("w-c"), pod("w-a", func(*corev1.Pod) {}), pullFails("w-b")}, v1.ReasonImagePullFailed, "pod w-b:"},
		{"pods the API server refuses are PodCreateFailed with its words", withCondition(appsv1.DeploymentCondition{
			Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate",
			Message: `pods "w-1" is forbidden: exceeded quota: compute`}), nil, v1.ReasonPodCreateFailed, "pods cannot be created: pods \"w-1\" is forbidden: exceeded quota"},
		{"a rollout past its deadline is RolloutStalled", withCondition(appsv1.DeploymentCondition{
			Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded",
			Message: `ReplicaSet "w-7d" has timed out progressing.`}), nil, v1.ReasonRolloutStalled, "the rollout made no progress: ReplicaSet"},
		{"a Deployment progressing with pods on their way has no blocker", withCondition(appsv1.DeploymentCondition{
			Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "ReplicaSetUpdated"}),
			[]corev1.Pod{pod("w-a", func(*corev1.Pod) {})}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, found := Find(tt.d, tt.pods)
			if found != (tt.reason != "") || b.Reason != tt.reason || !strings.Contains(b.Message, tt.message) {
				t.Errorf("Find = %+v, %v; want reason %q and a message with %q", b, found, tt.reason, tt.message)
			}
		})
	}
}

// appExited2 is a pod whose app, checked at start for limitSeconds, runs
// again after restarts, its last run having lasted ran and ended with exit
// code 2.
func appExited2(limitSeconds, restarts int32, ran time.Duration) corev1.Pod {
	return pod("w-1", func(p *corev1.Pod) {
		p.Spec.Containers[1].StartupProbe = &corev1.Probe{PeriodSeconds: 1, FailureThreshold: limitSeconds,
			ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("app")}}}
		started := time.Date(2026, 11, 26, 14, 0, 0, 0, time.UTC)
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", RestartCount: restarts, Started: ptr.To(false),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 2,
				StartedAt: metav1.NewTime(started), FinishedAt: metav1.NewTime(started.Add(ran))}}}}
	})
}
