package envoy

import (
	mutationrulesv3 "github.com/envoyproxy/go-control-plane/envoy/config/common/mutation_rules/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	headermutationv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/header_mutation/v3"
	statefulsessionv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/stateful_session/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	cookiestatev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/stateful_session/cookie/v3"
	httptypev3 "github.com/envoyproxy/go-control-plane/envoy/type/http/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"webfarm.dev/operator/internal/model"
)

// ClientNetworkHeader carries the client's address to the ClassC hash; the
// frontend always overwrites it.
const ClientNetworkHeader = "X-Webfarm-Client-Address"

// affinityFilters are the HTTP filters that keep a client on one worker.
//   - Cookie: Envoy's stateful session filter writes the chosen worker into
//     a cookie and honours it while that worker exists (draining included);
//     when it is gone the client gets another worker and a new cookie. Each
//     pool and cache tier has a cookie of its own (routeAffinity), so a page
//     from one pool and its images from another keep both workers; the
//     filter itself keeps no cookie.
//   - ClassC: the client's address goes into a header that the routes hash
//     on its first three octets (the /24 network).
//   - ClientIP hashes the connection's source address (no filter needed);
//     None balances round robin.
func affinityFilters(a model.Affinity) []*hcmv3.HttpFilter {
	switch a.Type {
	case model.AffinityCookie:
		return []*hcmv3.HttpFilter{{
			Name:       statefulSessionFilter,
			ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(&statefulsessionv3.StatefulSession{})},
		}}
	case model.AffinityClassC:
		return []*hcmv3.HttpFilter{{
			Name: "envoy.filters.http.header_mutation",
			ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(&headermutationv3.HeaderMutation{
				Mutations: &headermutationv3.Mutations{RequestMutations: []*mutationrulesv3.HeaderMutation{{
					Action: &mutationrulesv3.HeaderMutation_Append{Append: setHeader(ClientNetworkHeader, "%DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT%")},
				}}},
			})},
		}}
	}
	return nil
}

const statefulSessionFilter = "envoy.filters.http.stateful_session"

// affinityCookie names the cookie that keeps a client on one worker of a
// pool ("NAME.pool") or one pod of a cache tier ("NAME.cache.policy"): pool
// names are DNS labels, without dots, so the two never meet.
func affinityCookie(a model.Affinity, pool, cachePolicy string) string {
	if cachePolicy != "" {
		return a.CookieName + ".cache." + cachePolicy
	}
	return a.CookieName + "." + pool
}

// routeAffinity is a route's own stateful session: the cookie of the pool
// or cache tier the route goes to (nil without cookie affinity).
func routeAffinity(a model.Affinity, r model.Route) map[string]*anypb.Any {
	if a.Type != model.AffinityCookie {
		return nil
	}
	cookie := &httptypev3.Cookie{Name: affinityCookie(a, r.Pool, r.CachePolicy), Path: "/"}
	if a.CookieTTL > 0 {
		cookie.Ttl = durationpb.New(a.CookieTTL)
	}
	if a.CookieSameSite != "" {
		// Validated to Lax, Strict or None.
		cookie.Attributes = []*httptypev3.CookieAttribute{{Name: "SameSite", Value: a.CookieSameSite}}
	}
	return map[string]*anypb.Any{statefulSessionFilter: mustAny(&statefulsessionv3.StatefulSessionPerRoute{
		Override: &statefulsessionv3.StatefulSessionPerRoute_StatefulSession{StatefulSession: &statefulsessionv3.StatefulSession{
			SessionState: &corev3.TypedExtensionConfig{
				Name:        "envoy.http.stateful_session.cookie",
				TypedConfig: mustAny(&cookiestatev3.CookieBasedSessionState{Cookie: cookie}),
			},
		}},
	})}
}

// hashPolicy is what a route hashes on to pick a worker (nil: no hashing).
func hashPolicy(a model.Affinity) []*routev3.RouteAction_HashPolicy {
	switch a.Type {
	case model.AffinityClientIP:
		return []*routev3.RouteAction_HashPolicy{{
			PolicySpecifier: &routev3.RouteAction_HashPolicy_ConnectionProperties_{
				ConnectionProperties: &routev3.RouteAction_HashPolicy_ConnectionProperties{SourceIp: true},
			},
		}}
	case model.AffinityClassC:
		return []*routev3.RouteAction_HashPolicy{{
			PolicySpecifier: &routev3.RouteAction_HashPolicy_Header_{Header: &routev3.RouteAction_HashPolicy_Header{
				HeaderName: ClientNetworkHeader,
				// a.b.c.d -> a.b.c; an IPv6 address is hashed whole.
				RegexRewrite: &matcherv3.RegexMatchAndSubstitute{
					Pattern:      &matcherv3.RegexMatcher{Regex: `^(\d+\.\d+\.\d+)\.\d+$`},
					Substitution: `\1`,
				},
			}},
		}}
	}
	return nil
}
