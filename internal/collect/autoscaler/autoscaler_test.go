package autoscaler

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/autoscale"
	"webfarm.dev/operator/internal/observations"
	webfarmscheme "webfarm.dev/operator/internal/scheme"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/vocabulary"
)

const (
	requestsMetric = "envoy_cluster_upstream_rq_total"
	cpuMetric      = "container_cpu_usage_seconds_total"
	farmsByPool    = "poolsOfFarm"
)

var pool = types.NamespacedName{Namespace: "shop", Name: "web"}

func readyPod(name, component, instance string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: pool.Namespace, Name: name, Labels: map[string]string{
			vocabulary.LabelManagedBy: vocabulary.ManagedBy, vocabulary.LabelComponent: component, vocabulary.LabelInstance: instance,
		}},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
}

// newAutoscaler measures the autoscaled pool "web" (two workers, the
// Deployment at two replicas), routed to by farm "contoso" (one frontend),
// from stub.
func newAutoscaler(t *testing.T, stub *testutil.PromStub) *Autoscaler {
	t.Helper()
	return newAutoscalerOf(t, stub, &v1.AppPool{ObjectMeta: metav1.ObjectMeta{Namespace: pool.Namespace, Name: pool.Name}, Spec: v1.AppPoolSpec{
		Content:     &v1.Content{ConfigMap: v1.ConfigMapContent{Name: "site"}},
		Autoscaling: &v1.Autoscaling{MinReplicas: 1, MaxReplicas: 10},
	}})
}

// newAutoscalerOf is newAutoscaler for the given pool "web".
func newAutoscalerOf(t *testing.T, stub *testutil.PromStub, p *v1.AppPool) *Autoscaler {
	t.Helper()
	scheme := webfarmscheme.New()
	objects := []client.Object{
		p,
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: pool.Namespace, Name: vocabulary.PoolName(pool.Name)}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)}},
		&v1.WebFarm{ObjectMeta: metav1.ObjectMeta{Namespace: pool.Namespace, Name: "contoso"}, Spec: v1.WebFarmSpec{Sites: []v1.Site{
			{Name: "blog", Hosts: []v1.Hostname{"blog.example"}, Routes: []v1.Route{{AppPool: v1.ObjectName(pool.Name)}}},
		}}},
		readyPod("web-pool-a", vocabulary.ComponentPool, pool.Name),
		readyPod("web-pool-b", vocabulary.ComponentPool, pool.Name),
		readyPod("contoso-frontend-a", vocabulary.ComponentFrontend, "contoso"),
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objects...).
		WithIndex(&v1.WebFarm{}, farmsByPool, func(o client.Object) []string {
			var pools []string
			for _, s := range o.(*v1.WebFarm).Spec.Sites {
				for _, r := range s.Routes {
					pools = append(pools, string(r.AppPool))
				}
			}
			return pools
		}).Build()
	prom, err := promapi.NewClient(promapi.Config{Address: stub.URL})
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(Options{}, c, promv1.NewAPI(prom), farmsByPool, &observations.Store{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	a.states = map[types.NamespacedName]*autoscale.State{}
	return a
}

func TestTheAutoscalerDecidesFromPrometheusOrHoldsWithoutIt(t *testing.T) {
	requests := func(v string) testutil.PromAnswer {
		return testutil.PromAnswer{ByPod: map[string]string{"contoso-frontend-a": v}}
	}
	for _, tt := range []struct {
		name             string
		requests, cpu    testutil.PromAnswer
		wantUnavailable  bool
		wantReplicas     int32
		wantReasonSubstr string
	}{
		{"every frontend and worker measured: a decision from the figures", requests("100"),
			testutil.PromAnswer{ByPod: map[string]string{"web-pool-a": "0.4", "web-pool-b": "0.4"}}, false, 6, "needs 5333 MHz: 6 workers"},
		{"a worker without a series: measured, but no scaling in", requests("1"),
			testutil.PromAnswer{ByPod: map[string]string{"web-pool-a": "0.01"}}, false, 2, "not every worker was measured"},
		{"prometheus fails the requests query: metrics unavailable, replicas held", testutil.PromAnswer{Error: "query timed out"},
			testutil.PromAnswer{ByPod: map[string]string{"web-pool-a": "0.4", "web-pool-b": "0.4"}}, true, 2, "metrics unavailable"},
		{"no CPU series at all: unknown, not zero", requests("100"),
			testutil.PromAnswer{ByPod: map[string]string{}}, true, 2, "metrics unavailable"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stub := testutil.NewPromStub()
			defer stub.Close()
			stub.Set(pool.Namespace, requestsMetric, tt.requests)
			stub.Set(pool.Namespace, cpuMetric, tt.cpu)
			a := newAutoscaler(t, stub)
			a.run(context.Background())
			d, ok := a.Observations.Scale(pool)
			if !ok {
				t.Fatal("no decision stored")
			}
			if d.MetricsUnavailable != tt.wantUnavailable || (d.Measured == nil) != tt.wantUnavailable {
				t.Errorf("metrics unavailable %v, measured %+v; want unavailable %v", d.MetricsUnavailable, d.Measured, tt.wantUnavailable)
			}
			if d.Replicas != tt.wantReplicas || !strings.Contains(d.Reason, tt.wantReasonSubstr) {
				t.Errorf("%d replicas (%s), want %d (%s)", d.Replicas, d.Reason, tt.wantReplicas, tt.wantReasonSubstr)
			}
			wantGauge := 0.0
			if tt.wantUnavailable {
				wantGauge = 1
			}
			if got := promtest.ToFloat64(poolMetricsUnavailable.WithLabelValues(pool.Namespace, pool.Name)); got != wantGauge {
				t.Errorf("metrics-unavailable gauge %v, want %v", got, wantGauge)
			}
		})
	}
}

// Once no Prometheus answers, a sweep asks it nothing more: every other pool
// of the sweep is unavailable at once, instead of each waiting for its own
// query's timeout. An error Prometheus answers with is one query's.
func TestASweepStopsAskingPrometheusOnceItDoesNotAnswer(t *testing.T) {
	stub := testutil.NewPromStub()
	defer stub.Close()
	stub.Set(pool.Namespace, requestsMetric, testutil.PromAnswer{Unreachable: true})
	a := newAutoscaler(t, stub)
	second := &v1.AppPool{ObjectMeta: metav1.ObjectMeta{Namespace: pool.Namespace, Name: "web2"}, Spec: v1.AppPoolSpec{
		Content: &v1.Content{ConfigMap: v1.ConfigMapContent{Name: "site"}}, Replicas: ptr.To[int32](1)}}
	if err := a.Client.Create(context.Background(), second); err != nil {
		t.Fatal(err)
	}
	if err := a.Client.Create(context.Background(), &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: pool.Namespace, Name: vocabulary.PoolName("web2")},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1)}}); err != nil {
		t.Fatal(err)
	}
	a.run(context.Background())
	for _, key := range []types.NamespacedName{pool, {Namespace: pool.Namespace, Name: "web2"}} {
		if d, ok := a.Observations.Scale(key); !ok || !d.MetricsUnavailable {
			t.Errorf("pool %s: %+v (stored %v), want metrics unavailable", key, d, ok)
		}
	}
	if n := stub.Queries(); n != 1 {
		t.Errorf("the sweep asked Prometheus %d times, want 1: it did not answer the first", n)
	}

	stub.Set(pool.Namespace, requestsMetric, testutil.PromAnswer{Error: "query timed out"})
	a.run(context.Background())
	if n := stub.Queries(); n != 4 {
		t.Errorf("after an answered error the sweep asked Prometheus %d times in all, want 4: each pool its own, and the farm's frontends theirs", n)
	}
}

// fixedPool is pool "web" at two replicas, without autoscaling.
func fixedPool(status v1.AppPoolStatus) *v1.AppPool {
	return &v1.AppPool{ObjectMeta: metav1.ObjectMeta{Namespace: pool.Namespace, Name: pool.Name}, Spec: v1.AppPoolSpec{
		Content:  &v1.Content{ConfigMap: v1.ConfigMapContent{Name: "site"}},
		Replicas: ptr.To[int32](2),
	}, Status: status}
}

// A pool of fixed size is measured as an autoscaled one, at the API's
// default target of 30 %, and its recommendation is a report: 100 requests/s
// on two workers of 0.4 cores at the default 2,000 MHz cost 16 megacycles
// each and need 5,333 MHz, 6 workers of half a core; the pool keeps 2.
func TestTheAutoscalerReportsTheCapacityOfAPoolOfFixedSize(t *testing.T) {
	measuredCPU := testutil.PromAnswer{ByPod: map[string]string{"web-pool-a": "0.4", "web-pool-b": "0.4"}}
	for _, tt := range []struct {
		name          string
		status        v1.AppPoolStatus
		requests, cpu testutil.PromAnswer
		wantDecision  bool
		wantFigures   string // "" for none
		wantReason    string
	}{
		{"a running fixed pool with measurements gets figures and a recommendation it does not follow", v1.AppPoolStatus{},
			testutil.PromAnswer{ByPod: map[string]string{"contoso-frontend-a": "100"}}, measuredCPU,
			true, "100.0 req/s, 0.800 cores, 16.000 Mc/req, 5333 MHz, 6 recommended, 2 replicas", "a report only: keeping its fixed 2"},
		{"a fixed pool without measurements gets no figures and says why", v1.AppPoolStatus{},
			testutil.PromAnswer{ByPod: map[string]string{}}, measuredCPU, true, "", "metrics unavailable"},
		{"a frontend's NaN request rate leaves it unmeasured: the figures are said to understate", v1.AppPoolStatus{},
			testutil.PromAnswer{ByPod: map[string]string{"contoso-frontend-a": "NaN"}}, measuredCPU,
			true, "0.0 req/s, 0.800 cores, 0.000 Mc/req, 0 MHz, 1 recommended, 2 replicas", "may understate"},
		{"a worker without a series still gives figures, said to understate", v1.AppPoolStatus{},
			testutil.PromAnswer{ByPod: map[string]string{"contoso-frontend-a": "100"}}, testutil.PromAnswer{ByPod: map[string]string{"web-pool-a": "0.4"}},
			true, "100.0 req/s, 0.400 cores, 8.000 Mc/req, 2667 MHz, 3 recommended, 2 replicas", "may understate"},
		{"an idle fixed pool is not measured", v1.AppPoolStatus{IdleSince: &metav1.Time{Time: time.Date(2026, 11, 28, 18, 0, 0, 0, time.UTC)}},
			testutil.PromAnswer{ByPod: map[string]string{"contoso-frontend-a": "100"}}, measuredCPU, false, "", ""},
		{"a stopped fixed pool is not measured", v1.AppPoolStatus{Phase: v1.PoolStopped},
			testutil.PromAnswer{ByPod: map[string]string{"contoso-frontend-a": "100"}}, measuredCPU, false, "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stub := testutil.NewPromStub()
			defer stub.Close()
			stub.Set(pool.Namespace, requestsMetric, tt.requests)
			stub.Set(pool.Namespace, cpuMetric, tt.cpu)
			a := newAutoscalerOf(t, stub, fixedPool(tt.status))
			a.run(context.Background())
			d, ok := a.Observations.Scale(pool)
			if ok != tt.wantDecision {
				t.Fatalf("a decision stored: %v, want %v", ok, tt.wantDecision)
			}
			if !ok {
				return
			}
			if d.Replicas != 2 || d.Scaled {
				t.Errorf("%d replicas (scaled %v), want the fixed 2", d.Replicas, d.Scaled)
			}
			got := ""
			if m := d.Measured; m != nil {
				got = fmt.Sprintf("%.1f req/s, %.3f cores, %.3f Mc/req, %.0f MHz, %d recommended, %d replicas",
					m.RequestsPerSecond, m.CPUCores, m.MegacyclesPerRequest, m.RequiredMHz, d.Recommended, d.Replicas)
			}
			if got != tt.wantFigures || d.MetricsUnavailable != (tt.wantFigures == "") {
				t.Errorf("figures %q (metrics unavailable %v), want %q", got, d.MetricsUnavailable, tt.wantFigures)
			}
			if !strings.Contains(d.Reason, tt.wantReason) {
				t.Errorf("reason %q, want it to say %q", d.Reason, tt.wantReason)
			}
			if tt.wantFigures != "" {
				if got := promtest.ToFloat64(poolRecommendedReplicas.WithLabelValues(pool.Namespace, pool.Name)); got != float64(d.Recommended) {
					t.Errorf("recommended-replicas gauge %v, want %d", got, d.Recommended)
				}
			}
		})
	}
}
