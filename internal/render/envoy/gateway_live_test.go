package envoy_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/endpoints"
	"webfarm.dev/operator/internal/gateway"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/envoy"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/testutil/localenvoy"
	"webfarm.dev/operator/internal/vocabulary"
)

// noRedirects returns redirects to the caller.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// service is an HTTP backend on loopback that answers with its name and
// the path it was asked for: a Service a Gateway API route sends to.
func service(t *testing.T, name string) (ip string, port int32) {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s", name, r.URL.RequestURI())
		if v := r.Header.Get("X-Tenant"); v != "" || r.Header.Get("X-Drop") != "" {
			fmt.Fprintf(w, " tenant=%q drop=%q", v, r.Header.Get("X-Drop"))
		}
	}))
	t.Cleanup(s.Close)
	host, p, err := net.SplitHostPort(s.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(p)
	return host, int32(n)
}

// One HTTPRoute, translated by internal/gateway and served by the real
// Envoy: exact paths, prefixes kept on the path, header and method
// matches, weights, and 500 for a backend that does not resolve.
func TestAGatewayRouteIsServedAsGatewayAPISays(t *testing.T) {
	echoIP, echoPort := service(t, "echo")
	canaryIP, canaryPort := service(t, "canary")
	pathType := func(t gwv1.PathMatchType) *gwv1.PathMatchType { return &t }
	str := func(s string) *string { return &s }
	svc := func(name string, port int32, weight int32) gwv1.HTTPBackendRef {
		p := port
		return gwv1.HTTPBackendRef{BackendRef: gwv1.BackendRef{Weight: &weight,
			BackendObjectReference: gwv1.BackendObjectReference{Name: gwv1.ObjectName(name), Port: &p}}}
	}
	post := gwv1.HTTPMethodPost
	route := &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "site"}, Spec: gwv1.HTTPRouteSpec{
		CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "public"}}},
		Hostnames:       []gwv1.Hostname{"a.example"},
		Rules: []gwv1.HTTPRouteRule{
			{Matches: []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: pathType(gwv1.PathMatchExact), Value: str("/healthz")}}},
				BackendRefs: []gwv1.HTTPBackendRef{svc("echo", echoPort, 1)}},
			{Matches: []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: pathType(gwv1.PathMatchPathPrefix), Value: str("/api/")},
				Headers: []gwv1.HTTPHeaderMatch{{Name: "Version", Value: "2"}}}},
				BackendRefs: []gwv1.HTTPBackendRef{svc("canary", canaryPort, 1)}},
			{Matches: []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: pathType(gwv1.PathMatchPathPrefix), Value: str("/api")}}},
				BackendRefs: []gwv1.HTTPBackendRef{svc("echo", echoPort, 1)}},
			{Matches: []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: pathType(gwv1.PathMatchPathPrefix), Value: str("/orders")}, Method: &post}},
				BackendRefs: []gwv1.HTTPBackendRef{svc("canary", canaryPort, 1)}},
			{Matches: []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: pathType(gwv1.PathMatchPathPrefix), Value: str("/split")}}},
				BackendRefs: []gwv1.HTTPBackendRef{svc("echo", echoPort, 1), svc("canary", canaryPort, 1)}},
			{Matches: []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: pathType(gwv1.PathMatchPathPrefix), Value: str("/half-broken")}}},
				BackendRefs: []gwv1.HTTPBackendRef{svc("echo", echoPort, 1), svc("missing", 80, 1)}},
			{Matches: []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: pathType(gwv1.PathMatchPathPrefix), Value: str("/old")}}},
				Filters: []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterRequestRedirect, RequestRedirect: &gwv1.HTTPRequestRedirectFilter{
					Hostname: (*gwv1.PreciseHostname)(str("new.example")), StatusCode: func() *int { c := 301; return &c }(),
					Path: &gwv1.HTTPPathModifier{Type: gwv1.PrefixMatchHTTPPathModifier, ReplacePrefixMatch: str("/new")}}}}},
			{Matches: []gwv1.HTTPRouteMatch{{Path: &gwv1.HTTPPathMatch{Type: pathType(gwv1.PathMatchPathPrefix), Value: str("/store")}}},
				Filters: []gwv1.HTTPRouteFilter{
					{Type: gwv1.HTTPRouteFilterURLRewrite, URLRewrite: &gwv1.HTTPURLRewriteFilter{
						Path: &gwv1.HTTPPathModifier{Type: gwv1.PrefixMatchHTTPPathModifier, ReplacePrefixMatch: str("/")}}},
					{Type: gwv1.HTTPRouteFilterRequestHeaderModifier, RequestHeaderModifier: &gwv1.HTTPHeaderFilter{
						Set: []gwv1.HTTPHeader{{Name: "X-Tenant", Value: "a 100%"}}, Remove: []string{"X-Drop"}}},
					{Type: gwv1.HTTPRouteFilterResponseHeaderModifier, ResponseHeaderModifier: &gwv1.HTTPHeaderFilter{
						Add: []gwv1.HTTPHeader{{Name: "X-Served-By", Value: "farm"}}}},
				},
				BackendRefs: []gwv1.HTTPBackendRef{svc("echo", echoPort, 1)}},
			{BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: gwv1.BackendRef{BackendObjectReference: gwv1.BackendObjectReference{
				Group: (*gwv1.Group)(str(gateway.GroupWebFarm)), Kind: (*gwv1.Kind)(str(gateway.KindAppPool)), Name: "www"}}}}},
		},
	}}
	res := gateway.Attach(gateway.Inputs{
		Gateway: &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "public"}, Spec: gwv1.GatewaySpec{
			Listeners: []gwv1.Listener{{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType}}}},
		Farm:   gateway.Farm{Name: "contoso", HTTPPort: 80, Addresses: []string{"127.0.0.1"}},
		Routes: []*gwv1.HTTPRoute{route},
		Backends: map[string]map[types.NamespacedName]gateway.Backend{
			gateway.KindService: {
				{Namespace: "web", Name: "echo"}:   {ClusterIP: echoIP, Ports: []int32{echoPort}},
				{Namespace: "web", Name: "canary"}: {ClusterIP: canaryIP, Ports: []int32{canaryPort}},
			},
			gateway.KindAppPool: {{Namespace: "web", Name: "www"}: {}},
		},
	})
	if len(res.Sites) != 1 {
		t.Fatalf("sites %+v; route status %+v", res.Sites, res.RouteParents)
	}
	www, err := model.ResolvePool(&v1.AppPool{ObjectMeta: metav1.ObjectMeta{Name: "www", Namespace: "web"},
		Spec: v1.AppPoolSpec{Content: &v1.Content{ConfigMap: v1.ConfigMapContent{Name: "site"}}}}, model.Platform{})
	if err != nil {
		t.Fatal(err)
	}
	farm := model.Farm{Name: "contoso", Namespace: "web", Sites: res.Sites, Pools: []string{"www"}, Platform: model.Platform{XDSHost: "127.0.0.1", XDSPort: 18000},
		Frontend: model.Frontend{Replicas: 1, ConnectionTimeout: 60e9, RequestTimeout: 30e9, KeepAlive: true}}
	fe := runFrontend(t, farm, map[string]model.Pool{"www": www},
		endpoints.Backends{vocabulary.PoolCluster("www"): {{Address: "127.0.0.1", Port: uint32(worker(t, "www-1"))}}})

	send := func(method, path string, headers ...string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, fe.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = "a.example"
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if w := resp.Header.Get("X-Worker"); w != "" {
			return resp.StatusCode, "pool " + w
		}
		return resp.StatusCode, string(body)
	}
	cases := []struct {
		name, method, path string
		headers            []string
		want               string
	}{
		{"an exact path is served by its backend, the path as the client sent it", "GET", "/healthz", nil, "200 echo /healthz"},
		{"an exact path does not match a longer one, which falls to the pool", "GET", "/healthz/deep/page.html", nil, "404 pool www-1"},
		{"a prefix keeps the path on its way to the backend", "GET", "/api/v1/items?x=1", nil, "200 echo /api/v1/items?x=1"},
		{"a prefix matches whole segments only", "GET", "/apiary/page.html", nil, "404 pool www-1"},
		{"a header match wins over the same prefix without one", "GET", "/api/v1", []string{"Version", "2"}, "200 canary /api/v1"},
		{"a method match takes only that method", "POST", "/orders/1", nil, "200 canary /orders/1"},
		{"another method falls through to the next rule", "GET", "/page.html", nil, "200 pool www-1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, got := send(c.method, c.path, c.headers...)
			if g := fmt.Sprintf("%d %s", status, got); g != c.want {
				t.Fatalf("%s %s: %q, want %q", c.method, c.path, g, c.want)
			}
		})
	}
	t.Run("a redirect filter answers with the new host, the prefix replaced and its status", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, fe.URL+"/old/page?q=1", nil)
		req.Host = "a.example"
		resp, err := noRedirects.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := fmt.Sprintf("%d %s", resp.StatusCode, resp.Header.Get("Location")); got != "301 http://new.example/new/page?q=1" {
			t.Fatalf("redirect: %s", got)
		}
	})
	t.Run("a rewrite and header filters change the request on its way and the response on its way back", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, fe.URL+"/store/cart", nil)
		req.Host = "a.example"
		req.Header.Set("X-Drop", "secret")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if got, want := string(body), `echo /cart tenant="a 100%" drop=""`; got != want {
			t.Fatalf("the backend saw %q, want %q", got, want)
		}
		if got := resp.Header.Get("X-Served-By"); got != "farm" {
			t.Fatalf("X-Served-By %q", got)
		}
	})
	t.Run("two backends of equal weight share the requests", func(t *testing.T) {
		seen := map[string]int{}
		for range 60 {
			_, got := send("GET", "/split")
			seen[got]++
		}
		if seen["echo /split"] < 10 || seen["canary /split"] < 10 {
			t.Fatalf("60 requests went %v", seen)
		}
	})
	t.Run("the share of a backend that does not resolve is answered 500", func(t *testing.T) {
		codes := map[int]int{}
		for range 60 {
			status, _ := send("GET", "/half-broken")
			codes[status]++
		}
		if codes[200] < 10 || codes[500] < 10 || codes[200]+codes[500] != 60 {
			t.Fatalf("60 requests were answered %v", codes)
		}
	})
}

// A Gateway's HTTPS listeners, translated by internal/gateway and served by
// the real Envoy: each listener's certificate for its server name (the
// listener without one for any other), its routes' hosts over HTTPS, and
// plain HTTP only for the hosts an HTTP listener has too.
func TestGatewayHTTPSListenersServeTheirCertificates(t *testing.T) {
	echoIP, echoPort := service(t, "echo")
	ca := testutil.MustCA(t, "test CA", time.Hour)
	port := echoPort // a PortNumber (int32)
	section := gwv1.SectionName("https-b")
	https := func(name string, host gwv1.Hostname, secret string) gwv1.Listener {
		l := gwv1.Listener{Name: gwv1.SectionName(name), Port: 443, Protocol: gwv1.HTTPSProtocolType,
			TLS: &gwv1.ListenerTLSConfig{CertificateRefs: []gwv1.SecretObjectReference{{Name: gwv1.ObjectName(secret)}}}}
		if host != "" {
			l.Hostname = &host
		}
		return l
	}
	rule := []gwv1.HTTPRouteRule{{BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: gwv1.BackendRef{
		BackendObjectReference: gwv1.BackendObjectReference{Name: "echo", Port: &port}}}}}}
	both := &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "both"}, Spec: gwv1.HTTPRouteSpec{
		CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "public"}}},
		Hostnames:       []gwv1.Hostname{"a.example"}, Rules: rule}}
	secure := &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "secure"}, Spec: gwv1.HTTPRouteSpec{
		CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "public", SectionName: &section}}},
		Hostnames:       []gwv1.Hostname{"b.example"}, Rules: rule}}
	res := gateway.Attach(gateway.Inputs{
		Gateway: &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "public"}, Spec: gwv1.GatewaySpec{
			Listeners: []gwv1.Listener{{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType},
				https("https", "", "any-tls"), https("https-b", "b.example", "b-tls")}}},
		Farm:     gateway.Farm{Name: "contoso", HTTPPort: 80, HTTPSPort: 443, Addresses: []string{"127.0.0.1"}},
		Routes:   []*gwv1.HTTPRoute{both, secure},
		Backends: map[string]map[types.NamespacedName]gateway.Backend{gateway.KindService: {{Namespace: "web", Name: "echo"}: {ClusterIP: echoIP, Ports: []int32{echoPort}}}},
	})
	if len(res.Sites) != 2 || len(res.TLSListeners) != 2 {
		t.Fatalf("sites %+v, TLS listeners %+v; route status %+v", res.Sites, res.TLSListeners, res.RouteParents)
	}
	farm := model.Farm{Name: "contoso", Namespace: "web", Sites: res.Sites, GatewayListeners: res.TLSListeners,
		Platform: model.Platform{XDSHost: "127.0.0.1", XDSPort: 18000},
		Frontend: model.Frontend{Replicas: 1, ConnectionTimeout: 60e9, RequestTimeout: 30e9, KeepAlive: true, HTTPSPort: 443}}
	routing, err := envoy.FarmRouting(farm, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for secret, host := range map[string]string{"any-tls": "a.example", "b-tls": "b.example"} {
		c, k, _ := ca.MustIssue(t, host)
		writeSecretVolume(t, localenvoy.CertDir(dir, model.GatewayCertificateName(secret)), c, k)
	}
	fe, err := localenvoy.Start(testutil.Tool(t, "WEBFARM_ENVOY", "envoy"), dir, farm, routing)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fe.Stop)

	for _, c := range []struct{ name, serverName, certificate string }{
		{"a listener's server name gets its certificate", "b.example", "b.example"},
		{"another server name gets the certificate of the listener without one", "a.example", "a.example"},
		{"a client without SNI gets it too", "", "a.example"},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, err := handshake(fe, c.serverName, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := st.PeerCertificates[0].DNSNames; len(got) != 1 || got[0] != c.certificate {
				t.Fatalf("served a certificate for %v, want %s", got, c.certificate)
			}
		})
	}
	t.Run("the frontend reports each listener Secret it loaded, as the certificates collector reads it", func(t *testing.T) {
		certs := reportedCertificates(t, fe)
		for _, secret := range []string{"any-tls", "b-tls"} {
			if c := certs[model.GatewayCertificateName(secret)]; c.Loaded == 0 {
				t.Errorf("Secret %s: not reported loaded in %+v", secret, certs)
			}
		}
	})
	secureClient := httpsClient(fe, ca, true)
	for _, c := range []struct {
		name, url, host string
		want            int
	}{
		{"a host of the HTTP and the HTTPS listener is served over HTTPS", "https://a.example/x", "a.example", 200},
		{"a host of an HTTPS listener only is served over HTTPS", "https://b.example/x", "b.example", 200},
		{"a host of the HTTP and the HTTPS listener is served over plain HTTP", fe.URL + "/x", "a.example", 200},
		{"a host of an HTTPS listener only is not served over plain HTTP", fe.URL + "/x", "b.example", 404},
	} {
		t.Run(c.name, func(t *testing.T) {
			hc := noRedirects
			if strings.HasPrefix(c.url, "https:") {
				hc = secureClient
			}
			req, _ := http.NewRequest(http.MethodGet, c.url, nil)
			req.Host = c.host
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.want || (c.want == 200 && string(body) != "echo /x") {
				t.Fatalf("%d %q, want %d", resp.StatusCode, body, c.want)
			}
		})
	}
}
