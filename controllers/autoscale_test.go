package controllers_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

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
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/vocabulary"
)

// readyPod is a running, ready pod of the operator's with the given
// component and instance, on a node, as a kubelet would report it.
func readyPod(t *testing.T, ns, name, component, instance, node string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{
			vocabulary.LabelInstance: instance, vocabulary.LabelComponent: component, vocabulary.LabelManagedBy: vocabulary.ManagedBy,
		}},
		Spec: corev1.PodSpec{
			NodeName: node,
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{Name: "nginx", Image: "nginx", SecurityContext: &corev1.SecurityContext{
				AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			}}},
		},
	}
	create(t, pod)
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	if err := k8sClient.Status().Update(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

func poolReplicas(ns, pool string) (int32, error) {
	var d appsv1.Deployment
	if err := get(&d, ns, vocabulary.PoolName(pool)); err != nil {
		return 0, err
	}
	if d.Spec.Replicas == nil {
		return 0, fmt.Errorf("deployment %s has no replicas", d.Name)
	}
	return *d.Spec.Replicas, nil
}

func expectReplicas(t *testing.T, ns, pool string, want int32) {
	t.Helper()
	testutil.Eventually(t, timeout, func() error {
		got, err := poolReplicas(ns, pool)
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("%d workers, want %d", got, want)
		}
		return nil
	})
}

func expectEvent(t *testing.T, ns, pool, reason, note string) {
	t.Helper()
	testutil.Eventually(t, timeout, func() error {
		var events eventsv1.EventList
		if err := k8sClient.List(context.Background(), &events, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Regarding.Name == pool && e.Reason == reason && strings.Contains(e.Note, note) {
				return nil
			}
		}
		return fmt.Errorf("no %s event with %q among %d events", reason, note, len(events.Items))
	})
}

// The case study's arithmetic on a real API server, with Prometheus answers
// set by the test: 150 requests/s costing 2.5 megacycles on a 550 MHz node,
// at the 30 % policy, need 1,250 MHz: 5 workers of half a core (275 MHz).
func TestTheAutoscalerSizesAPoolFromItsCyclesPerRequest(t *testing.T) {
	ns := newNamespace(t)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: ns + "-550mhz", Labels: map[string]string{vocabulary.NodeMHzLabel: "550"}}}
	create(t, node)
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), node) })

	pool := appPool(ns, "shop")
	pool.Spec.Replicas = nil
	pool.Spec.Autoscaling = &v1.Autoscaling{MinReplicas: 1, MaxReplicas: 10}
	create(t, pool, appPool(ns, "blog"), cachePolicy(ns, "static"), webFarm(ns, "web"))
	expectReplicas(t, ns, "shop", 1) // the minimum until measured

	frontend := readyPod(t, ns, "web-frontend-0", vocabulary.ComponentFrontend, "web", node.Name)
	worker := readyPod(t, ns, "shop-pool-0", vocabulary.ComponentPool, "shop", node.Name)
	promStub.Set(ns, "envoy_cluster_upstream_rq_total", testutil.PromAnswer{ByPod: map[string]string{frontend.Name: "150"}})
	promStub.Set(ns, "container_cpu_usage_seconds_total", testutil.PromAnswer{ByPod: map[string]string{worker.Name: "0.682"}})

	expectReplicas(t, ns, "shop", 5)
	expectEvent(t, ns, "shop", v1.ReasonScaledOut, "1 -> 5 workers")
	testutil.Eventually(t, timeout, func() error {
		if err := get(pool, ns, "shop"); err != nil {
			return err
		}
		c := pool.Status.Capacity
		got := fmt.Sprintf("%s req/s, %s cores, %s Mc/req, %s MHz, %v recommended", c.RequestsPerSecond, c.CPUCores, c.MegacyclesPerRequest, c.RequiredMegahertz, ptr.Deref(c.RecommendedReplicas, -1))
		if want := "150.0 req/s, 0.682 cores, 2.501 Mc/req, 1250 MHz, 5 recommended"; got != want {
			return fmt.Errorf("status.capacity %s, want %s", got, want)
		}
		if c.LastScaleTime == nil || !strings.HasPrefix(c.LastScaleReason, "1 -> 5: ") {
			return fmt.Errorf("last scale %v %q, want the scale from 1 to 5", c.LastScaleTime, c.LastScaleReason)
		}
		if !meta.IsStatusConditionTrue(pool.Status.Conditions, v1.ConditionMetricsAvailable) {
			return fmt.Errorf("conditions %v, want MetricsAvailable", pool.Status.Conditions)
		}
		return nil
	})

	t.Run("unavailable metrics hold the workers and say so", func(t *testing.T) {
		promStub.Set(ns, "envoy_cluster_upstream_rq_total", testutil.PromAnswer{Error: "the query timed out"})
		testutil.Eventually(t, timeout, func() error {
			if err := get(pool, ns, "shop"); err != nil {
				return err
			}
			c := meta.FindStatusCondition(pool.Status.Conditions, v1.ConditionMetricsAvailable)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1.ReasonMetricsUnavailable || !strings.Contains(c.Message, "timed out") {
				return fmt.Errorf("MetricsAvailable %+v, want False for the timeout", c)
			}
			return nil
		})
		if got, err := poolReplicas(ns, "shop"); err != nil || got != 5 {
			t.Errorf("%d workers (%v) while metrics are unavailable, want 5 held", got, err)
		}
	})

	t.Run("an empty answer is unknown, not zero load", func(t *testing.T) {
		promStub.Set(ns, "envoy_cluster_upstream_rq_total", testutil.PromAnswer{})
		testutil.Eventually(t, timeout, func() error {
			if err := get(pool, ns, "shop"); err != nil {
				return err
			}
			if c := meta.FindStatusCondition(pool.Status.Conditions, v1.ConditionMetricsAvailable); c == nil || !strings.Contains(c.Message, "no series") {
				return fmt.Errorf("MetricsAvailable %+v, want unavailable for want of series", c)
			}
			return nil
		})
		if got, err := poolReplicas(ns, "shop"); err != nil || got != 5 {
			t.Errorf("%d workers (%v) without series, want 5 held", got, err)
		}
	})

	t.Run("less load scales in only after the stabilisation window", func(t *testing.T) {
		promStub.Set(ns, "envoy_cluster_upstream_rq_total", testutil.PromAnswer{ByPod: map[string]string{frontend.Name: "15"}})
		promStub.Set(ns, "container_cpu_usage_seconds_total", testutil.PromAnswer{ByPod: map[string]string{worker.Name: "0.0682"}})
		testutil.Eventually(t, timeout, func() error {
			if err := get(pool, ns, "shop"); err != nil {
				return err
			}
			if r := pool.Status.Capacity.RecommendedReplicas; r == nil || *r != 1 {
				return fmt.Errorf("recommended %v, want 1", r)
			}
			return nil
		})
		if got, err := poolReplicas(ns, "shop"); err != nil || got != 5 {
			t.Fatalf("%d workers (%v) within the 300 s window, want 5", got, err)
		}
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := get(pool, ns, "shop"); err != nil {
				return err
			}
			pool.Spec.Autoscaling.StabilizationWindow = "0s"
			return k8sClient.Update(context.Background(), pool)
		})
		if err != nil {
			t.Fatal(err)
		}
		expectReplicas(t, ns, "shop", 1)
		expectEvent(t, ns, "shop", v1.ReasonScaledIn, "5 -> 1 workers")
	})
}

// The same arithmetic for a pool of fixed size, as the seed plans a fixed
// farm: its status shows the figures and the 5 workers the load needs at the
// API's default target of 30 %, as a report; it keeps its 2 workers.
func TestAFixedPoolShowsItsCapacityAndKeepsItsWorkers(t *testing.T) {
	ns := newNamespace(t)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: ns + "-550mhz", Labels: map[string]string{vocabulary.NodeMHzLabel: "550"}}}
	create(t, node)
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), node) })

	pool := appPool(ns, "shop")
	create(t, pool, appPool(ns, "blog"), cachePolicy(ns, "static"), webFarm(ns, "web"))
	expectReplicas(t, ns, "shop", 2)
	frontend := readyPod(t, ns, "web-frontend-0", vocabulary.ComponentFrontend, "web", node.Name)
	worker := readyPod(t, ns, "shop-pool-0", vocabulary.ComponentPool, "shop", node.Name)
	promStub.Set(ns, "envoy_cluster_upstream_rq_total", testutil.PromAnswer{ByPod: map[string]string{frontend.Name: "150"}})
	promStub.Set(ns, "container_cpu_usage_seconds_total", testutil.PromAnswer{ByPod: map[string]string{worker.Name: "0.682"}})

	testutil.Eventually(t, timeout, func() error {
		if err := get(pool, ns, "shop"); err != nil {
			return err
		}
		c := pool.Status.Capacity
		got := fmt.Sprintf("%s req/s, %s cores, %s Mc/req, %s MHz, %v recommended", c.RequestsPerSecond, c.CPUCores, c.MegacyclesPerRequest, c.RequiredMegahertz, ptr.Deref(c.RecommendedReplicas, -1))
		if want := "150.0 req/s, 0.682 cores, 2.501 Mc/req, 1250 MHz, 5 recommended"; got != want {
			return fmt.Errorf("status.capacity %s, want %s", got, want)
		}
		if m := meta.FindStatusCondition(pool.Status.Conditions, v1.ConditionMetricsAvailable); m == nil || m.Status != metav1.ConditionTrue || !strings.Contains(m.Message, "a report only: keeping its fixed 2") {
			return fmt.Errorf("MetricsAvailable %+v, want True, saying the recommendation is a report", m)
		}
		return nil
	})
	// The status and the Deployment are written in one reconcile: the
	// recommendation is in status, and the workers stayed at 2.
	if got, err := poolReplicas(ns, "shop"); err != nil || got != 2 || pool.Status.Replicas != 2 || pool.Status.Capacity.LastScaleTime != nil {
		t.Errorf("%d workers (%v), status %d, last scale %v; want the fixed 2, never scaled", got, err, pool.Status.Replicas, pool.Status.Capacity.LastScaleTime)
	}
	if got := operatorGauge(t, "webfarm_pool_megacycles_per_request", ns, "shop"); got < 2.50 || got > 2.51 {
		t.Errorf("megacycles-per-request gauge %v, want 2.501", got)
	}

	t.Run("unavailable metrics say so and leave the workers alone", func(t *testing.T) {
		promStub.Set(ns, "envoy_cluster_upstream_rq_total", testutil.PromAnswer{Error: "the query timed out"})
		testutil.Eventually(t, timeout, func() error {
			if err := get(pool, ns, "shop"); err != nil {
				return err
			}
			c := meta.FindStatusCondition(pool.Status.Conditions, v1.ConditionMetricsAvailable)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1.ReasonMetricsUnavailable || !strings.Contains(c.Message, "timed out") {
				return fmt.Errorf("MetricsAvailable %+v, want False for the timeout", c)
			}
			return nil
		})
		if got, err := poolReplicas(ns, "shop"); err != nil || got != 2 {
			t.Errorf("%d workers (%v) while metrics are unavailable, want the fixed 2", got, err)
		}
	})
}

// Seed 000's mixed farm: workers on a 550 MHz and a 900 MHz node, each
// using half a core, count 275 + 450 = 725 MHz; at 100 requests/s that is
// 7.25 megacycles a request, and 2,417 MHz at 30 %: the two workers offer
// 725 MHz, and 5 more at the pool's mean of 362.5 MHz make 7.
func TestTheAutoscalerCountsWorkersAtTheirOwnNodesClockRates(t *testing.T) {
	ns := newNamespace(t)
	slow := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: ns + "-550mhz", Labels: map[string]string{vocabulary.NodeMHzLabel: "550"}}}
	fast := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: ns + "-900mhz", Labels: map[string]string{vocabulary.NodeMHzLabel: "900"}}}
	create(t, slow, fast)
	t.Cleanup(func() {
		_ = k8sClient.Delete(context.Background(), slow)
		_ = k8sClient.Delete(context.Background(), fast)
	})
	pool := appPool(ns, "blog")
	pool.Spec.Replicas = nil
	pool.Spec.Autoscaling = &v1.Autoscaling{MinReplicas: 2, MaxReplicas: 10}
	create(t, pool, appPool(ns, "shop"), cachePolicy(ns, "static"), webFarm(ns, "web"))
	frontend := readyPod(t, ns, "web-frontend-0", vocabulary.ComponentFrontend, "web", slow.Name)
	a := readyPod(t, ns, "blog-pool-a", vocabulary.ComponentPool, "blog", slow.Name)
	b := readyPod(t, ns, "blog-pool-b", vocabulary.ComponentPool, "blog", fast.Name)
	promStub.Set(ns, "envoy_cluster_upstream_rq_total", testutil.PromAnswer{ByPod: map[string]string{frontend.Name: "100"}})
	promStub.Set(ns, "container_cpu_usage_seconds_total", testutil.PromAnswer{ByPod: map[string]string{a.Name: "0.5", b.Name: "0.5"}})

	expectReplicas(t, ns, "blog", 7)
	testutil.Eventually(t, timeout, func() error {
		if err := get(pool, ns, "blog"); err != nil {
			return err
		}
		if c := pool.Status.Capacity; c.MegacyclesPerRequest != "7.250" || c.RequiredMegahertz != "2417" {
			return fmt.Errorf("%s megacycles/request and %s MHz, want 7.250 and 2417", c.MegacyclesPerRequest, c.RequiredMegahertz)
		}
		return nil
	})
}

// A NaN reading of a worker's CPU is unknown, not zero: the measurement is
// incomplete, and an incomplete measurement never scales a pool in.
func TestAnIncompleteMeasurementNeverScalesIn(t *testing.T) {
	ns := newNamespace(t)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: ns + "-550mhz", Labels: map[string]string{vocabulary.NodeMHzLabel: "550"}}}
	create(t, node)
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), node) })
	pool := appPool(ns, "shop")
	pool.Spec.Replicas = nil
	pool.Spec.Autoscaling = &v1.Autoscaling{MinReplicas: 1, MaxReplicas: 10, StabilizationWindow: "0s"}
	create(t, pool, appPool(ns, "blog"), cachePolicy(ns, "static"), webFarm(ns, "web"))
	frontend := readyPod(t, ns, "web-frontend-0", vocabulary.ComponentFrontend, "web", node.Name)
	a := readyPod(t, ns, "shop-pool-a", vocabulary.ComponentPool, "shop", node.Name)
	b := readyPod(t, ns, "shop-pool-b", vocabulary.ComponentPool, "shop", node.Name)
	requests := func(rps string) {
		promStub.Set(ns, "envoy_cluster_upstream_rq_total", testutil.PromAnswer{ByPod: map[string]string{frontend.Name: rps}})
	}
	cpu := func(coresA, coresB string) {
		promStub.Set(ns, "container_cpu_usage_seconds_total", testutil.PromAnswer{ByPod: map[string]string{a.Name: coresA, b.Name: coresB}})
	}
	requests("150")
	cpu("0.341", "0.341")
	expectReplicas(t, ns, "shop", 5)

	requests("15")
	cpu("NaN", "0.0341")
	// The autoscaler recommends 1 worker for the lower load (its metric says
	// so at once; the status' figures follow within a minute) but holds 5.
	testutil.Eventually(t, timeout, func() error {
		if got := operatorGauge(t, "webfarm_pool_autoscale_recommended_replicas", ns, "shop"); got != 1 {
			return fmt.Errorf("recommended %v, want 1", got)
		}
		return nil
	})
	// For four of the autoscaler's intervals, read every 100 ms, the count holds.
	poll := time.NewTicker(100 * time.Millisecond)
	defer poll.Stop()
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); <-poll.C {
		if got, err := poolReplicas(ns, "shop"); err != nil || got != 5 {
			t.Fatalf("%d workers (%v) on an incomplete measurement, want 5 held", got, err)
		}
	}

	cpu("0.0341", "0.0341")
	expectReplicas(t, ns, "shop", 1)
}

// operatorGauge reads a pool's gauge from the running operator's metrics.
func operatorGauge(t *testing.T, name, ns, pool string) float64 {
	t.Helper()
	return labelledGauge(t, name, map[string]string{"namespace": ns, "pool": pool})
}

// matches: the labels hold every wanted one.
func matches(labels, want map[string]string) bool {
	for k, v := range want {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// labelledGauge is the operator's gauge of that name with those labels, or
// -1 when it exports none.
func labelledGauge(t *testing.T, name string, want map[string]string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if matches(labels, want) {
				return m.GetGauge().GetValue()
			}
		}
	}
	return -1
}

// A farm's frontends are measured as a fixed pool is: one frontend serving
// 150 requests/s (50 over TLS) on 0.682 cores of a 550 MHz node costs 2.5
// megacycles a request and needs 1,250 MHz at 30 %, 5 frontends of the
// default half a core; the status shows it as a report, and the figures go
// when Prometheus cannot give them.
func TestAFarmShowsItsFrontendsCapacity(t *testing.T) {
	ns := newNamespace(t)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: ns + "-550mhz", Labels: map[string]string{vocabulary.NodeMHzLabel: "550"}}}
	create(t, node)
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), node) })

	farm := webFarm(ns, "web")
	create(t, appPool(ns, "shop"), appPool(ns, "blog"), cachePolicy(ns, "static"), farm)
	frontend := readyPod(t, ns, "web-frontend-0", vocabulary.ComponentFrontend, "web", node.Name)
	promStub.Set(ns, `envoy_http_conn_manager_prefix=~"farm|farm_https"`, testutil.PromAnswer{ByPod: map[string]string{frontend.Name: "150"}})
	promStub.Set(ns, `envoy_http_conn_manager_prefix="farm_https"`, testutil.PromAnswer{ByPod: map[string]string{frontend.Name: "50"}})
	promStub.Set(ns, "container_cpu_usage_seconds_total", testutil.PromAnswer{ByPod: map[string]string{frontend.Name: "0.682"}})

	testutil.Eventually(t, timeout, func() error {
		if err := get(farm, ns, "web"); err != nil {
			return err
		}
		c := farm.Status.FrontendCapacity
		got := fmt.Sprintf("%s req/s (%s over TLS), %s cores, %s Mc/req, %s MHz, %v recommended", c.RequestsPerSecond, c.HTTPSRequestsPerSecond,
			c.CPUCores, c.MegacyclesPerRequest, c.RequiredMegahertz, ptr.Deref(c.RecommendedReplicas, -1))
		if want := "150.0 req/s (50.0 over TLS), 0.682 cores, 2.501 Mc/req, 1250 MHz, 5 recommended"; got != want {
			return fmt.Errorf("status.frontendCapacity %s, want %s", got, want)
		}
		return nil
	})
	var frontends appsv1.Deployment
	if err := get(&frontends, ns, vocabulary.FrontendName("web")); err != nil || ptr.Deref(frontends.Spec.Replicas, -1) != v1.DefaultFrontendReplicas {
		t.Errorf("frontend Deployment at %v replicas (%v), want its own %d: the recommendation is a report",
			ptr.Deref(frontends.Spec.Replicas, -1), err, v1.DefaultFrontendReplicas)
	}
	if got := labelledGauge(t, "webfarm_frontend_megacycles_per_request", map[string]string{"namespace": ns, "farm": "web"}); got < 2.50 || got > 2.51 {
		t.Errorf("frontend megacycles-per-request gauge %v, want 2.501", got)
	}

	t.Run("unavailable metrics clear the figures", func(t *testing.T) {
		promStub.Set(ns, `envoy_http_conn_manager_prefix=~"farm|farm_https"`, testutil.PromAnswer{Error: "the query timed out"})
		testutil.Eventually(t, timeout, func() error {
			if err := get(farm, ns, "web"); err != nil {
				return err
			}
			if c := farm.Status.FrontendCapacity; c != (v1.FrontendCapacity{}) {
				return fmt.Errorf("status.frontendCapacity %+v, want none", c)
			}
			if got := labelledGauge(t, "webfarm_frontend_metrics_unavailable", map[string]string{"namespace": ns, "farm": "web"}); got != 1 {
				return fmt.Errorf("frontend metrics-unavailable gauge %v, want 1", got)
			}
			return nil
		})
	})
}

// A farm with frontend.autoscaling runs the frontends its load needs
// within its bounds: the load above needs 5, its maximum gives 3, and the
// change is told in an event and the status.
func TestAFarmThatAsksScalesItsFrontends(t *testing.T) {
	ns := newNamespace(t)
	farm := webFarm(ns, "web")
	farm.Spec.Frontend.Autoscaling = &v1.FrontendAutoscaling{MinReplicas: 1, MaxReplicas: 3}
	create(t, appPool(ns, "shop"), appPool(ns, "blog"), cachePolicy(ns, "static"), farm)
	frontend := readyPod(t, ns, "web-frontend-0", vocabulary.ComponentFrontend, "web", "")
	promStub.Set(ns, `envoy_http_conn_manager_prefix=~"farm|farm_https"`, testutil.PromAnswer{ByPod: map[string]string{frontend.Name: "150"}})
	promStub.Set(ns, `envoy_http_conn_manager_prefix="farm_https"`, testutil.PromAnswer{ByPod: map[string]string{}})
	promStub.Set(ns, "container_cpu_usage_seconds_total", testutil.PromAnswer{ByPod: map[string]string{frontend.Name: "1.5"}})

	testutil.Eventually(t, timeout, func() error {
		var frontends appsv1.Deployment
		if err := get(&frontends, ns, vocabulary.FrontendName("web")); err != nil {
			return err
		}
		if n := ptr.Deref(frontends.Spec.Replicas, -1); n != 3 {
			return fmt.Errorf("frontend Deployment at %d replicas, want autoscaling's maximum 3", n)
		}
		if err := get(farm, ns, "web"); err != nil {
			return err
		}
		if c := farm.Status.FrontendCapacity; c.LastScaleTime == nil || !strings.HasPrefix(c.LastScaleReason, "2 -> 3") {
			return fmt.Errorf("status.frontendCapacity's last scaling %v %q, want 2 -> 3", c.LastScaleTime, c.LastScaleReason)
		}
		return nil
	})
	expectEvent(t, ns, "web", v1.ReasonScaledOut, "2 -> 3 frontends")
}
