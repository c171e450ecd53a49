package cpumonitor

import (
	"context"
	"testing"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/observations"
	webfarmscheme "webfarm.dev/operator/internal/scheme"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/vocabulary"
)

const cpuMetric = "container_cpu_usage_seconds_total"

var pool = types.NamespacedName{Namespace: "shop", Name: "web"}

func appPool(limit v1.CPULimit, phase v1.PoolPhase) *v1.AppPool {
	return &v1.AppPool{
		ObjectMeta: metav1.ObjectMeta{Namespace: pool.Namespace, Name: pool.Name},
		Spec:       v1.AppPoolSpec{Content: &v1.Content{ConfigMap: v1.ConfigMapContent{Name: "site"}}, CPULimit: limit},
		Status:     v1.AppPoolStatus{Phase: phase},
	}
}

// worker is a running worker pod of the pool with a limit of one core.
func worker(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: pool.Namespace, Name: name, Labels: map[string]string{
			vocabulary.LabelManagedBy: vocabulary.ManagedBy, vocabulary.LabelComponent: vocabulary.ComponentPool, vocabulary.LabelInstance: pool.Name,
		}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
		}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

func newMonitor(t *testing.T, stub *testutil.PromStub, objects ...client.Object) *CPUMonitor {
	t.Helper()
	scheme := webfarmscheme.New()
	prom, err := promapi.NewClient(promapi.Config{Address: stub.URL})
	if err != nil {
		t.Fatal(err)
	}
	return &CPUMonitor{
		Client:       fake.NewClientBuilder().WithScheme(scheme).WithObjects(objects...).WithStatusSubresource(&v1.AppPool{}).Build(),
		Prometheus:   promv1.NewAPI(prom),
		Observations: &observations.Store{},
	}
}

var reportOver50 = v1.CPULimit{Percent: 50, Interval: "1m", Action: v1.CPULimitReport}

func TestTheCPUMonitorReadsAPoolsCPUAgainstItsWorkersLimits(t *testing.T) {
	for _, tt := range []struct {
		name        string
		answer      testutil.PromAnswer
		wantPercent float64
	}{
		{"every worker answered: their cores over their limits", testutil.PromAnswer{ByPod: map[string]string{"web-pool-a": "0.5", "web-pool-b": "0.3"}}, 40},
		{"a worker without a series adds no use but keeps its limit", testutil.PromAnswer{ByPod: map[string]string{"web-pool-a": "0.5"}}, 25},
		{"a NaN sample is unknown, left out like a missing series", testutil.PromAnswer{ByPod: map[string]string{"web-pool-a": "0.5", "web-pool-b": "NaN"}}, 25},
		{"a series of another pod adds nothing to the pool", testutil.PromAnswer{ByPod: map[string]string{"web-pool-a": "0.5", "web-pool-b": "0.3", "other-pool-c": "1"}}, 40},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stub := testutil.NewPromStub()
			defer stub.Close()
			stub.Set(pool.Namespace, cpuMetric, tt.answer)
			m := newMonitor(t, stub, appPool(reportOver50, v1.PoolRunning), worker("web-pool-a"), worker("web-pool-b"))
			if err := m.check(context.Background()); err != nil {
				t.Fatalf("check: %v", err)
			}
			if got := m.Observations.CPU(pool).Percent; got != tt.wantPercent {
				t.Errorf("observed %v%%, want %v%%", got, tt.wantPercent)
			}
			if got := promtest.ToFloat64(poolCPUPercent.WithLabelValues(pool.Namespace, pool.Name)); got != tt.wantPercent {
				t.Errorf("metric %v%%, want %v%%", got, tt.wantPercent)
			}
		})
	}
}

func TestTheCPUMonitorKeepsTheLastReadingWhenPrometheusCannotAnswer(t *testing.T) {
	for _, tt := range []struct {
		name   string
		answer testutil.PromAnswer
	}{
		{"prometheus reports an error", testutil.PromAnswer{Error: "query timed out"}},
		{"prometheus knows no series: unknown, not zero", testutil.PromAnswer{ByPod: map[string]string{}}},
		{"every sample is NaN", testutil.PromAnswer{ByPod: map[string]string{"web-pool-a": "NaN", "web-pool-b": "NaN"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stub := testutil.NewPromStub()
			defer stub.Close()
			stub.Set(pool.Namespace, cpuMetric, testutil.PromAnswer{ByPod: map[string]string{"web-pool-a": "0.5", "web-pool-b": "0.3"}})
			m := newMonitor(t, stub, appPool(reportOver50, v1.PoolRunning), worker("web-pool-a"), worker("web-pool-b"))
			if err := m.check(context.Background()); err != nil {
				t.Fatalf("first check: %v", err)
			}
			stub.Set(pool.Namespace, cpuMetric, tt.answer)
			err := m.check(context.Background())
			if got := m.Observations.CPU(pool).Percent; got != 40 {
				t.Errorf("observed %v%% after the failed reading, want the last 40%%", got)
			}
			if tt.answer.Error != "" && err == nil {
				t.Error("check returned no error for Prometheus's error")
			}
		})
	}
}

func TestAPoolWithoutRunningWorkersReadsZeroNotItsLastReading(t *testing.T) {
	stub := testutil.NewPromStub()
	defer stub.Close()
	stub.Set(pool.Namespace, cpuMetric, testutil.PromAnswer{ByPod: map[string]string{"web-pool-a": "0.5", "web-pool-b": "0.3"}})
	a, b := worker("web-pool-a"), worker("web-pool-b")
	m := newMonitor(t, stub, appPool(reportOver50, v1.PoolRunning), a, b)
	if err := m.check(context.Background()); err != nil {
		t.Fatalf("first check: %v", err)
	}
	// Idle shutdown took the workers away: nothing runs, so nothing is used
	// (an over-limit reading must not outlive its workers).
	for _, w := range []*corev1.Pod{a, b} {
		if err := m.Client.Delete(context.Background(), w); err != nil {
			t.Fatal(err)
		}
	}
	// Another pool of the namespace still has a series: the answer is a reading.
	stub.Set(pool.Namespace, cpuMetric, testutil.PromAnswer{ByPod: map[string]string{"other-pool-c": "1"}})
	if err := m.check(context.Background()); err != nil {
		t.Fatalf("check: %v", err)
	}
	if got := m.Observations.CPU(pool).Percent; got != 0 {
		t.Errorf("observed %v%% with no running worker, want 0%%", got)
	}
}

func TestTheCPUMonitorWatchesOnlyPoolsWithAReportedLimit(t *testing.T) {
	for _, tt := range []struct {
		name string
		pool *v1.AppPool
	}{
		{"a pool without a cpuLimit", appPool(v1.CPULimit{}, v1.PoolRunning)},
		{"a stopped pool", appPool(reportOver50, v1.PoolStopped)},
		{"a pool whose CPU is capped at its limit", appPool(v1.CPULimit{Percent: 50, Interval: "1m", Action: v1.CPULimitThrottle}, v1.PoolRunning)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stub := testutil.NewPromStub()
			defer stub.Close()
			stub.Set(pool.Namespace, cpuMetric, testutil.PromAnswer{ByPod: map[string]string{"web-pool-a": "0.9"}})
			m := newMonitor(t, stub, tt.pool, worker("web-pool-a"))
			if err := m.check(context.Background()); err != nil {
				t.Fatalf("check: %v", err)
			}
			if got := m.Observations.CPU(pool); got.Percent != 0 {
				t.Errorf("observed %+v of a pool not watched", got)
			}
		})
	}
}
