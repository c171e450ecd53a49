package envoy_test

import (
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
	"webfarm.dev/operator/internal/testutil/localpool"
	"webfarm.dev/operator/internal/vocabulary"
)

// tenantFiles are a shared pool's content as a hosting provider lays it
// out: a folder per tenant namespace with its sites, and the provider's
// own files at the root.
var tenantFiles = map[string]string{
	"index.html":                        "the provider's root\n",
	"provider-secret.txt":               "the provider's file\n",
	"tenant-a/shop/default.htm":         "tenant-a shop home\n",
	"tenant-a/shop/clip.mp4":            "tenant-a clip\n",
	"tenant-a/shop/errors/404.html":     "tenant-a has no such page\n",
	"tenant-a/index.html":               "tenant-a's folder\n",
	"tenant-b/shop/index.html":          "tenant-b shop home\n",
	"tenant-b/shop/secret.txt":          "tenant-b secret\n",
	"tenant-b/shop/errors/404.html":     "tenant-b has no such page\n",
	"tenant-b/index.html":               "tenant-b's folder\n",
	"tenant-b/secret.txt":               "tenant-b folder secret\n",
	"hosting/provider-folder-file.html": "the provider's folder\n",
}

// tenantRoute is a route of ns for host to the shared pool: by weight to
// the pool twice when weighted (a weighted cluster, not a pool's route),
// with a SiteContent when content is set.
func tenantRoute(ns, host, content string, weighted bool) *gwv1.HTTPRoute {
	group, kind, hosting := gwv1.Group(gateway.GroupWebFarm), gwv1.Kind(gateway.KindAppPool), gwv1.Namespace("hosting")
	ref := gwv1.HTTPBackendRef{BackendRef: gwv1.BackendRef{BackendObjectReference: gwv1.BackendObjectReference{
		Group: &group, Kind: &kind, Name: "shared", Namespace: &hosting}}}
	rule := gwv1.HTTPRouteRule{BackendRefs: []gwv1.HTTPBackendRef{ref}}
	if weighted {
		rule.BackendRefs = append(rule.BackendRefs, ref)
	}
	if content != "" {
		rule.Filters = []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterExtensionRef,
			ExtensionRef: &gwv1.LocalObjectReference{Group: gateway.GroupWebFarm, Kind: gateway.KindSiteContent, Name: gwv1.ObjectName(content)}}}
	}
	return &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: strings.Split(host, ".")[0],
		CreationTimestamp: metav1.NewTime(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))}, Spec: gwv1.HTTPRouteSpec{
		CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "public", Namespace: &hosting}}},
		Hostnames:       []gwv1.Hostname{gwv1.Hostname(host)},
		Rules:           []gwv1.HTTPRouteRule{rule},
	}}
}

// tenantsFrontend runs tenants' routes, translated by internal/gateway,
// in the real Envoy in front of the shared pool's real nginx.
func tenantsFrontend(t *testing.T) string {
	t.Helper()
	routes := []*gwv1.HTTPRoute{
		tenantRoute("tenant-a", "shop-a.example", "shop", false),
		tenantRoute("tenant-a", "weighted-a.example", "shop", true),
		tenantRoute("tenant-a", "plain-a.example", "", false),
		tenantRoute("tenant-b", "shop-b.example", "shop", false),
	}
	var grants []*gwv1.ReferenceGrant
	for _, ns := range []string{"tenant-a", "tenant-b"} {
		grants = append(grants, &gwv1.ReferenceGrant{ObjectMeta: metav1.ObjectMeta{Namespace: "hosting"}, Spec: gwv1.ReferenceGrantSpec{
			From: []gwv1.ReferenceGrantFrom{{Group: gwv1.GroupName, Kind: gateway.KindHTTPRoute, Namespace: gwv1.Namespace(ns)}},
			To:   []gwv1.ReferenceGrantTo{{Group: gateway.GroupWebFarm, Kind: gateway.KindAppPool}}}})
	}
	from := gwv1.NamespacesFromAll
	res := gateway.Attach(gateway.Inputs{
		Gateway: &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "hosting", Name: "public"}, Spec: gwv1.GatewaySpec{
			Listeners: []gwv1.Listener{{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType,
				AllowedRoutes: &gwv1.AllowedRoutes{Namespaces: &gwv1.RouteNamespaces{From: &from}}}}}},
		Farm:     gateway.Farm{Name: "hosting", HTTPPort: 80, Addresses: []string{"127.0.0.1"}},
		Routes:   routes,
		Grants:   grants,
		Backends: map[string]map[types.NamespacedName]gateway.Backend{gateway.KindAppPool: {{Namespace: "hosting", Name: "shared"}: {}}},
		SiteContents: map[types.NamespacedName]v1.SiteContentSpec{
			{Namespace: "tenant-a", Name: "shop"}: {Directory: "shop", DefaultDocuments: v1.DefaultDocuments{"default.htm"},
				ErrorPages: []v1.ErrorPage{{StatusCode: 404, Path: "/errors/404.html"}}},
			{Namespace: "tenant-b", Name: "shop"}: {Directory: "shop", ErrorPages: []v1.ErrorPage{{StatusCode: 404, Path: "/errors/404.html"}}},
		},
	})
	if len(res.Sites) != len(routes) {
		t.Fatalf("sites %+v; route statuses %+v", res.Sites, res.RouteParents)
	}
	platform := model.Platform{XDSHost: "127.0.0.1", XDSPort: 18000}
	pool, err := model.ResolvePool(&v1.AppPool{ObjectMeta: metav1.ObjectMeta{Name: "shared", Namespace: "hosting"},
		Spec: v1.AppPoolSpec{Content: &v1.Content{ConfigMap: v1.ConfigMapContent{Name: "shared"}}}}, platform)
	if err != nil {
		t.Fatal(err)
	}
	worker := localpool.StartWithContent(t, pool, tenantFiles)
	farm := model.Farm{Name: "hosting", Namespace: "hosting", Sites: res.Sites, Pools: []string{"shared"}, Platform: platform,
		Frontend: model.Frontend{Replicas: 1, ConnectionTimeout: 60e9, RequestTimeout: 30e9, KeepAlive: true}}
	fe := runFrontend(t, farm, map[string]model.Pool{"shared": pool},
		endpoints.Backends{vocabulary.PoolCluster("shared"): {{Address: "127.0.0.1", Port: uint32(worker.Port)}}})
	return strings.TrimPrefix(fe.URL, "http://")
}

// Tenants' routes on one shared pool serve their own folders, and nothing
// a client sends reaches another tenant's files or the provider's: not a
// path that climbs (plain, encoded, double-encoded, backslashed), not the
// frontend's site headers forged, on a pool's route or a weighted one.
func TestATenantServesItsOwnFolderAndNoOtherFiles(t *testing.T) {
	address := tenantsFrontend(t)
	served := []struct {
		host, path        string
		status            int
		contentType, body string
	}{
		{"shop-a.example", "/", 200, "text/html", "tenant-a shop home\n"},
		{"shop-a.example", "/clip.mp4", 200, "video/mp4", "tenant-a clip\n"},
		{"shop-a.example", "/no-such-page", 404, "text/html", "tenant-a has no such page\n"},
		{"weighted-a.example", "/", 200, "text/html", "tenant-a shop home\n"},
		{"plain-a.example", "/", 200, "text/html", "tenant-a's folder\n"},
		{"shop-b.example", "/", 200, "text/html", "tenant-b shop home\n"},
		{"shop-b.example", "/no-such-page", 404, "text/html", "tenant-b has no such page\n"},
	}
	for _, s := range served {
		status, ctype, body := rawRequest(t, address, s.host, s.path)
		if status != s.status || !strings.HasPrefix(ctype, s.contentType) || body != s.body {
			t.Errorf("%s %s: got %d %q %q, want %d %s %q", s.host, s.path, status, ctype, body, s.status, s.contentType, s.body)
		}
	}

	others := []string{"tenant-b secret", "tenant-b folder secret", "the provider's file", "the provider's root", "the provider's folder"}
	attempts := []struct {
		name, path string
		headers    []string
	}{
		{"a path that climbs to the other tenant", "/../../tenant-b/shop/secret.txt", nil},
		{"encoded dots and slashes", "/%2e%2e%2f%2e%2e%2ftenant-b%2fshop%2fsecret.txt", nil},
		{"double-encoded dots", "/%252e%252e/%252e%252e/tenant-b/secret.txt", nil},
		{"backslashes", `/..\..\provider-secret.txt`, nil},
		{"the other tenant's folder by name", "/tenant-b/secret.txt", nil},
		{"a forged site directory", "/secret.txt", []string{vocabulary.SiteDirectoryHeader + ": tenant-b/shop"}},
		{"a forged site directory twice", "/secret.txt", []string{vocabulary.SiteDirectoryHeader + ": tenant-b", vocabulary.SiteDirectoryHeader + ": tenant-b"}},
		{"a forged site directory at the root", "/provider-secret.txt", []string{vocabulary.SiteDirectoryHeader + ": hosting/.."}},
		{"a forged error page", "/no-such-page", []string{vocabulary.SiteErrorPagesHeader + ": 404=/../../tenant-b/secret.txt"}},
		{"a forged default document", "/", []string{vocabulary.SiteDocumentsHeader + ": ../tenant-b/secret.txt"}},
	}
	for _, host := range []string{"shop-a.example", "weighted-a.example", "plain-a.example"} {
		for _, a := range attempts {
			t.Run(host+": "+a.name, func(t *testing.T) {
				status, _, body := rawRequest(t, address, host, a.path, a.headers...)
				for _, other := range others {
					if strings.Contains(body, other) {
						t.Fatalf("got %d %q: a file that is not tenant-a's", status, body)
					}
				}
			})
		}
	}
}
