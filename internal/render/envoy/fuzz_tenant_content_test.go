package envoy

import (
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/gateway"
	"webfarm.dev/operator/internal/vocabulary"
)

// FuzzTenantSiteContent gives a tenant's HTTPRoute (a fuzzed namespace and
// host name) a SiteContent of fuzzed directory, default document and error
// page, by weight to the shared pool or not, and translates it as the
// operator does. Whatever the translation serves renders and passes the
// real Envoy's validation; every route to the pool removes a client's site
// headers, and the directory it sends lies in the tenant's own folder and
// holds only what the workers' nginx takes.
func FuzzTenantSiteContent(f *testing.F) {
	f.Add("tenant-a", "shop.example", "shop", "index.html", int32(404), "/errors/404.html", false)
	f.Add("tenant-a", "*.shop.example", "", "", int32(0), "", true)
	f.Add("hosting", "www.example", "sites/www", "default.htm", int32(503), "/busy.html", false)
	for _, bad := range []string{"..", "../tenant-b", "a/../..", "/etc", "a//b", "a/", "%2e%2e", "%2F", `a\b`, "a b", "a\r\nX-Evil: 1",
		"%START_TIME%", "\xff", strings.Repeat("a", 300), "."} {
		f.Add("tenant-a", "shop.example", bad, "index.html", int32(404), "/404.html", false)
		f.Add("tenant-a", "shop.example", "shop", bad, int32(404), "/"+bad, true)
		f.Add(bad, bad+".example", "shop", "index.html", int32(404), "/404.html", false)
	}
	segment := `[A-Za-z0-9._~-]*[A-Za-z0-9_~-][A-Za-z0-9._~-]*`
	directory := regexp.MustCompile(`^` + segment + `(/` + segment + `)*$`)
	f.Fuzz(func(t *testing.T, namespace, host, dir, doc string, code int32, page string, weighted bool) {
		if len(validation.IsDNS1123Label(namespace)) > 0 {
			return // the API server names namespaces with DNS labels alone
		}
		spec := v1.SiteContentSpec{Directory: v1.ContentDirectory(dir)}
		if doc != "" {
			spec.DefaultDocuments = v1.DefaultDocuments{v1.DocumentName(doc)}
		}
		if code != 0 {
			spec.ErrorPages = []v1.ErrorPage{{StatusCode: code, Path: v1.ContentPath(page)}}
		}
		group, kind, hosting := gwv1.Group(gateway.GroupWebFarm), gwv1.Kind(gateway.KindAppPool), gwv1.Namespace("hosting")
		ref := gwv1.HTTPBackendRef{BackendRef: gwv1.BackendRef{BackendObjectReference: gwv1.BackendObjectReference{
			Group: &group, Kind: &kind, Name: "www", Namespace: &hosting}}}
		rule := gwv1.HTTPRouteRule{BackendRefs: []gwv1.HTTPBackendRef{ref}, Filters: []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterExtensionRef,
			ExtensionRef: &gwv1.LocalObjectReference{Group: gateway.GroupWebFarm, Kind: gateway.KindSiteContent, Name: "site"}}}}
		if weighted {
			rule.BackendRefs = append(rule.BackendRefs, ref)
		}
		route := &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "r"}, Spec: gwv1.HTTPRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "public", Namespace: &hosting}}},
			Hostnames:       []gwv1.Hostname{gwv1.Hostname(host)},
			Rules:           []gwv1.HTTPRouteRule{rule},
		}}
		from := gwv1.NamespacesFromAll
		res := gateway.Attach(gateway.Inputs{
			Gateway: &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "hosting", Name: "public"}, Spec: gwv1.GatewaySpec{
				Listeners: []gwv1.Listener{{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType,
					AllowedRoutes: &gwv1.AllowedRoutes{Namespaces: &gwv1.RouteNamespaces{From: &from}}}}}},
			Farm:   gateway.Farm{Name: "contoso", HTTPPort: 80},
			Routes: []*gwv1.HTTPRoute{route},
			Grants: []*gwv1.ReferenceGrant{{ObjectMeta: metav1.ObjectMeta{Namespace: "hosting"}, Spec: gwv1.ReferenceGrantSpec{
				From: []gwv1.ReferenceGrantFrom{{Group: gwv1.GroupName, Kind: gateway.KindHTTPRoute, Namespace: gwv1.Namespace(namespace)}},
				To:   []gwv1.ReferenceGrantTo{{Group: gateway.GroupWebFarm, Kind: gateway.KindAppPool}}}}},
			Backends:     map[string]map[types.NamespacedName]gateway.Backend{gateway.KindAppPool: {{Namespace: "hosting", Name: "www"}: {}}},
			SiteContents: map[types.NamespacedName]v1.SiteContentSpec{{Namespace: namespace, Name: "site"}: spec},
		})
		farm := contoso()
		farm.Namespace = "hosting"
		farm.Sites = append(farm.Sites, res.Sites...)
		r, ok := renderAndCheck(t, farm, contosoPools(), contosoBackends(), true)
		if !ok {
			t.Fatal("FarmRouting refused what the translation serves")
		}
		for _, vh := range r.Routes[0].VirtualHosts {
			if !strings.HasPrefix(vh.Name, "route:") {
				continue
			}
			for _, out := range vh.Routes {
				if out.GetRoute() == nil {
					continue
				}
				if strings.Join(out.RequestHeadersToRemove, ",") != strings.Join(vocabulary.SiteHeaders, ",") {
					t.Fatalf("route %s keeps a client's site headers: removes %v", out.Match, out.RequestHeadersToRemove)
				}
				sent := ""
				for _, h := range out.RequestHeadersToAdd {
					if h.Header.Key == vocabulary.SiteDirectoryHeader {
						sent = h.Header.Value
					}
				}
				if namespace != "hosting" && sent != namespace && !strings.HasPrefix(sent, namespace+"/") {
					t.Fatalf("a route of %s sends directory %q, outside its folder", namespace, sent)
				}
				if sent != "" && !directory.MatchString(sent) {
					t.Fatalf("route %s sends directory %q, which the workers refuse", out.Match, sent)
				}
			}
		}
	})
}
