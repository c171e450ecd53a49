package envoy_test

import (
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/envoystats"
)

// Request-count recycling reads, from the frontend's statistics, how many
// requests each worker of the pool served: the counts the operator reads
// add up to the requests sent, worker by worker.
func TestTheFrontendCountsEachWorkersRequestsForRecycling(t *testing.T) {
	ports := []int{worker(t, "www-1"), worker(t, "www-2")}
	specs := map[string]v1.AppPoolSpec{
		"www":    {Content: &v1.Content{ConfigMap: v1.ConfigMapContent{Name: "site"}}, Recycling: v1.Recycling{Requests: 1000}},
		"images": {Content: &v1.Content{ConfigMap: v1.ConfigMapContent{Name: "site"}}},
	}
	fe := startFrontend(t, &v1.WebFarm{Spec: v1.WebFarmSpec{Sites: []v1.Site{{Name: "www", Hosts: []v1.Hostname{"www.example"},
		Routes: []v1.Route{{PathPrefix: "/", AppPool: "www"}, {PathPrefix: "/images", AppPool: "images"}}}}}},
		map[string][]int{"www": ports, "images": {worker(t, "images-1")}}, specs, nil)

	c := &http.Client{Timeout: 5 * time.Second}
	const sent = 40
	for range sent {
		for _, path := range []string{"/small.txt", "/images/logo.png"} {
			req, _ := http.NewRequest(http.MethodGet, fe.URL+path, nil)
			req.Host = "www.example"
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	resp, err := c.Get(fe.AdminURL + "/stats/prometheus?" + envoystats.Query)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	pools, err := envoystats.Parse(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	www := pools["www"].PerWorker
	var total uint64
	for _, port := range ports {
		n, ok := www["127.0.0.1:"+strconv.Itoa(port)]
		if !ok || n == 0 {
			t.Errorf("worker on port %d: %d requests counted (listed: %v); want some", port, n, ok)
		}
		total += n
	}
	if total != sent {
		t.Errorf("the www workers' counts add up to %d, want %d: %v", total, sent, www)
	}
	if pools["images"].PerWorker != nil {
		t.Errorf("a pool without request-count recycling has per-worker counts: %v", pools["images"].PerWorker)
	}
	t.Logf("per-worker requests of pool www: %v", www)
}
