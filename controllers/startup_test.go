package controllers_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/render/k8s"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/vocabulary"
)

// generatedPod is a pod of one component instance as its Deployment would
// make it, with the status a kubelet or the scheduler would report (the test
// control plane runs neither).
func generatedPod(t *testing.T, ns, name, component, instance string, status corev1.PodStatus) *corev1.Pod {
	t.Helper()
	pod := podOf(ns, name, component, instance, "app")
	create(t, pod)
	setPodStatus(t, pod, status)
	return pod
}

// podOf is a restricted pod of one container, labelled as the operator
// labels the pods of a component instance.
func podOf(ns, name, component, instance, container string) *corev1.Pod {
	labels := k8s.SelectorLabels(component, instance)
	labels[vocabulary.LabelComponent], labels[vocabulary.LabelManagedBy] = component, vocabulary.ManagedBy
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{Name: container, Image: "registry.example.com/app:does-not-exist", SecurityContext: &corev1.SecurityContext{
				AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			}}},
		},
	}
}

func setPodStatus(t *testing.T, pod *corev1.Pod, status corev1.PodStatus) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := get(pod, pod.Namespace, pod.Name); err != nil {
			return err
		}
		pod.Status = status
		return k8sClient.Status().Update(context.Background(), pod)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func waitingStatus(reason, message string) corev1.PodStatus {
	return corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "app",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}}}}
}

func unschedulableStatus() corev1.PodStatus {
	return corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled,
		Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes are available: 1 Insufficient cpu."}}}
}

// expectCondition waits for obj's condition of the type to have the status,
// the reason and a message containing each of the parts.
func expectCondition(t *testing.T, obj client.Object, conds func() []metav1.Condition, condType string, status metav1.ConditionStatus, reason string, parts ...string) {
	t.Helper()
	testutil.Eventually(t, timeout, func() error {
		if err := get(obj, obj.GetNamespace(), obj.GetName()); err != nil {
			return err
		}
		c := meta.FindStatusCondition(conds(), condType)
		if c == nil || c.Status != status || c.Reason != reason {
			return fmt.Errorf("%s is %+v, want %s/%s", condType, c, status, reason)
		}
		for _, p := range parts {
			if !strings.Contains(c.Message, p) {
				return fmt.Errorf("%s's message %q lacks %q", condType, c.Message, p)
			}
		}
		return nil
	})
}

// warningEvents are the Warning events of one reason about one object.
func warningEvents(t *testing.T, ns, name, reason string) []eventsv1.Event {
	t.Helper()
	var events eventsv1.EventList
	if err := k8sClient.List(context.Background(), &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []eventsv1.Event
	for _, e := range events.Items {
		if e.Regarding.Name == name && e.Reason == reason && e.Type == corev1.EventTypeWarning {
			out = append(out, e)
		}
	}
	return out
}

// startupBlockedReason is the reason of the operator's startup-blocked series
// for one object ("" when it has none).
func startupBlockedReason(t *testing.T, kind, ns, name string) string {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "webfarm_startup_blocked" {
			continue
		}
		for _, m := range f.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			if l["kind"] == kind && l["namespace"] == ns && l["name"] == name && m.GetGauge().GetValue() == 1 {
				return l["reason"]
			}
		}
	}
	return ""
}

func expectBlockedMetric(t *testing.T, kind, ns, name, reason string) {
	t.Helper()
	testutil.Eventually(t, timeout, func() error {
		if got := startupBlockedReason(t, kind, ns, name); got != reason {
			return fmt.Errorf("webfarm_startup_blocked for %s %s has reason %q, want %q", kind, name, got, reason)
		}
		return nil
	})
}

func TestAPoolWhoseImageCannotBePulledSaysSoOnceAndClearsWhenItRuns(t *testing.T) {
	ns := newNamespace(t)
	pool := appPool(ns, "shop")
	pool.Spec.Replicas = ptr.To[int32](1)
	create(t, pool)
	conds := func() []metav1.Condition { return pool.Status.Conditions }
	expectCondition(t, pool, conds, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonProgressing)

	pod := generatedPod(t, ns, "shop-pool-7f9c-x1", vocabulary.ComponentPool, "shop",
		waitingStatus("ErrImagePull", `failed to resolve reference "registry.example.com/app:does-not-exist": not found`))
	expectCondition(t, pool, conds, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonImagePullFailed,
		`workers: pod shop-pool-7f9c-x1: image "registry.example.com/app:does-not-exist" of container app cannot be pulled: ErrImagePull`)
	expectBlockedMetric(t, "AppPool", ns, "shop", v1.ReasonImagePullFailed)
	testutil.Eventually(t, timeout, func() error {
		if n := len(warningEvents(t, ns, "shop", v1.ReasonImagePullFailed)); n != 1 {
			return fmt.Errorf("%d ImagePullFailed warnings, want 1", n)
		}
		return nil
	})

	// The kubelet backs off: the same cause in other words, no second warning.
	setPodStatus(t, pod, waitingStatus("ImagePullBackOff", `Back-off pulling image "registry.example.com/app:does-not-exist"`))
	expectCondition(t, pool, conds, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonImagePullFailed, "ImagePullBackOff: Back-off pulling image")
	if n := len(warningEvents(t, ns, "shop", v1.ReasonImagePullFailed)); n != 1 {
		t.Errorf("%d ImagePullFailed warnings after the back-off, want still 1", n)
	}

	// The image is fixed: the worker runs and the pool serves.
	setPodStatus(t, pod, corev1.PodStatus{Phase: corev1.PodRunning,
		Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}})
	markDeploymentReady(t, ns, vocabulary.PoolName("shop"))
	expectCondition(t, pool, conds, v1.ConditionReady, metav1.ConditionTrue, v1.ReasonAvailable)
	expectBlockedMetric(t, "AppPool", ns, "shop", "")
}

func TestAnUpdateWithNoRoomForItsNewWorkerIsRolloutStalledWhileTheOldOnesServe(t *testing.T) {
	ns := newNamespace(t)
	pool := appPool(ns, "shop")
	create(t, pool)
	conds := func() []metav1.Condition { return pool.Status.Conditions }
	testutil.Eventually(t, timeout, func() error { return get(&appsv1.Deployment{}, ns, vocabulary.PoolName("shop")) })
	markDeploymentReady(t, ns, vocabulary.PoolName("shop"))
	expectCondition(t, pool, conds, v1.ConditionReady, metav1.ConditionTrue, v1.ReasonAvailable)

	// Half-way through an update: two old workers ready, the new one has no node.
	d := &appsv1.Deployment{}
	if err := get(d, ns, vocabulary.PoolName("shop")); err != nil {
		t.Fatal(err)
	}
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 3, UpdatedReplicas: 1, ReadyReplicas: 2, AvailableReplicas: 2}
	if err := k8sClient.Status().Update(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	generatedPod(t, ns, "shop-pool-new-1", vocabulary.ComponentPool, "shop", unschedulableStatus())
	expectCondition(t, pool, conds, v1.ConditionReady, metav1.ConditionTrue, v1.ReasonRolloutStalled,
		"workers: the update cannot finish, pod shop-pool-new-1 cannot be scheduled: 0/1 nodes are available: 1 Insufficient cpu.", "2/2 replicas ready keep serving")
	expectCondition(t, pool, conds, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonRolloutStalled)
	expectBlockedMetric(t, "AppPool", ns, "shop", v1.ReasonRolloutStalled)
}

func TestAFrontendThatCannotBeScheduledIsReportedOnTheFarm(t *testing.T) {
	ns := newNamespace(t)
	create(t, appPool(ns, "shop"), appPool(ns, "blog"), cachePolicy(ns, "static"))
	farm := webFarm(ns, "web")
	create(t, farm)
	generatedPod(t, ns, "web-frontend-5d-a", vocabulary.ComponentFrontend, "web", unschedulableStatus())
	expectCondition(t, farm, func() []metav1.Condition { return farm.Status.Conditions }, v1.ConditionReady, metav1.ConditionFalse,
		v1.ReasonUnschedulable, "frontend: pod web-frontend-5d-a cannot be scheduled: 0/1 nodes are available: 1 Insufficient cpu.")
	expectBlockedMetric(t, "WebFarm", ns, "web", v1.ReasonUnschedulable)
	testutil.Eventually(t, timeout, func() error {
		if len(warningEvents(t, ns, "web", v1.ReasonUnschedulable)) != 1 {
			return fmt.Errorf("no Unschedulable warning on the farm")
		}
		return nil
	})
}

func TestACacheTierWhoseContainerCannotStartIsReportedOnThePolicy(t *testing.T) {
	ns := newNamespace(t)
	policy := cachePolicy(ns, "static")
	create(t, appPool(ns, "shop"), appPool(ns, "blog"), policy, webFarm(ns, "web"))
	status := waitingStatus("CrashLoopBackOff", "back-off 10s restarting failed container")
	status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{Reason: "StartError", ExitCode: 128,
		Message: `exec: "cache-agent": executable file not found in $PATH`}
	generatedPod(t, ns, "static-cache-6b-a", vocabulary.ComponentCache, "static", status)
	expectCondition(t, policy, func() []metav1.Condition { return policy.Status.Conditions }, v1.ConditionReady, metav1.ConditionFalse,
		v1.ReasonContainerCannotStart, `cache: pod static-cache-6b-a: container app cannot start: StartError: exec: "cache-agent"`)
	expectBlockedMetric(t, "CachePolicy", ns, "static", v1.ReasonContainerCannotStart)
}
