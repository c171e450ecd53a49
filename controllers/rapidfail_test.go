package controllers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/vocabulary"
)

// workerPod is a running, ready worker of a pool, as the kubelet would report
// it (the test control plane runs no kubelet).
func workerPod(t *testing.T, ns, pool string) *corev1.Pod {
	t.Helper()
	pod := podOf(ns, pool+"-pool-0", vocabulary.ComponentPool, pool, "nginx")
	create(t, pod)
	setWorkerStatus(t, pod, 0)
	return pod
}

// setWorkerStatus reports the worker running and ready after restarts crashes.
func setWorkerStatus(t *testing.T, pod *corev1.Pod, restarts int32) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := get(pod, pod.Namespace, pod.Name); err != nil {
			return err
		}
		nginx := corev1.ContainerStatus{Name: "nginx", RestartCount: restarts, Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
		if restarts > 0 {
			nginx.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}
		}
		pod.Status = corev1.PodStatus{
			Phase:             corev1.PodRunning,
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{nginx},
		}
		return k8sClient.Status().Update(context.Background(), pod)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// blogRoute is the first route of the blog site in a farm's snapshot.
func blogRoute(nodeCluster string) (*routev3.Route, error) {
	r, ok := xdsServer.Routing(nodeCluster)
	if !ok {
		return nil, fmt.Errorf("no snapshot for %s", nodeCluster)
	}
	hosts, err := r.SiteVirtualHosts()
	if err != nil {
		return nil, err
	}
	for _, vh := range hosts {
		if vh.Name == "blog" {
			return vh.Routes[0], nil
		}
	}
	return nil, fmt.Errorf("no blog site in the snapshot of %s", nodeCluster)
}

func TestRapidFailProtectionStopsAPoolUntilItIsRestarted(t *testing.T) {
	ns := newNamespace(t)
	blog := appPool(ns, "blog")
	blog.Spec.RapidFailProtection = v1.RapidFailProtection{MaxFailures: 3, Interval: "1m"}
	create(t, blog, appPool(ns, "shop"), cachePolicy(ns, "static"), webFarm(ns, "contoso"))
	node := ns + "/contoso"
	testutil.Eventually(t, timeout, func() error {
		route, err := blogRoute(node)
		if err != nil {
			return err
		}
		if route.GetRoute() == nil {
			return fmt.Errorf("blog route %v, want it routed to the pool", route)
		}
		return nil
	})
	pod := workerPod(t, ns, "blog")

	poolState := func(phase v1.PoolPhase, replicas int32, reason string) func() error {
		return func() error {
			p := &v1.AppPool{}
			if err := get(p, ns, "blog"); err != nil {
				return err
			}
			if p.Status.Phase != phase {
				return fmt.Errorf("phase %q, want %q (failures %d, last %q)", p.Status.Phase, phase, p.Status.RecentFailures, p.Status.LastFailure)
			}
			d := &appsv1.Deployment{}
			if err := get(d, ns, "blog-pool"); err != nil {
				return err
			}
			if got := ptr.Deref(d.Spec.Replicas, -1); got != replicas {
				return fmt.Errorf("workers %d, want %d", got, replicas)
			}
			return readyCondition(p, func() []metav1.Condition { return p.Status.Conditions }, metav1.ConditionFalse, reason)
		}
	}

	t.Run("two crashes are counted and the pool keeps running", func(t *testing.T) {
		setWorkerStatus(t, pod, 1)
		setWorkerStatus(t, pod, 2)
		testutil.Eventually(t, timeout, func() error {
			p := &v1.AppPool{}
			if err := get(p, ns, "blog"); err != nil {
				return err
			}
			if p.Status.RecentFailures != 2 || p.Status.Phase == v1.PoolStopped {
				return fmt.Errorf("failures %d, phase %s; want 2 and not stopped", p.Status.RecentFailures, p.Status.Phase)
			}
			return nil
		})
	})

	t.Run("the third crash within the interval stops it: no workers, 503 from the frontend", func(t *testing.T) {
		start := time.Now()
		setWorkerStatus(t, pod, 3)
		testutil.Eventually(t, timeout, poolState(v1.PoolStopped, 0, v1.ReasonRapidFailProtection))
		p := &v1.AppPool{}
		if err := get(p, ns, "blog"); err != nil {
			t.Fatal(err)
		}
		if c := meta.FindStatusCondition(p.Status.Conditions, v1.ConditionStopped); c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1.ReasonRapidFailProtection {
			t.Errorf("Stopped condition %+v, want True with reason RapidFailProtection", c)
		}
		testutil.Eventually(t, timeout, func() error {
			route, err := blogRoute(node)
			if err != nil {
				return err
			}
			if route.GetDirectResponse().GetStatus() != 503 {
				return fmt.Errorf("blog route %v, want a direct 503", route)
			}
			return nil
		})
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("the frontend's routing took %s to answer 503, want under 2 s", took)
		}
	})

	t.Run("a restart annotation starts the workers again", func(t *testing.T) {
		p := &v1.AppPool{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "blog"}}
		update(t, p, func() {
			p.Annotations = map[string]string{v1.RestartAnnotation: "1"}
		})
		testutil.Eventually(t, timeout, func() error {
			if err := poolState(v1.PoolPending, 2, v1.ReasonProgressing)(); err != nil {
				return err
			}
			if err := get(p, ns, "blog"); err != nil {
				return err
			}
			if meta.FindStatusCondition(p.Status.Conditions, v1.ConditionStopped) != nil {
				return fmt.Errorf("the restarted pool still has a Stopped condition")
			}
			route, err := blogRoute(node)
			if err != nil {
				return err
			}
			if route.GetRoute() == nil {
				return fmt.Errorf("blog route %v, want it routed to the pool again", route)
			}
			return nil
		})
	})
}

// IIS's "Stop application pool", from the spec: the pool stops at once, its
// routes answer 503 from the frontend, and Started brings its workers back.
func TestAnAdministratorStopsAndStartsAPoolFromItsSpec(t *testing.T) {
	ns := newNamespace(t)
	create(t, appPool(ns, "blog"), appPool(ns, "shop"), cachePolicy(ns, "static"), webFarm(ns, "contoso"))
	node := ns + "/contoso"
	blog := &v1.AppPool{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "blog"}}
	state := func(want v1.PoolState, phase v1.PoolPhase, replicas int32, routed bool) func() error {
		return func() error {
			if err := get(blog, ns, "blog"); err != nil {
				return err
			}
			if blog.Status.Phase != phase {
				return fmt.Errorf("phase %q, want %q", blog.Status.Phase, phase)
			}
			d := &appsv1.Deployment{}
			if err := get(d, ns, "blog-pool"); err != nil {
				return err
			}
			if got := ptr.Deref(d.Spec.Replicas, -1); got != replicas {
				return fmt.Errorf("workers %d, want %d", got, replicas)
			}
			route, err := blogRoute(node)
			if err != nil {
				return err
			}
			if routed != (route.GetRoute() != nil) || !routed && route.GetDirectResponse().GetStatus() != 503 {
				return fmt.Errorf("blog route %v, want routed %v (else a direct 503)", route, routed)
			}
			return nil
		}
	}
	testutil.Eventually(t, timeout, state(v1.PoolStarted, v1.PoolPending, 2, true))

	start := time.Now()
	update(t, blog, func() { blog.Spec.State = v1.PoolStateStopped })
	testutil.Eventually(t, timeout, state(v1.PoolStateStopped, v1.PoolStopped, 0, false))
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the stop took %s to reach the frontend's routes, want under 2 s", took)
	}
	if err := readyCondition(blog, func() []metav1.Condition { return blog.Status.Conditions }, metav1.ConditionFalse, v1.ReasonStoppedByAdministrator); err != nil {
		t.Error(err)
	}
	expectEvent(t, ns, "blog", v1.ReasonStoppedByAdministrator, "spec.state is Stopped")

	update(t, blog, func() { blog.Spec.State = v1.PoolStarted })
	testutil.Eventually(t, timeout, state(v1.PoolStarted, v1.PoolPending, 2, true))
	expectEvent(t, ns, "blog", v1.ReasonStartedByAdministrator, "spec.state is Started")
	if meta.FindStatusCondition(blog.Status.Conditions, v1.ConditionStopped) != nil {
		t.Error("the started pool still has a Stopped condition")
	}
}
