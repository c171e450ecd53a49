package envoy

import (
	"crypto/sha256"
	"encoding/json"
	"net"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/endpoints"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/vocabulary"
)

// FuzzFarmRouting builds a WebFarm and its AppPools from fuzzed fields,
// resolves them as the controllers do and renders the farm's routing. For
// every input the model accepts and FarmRouting renders (it refuses what
// fails ValidateAll), the filters and typed_config types of the output are
// ones the renderer emits for the golden files, and its only program is the
// renderer's own (checkOnlyOwnCode); for every input the API
// server would also admit (apiAdmitsFarm mirrors the CRD schema),
// FarmRouting must succeed and the static bootstrap must pass the real
// `envoy --mode validate`.
func FuzzFarmRouting(f *testing.F) {
	// farm name, namespace, site name, two hosts, two routes (path prefix,
	// pool; "" second pool: one route), the first route's cache policy,
	// affinity (0 None, 1 ClientIP, 2 ClassC, 3 Cookie, 4+ the raw string
	// below), cookie name or affinity type, cookie TTL, connection and
	// request timeouts, frontend replicas, L4 rejection, the pools' max
	// concurrent requests, queue length and timeout, pool state (0 running,
	// 1 stopped, 2 idle and starting on demand, 3 idle), an endpoint's
	// address and port, compression, keep-alive, the site's bandwidth limit.
	f.Add("contoso", "web", "www", "contoso.example", "*.cdn.contoso.example", "/", "www", "/images.v2", "images", "static-content",
		uint8(0), "", "", "", "", int32(2), false, int32(100), int32(1000), "", uint8(0), "10.244.0.12", uint16(8080), true, false, int64(65536))
	f.Add("contoso", "web", "shop", "shop.contoso.example", "", "/", "shop", "", "", "",
		uint8(3), "CONTOSO_AFFINITY", "1h", "120s", "30s", int32(1), true, int32(5), int32(10), "5s", uint8(1), "10.244.0.21", uint16(8080), false, true, int64(0))
	// "/api/": the schema admits a trailing slash, which Envoy's segment
	// match refused until the model trimmed it (a regression seed).
	f.Add("f", "ns", "s", "a.example", "b.example", "/api/", "p", "/static", "q", "c",
		uint8(1), "", "", "1s", "1h", int32(100), false, int32(100000), int32(65535), "1h", uint8(2), "fd00::1", uint16(80), false, true, int64(0))
	f.Add("f", "ns", "s", "a.example", "", "", "p", "", "", "",
		uint8(2), "", "", "", "", int32(3), true, int32(1), int32(10), "100ms", uint8(3), "", uint16(0), false, true, int64(0))
	f.Add("f", "ns", "s", "a.example", "", "/..x/.y/~z_", "p", "/", "q", "",
		uint8(3), "", "8760h", "", "", int32(0), false, int32(0), int32(0), "", uint8(0), "192.168.0.1", uint16(65535), false, true, int64(0))
	// A pool named in invalid UTF-8 reached the cookie's name, which protobuf
	// refuses to marshal (a regression seed).
	f.Add("f", "ns", "s", "a.example", "", "/", "\xff", "", "", "",
		uint8(3), "c", "", "", "", int32(1), false, int32(0), int32(0), "", uint8(0), "10.0.0.1", uint16(80), false, true, int64(0))
	// One field hostile at a time: a refused field would hide the others.
	hostile := []string{
		"a\nb", "\xff", "a\xffb", "a;b", "a{b", "a}b", `a"b`, "a'b", "a$b", "a#b", "a\x00b", "a b", `a\b`,
		"include /etc/passwd;", "envoy.filters.http.lua", "lua_", `"@type"`,
		`{"@type": "type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua"}`,
		"type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua", strings.Repeat("a", 10000), "",
	}
	for _, h := range hostile {
		f.Add(h, h, h, "a.example", "", "/", "p", "", "", "", uint8(0), "", "", "", "", int32(0), false, int32(0), int32(0), "", uint8(0), "10.0.0.1", uint16(80), false, true, int64(0))
		f.Add("f", "ns", "s", h, h, h, "p", "/"+h, "q", "", uint8(0), "", "", "", "", int32(0), false, int32(0), int32(0), "", uint8(0), "10.0.0.1", uint16(80), false, true, int64(0))
		f.Add("f", "ns", "s", "a.example", "", "/", h, "/x", h, h, uint8(0), "", "", "", "", int32(0), false, int32(0), int32(0), "", uint8(2), "10.0.0.1", uint16(80), false, true, int64(0))
		f.Add("f", "ns", "s", "a.example", "", "/", "p", "", "", "", uint8(3), h, h, "", "", int32(0), false, int32(0), int32(0), "", uint8(0), h, uint16(80), false, true, int64(0))
		f.Add("f", "ns", "s", "a.example", "", "/", "p", "", "", "", uint8(4), h, "", h, h, int32(0), false, int32(0), int32(0), h, uint8(0), "10.0.0.1", uint16(80), false, true, int64(0))
	}
	f.Add("f", "ns", "s", "a.example", "", "/", "p", "", "", "", uint8(3), "c", "2562047h", "2562047h", "1ns", int32(2147483647), true,
		int32(2147483647), int32(2147483647), "2562047h", uint8(0), "255.255.255.255", uint16(65535), true, true, int64(9223372036854775807))
	f.Add("f", "ns", "s", "a.example", "", "/", "p", "", "", "", uint8(3), "c", "0s", "0s", "0s", int32(-2147483648), true,
		int32(-2147483648), int32(-2147483648), "0s", uint8(1), "0.0.0.0", uint16(0), false, false, int64(-9223372036854775808))

	f.Fuzz(func(t *testing.T, name, namespace, site, host1, host2, prefix1, pool1, prefix2, pool2, cachePolicy string,
		affinity uint8, cookieName, cookieTTL, connTimeout, reqTimeout string, replicas int32, l4 bool,
		maxConcurrent, queueLength int32, queueTimeout string, poolState uint8, address string, port uint16,
		compression, keepAlive bool, bandwidth int64) {
		wf := &v1.WebFarm{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
		s := v1.Site{Name: site, Hosts: []v1.Hostname{v1.Hostname(host1)}, MaxBandwidthBytesPerSecond: bandwidth,
			Routes: []v1.Route{{PathPrefix: v1.PathPrefix(prefix1), AppPool: v1.ObjectName(pool1), CachePolicy: v1.ObjectName(cachePolicy)}}}
		if host2 != "" {
			s.Hosts = append(s.Hosts, v1.Hostname(host2))
		}
		if pool2 != "" {
			s.Routes = append(s.Routes, v1.Route{PathPrefix: v1.PathPrefix(prefix2), AppPool: v1.ObjectName(pool2)})
		}
		wf.Spec.Sites = []v1.Site{s}
		wf.Spec.SessionAffinity.Type = []v1.AffinityType{v1.AffinityNone, v1.AffinityClientIP, v1.AffinityClassC, v1.AffinityCookie}[min(affinity, 3)]
		switch {
		case affinity >= 4:
			wf.Spec.SessionAffinity.Type = v1.AffinityType(cookieName)
		case affinity == 3:
			wf.Spec.SessionAffinity.Cookie = &v1.AffinityCookieSpec{Name: cookieName, TTL: v1.Duration(cookieTTL)}
		}
		wf.Spec.Frontend.ConnectionTimeout = v1.Duration(connTimeout)
		wf.Spec.Frontend.RequestTimeout = v1.Duration(reqTimeout)
		wf.Spec.Frontend.Replicas = replicas
		wf.Spec.Frontend.Compression, wf.Spec.Frontend.KeepAlive = &compression, &keepAlive
		if l4 {
			wf.Spec.UnavailableResponse = v1.UnavailableL4
		}
		platform := model.Platform{XDSHost: "webfarm-operator-xds.webfarm-system.svc", XDSPort: 18000, ActivatorPort: 18081, ActivationTimeout: time.Minute}
		farm, err := model.ResolveFarm(wf, platform)
		if err != nil {
			return
		}

		pools := map[string]model.Pool{}
		var appPools []*v1.AppPool
		backends := endpoints.Backends{}
		someEndpoints := func() []endpoints.Endpoint {
			// Endpoint addresses come from EndpointSlices: always IPs.
			if net.ParseIP(address) == nil {
				return nil
			}
			return []endpoints.Endpoint{{Address: address, Port: uint32(port)}}
		}
		for _, n := range farm.Pools {
			ap := &v1.AppPool{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: namespace}, Spec: v1.AppPoolSpec{
				Content:               &v1.Content{ConfigMap: v1.ConfigMapContent{Name: "content"}},
				MaxConcurrentRequests: maxConcurrent,
				Queue:                 v1.Queue{Length: queueLength, Timeout: v1.Duration(queueTimeout)},
				Idle:                  v1.Idle{OnDemandStart: new(poolState != 3)},
			}}
			switch poolState % 4 {
			case 1:
				ap.Status.Phase = v1.PoolStopped
			case 2, 3:
				ap.Status.IdleSince = &metav1.Time{Time: time.Unix(1.7e9, 0)}
			}
			appPools = append(appPools, ap)
			p, err := model.ResolvePool(ap, platform)
			if err != nil {
				continue // the routing controller leaves out a pool it cannot resolve
			}
			pools[n] = p
			if !p.Idle && !p.Stopped {
				backends[vocabulary.PoolCluster(n)] = someEndpoints()
			}
		}
		for _, c := range farm.CachePolicies {
			backends[vocabulary.CacheCluster(c)] = someEndpoints()
		}

		admitted := apiAdmitsFarm(wf) && poolsAdmitted(appPools)
		renderAndCheck(t, farm, pools, backends, admitted)
	})
}

// renderAndCheck renders a fuzzed farm's routing and checks what both fuzz
// targets hold of every output: FarmRouting renders every farm the API
// server admits; the output has only extensions the golden files have
// (every feature of the renderer has one) and no code but the renderer's
// own; Envoy accepts the static bootstrap of an admitted farm. False when
// FarmRouting refused the farm.
func renderAndCheck(t *testing.T, farm model.Farm, pools map[string]model.Pool, backends endpoints.Backends, admitted bool) (Routing, bool) {
	t.Helper()
	r, err := FarmRouting(farm, pools, backends)
	if err != nil {
		if admitted {
			t.Fatalf("FarmRouting refused a farm the API server admits: %v", err)
		}
		return Routing{}, false
	}
	routing := routingJSON(t, r)
	bootstrap := staticBootstrap(t, farm, r)
	testutil.EnvoyOnlyEmitted(t, "*.json", routing, bootstrap)
	checkOnlyOwnCode(t, routing, bootstrap)
	if admitted {
		envoyCheckOnce(t, bootstrap)
	}
	return r, true
}

// renderWebFarm resolves a fuzzed farm whose sites all route to pool
// "web", resolves that pool and renders the farm with one endpoint of it,
// checking the output as renderAndCheck does. The model may refuse only a
// farm the API server would not admit (what names the fuzzed part, for the
// message). False when the model or FarmRouting refused the farm.
func renderWebFarm(t *testing.T, wf *v1.WebFarm, platform model.Platform, admitted bool, what string) (model.Farm, Routing, bool) {
	t.Helper()
	farm, err := model.ResolveFarm(wf, platform)
	if err != nil {
		if admitted {
			t.Fatalf("the model refused %s the API server admits: %v", what, err)
		}
		return model.Farm{}, Routing{}, false
	}
	pool, err := model.ResolvePool(&v1.AppPool{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "web"},
		Spec: v1.AppPoolSpec{Content: &v1.Content{ConfigMap: v1.ConfigMapContent{Name: "content"}}}}, platform)
	if err != nil {
		t.Fatal(err)
	}
	r, rendered := renderAndCheck(t, farm, map[string]model.Pool{"web": pool}, endpoints.Backends{vocabulary.PoolCluster("web"): {{Address: "10.244.0.12", Port: 8080}}}, admitted)
	return farm, r, rendered
}

// checkOnlyOwnCode fails unless every program in the docs (a Wasm or Lua
// filter's) is the renderer's own: each Wasm configuration is resetWasm
// exactly, and there is no Lua.
func checkOnlyOwnCode(t *testing.T, docs ...[]byte) {
	t.Helper()
	own, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(resetWasm())
	if err != nil {
		t.Fatal(err)
	}
	var want any
	if err := json.Unmarshal(own, &want); err != nil {
		t.Fatal(err)
	}
	for _, doc := range docs {
		var v any
		if err := json.Unmarshal(doc, &v); err != nil {
			t.Fatal(err)
		}
		testutil.EachJSONObject(v, func(o map[string]any) {
			typ, _ := o["@type"].(string)
			switch {
			case strings.HasSuffix(typ, ".wasm.v3.Wasm") && !reflect.DeepEqual(o, want):
				t.Fatalf("the output has a Wasm configuration other than the renderer's own: %v\n%s", o, excerpt(doc))
			case strings.Contains(typ, ".lua."):
				t.Fatalf("the output has a Lua filter: %v\n%s", o, excerpt(doc))
			}
		})
	}
}

// envoyChecked holds the hashes of bootstraps Envoy already accepted: Envoy
// takes tens of milliseconds to validate one.
var envoyChecked sync.Map

func envoyCheckOnce(t *testing.T, bootstrap []byte) {
	t.Helper()
	sum := sha256.Sum256(bootstrap)
	if _, done := envoyChecked.Load(sum); done {
		return
	}
	testutil.EnvoyCheck(t, string(bootstrap), NodeIDArgs("frontend-0")...)
	envoyChecked.Store(sum, true)
}

func excerpt(doc []byte) string {
	if len(doc) > 4000 {
		return string(doc[:4000]) + "\n..."
	}
	return string(doc)
}

// The CRD schema's rules for the fields the target fuzzes (api/v1alpha1's
// markers), and the API server's rules for object names.
var (
	hostname   = regexp.MustCompile(`^(\*\.)?[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$`)
	pathPrefix = regexp.MustCompile(`^/(([A-Za-z0-9_~-][A-Za-z0-9._~-]*|\.[A-Za-z0-9_~-][A-Za-z0-9._~-]*|\.\.[A-Za-z0-9._~-]+)(/([A-Za-z0-9_~-][A-Za-z0-9._~-]*|\.[A-Za-z0-9_~-][A-Za-z0-9._~-]*|\.\.[A-Za-z0-9._~-]+))*/?)?$`)
	cookieName = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)
)

func objectName(s string, maxLen int) bool { return testutil.SchemaName(s, maxLen) }

func durationIn(d v1.Duration, lo, hi time.Duration) bool {
	return testutil.SchemaDuration(string(d), lo, hi)
}

func apiAdmitsFarm(wf *v1.WebFarm) bool {
	s := wf.Spec
	if !objectName(wf.Name, 50) || !objectName(wf.Namespace, 63) {
		return false
	}
	hosts := map[v1.Hostname]bool{}
	for _, site := range s.Sites {
		if !objectName(site.Name, 63) || site.MaxBandwidthBytesPerSecond != 0 && site.MaxBandwidthBytesPerSecond < 1024 {
			return false
		}
		for _, h := range site.Hosts {
			if len(h) > 253 || !hostname.MatchString(string(h)) || hosts[h] {
				return false
			}
			hosts[h] = true
		}
		prefixes := map[v1.PathPrefix]bool{}
		for _, r := range site.Routes {
			p := r.PathPrefix
			if p == "" {
				p = v1.DefaultPathPrefix
			}
			if len(p) > 256 || !pathPrefix.MatchString(string(p)) || prefixes[p] ||
				!objectName(string(r.AppPool), 63) || r.CachePolicy != "" && !objectName(string(r.CachePolicy), 63) {
				return false
			}
			prefixes[p] = true
		}
	}
	a := s.SessionAffinity
	switch a.Type {
	case "", v1.AffinityNone, v1.AffinityClientIP, v1.AffinityClassC:
		if a.Cookie != nil {
			return false
		}
	case v1.AffinityCookie:
		if c := a.Cookie; c != nil && (c.Name != "" && (len(c.Name) > 64 || !cookieName.MatchString(c.Name)) ||
			!durationIn(c.TTL, 0, 8760*time.Hour)) {
			return false
		}
	default:
		return false
	}
	fe := s.Frontend
	return fe.Replicas >= 0 && fe.Replicas <= 100 &&
		durationIn(fe.ConnectionTimeout, time.Second, time.Hour) && durationIn(fe.RequestTimeout, time.Second, time.Hour)
}

func poolsAdmitted(aps []*v1.AppPool) bool {
	for _, ap := range aps {
		s := ap.Spec
		if !objectName(ap.Name, 50) || s.MaxConcurrentRequests < 0 || s.MaxConcurrentRequests > 100000 ||
			s.Queue.Length != 0 && (s.Queue.Length < 10 || s.Queue.Length > 65535) ||
			!durationIn(s.Queue.Timeout, 100*time.Millisecond, time.Hour) {
			return false
		}
	}
	return true
}
