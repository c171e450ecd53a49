package gateway

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"webfarm.dev/operator/internal/model"
)

// Site is the farm's site for one host name of attached routes.
type Site = model.Site

// backendProblem says why a backendRef does not resolve (reason empty: it
// does).
type backendProblem struct {
	reason  gwv1.RouteConditionReason
	message string
}

// resolveBackend decides one backendRef of a route.
func resolveBackend(in Inputs, routeNamespace string, ref gwv1.BackendRef) (model.Backend, backendProblem) {
	group, kind, ns := valueOr(ref.Group, ""), valueOr(ref.Kind, KindService), valueOr(ref.Namespace, routeNamespace)
	weight := uint32(1)
	if ref.Weight != nil {
		weight = uint32(max(0, *ref.Weight))
	}
	invalid := model.Backend{Invalid: true, Weight: weight}
	key := types.NamespacedName{Namespace: ns, Name: string(ref.Name)}
	switch {
	case group == "" && kind == KindService, group == GroupWebFarm && kind == KindAppPool:
	default:
		return invalid, backendProblem{gwv1.RouteReasonInvalidKind, fmt.Sprintf("backendRef %s/%s %s: only Services and webfarm.dev AppPools are served", group, kind, ref.Name)}
	}
	if ns != routeNamespace && !granted(in.Grants, routeNamespace, ns, group, kind, string(ref.Name)) {
		return invalid, backendProblem{gwv1.RouteReasonRefNotPermitted,
			fmt.Sprintf("no ReferenceGrant in namespace %s lets HTTPRoutes of %s refer to %s %s", ns, routeNamespace, kind, ref.Name)}
	}
	found, ok := in.Backends[kind][key]
	if !ok {
		return invalid, backendProblem{gwv1.RouteReasonBackendNotFound, fmt.Sprintf("%s %s not found", kind, key)}
	}
	if kind == KindAppPool {
		if ns != in.Gateway.Namespace {
			return invalid, backendProblem{gwv1.RouteReasonBackendNotFound,
				fmt.Sprintf("AppPool %s: a route's AppPools are those of its Gateway's namespace (%s)", key, in.Gateway.Namespace)}
		}
		return model.Backend{Pool: key.Name, Weight: weight}, backendProblem{}
	}
	if ref.Port == nil || !slices.Contains(found.Ports, *ref.Port) {
		return invalid, backendProblem{gwv1.RouteReasonBackendNotFound, fmt.Sprintf("Service %s has no port %s", key, portText(ref.Port))}
	}
	if found.ClusterIP == "" {
		// Headless: the frontend resolves the Service's name to its pods,
		// which serve on the target port.
		target, ok := found.TargetPorts[*ref.Port]
		if !ok {
			return invalid, backendProblem{gwv1.RouteReasonUnsupportedValue,
				fmt.Sprintf("headless Service %s: port %d's targetPort must be a number (its pods are reached directly)", key, *ref.Port)}
		}
		return model.Backend{Weight: weight, Service: &model.ServiceBackend{Namespace: ns, Name: key.Name, Port: *ref.Port, TargetPort: target,
			H2C: found.H2CPorts[*ref.Port]}}, backendProblem{}
	}
	return model.Backend{Weight: weight, Service: &model.ServiceBackend{Namespace: ns, Name: key.Name, ClusterIP: found.ClusterIP, Port: *ref.Port,
		H2C: found.H2CPorts[*ref.Port]}}, backendProblem{}
}

func portText(p *gwv1.PortNumber) string {
	if p == nil {
		return "(none given)"
	}
	return fmt.Sprint(*p)
}

// granted: a ReferenceGrant in the target namespace lets HTTPRoutes of
// from refer to the object.
func granted(grants []*gwv1.ReferenceGrant, from, to, group, kind, name string) bool {
	for _, g := range grants {
		if g.Namespace != to {
			continue
		}
		fromOK := slices.ContainsFunc(g.Spec.From, func(f gwv1.ReferenceGrantFrom) bool {
			return string(f.Group) == GroupGateway && f.Kind == KindHTTPRoute && string(f.Namespace) == from
		})
		toOK := slices.ContainsFunc(g.Spec.To, func(t gwv1.ReferenceGrantTo) bool {
			return string(t.Group) == group && string(t.Kind) == kind && (t.Name == nil || string(*t.Name) == name)
		})
		if fromOK && toOK {
			return true
		}
	}
	return false
}

// resolvedRefs is a route's ResolvedRefs condition: the first backendRef
// that does not resolve says why.
func resolvedRefs(in Inputs, r *gwv1.HTTPRoute, gen int64) metav1.Condition {
	for _, rule := range r.Spec.Rules {
		for _, ref := range rule.BackendRefs {
			if _, p := resolveBackend(in, r.Namespace, ref.BackendRef); p.reason != "" {
				return condition(string(gwv1.RouteConditionResolvedRefs), false, string(p.reason), p.message, gen)
			}
		}
		if policy := cachePolicy(rule); policy != "" {
			if !in.CachePolicies[policy] {
				return condition(string(gwv1.RouteConditionResolvedRefs), false, string(gwv1.RouteReasonBackendNotFound),
					fmt.Sprintf("CachePolicy %s not found in namespace %s", policy, r.Namespace), gen)
			}
			if t := ruleTarget(in, r.Namespace, rule); t.Pool == "" {
				return condition(string(gwv1.RouteConditionResolvedRefs), false, string(gwv1.RouteReasonUnsupportedValue),
					fmt.Sprintf("CachePolicy %s fronts one AppPool: the rule must have one AppPool backend", policy), gen)
			}
		}
		for _, f := range rule.Filters {
			if f.Type != gwv1.HTTPRouteFilterRequestMirror || f.RequestMirror == nil {
				continue
			}
			if _, p := resolveBackend(in, r.Namespace, gwv1.BackendRef{BackendObjectReference: f.RequestMirror.BackendRef}); p.reason != "" {
				return condition(string(gwv1.RouteConditionResolvedRefs), false, string(p.reason), "requestMirror: "+p.message, gen)
			}
		}
		if _, p := ruleContent(in, r.Namespace, rule); p.reason != "" {
			return condition(string(gwv1.RouteConditionResolvedRefs), false, string(p.reason), p.message, gen)
		}
		if what := badContentRule(in, r.Namespace, rule); what != "" {
			return condition(string(gwv1.RouteConditionResolvedRefs), false, string(gwv1.RouteReasonUnsupportedValue), what, gen)
		}
	}
	return condition(string(gwv1.RouteConditionResolvedRefs), true, string(gwv1.RouteReasonResolvedRefs), "", gen)
}

// unsupported says what of a route the farm does not serve, or refuses
// (empty: nothing).
func unsupported(r *gwv1.HTTPRoute, gatewayNamespace string) string {
	for _, h := range r.Spec.Hostnames {
		if !validHostname.MatchString(string(h)) || len(h) > 253 {
			return fmt.Sprintf("host name %q: lower-case DNS labels, the first may be \"*\"", h)
		}
	}
	for _, rule := range r.Spec.Rules {
		for _, f := range rule.Filters {
			if f.Type == gwv1.HTTPRouteFilterExtensionRef {
				if what := badExtensionRef(f, r.Namespace, gatewayNamespace); what != "" {
					return what
				}
				continue
			}
			if what := unsupportedFilter(f); what != "" {
				return what
			}
		}
		for _, kind := range []string{KindCachePolicy, KindSiteContent} {
			if len(extensionRefs(rule, kind)) > 1 {
				return fmt.Sprintf("a rule names one %s at most", kind)
			}
		}
		for _, b := range rule.BackendRefs {
			if len(b.Filters) > 0 {
				return fmt.Sprintf("backendRef filter %s is not served", b.Filters[0].Type)
			}
		}
		if _, _, err := timeouts(rule); err != nil {
			return err.Error()
		}
		for _, m := range rule.Matches {
			if what := unsupportedMatch(m); what != "" {
				return what
			}
		}
	}
	return ""
}

// unsupportedFilter says what of a filter the farm does not serve or
// refuses (empty: nothing).
func unsupportedFilter(f gwv1.HTTPRouteFilter) string {
	switch f.Type {
	case gwv1.HTTPRouteFilterRequestHeaderModifier:
		return badHeaderFilter("requestHeaderModifier", f.RequestHeaderModifier)
	case gwv1.HTTPRouteFilterResponseHeaderModifier:
		return badHeaderFilter("responseHeaderModifier", f.ResponseHeaderModifier)
	case gwv1.HTTPRouteFilterRequestRedirect:
		rd := f.RequestRedirect
		switch {
		case rd == nil:
			return "requestRedirect: missing"
		case rd.Scheme != nil && *rd.Scheme != "http" && *rd.Scheme != "https":
			return fmt.Sprintf("requestRedirect scheme %q: http or https", *rd.Scheme)
		case rd.Hostname != nil && (!validHostname.MatchString(string(*rd.Hostname)) || strings.HasPrefix(string(*rd.Hostname), "*")):
			return fmt.Sprintf("requestRedirect hostname %q: lower-case DNS labels", *rd.Hostname)
		case rd.StatusCode != nil && !slices.Contains([]int{301, 302, 303, 307, 308}, *rd.StatusCode):
			return fmt.Sprintf("requestRedirect statusCode %d: 301, 302, 303, 307 or 308", *rd.StatusCode)
		}
		return badPathModifier("requestRedirect", rd.Path)
	case gwv1.HTTPRouteFilterRequestMirror:
		m := f.RequestMirror
		switch {
		case m == nil:
			return "requestMirror: missing"
		case valueOr(m.BackendRef.Group, "") != "" || valueOr(m.BackendRef.Kind, KindService) != KindService:
			return fmt.Sprintf("requestMirror backendRef %s: only Services are mirrored to", m.BackendRef.Name)
		case m.Percent != nil && m.Fraction != nil:
			return "requestMirror: percent or fraction, not both"
		}
		return ""
	case gwv1.HTTPRouteFilterURLRewrite:
		rw := f.URLRewrite
		switch {
		case rw == nil:
			return "urlRewrite: missing"
		case rw.Hostname != nil && (!validHostname.MatchString(string(*rw.Hostname)) || strings.HasPrefix(string(*rw.Hostname), "*")):
			return fmt.Sprintf("urlRewrite hostname %q: lower-case DNS labels", *rw.Hostname)
		}
		return badPathModifier("urlRewrite", rw.Path)
	}
	return fmt.Sprintf("filter %s is not served", f.Type)
}

// badExtensionRef says why an ExtensionRef filter is refused (empty: it
// is a CachePolicy or a SiteContent the farm serves the rule with). A
// cache tier fronts the pools of its own namespace, which are the
// Gateway's: a route of another namespace cannot name one (ExtensionRef
// is local). A SiteContent is the route's own, of any namespace.
func badExtensionRef(f gwv1.HTTPRouteFilter, routeNamespace, gatewayNamespace string) string {
	ref := f.ExtensionRef
	switch {
	case ref == nil:
		return "extensionRef: missing"
	case string(ref.Group) == GroupWebFarm && string(ref.Kind) == KindSiteContent:
		return ""
	case string(ref.Group) != GroupWebFarm || string(ref.Kind) != KindCachePolicy:
		return fmt.Sprintf("extensionRef %s/%s is not served: a webfarm.dev CachePolicy or SiteContent", ref.Group, ref.Kind)
	case routeNamespace != gatewayNamespace:
		return fmt.Sprintf("extensionRef CachePolicy %s: cache tiers serve the routes of the Gateway's namespace (%s)", ref.Name, gatewayNamespace)
	}
	return ""
}

// cachePolicy is the CachePolicy a rule's ExtensionRef filter names (empty:
// none).
func cachePolicy(rule gwv1.HTTPRouteRule) string {
	if names := extensionRefs(rule, KindCachePolicy); len(names) > 0 {
		return names[0]
	}
	return ""
}

// reservedHeader: a header the frontend sets or reads for its own purposes
// (which pool to start, when a request arrived, the client's address), which
// a route may not change.
func reservedHeader(name string) bool {
	n := strings.ToLower(name)
	return strings.HasPrefix(n, "x-webfarm-") || strings.HasPrefix(n, "x-envoy-") || n == "x-real-ip" || n == "host" || strings.HasPrefix(n, ":")
}

func badHeaderFilter(field string, h *gwv1.HTTPHeaderFilter) string {
	if h == nil {
		return field + ": missing"
	}
	for _, hdr := range slices.Concat(h.Set, h.Add) {
		if !validToken.MatchString(string(hdr.Name)) || !validValue.MatchString(hdr.Value) || len(hdr.Value) > 4096 {
			return fmt.Sprintf("%s header %q: a token name and a printable value", field, hdr.Name)
		}
		if reservedHeader(string(hdr.Name)) {
			return fmt.Sprintf("%s header %q: the frontend's own", field, hdr.Name)
		}
	}
	for _, name := range h.Remove {
		if !validToken.MatchString(name) || reservedHeader(name) {
			return fmt.Sprintf("%s remove %q: a token name, not the frontend's own", field, name)
		}
	}
	return ""
}

func badPathModifier(field string, p *gwv1.HTTPPathModifier) string {
	if p == nil {
		return ""
	}
	v := p.ReplaceFullPath
	if p.Type == gwv1.PrefixMatchHTTPPathModifier {
		v = p.ReplacePrefixMatch
	}
	if v == nil || !validPath.MatchString(*v) || strings.Contains(*v, "//") || len(*v) > 1024 {
		return fmt.Sprintf("%s path: a path of RFC 3986 characters without \"//\"", field)
	}
	return ""
}

// filters turns a rule's filters into the model's (nil: none).
func filters(rule gwv1.HTTPRouteRule) *model.Filters {
	if len(rule.Filters) == 0 {
		return nil
	}
	out := &model.Filters{}
	headers := func(to *model.HeaderChanges, h *gwv1.HTTPHeaderFilter) {
		for _, x := range h.Set {
			to.Set = append(to.Set, model.NameValue{Name: strings.ToLower(string(x.Name)), Value: x.Value})
		}
		for _, x := range h.Add {
			to.Add = append(to.Add, model.NameValue{Name: strings.ToLower(string(x.Name)), Value: x.Value})
		}
		for _, x := range h.Remove {
			to.Remove = append(to.Remove, strings.ToLower(x))
		}
	}
	for _, f := range rule.Filters {
		switch f.Type {
		case gwv1.HTTPRouteFilterRequestHeaderModifier:
			headers(&out.RequestHeaders, f.RequestHeaderModifier)
		case gwv1.HTTPRouteFilterResponseHeaderModifier:
			headers(&out.ResponseHeaders, f.ResponseHeaderModifier)
		case gwv1.HTTPRouteFilterRequestRedirect:
			rd := f.RequestRedirect
			out.Redirect = &model.Redirect{StatusCode: 302, Path: pathChange(rd.Path)}
			if rd.Scheme != nil {
				out.Redirect.Scheme = *rd.Scheme
			}
			if rd.Hostname != nil {
				out.Redirect.Hostname = string(*rd.Hostname)
			}
			if rd.Port != nil {
				out.Redirect.Port = *rd.Port
			}
			if rd.StatusCode != nil {
				out.Redirect.StatusCode = int32(*rd.StatusCode)
			}
		case gwv1.HTTPRouteFilterURLRewrite:
			out.Rewrite = &model.Rewrite{Path: pathChange(f.URLRewrite.Path)}
			if f.URLRewrite.Hostname != nil {
				out.Rewrite.Hostname = string(*f.URLRewrite.Hostname)
			}
		}
	}
	return out
}

// timeouts are a rule's request and backend request timeouts (GEP-2257
// durations, which Go parses; 0: unset; "0s": none, as Gateway API says).
func timeouts(rule gwv1.HTTPRouteRule) (request, backend time.Duration, err error) {
	if rule.Timeouts == nil {
		return 0, 0, nil
	}
	parse := func(field string, d *gwv1.Duration) (time.Duration, error) {
		if d == nil {
			return 0, nil
		}
		v, err := time.ParseDuration(string(*d))
		if err != nil || v < 0 || v > model.LongestFrontendTimeout {
			return 0, fmt.Errorf("timeouts.%s %q: a duration up to %s", field, *d, model.LongestFrontendTimeout)
		}
		if v == 0 {
			v = model.LongestFrontendTimeout // "0s" turns the timeout off
		}
		return v, nil
	}
	if request, err = parse("request", rule.Timeouts.Request); err != nil {
		return 0, 0, err
	}
	backend, err = parse("backendRequest", rule.Timeouts.BackendRequest)
	return request, backend, err
}

func pathChange(p *gwv1.HTTPPathModifier) *model.PathChange {
	switch {
	case p == nil:
		return nil
	case p.Type == gwv1.FullPathHTTPPathModifier && p.ReplaceFullPath != nil:
		return &model.PathChange{Full: true, Value: *p.ReplaceFullPath}
	case p.ReplacePrefixMatch != nil:
		return &model.PathChange{Value: *p.ReplacePrefixMatch}
	}
	return nil
}

// claim is a host name an attached route asks for through one of its
// parentRefs (its index in the route's statuses), on an HTTP or an HTTPS
// listener.
type claim struct {
	host   string
	https  bool
	route  *gwv1.HTTPRoute
	parent int
}

// sites gives each host name to one namespace: the farm's inline sites
// keep theirs; any other goes to the namespace of the oldest route that
// claims it (claims come oldest first), whose routes for it merge. A route
// that loses a host is told so in its Accepted condition.
func sites(in Inputs, claims []claim, parents map[types.NamespacedName][]gwv1.RouteParentStatus) []Site {
	owner := map[string]string{}
	for _, h := range in.Farm.Hosts {
		owner[h] = ""
	}
	lost := map[types.NamespacedName]map[int][]string{}
	routesOf := map[string][]*gwv1.HTTPRoute{}
	overHTTP, overHTTPS := map[string]bool{}, map[string]bool{}
	for _, c := range claims {
		key := types.NamespacedName{Namespace: c.route.Namespace, Name: c.route.Name}
		ns, taken := owner[c.host]
		if !taken {
			owner[c.host], ns = c.route.Namespace, c.route.Namespace
		}
		if ns != c.route.Namespace {
			if lost[key] == nil {
				lost[key] = map[int][]string{}
			}
			lost[key][c.parent] = append(lost[key][c.parent], c.host)
			continue
		}
		if !slices.Contains(routesOf[c.host], c.route) {
			routesOf[c.host] = append(routesOf[c.host], c.route)
		}
		if c.https {
			overHTTPS[c.host] = true
		} else {
			overHTTP[c.host] = true
		}
	}
	for key, byParent := range lost {
		for i, hosts := range byParent {
			markLost(&parents[key][i], hosts, routeHostCount(claims, key, i))
		}
	}
	out := make([]Site, 0, len(routesOf))
	for host, routes := range routesOf {
		site := Site{Name: siteName(host), Hosts: []string{host}, Routes: hostRoutes(in, routes)}
		if overHTTPS[host] {
			// Its listener's certificate serves it (no Secret of its own);
			// plain HTTP only where an HTTP listener has it too.
			site.TLS = &model.SiteTLS{ServePlainHTTP: overHTTP[host], HTTPSOnly: !overHTTP[host]}
		}
		out = append(out, site)
	}
	slices.SortFunc(out, func(a, b Site) int { return cmp.Compare(a.Hosts[0], b.Hosts[0]) })
	return out
}

func routeHostCount(claims []claim, key types.NamespacedName, parent int) int {
	n := 0
	for _, c := range claims {
		if c.route.Namespace == key.Namespace && c.route.Name == key.Name && c.parent == parent {
			n++
		}
	}
	return n
}

// markLost tells a route which of its hosts another namespace holds: not
// accepted when it lost every one.
func markLost(st *gwv1.RouteParentStatus, hosts []string, claimed int) {
	msg := fmt.Sprintf("host names claimed first by another namespace or the farm: %s", strings.Join(hosts, ", "))
	for i, c := range st.Conditions {
		if c.Type != string(gwv1.RouteConditionAccepted) {
			continue
		}
		if len(hosts) == claimed {
			st.Conditions[i].Status, st.Conditions[i].Reason = metav1.ConditionFalse, string(ReasonHostnameConflict)
		}
		st.Conditions[i].Message = msg
	}
}

// siteName names a host's site (its virtual host, and the site of its
// access log lines); inline sites' names have no colon.
func siteName(host string) string {
	return "route:" + host
}

// hostRoutes are the routes of one host in Gateway API's precedence:
// exact paths first, then longer paths, a method, more headers, more query
// parameters; then the older route and the rule's order.
func hostRoutes(in Inputs, routes []*gwv1.HTTPRoute) []model.Route {
	type ranked struct {
		route model.Route
		order int
	}
	var all []ranked
	for _, r := range routes {
		if unsupported(r, in.Gateway.Namespace) != "" {
			continue
		}
		for _, rule := range r.Spec.Rules {
			target := ruleTarget(in, r.Namespace, rule)
			if sendsToPool(target) {
				target.Content, _ = ruleContent(in, r.Namespace, rule)
			}
			target.Filters = withMirrors(filters(rule), mirrors(in, r.Namespace, rule))
			target.Timeout, target.BackendTimeout, _ = timeouts(rule)
			matches := rule.Matches
			if len(matches) == 0 {
				matches = []gwv1.HTTPRouteMatch{{}}
			}
			for _, m := range matches {
				out := target
				out.Match = match(m)
				all = append(all, ranked{out, len(all)})
			}
		}
	}
	slices.SortStableFunc(all, func(a, b ranked) int {
		x, y := a.route.Match, b.route.Match
		if x.Exact != y.Exact {
			if x.Exact {
				return -1
			}
			return 1
		}
		return cmp.Or(
			-cmp.Compare(len(x.Path), len(y.Path)),
			-cmp.Compare(boolInt(x.Method != ""), boolInt(y.Method != "")),
			-cmp.Compare(len(x.Headers), len(y.Headers)),
			-cmp.Compare(len(x.QueryParams), len(y.QueryParams)),
			cmp.Compare(a.order, b.order),
		)
	})
	out := make([]model.Route, len(all))
	for i, r := range all {
		out[i] = r.route
	}
	return out
}

// sendsToPool: a rule's requests reach an AppPool's workers, which serve
// its content.
func sendsToPool(r model.Route) bool {
	return r.Pool != "" || slices.ContainsFunc(r.Backends, func(b model.Backend) bool { return b.Pool != "" && !b.Invalid })
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ruleTarget is where a rule sends its requests: one AppPool as an inline
// route does (with the pool's queue, activator and stop answers), or
// Services and pools by weight; 500 when none resolves.
func ruleTarget(in Inputs, routeNamespace string, rule gwv1.HTTPRouteRule) model.Route {
	var backends []model.Backend
	valid := 0
	for _, ref := range rule.BackendRefs {
		b, p := resolveBackend(in, routeNamespace, ref.BackendRef)
		if b.Weight == 0 {
			continue
		}
		if p.reason == "" {
			valid++
		}
		backends = append(backends, b)
	}
	policy := cachePolicy(rule)
	_, contentProblem := ruleContent(in, routeNamespace, rule)
	switch {
	case valid == 0, policy != "" && !in.CachePolicies[policy]:
		return model.Route{Refused: true}
	case contentProblem.reason != "", badContentRule(in, routeNamespace, rule) != "":
		// An unresolved filter is not skipped: its requests get 500
		// (Gateway API), never another folder's files.
		return model.Route{Refused: true}
	case len(backends) == 1 && backends[0].Pool != "":
		return model.Route{Pool: backends[0].Pool, CachePolicy: policy}
	case policy != "":
		// A cache tier fronts one pool per route.
		return model.Route{Refused: true}
	}
	return model.Route{Backends: backends}
}

// match turns a Gateway API match into the model's (defaults: a "/" prefix).
func match(m gwv1.HTTPRouteMatch) *model.Match {
	out := &model.Match{Path: "/"}
	if m.Path != nil {
		if m.Path.Value != nil {
			out.Path = *m.Path.Value
		}
		out.Exact = m.Path.Type != nil && *m.Path.Type == gwv1.PathMatchExact
	}
	if !out.Exact && len(out.Path) > 1 {
		// A trailing slash does not change a prefix match (Gateway API).
		out.Path = strings.TrimSuffix(out.Path, "/")
	}
	for _, h := range m.Headers {
		out.Headers = append(out.Headers, model.NameValue{Name: strings.ToLower(string(h.Name)), Value: h.Value})
	}
	for _, q := range m.QueryParams {
		out.QueryParams = append(out.QueryParams, model.NameValue{Name: string(q.Name), Value: q.Value})
	}
	if m.Method != nil {
		out.Method = string(*m.Method)
	}
	return out
}

// Values a route's matches may carry to the frontend. Gateway API's schema
// checks most; these hold whatever reached the API (a tenant is not
// trusted), so that no value can break or bend the frontend's routes.
var (
	// Gateway API's Hostname schema.
	validHostname = regexp.MustCompile(`^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	validPath     = regexp.MustCompile(`^/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*$`)
	validToken    = regexp.MustCompile("^[A-Za-z0-9!#$%&'*+.^_|~`-]+$")
	validValue    = regexp.MustCompile(`^[\x20-\x7e]*$`)
)

// httpMethods are the methods Gateway API's schema lets a match name.
var httpMethods = []string{"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"}

// unsupportedMatch says what of a match the farm refuses (empty: none).
func unsupportedMatch(m gwv1.HTTPRouteMatch) string {
	if m.Method != nil && !slices.Contains(httpMethods, string(*m.Method)) {
		return fmt.Sprintf("method %q: one of %s", *m.Method, strings.Join(httpMethods, ", "))
	}
	if m.Path != nil {
		if m.Path.Type != nil && *m.Path.Type == gwv1.PathMatchRegularExpression {
			return "path match RegularExpression is not served"
		}
		if v := m.Path.Value; v != nil && (!validPath.MatchString(*v) || strings.Contains(*v, "//") || len(*v) > 1024) {
			return fmt.Sprintf("path %q: a path of RFC 3986 characters without \"//\"", *v)
		}
	}
	for _, h := range m.Headers {
		if h.Type != nil && *h.Type != gwv1.HeaderMatchExact {
			return fmt.Sprintf("header match %s is not served", *h.Type)
		}
		if !validToken.MatchString(string(h.Name)) || !validValue.MatchString(h.Value) || len(h.Value) > 4096 {
			return fmt.Sprintf("header match %q: a token name and a printable value", h.Name)
		}
	}
	for _, q := range m.QueryParams {
		if q.Type != nil && *q.Type != gwv1.QueryParamMatchExact {
			return fmt.Sprintf("query parameter match %s is not served", *q.Type)
		}
		if !validToken.MatchString(string(q.Name)) || !validValue.MatchString(q.Value) || len(q.Value) > 4096 {
			return fmt.Sprintf("query parameter match %q: a token name and a printable value", q.Name)
		}
	}
	return ""
}

// mirrors are the Services a rule's RequestMirror filters copy its requests
// to, with their shares; a mirror that does not resolve is left out (the
// route's ResolvedRefs condition says why), the rule still served.
func mirrors(in Inputs, routeNamespace string, rule gwv1.HTTPRouteRule) []model.Mirror {
	var out []model.Mirror
	for _, f := range rule.Filters {
		if f.Type != gwv1.HTTPRouteFilterRequestMirror || f.RequestMirror == nil {
			continue
		}
		b, p := resolveBackend(in, routeNamespace, gwv1.BackendRef{BackendObjectReference: f.RequestMirror.BackendRef})
		if p.reason != "" || b.Service == nil {
			continue
		}
		out = append(out, model.Mirror{Service: *b.Service, PerMillion: mirrorShare(f.RequestMirror)})
	}
	return out
}

// mirrorShare is a mirror's share of requests in millionths: its percent,
// or its fraction (denominator 100 unless given), else every request.
func mirrorShare(m *gwv1.HTTPRequestMirrorFilter) uint32 {
	const whole = 1_000_000
	switch {
	case m.Percent != nil:
		return uint32(min(max(int64(*m.Percent), 0), 100) * whole / 100)
	case m.Fraction != nil:
		d := int64(100)
		if m.Fraction.Denominator != nil {
			d = int64(*m.Fraction.Denominator)
		}
		if d <= 0 {
			return 0
		}
		return uint32(min(max(int64(m.Fraction.Numerator), 0), d) * whole / d)
	}
	return whole
}

// withMirrors adds mirrors to a rule's filters (nil filters and no mirrors:
// nil).
func withMirrors(f *model.Filters, m []model.Mirror) *model.Filters {
	if len(m) == 0 {
		return f
	}
	if f == nil {
		f = &model.Filters{}
	}
	f.Mirrors = m
	return f
}

// ObjectRefs are the objects a rule sends requests to: its backendRefs and
// its request mirrors' (the controller loads and watches them all).
func ObjectRefs(rule gwv1.HTTPRouteRule) []gwv1.BackendObjectReference {
	out := make([]gwv1.BackendObjectReference, 0, len(rule.BackendRefs))
	for _, ref := range rule.BackendRefs {
		out = append(out, ref.BackendObjectReference)
	}
	for _, f := range rule.Filters {
		if f.Type == gwv1.HTTPRouteFilterRequestMirror && f.RequestMirror != nil {
			out = append(out, f.RequestMirror.BackendRef)
		}
	}
	return out
}
