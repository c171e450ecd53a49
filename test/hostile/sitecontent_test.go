package hostile_test

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/gateway"
	"webfarm.dev/operator/internal/vocabulary"
)

// A tenant's SiteContent, written to serve another tenant's or the
// provider's files, or to break the frontend's headers: the API server
// refuses it with the reason, or the route naming it sends the pool a
// directory inside the tenant's own folder, and the real Envoy accepts the
// farm's routing with the provider's site intact.
func TestHostileSiteContents(t *testing.T) {
	content := func(spec string) string {
		return "apiVersion: webfarm.dev/v1alpha1\nkind: SiteContent\nmetadata: {name: shop}\nspec: " + spec + "\n"
	}
	cases := []struct {
		name     string
		manifest string
		// refused: fragments of the API server's refusal (nil: admitted).
		refused []string
		// directory is what the route sends, after the tenant's folder.
		directory string
	}{
		{name: "a directory that climbs to another tenant's folder is refused",
			manifest: content(`{directory: ../tenant-b/shop}`), refused: []string{"spec.directory", "may not name '.' or '..'"}},
		{name: "an absolute directory is refused",
			manifest: content(`{directory: /srv/www}`), refused: []string{"spec.directory", "no leading '/'"}},
		{name: "percent-encoded dots and slashes are refused",
			manifest: content(`{directory: "%2e%2e%2ftenant-b"}`), refused: []string{"spec.directory", "no percent-encoding"}},
		{name: "a backslash is refused",
			manifest: content(`{directory: ` + q(`shop\..\..`) + `}`), refused: []string{"spec.directory", "no backslash"}},
		{name: "a line break that would add a header is refused",
			manifest: content(`{directory: ` + q("shop\r\nX-Webfarm-Site-Directory: tenant-b") + `}`), refused: []string{"spec.directory", "should match"}},
		{name: "Envoy's command operators in a directory are refused",
			manifest: content(`{directory: "%START_TIME%"}`), refused: []string{"spec.directory", "no percent-encoding"}},
		{name: "an error page that climbs out is refused",
			manifest: content(`{errorPages: [{statusCode: 404, path: /../../tenant-b/secret.txt}]}`), refused: []string{"spec.errorPages[0].path", "should match"}},
		{name: "an error page for a status the worker never answers is refused",
			manifest: content(`{errorPages: [{statusCode: 200, path: /index.html}]}`), refused: []string{"spec.errorPages[0].statusCode", "Unsupported value"}},
		{name: "a default document that names another folder is refused",
			manifest: content(`{defaultDocuments: [../../tenant-b/index.html]}`), refused: []string{"spec.defaultDocuments[0]", "should match"}},
		{name: "a name with dots inside is served inside the tenant's folder",
			manifest: content(`{directory: a..b/...x}`), directory: "a..b/...x"},
		{name: "no directory serves the tenant's folder itself",
			manifest: content(`{defaultDocuments: [index.html]}`), directory: ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t)
			if !admitted(t, ns, tc.manifest, "SiteContent", tc.refused) {
				return
			}
			var sc v1.SiteContent // as stored
			if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "shop"}, &sc); err != nil {
				t.Fatal(err)
			}
			sites := tenantSites(t, ns, sc.Spec)
			want := strings.TrimSuffix(ns+"/"+tc.directory, "/")
			if len(sites) != 1 || sites[0].Routes[0].Content == nil || sites[0].Routes[0].Content.Directory != want {
				t.Fatalf("sites %+v, want the directory %q", sites, want)
			}
			doc := renderFarmWith(t, sites)
			if !strings.Contains(doc, vocabulary.SiteDirectoryHeader) || !strings.Contains(doc, `"`+want+`"`) {
				t.Errorf("the rendered config does not send the directory %q", want)
			}
		})
	}
}

// tenantSites translates a route of ns to the provider's shared pool that
// names its SiteContent "shop" (spec), as the operator does.
func tenantSites(t *testing.T, ns string, spec v1.SiteContentSpec) []gateway.Site {
	t.Helper()
	group, kind, hosting := gwv1.Group(gateway.GroupWebFarm), gwv1.Kind(gateway.KindAppPool), gwv1.Namespace("hosting")
	route := &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant"}, Spec: gwv1.HTTPRouteSpec{
		CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "public", Namespace: &hosting}}},
		Hostnames:       []gwv1.Hostname{"shop.tenant.example"},
		Rules: []gwv1.HTTPRouteRule{{
			Filters: []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterExtensionRef,
				ExtensionRef: &gwv1.LocalObjectReference{Group: gateway.GroupWebFarm, Kind: gateway.KindSiteContent, Name: "shop"}}},
			BackendRefs: []gwv1.HTTPBackendRef{{BackendRef: gwv1.BackendRef{BackendObjectReference: gwv1.BackendObjectReference{
				Group: &group, Kind: &kind, Name: "shared", Namespace: &hosting}}}},
		}},
	}}
	res := gateway.Attach(gateway.Inputs{
		Gateway: &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "hosting", Name: "public"}, Spec: gwv1.GatewaySpec{
			Listeners: []gwv1.Listener{{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType,
				AllowedRoutes: &gwv1.AllowedRoutes{Namespaces: &gwv1.RouteNamespaces{From: ptrTo(gwv1.NamespacesFromAll)}}}}}},
		Farm:   gateway.Farm{Name: "hosting", HTTPPort: 80, Hosts: []string{"www.provider.example"}, Addresses: []string{"10.96.0.10"}},
		Routes: []*gwv1.HTTPRoute{route},
		Grants: []*gwv1.ReferenceGrant{{ObjectMeta: metav1.ObjectMeta{Namespace: "hosting"}, Spec: gwv1.ReferenceGrantSpec{
			From: []gwv1.ReferenceGrantFrom{{Group: gwv1.GroupName, Kind: "HTTPRoute", Namespace: gwv1.Namespace(ns)}},
			To:   []gwv1.ReferenceGrantTo{{Group: "webfarm.dev", Kind: "AppPool"}}}}},
		Backends:     map[string]map[types.NamespacedName]gateway.Backend{gateway.KindAppPool: {{Namespace: "hosting", Name: "shared"}: {}}},
		SiteContents: map[types.NamespacedName]v1.SiteContentSpec{{Namespace: ns, Name: "shop"}: spec},
	})
	return res.Sites
}
