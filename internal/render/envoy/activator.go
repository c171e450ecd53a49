package envoy

import (
	"slices"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"webfarm.dev/operator/internal/endpoints"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/vocabulary"
)

// On-demand start (IIS's idle shutdown and demand start): a pool that starts
// on demand and has no ready worker (idle, starting, or all its workers
// down) is routed to the operator's activator, which starts it, holds the
// request until a worker is ready, and hands it over. The choice is made from
// the endpoints in the same snapshot, so a route returns to the pool's own
// cluster exactly when Envoy has a ready worker to send it to.
const (
	// ActivatorCluster is the frontends' cluster of the operator's activator.
	ActivatorCluster = "activator"
)

// routedToActivator: the pool's routes go to the activator now. A pool
// scaled to zero by hand (not idle) is not started by a request.
func routedToActivator(f model.Farm, p model.Pool, b endpoints.Backends) bool {
	scaledToZero := p.Replicas != nil && *p.Replicas == 0 && !p.Idle
	if !p.OnDemandStart || p.Stopped || scaledToZero || f.Platform.ActivatorPort == 0 {
		return false
	}
	return !hasReadyWorker(p, b)
}

// hasReadyWorker: the pool has an endpoint Envoy may send a new request to.
func hasReadyWorker(p model.Pool, b endpoints.Backends) bool {
	return slices.ContainsFunc(b[vocabulary.PoolCluster(p.Name)], func(e endpoints.Endpoint) bool { return e.State == endpoints.Ready })
}

// unavailable: the pool can serve no request and nothing starts it (stopped,
// or idle without on-demand start): the frontend answers its routes itself.
func unavailable(f model.Farm, p model.Pool) bool {
	return p.Stopped || (p.Idle && (!p.OnDemandStart || f.Platform.ActivatorPort == 0))
}

// activatorRoute sends a route to the activator, naming its pool; the
// timeout leaves the activator its bound to start the pool.
func activatorRoute(f model.Farm, r model.Route) []*routev3.Route {
	out := routes(model.Route{PathPrefix: r.PathPrefix, Match: r.Match, Pool: r.Pool, Content: r.Content}, f.Frontend.RequestTimeout+f.Platform.ActivationTimeout, f.Affinity, false)
	for _, route := range out {
		action := route.GetRoute()
		action.ClusterSpecifier = &routev3.RouteAction_Cluster{Cluster: ActivatorCluster}
		// Connection failures only: a request the activator took may have
		// started the pool and must not be sent twice.
		action.RetryPolicy = retryElsewhere("connect-failure,reset-before-request")
		route.RequestHeadersToAdd = append(route.RequestHeadersToAdd, setHeader(model.ActivateHeader, f.Namespace+"/"+r.Pool),
			setHeader(model.UnavailableResponseHeader, unavailableResponse(f)))
	}
	return out
}

// unavailableResponse is the farm's unavailableResponse, as the API spells it.
func unavailableResponse(f model.Farm) string {
	if f.RejectWithReset {
		return model.UnavailableL4
	}
	return model.UnavailableL7
}

// activatorCluster reaches the operator's activator through its Service.
func activatorCluster(p model.Platform) *clusterv3.Cluster {
	c := staticCluster(ActivatorCluster, p.XDSHost, uint32(p.ActivatorPort))
	c.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STRICT_DNS}
	c.DnsLookupFamily = clusterv3.Cluster_V4_PREFERRED
	c.TransportSocket = controlTLS(p, "http/1.1")
	c.TypedExtensionProtocolOptions = map[string]*anypb.Any{
		"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": mustAny(&httpv3.HttpProtocolOptions{
			CommonHttpProtocolOptions: &corev3.HttpProtocolOptions{IdleTimeout: durationpb.New(time.Minute)},
			UpstreamProtocolOptions: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_{ExplicitHttpConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig{
				ProtocolConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_HttpProtocolOptions{HttpProtocolOptions: &corev3.Http1ProtocolOptions{}},
			}},
		}),
	}
	return c
}
