package envoy

import (
	"math"
	"strconv"

	xdscorev3 "github.com/cncf/xds/go/xds/core/v3"
	xdsmatcherv3 "github.com/cncf/xds/go/xds/type/matcher/v3"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matchingv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/matching/v3"
	skipv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/common/matcher/action/v3"
	customresponsev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/custom_response/v3"
	wasmfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/wasm/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	localresponsepolicyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/custom_response/local_response_policy/v3"
	redirectpolicyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/custom_response/redirect_policy/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	wasmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/wasm/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/vocabulary"
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
	return upstreamHTTP2(&corev3.Http2ProtocolOptions{MaxConcurrentStreams: wrapperspb.UInt32(1)})
}

// upstreamHTTP2 are a cluster's protocol options that speak HTTP/2 to it
// with these settings (in clear text unless the cluster has TLS).
func upstreamHTTP2(o *corev3.Http2ProtocolOptions) map[string]*anypb.Any {
	return map[string]*anypb.Any{
		"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": mustAny(&httpv3.HttpProtocolOptions{
			UpstreamProtocolOptions: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_{ExplicitHttpConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig{
				ProtocolConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_Http2ProtocolOptions{Http2ProtocolOptions: o},
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
// which limit answered (a stopped pool's, which the activator answers too:
// vocabulary.PoolStoppedBody).
const (
	QueueFullBody    = "Service Unavailable: the application pool's request queue is full.\n"
	QueueTimeoutBody = "Service Unavailable: the request waited longer than the application pool's queue timeout.\n"
	NoWorkerBody     = "Service Unavailable: the application pool has no worker ready.\n"
	retryAfterValue  = "1"
)

// localReplies rewrite the bodies of the 503s Envoy answers itself: a full
// queue (response flag UO, upstream overflow; QueueHeader says so) and a
// pool without a ready worker (UH). Both say Retry-After, as HTTP.sys's 503
// invites a retry. In L4 mode (resets) the activator refuses a request by
// closing its connection without an answer (UC, upstream connection
// termination); the 503 Envoy answers in its place is marked as the queue's
// refusals are, for redirectRefusals.
func localReplies(resets bool) *hcmv3.LocalReplyConfig {
	mapper := func(filter *accesslogv3.AccessLogFilter, body string) *hcmv3.ResponseMapper {
		return &hcmv3.ResponseMapper{
			Filter:       filter,
			StatusCode:   wrapperspb.UInt32(503),
			Body:         &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: body}},
			HeadersToAdd: []*corev3.HeaderValueOption{setHeader("Retry-After", retryAfterValue), setHeader(QueueHeader, QueueRejected)},
		}
	}
	c := &hcmv3.LocalReplyConfig{Mappers: []*hcmv3.ResponseMapper{
		mapper(responseFlag("UO"), QueueFullBody),
		mapper(responseFlag("UH"), NoWorkerBody),
	}}
	if resets {
		// activatorRoute sets the header, replacing any a client sent.
		fromActivator := &accesslogv3.AccessLogFilter{FilterSpecifier: &accesslogv3.AccessLogFilter_HeaderFilter{HeaderFilter: &accesslogv3.HeaderFilter{
			Header: &routev3.HeaderMatcher{Name: model.UnavailableResponseHeader, HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{
				StringMatch: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: model.UnavailableL4}},
			}},
		}}}
		c.Mappers = append(c.Mappers, mapper(&accesslogv3.AccessLogFilter{FilterSpecifier: &accesslogv3.AccessLogFilter_AndFilter{AndFilter: &accesslogv3.AndFilter{
			Filters: []*accesslogv3.AccessLogFilter{responseFlag("UC"), fromActivator},
		}}}, NoWorkerBody))
	}
	return c
}

// responseFlag matches the requests Envoy marked with the response flag.
func responseFlag(flag string) *accesslogv3.AccessLogFilter {
	return &accesslogv3.AccessLogFilter{FilterSpecifier: &accesslogv3.AccessLogFilter_ResponseFlagFilter{
		ResponseFlagFilter: &accesslogv3.ResponseFlagFilter{Flags: []string{flag}},
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
		Match: routeMatch(r),
		Action: &routev3.Route_DirectResponse{DirectResponse: &routev3.DirectResponseAction{
			Status: 503,
			Body:   &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: vocabulary.PoolStoppedBody}},
		}},
	}
}

// Connection resets (the farm's unavailableResponse L4, IIS's
// LoadBalancerCapabilities 1): where HTTP.sys would answer 503 (a stopped
// pool, a full queue, a pool without a ready worker, an on-demand start that
// timed out), a farm behind a layer 4 balancer resets the connection
// instead: the client reads not one byte, and a layer 4 balancer in front
// sees the connection fail. Envoy answers every failure it sees before a
// response reached the client with a response of its own (an upstream that
// cuts its response while a filter holds the headers gets the client a 502,
// a stream timeout a 504), so the reset comes from a filter that resets the
// request's stream as soon as it sees it (its program is resetModule; the
// WebAssembly runtime costs a frontend replica 15 to 20 MB). The filter runs
// only on the routes that reset (resetRoute): a stopped pool's, a pool's
// without a ready worker in L4 mode, and those of abortVirtualHost, where
// redirectRefusals sends the frontend's own refusals and the activator's
// (a request whose body had not all arrived by then still gets the 503).
// An HTTP/1 client's connection closes without a byte; an HTTP/2 client's
// stream ends with RST_STREAM (INTERNAL_ERROR), its connection and other
// streams going on.
const (
	// resetStreamFilter names the filter that resets streams.
	resetStreamFilter = "webfarm.reset_stream"
	// abortHost is the host of the virtual host that resets every request,
	// where the frontend redirects its own refusals: an address of IPv6's
	// discard-only prefix (RFC 6666), which no site's host name can be.
	abortHost = "[100::]"
	// abortVirtualHostName cannot be a site's name (a DNS label).
	abortVirtualHostName = "webfarm_unavailable_l4"
)

// resetFilter is the filter that resets a stream at its request headers;
// it skips every request but those of the routes that enable it
// (resetRoute). Its program is fixed (resetModule), never anything a farm
// says.
func resetFilter() *hcmv3.HttpFilter {
	return &hcmv3.HttpFilter{
		Name: resetStreamFilter,
		ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(&matchingv3.ExtensionWithMatcher{
			XdsMatcher: &xdsmatcherv3.Matcher{OnNoMatch: &xdsmatcherv3.Matcher_OnMatch{
				OnMatch: &xdsmatcherv3.Matcher_OnMatch_Action{Action: &xdscorev3.TypedExtensionConfig{
					Name: "skip", TypedConfig: mustAny(&skipv3.SkipFilter{}),
				}},
			}},
			ExtensionConfig: &corev3.TypedExtensionConfig{Name: "reset", TypedConfig: resetWasm()},
		})},
	}
}

// resetWasm runs resetModule, which may call nothing but what it needs.
func resetWasm() *anypb.Any {
	return mustAny(&wasmfilterv3.Wasm{Config: &wasmv3.PluginConfig{
		Name: "reset",
		Vm: &wasmv3.PluginConfig_VmConfig{VmConfig: &wasmv3.VmConfig{
			Runtime: "envoy.wasm.runtime.v8",
			Code: &corev3.AsyncDataSource{Specifier: &corev3.AsyncDataSource_Local{Local: &corev3.DataSource{
				Specifier: &corev3.DataSource_InlineBytes{InlineBytes: resetModule()},
			}}},
			// Envoy's calls into the module are capabilities too.
			CapabilityRestrictionConfig: &wasmv3.CapabilityRestrictionConfig{
				AllowedCapabilities: map[string]*wasmv3.SanitizationConfig{
					"proxy_close_stream": {}, "proxy_on_context_create": {}, "proxy_on_request_headers": {},
				},
			},
		}},
		// Should the module fail, the stream ends in a 503.
		FailurePolicy: wasmv3.FailurePolicy_FAIL_CLOSED,
	}})
}

// resetRoute resets every request of a route: the routes of a stopped pool,
// and of a pool without a ready worker that does not start on demand. The
// 503 without body is the answer should the filter not run.
func resetRoute(match *routev3.RouteMatch) *routev3.Route {
	return &routev3.Route{
		Match:  match,
		Action: &routev3.Route_DirectResponse{DirectResponse: &routev3.DirectResponseAction{Status: 503}},
		TypedPerFilterConfig: map[string]*anypb.Any{
			// A matcher that matches nothing: the filter never skips.
			resetStreamFilter: mustAny(&matchingv3.ExtensionWithMatcherPerRoute{XdsMatcher: &xdsmatcherv3.Matcher{}}),
		},
	}
}

// abortVirtualHost takes the frontend's own refusals that redirectRefusals
// and resetLimited redirect. The client rate limits do not count the
// redirected request again: it would be refused anew, not reset.
func abortVirtualHost(l model.ClientLimits) func() *routev3.VirtualHost {
	return func() *routev3.VirtualHost {
		vh := &routev3.VirtualHost{Name: abortVirtualHostName, Domains: []string{abortHost}, Routes: []*routev3.Route{resetRoute(prefixMatch("/"))}}
		for _, f := range clientRateFilters(l) {
			if vh.TypedPerFilterConfig == nil {
				vh.TypedPerFilterConfig = map[string]*anypb.Any{}
			}
			vh.TypedPerFilterConfig[f.Name] = mustAny(&routev3.FilterConfig{Disabled: true})
		}
		return vh
	}
}

// redirectRefusals turns the frontend's 503s for a pool's queue (a full
// queue, and a pool whose workers all went away before its routes changed:
// localReplies marks both QueueRejected, as it marks the activator's cut
// connections) into a reset, by redirecting the request internally to
// abortVirtualHost. Envoy redirects only a request it has read whole: one
// whose body had not all arrived when the queue refused it still gets the
// 503.
func redirectRefusals() *hcmv3.HttpFilter {
	return customResponse("webfarm.unavailable_l4",
		&xdscorev3.TypedExtensionConfig{Name: "queue", TypedConfig: mustAny(&matcherv3.HttpResponseHeaderMatchInput{HeaderName: queueKey})},
		QueueRejected,
		&xdscorev3.TypedExtensionConfig{Name: "reset", TypedConfig: mustAny(&redirectpolicyv3.RedirectPolicy{
			RedirectActionSpecifier: &redirectpolicyv3.RedirectPolicy_Uri{Uri: "http://" + abortHost + "/"},
		})})
}
