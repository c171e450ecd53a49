package envoy

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"webfarm.dev/operator/internal/endpoints"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/vocabulary"
)

func contoso() model.Farm {
	return model.Farm{
		Name: "contoso", Namespace: "web",
		Platform: model.Platform{XDSHost: "webfarm-operator-xds.webfarm-system.svc", XDSPort: 18000},
		Sites: []model.Site{
			{Name: "shop", Hosts: []string{"shop.contoso.example"}, Routes: []model.Route{{PathPrefix: "/", Pool: "www"}}},
			{Name: "www", Hosts: []string{"*.cdn.contoso.example", "contoso.example", "www.contoso.example"}, Routes: []model.Route{
				{PathPrefix: "/images.v2", Pool: "images", CachePolicy: "static-content"},
				{PathPrefix: "/", Pool: "www"},
			}},
		},
		Frontend: model.Frontend{Replicas: 2, ConnectionTimeout: 120 * time.Second, RequestTimeout: 30 * time.Second, WebSocketIdleTimeout: 300 * time.Second, KeepAlive: true,
			ClientLimits: model.ClientLimits{RequestHeadersTimeout: 10 * time.Second, RequestBodyTimeout: 120 * time.Second, MaxRequestHeadersKiB: 16},
			AccessLog:    model.AccessLog{Enabled: true, SamplePercent: 100}},
		Pools:         []string{"images", "www"},
		CachePolicies: []string{"static-content"},
	}
}

// contosoPools: www with the IIS defaults, images with a short queue and an
// odd concurrency that two frontend replicas cannot split evenly.
func contosoPools() map[string]model.Pool {
	return map[string]model.Pool{
		"www":    {Name: "www", MaxConcurrentRequests: 100, QueueLength: 1000},
		"images": {Name: "images", MaxConcurrentRequests: 5, QueueLength: 10},
	}
}

func contosoBackends() endpoints.Backends {
	return endpoints.Backends{
		vocabulary.PoolCluster("www"):             {{Address: "10.244.0.12", Port: 8080}, {Address: "10.244.0.11", Port: 8080}, {Address: "10.244.0.9", Port: 8080, State: endpoints.Draining}},
		vocabulary.PoolCluster("images"):          {{Address: "10.244.0.21", Port: 8080}},
		vocabulary.CacheCluster("static-content"): {{Address: "10.244.0.31", Port: 8080}, {Address: "10.244.0.32", Port: 8080}},
	}
}

func TestFarmRouting(t *testing.T) {
	noEndpoints := contoso()
	l4 := contoso()
	l4.RejectWithReset = true
	withAffinity := func(a model.Affinity) model.Farm {
		f := contoso()
		f.Affinity = a
		return f
	}
	tests := []struct {
		name     string
		golden   string
		farm     model.Farm
		backends endpoints.Backends
		stopped  string // a pool stopped by health monitoring
		timed    string // a pool with a queue timeout
		change   func(f *model.Farm, pools map[string]model.Pool, b endpoints.Backends)
	}{
		{"a farm routes each site's hosts and prefixes to its pools and cache tiers, each frontend enforcing its share of the queues", "routing.json", contoso(), contosoBackends(), "", "", nil},
		{"a pool without endpoints has a cluster with no endpoints", "routing-no-endpoints.json", noEndpoints, nil, "", "", nil},
		{"a stopped pool's routes are answered 503 by the frontend, the others still routed", "routing-stopped.json", contoso(), contosoBackends(), "images", "", nil},
		{"in L4 mode a stopped pool's routes go to a listener that aborts the response, and so do the frontend's refusals for a full queue", "routing-stopped-l4.json", l4, contosoBackends(), "images", "", nil},
		{"in L4 mode the routes of a pool without a ready worker that does not start on demand go to the aborting listener", "routing-no-worker-l4.json", l4, contosoBackends(), "", "",
			func(f *model.Farm, pools map[string]model.Pool, b endpoints.Backends) {
				b[vocabulary.PoolCluster("images")] = []endpoints.Endpoint{{Address: "10.244.0.21", Port: 8080, State: endpoints.Draining}}
			}},
		{"cookie affinity gives each pool and cache tier a cookie of its own and lets sticky clients reach draining workers", "routing-cookie.json",
			withAffinity(model.Affinity{Type: model.AffinityCookie, CookieName: "CONTOSO_AFFINITY", CookieTTL: time.Hour}), contosoBackends(), "", "", nil},
		{"client IP affinity hashes the source address onto a Maglev ring", "routing-client-ip.json",
			withAffinity(model.Affinity{Type: model.AffinityClientIP}), contosoBackends(), "", "", nil},
		{"class C affinity hashes the first three octets of the client's address", "routing-class-c.json",
			withAffinity(model.Affinity{Type: model.AffinityClassC}), contosoBackends(), "", "", nil},
		{"requests to a pool with a queue timeout carry their arrival time, even through its cache tier", "routing-queue-timeout.json", contoso(), contosoBackends(), "", "images", nil},
		{"a pool that starts on demand and has no ready worker is routed to the activator, bypassing its cache tier", "routing-activator.json", contoso(), contosoBackends(), "", "",
			func(f *model.Farm, pools map[string]model.Pool, b endpoints.Backends) {
				f.Platform.ActivatorPort, f.Platform.ActivationTimeout = 18081, time.Minute
				for name, p := range pools {
					p.OnDemandStart = true
					pools[name] = p
				}
				images := pools["images"]
				images.Idle = true
				pools["images"] = images
				b[vocabulary.PoolCluster("images")] = nil
			}},
		{"over mutual TLS the activator is reached with the farm's identity and verified as the operator's Service", "routing-activator-control-tls.json", contoso(), contosoBackends(), "", "",
			func(f *model.Farm, pools map[string]model.Pool, b endpoints.Backends) {
				f.Platform.ActivatorPort, f.Platform.ActivationTimeout, f.Platform.ControlTLS = 18081, time.Minute, true
				for name, p := range pools {
					p.OnDemandStart = true
					pools[name] = p
				}
				images := pools["images"]
				images.Idle = true
				pools["images"] = images
				b[vocabulary.PoolCluster("images")] = nil
			}},
		{"compression, keep-alive off and a site's bandwidth limit shape how the frontend delivers responses", "routing-delivery.json", contoso(), contosoBackends(), "", "",
			func(f *model.Farm, pools map[string]model.Pool, b endpoints.Backends) {
				f.Frontend.Compression, f.Frontend.KeepAlive = true, false
				f.Sites[1].MaxBandwidthBytesPerSecond = 64 * 1024
			}},
		{"with debug headers the worker's header and Envoy's Server header reach clients, the access log still reading the worker from metadata", "routing-debug-headers.json", contoso(), contosoBackends(), "", "",
			func(f *model.Farm, pools map[string]model.Pool, b endpoints.Backends) {
				f.Frontend.DebugHeaders = true
			}},
		{"a farm that limits each client address and each /24 network refuses their floods with 429 before anything else runs", "routing-client-limits.json", contoso(), contosoBackends(), "", "",
			func(f *model.Farm, pools map[string]model.Pool, b endpoints.Backends) {
				f.Frontend.ClientLimits.PerAddress = &model.RequestRate{PerSecond: 20, Burst: 40}
				f.Frontend.ClientLimits.PerClassC = &model.RequestRate{PerSecond: 200, Burst: 200}
			}},
		{"in L4 mode a request past a client's rate is redirected to the aborting listener, where the rate filters do not count it again", "routing-client-limits-l4.json", l4, contosoBackends(), "", "",
			func(f *model.Farm, pools map[string]model.Pool, b endpoints.Backends) {
				f.Frontend.ClientLimits.PerAddress = &model.RequestRate{PerSecond: 20, Burst: 40}
				f.Frontend.ClientLimits.PerClassC = &model.RequestRate{PerSecond: 200, Burst: 200}
			}},
		{"behind trusted proxy networks and the PROXY protocol, connections from the proxies have a chain that believes their X-Forwarded-For", "routing-trusted-networks.json", contoso(), contosoBackends(), "", "",
			func(f *model.Farm, pools map[string]model.Pool, b endpoints.Backends) {
				f.Frontend.ClientAddress = model.ClientAddress{ProxyProtocol: true,
					TrustedNetworks: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("2001:db8::/32")}}
			}},
		{"behind two trusted hops the client is the second X-Forwarded-For entry from the right", "routing-trusted-hops.json", contoso(), contosoBackends(), "", "",
			func(f *model.Farm, pools map[string]model.Pool, b endpoints.Backends) {
				f.Frontend.ClientAddress = model.ClientAddress{TrustedHops: 2}
			}},
		{"sites that share a pool name their directory, default documents and error pages to its workers, even through a cache tier, and every route drops a client's own", "routing-site-content.json", contoso(), contosoBackends(), "", "",
			func(f *model.Farm, pools map[string]model.Pool, b endpoints.Backends) {
				f.Sites[0].Routes[0].Content = &model.SiteContent{Directory: "sites/shop", DefaultDocuments: []string{"default.htm", "index.html"},
					ErrorPages: []model.ErrorPage{{StatusCode: 404, Path: "/errors/404.html"}, {StatusCode: 503, Path: "/errors/busy.html"}}}
				f.Sites[1].Routes[0].Content = &model.SiteContent{Directory: "images"}
			}},
		{"an access log sampled at 10 percent draws each request at random", "routing-access-log-sampled.json", contoso(), contosoBackends(), "", "",
			func(f *model.Farm, pools map[string]model.Pool, b endpoints.Backends) {
				f.Frontend.AccessLog.SamplePercent = 10
			}},
		{"a farm whose access log is off has neither the log nor the filter that keeps the client's path", "routing-access-log-off.json", contoso(), contosoBackends(), "", "",
			func(f *model.Farm, pools map[string]model.Pool, b endpoints.Backends) {
				f.Frontend.AccessLog.Enabled = false
			}},
		{"a pool whose app speaks gRPC is reached over HTTP/2, one stream per connection, without its cache tier or WebSocket route", "routing-grpc.json", contoso(), contosoBackends(), "", "",
			func(f *model.Farm, pools map[string]model.Pool, b endpoints.Backends) {
				images := pools["images"]
				images.App = &model.App{Image: "registry.example/thumbnails:1", Port: 9000, Protocol: model.AppGRPC}
				pools["images"] = images
			}},
		{"sites with TLS get an HTTPS listener with a chain per site chosen by SNI, a default chain, redirects or plain service, HSTS, Secure cookies and a site's connection bound on each of its chains", "routing-tls.json",
			withAffinity(model.Affinity{Type: model.AffinityCookie, CookieName: "CONTOSO_AFFINITY", CookieSameSite: "Strict"}), contosoBackends(), "", "",
			func(f *model.Farm, pools map[string]model.Pool, b endpoints.Backends) {
				f.Frontend.HTTPSPort, f.Frontend.TLSMinVersion, f.Frontend.DefaultTLSSite = 8443, "1.2", f.Sites[1].Name
				f.Frontend.ClientAddress = model.ClientAddress{ProxyProtocol: true, TrustedNetworks: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}
				f.Sites[0].TLS = &model.SiteTLS{SecretName: "first-tls", HSTSMaxAge: 365 * 24 * time.Hour, IncludeSubDomains: true}
				f.Sites[0].MaxConnections = 500
				f.Sites[1].TLS = &model.SiteTLS{SecretName: "second-tls", ServePlainHTTP: true}
			}},
		{"a Gateway's routes match exact paths, prefixes kept on the path, headers, query parameters and methods, go to a pool, Services by weight (HTTP/2 in clear text where the port says h2c) or a 500, copy requests to mirrors, redirect (on the listener's port unless told otherwise), rewrite, change headers and bound their time", "routing-gateway.json", contoso(), contosoBackends(), "", "",
			func(f *model.Farm, pools map[string]model.Pool, b endpoints.Backends) {
				echo := &model.ServiceBackend{Namespace: "tenant-a", Name: "echo", ClusterIP: "10.96.0.20", Port: 8080}
				canary := &model.ServiceBackend{Namespace: "tenant-a", Name: "echo-canary", ClusterIP: "10.96.0.21", Port: 8080}
				headless := &model.ServiceBackend{Namespace: "tenant-a", Name: "stateful", Port: 8080, TargetPort: 3000}
				h2c := &model.ServiceBackend{Namespace: "tenant-a", Name: "grpc", ClusterIP: "10.96.0.22", Port: 8081, H2C: true}
				f.Frontend.Port = 8081 // the Gateway's HTTP listener's
				f.Sites = append(f.Sites, model.Site{Name: "route:a.example", Hosts: []string{"a.example"}, Routes: []model.Route{
					{Match: &model.Match{Exact: true, Path: "/healthz"}, Backends: []model.Backend{{Service: echo, Weight: 1}}},
					{Match: &model.Match{Path: "/api", Headers: []model.NameValue{{Name: "version", Value: "2"}},
						QueryParams: []model.NameValue{{Name: "beta", Value: "yes"}}, Method: "POST"},
						Backends: []model.Backend{{Service: echo, Weight: 90}, {Service: canary, Weight: 10}},
						Timeout:  10 * time.Second, BackendTimeout: 2 * time.Second},
					{Match: &model.Match{Path: "/broken"}, Backends: []model.Backend{{Service: echo, Weight: 1}, {Invalid: true, Weight: 1}}},
					{Match: &model.Match{Path: "/stateful"}, Backends: []model.Backend{{Service: headless, Weight: 1}}},
					{Match: &model.Match{Path: "/h2c"}, Backends: []model.Backend{{Service: h2c, Weight: 1}}},
					{Match: &model.Match{Path: "/shadowed"}, Backends: []model.Backend{{Service: echo, Weight: 1}}, Filters: &model.Filters{
						Mirrors: []model.Mirror{{Service: *canary, PerMillion: 1_000_000}, {Service: model.ServiceBackend{
							Namespace: "tenant-b", Name: "shadow", ClusterIP: "10.96.0.23", Port: 8080}, PerMillion: 100_000}}}},
					{Match: &model.Match{Path: "/moved"}, Refused: true, Filters: &model.Filters{Redirect: &model.Redirect{
						Hostname: "b.example", StatusCode: 302}}},
					{Match: &model.Match{Path: "/gone"}, Refused: true},
					{Match: &model.Match{Path: "/old"}, Refused: true, Filters: &model.Filters{Redirect: &model.Redirect{
						Scheme: "https", Hostname: "new.example", StatusCode: 301, Path: &model.PathChange{Value: "/new"}}}},
					{Match: &model.Match{Path: "/store"}, Pool: "www", Filters: &model.Filters{
						RequestHeaders:  model.HeaderChanges{Set: []model.NameValue{{Name: "x-tenant", Value: "a 100%"}}, Remove: []string{"x-drop"}},
						ResponseHeaders: model.HeaderChanges{Add: []model.NameValue{{Name: "x-served-by", Value: "farm"}}},
						Rewrite:         &model.Rewrite{Hostname: "backend.example", Path: &model.PathChange{Value: "/"}}}},
					{Match: &model.Match{Path: "/"}, Pool: "www"},
				}})
			}},
		{"a Gateway's HTTPS listeners serve their Secrets by server name, their hosts over HTTPS, and plain HTTP where an HTTP listener has them too", "routing-gateway-https.json", contoso(), contosoBackends(), "", "",
			func(f *model.Farm, pools map[string]model.Pool, b endpoints.Backends) {
				f.GatewayListeners = []model.TLSListener{{Name: "public/https", SecretName: "wildcard-tls"},
					{Name: "public/tenant", ServerName: "*.tenant.example", SecretName: "tenant.example-tls"}}
				f.Sites = append(f.Sites,
					model.Site{Name: "route:a.tenant.example", Hosts: []string{"a.tenant.example"}, TLS: &model.SiteTLS{ServePlainHTTP: true},
						Routes: []model.Route{{Match: &model.Match{Path: "/"}, Pool: "www"}}},
					model.Site{Name: "route:b.tenant.example", Hosts: []string{"b.tenant.example"}, TLS: &model.SiteTLS{HTTPSOnly: true},
						Routes: []model.Route{{Match: &model.Match{Path: "/"}, Pool: "www"}}})
			}},
		{"workers on nodes of different clock rates get their pool's requests in proportion to the clocks, the cache tier's still equal shares", "routing-clock-weights.json", contoso(), contosoBackends(), "", "",
			func(f *model.Farm, pools map[string]model.Pool, b endpoints.Backends) {
				maps.Copy(b, onNodesOf550And900MHz(b))
			}},
		{"an idle pool that does not start on demand is answered 503 by the frontend", "routing-idle.json", contoso(), contosoBackends(), "", "",
			func(f *model.Farm, pools map[string]model.Pool, b endpoints.Backends) {
				images := pools["images"]
				images.Idle = true
				pools["images"] = images
				b[vocabulary.PoolCluster("images")] = nil
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pools := contosoPools()
			if tt.stopped != "" {
				p := pools[tt.stopped]
				p.Stopped = true
				pools[tt.stopped] = p
			}
			if tt.change != nil {
				tt.change(&tt.farm, pools, tt.backends)
			}
			if tt.timed != "" {
				p := pools[tt.timed]
				p.QueueTimeout = 5 * time.Second
				pools[tt.timed] = p
			}
			r, err := FarmRouting(tt.farm, pools, tt.backends)
			if err != nil {
				t.Fatal(err)
			}
			testutil.Golden(t, tt.golden, routingJSON(t, r))
			testutil.EnvoyCheck(t, string(staticBootstrap(t, tt.farm, r)), NodeIDArgs("frontend-0")...)
		})
	}
}

// onNodesOf550And900MHz puts www's workers on a 550 MHz node (10.244.0.11)
// and a 900 MHz node (the others), and the cache tier's on both, and weighs
// the pools' endpoints by their clocks.
func onNodesOf550And900MHz(b endpoints.Backends) endpoints.Backends {
	www, cache := vocabulary.PoolCluster("www"), vocabulary.CacheCluster("static-content")
	for _, c := range []string{www, cache} {
		for i := range b[c] {
			b[c][i].Node = "node-900mhz"
			if i == 1 {
				b[c][i].Node = "node-550mhz"
			}
		}
	}
	clocks := endpoints.Clocks{ByNode: map[string]float64{"node-550mhz": 550, "node-900mhz": 900}, Default: 2000}
	return b.WeightedByClock([]string{www, vocabulary.PoolCluster("images")}, clocks)
}

// Envoy honours endpoint weights with every load balancer the frontends use:
// round robin, Maglev (client IP and class C affinity) and the cookie's
// stateful sessions, and in L4 mode too.
func TestWeightedEndpointsValidateWithEveryAffinity(t *testing.T) {
	l4 := contoso()
	l4.RejectWithReset = true
	withAffinity := func(a model.Affinity) model.Farm {
		f := contoso()
		f.Affinity = a
		return f
	}
	for _, tt := range []struct {
		name string
		farm model.Farm
	}{
		{"cookie affinity accepts weighted workers", withAffinity(model.Affinity{Type: model.AffinityCookie, CookieName: "CONTOSO_AFFINITY", CookieTTL: time.Hour})},
		{"client IP affinity accepts weighted workers on its Maglev ring", withAffinity(model.Affinity{Type: model.AffinityClientIP})},
		{"class C affinity accepts weighted workers on its Maglev ring", withAffinity(model.Affinity{Type: model.AffinityClassC})},
		{"L4 mode accepts weighted workers", l4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, err := FarmRouting(tt.farm, contosoPools(), onNodesOf550And900MHz(contosoBackends()))
			if err != nil {
				t.Fatal(err)
			}
			var weights []uint32
			for _, la := range r.Endpoints {
				if la.ClusterName == vocabulary.PoolCluster("www") {
					for _, e := range la.Endpoints[0].LbEndpoints {
						weights = append(weights, e.GetLoadBalancingWeight().GetValue())
					}
				}
			}
			// Sorted by address: 10.244.0.11 (550 MHz), .12 and .9 (900 MHz).
			if want := []uint32{11, 18, 18}; !slices.Equal(weights, want) {
				t.Errorf("www's weights %v, want %v", weights, want)
			}
			testutil.EnvoyCheck(t, string(staticBootstrap(t, tt.farm, r)), NodeIDArgs("frontend-0")...)
		})
	}
}

func TestFarmRoutingVersion(t *testing.T) {
	base, err := FarmRouting(contoso(), contosoPools(), contosoBackends())
	if err != nil {
		t.Fatal(err)
	}
	shuffled := contosoBackends()
	www := shuffled[vocabulary.PoolCluster("www")]
	www[0], www[1] = www[1], www[0]
	moved := contosoBackends()
	moved[vocabulary.PoolCluster("www")][0].State = endpoints.Draining
	longer := contoso()
	longer.Frontend.RequestTimeout = time.Minute
	longerQueue := contosoPools()
	longerQueue["www"] = model.Pool{Name: "www", MaxConcurrentRequests: 100, QueueLength: 2000}

	for _, tt := range []struct {
		name     string
		farm     model.Farm
		pools    map[string]model.Pool
		backends endpoints.Backends
		same     bool
	}{
		{"the same farm and endpoints in another order keep the version", contoso(), contosoPools(), shuffled, true},
		{"an endpoint that starts draining changes the version", contoso(), contosoPools(), moved, false},
		{"a changed route timeout changes the version", longer, contosoPools(), contosoBackends(), false},
		{"a longer queue changes the version", contoso(), longerQueue, contosoBackends(), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, err := FarmRouting(tt.farm, tt.pools, tt.backends)
			if err != nil {
				t.Fatal(err)
			}
			if (r.Version == base.Version) != tt.same {
				t.Errorf("version %s vs %s: same = %v, want %v", r.Version, base.Version, r.Version == base.Version, tt.same)
			}
		})
	}
}

// routingJSON writes every resource as stable, indented JSON for the golden file.
func routingJSON(t *testing.T, r Routing) []byte {
	t.Helper()
	doc := map[string]any{"version": r.Version}
	add := func(key string, ms ...proto.Message) {
		var list []json.RawMessage
		for _, m := range ms {
			b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			list = append(list, b)
		}
		doc[key] = list
	}
	add("listeners", toMessages(r.Listeners)...)
	add("routes", toMessages(r.Routes)...)
	add("clusters", toMessages(r.Clusters)...)
	add("endpoints", toMessages(r.Endpoints)...)
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, raw, "", "  "); err != nil {
		t.Fatal(err)
	}
	out.WriteByte('\n')
	return out.Bytes()
}

func toMessages[T proto.Message](in []T) []proto.Message {
	out := make([]proto.Message, len(in))
	for i, m := range in {
		out[i] = m
	}
	return out
}

// staticBootstrap is StaticBootstrap as the JSON the real Envoy validates.
func staticBootstrap(t *testing.T, f model.Farm, r Routing) []byte {
	t.Helper()
	b, err := StaticBootstrap(f, r)
	if err != nil {
		t.Fatal(err)
	}
	out, err := marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	// Envoy checks that the SDS files exist: they go to a directory of the
	// test's, as the pod's ConfigMap holds them.
	files := SDSFiles(f)
	if len(files) == 0 {
		return out
	}
	// So do the certificate directories it watches.
	dir, certs, identity := t.TempDir(), t.TempDir(), t.TempDir()
	for name, doc := range files {
		doc = strings.ReplaceAll(doc, CertMountDir+"/", certs+"/")
		doc = strings.ReplaceAll(doc, IdentityDir, identity)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range f.Certificates() {
		if err := os.Mkdir(filepath.Join(certs, c.Name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	out = bytes.ReplaceAll(out, []byte(CertMountDir+"/"), []byte(certs+"/"))
	out = bytes.ReplaceAll(out, []byte(IdentityDir), []byte(identity))
	return bytes.ReplaceAll(out, []byte(ConfigDir+"/"), []byte(dir+"/"))
}
