package v1alpha1_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"webfarm.dev/operator/internal/testutil"
)

func TestWebFarmManifests(t *testing.T) { checkManifests(t, "WebFarm", webFarmCases) }

// inSite is a patch that changes the base WebFarm's one site: sitePatch is
// merged over that site, as a merge patch cannot reach into a list.
func inSite(sitePatch string) string {
	var base, change map[string]any
	if err := yaml.Unmarshal([]byte(testutil.Dedent(bases["WebFarm"])), &base); err != nil {
		panic(err)
	}
	if err := yaml.Unmarshal([]byte(sitePatch), &change); err != nil {
		panic(fmt.Sprintf("the site patch is not valid YAML: %v\n%s", err, sitePatch))
	}
	site := base["spec"].(map[string]any)["sites"].([]any)[0]
	merged, err := json.Marshal(mergePatch(site, change))
	if err != nil {
		panic(err)
	}
	return "spec: {sites: [" + string(merged) + "]}"
}

// inRoute is a patch that gives the base WebFarm's one route the content
// given (YAML of a RouteContent).
func inRoute(content string) string {
	var c any
	if err := yaml.Unmarshal([]byte(testutil.Dedent(content)), &c); err != nil {
		panic(fmt.Sprintf("the content is not valid YAML: %v\n%s", err, content))
	}
	b, err := json.Marshal(c)
	if err != nil {
		panic(err)
	}
	return inSite(`{routes: [{appPool: web, content: ` + string(b) + `}]}`)
}

// webFarmCases are WebFarm manifests, each the base WebFarm (bases) with a
// patch, and what the API server answers.
var webFarmCases = []manifestCase{
	// HTTPS.
	refused("a site's tls without a secretName is refused", inSite(`{tls: {plainHTTP: Serve}}`), "spec.sites[0].tls.secretName: Required value"),
	refused("plainHTTP other than Redirect or Serve is refused", inSite(`{tls: {secretName: www-tls, plainHTTP: Drop}}`), "spec.sites[0].tls.plainHTTP", "Unsupported value"),
	refused("an HSTS max-age over two years is refused", inSite(`{tls: {secretName: www-tls, hsts: {maxAgeSeconds: 63072001}}}`), "spec.sites[0].tls.hsts.maxAgeSeconds"),
	refused("a TLS minimum version of 1.1 is refused", `
		spec:
		  sites:
		  - {name: www, hosts: [www.example.com], routes: [{appPool: web}], tls: {secretName: www-tls}}
		  frontend: {tls: {minVersion: "1.1"}}
	`,
		"spec.frontend.tls.minVersion", "Unsupported value"),
	refused("a default TLS site that has no tls is refused", `
		spec:
		  sites:
		  - {name: www, hosts: [www.example.com], routes: [{appPool: web}], tls: {secretName: www-tls}}
		  - {name: blog, hosts: [blog.example.com], routes: [{appPool: web}]}
		  frontend: {tls: {defaultSite: blog}}
	`,
		"frontend.tls.defaultSite must name a site with tls"),
	refused("frontend tls settings without a site with tls are refused", `spec: {frontend: {tls: {minVersion: "1.3"}}}`, "frontend.tls needs a site with tls"),
	refused("a SameSite=None cookie on a farm with a site served over plain HTTP is refused", `
		spec:
		  sites:
		  - name: www
		    hosts: [www.example.com]
		    routes: [{appPool: web}]
		    tls: {secretName: www-tls, plainHTTP: Serve}
		  sessionAffinity: {type: Cookie, cookie: {sameSite: None}}
	`,
		"sameSite None needs every site to have tls with plainHTTP Redirect"),
	// Host names.
	refused("a host name with an uppercase letter is refused", inSite(`{hosts: [WWW.example.com]}`), `spec.sites[0].hosts[0]: Invalid value: "WWW.example.com"`, "should match"),
	refused("a host name with an underscore is refused", inSite(`{hosts: [my_shop.example.com]}`), `spec.sites[0].hosts[0]: Invalid value: "my_shop.example.com"`, "should match"),
	refused("a host name with a trailing dot is refused", inSite(`{hosts: [www.example.com.]}`), `spec.sites[0].hosts[0]: Invalid value: "www.example.com."`, "should match"),
	refused("a wildcard that is not the first label of a host name is refused", inSite(`{hosts: ["www.*.example.com"]}`), `spec.sites[0].hosts[0]: Invalid value: "www.*.example.com"`, "should match"),
	refused("a bare wildcard host name is refused", inSite(`{hosts: ["*"]}`), `spec.sites[0].hosts[0]: Invalid value: "*"`, "should match"),
	refused("a host name listed twice in one site is refused", inSite(`{hosts: [www.example.com, www.example.com]}`), `spec.sites[0].hosts[1]: Duplicate value: "www.example.com"`),
	refused("the same host name in two sites is refused", `
		spec:
		  sites:
		  - {name: www, hosts: [www.example.com], routes: [{appPool: web}]}
		  - {name: shop, hosts: [shop.example.com, www.example.com], routes: [{appPool: shop}]}
	`,
		"a host name may belong to only one site"),
	// Sites.
	accepted("a farm without sites, which serves only its Gateway's routes, is accepted", `spec: {sites: []}`),
	refused("frontend TLS on a farm without sites is refused", `spec: {sites: [], frontend: {tls: {minVersion: "1.3"}}}`, "frontend.tls needs a site with tls"),
	refused("two sites with the same name are refused", `
		spec:
		  sites:
		  - {name: www, hosts: [www.example.com], routes: [{appPool: web}]}
		  - {name: www, hosts: [shop.example.com], routes: [{appPool: shop}]}
	`,
		"spec.sites[1]: Duplicate value", `"name":"www"`),
	refused("a site name with an uppercase letter is refused", inSite(`{name: Shop, hosts: [shop.example.com], routes: [{appPool: shop}]}`), `spec.sites[0].name: Invalid value: "Shop"`, "should match"),
	refused("a site without routes is refused", inSite(`{routes: []}`), "spec.sites[0].routes", "should have at least 1 items"),
	refused("a bandwidth limit below 1024 bytes per second is refused", inSite(`{maxBandwidthBytesPerSecond: 100}`), "spec.sites[0].maxBandwidthBytesPerSecond", "should be greater than or equal to 1024"),
	// A site's connection bound (IIS MaxConnections).
	accepted("a site served over HTTPS whose plain HTTP redirects may bound its connections", inSite(`{tls: {secretName: www-tls}, maxConnections: 5000}`)),
	refused("a connection bound on a plain HTTP site is refused", inSite(`{maxConnections: 5000}`), "spec.sites[0]", "maxConnections counts a site's HTTPS connections"),
	refused("a connection bound on a site that serves plain HTTP too is refused", inSite(`{tls: {secretName: www-tls, plainHTTP: Serve}, maxConnections: 5000}`), "spec.sites[0]", "it needs tls, with plainHTTP Redirect"),
	refused("a connection bound of 0 is refused", inSite(`{tls: {secretName: www-tls}, maxConnections: 0}`), "spec.sites[0].maxConnections", "should be greater than or equal to 1"),
	refused("a connection bound over a million is refused", inSite(`{tls: {secretName: www-tls}, maxConnections: 1000001}`), "spec.sites[0].maxConnections", "should be less than or equal to 1000000"),
	// Path prefixes and routes.
	refused("a path prefix without a leading slash is refused", inSite(`{routes: [{pathPrefix: shop, appPool: shop}]}`), `spec.sites[0].routes[0].pathPrefix: Invalid value: "shop"`, "should match"),
	refused("a path prefix with a '..' segment is refused", inSite(`{routes: [{pathPrefix: /shop/../admin, appPool: shop}]}`), `spec.sites[0].routes[0].pathPrefix: Invalid value: "/shop/../admin"`, "should match"),
	refused("a path prefix ending in a '..' segment is refused", inSite(`{routes: [{pathPrefix: /shop/.., appPool: shop}]}`), `spec.sites[0].routes[0].pathPrefix: Invalid value: "/shop/.."`, "should match"),
	refused("a path prefix with a '.' segment is refused", inSite(`{routes: [{pathPrefix: /./shop, appPool: shop}]}`), `spec.sites[0].routes[0].pathPrefix: Invalid value: "/./shop"`, "should match"),
	refused("a path prefix with a space is refused", inSite(`{routes: [{pathPrefix: /my shop, appPool: shop}]}`), `spec.sites[0].routes[0].pathPrefix: Invalid value: "/my shop"`, "should match"),
	refused("a path prefix with a double slash is refused", inSite(`{routes: [{pathPrefix: //shop, appPool: shop}]}`), `spec.sites[0].routes[0].pathPrefix: Invalid value: "//shop"`, "should match"),
	refused("a path prefix with a semicolon is refused", inSite(`{routes: [{pathPrefix: /shop;jsessionid=1, appPool: shop}]}`), `spec.sites[0].routes[0].pathPrefix: Invalid value: "/shop;jsessionid=1"`, "should match"),
	refused("a path prefix with a quote is refused", inSite(`{routes: [{pathPrefix: "/shop\"", appPool: shop}]}`), `spec.sites[0].routes[0].pathPrefix: Invalid value: "/shop\""`, "should match"),
	refused("a path prefix longer than 256 characters is refused", inSite(`{routes: [{pathPrefix: /`+strings.Repeat("a", 256)+`, appPool: shop}]}`), "spec.sites[0].routes[0].pathPrefix: Too long", "256"),
	refused("the same path prefix twice in one site is refused", inSite(`{routes: [{pathPrefix: /shop, appPool: shop}, {pathPrefix: /shop, appPool: web}]}`), "spec.sites[0].routes[1]: Duplicate value", `"pathPrefix":"/shop"`),
	refused("two routes without a path prefix in one site are refused (both mean '/')", inSite(`{routes: [{appPool: shop}, {appPool: web}]}`), "spec.sites[0].routes[1]: Duplicate value", `"pathPrefix":"/"`),
	refused("a route without an appPool is refused", inSite(`{routes: [{pathPrefix: /shop}]}`), "spec.sites[0].routes[0].appPool: Required value"),
	refused("a route naming an appPool with an uppercase letter is refused", inSite(`{routes: [{appPool: Web}]}`), `spec.sites[0].routes[0].appPool: Invalid value: "Web"`, "should match"),
	// Session affinity.
	refused("an affinity type Sticky is refused", `spec: {sessionAffinity: {type: Sticky}}`, `spec.sessionAffinity.type: Unsupported value: "Sticky"`, `"None", "ClientIP", "ClassC", "Cookie"`),
	refused("a cookie name with a space is refused", `spec: {sessionAffinity: {type: Cookie, cookie: {name: my cookie}}}`, `spec.sessionAffinity.cookie.name: Invalid value: "my cookie"`, "should match"),
	refused("a cookie name with a semicolon is refused", `spec: {sessionAffinity: {type: Cookie, cookie: {name: a;b}}}`, `spec.sessionAffinity.cookie.name: Invalid value: "a;b"`, "should match"),
	refused("a cookie name longer than 64 characters is refused", `spec: {sessionAffinity: {type: Cookie, cookie: {name: `+strings.Repeat("C", 65)+`}}}`, "spec.sessionAffinity.cookie.name: Too long", "64"),
	refused("cookie settings with affinity type None are refused", `spec: {sessionAffinity: {type: None, cookie: {name: SRV}}}`, "spec.sessionAffinity", "cookie settings need type Cookie"),
	refused("cookie settings without an affinity type (None by default) are refused", `spec: {sessionAffinity: {cookie: {ttl: 1h}}}`, "spec.sessionAffinity", "cookie settings need type Cookie"),
	refused("a cookie lifetime over one year is refused", `spec: {sessionAffinity: {type: Cookie, cookie: {ttl: 8761h}}}`, "spec.sessionAffinity.cookie.ttl", "cookie ttl must be at most 8760h (one year)"),
	// Frontend.
	refused("an unavailableResponse L3 is refused", `spec: {unavailableResponse: L3}`, `spec.unavailableResponse: Unsupported value: "L3"`, `"L7", "L4"`),
	refused("zero frontend replicas are refused", `spec: {frontend: {replicas: 0}}`, "spec.frontend.replicas", "should be greater than or equal to 1"),
	accepted("frontends autoscaled between 2 and 6 are accepted", `spec: {frontend: {autoscaling: {minReplicas: 2, maxReplicas: 6, targetCPUUtilizationPercent: 50, stabilizationWindow: 2m}}}`),
	refused("frontend autoscaling with minReplicas above maxReplicas is refused", `spec: {frontend: {autoscaling: {minReplicas: 5, maxReplicas: 3}}}`, "spec.frontend.autoscaling", "minReplicas must be less than or equal to maxReplicas"),
	refused("frontend autoscaling with minReplicas above the default maxReplicas is refused", `spec: {frontend: {autoscaling: {minReplicas: 5}}}`, "spec.frontend.autoscaling", "minReplicas must be less than or equal to maxReplicas"),
	refused("more than 100 autoscaled frontends are refused", `spec: {frontend: {autoscaling: {maxReplicas: 101}}}`, "spec.frontend.autoscaling.maxReplicas", "should be less than or equal to 100"),
	refused("a frontend stabilisation window over a day is refused", `spec: {frontend: {autoscaling: {stabilizationWindow: 25h}}}`, "spec.frontend.autoscaling.stabilizationWindow", "stabilizationWindow must be at most 24h"),
	refused("a connection timeout written as '10 minutes' is refused", `spec: {frontend: {connectionTimeout: 10 minutes}}`, `spec.frontend.connectionTimeout: Invalid value: "10 minutes"`, "should match"),
	refused("a negative request timeout is refused", `spec: {frontend: {requestTimeout: "-5s"}}`, `spec.frontend.requestTimeout: Invalid value: "-5s"`, "should match"),
	refused("a connection timeout of 2h is refused", `spec: {frontend: {connectionTimeout: 2h}}`, "spec.frontend.connectionTimeout", "connectionTimeout must be between 1s and 1h"),
	refused("a request timeout above 1h but within the pattern is refused by the rule", `spec: {frontend: {requestTimeout: 90m}}`, `spec.frontend.requestTimeout: Invalid value: "90m"`, "requestTimeout must be between 1s and 1h"),
	refused("a WebSocket idle timeout above 1h is refused", `spec: {frontend: {webSocketIdleTimeout: 61m}}`, `spec.frontend.webSocketIdleTimeout: Invalid value: "61m"`, "webSocketIdleTimeout must be between 1s and 1h"),
	refused("a WebSocket idle timeout under 1s is refused", `spec: {frontend: {webSocketIdleTimeout: 500ms}}`, `spec.frontend.webSocketIdleTimeout: Invalid value: "500ms"`, "webSocketIdleTimeout must be between 1s and 1h"),
	refused("a WebSocket idle timeout that is not a duration is refused", `spec: {frontend: {webSocketIdleTimeout: forever}}`, `spec.frontend.webSocketIdleTimeout: Invalid value: "forever"`, "should match"),
	refused("a service type ExternalName is refused", `spec: {frontend: {service: {type: ExternalName}}}`, `spec.frontend.service.type: Unsupported value: "ExternalName"`),
	refused("a nodePort with service type ClusterIP is refused", `spec: {frontend: {service: {type: ClusterIP, nodePort: 30080}}}`, "spec.frontend.service", "nodePort needs type NodePort or LoadBalancer"),
	refused("trusted hops and trusted networks together are refused", `spec: {frontend: {clientAddress: {trustedHops: 1, trustedNetworks: [10.0.0.0/8]}}}`, "spec.frontend.clientAddress", "set trustedHops or trustedNetworks, not both"),
	refused("a trusted network that is not a CIDR is refused", `spec: {frontend: {clientAddress: {trustedNetworks: [10.0.0.1]}}}`, "spec.frontend.clientAddress.trustedNetworks[0]", "must be a CIDR such as 10.0.0.0/8"),
	refused("more than 10 trusted hops are refused", `spec: {frontend: {clientAddress: {trustedHops: 11}}}`, "spec.frontend.clientAddress.trustedHops", "should be less than or equal to 10"),
	refusedAs(metav1.StatusReasonBadRequest, "a misspelled field is refused rather than dropped", `spec: {frontend: {replica: 3}}`, `strict decoding error: unknown field "spec.frontend.replica"`),
	refused("a connection timeout too large for a duration is refused by the pattern alone", `spec: {frontend: {connectionTimeout: 999999999h}}`, `spec.frontend.connectionTimeout: Invalid value: "999999999h"`, "should match"),
	refused("a duration that repeats a unit is refused", `spec: {frontend: {requestTimeout: 30s30s}}`, `spec.frontend.requestTimeout: Invalid value: "30s30s"`, "should match"),
	refused("an access log sampling 0 percent of requests is refused (enabled: false turns it off)", `spec: {frontend: {accessLog: {samplePercent: 0}}}`, "spec.frontend.accessLog.samplePercent", "should be greater than or equal to 1"),
	refused("an access log sampling 101 percent of requests is refused", `spec: {frontend: {accessLog: {samplePercent: 101}}}`, "spec.frontend.accessLog.samplePercent", "should be less than or equal to 100"),
	refused("a frontend CPU of -1 is refused", `spec: {frontend: {cpu: "-1"}}`, "spec.frontend.cpu", "frontend cpu must be between 10m and 64"),
	refused("a frontend memory of 0 is refused", `spec: {frontend: {memory: 0}}`, "spec.frontend.memory", "frontend memory must be between 16Mi and 1Ti"),
	refused("a WebFarm name with a dot is refused (its Service could not be created)", `metadata: {name: web.farm}`, "a WebFarm name must be a DNS label"),
	refused("a WebFarm name longer than 50 characters is refused", `metadata: {name: `+tooLongName+`}`, "a WebFarm name may be at most 50 characters"),
	// A route's content: it never leaves the pool's content root.
	refused("a content directory that climbs out of the pool's content is refused", inRoute(`{directory: ../other-site}`),
		"spec.sites[0].routes[0].content.directory", "should match"),
	refused("a content directory with a dot segment inside is refused", inRoute(`{directory: sites/../../etc}`),
		"spec.sites[0].routes[0].content.directory", "should match"),
	refused("an absolute content directory is refused", inRoute(`{directory: /etc}`), "spec.sites[0].routes[0].content.directory", "should match"),
	refused("a content directory with an empty segment is refused", inRoute(`{directory: "sites//shop"}`), "spec.sites[0].routes[0].content.directory", "should match"),
	refused("a content directory with a trailing slash is refused", inRoute(`{directory: sites/shop/}`), "spec.sites[0].routes[0].content.directory", "should match"),
	refused("a content directory with percent-encoded dots is refused", inRoute(`{directory: "%2e%2e"}`), "spec.sites[0].routes[0].content.directory", "should match"),
	refused("a content directory with a backslash is refused", inRoute(`{directory: 'sites\shop'}`), "spec.sites[0].routes[0].content.directory", "should match"),
	refused("a content directory of dots alone is refused", inRoute(`{directory: "."}`), "spec.sites[0].routes[0].content.directory", "should match"),
	refused("an empty content is refused", inRoute(`{}`), "spec.sites[0].routes[0].content", "should have at least 1 properties"),
	refused("a default document with a slash is refused", inRoute(`{defaultDocuments: [docs/index.html]}`),
		"spec.sites[0].routes[0].content.defaultDocuments[0]", "should match"),
	refused("a default document of two dots is refused", inRoute(`{defaultDocuments: [".."]}`), "spec.sites[0].routes[0].content.defaultDocuments[0]", "should match"),
	refused("a default document listed twice is refused", inRoute(`{defaultDocuments: [index.html, index.html]}`),
		"spec.sites[0].routes[0].content.defaultDocuments", "Duplicate value"),
	refused("nine default documents are refused", inRoute(`{defaultDocuments: [`+repeated(9, "d%d.html")+`]}`),
		"spec.sites[0].routes[0].content.defaultDocuments", "must have at most 8 items"),
	refused("an error page for status 200 is refused", inRoute(`{errorPages: [{statusCode: 200, path: /ok.html}]}`),
		"spec.sites[0].routes[0].content.errorPages[0].statusCode", "Unsupported value"),
	refused("an error page that climbs out of the site's directory is refused", inRoute(`{errorPages: [{statusCode: 404, path: /../404.html}]}`),
		"spec.sites[0].routes[0].content.errorPages[0].path", "should match"),
	refused("an error page without a leading slash is refused", inRoute(`{errorPages: [{statusCode: 404, path: 404.html}]}`),
		"spec.sites[0].routes[0].content.errorPages[0].path", "should match"),
	refused("two error pages for one status are refused", inRoute(`{errorPages: [{statusCode: 404, path: /a.html}, {statusCode: 404, path: /b.html}]}`),
		"spec.sites[0].routes[0].content.errorPages[1]", "Duplicate value"),
	accepted("a route serving a site's directory with its own default documents and error pages is accepted", inRoute(`
		directory: sites/contoso.example
		defaultDocuments: [Default.htm, index.html, iisstart.htm]
		errorPages: [{statusCode: 404, path: /errors/404.html}, {statusCode: 503, path: /errors/busy.html}]`)),
	// Accepted.
	accepted("a minimal WebFarm is accepted", `{}`),
	accepted("a farm behind load balancers that send the PROXY protocol, trusting their networks, is accepted", `
		spec:
		  frontend:
		    clientAddress:
		      proxyProtocol: true
		      trustedNetworks: [10.0.0.0/8, 192.168.0.0/16, "2001:db8::/32"]
	`),
	accepted("a farm with HTTPS sites, HSTS, a default site, TLS 1.3 and a SameSite=None cookie is accepted", `
		spec:
		  sites:
		  - name: www
		    hosts: [www.example.com, "*.www.example.com"]
		    routes: [{appPool: web}]
		    tls: {secretName: www.example.com-tls, hsts: {maxAgeSeconds: 31536000, includeSubDomains: true}}
		  - {name: blog, hosts: [blog.example.com], routes: [{appPool: web}], tls: {secretName: blog-tls}}
		  frontend: {service: {httpsPort: 8443}, tls: {minVersion: "1.3", defaultSite: blog}}
		  sessionAffinity: {type: Cookie, cookie: {sameSite: None}}
	`),
	accepted("a wildcard host name and several sites are accepted", `
		spec:
		  sites:
		  - {name: www, hosts: [example.com, www.example.com], routes: [{appPool: web}]}
		  - name: tenants
		    hosts: ["*.example.com", "*.shop.example.org", 1-2-3.example.net]
		    routes: [{appPool: tenants}]
	`),
	accepted("path prefixes with dots, dashes, underscores, tildes and a trailing slash are accepted", `
		spec:
		  sites:
		  - name: www
		    hosts: [www.example.com]
		    routes:
		    - {pathPrefix: /, appPool: web}
		    - {pathPrefix: /shop/, appPool: shop, cachePolicy: shop-cache}
		    - {pathPrefix: /a.b/c-d_e~f, appPool: web}
		    - {pathPrefix: /..hidden, appPool: web}
		    - {pathPrefix: /.well-known/acme-challenge, appPool: web}
		    - {pathPrefix: /v1.../x..y/~user, appPool: web}
	`),
	accepted("affinity type None is accepted", `spec: {sessionAffinity: {type: None}}`),
	accepted("affinity type ClientIP is accepted", `spec: {sessionAffinity: {type: ClientIP}}`),
	accepted("affinity type ClassC is accepted", `spec: {sessionAffinity: {type: ClassC}}`),
	accepted("affinity type Cookie with a named, year-long cookie is accepted", `spec: {sessionAffinity: {type: Cookie, cookie: {name: ASP.NET_SessionId-2, ttl: 8760h}}}`),
	accepted("a WebFarm with every field set and a 50-character name is accepted", `
		metadata: {name: `+strings.Repeat("f", 50)+`}
		spec:
		  sites:
		  - name: www
		    hosts: [www.example.com]
		    maxBandwidthBytesPerSecond: 1048576
		    routes: [{pathPrefix: /, appPool: web, cachePolicy: web-cache}]
		  frontend:
		    replicas: 3
		    service: {type: NodePort, port: 8000, nodePort: 30080}
		    connectionTimeout: 1h
		    requestTimeout: 1m30s
		    webSocketIdleTimeout: 1h
		    keepAlive: false
		    compression: true
		    cpu: "1"
		    memory: 512Mi
		    accessLog: {enabled: true, samplePercent: 1}
		  sessionAffinity: {type: ClientIP}
		  unavailableResponse: L4
	`),
	accepted("an access log turned off, or sampling every request, is accepted", `spec: {frontend: {accessLog: {enabled: false, samplePercent: 100}}}`),
}
