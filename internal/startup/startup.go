// Package startup finds why a Deployment's pods do not start, from what the
// scheduler, the kubelet and the Deployment controller report on the pods and
// the Deployment. A user of the custom resources should not have to read pod
// events to learn that an image does not exist or that a node is full: the
// controllers put what this package finds into the owner's status. Pure: the
// controllers pass it the objects they read.
package startup

import (
	"fmt"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	v1 "webfarm.dev/operator/api/v1alpha1"
)

// Blocker is why pods do not start: a condition reason of the API
// (v1.ReasonImagePullFailed, ...) and the cause in the cluster's own words,
// naming the pod.
type Blocker struct {
	Reason  string
	Message string
}

// The kubelet's waiting reasons of a container whose image it cannot get.
var imagePullReasons = map[string]bool{
	"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true, "ErrImageNeverPull": true,
}

// The kubelet's waiting reasons of a container it cannot create or start.
var cannotStartReasons = map[string]bool{
	"CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true,
	"PreCreateHookError": true, "PreStartHookError": true,
}

// The runtime's reasons for a container that never ran: its command or
// configuration was refused (a crash of a running program is rapid-fail's).
var neverRanReasons = map[string]bool{"StartError": true, "ContainerCannotRun": true}

// PodBlocker is why one pod does not start; false when nothing stops it (it
// runs, or it is on its way: scheduled, pulling, creating). A pod being
// deleted or finished is not looked at.
func PodBlocker(p *corev1.Pod) (Blocker, bool) {
	if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return Blocker{}, false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return Blocker{Reason: v1.ReasonUnschedulable,
				Message: fmt.Sprintf("pod %s cannot be scheduled: %s", p.Name, orUnsaid(c.Message))}, true
		}
	}
	statuses := append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	for _, s := range statuses {
		if b, ok := containerBlocker(p, s); ok {
			return b, true
		}
	}
	return Blocker{}, false
}

func containerBlocker(p *corev1.Pod, s corev1.ContainerStatus) (Blocker, bool) {
	w := s.State.Waiting
	if w == nil {
		w = &corev1.ContainerStateWaiting{}
	}
	switch {
	case imagePullReasons[w.Reason]:
		return Blocker{Reason: v1.ReasonImagePullFailed, Message: fmt.Sprintf("pod %s: image %q of container %s cannot be pulled: %s: %s",
			p.Name, specImage(p, s), s.Name, w.Reason, orUnsaid(w.Message))}, true
	case cannotStartReasons[w.Reason]:
		return Blocker{Reason: v1.ReasonContainerCannotStart, Message: fmt.Sprintf("pod %s: container %s cannot start: %s: %s",
			p.Name, s.Name, w.Reason, orUnsaid(w.Message))}, true
	}
	// Between two attempts the container is terminated, then waiting in a
	// back-off: the same cause either way.
	for _, t := range []*corev1.ContainerStateTerminated{s.State.Terminated, s.LastTerminationState.Terminated} {
		if t != nil && neverRanReasons[t.Reason] && s.State.Running == nil {
			return Blocker{Reason: v1.ReasonContainerCannotStart, Message: fmt.Sprintf("pod %s: container %s cannot start: %s: %s",
				p.Name, s.Name, t.Reason, orUnsaid(t.Message))}, true
		}
	}
	return startupCheckBlocker(p, s)
}

// startupCheckBlocker finds a container the kubelet keeps restarting
// because it never passes its startup probe: it runs again, has not
// started, and its last run ended as the kubelet stops a container (exit
// 0 after the graceful stop, the kill's 137/143) or lasted as long as the
// probe allows (a program's own answer to SIGTERM: a Go program that is
// its container's PID 1 exits 2), not in a crash.
func startupCheckBlocker(p *corev1.Pod, s corev1.ContainerStatus) (Blocker, bool) {
	last := s.LastTerminationState.Terminated
	if s.State.Running == nil || s.Started == nil || *s.Started || s.RestartCount == 0 || last == nil {
		return Blocker{}, false
	}
	probe := containerSpec(p, s.Name).StartupProbe
	if probe == nil {
		return Blocker{}, false
	}
	limit := time.Duration(probe.PeriodSeconds*probe.FailureThreshold) * time.Second
	// The times are whole seconds, and the first probe comes up to a period
	// after the start.
	ranToTheLimit := !last.StartedAt.IsZero() && last.FinishedAt.Sub(last.StartedAt.Time) >= limit-time.Duration(probe.PeriodSeconds)*time.Second
	if last.ExitCode != 0 && last.ExitCode != 137 && last.ExitCode != 143 && !ranToTheLimit {
		return Blocker{}, false
	}
	return Blocker{Reason: v1.ReasonStartupCheckFailed, Message: fmt.Sprintf(
		"pod %s: container %s was restarted %d times without passing its startup check (%s, within %ds)",
		p.Name, s.Name, s.RestartCount, describeProbe(probe), probe.PeriodSeconds*probe.FailureThreshold)}, true
}

// describeProbe says what a probe asks, in the words of the pod's spec.
func describeProbe(probe *corev1.Probe) string {
	switch {
	case probe.HTTPGet != nil:
		return fmt.Sprintf("GET %s on port %s", probe.HTTPGet.Path, probe.HTTPGet.Port.String())
	case probe.GRPC != nil:
		return fmt.Sprintf("a gRPC health check on port %d", probe.GRPC.Port)
	case probe.TCPSocket != nil:
		return "a connection to port " + probe.TCPSocket.Port.String()
	}
	return "its startup probe"
}

// containerSpec is the pod's spec of the named container (empty when the
// status names one the spec does not have).
func containerSpec(p *corev1.Pod, name string) corev1.Container {
	for _, list := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for _, c := range list {
			if c.Name == name {
				return c
			}
		}
	}
	return corev1.Container{}
}

// specImage is the image as the pod asks for it (the status may hold a
// resolved name, or none before a pull succeeded).
func specImage(p *corev1.Pod, s corev1.ContainerStatus) string {
	if image := containerSpec(p, s.Name).Image; image != "" {
		return image
	}
	return s.Image
}

// Find is why a Deployment's pods do not start: the first pod by name with a
// blocker (so the answer does not change with the order of a list), else a
// refusal to create pods, else a rollout past its progress deadline; false
// when none of these holds.
func Find(d *appsv1.Deployment, pods []corev1.Pod) (Blocker, bool) {
	sorted := make([]*corev1.Pod, len(pods))
	for i := range pods {
		sorted[i] = &pods[i]
	}
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, p := range sorted {
		if b, ok := PodBlocker(p); ok {
			return b, true
		}
	}
	for _, c := range d.Status.Conditions {
		switch {
		case c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue:
			return Blocker{Reason: v1.ReasonPodCreateFailed, Message: "pods cannot be created: " + orUnsaid(c.Message)}, true
		case c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse && c.Reason == "ProgressDeadlineExceeded":
			return Blocker{Reason: v1.ReasonRolloutStalled, Message: "the rollout made no progress: " + orUnsaid(c.Message)}, true
		}
	}
	return Blocker{}, false
}

// RollingOut: the Deployment is replacing pods of an earlier version.
func RollingOut(d *appsv1.Deployment) bool {
	desired := int32(1)
	if d.Spec.Replicas != nil {
		desired = *d.Spec.Replicas
	}
	return d.Status.UpdatedReplicas < desired || d.Status.Replicas > d.Status.UpdatedReplicas
}

func orUnsaid(s string) string {
	if s == "" {
		return "no message"
	}
	return s
}
