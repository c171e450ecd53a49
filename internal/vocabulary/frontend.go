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

// A route's share of its pool's content (model.SiteContent), sent by the
// frontend to the pool's workers with each request: the worker's nginx
// serves the directory, default documents and error pages they name, and
// checks each value again against the same grammar, so a value that is not
// the frontend's is refused rather than followed. The frontend removes any
// a client sent on every route and sets those of the route.
const (
	// SiteDirectoryHeader: the directory relative to the content root.
	SiteDirectoryHeader = "X-Webfarm-Site-Directory"
	// SiteDocumentsHeader: the default documents, in order, space-separated.
	SiteDocumentsHeader = "X-Webfarm-Site-Documents"
	// SiteErrorPagesHeader: "code=path" pairs, space-separated, by code.
	SiteErrorPagesHeader = "X-Webfarm-Site-Error-Pages"
)

// SiteHeaders are the headers of a route's content, in a fixed order.
var SiteHeaders = []string{SiteDirectoryHeader, SiteDocumentsHeader, SiteErrorPagesHeader}
