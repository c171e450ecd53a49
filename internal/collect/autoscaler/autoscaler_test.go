package autoscaler

import (
	"context"
	"strings"
	"testing"

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

// newAutoscaler measures pool "web" (two workers, the Deployment at two
// replicas), routed to by farm "contoso" (one frontend), from stub.
func newAutoscaler(t *testing.T, stub *testutil.PromStub) *Autoscaler {
	t.Helper()
	scheme := webfarmscheme.New()
	objects := []client.Object{
		&v1.AppPool{ObjectMeta: metav1.ObjectMeta{Namespace: pool.Namespace, Name: pool.Name}, Spec: v1.AppPoolSpec{
			Content:     &v1.Content{ConfigMap: v1.ConfigMapContent{Name: "site"}},
			Autoscaling: &v1.Autoscaling{MinReplicas: 1, MaxReplicas: 10},
		}},
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
