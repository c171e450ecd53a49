package gateway

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1 "webfarm.dev/operator/api/v1alpha1"
)

// withContent gives a route's first rule an ExtensionRef filter per name:
// "SiteContent:shop" or "CachePolicy:static".
func withContent(r *gwv1.HTTPRoute, refs ...string) *gwv1.HTTPRoute {
	for _, ref := range refs {
		kind, name, _ := strings.Cut(ref, ":")
		r.Spec.Rules[0].Filters = append(r.Spec.Rules[0].Filters, gwv1.HTTPRouteFilter{Type: gwv1.HTTPRouteFilterExtensionRef,
			ExtensionRef: &gwv1.LocalObjectReference{Group: GroupWebFarm, Kind: gwv1.Kind(kind), Name: gwv1.ObjectName(name)}})
	}
	return r
}

// sharedPool are the inputs of one tenant's route to the provider's shared
// pool (granted), and the SiteContents of the namespaces.
func sharedPool(r *gwv1.HTTPRoute, contents map[types.NamespacedName]v1.SiteContentSpec) Inputs {
	in := inputs(hosting(), r)
	in.Grants = []*gwv1.ReferenceGrant{grant("tenant-a", "hosting", GroupWebFarm, KindAppPool)}
	in.CachePolicies = map[string]bool{"static": true}
	in.SiteContents = contents
	return in
}

// contentOf is what the first route of a host serves, as text (with the
// cache tier it goes through).
func contentOf(t *testing.T, res Result, host string) string {
	t.Helper()
	s := siteOf(res, host)
	if s == nil || len(s.Routes) == 0 {
		t.Fatalf("%s is not served", host)
	}
	r := s.Routes[0]
	switch {
	case r.Refused:
		return "refused (500)"
	case r.Content == nil:
		return "the content root"
	}
	out := fmt.Sprintf("%s %v %v", r.Content.Directory, r.Content.DefaultDocuments, r.Content.ErrorPages)
	if r.CachePolicy != "" {
		out += " via " + r.CachePolicy
	}
	return out
}

func TestRoutesServeTheirSiteContent(t *testing.T) {
	shop := map[types.NamespacedName]v1.SiteContentSpec{
		{Namespace: "tenant-a", Name: "shop"}: {Directory: "shop", DefaultDocuments: v1.DefaultDocuments{"default.htm", "index.html"},
			ErrorPages: []v1.ErrorPage{{StatusCode: 503, Path: "/busy.html"}, {StatusCode: 404, Path: "/errors/404.html"}}},
		{Namespace: "tenant-b", Name: "shop"}: {Directory: "secret"},
		{Namespace: "hosting", Name: "www"}:   {Directory: "sites/www"},
		{Namespace: "tenant-a", Name: "bad"}:  {Directory: "../tenant-b"},
		{Namespace: "tenant-a", Name: "root"}: {},
	}
	tenant := func(refs ...string) *gwv1.HTTPRoute {
		return withContent(route("tenant-a", "site", 0, []string{"a.example"}, "hosting/AppPool:shared-1"), refs...)
	}
	cases := []struct {
		name              string
		in                Inputs
		resolved, content string
	}{
		{"a tenant's SiteContent serves its directory under the tenant's folder, its documents in order and its pages by code",
			sharedPool(tenant("SiteContent:shop"), shop), "True/ResolvedRefs",
			"tenant-a/shop [default.htm index.html] [{404 /errors/404.html} {503 /busy.html}]"},
		{"a tenant's route without a SiteContent serves its namespace's folder, never the content root",
			sharedPool(tenant(), shop), "True/ResolvedRefs", "tenant-a [] []"},
		{"a SiteContent without a directory serves the namespace's folder",
			sharedPool(tenant("SiteContent:root"), shop), "True/ResolvedRefs", "tenant-a [] []"},
		{"a route of the Gateway's namespace resolves its directory from the content root, as an inline site",
			sharedPool(withContent(route("hosting", "www", 0, []string{"a.example"}, "AppPool:shared-1"), "SiteContent:www"), shop),
			"True/ResolvedRefs", "sites/www [] []"},
		{"a route of the Gateway's namespace without a SiteContent serves the content root",
			inputs(hosting(), route("hosting", "www", 0, []string{"a.example"}, "AppPool:shared-1")), "True/ResolvedRefs", "the content root"},
		{"a tenant naming another tenant's SiteContent gets its own namespace's, which does not exist: BackendNotFound and 500",
			sharedPool(tenant("SiteContent:secret"), shop), "False/BackendNotFound", "refused (500)"},
		{"a SiteContent that does not exist is ResolvedRefs BackendNotFound and its rule answers 500",
			sharedPool(tenant("SiteContent:missing"), nil), "False/BackendNotFound", "refused (500)"},
		{"a stored SiteContent that climbs out of its folder is UnsupportedValue and its rule answers 500",
			sharedPool(tenant("SiteContent:bad"), shop), "False/UnsupportedValue", "refused (500)"},
		{"a SiteContent on a rule to a Service is UnsupportedValue: the content is an AppPool's",
			sharedPool(withContent(route("tenant-a", "site", 0, []string{"a.example"}, "Service:echo"), "SiteContent:shop"), shop),
			"False/UnsupportedValue", "refused (500)"},
		{"a rule of the Gateway's namespace with a CachePolicy and a SiteContent goes through the cache with its content",
			sharedPool(withContent(route("hosting", "www", 0, []string{"a.example"}, "AppPool:shared-1"), "CachePolicy:static", "SiteContent:www"), shop),
			"True/ResolvedRefs", "sites/www [] [] via static"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := Attach(c.in)
			r := c.in.Routes[0]
			expect(t, parentCondition(res, r.Namespace, r.Name, "Accepted"), "True/Accepted")
			expect(t, parentCondition(res, r.Namespace, r.Name, "ResolvedRefs"), c.resolved)
			expect(t, contentOf(t, res, "a.example"), c.content)
		})
	}
}

func TestContentFiltersARouteCannotHave(t *testing.T) {
	cases := []struct {
		name string
		refs []string
	}{
		{"two SiteContents on one rule are refused", []string{"SiteContent:shop", "SiteContent:blog"}},
		{"two CachePolicies on one rule are refused", []string{"CachePolicy:static", "CachePolicy:other"}},
		{"an ExtensionRef of another kind is refused", []string{"HTTPRouteFilter:shop"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := withContent(route("hosting", "www", 0, []string{"a.example"}, "AppPool:shared-1"), c.refs...)
			res := Attach(inputs(hosting(), r))
			expect(t, parentCondition(res, "hosting", "www", "Accepted"), "False/UnsupportedValue")
			if len(res.Sites) != 0 {
				t.Fatalf("a refused route has sites: %+v", res.Sites)
			}
		})
	}
}

// A rule to several pools by weight carries its content to each of them.
func TestWeightedPoolsShareTheRulesContent(t *testing.T) {
	r := route("tenant-a", "site", 0, []string{"a.example"}, "hosting/AppPool:shared-1")
	r.Spec.Rules[0].BackendRefs = append(r.Spec.Rules[0].BackendRefs, gwv1.HTTPBackendRef{BackendRef: backendRef("hosting/AppPool:shared-2")})
	in := sharedPool(r, nil)
	in.Backends[KindAppPool][types.NamespacedName{Namespace: "hosting", Name: "shared-2"}] = Backend{}
	res := Attach(in)
	expect(t, parentCondition(res, "tenant-a", "site", "ResolvedRefs"), "True/ResolvedRefs")
	s := siteOf(res, "a.example")
	if s == nil || len(s.Routes) != 1 || len(s.Routes[0].Backends) != 2 {
		t.Fatalf("site: %+v", s)
	}
	if got := s.Routes[0].Content; got == nil || got.Directory != "tenant-a" {
		t.Fatalf("content %+v, want the tenant's folder", got)
	}
}
