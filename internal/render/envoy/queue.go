package envoy

import (
	"math"
	"strconv"

	xdscorev3 "github.com/cncf/xds/go/xds/core/v3"
	xdsmatcherv3 "github.com/cncf/xds/go/xds/type/matcher/v3"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	customresponsev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/custom_response/v3"
	directresponsev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/direct_response/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	localresponsepolicyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/custom_response/local_response_policy/v3"
	redirectpolicyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/custom_response/redirect_policy/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"webfarm.dev/operator/internal/model"
)

// queueBreakers enforce a pool's request queue with IIS semantics on one
// frontend replica. Each worker takes at most maxConcurrentRequests at once
// (a per-host connection limit: an HTTP/1.1 connection carries one request
// at a time, and a request that finds its worker's connections busy waits);
// at most queue.length requests wait, and the next one is answered 503 at
// once (for a pool whose workers take HTTP/2, oneStreamPerConnection makes
// each request a connection of its own). The frontend's replicas share both
// limits, each enforcing its share, rounded up so that no replica refuses
// capacity the pool has.
//
// The limits do not depend on how many workers are ready, so scaling a pool
// changes only its endpoints, never its cluster (which Envoy would rebuild).
func queueBreakers(p model.Pool, frontends int32) *clusterv3.CircuitBreakers {
	unlimited := wrapperspb.UInt32(math.MaxUint32)
	return &clusterv3.CircuitBreakers{
		Thresholds: []*clusterv3.CircuitBreakers_Thresholds{{
			Priority:           corev3.RoutingPriority_DEFAULT,
			MaxConnections:     unlimited,
			MaxRequests:        unlimited,
			MaxPendingRequests: wrapperspb.UInt32(share(p.QueueLength, frontends)),
		}},
		PerHostThresholds: []*clusterv3.CircuitBreakers_Thresholds{{
			Priority:       corev3.RoutingPriority_DEFAULT,
			MaxConnections: wrapperspb.UInt32(share(p.MaxConcurrentRequests, frontends)),
		}},
	}
}

// oneStreamPerConnection makes the frontend talk HTTP/2 (h2c) to the
// workers of a pool whose app speaks HTTP/2 or gRPC, one stream per upstream
// connection: queueBreakers' per-worker connection limit then counts
// requests (streams), however many streams the clients multiplex on one
// connection, and a stream that finds its worker's connections busy waits
// in the queue as an HTTP/1.1 request does.
func oneStreamPerConnection() map[string]*anypb.Any {
	return map[string]*anypb.Any{
		"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": mustAny(&httpv3.HttpProtocolOptions{
			UpstreamProtocolOptions: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_{ExplicitHttpConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig{
				ProtocolConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_Http2ProtocolOptions{Http2ProtocolOptions: &corev3.Http2ProtocolOptions{
					MaxConcurrentStreams: wrapperspb.UInt32(1),
				}},
			}},
		}),
	}
}

// share is one frontend replica's part of a pool-wide limit, at least 1.
func share(limit, frontends int32) uint32 {
	if frontends < 1 {
		frontends = 1
	}
	return uint32(max(1, (limit+frontends-1)/frontends))
}

// Bodies of the frontend's own 503s, so that a person reading one knows
// which limit answered.
const (
	QueueFullBody    = "Service Unavailable: the application pool's request queue is full.\n"
	QueueTimeoutBody = "Service Unavailable: the request waited longer than the application pool's queue timeout.\n"
	PoolStoppedBody  = "Service Unavailable: the application pool is stopped.\n"
	NoWorkerBody     = "Service Unavailable: the application pool has no worker ready.\n"
	retryAfterValue  = "1"
)

// localReplies rewrite the bodies of the 503s Envoy answers itself: a full
// queue (response flag UO, upstream overflow; QueueHeader says so) and a
// pool without a ready worker (UH). Both say Retry-After, as HTTP.sys's 503
// invites a retry.
func localReplies() *hcmv3.LocalReplyConfig {
	mapper := func(flag, body string) *hcmv3.ResponseMapper {
		return &hcmv3.ResponseMapper{
			Filter: &accesslogv3.AccessLogFilter{FilterSpecifier: &accesslogv3.AccessLogFilter_ResponseFlagFilter{
				ResponseFlagFilter: &accesslogv3.ResponseFlagFilter{Flags: []string{flag}},
			}},
			StatusCode:   wrapperspb.UInt32(503),
			Body:         &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: body}},
			HeadersToAdd: []*corev3.HeaderValueOption{setHeader("Retry-After", retryAfterValue), setHeader(QueueHeader, QueueRejected)},
		}
	}
	return &hcmv3.LocalReplyConfig{Mappers: []*hcmv3.ResponseMapper{
		mapper("UO", QueueFullBody),
		mapper("UH", NoWorkerBody),
	}}
}

// QueueTimeoutFilter answers the client 503 for a request its worker refused
// because it waited past the pool's queue timeout (the worker's nginx checks
// it when it takes the request, as IIS checks AspQueueTimeout when a request
// leaves the queue). The workers answer a status of their own for it, so
// that the frontend's counters keep these apart from the application's 503s.
// QueueHeader says so, for the client and the access log.
//
// Envoy marks the custom response filter's API work in progress; it is the
// only filter that turns an upstream status into a local reply without a
// script.
func QueueTimeoutFilter() *hcmv3.HttpFilter {
	return customResponse("envoy.filters.http.custom_response",
		&xdscorev3.TypedExtensionConfig{Name: "status", TypedConfig: mustAny(&matcherv3.HttpResponseStatusCodeMatchInput{})},
		strconv.Itoa(model.QueueTimeoutStatus),
		&xdscorev3.TypedExtensionConfig{Name: "queue-timeout", TypedConfig: mustAny(&localresponsepolicyv3.LocalResponsePolicy{
			StatusCode:           wrapperspb.UInt32(503),
			Body:                 &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: QueueTimeoutBody}},
			ResponseHeadersToAdd: []*corev3.HeaderValueOption{setHeader("Retry-After", retryAfterValue), setHeader(QueueHeader, QueueTimedOut)},
		})})
}

// customResponse is a custom response filter named name that takes the
// action on a response whose input (its status, a header) is exactly value.
func customResponse(name string, input *xdscorev3.TypedExtensionConfig, value string, action *xdscorev3.TypedExtensionConfig) *hcmv3.HttpFilter {
	return &hcmv3.HttpFilter{
		Name: name,
		ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(&customresponsev3.CustomResponse{
			CustomResponseMatcher: &xdsmatcherv3.Matcher{
				MatcherType: &xdsmatcherv3.Matcher_MatcherList_{MatcherList: &xdsmatcherv3.Matcher_MatcherList{
					Matchers: []*xdsmatcherv3.Matcher_MatcherList_FieldMatcher{{
						Predicate: &xdsmatcherv3.Matcher_MatcherList_Predicate{
							MatchType: &xdsmatcherv3.Matcher_MatcherList_Predicate_SinglePredicate_{
								SinglePredicate: &xdsmatcherv3.Matcher_MatcherList_Predicate_SinglePredicate{
									Input: input,
									Matcher: &xdsmatcherv3.Matcher_MatcherList_Predicate_SinglePredicate_ValueMatch{
										ValueMatch: &xdsmatcherv3.StringMatcher{MatchPattern: &xdsmatcherv3.StringMatcher_Exact{Exact: value}},
									},
								},
							},
						},
						OnMatch: &xdsmatcherv3.Matcher_OnMatch{OnMatch: &xdsmatcherv3.Matcher_OnMatch_Action{Action: action}},
					}},
				}},
			},
		})},
	}
}

// stoppedPoolRoute answers a stopped pool's route with 503 (HTTP.sys's answer
// for a stopped application pool), whatever the method.
func stoppedPoolRoute(r model.Route) *routev3.Route {
	return &routev3.Route{
		Match: prefixMatch(r.PathPrefix),
		Action: &routev3.Route_DirectResponse{DirectResponse: &routev3.DirectResponseAction{
			Status: 503,
			Body:   &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: PoolStoppedBody}},
		}},
	}
}

// Connection resets (the farm's unavailableResponse L4, IIS's
// LoadBalancerCapabilities 1): where HTTP.sys would answer 503 (a stopped
// pool, a full queue, a pool without a ready worker, an on-demand start that
// timed out), a farm behind a layer 4 balancer cuts the connection instead.
// Envoy has no route action that resets the client's connection, so such
// requests go to a cluster whose only endpoint is a listener of the same
// Envoy that answers the start of a response and closes (model.CutResponse).
// Envoy then aborts the client's connection before the response completes:
// the client gets no answer it can use, and a layer 4 balancer in front sees
// the connection fail.
const (
	// AbortCluster is the cluster (and listener) that cuts every response short.
	AbortCluster = "unavailable-l4"
	// AbortPort is its listener's port, on loopback.
	AbortPort = 19002
	// abortHost is the host of the virtual host that routes to it, where
	// the frontend redirects its own refusals: an address of IPv6's
	// discard-only prefix (RFC 6666), which no site's host name can be.
	abortHost = "[100::]"
	// abortVirtualHostName cannot be a site's name (a DNS label).
	abortVirtualHostName = "webfarm_unavailable_l4"
)

// abortListener is the loopback listener that cuts every response short.
func abortListener() *listenerv3.Listener {
	return &listenerv3.Listener{
		Name:    AbortCluster,
		Address: socketAddress("127.0.0.1", AbortPort),
		FilterChains: []*listenerv3.FilterChain{{
			Filters: []*listenerv3.Filter{{
				Name: "envoy.filters.network.direct_response",
				ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(&directresponsev3.Config{
					Response: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: model.CutResponse}},
				})},
			}},
		}},
	}
}

// resetRoute sends a route to the aborting listener, without retries: the
// routes of a stopped pool, and of a pool without a ready worker that does
// not start on demand.
func resetRoute(prefix string) *routev3.Route {
	return &routev3.Route{
		Match: prefixMatch(prefix),
		Action: &routev3.Route_Route{Route: &routev3.RouteAction{
			ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: AbortCluster},
		}},
	}
}

// abortVirtualHost takes the frontend's own refusals that resetFilter
// redirects.
func abortVirtualHost() *routev3.VirtualHost {
	return &routev3.VirtualHost{Name: abortVirtualHostName, Domains: []string{abortHost}, Routes: []*routev3.Route{resetRoute("/")}}
}

// resetFilter turns the frontend's own 503s for a pool's queue (a full
// queue, and a pool whose workers all went away before its routes changed:
// localReplies marks both QueueRejected) into a cut connection, by
// redirecting the request internally to abortVirtualHost. Envoy redirects
// only a request it has read whole: one whose body had not all arrived when
// the queue refused it still gets the 503.
func resetFilter() *hcmv3.HttpFilter {
	return customResponse("webfarm.unavailable_l4",
		&xdscorev3.TypedExtensionConfig{Name: "queue", TypedConfig: mustAny(&matcherv3.HttpResponseHeaderMatchInput{HeaderName: queueKey})},
		QueueRejected,
		&xdscorev3.TypedExtensionConfig{Name: "reset", TypedConfig: mustAny(&redirectpolicyv3.RedirectPolicy{
			RedirectActionSpecifier: &redirectpolicyv3.RedirectPolicy_Uri{Uri: "http://" + abortHost + "/"},
		})})
}
