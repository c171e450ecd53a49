package envoy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	previoushostsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/retry/host/previous_hosts/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"webfarm.dev/operator/internal/endpoints"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/vocabulary"
)

// Names of the dynamic resources a farm's Envoys receive over xDS.
const (
	ListenerName    = "farm"
	RouteConfigName = "farm"
)

// Routing is everything a farm's Envoys receive over xDS, with a version
// that changes exactly when any of it changes.
type Routing struct {
	Version   string
	Listeners []*listenerv3.Listener
	Routes    []*routev3.RouteConfiguration
	Clusters  []*clusterv3.Cluster
	Endpoints []*endpointv3.ClusterLoadAssignment
	// FarmVirtualHosts are the farm route configuration's (Routes[0]'s)
	// virtual hosts as VHDS resources, in order. FarmRouting also leaves
	// them in the route configuration; FarmRoutingReusing does not, as
	// they take less memory encoded (SiteVirtualHosts decodes them).
	FarmVirtualHosts []VirtualHostResource
}

// FarmRouting builds a farm's listener, routes (a virtual host per site),
// clusters (one per pool, one per cache tier) and their endpoints. Pools are
// the farm's AppPools that exist, by name: a pool's queue limits come from
// it. Pure and deterministic: the same inputs give the same Routing and version.
func FarmRouting(f model.Farm, pools map[string]model.Pool, b endpoints.Backends) (Routing, error) {
	return FarmRoutingReusing(f, pools, b, nil)
}

// FarmRoutingReusing is FarmRouting, taking from hosts the virtual hosts
// rendered for the same site with the same farm, pools and endpoints, and
// keeping there those it renders (nil: it renders every one). A farm of
// 20,000 sites renders one when one changes. The Routing shares the
// remembered virtual hosts: read-only.
func FarmRoutingReusing(f model.Farm, pools map[string]model.Pool, b endpoints.Backends, hosts *VirtualHosts) (Routing, error) {
	hcm := farmHCM(f, anyQueueTimeout(f, pools))
	rc, farmHosts, err := routeConfig(f, pools, b, hosts.forFarm(f, pools, b))
	if err != nil {
		return Routing{}, err
	}
	r := Routing{
		Listeners:        []*listenerv3.Listener{farmListener(f, hcm)},
		Routes:           []*routev3.RouteConfiguration{rc},
		FarmVirtualHosts: farmHosts,
	}
	if l := httpsListener(f, hcm); l != nil {
		rc, err := httpsRouteConfig(f, pools, b)
		if err != nil {
			return Routing{}, err
		}
		r.Listeners = append(r.Listeners, l)
		r.Routes = append(r.Routes, rc)
	}
	for _, name := range f.Pools {
		if p, ok := pools[name]; ok && routedToActivator(f, p, b) {
			r.Clusters = append(r.Clusters, activatorCluster(f.Platform))
			break
		}
	}
	// Cache clusters sort before pool clusters ("cache/" < "pool/"); the
	// farm's lists are sorted.
	for _, c := range f.CachePolicies {
		r.add(edsCluster(vocabulary.CacheCluster(c), f.Affinity), b)
	}
	for _, name := range f.Pools {
		c := edsCluster(vocabulary.PoolCluster(name), f.Affinity)
		if p, ok := pools[name]; ok {
			c.CircuitBreakers = queueBreakers(p, f.Frontend.Replicas)
			if p.HTTP2() {
				c.TypedExtensionProtocolOptions = oneStreamPerConnection()
			}
			if p.Recycling.Requests > 0 {
				// Request-count recycling reads each worker's count; other
				// pools do without the extra stats.
				c.TrackClusterStats = &clusterv3.TrackClusterStats{PerEndpointStats: true}
			}
		}
		r.add(c, b)
	}
	r.Clusters = append(r.Clusters, serviceClusters(f)...)
	if anyUnresolvedBackend(f) {
		for _, rc := range r.Routes {
			// The unresolved cluster stands for a 500: Envoy must load
			// routes that name it (the default for RDS, said for all).
			rc.ValidateClusters = wrapperspb.Bool(false)
		}
	}
	for _, m := range r.messages() {
		if err := m.(interface{ ValidateAll() error }).ValidateAll(); err != nil {
			return Routing{}, fmt.Errorf("envoy routing of farm %s/%s: %w", f.Namespace, f.Name, err)
		}
	}
	version, err := r.digest()
	if err != nil {
		return Routing{}, err
	}
	r.Version = version
	return r, nil
}

// add appends a cluster and its endpoints.
func (r *Routing) add(c *clusterv3.Cluster, b endpoints.Backends) {
	r.Clusters = append(r.Clusters, c)
	r.Endpoints = append(r.Endpoints, loadAssignment(c.Name, b[c.Name]))
}

// messages are the resources to validate and digest: the farm route
// configuration without its virtual hosts, which were validated as they were
// rendered and count by their versions.
func (r Routing) messages() []proto.Message {
	var ms []proto.Message
	for _, m := range r.Listeners {
		ms = append(ms, m)
	}
	for _, m := range r.Routes {
		if m.GetName() == RouteConfigName {
			withoutHosts := shallowCopy(m)
			withoutHosts.VirtualHosts = nil
			m = withoutHosts
		}
		ms = append(ms, m)
	}
	for _, m := range r.Clusters {
		ms = append(ms, m)
	}
	for _, m := range r.Endpoints {
		ms = append(ms, m)
	}
	return ms
}

// digest hashes the deterministic encoding of every resource.
func (r Routing) digest() (string, error) {
	h := sha256.New()
	for _, m := range r.messages() {
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%d:", len(b))
		h.Write(b)
	}
	for _, v := range r.FarmVirtualHosts {
		fmt.Fprintf(h, "%s;", v.Version)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// anyQueueTimeout: one of the farm's pools has a queue timeout, so the
// frontend needs the filter that answers its workers' refusals (it costs
// about 4 % of the frontend's throughput on small files, so farms without a
// queue timeout go without it).
func anyQueueTimeout(f model.Farm, pools map[string]model.Pool) bool {
	for _, name := range f.Pools {
		if pools[name].QueueTimeout > 0 {
			return true
		}
	}
	return false
}

// farmHCM is the HTTP connection manager of the farm's listeners.
func farmHCM(f model.Farm, queueTimeouts bool) *hcmv3.HttpConnectionManager {
	var filters []*hcmv3.HttpFilter
	if f.RejectWithReset {
		// Before the rate filters: a filter's local reply passes only the
		// filters ahead of it.
		filters = resetLimited(f.Frontend.ClientLimits)
	}
	filters = append(filters, clientRateFilters(f.Frontend.ClientLimits)...)
	if r := headerRecorder(f.Frontend); r != nil {
		filters = append(filters, r)
	}
	filters = append(filters, affinityFilters(f.Affinity)...)
	if queueTimeouts {
		filters = append(filters, QueueTimeoutFilter())
	}
	if anyLimitedSite(f) {
		filters = append(filters, bandwidthFilter())
	}
	if f.Frontend.Compression {
		filters = append(filters, compressionFilters()...)
	}
	if f.RejectWithReset {
		// Next to the router: the first to see its refusals, and the
		// last to see a request before the router.
		filters = append(filters, redirectRefusals(), resetFilter())
	}
	hcm := &hcmv3.HttpConnectionManager{
		StatPrefix: "farm",
		// HTTP/1.1, HTTP/2 without TLS (prior knowledge), and HTTP/2 where
		// TLS negotiates it (ALPN h2), each client as it speaks.
		CodecType: hcmv3.HttpConnectionManager_AUTO,
		RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{
			ConfigSource:    adsSource(),
			RouteConfigName: RouteConfigName,
		}},
		// Route on the path as the pool will see it: no "..", no "//".
		NormalizePath:             wrapperspb.Bool(true),
		MergeSlashes:              true,
		CommonHttpProtocolOptions: connectionOptions(f.Frontend),
		// WebSocket upgrades pass to the pools (webSocketRoute bounds them).
		UpgradeConfigs:   []*hcmv3.HttpConnectionManager_UpgradeConfig{{UpgradeType: webSocketUpgrade}},
		LocalReplyConfig: localReplies(f.RejectWithReset),
		AccessLog:        accessLogs(f.Frontend.AccessLog),
		HttpFilters: append(filters, &hcmv3.HttpFilter{
			Name:       "envoy.filters.http.router",
			ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(&routerv3.Router{SuppressEnvoyHeaders: true})},
		}),
	}
	boundRequests(hcm, f.Frontend.ClientLimits)
	if !f.Frontend.DebugHeaders {
		// Envoy adds no Server header of its own, and the route
		// configurations take the upstreams' off (insideHeaders): a
		// client's answers do not say what serves them.
		hcm.ServerHeaderTransformation = hcmv3.HttpConnectionManager_PASS_THROUGH
	}
	return hcm
}

func farmListener(f model.Farm, hcm *hcmv3.HttpConnectionManager) *listenerv3.Listener {
	return &listenerv3.Listener{
		Name:            ListenerName,
		Address:         socketAddress("0.0.0.0", HTTPPort),
		ListenerFilters: listenerFilters(f.Frontend.ClientAddress),
		FilterChains:    clientAddressChains(hcm, f.Frontend.ClientAddress),
	}
}

// httpFilterChain serves HTTP with the connection manager given.
func httpFilterChain(hcm *hcmv3.HttpConnectionManager) *listenerv3.FilterChain {
	return &listenerv3.FilterChain{Filters: []*listenerv3.Filter{{
		Name:       "envoy.filters.network.http_connection_manager",
		ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(hcm)},
	}}}
}

// routeConfig has a virtual host per site; a request for a host no site
// names gets 404 from Envoy. Every route names its site and pool for the
// access log. Upstream responses lose any QueueHeader (only the frontend's
// own replies carry it) and, unless the farm sends debug headers, their
// Server header. A site with TLS that redirects plain HTTP has a
// virtual host that only redirects; one served over HTTPS only has none.
func routeConfig(f model.Farm, pools map[string]model.Pool, b endpoints.Backends, hosts *VirtualHosts) (*routev3.RouteConfiguration, []VirtualHostResource, error) {
	rc := emptyRouteConfig(RouteConfigName, f.Frontend)
	resources := make([]VirtualHostResource, 0, len(f.Sites)+1)
	add := func(s *model.Site, render func() *routev3.VirtualHost) error {
		vh, res, err := hosts.render(s, render)
		if err != nil {
			return fmt.Errorf("envoy routing of farm %s/%s: %w", f.Namespace, f.Name, err)
		}
		if vh != nil {
			rc.VirtualHosts = append(rc.VirtualHosts, vh)
		}
		resources = append(resources, res)
		return nil
	}
	for _, s := range f.Sites {
		if s.TLS != nil && s.TLS.HTTPSOnly {
			continue
		}
		render := func() *routev3.VirtualHost {
			return redirectsKeepListenerPort(siteVirtualHost(f, pools, b, s), f.Frontend.Port)
		}
		if s.TLS != nil && !s.TLS.ServePlainHTTP {
			render = func() *routev3.VirtualHost { return plainHTTPRedirect(s, f.Frontend.HTTPSPort) }
		}
		if err := add(&s, render); err != nil {
			return nil, nil, err
		}
	}
	if f.RejectWithReset {
		if err := add(nil, abortVirtualHost(f.Frontend.ClientLimits)); err != nil {
			return nil, nil, err
		}
	}
	return rc, resources, nil
}

// insideHeaders are the headers of upstream answers that name what serves
// the farm (the pools' and cache tiers' "Server: nginx"), removed unless the
// farm sends debug headers. X-Webfarm-Worker is removed by headerRecorder,
// after the access log has its value.
func insideHeaders(fe model.Frontend) []string {
	if fe.DebugHeaders {
		return nil
	}
	return []string{"Server"}
}

func emptyRouteConfig(name string, fe model.Frontend) *routev3.RouteConfiguration {
	return &routev3.RouteConfiguration{Name: name, ResponseHeadersToRemove: append([]string{QueueHeader}, insideHeaders(fe)...),
		// Host names match without a port ("shop.example:8080" is
		// "shop.example"), and the Host header reaches the backend as the
		// client sent it.
		IgnorePortInHostMatching: true,
		RequestHeadersToAdd:      []*corev3.HeaderValueOption{setHeader(RealIPHeader, "%DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT%")}}
}

// siteVirtualHost serves a site's routes.
func siteVirtualHost(f model.Farm, pools map[string]model.Pool, b endpoints.Backends, s model.Site) *routev3.VirtualHost {
	vh := &routev3.VirtualHost{Name: s.Name, Domains: s.Hosts}
	limitBandwidth(vh, s.MaxBandwidthBytesPerSecond)
	for _, r := range s.Routes {
		if pools[r.Pool].HTTP2() {
			// Workers that take HTTP/2 have no cache tier (HTTP/1.1) in front.
			r.CachePolicy = ""
		}
		for _, route := range siteRoutes(f, pools, b, r) {
			route.Metadata = routeMetadata(s.Name, r)
			vh.Routes = append(vh.Routes, route)
		}
	}
	return vh
}

// siteRoutes are the Envoy routes of one of a site's routes. Those of a pool
// without a ready worker that starts on demand go to the activator; those
// of a stopped pool (or an idle one that does not start on demand) are
// answered by the frontend itself, and in L4 mode so are those of a pool
// without a ready worker (whose requests would get 503). A pool whose
// workers take HTTP/2 has no WebSocket route.
func siteRoutes(f model.Farm, pools map[string]model.Pool, b endpoints.Backends, r model.Route) []*routev3.Route {
	if r.Filters == nil {
		return withTimeouts(targetRoutes(f, pools, b, r), r)
	}
	if r.Filters.Redirect != nil {
		return withFilters([]*routev3.Route{redirectRoute(r)}, r)
	}
	return withTimeouts(withFilters(targetRoutes(f, pools, b, r), r), r)
}

// targetRoutes are the routes to where a route goes.
func targetRoutes(f model.Farm, pools map[string]model.Pool, b endpoints.Backends, r model.Route) []*routev3.Route {
	switch {
	case r.Refused:
		return []*routev3.Route{refusedRoute(r)}
	case len(r.Backends) > 0:
		return []*routev3.Route{backendsRoute(r, f.Frontend.RequestTimeout)}
	}
	pool, known := pools[r.Pool]
	switch {
	case known && routedToActivator(f, pool, b):
		return activatorRoute(f, r)
	case f.RejectWithReset && (unavailable(f, pool) || (known && !hasReadyWorker(pool, b))):
		return []*routev3.Route{resetRoute(routeMatch(r))}
	case unavailable(f, pool):
		return []*routev3.Route{stoppedPoolRoute(r)}
	}
	stamp := pool.QueueTimeout > 0
	if pool.HTTP2() {
		// A WebSocket has no upgrade to workers that take HTTP/2 alone.
		return routes(r, f.Frontend.RequestTimeout, f.Affinity, stamp)
	}
	return append([]*routev3.Route{webSocketRoute(r, f.Frontend.WebSocketIdleTimeout, f.Affinity, stamp)},
		routes(r, f.Frontend.RequestTimeout, f.Affinity, stamp)...)
}

// routes send a path prefix to its pool (or to the cache tier in front of
// it). The prefix is taken off the path, as an IIS application's virtual
// directory maps to its root: /images/logo.svg reaches the images pool as
// /logo.svg. GET and HEAD get a route of their own, which may also retry a
// request whose worker dropped the connection (as nginx retries idempotent
// requests on another upstream); other methods are retried only when the
// request never went out. Requests to a pool with a queue timeout carry the
// time they arrived, which its workers check.
func routes(r model.Route, timeout time.Duration, affinity model.Affinity, stampArrival bool) []*routev3.Route {
	idempotent := route(r, timeout, affinity, retryOn+",reset", stampArrival)
	idempotent.Match.Headers = append(idempotent.Match.Headers, &routev3.HeaderMatcher{
		Name: ":method",
		HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: &matcherv3.StringMatcher{
			MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: "^(GET|HEAD)$"}},
		}},
	})
	return []*routev3.Route{idempotent, route(r, timeout, affinity, retryOn, stampArrival)}
}

// webSocketRoute takes a route's WebSocket upgrades, ahead of its other
// requests. It goes to the pool even when the route has a cache tier (a
// cache cannot hold a WebSocket), with the pool's affinity cookie, so the
// upgrade reaches the worker that serves the client's pages. An open
// WebSocket is bounded by the idle timeout alone (no message either way for
// that long), never by the request timeout, however long it lives.
func webSocketRoute(r model.Route, idleTimeout time.Duration, affinity model.Affinity, stampArrival bool) *routev3.Route {
	r.CachePolicy = ""
	out := route(r, 0, affinity, retryOn, stampArrival)
	if idleTimeout > 0 {
		// Unset, Envoy's stream idle timeout (5 minutes) applies.
		out.GetRoute().IdleTimeout = durationpb.New(idleTimeout)
	}
	out.Match.Headers = append(out.Match.Headers, &routev3.HeaderMatcher{
		Name: "upgrade",
		HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: &matcherv3.StringMatcher{
			MatchPattern: &matcherv3.StringMatcher_Exact{Exact: webSocketUpgrade},
			IgnoreCase:   true,
		}},
	})
	return out
}

// webSocketUpgrade is the Upgrade header's token for a WebSocket (RFC 6455),
// and the upgrade the frontend lets through.
const webSocketUpgrade = "websocket"

// retryOn: failures where the request never reached a worker (a worker that
// just stopped accepting, a sticky client's draining worker).
const retryOn = "connect-failure,refused-stream,reset-before-request"

func route(r model.Route, timeout time.Duration, affinity model.Affinity, retryConditions string, stampArrival bool) *routev3.Route {
	action := &routev3.RouteAction{
		ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: vocabulary.PoolCluster(r.Pool)},
		Timeout:          durationpb.New(timeout),
		HashPolicy:       hashPolicy(affinity),
		RetryPolicy:      retryElsewhere(retryConditions),
	}
	match := routeMatch(r)
	if r.Match == nil && r.PathPrefix != "/" {
		action.RegexRewrite = &matcherv3.RegexMatchAndSubstitute{
			// The prefix is validated to [A-Za-z0-9-._~/] segments; QuoteMeta escapes its dots.
			Pattern:      &matcherv3.RegexMatcher{Regex: "^" + regexp.QuoteMeta(r.PathPrefix) + "/?"},
			Substitution: "/",
		}
	}
	out := &routev3.Route{Match: match, Action: &routev3.Route_Route{Route: action}, TypedPerFilterConfig: routeAffinity(affinity, r),
		// A client's own site headers never reach a worker: removed on every
		// route (before the route's own are added, at the same level).
		RequestHeadersToRemove: slices.Clone(vocabulary.SiteHeaders),
		RequestHeadersToAdd:    siteHeaders(r.Content),
	}
	if r.CachePolicy != "" {
		action.ClusterSpecifier = &routev3.RouteAction_Cluster{Cluster: vocabulary.CacheCluster(r.CachePolicy)}
		out.RequestHeadersToAdd = append(out.RequestHeadersToAdd, setHeader(vocabulary.PoolHeader, r.Pool))
	}
	if stampArrival {
		// Milliseconds since the epoch, as the worker's script reads them.
		out.RequestHeadersToAdd = append(out.RequestHeadersToAdd, setHeader(model.QueuedAtHeader, "%START_TIME(%s%3f)%"))
	}
	return out
}

// siteHeaders tell the pool's workers the route's share of their content
// (nothing for the pool's root and defaults). A site is thus a route, not a
// worker's configuration: adding, changing or removing one changes no pool.
func siteHeaders(c *model.SiteContent) []*corev3.HeaderValueOption {
	if c == nil {
		return nil
	}
	var out []*corev3.HeaderValueOption
	if c.Directory != "" {
		out = append(out, setHeader(vocabulary.SiteDirectoryHeader, c.Directory))
	}
	if len(c.DefaultDocuments) > 0 {
		out = append(out, setHeader(vocabulary.SiteDocumentsHeader, strings.Join(c.DefaultDocuments, " ")))
	}
	if len(c.ErrorPages) > 0 {
		pages := make([]string, 0, len(c.ErrorPages))
		for _, p := range c.ErrorPages {
			pages = append(pages, fmt.Sprintf("%d=%s", p.StatusCode, p.Path))
		}
		out = append(out, setHeader(vocabulary.SiteErrorPagesHeader, strings.Join(pages, " ")))
	}
	return out
}

// setHeader sets a request header, replacing any value a client sent.
func setHeader(name, value string) *corev3.HeaderValueOption {
	return &corev3.HeaderValueOption{
		Header:       &corev3.HeaderValue{Key: name, Value: value},
		AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
	}
}

// prefixMatch matches a route's path prefix by whole segments.
func prefixMatch(prefix string) *routev3.RouteMatch {
	if prefix == "/" {
		return &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}}
	}
	return &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_PathSeparatedPrefix{PathSeparatedPrefix: prefix}}
}

// retryElsewhere retries on the given conditions, at most twice, each time
// on a worker not tried yet.
func retryElsewhere(conditions string) *routev3.RetryPolicy {
	return &routev3.RetryPolicy{
		RetryOn:    conditions,
		NumRetries: wrapperspb.UInt32(2),
		RetryHostPredicate: []*routev3.RetryPolicy_RetryHostPredicate{{
			Name:       "envoy.retry_host_predicates.previous_hosts",
			ConfigType: &routev3.RetryPolicy_RetryHostPredicate_TypedConfig{TypedConfig: mustAny(&previoushostsv3.PreviousHostsPredicate{})},
		}},
		HostSelectionRetryMaxAttempts: 3,
	}
}

func edsCluster(name string, affinity model.Affinity) *clusterv3.Cluster {
	c := &clusterv3.Cluster{
		Name:                 name,
		ConnectTimeout:       durationpb.New(time.Second),
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
		EdsClusterConfig:     &clusterv3.Cluster_EdsClusterConfig{EdsConfig: adsSource()},
		LbPolicy:             clusterv3.Cluster_ROUND_ROBIN,
	}
	switch affinity.Type {
	case model.AffinityClientIP, model.AffinityClassC:
		// Consistent hashing: scaling moves only the clients of the workers
		// that come or go.
		c.LbPolicy = clusterv3.Cluster_MAGLEV
	case model.AffinityCookie:
		// A client whose cookie names a draining worker stays on it until it is gone.
		c.CommonLbConfig = &clusterv3.Cluster_CommonLbConfig{OverrideHostStatus: &corev3.HealthStatusSet{
			Statuses: []corev3.HealthStatus{corev3.HealthStatus_HEALTHY, corev3.HealthStatus_DRAINING},
		}}
	}
	return c
}

// loadAssignment lists a cluster's endpoints, sorted; draining ones are
// marked so that Envoy sends them no new requests, weighted ones (workers
// on nodes of different clock rates) carry their weights.
func loadAssignment(cluster string, eps []endpoints.Endpoint) *endpointv3.ClusterLoadAssignment {
	sorted := slices.Clone(eps)
	slices.SortFunc(sorted, func(a, b endpoints.Endpoint) int {
		if a.Address != b.Address {
			if a.Address < b.Address {
				return -1
			}
			return 1
		}
		return int(a.Port) - int(b.Port)
	})
	la := &endpointv3.ClusterLoadAssignment{ClusterName: cluster}
	if len(sorted) == 0 {
		return la
	}
	lbs := make([]*endpointv3.LbEndpoint, 0, len(sorted))
	for _, e := range sorted {
		health := corev3.HealthStatus_HEALTHY
		if e.State == endpoints.Draining {
			health = corev3.HealthStatus_DRAINING
		}
		lb := &endpointv3.LbEndpoint{
			HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{Address: socketAddress(e.Address, e.Port)}},
			HealthStatus:   health,
		}
		if e.Weight > 0 {
			// Round robin, Maglev and the cookie's first pick all share by weight.
			lb.LoadBalancingWeight = wrapperspb.UInt32(e.Weight)
		}
		lbs = append(lbs, lb)
	}
	la.Endpoints = []*endpointv3.LocalityLbEndpoints{{LbEndpoints: lbs}}
	return la
}
