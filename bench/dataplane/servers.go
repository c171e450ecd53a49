package main

import (
	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/endpoints"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/vocabulary"
)

// Names of the benchmark's farm, as a user would write them.
const (
	benchNamespace = "bench"
	poolName       = "www"
	siteHost       = "www.bench.example"
)

// benchPool is the farm's only pool: a default AppPool serving static
// files (500m CPU: one nginx worker) with the request queue of the sample
// pool "www" (config/samples): 100 requests at once, 1,000 waiting, a 30 s
// queue timeout. The queue gives the frontend its circuit breakers and the
// filter that answers a worker's queue-timeout refusal.
func benchPool() (model.Pool, error) {
	ap := &v1.AppPool{}
	ap.Name, ap.Namespace = poolName, benchNamespace
	ap.Spec.Content = &v1.Content{Image: v1.ImageContent{Reference: "localhost/bench-content:1"}}
	ap.Spec.MaxConcurrentRequests = 100
	ap.Spec.Queue = v1.Queue{Length: 1000, Timeout: "30s"}
	return model.ResolvePool(ap, model.Platform{})
}

// benchFarm is a WebFarm with one site whose single route "/" goes to the
// pool, with the sample farm's (config/samples) cookie affinity; every other
// field is left to its default, the access log included.
func benchFarm() (model.Farm, error) { return resolveBenchFarm(benchWebFarm()) }

// benchWebFarm is benchFarm's WebFarm.
func benchWebFarm() *v1.WebFarm {
	wf := &v1.WebFarm{}
	wf.Name, wf.Namespace = "bench", benchNamespace
	wf.Spec.Sites = []v1.Site{{
		Name:   "www",
		Hosts:  []v1.Hostname{siteHost},
		Routes: []v1.Route{{AppPool: poolName}},
	}}
	wf.Spec.SessionAffinity = v1.SessionAffinity{Type: v1.AffinityCookie}
	return wf
}

// resolveBenchFarm resolves a WebFarm as the operator does.
func resolveBenchFarm(wf *v1.WebFarm) (model.Farm, error) {
	// The static bootstrap drops the xDS cluster; a loopback address keeps the
	// rendered one from naming a host that would be looked up.
	return model.ResolveFarm(wf, model.Platform{XDSHost: "127.0.0.1", XDSPort: 18000})
}

// farmBackends is the farm's only pool with its one worker.
func farmBackends(port int) endpoints.Backends {
	return endpoints.Backends{vocabulary.PoolCluster(poolName): {{Address: "127.0.0.1", Port: uint32(port)}}}
}
