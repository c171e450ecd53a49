package envoy_test

import (
	"math"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/endpoints"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/vocabulary"
)

// A pool with a worker on a 550 MHz node and one on a 900 MHz node: the real
// frontend shares the pool's requests between them as 550 to 900, so that
// both run as hot as the pool's figure says.
func TestAFrontendSharesAPoolsRequestsInProportionToItsWorkersClocks(t *testing.T) {
	wf := &v1.WebFarm{ObjectMeta: metav1.ObjectMeta{Name: "contoso", Namespace: "web"}, Spec: v1.WebFarmSpec{Sites: []v1.Site{
		{Name: "www", Hosts: []v1.Hostname{"www.example"}, Routes: []v1.Route{{AppPool: "web"}}},
	}}}
	platform := model.Platform{XDSHost: "127.0.0.1", XDSPort: 18000}
	farm, err := model.ResolveFarm(wf, platform)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := model.ResolvePool(&v1.AppPool{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "web"},
		Spec: v1.AppPoolSpec{Content: &v1.Content{ConfigMap: v1.ConfigMapContent{Name: "site"}}}}, platform)
	if err != nil {
		t.Fatal(err)
	}
	cluster := vocabulary.PoolCluster("web")
	backends := endpoints.Backends{cluster: {
		{Address: "127.0.0.1", Port: uint32(worker(t, "slow")), Node: "node-550mhz"},
		{Address: "127.0.0.1", Port: uint32(worker(t, "fast")), Node: "node-900mhz"},
	}}.WeightedByClock([]string{cluster}, endpoints.Clocks{ByNode: map[string]float64{"node-550mhz": 550, "node-900mhz": 900}, Default: 2000})
	fe := runFrontend(t, farm, map[string]model.Pool{"web": pool}, backends)

	const requests = 2000
	served := map[string]int{}
	for range requests {
		header, _ := get(t, fe.URL+"/small.txt", "www.example")
		served[header.Get("X-Worker")]++
	}
	if served["slow"]+served["fast"] != requests {
		t.Fatalf("served %v: want every request from worker slow or fast", served)
	}
	share, want := float64(served["slow"])/requests, 550.0/(550+900)
	t.Logf("the 550 MHz worker served %d and the 900 MHz worker %d of %d requests: %.1f %% to the slow one, want %.1f %%",
		served["slow"], served["fast"], requests, 100*share, 100*want)
	if math.Abs(share-want) > 0.03 {
		t.Errorf("the 550 MHz worker's share %.3f, want %.3f within 0.03", share, want)
	}
}
