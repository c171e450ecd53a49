package envoy

import (
	"strings"
	"time"

	xdscorev3 "github.com/cncf/xds/go/xds/core/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	localratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/local_ratelimit/v3"
	connectionlimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/connection_limit/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	redirectpolicyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/custom_response/redirect_policy/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"webfarm.dev/operator/internal/model"
)

// What one client can take of a frontend replica: the bounds every farm has
// on slow and large requests, and the per-client request rates a farm sets.

// LimitHeader names, on a rate-limited request's 429, the limit it met
// (LimitPerAddress or LimitPerClassC); the access log's limit field reads it.
const LimitHeader = "X-Webfarm-Limit"

// The access log's limit field: which of the client limits ended a request.
const (
	LimitNone           = "none"
	LimitPerAddress     = "perAddress"
	LimitPerClassC      = "perClassC"
	LimitHeadersTimeout = "requestHeadersTimeout"
	LimitBodyTimeout    = "requestBodyTimeout"
	LimitHeadersSize    = "maxRequestHeaders"
)

// clientRateFilterPrefix names a client rate filter, its limit following.
const clientRateFilterPrefix = "envoy.filters.http.local_ratelimit/"

// classCPrefixV6 groups IPv6 clients as /24 groups IPv4 ones: a site's
// customer network.
const classCPrefixV6 = 56

// maxTrackedClients is how many client addresses (and as many networks)
// each replica keeps a bucket for, the least recently seen forgotten first:
// the seed's 20,000 sites' worth of busy clients.
const maxTrackedClients = 20000

// boundRequests sets the connection manager's bounds on a request: its
// headers' time and size, and the time to receive all of it. A zero bound
// (a model built without ResolveFarm's defaults) leaves Envoy's own.
func boundRequests(hcm *hcmv3.HttpConnectionManager, l model.ClientLimits) {
	if l.RequestHeadersTimeout > 0 {
		hcm.RequestHeadersTimeout = durationpb.New(l.RequestHeadersTimeout)
	}
	if l.RequestBodyTimeout > 0 {
		hcm.RequestTimeout = durationpb.New(l.RequestBodyTimeout)
	}
	if l.MaxRequestHeadersKiB > 0 {
		hcm.MaxRequestHeadersKb = wrapperspb.UInt32(l.MaxRequestHeadersKiB)
	}
}

// clientRateFilters limit each client's requests: one filter per limit the
// farm sets, each with a bucket per client address or network. They come
// first in the chain: a refused request costs nothing else.
func clientRateFilters(l model.ClientLimits) []*hcmv3.HttpFilter {
	var filters []*hcmv3.HttpFilter
	if r := l.PerAddress; r != nil {
		filters = append(filters, clientRateFilter(LimitPerAddress, "remote_address", r,
			&routev3.RateLimit_Action{ActionSpecifier: &routev3.RateLimit_Action_RemoteAddress_{RemoteAddress: &routev3.RateLimit_Action_RemoteAddress{}}}))
	}
	if r := l.PerClassC; r != nil {
		filters = append(filters, clientRateFilter(LimitPerClassC, "masked_remote_address", r,
			&routev3.RateLimit_Action{ActionSpecifier: &routev3.RateLimit_Action_MaskedRemoteAddress_{MaskedRemoteAddress: &routev3.RateLimit_Action_MaskedRemoteAddress{
				V4PrefixMaskLen: wrapperspb.UInt32(24),
				V6PrefixMaskLen: wrapperspb.UInt32(classCPrefixV6),
			}}}))
	}
	return filters
}

// clientRateFilter is a local rate limit whose descriptor has the key alone:
// Envoy keeps a bucket for each value it sees (each address or network).
// The filter's own bucket is never drawn from (every request has the key),
// but Envoy wants one whose interval divides the descriptors'.
func clientRateFilter(limit, key string, r *model.RequestRate, action *routev3.RateLimit_Action) *hcmv3.HttpFilter {
	all := &corev3.RuntimeFractionalPercent{DefaultValue: &typev3.FractionalPercent{Numerator: 100, Denominator: typev3.FractionalPercent_HUNDRED}}
	second := durationpb.New(time.Second)
	return &hcmv3.HttpFilter{
		Name: clientRateFilterPrefix + limit,
		ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(&localratelimitv3.LocalRateLimit{
			StatPrefix:                      "client_" + limit,
			TokenBucket:                     &typev3.TokenBucket{MaxTokens: 1, TokensPerFill: wrapperspb.UInt32(1), FillInterval: second},
			AlwaysConsumeDefaultTokenBucket: wrapperspb.Bool(false),
			FilterEnabled:                   all,
			FilterEnforced:                  all,
			RateLimits:                      []*routev3.RateLimit{{Actions: []*routev3.RateLimit_Action{action}}},
			Descriptors: []*ratelimitv3.LocalRateLimitDescriptor{{
				Entries:     []*ratelimitv3.RateLimitDescriptor_Entry{{Key: key}},
				TokenBucket: &typev3.TokenBucket{MaxTokens: r.Burst, TokensPerFill: wrapperspb.UInt32(r.PerSecond), FillInterval: second},
			}},
			MaxDynamicDescriptors: wrapperspb.UInt32(maxTrackedClients),
			ResponseHeadersToAdd: []*corev3.HeaderValueOption{
				setHeader("Retry-After", "1"), setHeader(LimitHeader, limit),
			},
		})},
	}
}

// resetLimited turns a rate limit's 429 into a connection reset in L4 mode
// (unavailableResponse L4, where the farm answers no refusal in HTTP), by
// redirecting the request to abortVirtualHost as redirectRefusals does.
func resetLimited(l model.ClientLimits) []*hcmv3.HttpFilter {
	var filters []*hcmv3.HttpFilter
	for _, f := range clientRateFilters(l) {
		limit := strings.TrimPrefix(f.Name, clientRateFilterPrefix)
		filters = append(filters, customResponse("webfarm.limited_l4/"+limit,
			&xdscorev3.TypedExtensionConfig{Name: "limit", TypedConfig: mustAny(&matcherv3.HttpResponseHeaderMatchInput{HeaderName: strings.ToLower(LimitHeader)})},
			limit,
			&xdscorev3.TypedExtensionConfig{Name: "reset", TypedConfig: mustAny(&redirectpolicyv3.RedirectPolicy{
				RedirectActionSpecifier: &redirectpolicyv3.RedirectPolicy_Uri{Uri: "http://" + abortHost + "/"},
			})}))
	}
	return filters
}

// limitSiteConnections puts a connection limit before the connection
// manager of a site's HTTPS chains (IIS MaxConnections): past the site's
// bound a new connection is closed before its handshake. Envoy counts per
// chain, so each of the site's chains (direct clients, trusted proxies, the
// default site's clients without a server name) has the bound of its own;
// its stat names the site.
func limitSiteConnections(chains []*listenerv3.FilterChain, site string, bound uint32) {
	if bound == 0 {
		return
	}
	limit := &listenerv3.Filter{
		Name: "envoy.filters.network.connection_limit",
		ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(&connectionlimitv3.ConnectionLimit{
			StatPrefix:     SiteConnectionsStatPrefix(site),
			MaxConnections: wrapperspb.UInt64(uint64(bound)),
		})},
	}
	for _, c := range chains {
		c.Filters = append([]*listenerv3.Filter{limit}, c.Filters...)
	}
}

// SiteConnectionsStatPrefix names a site's connection limit in Envoy's
// stats (envoy_connection_limit_limited_connections{envoy_connection_limit_prefix}).
func SiteConnectionsStatPrefix(site string) string { return "site_" + site }
