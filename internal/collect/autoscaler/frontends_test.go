package autoscaler

import (
	"context"
	"fmt"
	"strings"
	"testing"

	promtest "github.com/prometheus/client_golang/prometheus/testutil"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/vocabulary"
)

// The stub tells the frontends' two request queries apart by their
// connection managers.
const (
	frontendRequestsMetric = `envoy_http_conn_manager_prefix=~"farm|farm_https"`
	frontendHTTPSMetric    = `envoy_http_conn_manager_prefix="farm_https"`
)

var farm = types.NamespacedName{Namespace: pool.Namespace, Name: "contoso"}

// newFrontendAutoscaler measures farm "contoso" with two ready frontends
// (contoso-frontend-a and -b) of the default half a core, from stub.
func newFrontendAutoscaler(t *testing.T, stub *testutil.PromStub) *Autoscaler {
	t.Helper()
	a := newAutoscaler(t, stub)
	if err := a.Client.Create(context.Background(), readyPod("contoso-frontend-b", vocabulary.ComponentFrontend, farm.Name)); err != nil {
		t.Fatal(err)
	}
	return a
}

// A farm's frontends are measured as a pool of fixed size: 100 requests/s
// on two frontends of 0.2 cores at the default 2,000 MHz cost 8 megacycles
// each and need 2,667 MHz at 30 %, 3 frontends of half a core; the part
// over TLS is reported where every frontend measured has it.
func TestTheAutoscalerReportsTheCapacityOfAFarmsFrontends(t *testing.T) {
	bothRequests := testutil.PromAnswer{ByPod: map[string]string{"contoso-frontend-a": "60", "contoso-frontend-b": "40"}}
	bothCPU := testutil.PromAnswer{ByPod: map[string]string{"contoso-frontend-a": "0.2", "contoso-frontend-b": "0.2", "web-pool-a": "0.4"}}
	bothHTTPS := testutil.PromAnswer{ByPod: map[string]string{"contoso-frontend-a": "10", "contoso-frontend-b": "15"}}
	for _, tt := range []struct {
		name                 string
		requests, cpu, https testutil.PromAnswer
		wantFigures          string // "" for none
		wantReason           string
	}{
		{"every frontend measured gives the figures and the part over TLS", bothRequests, bothCPU, bothHTTPS,
			"100.0 req/s (25.0 over TLS), 0.400 cores, 8.000 Mc/req, 2667 MHz, 3 recommended", "a report only"},
		{"a farm without HTTPS sites gives the figures without a part over TLS", bothRequests, bothCPU, testutil.PromAnswer{ByPod: map[string]string{}},
			"100.0 req/s (TLS unknown), 0.400 cores, 8.000 Mc/req, 2667 MHz, 3 recommended", "a report only"},
		{"a frontend without its HTTPS series leaves the part over TLS unknown", bothRequests, bothCPU,
			testutil.PromAnswer{ByPod: map[string]string{"contoso-frontend-a": "10"}},
			"100.0 req/s (TLS unknown), 0.400 cores, 8.000 Mc/req, 2667 MHz, 3 recommended", "a report only"},
		{"a frontend without a CPU series is left out, its load said to be understated", bothRequests,
			testutil.PromAnswer{ByPod: map[string]string{"contoso-frontend-a": "0.2"}}, bothHTTPS,
			"60.0 req/s (10.0 over TLS), 0.200 cores, 6.667 Mc/req, 1333 MHz, 2 recommended", "may understate"},
		{"a frontend's NaN request rate leaves it out, its cycles with it", testutil.PromAnswer{ByPod: map[string]string{"contoso-frontend-a": "NaN", "contoso-frontend-b": "40"}},
			bothCPU, bothHTTPS, "40.0 req/s (15.0 over TLS), 0.200 cores, 10.000 Mc/req, 1333 MHz, 2 recommended", "may understate"},
		{"no frontend with both figures gives none", testutil.PromAnswer{ByPod: map[string]string{"contoso-frontend-a": "60"}},
			testutil.PromAnswer{ByPod: map[string]string{"contoso-frontend-b": "0.2"}}, bothHTTPS, "", "no frontend has both"},
		{"prometheus fails the requests query: no figures", testutil.PromAnswer{Error: "query timed out"}, bothCPU, bothHTTPS, "", "query timed out"},
		{"no CPU series at all: unknown, not zero", bothRequests, testutil.PromAnswer{ByPod: map[string]string{}}, bothHTTPS, "", "frontend CPU"},
		{"prometheus does not answer the HTTPS query: no figures", bothRequests, bothCPU, testutil.PromAnswer{Unreachable: true}, "", "did not answer"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stub := testutil.NewPromStub()
			defer stub.Close()
			stub.Set(farm.Namespace, frontendRequestsMetric, tt.requests)
			stub.Set(farm.Namespace, frontendHTTPSMetric, tt.https)
			stub.Set(farm.Namespace, cpuMetric, tt.cpu)
			a := newFrontendAutoscaler(t, stub)
			a.measureFrontends(context.Background(), nil)
			d, ok := a.Observations.FrontendScale(farm)
			if !ok {
				t.Fatal("no report stored")
			}
			if d.Replicas != 2 || d.Scaled {
				t.Errorf("%d replicas (scaled %v), want the frontend's own 2", d.Replicas, d.Scaled)
			}
			got := ""
			if m := d.Measured; m != nil {
				overTLS := "TLS unknown"
				if d.HTTPSRequestsPerSecond != nil {
					overTLS = fmt.Sprintf("%.1f over TLS", *d.HTTPSRequestsPerSecond)
				}
				got = fmt.Sprintf("%.1f req/s (%s), %.3f cores, %.3f Mc/req, %.0f MHz, %d recommended",
					m.RequestsPerSecond, overTLS, m.CPUCores, m.MegacyclesPerRequest, m.RequiredMHz, d.Recommended)
			}
			if got != tt.wantFigures || d.MetricsUnavailable != (tt.wantFigures == "") {
				t.Errorf("figures %q (metrics unavailable %v), want %q", got, d.MetricsUnavailable, tt.wantFigures)
			}
			if !strings.Contains(d.Reason, tt.wantReason) {
				t.Errorf("reason %q, want it to say %q", d.Reason, tt.wantReason)
			}
			wantUnavailable := 0.0
			if tt.wantFigures == "" {
				wantUnavailable = 1
			}
			if got := promtest.ToFloat64(frontendGauges.unavailable.WithLabelValues(farm.Namespace, farm.Name)); got != wantUnavailable {
				t.Errorf("metrics-unavailable gauge %v, want %v", got, wantUnavailable)
			}
			if tt.wantFigures != "" {
				if got := promtest.ToFloat64(frontendGauges.recommended.WithLabelValues(farm.Namespace, farm.Name)); got != float64(d.Recommended) {
					t.Errorf("recommended-frontends gauge %v, want %d", got, d.Recommended)
				}
			}
		})
	}
}

// A farm without a ready frontend (a GatewayClass's template runs none) is
// not measured, and one whose frontends are gone is forgotten.
func TestAFarmWithoutReadyFrontendsIsNotMeasured(t *testing.T) {
	stub := testutil.NewPromStub()
	defer stub.Close()
	stub.Set(farm.Namespace, frontendRequestsMetric, testutil.PromAnswer{ByPod: map[string]string{"contoso-frontend-a": "10", "template-frontend-x": "10"}})
	stub.Set(farm.Namespace, cpuMetric, testutil.PromAnswer{ByPod: map[string]string{"contoso-frontend-a": "0.1", "template-frontend-x": "0.1"}})
	a := newAutoscaler(t, stub)
	ctx := context.Background()
	template := &v1.WebFarm{ObjectMeta: metav1.ObjectMeta{Namespace: farm.Namespace, Name: "template"}, Spec: v1.WebFarmSpec{Sites: []v1.Site{
		{Name: "blog", Hosts: []v1.Hostname{"template.example"}, Routes: []v1.Route{{AppPool: v1.ObjectName(pool.Name)}}},
	}}}
	if err := a.Client.Create(ctx, template); err != nil {
		t.Fatal(err)
	}
	a.measureFrontends(ctx, nil)
	if d, ok := a.Observations.FrontendScale(client.ObjectKeyFromObject(template)); ok {
		t.Errorf("a farm without frontends got a report: %+v", d)
	}
	if _, ok := a.Observations.FrontendScale(farm); !ok {
		t.Fatal("the farm with a ready frontend got no report")
	}

	if err := a.Client.Delete(ctx, readyPod("contoso-frontend-a", vocabulary.ComponentFrontend, farm.Name)); err != nil {
		t.Fatal(err)
	}
	a.measureFrontends(ctx, nil)
	if d, ok := a.Observations.FrontendScale(farm); ok {
		t.Errorf("a farm whose frontends are gone keeps its report: %+v", d)
	}
	if n := promtest.CollectAndCount(frontendGauges.unavailable); n != 0 {
		t.Errorf("%d series of the frontends' metrics-unavailable gauge left, want none", n)
	}
}

// A Prometheus that did not answer the sweep's pools is not asked again
// for the frontends: their figures are unavailable at once.
func TestFrontendsAreNotMeasuredOncePrometheusDidNotAnswer(t *testing.T) {
	stub := testutil.NewPromStub()
	defer stub.Close()
	stub.Set(pool.Namespace, requestsMetric, testutil.PromAnswer{Unreachable: true})
	a := newAutoscaler(t, stub)
	a.run(context.Background())
	if d, ok := a.Observations.FrontendScale(farm); !ok || !d.MetricsUnavailable {
		t.Errorf("frontends' report %+v (stored %v), want metrics unavailable", d, ok)
	}
	if n := stub.Queries(); n != 1 {
		t.Errorf("the sweep asked Prometheus %d times, want 1: it did not answer the first", n)
	}
}

// A farm with frontend.autoscaling gets a decision, by a pool's rules: out
// at once within its bounds, in only on complete figures after the window.
func TestTheAutoscalerScalesTheFrontendsOfAFarmThatAsks(t *testing.T) {
	requests := testutil.PromAnswer{ByPod: map[string]string{"contoso-frontend-a": "60", "contoso-frontend-b": "40"}}
	for _, tt := range []struct {
		name         string
		running      int32
		cpu          testutil.PromAnswer
		wantReplicas int32
		wantScaled   bool
	}{
		{"a load that needs three frontends scales one out to the maximum of two", 1,
			testutil.PromAnswer{ByPod: map[string]string{"contoso-frontend-a": "0.2", "contoso-frontend-b": "0.2"}}, 2, true},
		{"a load that needs fewer frontends holds them until the stabilisation window has passed", 2,
			testutil.PromAnswer{ByPod: map[string]string{"contoso-frontend-a": "0.01", "contoso-frontend-b": "0.01"}}, 2, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stub := testutil.NewPromStub()
			defer stub.Close()
			stub.Set(farm.Namespace, frontendRequestsMetric, requests)
			stub.Set(farm.Namespace, frontendHTTPSMetric, testutil.PromAnswer{ByPod: map[string]string{}})
			stub.Set(farm.Namespace, cpuMetric, tt.cpu)
			a := newFrontendAutoscaler(t, stub)
			ctx := context.Background()
			var f v1.WebFarm
			if err := a.Client.Get(ctx, farm, &f); err != nil {
				t.Fatal(err)
			}
			f.Spec.Frontend.Autoscaling = &v1.FrontendAutoscaling{MinReplicas: 1, MaxReplicas: 2, StabilizationWindow: "5m"}
			if err := a.Client.Update(ctx, &f); err != nil {
				t.Fatal(err)
			}
			deployment := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: farm.Namespace, Name: vocabulary.FrontendName(farm.Name)},
				Spec: appsv1.DeploymentSpec{Replicas: ptr.To(tt.running)}}
			if err := a.Client.Create(ctx, deployment); err != nil {
				t.Fatal(err)
			}
			a.measureFrontends(ctx, nil)
			d, ok := a.Observations.FrontendScale(farm)
			if !ok {
				t.Fatal("no decision stored")
			}
			if d.Replicas != tt.wantReplicas || d.Scaled != tt.wantScaled {
				t.Errorf("%d frontends (scaled %v), want %d (%v): %s", d.Replicas, d.Scaled, tt.wantReplicas, tt.wantScaled, d.Reason)
			}
			if strings.Contains(d.Reason, "a report only") {
				t.Errorf("reason %q: an autoscaled farm's decision is no report", d.Reason)
			}
		})
	}
}

// The CPU query is the same for every pool and farm of a namespace: a
// sweep asks it once, whatever their number, and the next sweep asks again.
func TestASweepAsksEachQueryOnce(t *testing.T) {
	stub := testutil.NewPromStub()
	defer stub.Close()
	stub.Set(farm.Namespace, requestsMetric, testutil.PromAnswer{ByPod: map[string]string{"contoso-frontend-a": "10"}})
	stub.Set(farm.Namespace, cpuMetric, testutil.PromAnswer{ByPod: map[string]string{"web-pool-a": "0.1", "web-pool-b": "0.1", "contoso-frontend-a": "0.1", "fabrikam-frontend-a": "0.1"}})
	stub.Set(farm.Namespace, frontendRequestsMetric, testutil.PromAnswer{ByPod: map[string]string{"contoso-frontend-a": "10", "fabrikam-frontend-a": "10"}})
	stub.Set(farm.Namespace, frontendHTTPSMetric, testutil.PromAnswer{ByPod: map[string]string{}})
	a := newAutoscaler(t, stub)
	ctx := context.Background()
	second := &v1.WebFarm{ObjectMeta: metav1.ObjectMeta{Namespace: farm.Namespace, Name: "fabrikam"}, Spec: v1.WebFarmSpec{Sites: []v1.Site{
		{Name: "shop", Hosts: []v1.Hostname{"shop.example"}, Routes: []v1.Route{{AppPool: v1.ObjectName(pool.Name)}}},
	}}}
	if err := a.Client.Create(ctx, second); err != nil {
		t.Fatal(err)
	}
	if err := a.Client.Create(ctx, readyPod("fabrikam-frontend-a", vocabulary.ComponentFrontend, second.Name)); err != nil {
		t.Fatal(err)
	}
	// The pool's requests and CPU, the frontends' requests, HTTPS requests
	// and (already asked) CPU: four queries, for one pool and two farms.
	for sweep, want := range []int{4, 8} {
		a.run(ctx)
		if got := stub.Queries(); got != want {
			t.Errorf("after sweep %d Prometheus was asked %d queries, want %d", sweep+1, got, want)
		}
	}
	for _, f := range []types.NamespacedName{farm, client.ObjectKeyFromObject(second)} {
		if d, ok := a.Observations.FrontendScale(f); !ok || d.Measured == nil {
			t.Errorf("farm %s: no figures (%+v): the shared answer must serve both", f, d)
		}
	}
}
