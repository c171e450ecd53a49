package workermemory

import (
	"context"
	"testing"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/observations"
	webfarmscheme "webfarm.dev/operator/internal/scheme"
	"webfarm.dev/operator/internal/testutil"
)

const memoryMetric = "container_memory_working_set_bytes"

var web = types.NamespacedName{Namespace: "shop", Name: "web"}

func appPool(key types.NamespacedName, memoryLimit string) *v1.AppPool {
	p := &v1.AppPool{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	if memoryLimit != "" {
		q := resource.MustParse(memoryLimit)
		p.Spec.Recycling.Memory = &q
	}
	return p
}

func newReader(t *testing.T, stub *testutil.PromStub, objects ...client.Object) *WorkerMemory {
	t.Helper()
	scheme := webfarmscheme.New()
	prom, err := promapi.NewClient(promapi.Config{Address: stub.URL})
	if err != nil {
		t.Fatal(err)
	}
	return &WorkerMemory{
		Client:       fake.NewClientBuilder().WithScheme(scheme).WithObjects(objects...).Build(),
		Prometheus:   promv1.NewAPI(prom),
		Observations: &observations.Store{},
	}
}

// memoryOf is what the store holds of each pod: its bytes, or -1 without a reading.
func memoryOf(s *observations.Store, pool types.NamespacedName, pods ...string) map[string]int64 {
	out := map[string]int64{}
	for _, pod := range pods {
		n, ok := s.Memory(pool, pod)
		if !ok {
			n = -1
		}
		out[pod] = n
	}
	return out
}

func TestWorkerMemoryStoresEachWorkersWorkingSetUnderItsPool(t *testing.T) {
	for _, tt := range []struct {
		name   string
		answer map[string]string
		want   map[string]int64
	}{
		{"every worker answered", map[string]string{"web-pool-5d8f-a1": "1048576", "web-pool-5d8f-b2": "2097152"},
			map[string]int64{"web-pool-5d8f-a1": 1 << 20, "web-pool-5d8f-b2": 2 << 20}},
		{"a worker without a series has no reading, not zero", map[string]string{"web-pool-5d8f-a1": "1048576"},
			map[string]int64{"web-pool-5d8f-a1": 1 << 20, "web-pool-5d8f-b2": -1}},
		{"a NaN sample is no reading", map[string]string{"web-pool-5d8f-a1": "1048576", "web-pool-5d8f-b2": "NaN"},
			map[string]int64{"web-pool-5d8f-a1": 1 << 20, "web-pool-5d8f-b2": -1}},
		{"pods of other pools and other programs are left out", map[string]string{"web-pool-5d8f-a1": "1048576", "api-pool-77c9-c3": "4096", "prometheus-0": "8192"},
			map[string]int64{"web-pool-5d8f-a1": 1 << 20, "api-pool-77c9-c3": -1, "prometheus-0": -1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stub := testutil.NewPromStub()
			defer stub.Close()
			stub.Set(web.Namespace, memoryMetric, testutil.PromAnswer{ByPod: tt.answer})
			m := newReader(t, stub, appPool(web, "256Mi"))
			if err := m.read(context.Background()); err != nil {
				t.Fatalf("read: %v", err)
			}
			pods := make([]string, 0, len(tt.want))
			for pod := range tt.want {
				pods = append(pods, pod)
			}
			got := memoryOf(m.Observations, web, pods...)
			for pod, want := range tt.want {
				if got[pod] != want {
					t.Errorf("pod %s: %d bytes, want %d (-1: no reading)", pod, got[pod], want)
				}
			}
		})
	}
}

func TestWorkerMemoryKeepsTheLastReadingsWhenPrometheusCannotAnswer(t *testing.T) {
	for _, tt := range []struct {
		name    string
		answer  testutil.PromAnswer
		wantErr bool
	}{
		{"prometheus reports an error", testutil.PromAnswer{Error: "query timed out"}, true},
		{"prometheus knows no series", testutil.PromAnswer{ByPod: map[string]string{}}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stub := testutil.NewPromStub()
			defer stub.Close()
			stub.Set(web.Namespace, memoryMetric, testutil.PromAnswer{ByPod: map[string]string{"web-pool-5d8f-a1": "1048576"}})
			m := newReader(t, stub, appPool(web, "256Mi"))
			if err := m.read(context.Background()); err != nil {
				t.Fatalf("first read: %v", err)
			}
			stub.Set(web.Namespace, memoryMetric, tt.answer)
			if err := m.read(context.Background()); (err != nil) != tt.wantErr {
				t.Errorf("read error %v, want an error: %v", err, tt.wantErr)
			}
			if n, ok := m.Observations.Memory(web, "web-pool-5d8f-a1"); !ok || n != 1<<20 {
				t.Errorf("reading %d (known: %v) after the failed query, want the last %d", n, ok, 1<<20)
			}
		})
	}
}

func TestWorkerMemoryReadsOnlyPoolsWithAMemoryLimit(t *testing.T) {
	stub := testutil.NewPromStub()
	defer stub.Close()
	stub.Set(web.Namespace, memoryMetric, testutil.PromAnswer{ByPod: map[string]string{"web-pool-5d8f-a1": "1048576"}})
	m := newReader(t, stub, appPool(web, ""))
	if err := m.read(context.Background()); err != nil {
		t.Fatalf("read: %v", err)
	}
	if n, ok := m.Observations.Memory(web, "web-pool-5d8f-a1"); ok {
		t.Errorf("a pool without a memory limit has a reading of %d bytes", n)
	}
}

func TestAWorkersPoolIsItsPodNameBeforeThePoolSuffix(t *testing.T) {
	for _, tt := range []struct {
		name, pod, want string
		ok              bool
	}{
		{"a worker of a pool", "web-pool-5d8f-a1", "web", true},
		{"a pool whose own name holds the suffix", "my-pool-pool-5d8f-a1", "my-pool", true},
		{"a pod of no pool", "prometheus-0", "", false},
		{"a name that starts with the suffix", "-pool-5d8f-a1", "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := poolOfWorker(tt.pod)
			if got != tt.want || ok != tt.ok {
				t.Errorf("poolOfWorker(%q) = %q, %v; want %q, %v", tt.pod, got, ok, tt.want, tt.ok)
			}
		})
	}
}
