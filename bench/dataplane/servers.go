package main

import (
	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/bench/internal/benchkit"
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

// benchPool is the farm's only pool, a default AppPool serving static files.
func benchPool() (model.Pool, error) { return benchkit.StaticPool(benchNamespace, poolName) }

// benchFarm is a WebFarm with one site whose single route "/" goes to the
// pool, every other field left to its default.
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
