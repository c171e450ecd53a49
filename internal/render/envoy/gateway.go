package envoy

import (
	"regexp"
	"slices"
	"strings"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/vocabulary"
)

// Routes from Gateway API rules (internal/gateway): a rule to one AppPool
// is rendered as an inline route is (queue, activator, stop answers), with
// its own match; the rules below go to Services, to several backends by
// weight, or nowhere.

// unresolvedCluster is the cluster a backendRef that does not resolve
// stands for: no such cluster exists, so its share of requests gets the
// route's cluster-not-found answer, 500 (Gateway API's rule).
const unresolvedCluster = "unresolved"

// routeMatch is a route's match: an inline route's path prefix by whole
// segments, or a Gateway API rule's path, headers, query parameters and
// method.
func routeMatch(r model.Route) *routev3.RouteMatch {
	if r.Match == nil {
		return prefixMatch(r.PathPrefix)
	}
	m := r.Match
	out := prefixMatch(m.Path)
	if m.Exact {
		out = &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Path{Path: m.Path}}
	}
	exact := func(v string) *matcherv3.StringMatcher {
		return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: v}}
	}
	for _, h := range m.Headers {
		out.Headers = append(out.Headers, &routev3.HeaderMatcher{Name: h.Name,
			HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: exact(h.Value)}})
	}
	if m.Method != "" {
		out.Headers = append(out.Headers, &routev3.HeaderMatcher{Name: ":method",
			HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: exact(m.Method)}})
	}
	for _, q := range m.QueryParams {
		out.QueryParameters = append(out.QueryParameters, &routev3.QueryParameterMatcher{Name: q.Name,
			QueryParameterMatchSpecifier: &routev3.QueryParameterMatcher_StringMatch{StringMatch: exact(q.Value)}})
	}
	return out
}

// refusedRoute answers a rule none of whose backends resolves with 500.
func refusedRoute(r model.Route) *routev3.Route {
	return &routev3.Route{Match: routeMatch(r),
		Action: &routev3.Route_DirectResponse{DirectResponse: &routev3.DirectResponseAction{Status: 500}}}
}

// backendsRoute sends a rule to its backends by weight (one: directly).
func backendsRoute(r model.Route, timeout time.Duration) *routev3.Route {
	action := &routev3.RouteAction{
		Timeout:                     durationpb.New(timeout),
		RetryPolicy:                 retryElsewhere(retryOn),
		ClusterNotFoundResponseCode: routev3.RouteAction_INTERNAL_SERVER_ERROR,
	}
	if len(r.Backends) == 1 {
		action.ClusterSpecifier = &routev3.RouteAction_Cluster{Cluster: backendCluster(r.Backends[0])}
	} else {
		weighted := &routev3.WeightedCluster{}
		for _, b := range r.Backends {
			weighted.Clusters = append(weighted.Clusters, &routev3.WeightedCluster_ClusterWeight{
				Name: backendCluster(b), Weight: wrapperspb.UInt32(b.Weight)})
		}
		action.ClusterSpecifier = &routev3.RouteAction_WeightedClusters{WeightedClusters: weighted}
	}
	return &routev3.Route{Match: routeMatch(r), Action: &routev3.Route_Route{Route: action},
		// As on a route to one pool: a client's own site headers never
		// reach a worker, whichever backend the weights pick.
		RequestHeadersToRemove: slices.Clone(vocabulary.SiteHeaders),
		RequestHeadersToAdd:    siteHeaders(r.Content),
	}
}

func backendCluster(b model.Backend) string {
	switch {
	case b.Invalid:
		return unresolvedCluster
	case b.Service != nil:
		return vocabulary.ServiceCluster(b.Service.Namespace, b.Service.Name, b.Service.Port)
	}
	return vocabulary.PoolCluster(b.Pool)
}

// anyUnresolvedBackend: a Gateway rule sends a share of its requests to a
// backendRef that does not resolve.
func anyUnresolvedBackend(f model.Farm) bool {
	for _, s := range f.Sites {
		for _, r := range s.Routes {
			if slices.ContainsFunc(r.Backends, func(b model.Backend) bool { return b.Invalid }) {
				return true
			}
		}
	}
	return false
}

// redirectRoute answers a rule with its redirect (Gateway API's
// RequestRedirect filter).
func redirectRoute(r model.Route) *routev3.Route {
	rd := r.Filters.Redirect
	action := &routev3.RedirectAction{HostRedirect: rd.Hostname, PortRedirect: uint32(rd.Port),
		ResponseCode: redirectCodes[rd.StatusCode]}
	if rd.Scheme != "" {
		action.SchemeRewriteSpecifier = &routev3.RedirectAction_SchemeRedirect{SchemeRedirect: rd.Scheme}
	}
	if p := rd.Path; p != nil {
		if p.Full {
			action.PathRewriteSpecifier = &routev3.RedirectAction_PathRedirect{PathRedirect: p.Value}
		} else {
			action.PathRewriteSpecifier = &routev3.RedirectAction_RegexRewrite{RegexRewrite: prefixReplacement(r.Match.Path, p.Value)}
		}
	}
	return &routev3.Route{Match: routeMatch(r), Action: &routev3.Route_Redirect{Redirect: action}}
}

// redirectsKeepListenerPort gives the redirects of a virtual host that
// name neither a scheme nor a port the port of the listener they answer on
// (port): Gateway API's rule, since a client's Host header may leave the
// port out.
func redirectsKeepListenerPort(vh *routev3.VirtualHost, port int32) *routev3.VirtualHost {
	for _, r := range vh.Routes {
		rd := r.GetRedirect()
		if rd != nil && rd.PortRedirect == 0 && rd.SchemeRewriteSpecifier == nil {
			rd.PortRedirect = uint32(port)
		}
	}
	return vh
}

var redirectCodes = map[int32]routev3.RedirectAction_RedirectResponseCode{
	301: routev3.RedirectAction_MOVED_PERMANENTLY, 302: routev3.RedirectAction_FOUND, 303: routev3.RedirectAction_SEE_OTHER,
	307: routev3.RedirectAction_TEMPORARY_REDIRECT, 308: routev3.RedirectAction_PERMANENT_REDIRECT,
}

// prefixReplacement replaces a matched path prefix (whole segments) with
// another, as Gateway API's ReplacePrefixMatch: /shop/cart with /shop
// replaced by /store is /store/cart, by / it is /cart.
func prefixReplacement(prefix, with string) *matcherv3.RegexMatchAndSubstitute {
	prefix = strings.TrimSuffix(prefix, "/")
	with = strings.TrimSuffix(with, "/")
	pattern := "^" + regexp.QuoteMeta(prefix)
	if with == "" {
		// The rest of the path keeps its leading slash, or is just "/".
		pattern, with = pattern+"/?", "/"
	}
	return &matcherv3.RegexMatchAndSubstitute{Pattern: &matcherv3.RegexMatcher{Regex: pattern}, Substitution: with}
}

// withFilters adds a rule's header changes to its routes, and its rewrite
// to those that go to a backend.
func withFilters(routes []*routev3.Route, r model.Route) []*routev3.Route {
	f := r.Filters
	for _, route := range routes {
		route.RequestHeadersToAdd = append(route.RequestHeadersToAdd, headerOptions(f.RequestHeaders)...)
		route.RequestHeadersToRemove = append(route.RequestHeadersToRemove, f.RequestHeaders.Remove...)
		route.ResponseHeadersToAdd = append(route.ResponseHeadersToAdd, headerOptions(f.ResponseHeaders)...)
		route.ResponseHeadersToRemove = append(route.ResponseHeadersToRemove, f.ResponseHeaders.Remove...)
		action := route.GetRoute()
		if action == nil {
			continue
		}
		action.RequestMirrorPolicies = mirrorPolicies(f.Mirrors)
		if f.Rewrite == nil {
			continue
		}
		if f.Rewrite.Hostname != "" {
			action.HostRewriteSpecifier = &routev3.RouteAction_HostRewriteLiteral{HostRewriteLiteral: f.Rewrite.Hostname}
		}
		if p := f.Rewrite.Path; p != nil {
			if p.Full {
				action.RegexRewrite = &matcherv3.RegexMatchAndSubstitute{Pattern: &matcherv3.RegexMatcher{Regex: "^/[^?]*"}, Substitution: p.Value}
			} else {
				action.RegexRewrite = prefixReplacement(r.Match.Path, p.Value)
			}
		}
	}
	return routes
}

// mirrorPolicies copy a rule's requests to its mirrors (nil: none); a
// share below every request is drawn per request.
func mirrorPolicies(mirrors []model.Mirror) []*routev3.RouteAction_RequestMirrorPolicy {
	var out []*routev3.RouteAction_RequestMirrorPolicy
	for _, m := range mirrors {
		p := &routev3.RouteAction_RequestMirrorPolicy{Cluster: backendCluster(model.Backend{Service: &m.Service})}
		if m.PerMillion < 1_000_000 {
			p.RuntimeFraction = &corev3.RuntimeFractionalPercent{DefaultValue: &typev3.FractionalPercent{
				Numerator: m.PerMillion, Denominator: typev3.FractionalPercent_MILLION}}
		}
		out = append(out, p)
	}
	return out
}

// headerOptions are a rule's header changes; "%" in a value is Envoy's
// command operator, so a tenant's value has every "%" doubled (a literal).
// withTimeouts bounds a Gateway API rule's requests as its timeouts say
// (an open WebSocket keeps the bound of the farm's idle timeout alone).
func withTimeouts(routes []*routev3.Route, r model.Route) []*routev3.Route {
	for _, route := range routes {
		action := route.GetRoute()
		if action == nil {
			continue
		}
		if r.Timeout > 0 && action.GetIdleTimeout() == nil {
			action.Timeout = durationpb.New(r.Timeout)
		}
		if r.BackendTimeout > 0 && action.RetryPolicy != nil {
			action.RetryPolicy.PerTryTimeout = durationpb.New(r.BackendTimeout)
		}
	}
	return routes
}

func headerOptions(h model.HeaderChanges) []*corev3.HeaderValueOption {
	literal := func(v string) string { return strings.ReplaceAll(v, "%", "%%") }
	var out []*corev3.HeaderValueOption
	for _, x := range h.Set {
		out = append(out, setHeader(x.Name, literal(x.Value)))
	}
	for _, x := range h.Add {
		out = append(out, &corev3.HeaderValueOption{Header: &corev3.HeaderValue{Key: x.Name, Value: literal(x.Value)},
			AppendAction: corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD})
	}
	return out
}

// serviceClusters reach the Services the farm's Gateway routes name, at
// their cluster IPs (kube-proxy spreads the connections), sorted by name.
func serviceClusters(f model.Farm) []*clusterv3.Cluster {
	seen := map[string]*clusterv3.Cluster{}
	for _, s := range f.Sites {
		for _, r := range s.Routes {
			backends := slices.Clone(r.Backends)
			if r.Filters != nil {
				for _, m := range r.Filters.Mirrors {
					backends = append(backends, model.Backend{Service: &m.Service})
				}
			}
			for _, b := range backends {
				if b.Service == nil {
					continue
				}
				name := backendCluster(b)
				if _, ok := seen[name]; !ok {
					seen[name] = serviceCluster(name, *b.Service)
				}
			}
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	slices.Sort(names)
	out := make([]*clusterv3.Cluster, len(names))
	for i, n := range names {
		out[i] = seen[n]
	}
	return out
}

// serviceCluster reaches a Service at its cluster IP, or a headless one's
// pods by its DNS name: every address the name has, looked up again as the
// pods change (Envoy's default every 5 s). A port of appProtocol
// kubernetes.io/h2c is spoken to in HTTP/2 over clear text.
func serviceCluster(name string, s model.ServiceBackend) *clusterv3.Cluster {
	var c *clusterv3.Cluster
	if s.ClusterIP != "" {
		c = staticCluster(name, s.ClusterIP, uint32(s.Port))
	} else {
		c = staticCluster(name, s.DNSName(), uint32(s.TargetPort))
		c.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STRICT_DNS}
		c.DnsLookupFamily = clusterv3.Cluster_V4_PREFERRED
	}
	if s.H2C {
		c.TypedExtensionProtocolOptions = upstreamHTTP2(&corev3.Http2ProtocolOptions{})
	}
	return c
}
