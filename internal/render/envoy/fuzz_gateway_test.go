package envoy

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"webfarm.dev/operator/internal/gateway"
)

// FuzzGatewayRouting builds an HTTPRoute from fuzzed host, path, header,
// query parameter and method values (a tenant's, not trusted), translates
// it as the operator does and renders the farm: whatever internal/gateway
// accepts, FarmRouting renders and the real Envoy validates; whatever it
// refuses reaches no virtual host.
func FuzzGatewayRouting(f *testing.F) {
	f.Add("a.example", "/shop", true, "version", "2", "beta", "yes", "GET", uint8(1), uint8(0))
	f.Add("*.a.example", "/", false, "", "", "", "", "", uint8(0), uint8(3))
	f.Add("a.example", "/x//y", false, "x-a", "v\r\nInjected: 1", "q", "\x00", "PATCH", uint8(2), uint8(1))
	f.Add("a.example", `/"quoted"`, true, "bad name", "v", "q q", "v", "BREW", uint8(0), uint8(0))
	f.Add("A.EXAMPLE", "/%2e%2e/etc", false, ":authority", "x", "", "", "", uint8(5), uint8(2))
	f.Add("b.example", "/copy", false, "", "", "", "", "", uint8(132), uint8(1))
	f.Add("b.example", "/copy", true, "", "", "", "", "", uint8(255), uint8(2))
	f.Fuzz(func(t *testing.T, host, path string, exact bool, header, headerValue, query, queryValue, method string, weight, backends uint8) {
		// The same values in filters: a header set and removed, a rewrite,
		// (with an odd weight) a redirect to the host and path, and (with
		// weight%8 of 4 to 7) a request mirror.
		pathType := gwv1.PathMatchPathPrefix
		if exact {
			pathType = gwv1.PathMatchExact
		}
		m := gwv1.HTTPRouteMatch{Path: &gwv1.HTTPPathMatch{Type: &pathType, Value: &path}}
		if header != "" {
			m.Headers = []gwv1.HTTPHeaderMatch{{Name: gwv1.HTTPHeaderName(header), Value: headerValue}}
		}
		if query != "" {
			m.QueryParams = []gwv1.HTTPQueryParamMatch{{Name: gwv1.HTTPHeaderName(query), Value: queryValue}}
		}
		if method != "" {
			hm := gwv1.HTTPMethod(method)
			m.Method = &hm
		}
		var refs []gwv1.HTTPBackendRef
		for i := range backends % 4 {
			w, port := int32(weight)+int32(i), gwv1.PortNumber(8080)
			name := []gwv1.ObjectName{"echo", "missing", "echo", "canary"}[i]
			refs = append(refs, gwv1.HTTPBackendRef{BackendRef: gwv1.BackendRef{Weight: &w,
				BackendObjectReference: gwv1.BackendObjectReference{Name: name, Port: &port}}})
		}
		var filters []gwv1.HTTPRouteFilter
		if header != "" {
			filters = append(filters, gwv1.HTTPRouteFilter{Type: gwv1.HTTPRouteFilterRequestHeaderModifier, RequestHeaderModifier: &gwv1.HTTPHeaderFilter{
				Set: []gwv1.HTTPHeader{{Name: gwv1.HTTPHeaderName(header), Value: headerValue}}, Remove: []string{query}}})
		}
		if weight%2 == 1 {
			filters = append(filters, gwv1.HTTPRouteFilter{Type: gwv1.HTTPRouteFilterRequestRedirect, RequestRedirect: &gwv1.HTTPRequestRedirectFilter{
				Hostname: (*gwv1.PreciseHostname)(&host), Path: &gwv1.HTTPPathModifier{Type: gwv1.FullPathHTTPPathModifier, ReplaceFullPath: &path}}})
		} else if weight%4 == 2 {
			filters = append(filters, gwv1.HTTPRouteFilter{Type: gwv1.HTTPRouteFilterURLRewrite, URLRewrite: &gwv1.HTTPURLRewriteFilter{
				Hostname: (*gwv1.PreciseHostname)(&host), Path: &gwv1.HTTPPathModifier{Type: gwv1.PrefixMatchHTTPPathModifier, ReplacePrefixMatch: &queryValue}}})
		}
		if weight%8 >= 4 {
			// A mirror to a Service or a missing one, by a percent or a
			// fraction out of range as often as in it.
			port := gwv1.PortNumber(8080)
			mirror := &gwv1.HTTPRequestMirrorFilter{BackendRef: gwv1.BackendObjectReference{
				Name: []gwv1.ObjectName{"canary", "missing"}[weight%2], Port: &port}}
			if backends%2 == 0 {
				percent := int32(weight) - 100
				mirror.Percent = &percent
			} else {
				denominator := int32(backends) - 1
				mirror.Fraction = &gwv1.Fraction{Numerator: int32(weight), Denominator: &denominator}
			}
			filters = append(filters, gwv1.HTTPRouteFilter{Type: gwv1.HTTPRouteFilterRequestMirror, RequestMirror: mirror})
		}
		route := &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "r"}, Spec: gwv1.HTTPRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "public"}}},
			Hostnames:       []gwv1.Hostname{gwv1.Hostname(host)},
			Rules:           []gwv1.HTTPRouteRule{{Matches: []gwv1.HTTPRouteMatch{m}, BackendRefs: refs, Filters: filters}},
		}}
		res := gateway.Attach(gateway.Inputs{
			Gateway: &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "public"}, Spec: gwv1.GatewaySpec{
				Listeners: []gwv1.Listener{{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType}}}},
			Farm:   gateway.Farm{Name: "contoso", HTTPPort: 80},
			Routes: []*gwv1.HTTPRoute{route},
			Backends: map[string]map[types.NamespacedName]gateway.Backend{gateway.KindService: {
				{Namespace: "web", Name: "echo"}:   {ClusterIP: "10.96.0.20", Ports: []int32{8080}},
				{Namespace: "web", Name: "canary"}: {ClusterIP: "10.96.0.21", Ports: []int32{8080}},
			}},
		})
		accepted := false
		for _, p := range res.RouteParents[types.NamespacedName{Namespace: "web", Name: "r"}] {
			accepted = accepted || conditionTrue(p.Conditions, "Accepted")
		}
		if !accepted && len(res.Sites) > 0 {
			t.Fatalf("a refused route has sites: %+v", res.Sites)
		}
		farm := contoso()
		farm.Sites = append(farm.Sites, res.Sites...)
		renderAndCheck(t, farm, contosoPools(), contosoBackends(), accepted)
	})
}

func conditionTrue(conds []metav1.Condition, typ string) bool {
	for _, c := range conds {
		if c.Type == typ {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}
