package gateway

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"webfarm.dev/operator/internal/model"
)

var epoch = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

func hosting(listeners ...gwv1.Listener) *gwv1.Gateway {
	if len(listeners) == 0 {
		listeners = []gwv1.Listener{httpListener("http", 80, nil, gwv1.NamespacesFromAll)}
	}
	return &gwv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: "hosting", Name: "public", Generation: 3},
		Spec:       gwv1.GatewaySpec{GatewayClassName: "webfarm", Listeners: listeners},
	}
}

func httpListener(name string, port int32, host *string, from gwv1.FromNamespaces) gwv1.Listener {
	l := gwv1.Listener{Name: gwv1.SectionName(name), Port: port, Protocol: gwv1.HTTPProtocolType,
		AllowedRoutes: &gwv1.AllowedRoutes{Namespaces: &gwv1.RouteNamespaces{From: &from}}}
	if host != nil {
		h := gwv1.Hostname(*host)
		l.Hostname = &h
	}
	return l
}

// route is an HTTPRoute of ns, made age minutes after the epoch, for
// hosts, with one rule to backend (kind/name, "" kind: a Service on 8080).
func route(ns, name string, age int, hosts []string, backend string) *gwv1.HTTPRoute {
	r := &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1,
		CreationTimestamp: metav1.NewTime(epoch.Add(time.Duration(age) * time.Minute))}}
	gwNS := gwv1.Namespace("hosting")
	r.Spec.ParentRefs = []gwv1.ParentReference{{Name: "public", Namespace: &gwNS}}
	for _, h := range hosts {
		r.Spec.Hostnames = append(r.Spec.Hostnames, gwv1.Hostname(h))
	}
	if backend != "" {
		r.Spec.Rules = []gwv1.HTTPRouteRule{{BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: backendRef(backend)}}}}
	}
	return r
}

// backendRef parses "[ns/]AppPool:name" or "[ns/]Service:name".
func backendRef(s string) gwv1.BackendRef {
	var ref gwv1.BackendRef
	if ns, rest, ok := strings.Cut(s, "/"); ok {
		n := gwv1.Namespace(ns)
		ref.Namespace, s = &n, rest
	}
	kind, name, _ := strings.Cut(s, ":")
	k := gwv1.Kind(kind)
	ref.Kind, ref.Name = &k, gwv1.ObjectName(name)
	if kind == KindAppPool {
		g := gwv1.Group(GroupWebFarm)
		ref.Group = &g
	} else {
		port := gwv1.PortNumber(8080)
		ref.Port = &port
	}
	return ref
}

func inputs(gw *gwv1.Gateway, routes ...*gwv1.HTTPRoute) Inputs {
	return Inputs{
		Gateway: gw,
		Farm:    Farm{Name: "public", HTTPPort: 80, HTTPSPort: 443, Hosts: []string{"www.provider.example"}, Addresses: []string{"10.96.0.10"}},
		Routes:  routes,
		NamespaceLabels: map[string]map[string]string{
			"hosting": {}, "tenant-a": {"hosting": "customer"}, "tenant-b": {"hosting": "customer"}, "other": {},
		},
		Backends: map[string]map[types.NamespacedName]Backend{
			KindAppPool: {{Namespace: "hosting", Name: "shared-1"}: {}, {Namespace: "tenant-a", Name: "own"}: {}},
			KindService: {
				{Namespace: "tenant-a", Name: "echo"}:     {Ports: []int32{8080}, ClusterIP: "10.96.1.1"},
				{Namespace: "hosting", Name: "echo"}:      {Ports: []int32{8080}, ClusterIP: "10.96.1.2"},
				{Namespace: "tenant-a", Name: "headless"}: {Ports: []int32{8080}},
				{Namespace: "tenant-a", Name: "pods"}:     {Ports: []int32{8080}, TargetPorts: map[int32]int32{8080: 3000}},
				{Namespace: "tenant-a", Name: "grpc"}:     {Ports: []int32{8080, 8081}, ClusterIP: "10.96.1.3", H2CPorts: map[int32]bool{8081: true}},
			},
		},
	}
}

// grant lets HTTPRoutes of from refer to kind objects in to.
func grant(from, to, group, kind string) *gwv1.ReferenceGrant {
	return &gwv1.ReferenceGrant{ObjectMeta: metav1.ObjectMeta{Namespace: to, Name: "from-" + from},
		Spec: gwv1.ReferenceGrantSpec{
			From: []gwv1.ReferenceGrantFrom{{Group: GroupGateway, Kind: KindHTTPRoute, Namespace: gwv1.Namespace(from)}},
			To:   []gwv1.ReferenceGrantTo{{Group: gwv1.Group(group), Kind: gwv1.Kind(kind)}},
		}}
}

// parentCondition is "Status/Reason" of a route's first parent status's condition.
func parentCondition(res Result, ns, name, typ string) string {
	parents := res.RouteParents[types.NamespacedName{Namespace: ns, Name: name}]
	if len(parents) == 0 {
		return "no parent status"
	}
	for _, c := range parents[0].Conditions {
		if c.Type == typ {
			return fmt.Sprintf("%s/%s", c.Status, c.Reason)
		}
	}
	return "no " + typ
}

// siteOf is the site of a host, or nil.
func siteOf(res Result, host string) *model.Site {
	for i, s := range res.Sites {
		if s.Hosts[0] == host {
			return &res.Sites[i]
		}
	}
	return nil
}

func TestAttachingRoutes(t *testing.T) {
	shop := func() *string { s := "*.shop.example"; return &s }
	cases := []struct {
		name  string
		in    Inputs
		check func(t *testing.T, res Result)
	}{
		{
			name: "a tenant's route to a shared pool of the Gateway's namespace attaches with a ReferenceGrant and serves its host",
			in: func() Inputs {
				in := inputs(hosting(), route("tenant-a", "site", 0, []string{"a.example"}, "hosting/AppPool:shared-1"))
				in.Grants = []*gwv1.ReferenceGrant{grant("tenant-a", "hosting", GroupWebFarm, KindAppPool)}
				return in
			}(),
			check: func(t *testing.T, res Result) {
				expect(t, parentCondition(res, "tenant-a", "site", "Accepted"), "True/Accepted")
				expect(t, parentCondition(res, "tenant-a", "site", "ResolvedRefs"), "True/ResolvedRefs")
				s := siteOf(res, "a.example")
				if s == nil || len(s.Routes) != 1 || s.Routes[0].Pool != "shared-1" || s.Routes[0].Match.Path != "/" {
					t.Fatalf("site of a.example: %+v", s)
				}
				expect(t, fmt.Sprint(res.Gateway.Listeners[0].AttachedRoutes), "1")
			},
		},
		{
			name: "a cross-namespace backend without a ReferenceGrant is RefNotPermitted and its rule answers 500",
			in:   inputs(hosting(), route("tenant-a", "site", 0, []string{"a.example"}, "hosting/AppPool:shared-1")),
			check: func(t *testing.T, res Result) {
				expect(t, parentCondition(res, "tenant-a", "site", "Accepted"), "True/Accepted")
				expect(t, parentCondition(res, "tenant-a", "site", "ResolvedRefs"), "False/RefNotPermitted")
				if s := siteOf(res, "a.example"); s == nil || !s.Routes[0].Refused {
					t.Fatalf("want a refused route, got %+v", s)
				}
			},
		},
		{
			name: "a route from a namespace the listener does not allow is refused with NotAllowedByListeners",
			in: inputs(hosting(httpListener("http", 80, nil, gwv1.NamespacesFromSame)),
				route("tenant-a", "site", 0, []string{"a.example"}, "Service:echo")),
			check: func(t *testing.T, res Result) {
				expect(t, parentCondition(res, "tenant-a", "site", "Accepted"), "False/NotAllowedByListeners")
				if len(res.Sites) != 0 {
					t.Fatalf("sites: %+v", res.Sites)
				}
			},
		},
		{
			name: "a selector that does not parse admits no namespace",
			in: func() Inputs {
				l := httpListener("http", 80, nil, gwv1.NamespacesFromSelector)
				l.AllowedRoutes.Namespaces.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: "hosting", Operator: "Near", Values: []string{"customer"}}}}
				return inputs(hosting(l), route("tenant-a", "site", 0, []string{"a.example"}, "Service:echo"))
			}(),
			check: func(t *testing.T, res Result) {
				expect(t, parentCondition(res, "tenant-a", "site", "Accepted"), "False/NotAllowedByListeners")
			},
		},
		{
			name: "a listener of Selector without a selector admits no namespace",
			in:   inputs(hosting(httpListener("http", 80, nil, gwv1.NamespacesFromSelector)), route("tenant-a", "site", 0, []string{"a.example"}, "Service:echo")),
			check: func(t *testing.T, res Result) {
				expect(t, parentCondition(res, "tenant-a", "site", "Accepted"), "False/NotAllowedByListeners")
			},
		},
		{
			name: "a selector admits the routes of the namespaces whose labels match, and only those",
			in: func() Inputs {
				l := httpListener("http", 80, nil, gwv1.NamespacesFromSelector)
				l.AllowedRoutes.Namespaces.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"hosting": "customer"}}
				return inputs(hosting(l), route("tenant-a", "site", 0, []string{"a.example"}, "Service:echo"),
					route("other", "site", 0, []string{"o.example"}, "Service:echo"))
			}(),
			check: func(t *testing.T, res Result) {
				expect(t, parentCondition(res, "tenant-a", "site", "Accepted"), "True/Accepted")
				expect(t, parentCondition(res, "other", "site", "Accepted"), "False/NotAllowedByListeners")
			},
		},
		{
			name: "a route naming a section the Gateway lacks is refused with NoMatchingParent",
			in: func() Inputs {
				r := route("tenant-a", "site", 0, []string{"a.example"}, "Service:echo")
				section := gwv1.SectionName("https")
				r.Spec.ParentRefs[0].SectionName = &section
				return inputs(hosting(), r)
			}(),
			check: func(t *testing.T, res Result) {
				expect(t, parentCondition(res, "tenant-a", "site", "Accepted"), "False/NoMatchingParent")
			},
		},
		{
			name: "a route whose host names miss the listener's is refused with NoMatchingListenerHostname",
			in: inputs(hosting(httpListener("http", 80, shop(), gwv1.NamespacesFromAll)),
				route("tenant-a", "site", 0, []string{"a.example"}, "Service:echo"),
				route("tenant-b", "site", 0, []string{"b.shop.example"}, "Service:echo")),
			check: func(t *testing.T, res Result) {
				expect(t, parentCondition(res, "tenant-a", "site", "Accepted"), "False/NoMatchingListenerHostname")
				expect(t, parentCondition(res, "tenant-b", "site", "Accepted"), "True/Accepted")
			},
		},
		{
			name: "a host claimed by two namespaces goes to the older route and the newer is told HostnameConflict",
			in: inputs(hosting(),
				route("tenant-b", "late", 5, []string{"a.example"}, "Service:echo"),
				route("tenant-a", "early", 1, []string{"a.example"}, "Service:echo")),
			check: func(t *testing.T, res Result) {
				expect(t, parentCondition(res, "tenant-a", "early", "Accepted"), "True/Accepted")
				expect(t, parentCondition(res, "tenant-b", "late", "Accepted"), "False/HostnameConflict")
				s := siteOf(res, "a.example")
				if s == nil || len(s.Routes) != 1 || s.Routes[0].Refused {
					t.Fatalf("site: %+v", s)
				}
			},
		},
		{
			name: "a route that loses one of two hosts stays accepted for the other and says which it lost",
			in: inputs(hosting(),
				route("tenant-a", "early", 1, []string{"a.example"}, "Service:echo"),
				route("tenant-b", "late", 5, []string{"a.example", "b.example"}, "Service:echo")),
			check: func(t *testing.T, res Result) {
				expect(t, parentCondition(res, "tenant-b", "late", "Accepted"), "True/Accepted")
				msg := res.RouteParents[types.NamespacedName{Namespace: "tenant-b", Name: "late"}][0].Conditions[0].Message
				if !strings.Contains(msg, "a.example") {
					t.Fatalf("message %q does not name the lost host", msg)
				}
				if siteOf(res, "b.example") == nil {
					t.Fatal("b.example is not served")
				}
			},
		},
		{
			name: "the farm's inline site keeps its host against any route",
			in:   inputs(hosting(), route("hosting", "takeover", 0, []string{"www.provider.example"}, "Service:echo")),
			check: func(t *testing.T, res Result) {
				expect(t, parentCondition(res, "hosting", "takeover", "Accepted"), "False/HostnameConflict")
				if len(res.Sites) != 0 {
					t.Fatalf("sites: %+v", res.Sites)
				}
			},
		},
		{
			name: "routes of one namespace for one host merge, exact paths first, then longer prefixes, then more headers",
			in: func() Inputs {
				prefix, exact := gwv1.PathMatchPathPrefix, gwv1.PathMatchExact
				a := route("tenant-a", "a", 0, []string{"a.example"}, "")
				a.Spec.Rules = []gwv1.HTTPRouteRule{
					{Matches: []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: &prefix, Value: ptr("/")}}},
						BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: backendRef("Service:echo")}}},
					{Matches: []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: &prefix, Value: ptr("/shop/")},
						Headers: []gwv1.HTTPHeaderMatch{{Name: "Version", Value: "2"}}}},
						BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: backendRef("AppPool:own")}}},
				}
				b := route("tenant-a", "b", 1, []string{"a.example"}, "")
				b.Spec.Rules = []gwv1.HTTPRouteRule{
					{Matches: []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: &exact, Value: ptr("/shop")}}},
						BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: backendRef("Service:echo")}}},
					{Matches: []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: &prefix, Value: ptr("/shop")}}},
						BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: backendRef("Service:echo")}}},
				}
				in := inputs(hosting(), a, b)
				in.Backends[KindAppPool][types.NamespacedName{Namespace: "hosting", Name: "own"}] = Backend{}
				return in
			}(),
			check: func(t *testing.T, res Result) {
				s := siteOf(res, "a.example")
				if s == nil {
					t.Fatal("a.example is not served")
				}
				var order []string
				for _, r := range s.Routes {
					order = append(order, fmt.Sprintf("%v %s %d", r.Match.Exact, r.Match.Path, len(r.Match.Headers)))
				}
				expect(t, strings.Join(order, ", "), "true /shop 0, false /shop 1, false /shop 0, false / 0")
				expect(t, s.Routes[1].Match.Headers[0].Name, "version")
			},
		},
		{
			name: "an AppPool of the route's own namespace that is not the Gateway's is not found",
			in:   inputs(hosting(), route("tenant-a", "site", 0, []string{"a.example"}, "AppPool:own")),
			check: func(t *testing.T, res Result) {
				expect(t, parentCondition(res, "tenant-a", "site", "ResolvedRefs"), "False/BackendNotFound")
			},
		},
		{
			name: "a backendRef of a kind the farm does not serve is InvalidKind",
			in:   inputs(hosting(), route("tenant-a", "site", 0, []string{"a.example"}, "ConfigMap:x")),
			check: func(t *testing.T, res Result) {
				expect(t, parentCondition(res, "tenant-a", "site", "ResolvedRefs"), "False/InvalidKind")
			},
		},
		{
			name: "a missing Service is BackendNotFound, a headless one is reached at its pods' target port, unless that port has a name",
			in: inputs(hosting(), route("tenant-a", "missing", 0, []string{"a.example"}, "Service:nothing"),
				route("tenant-a", "headless", 0, []string{"b.example"}, "Service:headless"),
				route("tenant-a", "pods", 0, []string{"c.example"}, "Service:pods")),
			check: func(t *testing.T, res Result) {
				expect(t, parentCondition(res, "tenant-a", "missing", "ResolvedRefs"), "False/BackendNotFound")
				expect(t, parentCondition(res, "tenant-a", "headless", "ResolvedRefs"), "False/UnsupportedValue")
				expect(t, parentCondition(res, "tenant-a", "pods", "ResolvedRefs"), "True/ResolvedRefs")
				s := siteOf(res, "c.example")
				if s == nil || len(s.Routes[0].Backends) != 1 || s.Routes[0].Backends[0].Service == nil {
					t.Fatalf("site of c.example: %+v", s)
				}
				want := model.ServiceBackend{Namespace: "tenant-a", Name: "pods", Port: 8080, TargetPort: 3000}
				if got := *s.Routes[0].Backends[0].Service; got != want || got.DNSName() != "pods.tenant-a.svc" {
					t.Fatalf("headless backend %+v (%s), want %+v", got, got.DNSName(), want)
				}
			},
		},
		{
			name: "a Service port of appProtocol kubernetes.io/h2c is reached in HTTP/2 over clear text, its other ports in HTTP/1.1",
			in: func() Inputs {
				h2c := route("tenant-a", "h2c", 0, []string{"a.example"}, "Service:grpc")
				port := gwv1.PortNumber(8081)
				h2c.Spec.Rules[0].BackendRefs[0].Port = &port
				return inputs(hosting(), h2c, route("tenant-a", "h1", 0, []string{"b.example"}, "Service:grpc"))
			}(),
			check: func(t *testing.T, res Result) {
				for host, want := range map[string]bool{"a.example": true, "b.example": false} {
					s := siteOf(res, host)
					if s == nil || len(s.Routes[0].Backends) != 1 || s.Routes[0].Backends[0].Service == nil {
						t.Fatalf("site of %s: %+v", host, s)
					}
					if got := s.Routes[0].Backends[0].Service; got.H2C != want {
						t.Errorf("%s: backend %+v, want H2C %v", host, got, want)
					}
				}
			},
		},
		{
			name: "a rule with a good and a bad backend keeps both weights, the bad one answering 500",
			in: func() Inputs {
				r := route("tenant-a", "site", 0, []string{"a.example"}, "")
				r.Spec.Rules = []gwv1.HTTPRouteRule{{BackendRefs: []gwv1.HTTPBackendRef{
					{BackendRef: backendRef("Service:echo")}, {BackendRef: backendRef("Service:nothing")}}}}
				return inputs(hosting(), r)
			}(),
			check: func(t *testing.T, res Result) {
				s := siteOf(res, "a.example")
				if s == nil || len(s.Routes[0].Backends) != 2 || !s.Routes[0].Backends[1].Invalid {
					t.Fatalf("site: %+v", s)
				}
			},
		},
		{
			name: "a filter the farm does not serve refuses the route with UnsupportedValue",
			in: func() Inputs {
				r := route("tenant-a", "site", 0, []string{"a.example"}, "Service:echo")
				r.Spec.Rules[0].Filters = []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterCORS}}
				return inputs(hosting(), r)
			}(),
			check: func(t *testing.T, res Result) {
				expect(t, parentCondition(res, "tenant-a", "site", "Accepted"), "False/UnsupportedValue")
			},
		},
		{
			name: "request mirrors copy a rule's requests to Services by percent, fraction or all; an AppPool mirror is refused; a missing Service is left out and told",
			in: func() Inputs {
				mirror := func(name string, percent *int32, fraction *gwv1.Fraction) gwv1.HTTPRouteFilter {
					return gwv1.HTTPRouteFilter{Type: gwv1.HTTPRouteFilterRequestMirror, RequestMirror: &gwv1.HTTPRequestMirrorFilter{
						BackendRef: backendRef("Service:" + name).BackendObjectReference, Percent: percent, Fraction: fraction}}
				}
				half, thousand := int32(50), int32(1000)
				copied := route("tenant-a", "copied", 0, []string{"a.example"}, "Service:echo")
				copied.Spec.Rules[0].Filters = []gwv1.HTTPRouteFilter{mirror("pods", nil, nil), mirror("grpc", &half, nil),
					mirror("echo", nil, &gwv1.Fraction{Numerator: 1, Denominator: &thousand})}
				missing := route("tenant-a", "missing", 0, []string{"b.example"}, "Service:echo")
				missing.Spec.Rules[0].Filters = []gwv1.HTTPRouteFilter{mirror("nothing", nil, nil)}
				pool := route("tenant-a", "pool", 0, []string{"c.example"}, "Service:echo")
				kind := gwv1.Kind(KindAppPool)
				group := gwv1.Group(GroupWebFarm)
				pool.Spec.Rules[0].Filters = []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterRequestMirror, RequestMirror: &gwv1.HTTPRequestMirrorFilter{
					BackendRef: gwv1.BackendObjectReference{Group: &group, Kind: &kind, Name: "own"}}}}
				return inputs(hosting(), copied, missing, pool)
			}(),
			check: func(t *testing.T, res Result) {
				expect(t, parentCondition(res, "tenant-a", "copied", "ResolvedRefs"), "True/ResolvedRefs")
				s := siteOf(res, "a.example")
				if s == nil || s.Routes[0].Filters == nil {
					t.Fatalf("site of a.example: %+v", s)
				}
				var got []string
				for _, m := range s.Routes[0].Filters.Mirrors {
					got = append(got, fmt.Sprintf("%s:%d %d", m.Service.Name, m.Service.Port, m.PerMillion))
				}
				if want := []string{"pods:8080 1000000", "grpc:8080 500000", "echo:8080 1000"}; !slices.Equal(got, want) {
					t.Errorf("mirrors %v, want %v", got, want)
				}
				expect(t, parentCondition(res, "tenant-a", "missing", "ResolvedRefs"), "False/BackendNotFound")
				if s := siteOf(res, "b.example"); s == nil || len(s.Routes[0].Backends) != 1 || (s.Routes[0].Filters != nil && len(s.Routes[0].Filters.Mirrors) > 0) {
					t.Errorf("site of b.example %+v: want it served without its missing mirror", s)
				}
				expect(t, parentCondition(res, "tenant-a", "pool", "Accepted"), "False/UnsupportedValue")
			},
		},
		{
			name: "a header filter that would set the frontend's own header (which pool to start) is refused",
			in: func() Inputs {
				r := route("tenant-a", "site", 0, []string{"a.example"}, "Service:echo")
				r.Spec.Rules[0].Filters = []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterRequestHeaderModifier,
					RequestHeaderModifier: &gwv1.HTTPHeaderFilter{Set: []gwv1.HTTPHeader{{Name: "X-Webfarm-Activate", Value: "other/pool"}}}}}
				return inputs(hosting(), r)
			}(),
			check: func(t *testing.T, res Result) {
				expect(t, parentCondition(res, "tenant-a", "site", "Accepted"), "False/UnsupportedValue")
			},
		},
		{
			name: "a rule with a redirect and no backend redirects, its headers and status as given",
			in: func() Inputs {
				r := route("tenant-a", "site", 0, []string{"a.example"}, "")
				code := 301
				r.Spec.Rules = []gwv1.HTTPRouteRule{{Filters: []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterRequestRedirect,
					RequestRedirect: &gwv1.HTTPRequestRedirectFilter{Scheme: ptr("https"), StatusCode: &code}}}}}
				return inputs(hosting(), r)
			}(),
			check: func(t *testing.T, res Result) {
				expect(t, parentCondition(res, "tenant-a", "site", "Accepted"), "True/Accepted")
				s := siteOf(res, "a.example")
				if s == nil || s.Routes[0].Filters == nil || s.Routes[0].Filters.Redirect == nil {
					t.Fatalf("site: %+v", s)
				}
				expect(t, fmt.Sprintf("%+v", *s.Routes[0].Filters.Redirect), "{Scheme:https Hostname: Port:0 Path:<nil> StatusCode:301}")
			},
		},
		{
			name: "a rule's timeouts bound its requests and each try, and 0s lifts the bound to the longest the frontend allows",
			in: func() Inputs {
				r := route("tenant-a", "site", 0, []string{"a.example"}, "Service:echo")
				request, backend := gwv1.Duration("0s"), gwv1.Duration("1m30s")
				r.Spec.Rules[0].Timeouts = &gwv1.HTTPRouteTimeouts{Request: &request, BackendRequest: &backend}
				return inputs(hosting(), r)
			}(),
			check: func(t *testing.T, res Result) {
				s := siteOf(res, "a.example")
				if s == nil {
					t.Fatal("a.example is not served")
				}
				expect(t, fmt.Sprint(s.Routes[0].Timeout, " ", s.Routes[0].BackendTimeout), "1h0m0s 1m30s")
			},
		},
		{
			name: "a route of the Gateway's namespace goes through the CachePolicy its ExtensionRef names to its pool",
			in: func() Inputs {
				r := route("hosting", "images", 0, []string{"img.example"}, "AppPool:shared-1")
				r.Spec.Rules[0].Filters = []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterExtensionRef,
					ExtensionRef: &gwv1.LocalObjectReference{Group: GroupWebFarm, Kind: KindCachePolicy, Name: "static"}}}
				in := inputs(hosting(), r)
				in.CachePolicies = map[string]bool{"static": true}
				return in
			}(),
			check: func(t *testing.T, res Result) {
				expect(t, parentCondition(res, "hosting", "images", "ResolvedRefs"), "True/ResolvedRefs")
				s := siteOf(res, "img.example")
				if s == nil {
					t.Fatal("img.example is not served")
				}
				expect(t, s.Routes[0].Pool+" via "+s.Routes[0].CachePolicy, "shared-1 via static")
			},
		},
		{
			name: "a CachePolicy that does not exist is ResolvedRefs BackendNotFound and its rule answers 500",
			in: func() Inputs {
				r := route("hosting", "images", 0, []string{"img.example"}, "AppPool:shared-1")
				r.Spec.Rules[0].Filters = []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterExtensionRef,
					ExtensionRef: &gwv1.LocalObjectReference{Group: GroupWebFarm, Kind: KindCachePolicy, Name: "static"}}}
				return inputs(hosting(), r)
			}(),
			check: func(t *testing.T, res Result) {
				expect(t, parentCondition(res, "hosting", "images", "ResolvedRefs"), "False/BackendNotFound")
				if s := siteOf(res, "img.example"); s == nil || !s.Routes[0].Refused {
					t.Fatalf("site: %+v", s)
				}
			},
		},
		{
			name: "a tenant's route cannot name a CachePolicy: cache tiers serve the Gateway's namespace",
			in: func() Inputs {
				r := route("tenant-a", "images", 0, []string{"img.example"}, "hosting/AppPool:shared-1")
				r.Spec.Rules[0].Filters = []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterExtensionRef,
					ExtensionRef: &gwv1.LocalObjectReference{Group: GroupWebFarm, Kind: KindCachePolicy, Name: "static"}}}
				return inputs(hosting(), r)
			}(),
			check: func(t *testing.T, res Result) {
				expect(t, parentCondition(res, "tenant-a", "images", "Accepted"), "False/UnsupportedValue")
			},
		},
		{
			name: "a header value with a line break is refused before it reaches the frontend",
			in: func() Inputs {
				r := route("tenant-a", "site", 0, []string{"a.example"}, "Service:echo")
				r.Spec.Rules[0].Matches = []gwv1.HTTPRouteMatch{{Headers: []gwv1.HTTPHeaderMatch{{Name: "x", Value: "a\r\nb"}}}}
				return inputs(hosting(), r)
			}(),
			check: func(t *testing.T, res Result) {
				expect(t, parentCondition(res, "tenant-a", "site", "Accepted"), "False/UnsupportedValue")
				if len(res.Sites) != 0 {
					t.Fatalf("sites: %+v", res.Sites)
				}
			},
		},
		{
			name: "a listener on another port than the farm's, or of another protocol, is not accepted, and the Gateway says some are not",
			in: func() Inputs {
				tcp := httpListener("tcp", 443, nil, gwv1.NamespacesFromAll)
				tcp.Protocol = gwv1.TCPProtocolType
				return inputs(hosting(httpListener("http", 80, nil, gwv1.NamespacesFromAll), httpListener("alt", 8081, nil, gwv1.NamespacesFromAll),
					tlsListener("https-alt", 8443, nil, "Secret:site-tls"), tcp))
			}(),
			check: func(t *testing.T, res Result) {
				var got []string
				for _, l := range res.Gateway.Listeners {
					got = append(got, fmt.Sprintf("%s %s/%s", l.Name, l.Conditions[0].Status, l.Conditions[0].Reason))
				}
				expect(t, strings.Join(got, ", "), "http True/Accepted, alt False/PortUnavailable, https-alt False/PortUnavailable, tcp False/UnsupportedProtocol")
				expect(t, gatewayCondition(res, "Accepted"), "True/ListenersNotValid")
				expect(t, fmt.Sprint(len(res.Gateway.Listeners[3].SupportedKinds)), "0")
			},
		},
		{
			name: "a farm that cannot serve leaves the Gateway not accepted with InvalidParameters and its routes pending",
			in: func() Inputs {
				in := inputs(hosting(), route("tenant-a", "site", 0, []string{"a.example"}, "Service:echo"))
				in.Farm.Problem = "WebFarm missing not found"
				return in
			}(),
			check: func(t *testing.T, res Result) {
				expect(t, gatewayCondition(res, "Accepted"), "False/InvalidParameters")
				expect(t, parentCondition(res, "tenant-a", "site", "Accepted"), "False/Pending")
			},
		},
		{
			name: "the Gateway is programmed once its farm's frontend has an address",
			in: func() Inputs {
				in := inputs(hosting())
				in.Farm.Addresses = nil
				return in
			}(),
			check: func(t *testing.T, res Result) {
				expect(t, gatewayCondition(res, "Programmed"), "False/AddressNotAssigned")
			},
		},
		{
			name: "a listener naming a route kind the farm does not serve says InvalidRouteKinds",
			in: func() Inputs {
				l := httpListener("http", 80, nil, gwv1.NamespacesFromAll)
				l.AllowedRoutes.Kinds = []gwv1.RouteGroupKind{{Kind: "TCPRoute"}}
				return inputs(hosting(l))
			}(),
			check: func(t *testing.T, res Result) {
				c := res.Gateway.Listeners[0].Conditions[1]
				expect(t, fmt.Sprintf("%s/%s", c.Status, c.Reason), "False/InvalidRouteKinds")
				expect(t, fmt.Sprint(len(res.Gateway.Listeners[0].SupportedKinds)), "0")
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.check(t, Attach(c.in)) })
	}
}

// tlsListener is an HTTPS listener admitting every namespace's routes, its
// certificate cert ("[ns/][group/]Kind:name"; a group has a dot).
func tlsListener(name string, port int32, host *string, cert string) gwv1.Listener {
	l := httpListener(name, port, host, gwv1.NamespacesFromAll)
	l.Protocol = gwv1.HTTPSProtocolType
	var ref gwv1.SecretObjectReference
	if ns, rest, ok := strings.Cut(cert, "/"); ok && !strings.Contains(ns, ".") {
		n := gwv1.Namespace(ns)
		ref.Namespace, cert = &n, rest
	}
	if group, rest, ok := strings.Cut(cert, "/"); ok {
		g := gwv1.Group(group)
		ref.Group, cert = &g, rest
	}
	kind, secret, _ := strings.Cut(cert, ":")
	k := gwv1.Kind(kind)
	ref.Kind, ref.Name = &k, gwv1.ObjectName(secret)
	l.TLS = &gwv1.ListenerTLSConfig{CertificateRefs: []gwv1.SecretObjectReference{ref}}
	return l
}

// listenerCondition is "Status/Reason" of a listener's condition.
func listenerCondition(res Result, listener, typ string) string {
	for _, l := range res.Gateway.Listeners {
		if string(l.Name) != listener {
			continue
		}
		for _, c := range l.Conditions {
			if c.Type == typ {
				return fmt.Sprintf("%s/%s", c.Status, c.Reason)
			}
		}
	}
	return "no " + typ + " on " + listener
}

func TestServingHTTPSListeners(t *testing.T) {
	named := func(h string) *string { return &h }
	withSection := func(r *gwv1.HTTPRoute, section string) *gwv1.HTTPRoute {
		s := gwv1.SectionName(section)
		r.Spec.ParentRefs[0].SectionName = &s
		return r
	}
	cases := []struct {
		name  string
		in    Inputs
		check func(t *testing.T, res Result)
	}{
		{
			name: "an HTTPS listener serves its routes' hosts with its Secret, and plain HTTP only where an HTTP listener has them too",
			in: inputs(hosting(httpListener("http", 80, nil, gwv1.NamespacesFromAll),
				tlsListener("https", 443, nil, "Secret:wildcard-tls"), tlsListener("https-b", 443, named("b.example"), "Secret:b-tls")),
				route("tenant-a", "both", 0, []string{"a.example"}, "Service:echo"),
				withSection(route("tenant-a", "secure", 1, []string{"b.example"}, "Service:echo"), "https-b")),
			check: func(t *testing.T, res Result) {
				expect(t, parentCondition(res, "tenant-a", "both", "Accepted"), "True/Accepted")
				expect(t, parentCondition(res, "tenant-a", "secure", "Accepted"), "True/Accepted")
				for _, l := range []string{"http", "https", "https-b"} {
					expect(t, listenerCondition(res, l, "Programmed"), "True/Programmed")
					expect(t, listenerCondition(res, l, "ResolvedRefs"), "True/ResolvedRefs")
				}
				both, secure := siteOf(res, "a.example"), siteOf(res, "b.example")
				if both == nil || both.TLS == nil || !both.TLS.ServePlainHTTP || both.TLS.HTTPSOnly || both.TLS.SecretName != "" {
					t.Fatalf("a.example, on the HTTP and the HTTPS listener: %+v", both)
				}
				if secure == nil || secure.TLS == nil || !secure.TLS.HTTPSOnly {
					t.Fatalf("b.example, on an HTTPS listener only: %+v", secure)
				}
				want := []model.TLSListener{{Name: "public/https", SecretName: "wildcard-tls"},
					{Name: "public/https-b", ServerName: "b.example", SecretName: "b-tls"}}
				if !reflect.DeepEqual(res.TLSListeners, want) {
					t.Fatalf("TLS listeners %+v, want %+v", res.TLSListeners, want)
				}
			},
		},
		{
			name: "a certificateRef that is not a core Secret leaves its listener unresolved with InvalidCertificateRef and unserved",
			in: inputs(hosting(tlsListener("kind", 443, named("k.example"), "WrongKind:site-tls"),
				tlsListener("group", 443, named("g.example"), "wrong.example/Secret:site-tls"))),
			check: func(t *testing.T, res Result) {
				for _, l := range []string{"kind", "group"} {
					expect(t, listenerCondition(res, l, "ResolvedRefs"), "False/InvalidCertificateRef")
					expect(t, listenerCondition(res, l, "Programmed"), "False/Invalid")
				}
				if len(res.TLSListeners) != 0 {
					t.Fatalf("TLS listeners: %+v", res.TLSListeners)
				}
			},
		},
		{
			name: "a Secret the frontends cannot load is InvalidCertificateRef, and stays mounted so that it serves once fixed",
			in: func() Inputs {
				in := inputs(hosting(tlsListener("https", 443, nil, "Secret:missing-tls")),
					route("tenant-a", "site", 0, []string{"a.example"}, "Service:echo"))
				in.UnloadedCertificates = map[string]bool{"missing-tls": true}
				return in
			}(),
			check: func(t *testing.T, res Result) {
				expect(t, listenerCondition(res, "https", "ResolvedRefs"), "False/InvalidCertificateRef")
				expect(t, listenerCondition(res, "https", "Programmed"), "False/Invalid")
				expect(t, parentCondition(res, "tenant-a", "site", "Accepted"), "True/Accepted")
				if len(res.TLSListeners) != 1 || res.TLSListeners[0].SecretName != "missing-tls" {
					t.Fatalf("TLS listeners: %+v", res.TLSListeners)
				}
			},
		},
		{
			name: "a Secret of another namespace is RefNotPermitted without a ReferenceGrant and refused with one: pods mount their own namespace's",
			in: func() Inputs {
				in := inputs(hosting(tlsListener("granted", 443, named("g.example"), "certs/Secret:site-tls"),
					tlsListener("ungranted", 443, named("u.example"), "other/Secret:site-tls")))
				in.Grants = []*gwv1.ReferenceGrant{{ObjectMeta: metav1.ObjectMeta{Namespace: "certs", Name: "gateways"},
					Spec: gwv1.ReferenceGrantSpec{
						From: []gwv1.ReferenceGrantFrom{{Group: GroupGateway, Kind: KindGateway, Namespace: "hosting"}},
						To:   []gwv1.ReferenceGrantTo{{Kind: "Secret"}},
					}}}
				return in
			}(),
			check: func(t *testing.T, res Result) {
				expect(t, listenerCondition(res, "ungranted", "ResolvedRefs"), "False/RefNotPermitted")
				expect(t, listenerCondition(res, "granted", "ResolvedRefs"), "False/InvalidCertificateRef")
				if len(res.TLSListeners) != 0 {
					t.Fatalf("TLS listeners: %+v", res.TLSListeners)
				}
			},
		},
		{
			name: "an HTTPS listener cannot take the default certificate or a host name from the farm's inline HTTPS sites",
			in: func() Inputs {
				in := inputs(hosting(tlsListener("any", 443, nil, "Secret:site-tls"),
					tlsListener("www", 443, named("www.provider.example"), "Secret:site-tls"),
					tlsListener("free", 443, named("free.example"), "Secret:site-tls")))
				in.Farm.TLSHosts, in.Farm.DefaultCertificate = []string{"www.provider.example"}, true
				return in
			}(),
			check: func(t *testing.T, res Result) {
				expect(t, listenerCondition(res, "any", "Conflicted"), "True/HostnameConflict")
				expect(t, listenerCondition(res, "www", "Conflicted"), "True/HostnameConflict")
				expect(t, listenerCondition(res, "free", "Conflicted"), "False/NoConflicts")
				if len(res.TLSListeners) != 1 || res.TLSListeners[0].ServerName != "free.example" {
					t.Fatalf("TLS listeners: %+v", res.TLSListeners)
				}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.check(t, Attach(c.in)) })
	}
}

func gatewayCondition(res Result, typ string) string {
	for _, c := range res.Gateway.Conditions {
		if c.Type == typ {
			return fmt.Sprintf("%s/%s", c.Status, c.Reason)
		}
	}
	return "no " + typ
}

func expect(t *testing.T, got, want string) {
	t.Helper()
	if got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// The same objects in any order give the same answer: every replica of the
// operator routes what the leader reports.
func TestAttachIsDeterministic(t *testing.T) {
	var routes []*gwv1.HTTPRoute
	for i := range 40 {
		routes = append(routes, route(fmt.Sprintf("tenant-%c", 'a'+i%3), fmt.Sprint("r", i), i%7,
			[]string{fmt.Sprintf("h%d.example", i%11)}, "Service:echo"))
	}
	first := Attach(inputs(hosting(), routes...))
	reversed := make([]*gwv1.HTTPRoute, len(routes))
	for i, r := range routes {
		reversed[len(routes)-1-i] = r
	}
	second := Attach(inputs(hosting(), reversed...))
	if !reflect.DeepEqual(first, second) {
		t.Fatalf("the answer differs with the routes' order:\n%+v\n%+v", first, second)
	}
}
