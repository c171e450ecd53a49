package vocabulary

import "fmt"

// The Envoy frontend's status listener: its readiness and its statistics,
// probed by its pod and read by the collectors.
const (
	FrontendStatusPort  = 19001 // /ready and /stats/prometheus only
	FrontendReadyPath   = "/ready"
	FrontendMetricsPath = "/stats/prometheus"
)

// PoolCluster and CacheCluster name the Envoy clusters of a pool and of a
// cache tier; a farm's snapshot is its own, so names need no namespace.
func PoolCluster(pool string) string    { return "pool/" + pool }
func CacheCluster(policy string) string { return "cache/" + policy }

// ServiceCluster names the frontend's cluster of a Service port a Gateway
// API route sends requests to.
func ServiceCluster(namespace, name string, port int32) string {
	return fmt.Sprintf("service/%s/%s/%d", namespace, name, port)
}

// PoolStoppedBody answers a request for a stopped pool, from the frontend
// and from the activator alike.
const PoolStoppedBody = "Service Unavailable: the application pool is stopped.\n"

// PoolHeader tells a cache tier which pool a request is for: the Envoy
// frontend sets it (overwriting any a client sent) on routes through a cache
// tier, and the cache tier's nginx and agent route on it.
const PoolHeader = "X-Webfarm-Pool"
