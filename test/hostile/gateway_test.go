package hostile_test

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"webfarm.dev/operator/internal/endpoints"
	"webfarm.dev/operator/internal/gateway"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/envoy"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/testutil/localenvoy"
	"webfarm.dev/operator/internal/vocabulary"
)

// A tenant's HTTPRoute, written to take what is not its own or to break
// the farm's frontend for every tenant: Gateway API's schema refuses it,
// or the operator does (the route's Accepted condition says why) and no
// virtual host of it is rendered, or it is served as harmless text. Either
// way the farm's routing is accepted by the real Envoy, with the
// provider's site intact.
func TestHostileTenantRoutes(t *testing.T) {
	route := func(spec string) string {
		return `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: tenant}
spec:
  parentRefs: [{name: public, namespace: hosting}]
` + spec
	}
	rule := func(r string) string { return route("  hostnames: [shop.tenant.example]\n  rules:\n  - " + r + "\n") }
	toPool := `backendRefs: [{group: webfarm.dev, kind: AppPool, name: shared, namespace: hosting}]`
	cases := []struct {
		name     string
		manifest string
		// refused: fragments of the API server's refusal (nil: admitted).
		refused []string
		// accepted is the route's Accepted condition as "Status/Reason".
		accepted string
		// absent must appear in no rendered config; present must.
		absent, present []string
	}{
		{name: "a host name with an upper-case letter and a space is refused by the schema",
			manifest: route("  hostnames: [\"Shop.Tenant .example\"]\n  rules: [{" + toPool + "}]\n"), refused: []string{"spec.hostnames[0]", "should match"}},
		{name: "a path that climbs out with /../ is refused by the schema",
			manifest: rule(`{matches: [{path: {type: PathPrefix, value: "/a/../admin"}}], ` + toPool + `}`), refused: []string{"must not contain '/../'"}},
		{name: "a header match value with a line break and Envoy JSON is refused by the operator",
			manifest: rule(`{matches: [{headers: [{name: x-a, value: ` + q("v\r\n\"}],\"cluster\":\"x") + `}]}], ` + toPool + `}`),
			accepted: "False/UnsupportedValue", absent: []string{`"cluster":"x`}},
		{name: "a header filter that sets the header naming the pool to start is refused by the operator",
			manifest: rule(`{filters: [{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: X-Webfarm-Activate, value: other/pool}]}}], ` + toPool + `}`),
			accepted: "False/UnsupportedValue", absent: []string{"other/pool"}},
		{name: "a header value with Envoy's command operators is served as literal text",
			manifest: rule(`{filters: [{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: x-tenant, value: "%DOWNSTREAM_REMOTE_ADDRESS% %ENVIRONMENT(HOME)%"}]}}], ` + toPool + `}`),
			accepted: "True/Accepted", present: []string{"%%DOWNSTREAM_REMOTE_ADDRESS%% %%ENVIRONMENT(HOME)%%"}},
		{name: "a route for the provider's own host is told HostnameConflict and serves nothing",
			manifest: route("  hostnames: [www.provider.example]\n  rules: [{" + toPool + "}]\n"), accepted: "False/HostnameConflict"},
		{name: "a redirect to a wildcard host is refused by the schema",
			manifest: rule(`{filters: [{type: RequestRedirect, requestRedirect: {hostname: "*.evil.example"}}]}`), refused: []string{"hostname", "should match"}},
		{name: "a pool of another tenant's namespace is answered 500: a route's pools are its Gateway's namespace's",
			manifest: rule(`{backendRefs: [{group: webfarm.dev, kind: AppPool, name: shop, namespace: tenant-b}]}`),
			accepted: "True/Accepted", absent: []string{"tenant-b", "shop-pool"}},
		{name: "a tenant's route through the provider's cache tier is refused: cache tiers serve the provider's routes",
			manifest: rule(`{filters: [{type: ExtensionRef, extensionRef: {group: webfarm.dev, kind: CachePolicy, name: static}}], ` + toPool + `}`),
			accepted: "False/UnsupportedValue", absent: []string{"static-cache"}},
		{name: "a backend in another namespace without a grant is answered 500, never reached",
			manifest: rule(`{backendRefs: [{name: kube-dns, namespace: kube-system, port: 53}]}`),
			accepted: "True/Accepted", absent: []string{"service/kube-system/kube-dns/53"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t)
			if !admitted(t, ns, tc.manifest, "route", tc.refused) {
				return
			}
			var hr gwv1.HTTPRoute // as stored, with the schema's defaults
			if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "tenant"}, &hr); err != nil {
				t.Fatal(err)
			}
			res := gateway.Attach(gateway.Inputs{
				Gateway: &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "hosting", Name: "public"}, Spec: gwv1.GatewaySpec{
					Listeners: []gwv1.Listener{{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType,
						AllowedRoutes: &gwv1.AllowedRoutes{Namespaces: &gwv1.RouteNamespaces{From: ptrTo(gwv1.NamespacesFromAll)}}}}}},
				Farm:   gateway.Farm{Name: "hosting", HTTPPort: 80, Hosts: []string{"www.provider.example"}, Addresses: []string{"10.96.0.10"}},
				Routes: []*gwv1.HTTPRoute{&hr},
				Grants: []*gwv1.ReferenceGrant{{ObjectMeta: metav1.ObjectMeta{Namespace: "hosting"}, Spec: gwv1.ReferenceGrantSpec{
					From: []gwv1.ReferenceGrantFrom{{Group: gwv1.GroupName, Kind: "HTTPRoute", Namespace: gwv1.Namespace(ns)}},
					To:   []gwv1.ReferenceGrantTo{{Group: "webfarm.dev", Kind: "AppPool"}}}}},
				Backends: map[string]map[types.NamespacedName]gateway.Backend{
					gateway.KindAppPool: {{Namespace: "hosting", Name: "shared"}: {}},
					gateway.KindService: {{Namespace: "kube-system", Name: "kube-dns"}: {ClusterIP: "10.96.0.53", Ports: []int32{53}}},
				},
			})
			parents := res.RouteParents[types.NamespacedName{Namespace: ns, Name: "tenant"}]
			if len(parents) != 1 {
				t.Fatalf("parent statuses: %+v", parents)
			}
			var got string
			for _, c := range parents[0].Conditions {
				if c.Type == "Accepted" {
					got = string(c.Status) + "/" + c.Reason
					t.Logf("Accepted: %s: %s", got, c.Message)
				}
			}
			if got != tc.accepted {
				t.Errorf("Accepted %s, want %s", got, tc.accepted)
			}
			if tc.accepted != "True/Accepted" && len(res.Sites) != 0 {
				t.Errorf("a refused route has sites: %+v", res.Sites)
			}
			doc := renderFarmWith(t, res.Sites)
			for _, s := range tc.absent {
				if strings.Contains(doc, s) {
					t.Errorf("the rendered config holds %q", s)
				}
			}
			for _, s := range append(tc.present, `"www.provider.example"`) {
				if !strings.Contains(doc, s) {
					t.Errorf("the rendered config lacks %q", s)
				}
			}
		})
	}
}

// renderFarmWith renders the provider's farm with a Gateway's sites and
// has the real Envoy check it; it returns the bootstrap as JSON.
func renderFarmWith(t *testing.T, sites []model.Site) string {
	t.Helper()
	f := model.Farm{Name: "hosting", Namespace: "hosting", Pools: []string{"shared"},
		Platform: model.Platform{XDSHost: "webfarm-operator-xds.webfarm-system.svc", XDSPort: 18000},
		Frontend: model.Frontend{Replicas: 1, ConnectionTimeout: 120e9, RequestTimeout: 30e9, KeepAlive: true},
		Sites: append([]model.Site{{Name: "provider", Hosts: []string{"www.provider.example"},
			Routes: []model.Route{{PathPrefix: "/", Pool: "shared"}}}}, sites...)}
	pools := map[string]model.Pool{"shared": {Name: "shared", Namespace: "hosting", MaxConcurrentRequests: 100, QueueLength: 1000}}
	routing, err := envoy.FarmRouting(f, pools, endpoints.Backends{vocabulary.PoolCluster("shared"): {{Address: "10.244.0.2", Port: 8080}}})
	if err != nil {
		t.Fatalf("FarmRouting refused the farm: %v", err)
	}
	doc := bootstrapJSON(t, f, routing)
	testutil.EnvoyCheck(t, localenvoy.LocalPaths(t.TempDir(), string(doc)), envoy.NodeIDArgs("frontend-0")...)
	return string(doc)
}

func ptrTo[T any](v T) *T { return &v }
