package v1alpha1_test

import (
	"context"
	"os"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/testutil"
)

// These tests apply manifests, as a person would with kubectl, to a real
// kube-apiserver and etcd that have the generated CRDs installed: the OpenAPI
// markers, CEL rules and defaults are checked where they take effect.

// k8s is a client of the test control plane that TestMain starts.
var k8s client.Client

func TestMain(m *testing.M) { os.Exit(testutil.RunWithControlPlane(m, &k8s)) }

// newNamespace creates a namespace for one test.
func newNamespace(t *testing.T) string {
	t.Helper()
	return testutil.NewNamespace(t, k8s, "validation-")
}

// decode reads a YAML manifest written inside a Go raw string: the indentation
// common to its lines (Go's tabs) is removed first, so the YAML's own spaces stay.
func decode(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(testutil.Dedent(manifest)), &obj.Object); err != nil {
		t.Fatalf("the test manifest is not valid YAML: %v\n%s", err, manifest)
	}
	if obj.GetKind() == "" || obj.GetName() == "" {
		t.Fatalf("the test manifest needs a kind and a metadata.name:\n%s", manifest)
	}
	return obj
}

// apply creates the manifest in namespace ns (testutil.CreateStrict) and
// returns the object as stored, or the API server's error.
func apply(t *testing.T, ns, manifest string) (*unstructured.Unstructured, error) {
	t.Helper()
	obj := decode(t, manifest)
	return obj, testutil.CreateStrict(k8s, ns, obj)
}

// remove deletes an object a case created, so the next case can reuse its name.
func remove(t *testing.T, obj *unstructured.Unstructured) {
	t.Helper()
	if err := k8s.Delete(context.Background(), obj); err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("deleting %s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
}

// celFailures are parts of messages that mean a CEL rule failed to run rather
// than judged the object: a person could not act on them.
var celFailures = []string{"type conversion error", "evaluating rule", "evaluation error", "no such key", "no such overload", "cost budget", "Internal error"}

func TestManifestsThatAreRefused(t *testing.T) {
	ns := newNamespace(t)
	long := strings.Repeat("a", 51)
	cases := []struct {
		name     string
		manifest string
		// want are substrings of the error message kubectl shows; all must appear.
		want []string
		// reason is the status reason; empty means Invalid (HTTP 422).
		reason metav1.StatusReason
	}{
		// HTTPS.
		{
			name: "a site's tls without a secretName is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - appPool: web
				    tls:
				      plainHTTP: Serve
			`,
			want: []string{"spec.sites[0].tls.secretName: Required value"},
		},
		{
			name: "plainHTTP other than Redirect or Serve is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - appPool: web
				    tls:
				      secretName: www-tls
				      plainHTTP: Drop
			`,
			want: []string{"spec.sites[0].tls.plainHTTP", "Unsupported value"},
		},
		{
			name: "an HSTS max-age over two years is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - appPool: web
				    tls:
				      secretName: www-tls
				      hsts:
				        maxAgeSeconds: 63072001
			`,
			want: []string{"spec.sites[0].tls.hsts.maxAgeSeconds"},
		},
		{
			name: "a TLS minimum version of 1.1 is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - appPool: web
				    tls:
				      secretName: www-tls
				  frontend:
				    tls:
				      minVersion: "1.1"
			`,
			want: []string{"spec.frontend.tls.minVersion", "Unsupported value"},
		},
		{
			name: "a default TLS site that has no tls is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - appPool: web
				    tls:
				      secretName: www-tls
				  - name: blog
				    hosts: [blog.example.com]
				    routes:
				    - appPool: web
				  frontend:
				    tls:
				      defaultSite: blog
			`,
			want: []string{"frontend.tls.defaultSite must name a site with tls"},
		},
		{
			name: "frontend tls settings without a site with tls are refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - appPool: web
				  frontend:
				    tls:
				      minVersion: "1.3"
			`,
			want: []string{"frontend.tls needs a site with tls"},
		},
		{
			name: "a SameSite=None cookie on a farm with a site served over plain HTTP is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - appPool: web
				    tls:
				      secretName: www-tls
				      plainHTTP: Serve
				  sessionAffinity:
				    type: Cookie
				    cookie:
				      sameSite: None
			`,
			want: []string{"sameSite None needs every site to have tls with plainHTTP Redirect"},
		},
		// Host names.
		{
			name: "a host name with an uppercase letter is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [WWW.example.com]
				    routes:
				    - appPool: web
			`,
			want: []string{`spec.sites[0].hosts[0]: Invalid value: "WWW.example.com"`, "should match"},
		},
		{
			name: "a host name with an underscore is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [my_shop.example.com]
				    routes:
				    - appPool: web
			`,
			want: []string{`spec.sites[0].hosts[0]: Invalid value: "my_shop.example.com"`, "should match"},
		},
		{
			name: "a host name with a trailing dot is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com.]
				    routes:
				    - appPool: web
			`,
			want: []string{`spec.sites[0].hosts[0]: Invalid value: "www.example.com."`, "should match"},
		},
		{
			name: "a wildcard that is not the first label of a host name is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.*.example.com]
				    routes:
				    - appPool: web
			`,
			want: []string{`spec.sites[0].hosts[0]: Invalid value: "www.*.example.com"`, "should match"},
		},
		{
			name: "a bare wildcard host name is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: ["*"]
				    routes:
				    - appPool: web
			`,
			want: []string{`spec.sites[0].hosts[0]: Invalid value: "*"`, "should match"},
		},
		{
			name: "a host name listed twice in one site is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com, www.example.com]
				    routes:
				    - appPool: web
			`,
			want: []string{`spec.sites[0].hosts[1]: Duplicate value: "www.example.com"`},
		},
		{
			name: "the same host name in two sites is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - appPool: web
				  - name: shop
				    hosts: [shop.example.com, www.example.com]
				    routes:
				    - appPool: shop
			`,
			want: []string{"a host name may belong to only one site"},
		},
		// Sites.
		{
			name: "a farm without sites is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites: []
			`,
			want: []string{"spec.sites: Invalid value", "should have at least 1 items"},
		},
		{
			name: "two sites with the same name are refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - appPool: web
				  - name: www
				    hosts: [shop.example.com]
				    routes:
				    - appPool: shop
			`,
			want: []string{"spec.sites[1]: Duplicate value", `"name":"www"`},
		},
		{
			name: "a site name with an uppercase letter is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: Shop
				    hosts: [shop.example.com]
				    routes:
				    - appPool: shop
			`,
			want: []string{`spec.sites[0].name: Invalid value: "Shop"`, "should match"},
		},
		{
			name: "a site without routes is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes: []
			`,
			want: []string{"spec.sites[0].routes", "should have at least 1 items"},
		},
		{
			name: "a bandwidth limit below 1024 bytes per second is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    maxBandwidthBytesPerSecond: 100
				    routes:
				    - appPool: web
			`,
			want: []string{"spec.sites[0].maxBandwidthBytesPerSecond", "should be greater than or equal to 1024"},
		},
		// Path prefixes and routes.
		{
			name: "a path prefix without a leading slash is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - pathPrefix: shop
				      appPool: shop
			`,
			want: []string{`spec.sites[0].routes[0].pathPrefix: Invalid value: "shop"`, "should match"},
		},
		{
			name: "a path prefix with a '..' segment is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - pathPrefix: /shop/../admin
				      appPool: shop
			`,
			want: []string{`spec.sites[0].routes[0].pathPrefix: Invalid value: "/shop/../admin"`, "should match"},
		},
		{
			name: "a path prefix ending in a '..' segment is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - pathPrefix: /shop/..
				      appPool: shop
			`,
			want: []string{`spec.sites[0].routes[0].pathPrefix: Invalid value: "/shop/.."`, "should match"},
		},
		{
			name: "a path prefix with a '.' segment is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - pathPrefix: /./shop
				      appPool: shop
			`,
			want: []string{`spec.sites[0].routes[0].pathPrefix: Invalid value: "/./shop"`, "should match"},
		},
		{
			name: "a path prefix with a space is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - pathPrefix: /my shop
				      appPool: shop
			`,
			want: []string{`spec.sites[0].routes[0].pathPrefix: Invalid value: "/my shop"`, "should match"},
		},
		{
			name: "a path prefix with a double slash is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - pathPrefix: //shop
				      appPool: shop
			`,
			want: []string{`spec.sites[0].routes[0].pathPrefix: Invalid value: "//shop"`, "should match"},
		},
		{
			name: "a path prefix with a semicolon is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - pathPrefix: /shop;jsessionid=1
				      appPool: shop
			`,
			want: []string{`spec.sites[0].routes[0].pathPrefix: Invalid value: "/shop;jsessionid=1"`, "should match"},
		},
		{
			name: "a path prefix with a quote is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - pathPrefix: '/shop"'
				      appPool: shop
			`,
			want: []string{`spec.sites[0].routes[0].pathPrefix: Invalid value: "/shop\""`, "should match"},
		},
		{
			name: "a path prefix longer than 256 characters is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - pathPrefix: /` + strings.Repeat("a", 256) + `
				      appPool: shop
			`,
			want: []string{"spec.sites[0].routes[0].pathPrefix: Too long", "256"},
		},
		{
			name: "the same path prefix twice in one site is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - pathPrefix: /shop
				      appPool: shop
				    - pathPrefix: /shop
				      appPool: web
			`,
			want: []string{"spec.sites[0].routes[1]: Duplicate value", `"pathPrefix":"/shop"`},
		},
		{
			name: "two routes without a path prefix in one site are refused (both mean '/')",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - appPool: shop
				    - appPool: web
			`,
			want: []string{"spec.sites[0].routes[1]: Duplicate value", `"pathPrefix":"/"`},
		},
		{
			name: "a route without an appPool is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - pathPrefix: /shop
			`,
			want: []string{"spec.sites[0].routes[0].appPool: Required value"},
		},
		{
			name: "a route naming an appPool with an uppercase letter is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - appPool: Web
			`,
			want: []string{`spec.sites[0].routes[0].appPool: Invalid value: "Web"`, "should match"},
		},
		// Session affinity.
		{
			name: "an affinity type Sticky is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - appPool: web
				  sessionAffinity:
				    type: Sticky
			`,
			want: []string{`spec.sessionAffinity.type: Unsupported value: "Sticky"`, `"None", "ClientIP", "ClassC", "Cookie"`},
		},
		{
			name: "a cookie name with a space is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - appPool: web
				  sessionAffinity:
				    type: Cookie
				    cookie:
				      name: my cookie
			`,
			want: []string{`spec.sessionAffinity.cookie.name: Invalid value: "my cookie"`, "should match"},
		},
		{
			name: "a cookie name with a semicolon is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - appPool: web
				  sessionAffinity:
				    type: Cookie
				    cookie:
				      name: a;b
			`,
			want: []string{`spec.sessionAffinity.cookie.name: Invalid value: "a;b"`, "should match"},
		},
		{
			name: "a cookie name longer than 64 characters is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - appPool: web
				  sessionAffinity:
				    type: Cookie
				    cookie:
				      name: ` + strings.Repeat("C", 65) + `
			`,
			want: []string{"spec.sessionAffinity.cookie.name: Too long", "64"},
		},
		{
			name: "cookie settings with affinity type None are refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - appPool: web
				  sessionAffinity:
				    type: None
				    cookie:
				      name: SRV
			`,
			want: []string{"spec.sessionAffinity", "cookie settings need type Cookie"},
		},
		{
			name: "cookie settings without an affinity type (None by default) are refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - appPool: web
				  sessionAffinity:
				    cookie:
				      ttl: 1h
			`,
			want: []string{"spec.sessionAffinity", "cookie settings need type Cookie"},
		},
		{
			name: "a cookie lifetime over one year is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - appPool: web
				  sessionAffinity:
				    type: Cookie
				    cookie:
				      ttl: 8761h
			`,
			want: []string{"spec.sessionAffinity.cookie.ttl", "cookie ttl must be at most 8760h (one year)"},
		},
		// Frontend.
		{
			name: "an unavailableResponse L3 is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - appPool: web
				  unavailableResponse: L3
			`,
			want: []string{`spec.unavailableResponse: Unsupported value: "L3"`, `"L7", "L4"`},
		},
		{
			name: "zero frontend replicas are refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - appPool: web
				  frontend:
				    replicas: 0
			`,
			want: []string{"spec.frontend.replicas", "should be greater than or equal to 1"},
		},
		{
			name: "a connection timeout written as '10 minutes' is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - appPool: web
				  frontend:
				    connectionTimeout: 10 minutes
			`,
			want: []string{`spec.frontend.connectionTimeout: Invalid value: "10 minutes"`, "should match"},
		},
		{
			name: "a negative request timeout is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - appPool: web
				  frontend:
				    requestTimeout: -5s
			`,
			want: []string{`spec.frontend.requestTimeout: Invalid value: "-5s"`, "should match"},
		},
		{
			name: "a connection timeout of 2h is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - appPool: web
				  frontend:
				    connectionTimeout: 2h
			`,
			want: []string{"spec.frontend.connectionTimeout", "connectionTimeout must be between 1s and 1h"},
		},
		{
			name: "a request timeout above 1h but within the pattern is refused by the rule",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - appPool: web
				  frontend:
				    requestTimeout: 90m
			`,
			want: []string{`spec.frontend.requestTimeout: Invalid value: "90m"`, "requestTimeout must be between 1s and 1h"},
		},
		{
			name: "a WebSocket idle timeout above 1h is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - appPool: web
				  frontend:
				    webSocketIdleTimeout: 61m
			`,
			want: []string{`spec.frontend.webSocketIdleTimeout: Invalid value: "61m"`, "webSocketIdleTimeout must be between 1s and 1h"},
		},
		{
			name: "a WebSocket idle timeout under 1s is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - appPool: web
				  frontend:
				    webSocketIdleTimeout: 500ms
			`,
			want: []string{`spec.frontend.webSocketIdleTimeout: Invalid value: "500ms"`, "webSocketIdleTimeout must be between 1s and 1h"},
		},
		{
			name: "a WebSocket idle timeout that is not a duration is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - appPool: web
				  frontend:
				    webSocketIdleTimeout: forever
			`,
			want: []string{`spec.frontend.webSocketIdleTimeout: Invalid value: "forever"`, "should match"},
		},
		{
			name: "a service type ExternalName is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - appPool: web
				  frontend:
				    service:
				      type: ExternalName
			`,
			want: []string{`spec.frontend.service.type: Unsupported value: "ExternalName"`},
		},
		{
			name: "a nodePort with service type ClusterIP is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - appPool: web
				  frontend:
				    service:
				      type: ClusterIP
				      nodePort: 30080
			`,
			want: []string{"spec.frontend.service", "nodePort needs type NodePort or LoadBalancer"},
		},
		{
			name: "trusted hops and trusted networks together are refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - appPool: web
				  frontend:
				    clientAddress:
				      trustedHops: 1
				      trustedNetworks: [10.0.0.0/8]
			`,
			want: []string{"spec.frontend.clientAddress", "set trustedHops or trustedNetworks, not both"},
		},
		{
			name: "a trusted network that is not a CIDR is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - appPool: web
				  frontend:
				    clientAddress:
				      trustedNetworks: [10.0.0.1]
			`,
			want: []string{"spec.frontend.clientAddress.trustedNetworks[0]", "must be a CIDR such as 10.0.0.0/8"},
		},
		{
			name: "more than 10 trusted hops are refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - appPool: web
				  frontend:
				    clientAddress:
				      trustedHops: 11
			`,
			want: []string{"spec.frontend.clientAddress.trustedHops", "should be less than or equal to 10"},
		},
		{
			name: "a misspelled field is refused rather than dropped",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - appPool: web
				  frontend:
				    replica: 3
			`,
			want:   []string{`strict decoding error: unknown field "spec.frontend.replica"`},
			reason: metav1.StatusReasonBadRequest,
		},
		{
			name: "a connection timeout too large for a duration is refused by the pattern alone",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - appPool: web
				  frontend:
				    connectionTimeout: 999999999h
			`,
			want: []string{`spec.frontend.connectionTimeout: Invalid value: "999999999h"`, "should match"},
		},
		{
			name: "a duration that repeats a unit is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - appPool: web
				  frontend:
				    requestTimeout: 30s30s
			`,
			want: []string{`spec.frontend.requestTimeout: Invalid value: "30s30s"`, "should match"},
		},
		{
			name: "an access log sampling 0 percent of requests is refused (enabled: false turns it off)",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - appPool: web
				  frontend:
				    accessLog:
				      samplePercent: 0
			`,
			want: []string{"spec.frontend.accessLog.samplePercent", "should be greater than or equal to 1"},
		},
		{
			name: "an access log sampling 101 percent of requests is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - appPool: web
				  frontend:
				    accessLog:
				      samplePercent: 101
			`,
			want: []string{"spec.frontend.accessLog.samplePercent", "should be less than or equal to 100"},
		},
		{
			name: "a frontend CPU of -1 is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - appPool: web
				  frontend:
				    cpu: "-1"
			`,
			want: []string{"spec.frontend.cpu", "frontend cpu must be between 10m and 64"},
		},
		{
			name: "a frontend memory of 0 is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - appPool: web
				  frontend:
				    memory: 0
			`,
			want: []string{"spec.frontend.memory", "frontend memory must be between 16Mi and 1Ti"},
		},
		{
			name: "a WebFarm name with a dot is refused (its Service could not be created)",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: web.farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - appPool: web
			`,
			want: []string{"a WebFarm name must be a DNS label"},
		},
		{
			name: "a WebFarm name longer than 50 characters is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: ` + long + `
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - appPool: web
			`,
			want: []string{"a WebFarm name may be at most 50 characters"},
		},
		// AppPool.
		{
			name: "an AppPool with neither content nor an app is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  replicas: 3
			`,
			want: []string{"an AppPool needs content, an app, or both"},
		},
		{
			name: "an environment variable with both a value and valueFrom is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				    env:
				    - name: PASSWORD
				      value: hunter2
				      valueFrom: {secretKeyRef: {name: db, key: password}}
			`,
			want: []string{"spec.app.env[0]", "set value or valueFrom, not both"},
		},
		{
			name: "valueFrom naming both a Secret and a ConfigMap is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				    env:
				    - name: PASSWORD
				      valueFrom: {secretKeyRef: {name: db, key: password}, configMapKeyRef: {name: db, key: password}}
			`,
			want: []string{"spec.app.env[0].valueFrom", "set exactly one of secretKeyRef and configMapKeyRef"},
		},
		{
			name: "an app volume whose name is not a DNS label is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				    volumes:
				    - {name: DB_Secret, mountPath: /etc/db, secret: {name: db}}
			`,
			want: []string{`spec.app.volumes[0].name`, `a volume name must be a DNS label`},
		},
		{
			name: "an app volume name longer than 59 characters is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				    volumes:
				    - {name: vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv, mountPath: /etc/db, secret: {name: db}}
			`,
			want: []string{`spec.app.volumes[0].name`, `may not be more than 59`},
		},
		{
			name: "a relative mount path is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				    volumes:
				    - {name: db, mountPath: etc/db, secret: {name: db}}
			`,
			want: []string{`spec.app.volumes[0].mountPath`, `mountPath must be an absolute path (start with /)`},
		},
		{
			name: "a mount path with a dot-dot segment is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				    volumes:
				    - {name: db, mountPath: /srv/../etc/shadow, secret: {name: db}}
			`,
			want: []string{`spec.app.volumes[0].mountPath`, `mountPath may not have '.' or '..' segments`},
		},
		{
			name: "a mount path with a trailing slash or an empty segment is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				    volumes:
				    - {name: a, mountPath: /etc/db/, secret: {name: db}}
				    - {name: b, mountPath: /etc//db, secret: {name: db}}
			`,
			want: []string{`spec.app.volumes[0].mountPath`, `spec.app.volumes[1].mountPath`, `mountPath may not hold an empty segment or end with /`},
		},
		{
			name: "a mount path over the app's writable /tmp is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				    volumes:
				    - {name: a, mountPath: /tmp, secret: {name: db}}
				    - {name: b, mountPath: /tmp/db, secret: {name: db}}
			`,
			want: []string{`spec.app.volumes[0].mountPath`, `spec.app.volumes[1].mountPath`, `mountPath may not be, lie inside or contain a path the pod mounts itself`},
		},
		{
			name: "a mount path above the API token's folder is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				    volumes:
				    - {name: db, mountPath: /var/run/secrets, secret: {name: db}}
			`,
			want: []string{`spec.app.volumes[0].mountPath`, `mountPath may not be, lie inside or contain a path the pod mounts itself`},
		},
		{
			name: "a mount path over the kubelet's /etc/hosts or the kernel's /proc is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				    volumes:
				    - {name: a, mountPath: /etc/hosts, configMap: {name: hosts}}
				    - {name: b, mountPath: /proc/self, configMap: {name: hosts}}
			`,
			want: []string{`spec.app.volumes[0].mountPath`, `spec.app.volumes[1].mountPath`, `a path the pod mounts itself`},
		},
		{
			name: "two app volumes with the same mount path are refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				    volumes:
				    - {name: a, mountPath: /etc/db, secret: {name: db}}
				    - {name: b, mountPath: /etc/db, configMap: {name: db}}
			`,
			want: []string{`spec.app.volumes`, `two volumes may not have the same mountPath`},
		},
		{
			name: "two app volumes with the same name are refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				    volumes:
				    - {name: db, mountPath: /etc/a, secret: {name: db}}
				    - {name: db, mountPath: /etc/b, secret: {name: db}}
			`,
			want: []string{`spec.app.volumes[1]: Duplicate value: {"name":"db"}`},
		},
		{
			name: "an app volume naming both a Secret and a ConfigMap is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				    volumes:
				    - {name: db, mountPath: /etc/db, secret: {name: db}, configMap: {name: db}}
			`,
			want: []string{`spec.app.volumes[0]`, `a volume needs exactly one of secret, configMap or persistentVolumeClaim`},
		},
		{
			name: "an app volume naming nothing to mount is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				    volumes:
				    - {name: db, mountPath: /etc/db}
			`,
			want: []string{`spec.app.volumes[0]`, `a volume needs exactly one of secret, configMap or persistentVolumeClaim`},
		},
		{
			name: "a writable Secret volume is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				    volumes:
				    - {name: db, mountPath: /etc/db, readOnly: false, secret: {name: db}}
			`,
			want: []string{`spec.app.volumes[0]`, `readOnly may be false only for a persistentVolumeClaim`},
		},
		{
			name: "a Secret name that is not a DNS subdomain is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				    volumes:
				    - {name: db, mountPath: /etc/db, secret: {name: Db_Password}}
			`,
			want: []string{`spec.app.volumes[0].secret.name`},
		},
		{
			name: "seventeen app volumes are refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				    volumes:
				    - {name: v0, mountPath: /etc/v0, configMap: {name: v0}}
				    - {name: v1, mountPath: /etc/v1, configMap: {name: v1}}
				    - {name: v2, mountPath: /etc/v2, configMap: {name: v2}}
				    - {name: v3, mountPath: /etc/v3, configMap: {name: v3}}
				    - {name: v4, mountPath: /etc/v4, configMap: {name: v4}}
				    - {name: v5, mountPath: /etc/v5, configMap: {name: v5}}
				    - {name: v6, mountPath: /etc/v6, configMap: {name: v6}}
				    - {name: v7, mountPath: /etc/v7, configMap: {name: v7}}
				    - {name: v8, mountPath: /etc/v8, configMap: {name: v8}}
				    - {name: v9, mountPath: /etc/v9, configMap: {name: v9}}
				    - {name: v10, mountPath: /etc/v10, configMap: {name: v10}}
				    - {name: v11, mountPath: /etc/v11, configMap: {name: v11}}
				    - {name: v12, mountPath: /etc/v12, configMap: {name: v12}}
				    - {name: v13, mountPath: /etc/v13, configMap: {name: v13}}
				    - {name: v14, mountPath: /etc/v14, configMap: {name: v14}}
				    - {name: v15, mountPath: /etc/v15, configMap: {name: v15}}
				    - {name: v16, mountPath: /etc/v16, configMap: {name: v16}}
			`,
			want: []string{`spec.app.volumes: Too many: 17: must have at most 16 items`},
		},
		{
			name: "a pool state other than Started or Stopped is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				  state: Paused
			`,
			want: []string{"spec.state", `supported values: "Started", "Stopped"`},
		},
		{
			name: "a rollout that may neither add nor stop a worker is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				  rollout:
				    maxSurge: 0
			`,
			want: []string{"spec.rollout", "maxSurge and maxUnavailable cannot both be 0"},
		},
		{
			name: "a rollout surge above 100 is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				  rollout:
				    maxSurge: 101
			`,
			want: []string{"spec.rollout.maxSurge", "should be less than or equal to 100"},
		},
		{
			name: "content with two sources is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  content:
				    configMap:
				      name: site
				    image:
				      reference: registry.example.com/site:1.4
			`,
			want: []string{"spec.content", "content needs exactly one of configMap, image or persistentVolumeClaim"},
		},
		{
			name: "content without a source is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  content: {}
			`,
			want: []string{"spec.content", "content needs exactly one of configMap, image or persistentVolumeClaim"},
		},
		{
			name: "an image reference with a space is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop 2.1
				    port: 3000
			`,
			want: []string{`spec.app.image: Invalid value: "registry.example.com/shop 2.1"`, "should match"},
		},
		{
			name: "an app on port 8080, where nginx listens, is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 8080
			`,
			want: []string{"spec.app.port", "app port may not be 8080 or 8081: nginx listens there"},
		},
		{
			name: "a gRPC app on port 8084, where nginx takes HTTP/2, is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/greeter:1
				    port: 8084
				    protocol: GRPC
			`,
			want: []string{"spec.app", "app port may not be 8084 with protocol HTTP2 or GRPC"},
		},
		{
			name: "an HTTP/2 app that would start on demand is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/api:1
				    port: 9000
				    protocol: HTTP2
			`,
			want: []string{"an app that speaks HTTP2 or GRPC cannot start on demand: set idle.onDemandStart to false"},
		},
		{
			name: "an app protocol other than HTTP, HTTP2 and GRPC is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/greeter:1
				    port: 9000
				    protocol: h2c
			`,
			want: []string{"spec.app.protocol", "Unsupported value"},
		},
		{
			name: "an app on a privileged port is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 80
			`,
			want: []string{"spec.app.port", "should be greater than or equal to 1024"},
		},
		{
			name: "an environment variable name with a dash is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				    env:
				    - name: SHOP-MODE
				      value: live
			`,
			want: []string{`spec.app.env[0].name: Invalid value: "SHOP-MODE"`, "should match"},
		},
		{
			name: "an environment variable set twice is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				    env:
				    - name: MODE
				      value: live
				    - name: MODE
				      value: test
			`,
			want: []string{"spec.app.env[1]: Duplicate value", `"name":"MODE"`},
		},
		{
			name: "minus one replicas are refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				  replicas: -1
			`,
			want: []string{"spec.replicas", "should be greater than or equal to 0"},
		},
		{
			name: "a worker CPU below 10m is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				  cpu: 5m
			`,
			want: []string{"spec.cpu", "cpu must be between 10m and 64"},
		},
		{
			name: "a worker CPU that is not a quantity gets only the quantity error",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				  cpu: lots
			`,
			want: []string{`spec.cpu: Invalid value: "lots"`, "should match"},
		},
		{
			name: "a recycling memory limit below 1Mi is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				  recycling:
				    memory: -1Mi
			`,
			want: []string{"spec.recycling.memory", "recycling memory must be between 1Mi and 1Ti"},
		},
		{
			name: "a worker memory below 16Mi is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				  memory: 8Mi
			`,
			want: []string{"spec.memory", "memory must be between 16Mi and 1Ti"},
		},
		{
			name: "a queue length of 5 is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				  queue:
				    length: 5
			`,
			want: []string{"spec.queue.length", "should be greater than or equal to 10"},
		},
		{
			name: "a queue length of 70000 is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				  queue:
				    length: 70000
			`,
			want: []string{"spec.queue.length", "should be less than or equal to 65535"},
		},
		{
			name: "a queue timeout of 50ms is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				  queue:
				    timeout: 50ms
			`,
			want: []string{"spec.queue.timeout", "queue timeout must be between 100ms and 1h"},
		},
		{
			name: "a health check interval of 0s is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				  healthCheck:
				    interval: 0s
			`,
			want: []string{"spec.healthCheck.interval", "healthCheck interval must be between 1s and 1h"},
		},
		{
			name: "a ping interval of 0s is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				  healthCheck:
				    pingInterval: 0s
			`,
			want: []string{"spec.healthCheck.pingInterval", "healthCheck pingInterval must be between 1s and 1h"},
		},
		{
			name: "a ping interval over an hour is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				  healthCheck:
				    pingInterval: 61m
			`,
			want: []string{"spec.healthCheck.pingInterval", "healthCheck pingInterval must be between 1s and 1h"},
		},
		{
			name: "a ping response time under a second is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				  healthCheck:
				    pingResponseTime: 500ms
			`,
			want: []string{"spec.healthCheck.pingResponseTime", "healthCheck pingResponseTime must be between 1s and 10m"},
		},
		{
			name: "a ping response time over ten minutes is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				  healthCheck:
				    pingResponseTime: 11m
			`,
			want: []string{"spec.healthCheck.pingResponseTime", "healthCheck pingResponseTime must be between 1s and 10m"},
		},
		{
			name: "a startup time limit of 0s is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				  healthCheck:
				    startupTimeLimit: 0s
			`,
			want: []string{"spec.healthCheck.startupTimeLimit", "healthCheck startupTimeLimit must be between 1s and 1h"},
		},
		{
			name: "a startup time limit over an hour is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				  healthCheck:
				    startupTimeLimit: 2h
			`,
			want: []string{"spec.healthCheck.startupTimeLimit", "healthCheck startupTimeLimit must be between 1s and 1h"},
		},
		{
			name: "a shutdown time limit over an hour is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				  healthCheck:
				    shutdownTimeLimit: 90m
			`,
			want: []string{"spec.healthCheck.shutdownTimeLimit", "healthCheck shutdownTimeLimit must be between 1s and 1h"},
		},
		{
			name: "a shutdown time limit as long as the drain pause is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				  healthCheck:
				    shutdownTimeLimit: 10s
			`,
			want: []string{"spec.healthCheck.shutdownTimeLimit", "healthCheck shutdownTimeLimit must be longer than the 10s drain pause a leaving worker keeps serving for"},
		},
		{
			name: "pingingEnabled that is not a boolean is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				  healthCheck:
				    pingingEnabled: "yes"
			`,
			want: []string{"spec.healthCheck.pingingEnabled", "must be of type boolean"},
		},
		{
			name: "a health check path without a leading slash is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				  healthCheck:
				    path: healthz
			`,
			want: []string{`spec.healthCheck.path: Invalid value: "healthz"`, "should match"},
		},
		{
			name: "a rapid-fail interval of 1s is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				  rapidFailProtection:
				    interval: 1s
			`,
			want: []string{"spec.rapidFailProtection.interval", "rapidFailProtection interval must be between 10s and 24h"},
		},
		{
			name: "a cpuLimit action Kill is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				  cpuLimit:
				    percent: 80
				    action: Kill
			`,
			want: []string{`spec.cpuLimit.action: Unsupported value: "Kill"`, `"Report", "Throttle", "Shutdown"`},
		},
		{
			name: "a cpuLimit without a percent is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				  cpuLimit:
				    action: Throttle
			`,
			want: []string{"spec.cpuLimit.percent: Required value"},
		},
		{
			name: "an idle timeout of 30s is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				  idle:
				    timeout: 30s
			`,
			want: []string{"spec.idle.timeout", "idle timeout must be 0s (off) or between 1m and 720h"},
		},
		{
			name: "a recycling interval of 5m is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				  recycling:
				    interval: 5m
			`,
			want: []string{"spec.recycling.interval", "recycling interval must be 0s (off) or at least 10m"},
		},
		{
			name: "autoscaling with minReplicas above maxReplicas is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				  autoscaling:
				    minReplicas: 5
				    maxReplicas: 3
			`,
			want: []string{"spec.autoscaling", "minReplicas must be less than or equal to maxReplicas"},
		},
		{
			name: "autoscaling with minReplicas above the default maxReplicas is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				  autoscaling:
				    minReplicas: 20
			`,
			want: []string{"spec.autoscaling", "minReplicas must be less than or equal to maxReplicas"},
		},
		{
			name: "fallbackReplicas below minReplicas are refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				  autoscaling:
				    minReplicas: 2
				    maxReplicas: 6
				    fallbackReplicas: 1
			`,
			want: []string{"spec.autoscaling", "fallbackReplicas must be between minReplicas and maxReplicas"},
		},
		{
			name: "fallbackReplicas above maxReplicas are refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				  autoscaling:
				    minReplicas: 2
				    maxReplicas: 6
				    fallbackReplicas: 7
			`,
			want: []string{"spec.autoscaling", "fallbackReplicas must be between minReplicas and maxReplicas"},
		},
		{
			name: "a target CPU utilisation of 0 percent is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				  autoscaling:
				    targetCPUUtilizationPercent: 0
			`,
			want: []string{"spec.autoscaling.targetCPUUtilizationPercent", "should be greater than or equal to 1"},
		},
		{
			name: "a target CPU utilisation of 101 percent is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				  autoscaling:
				    targetCPUUtilizationPercent: 101
			`,
			want: []string{"spec.autoscaling.targetCPUUtilizationPercent", "should be less than or equal to 100"},
		},
		{
			name: "an AppPool name longer than 50 characters is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: ` + long + `
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
			`,
			want: []string{"an AppPool name may be at most 50 characters"},
		},
		{
			name: "an AppPool name with a dot is refused (routes could not name it)",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: web.pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
			`,
			want: []string{"an AppPool name must be a DNS label"},
		},
		// CachePolicy.
		{
			name: "a frequent-hit threshold of 0 is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: CachePolicy
				metadata:
				  name: cache
				spec:
				  frequentHitThreshold: 0
			`,
			want: []string{"spec.frequentHitThreshold", "should be greater than or equal to 1"},
		},
		{
			name: "a frequent-hit period written in days is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: CachePolicy
				metadata:
				  name: cache
				spec:
				  frequentHitPeriod: 1d
			`,
			want: []string{`spec.frequentHitPeriod: Invalid value: "1d"`, "should match"},
		},
		{
			name: "an object TTL of 0s is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: CachePolicy
				metadata:
				  name: cache
				spec:
				  objectTTL: 0s
			`,
			want: []string{"spec.objectTTL", "objectTTL must be between 1s and 720h"},
		},
		{
			name: "a maxObjectSize larger than memorySize is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: CachePolicy
				metadata:
				  name: cache
				spec:
				  maxObjectSize: 8Mi
				  memorySize: 4Mi
			`,
			want: []string{"maxObjectSize must not exceed memorySize"},
		},
		{
			name: "a maxObjectSize larger than the default memorySize is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: CachePolicy
				metadata:
				  name: cache
				spec:
				  maxObjectSize: 128Mi
			`,
			want: []string{"maxObjectSize must not exceed memorySize"},
		},
		{
			name: "a memorySize above 64Gi is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: CachePolicy
				metadata:
				  name: cache
				spec:
				  memorySize: 128Gi
			`,
			want: []string{"spec.memorySize", "memorySize must be between 1Mi and 64Gi"},
		},
		{
			name: "a clientCache mode Always is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: CachePolicy
				metadata:
				  name: cache
				spec:
				  clientCache:
				    mode: Always
			`,
			want: []string{`spec.clientCache.mode: Unsupported value: "Always"`, `"NoControl", "DisableCache", "UseMaxAge", "UseExpires"`},
		},
		{
			name: "clientCache mode UseMaxAge without maxAge is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: CachePolicy
				metadata:
				  name: cache
				spec:
				  clientCache:
				    mode: UseMaxAge
			`,
			want: []string{"spec.clientCache", "maxAge is required for modes UseMaxAge and UseExpires"},
		},
		{
			name: "clientCache mode UseExpires without maxAge is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: CachePolicy
				metadata:
				  name: cache
				spec:
				  clientCache:
				    mode: UseExpires
			`,
			want: []string{"spec.clientCache", "maxAge is required for modes UseMaxAge and UseExpires"},
		},
		{
			name: "zero cache replicas are refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: CachePolicy
				metadata:
				  name: cache
				spec:
				  replicas: 0
			`,
			want: []string{"spec.replicas", "should be greater than or equal to 1"},
		},
		{
			name: "an empty object TTL is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: CachePolicy
				metadata:
				  name: cache
				spec:
				  objectTTL: ""
			`,
			want: []string{"spec.objectTTL", "should be at least 1 chars long"},
		},
		{
			name: "a cache memory size that is not a quantity gets only the quantity error",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: CachePolicy
				metadata:
				  name: cache
				spec:
				  memorySize: lots
			`,
			want: []string{`spec.memorySize: Invalid value: "lots"`, "should match"},
		},
		{
			name: "a cache CPU of 0 is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: CachePolicy
				metadata:
				  name: cache
				spec:
				  cpu: 0
			`,
			want: []string{"spec.cpu", "cpu must be between 10m and 64"},
		},
		{
			name: "a CachePolicy name with a dot is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: CachePolicy
				metadata:
				  name: shop.cache
			`,
			want: []string{"a CachePolicy name must be a DNS label"},
		},
		{
			name: "a CachePolicy name longer than 50 characters is refused",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: CachePolicy
				metadata:
				  name: ` + long + `
			`,
			want: []string{"a CachePolicy name may be at most 50 characters"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj, err := apply(t, ns, tc.manifest)
			if err == nil {
				remove(t, obj)
				t.Fatalf("the API server accepted the manifest; want an error containing %q", tc.want)
			}
			reason := tc.reason
			if reason == "" {
				reason = metav1.StatusReasonInvalid
			}
			if got := apierrors.ReasonForError(err); got != reason {
				t.Errorf("want a %s error, got %s: %v", reason, got, err)
			}
			msg := err.Error()
			t.Logf("the API server says: %s", msg)
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("the error does not contain %q:\n%s", w, msg)
				}
			}
			for _, bad := range celFailures {
				if strings.Contains(msg, bad) {
					t.Errorf("the error contains %q, a rule that failed to run:\n%s", bad, msg)
				}
			}
		})
	}
}

func TestManifestsThatAreAccepted(t *testing.T) {
	ns := newNamespace(t)
	cases := []struct {
		name     string
		manifest string
	}{
		{
			name: "a minimal WebFarm is accepted",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - appPool: web
			`,
		},
		{
			name: "a farm behind load balancers that send the PROXY protocol, trusting their networks, is accepted",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - appPool: web
				  frontend:
				    clientAddress:
				      proxyProtocol: true
				      trustedNetworks: [10.0.0.0/8, 192.168.0.0/16, "2001:db8::/32"]
			`,
		},
		{
			name: "a gRPC app is accepted",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: grpc
				spec:
				  app:
				    image: registry.example.com/greeter:1
				    port: 9000
				    protocol: GRPC
				  idle:
				    onDemandStart: false
			`,
		},
		{
			name: "an HTTP app may use port 8084",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: http-8084
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 8084
			`,
		},
		{
			name: "a farm with HTTPS sites, HSTS, a default site, TLS 1.3 and a SameSite=None cookie is accepted",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com, "*.www.example.com"]
				    routes:
				    - appPool: web
				    tls:
				      secretName: www.example.com-tls
				      hsts:
				        maxAgeSeconds: 31536000
				        includeSubDomains: true
				  - name: blog
				    hosts: [blog.example.com]
				    routes:
				    - appPool: web
				    tls:
				      secretName: blog-tls
				  frontend:
				    service:
				      httpsPort: 8443
				    tls:
				      minVersion: "1.3"
				      defaultSite: blog
				  sessionAffinity:
				    type: Cookie
				    cookie:
				      sameSite: None
			`,
		},
		{
			name: "a minimal AppPool serving a ConfigMap is accepted",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  content:
				    configMap:
				      name: site
			`,
		},
		{
			name: "a minimal AppPool running only an app is accepted",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
			`,
		},
		{
			name: "a CachePolicy without a spec is accepted",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: CachePolicy
				metadata:
				  name: cache
			`,
		},
		{
			name: "a wildcard host name and several sites are accepted",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [example.com, www.example.com]
				    routes:
				    - appPool: web
				  - name: tenants
				    hosts: ["*.example.com", "*.shop.example.org", 1-2-3.example.net]
				    routes:
				    - appPool: tenants
			`,
		},
		{
			name: "path prefixes with dots, dashes, underscores, tildes and a trailing slash are accepted",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - pathPrefix: /
				      appPool: web
				    - pathPrefix: /shop/
				      appPool: shop
				      cachePolicy: shop-cache
				    - pathPrefix: /a.b/c-d_e~f
				      appPool: web
				    - pathPrefix: /..hidden
				      appPool: web
				    - pathPrefix: /.well-known/acme-challenge
				      appPool: web
				    - pathPrefix: /v1.../x..y/~user
				      appPool: web
			`,
		},
		{
			name: "affinity type None is accepted",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - appPool: web
				  sessionAffinity:
				    type: None
			`,
		},
		{
			name: "affinity type ClientIP is accepted",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - appPool: web
				  sessionAffinity:
				    type: ClientIP
			`,
		},
		{
			name: "affinity type ClassC is accepted",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - appPool: web
				  sessionAffinity:
				    type: ClassC
			`,
		},
		{
			name: "affinity type Cookie with a named, year-long cookie is accepted",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - appPool: web
				  sessionAffinity:
				    type: Cookie
				    cookie:
				      name: ASP.NET_SessionId-2
				      ttl: 8760h
			`,
		},
		{
			name: "a WebFarm with every field set and a 50-character name is accepted",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: ` + strings.Repeat("f", 50) + `
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    maxBandwidthBytesPerSecond: 1048576
				    routes:
				    - pathPrefix: /
				      appPool: web
				      cachePolicy: web-cache
				  frontend:
				    replicas: 3
				    service:
				      type: NodePort
				      port: 8000
				      nodePort: 30080
				    connectionTimeout: 1h
				    requestTimeout: 1m30s
				    webSocketIdleTimeout: 1h
				    keepAlive: false
				    compression: true
				    cpu: "1"
				    memory: 512Mi
				    accessLog:
				      enabled: true
				      samplePercent: 1
				  sessionAffinity:
				    type: ClientIP
				  unavailableResponse: L4
			`,
		},
		{
			name: "an access log turned off, or sampling every request, is accepted",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: WebFarm
				metadata:
				  name: farm
				spec:
				  sites:
				  - name: www
				    hosts: [www.example.com]
				    routes:
				    - appPool: web
				  frontend:
				    accessLog:
				      enabled: false
				      samplePercent: 100
			`,
		},
		{
			name: "durations that combine hours, minutes, seconds and milliseconds are accepted",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: 2nd-pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				  queue:
				    timeout: 1m30s500ms
				  healthCheck:
				    interval: 59m59s
				    timeout: 4m59s999ms
				  rapidFailProtection:
				    interval: 23h59m
				  recycling:
				    interval: 1740m
				  autoscaling:
				    stabilizationWindow: 86400s
			`,
		},
		{
			name: "a full AppPool with every section is accepted",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  content:
				    image:
				      reference: registry.example.com/site:1.4@sha256:0123456789abcdef
				      path: /srv/www
				  app:
				    image: registry.example.com/shop:2.1
				    port: 8082
				    args: [--listen, ":8082"]
				    env:
				    - name: SHOP_MODE
				      value: live
				    - name: _DEBUG
				  replicas: 0
				  cpu: 250m
				  memory: 1Gi
				  maxConcurrentRequests: 500
				  queue:
				    length: 65535
				    timeout: 100ms
				  healthCheck:
				    path: /healthz
				    interval: 10s
				    timeout: 2s
				    failureThreshold: 5
				    pingingEnabled: false
				    pingInterval: 1s
				    pingResponseTime: 10m
				    startupTimeLimit: 1h
				    shutdownTimeLimit: 11s
				  rapidFailProtection:
				    enabled: false
				    maxFailures: 10
				    interval: 10m
				  cpuLimit:
				    percent: 90
				    interval: 1m
				    action: Throttle
				  idle:
				    timeout: 0s
				    onDemandStart: false
				  recycling:
				    interval: 0s
				    requests: 100000
				    memory: 900Mi
				  autoscaling:
				    minReplicas: 2
				    maxReplicas: 20
				    targetCPUUtilizationPercent: 50
				    forecastRequestsPerSecond: 1500
				    stabilizationWindow: 10m
				    fallbackReplicas: 4
			`,
		},
		{
			name: "an AppPool serving a PersistentVolumeClaim with a long idle timeout is accepted",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  content:
				    persistentVolumeClaim:
				      claimName: site.files
				  idle:
				    timeout: 720h
				  recycling:
				    interval: 10m
			`,
		},
		{
			name: "a CachePolicy with tuned IIS settings is accepted",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: CachePolicy
				metadata:
				  name: cache
				spec:
				  frequentHitThreshold: 1
				  frequentHitPeriod: 1m
				  objectTTL: 180s
				  maxObjectSize: 1Mi
				  memorySize: 1Gi
				  cacheQueryStrings: true
				  clientCache:
				    mode: UseMaxAge
				    maxAge: 24h
				  replicas: 3
				  cpu: 500m
			`,
		},
		{
			name: "an app mounting a Secret, an optional ConfigMap and a writable claim at paths beside the pod's own is accepted",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: AppPool
				metadata:
				  name: pool
				spec:
				  app:
				    image: registry.example.com/shop:2.1
				    port: 3000
				    volumes:
				    - {name: db, mountPath: /etc/shop/db, secret: {name: shop-db.example}}
				    - {name: settings, mountPath: /etc/shop/settings, configMap: {name: shop-settings, optional: true}}
				    - {name: uploads, mountPath: /var/shop/uploads, readOnly: false, persistentVolumeClaim: {claimName: shop-uploads}}
				    - {name: tmpfiles, mountPath: /tmpfiles, configMap: {name: tmpfiles}}
				    - {name: runtime, mountPath: /var/run/shop, configMap: {name: runtime}}
			`,
		},
		{
			name: "a CachePolicy whose largest object fills its memory and that sets Expires is accepted",
			manifest: `
				apiVersion: webfarm.dev/v1alpha1
				kind: CachePolicy
				metadata:
				  name: cache
				spec:
				  maxObjectSize: 1Mi
				  memorySize: 1Mi
				  clientCache:
				    mode: UseExpires
				    maxAge: 1h30m
			`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj, err := apply(t, ns, tc.manifest)
			if err != nil {
				t.Fatalf("the API server refused the manifest: %v", err)
			}
			remove(t, obj)
		})
	}
}

// TestAPIServerFillsInIISDefaults creates minimal objects and reads them back:
// the API server must fill in the IIS defaults, and they must equal the
// constants the model uses for objects built in code.
func TestAPIServerFillsInIISDefaults(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	create := func(manifest string, into client.Object) {
		t.Helper()
		obj, err := apply(t, ns, manifest)
		if err != nil {
			t.Fatalf("creating a minimal %s: %v", obj.GetKind(), err)
		}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), into); err != nil {
			t.Fatalf("reading %s %s back: %v", obj.GetKind(), obj.GetName(), err)
		}
	}
	var pool, scaled v1.AppPool
	create(`
		apiVersion: webfarm.dev/v1alpha1
		kind: AppPool
		metadata:
		  name: pool
		spec:
		  content:
		    configMap:
		      name: site
	`, &pool)
	create(`
		apiVersion: webfarm.dev/v1alpha1
		kind: AppPool
		metadata:
		  name: scaled
		spec:
		  content:
		    image:
		      reference: registry.example.com/site:1.4
		  cpuLimit:
		    percent: 80
		  autoscaling: {}
	`, &scaled)
	var cache v1.CachePolicy
	create(`
		apiVersion: webfarm.dev/v1alpha1
		kind: CachePolicy
		metadata:
		  name: cache
	`, &cache)
	var farm, cookieFarm v1.WebFarm
	create(`
		apiVersion: webfarm.dev/v1alpha1
		kind: WebFarm
		metadata:
		  name: farm
		spec:
		  sites:
		  - name: www
		    hosts: [www.example.com]
		    routes:
		    - appPool: pool
	`, &farm)
	create(`
		apiVersion: webfarm.dev/v1alpha1
		kind: WebFarm
		metadata:
		  name: cookie-farm
		spec:
		  sites:
		  - name: www
		    hosts: [www.example.com]
		    routes:
		    - appPool: pool
		  sessionAffinity:
		    type: Cookie
		    cookie: {}
	`, &cookieFarm)
	// accessLog has no default of its own (objects stored before it existed
	// read the same); the model logs every request without it.
	var loggedFarm v1.WebFarm
	create(`
		apiVersion: webfarm.dev/v1alpha1
		kind: WebFarm
		metadata:
		  name: logged-farm
		spec:
		  sites:
		  - name: www
		    hosts: [www.example.com]
		    routes:
		    - appPool: pool
		  frontend:
		    accessLog: {}
	`, &loggedFarm)

	deref32 := func(p *int32) any {
		if p == nil {
			return "<unset>"
		}
		return *p
	}
	derefBool := func(p *bool) any {
		if p == nil {
			return "<unset>"
		}
		return *p
	}
	qty := func(q *resource.Quantity) string {
		if q == nil {
			return "<unset>"
		}
		return q.String()
	}
	canon := func(s string) string { q := resource.MustParse(s); return q.String() }

	var autoscaling v1.Autoscaling
	if scaled.Spec.Autoscaling == nil {
		t.Errorf("spec.autoscaling of the pool with autoscaling: {} was dropped")
	} else {
		autoscaling = *scaled.Spec.Autoscaling
	}
	cpuLimit := scaled.Spec.CPULimit
	if cpuLimit.Percent == 0 {
		t.Errorf("spec.cpuLimit was dropped")
	}
	var cookie v1.AffinityCookieSpec
	if cookieFarm.Spec.SessionAffinity.Cookie == nil {
		t.Errorf("spec.sessionAffinity.cookie of the cookie farm was dropped")
	} else {
		cookie = *cookieFarm.Spec.SessionAffinity.Cookie
	}
	var imagePath string
	if c := scaled.Spec.Content; c != nil && c.Image.Reference != "" {
		imagePath = c.Image.Path
	} else {
		t.Errorf("spec.content.image of the scaled pool was dropped")
	}
	var route v1.Route
	if len(farm.Spec.Sites) == 1 && len(farm.Spec.Sites[0].Routes) == 1 {
		route = farm.Spec.Sites[0].Routes[0]
	} else {
		t.Errorf("the farm's sites changed: %+v", farm.Spec.Sites)
	}

	cases := []struct {
		field     string
		got, want any
	}{
		// AppPool.
		{"AppPool spec.replicas", deref32(pool.Spec.Replicas), int32(v1.DefaultPoolReplicas)},
		{"AppPool spec.cpu", qty(pool.Spec.CPU), canon(v1.DefaultPoolCPU)},
		{"AppPool spec.memory", qty(pool.Spec.Memory), canon(v1.DefaultPoolMemory)},
		{"AppPool spec.maxConcurrentRequests", pool.Spec.MaxConcurrentRequests, int32(v1.DefaultMaxConcurrent)},
		{"AppPool spec.queue.length", pool.Spec.Queue.Length, int32(v1.DefaultQueueLength)},
		{"AppPool spec.queue.length is IIS's 1000", pool.Spec.Queue.Length, int32(1000)},
		{"AppPool spec.queue.timeout stays unset", string(pool.Spec.Queue.Timeout), ""},
		{"AppPool spec.healthCheck.path", string(pool.Spec.HealthCheck.Path), v1.DefaultHealthPath},
		{"AppPool spec.healthCheck.interval", string(pool.Spec.HealthCheck.Interval), v1.DefaultHealthInterval},
		{"AppPool spec.healthCheck.interval is IIS's 30s", string(pool.Spec.HealthCheck.Interval), "30s"},
		{"AppPool spec.healthCheck.timeout", string(pool.Spec.HealthCheck.Timeout), v1.DefaultHealthTimeout},
		{"AppPool spec.healthCheck.failureThreshold", pool.Spec.HealthCheck.FailureThreshold, int32(v1.DefaultHealthFailures)},
		{"AppPool spec.healthCheck.pingingEnabled is IIS's true", derefBool(pool.Spec.HealthCheck.PingingEnabled), true},
		{"AppPool spec.healthCheck.pingInterval", string(pool.Spec.HealthCheck.PingInterval), v1.DefaultPingInterval},
		{"AppPool spec.healthCheck.pingInterval is IIS's 30s", string(pool.Spec.HealthCheck.PingInterval), "30s"},
		{"AppPool spec.healthCheck.pingResponseTime", string(pool.Spec.HealthCheck.PingResponseTime), v1.DefaultPingResponseTime},
		{"AppPool spec.healthCheck.pingResponseTime is IIS's 90s", string(pool.Spec.HealthCheck.PingResponseTime), "90s"},
		{"AppPool spec.healthCheck.startupTimeLimit", string(pool.Spec.HealthCheck.StartupTimeLimit), v1.DefaultStartupTimeLimit},
		{"AppPool spec.healthCheck.startupTimeLimit is IIS's 90s", string(pool.Spec.HealthCheck.StartupTimeLimit), "90s"},
		{"AppPool spec.healthCheck.shutdownTimeLimit", string(pool.Spec.HealthCheck.ShutdownTimeLimit), v1.DefaultShutdownTimeLimit},
		{"AppPool spec.healthCheck.shutdownTimeLimit is IIS's 90s", string(pool.Spec.HealthCheck.ShutdownTimeLimit), "90s"},
		{"AppPool spec.rapidFailProtection.enabled", derefBool(pool.Spec.RapidFailProtection.Enabled), true},
		{"AppPool spec.rapidFailProtection.maxFailures", pool.Spec.RapidFailProtection.MaxFailures, int32(v1.DefaultRapidFailMax)},
		{"AppPool spec.rapidFailProtection.maxFailures is IIS's 5", pool.Spec.RapidFailProtection.MaxFailures, int32(5)},
		{"AppPool spec.rapidFailProtection.interval", string(pool.Spec.RapidFailProtection.Interval), v1.DefaultRapidFailInterval},
		{"AppPool spec.rapidFailProtection.interval is IIS's 5m", string(pool.Spec.RapidFailProtection.Interval), "5m"},
		{"AppPool spec.cpuLimit stays unset", pool.Spec.CPULimit == (v1.CPULimit{}), true},
		{"AppPool spec.idle.timeout", string(pool.Spec.Idle.Timeout), v1.DefaultIdleTimeout},
		{"AppPool spec.idle.timeout is IIS's 20m", string(pool.Spec.Idle.Timeout), "20m"},
		{"AppPool spec.idle.onDemandStart", derefBool(pool.Spec.Idle.OnDemandStart), true},
		{"AppPool spec.recycling.interval", string(pool.Spec.Recycling.Interval), v1.DefaultRecycleInterval},
		{"AppPool spec.recycling.interval is IIS's 29h", string(pool.Spec.Recycling.Interval), "29h"},
		{"AppPool spec.autoscaling stays unset", pool.Spec.Autoscaling == nil, true},
		{"AppPool spec.content.image.path", imagePath, v1.DefaultImageContentPath},
		{"AppPool spec.cpuLimit.interval", string(cpuLimit.Interval), "5m"},
		{"AppPool spec.cpuLimit.action", cpuLimit.Action, v1.CPULimitReport},
		{"AppPool spec.autoscaling.minReplicas", autoscaling.MinReplicas, int32(v1.DefaultMinReplicas)},
		{"AppPool spec.autoscaling.maxReplicas", autoscaling.MaxReplicas, int32(v1.DefaultMaxReplicas)},
		{"AppPool spec.autoscaling.targetCPUUtilizationPercent", autoscaling.TargetCPUUtilizationPercent, int32(v1.DefaultTargetCPUPercent)},
		{"AppPool spec.autoscaling.targetCPUUtilizationPercent is 30", autoscaling.TargetCPUUtilizationPercent, int32(30)},
		{"AppPool spec.autoscaling.stabilizationWindow", string(autoscaling.StabilizationWindow), v1.DefaultStabilization},
		{"AppPool spec.autoscaling.fallbackReplicas stays unset", deref32(autoscaling.FallbackReplicas), "<unset>"},
		// CachePolicy.
		{"CachePolicy spec.frequentHitThreshold", cache.Spec.FrequentHitThreshold, int32(v1.DefaultHitThreshold)},
		{"CachePolicy spec.frequentHitThreshold is IIS's 2", cache.Spec.FrequentHitThreshold, int32(2)},
		{"CachePolicy spec.frequentHitPeriod", string(cache.Spec.FrequentHitPeriod), v1.DefaultHitPeriod},
		{"CachePolicy spec.frequentHitPeriod is IIS's 10s", string(cache.Spec.FrequentHitPeriod), "10s"},
		{"CachePolicy spec.objectTTL", string(cache.Spec.ObjectTTL), v1.DefaultObjectTTL},
		{"CachePolicy spec.objectTTL is IIS's 30s", string(cache.Spec.ObjectTTL), "30s"},
		{"CachePolicy spec.maxObjectSize", qty(cache.Spec.MaxObjectSize), canon(v1.DefaultMaxObjectSize)},
		{"CachePolicy spec.maxObjectSize is IIS's 256Ki", qty(cache.Spec.MaxObjectSize), "256Ki"},
		{"CachePolicy spec.memorySize", qty(cache.Spec.MemorySize), canon(v1.DefaultCacheMemory)},
		{"CachePolicy spec.memorySize is 64Mi", qty(cache.Spec.MemorySize), "64Mi"},
		{"CachePolicy spec.cacheQueryStrings", derefBool(cache.Spec.CacheQueryStrings), false},
		{"CachePolicy spec.clientCache.mode", cache.Spec.ClientCache.Mode, v1.ClientCacheNoControl},
		{"CachePolicy spec.replicas", cache.Spec.Replicas, int32(v1.DefaultCacheReplicas)},
		{"CachePolicy spec.cpu", qty(cache.Spec.CPU), canon(v1.DefaultCacheCPU)},
		// WebFarm.
		{"WebFarm spec.frontend.replicas", farm.Spec.Frontend.Replicas, int32(v1.DefaultFrontendReplicas)},
		{"WebFarm spec.frontend.replicas is 2", farm.Spec.Frontend.Replicas, int32(2)},
		{"WebFarm spec.frontend.service.type", farm.Spec.Frontend.Service.Type, v1.ServiceType("ClusterIP")},
		{"WebFarm spec.frontend.service.port", farm.Spec.Frontend.Service.Port, int32(v1.DefaultFrontendPort)},
		{"WebFarm spec.frontend.connectionTimeout", string(farm.Spec.Frontend.ConnectionTimeout), v1.DefaultConnectionTimeout},
		{"WebFarm spec.frontend.connectionTimeout is IIS's 120s", string(farm.Spec.Frontend.ConnectionTimeout), "120s"},
		{"WebFarm spec.frontend.requestTimeout", string(farm.Spec.Frontend.RequestTimeout), v1.DefaultRequestTimeout},
		{"WebFarm spec.frontend.webSocketIdleTimeout", string(farm.Spec.Frontend.WebSocketIdleTimeout), v1.DefaultWebSocketIdle},
		{"WebFarm spec.frontend.keepAlive", derefBool(farm.Spec.Frontend.KeepAlive), true},
		{"WebFarm spec.frontend.compression", derefBool(farm.Spec.Frontend.Compression), false},
		{"WebFarm spec.frontend.accessLog is left unset", farm.Spec.Frontend.AccessLog, v1.AccessLog{}},
		{"WebFarm spec.frontend.accessLog.enabled", derefBool(loggedFarm.Spec.Frontend.AccessLog.Enabled), true},
		{"WebFarm spec.frontend.accessLog.samplePercent", loggedFarm.Spec.Frontend.AccessLog.SamplePercent, int32(v1.DefaultAccessLogPercent)},
		{"WebFarm spec.frontend.cpu", qty(farm.Spec.Frontend.CPU), canon(v1.DefaultFrontendCPU)},
		{"WebFarm spec.frontend.memory", qty(farm.Spec.Frontend.Memory), canon(v1.DefaultFrontendMemory)},
		{"WebFarm spec.unavailableResponse", farm.Spec.UnavailableResponse, v1.UnavailableL7},
		{"WebFarm spec.sessionAffinity.type", farm.Spec.SessionAffinity.Type, v1.AffinityNone},
		{"WebFarm spec.sessionAffinity.cookie stays unset", farm.Spec.SessionAffinity.Cookie == nil, true},
		{"WebFarm spec.sites[0].routes[0].pathPrefix", string(route.PathPrefix), v1.DefaultPathPrefix},
		{"WebFarm spec.sessionAffinity.cookie.name", cookie.Name, v1.DefaultAffinityCookieName},
		{"WebFarm spec.sessionAffinity.cookie.ttl", string(cookie.TTL), "0s"},
	}
	for _, tc := range cases {
		t.Run(tc.field, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("%s = %v (%T), want %v (%T)", tc.field, tc.got, tc.got, tc.want, tc.want)
			}
		})
	}
}

// An app volume the user says nothing more of is read-only, and its Secret
// or ConfigMap is not optional: the worker waits for it.
func TestAnAppVolumeIsReadOnlyAndNotOptionalByDefault(t *testing.T) {
	ns := newNamespace(t)
	obj, err := apply(t, ns, `
		apiVersion: webfarm.dev/v1alpha1
		kind: AppPool
		metadata:
		  name: pool
		spec:
		  app:
		    image: registry.example.com/shop:2.1
		    port: 3000
		    volumes:
		    - {name: db, mountPath: /etc/db, secret: {name: db}}
		    - {name: settings, mountPath: /etc/settings, configMap: {name: settings}}
		    - {name: files, mountPath: /srv/files, persistentVolumeClaim: {claimName: files}}
	`)
	if err != nil {
		t.Fatal(err)
	}
	var pool v1.AppPool
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), &pool); err != nil {
		t.Fatal(err)
	}
	for _, v := range pool.Spec.App.Volumes {
		if v.ReadOnly == nil || !*v.ReadOnly {
			t.Errorf("volume %s: readOnly %v, want true", v.Name, v.ReadOnly)
		}
	}
	db, settings := pool.Spec.App.Volumes[0].Secret, pool.Spec.App.Volumes[1].ConfigMap
	if db.Optional == nil || *db.Optional || settings.Optional == nil || *settings.Optional {
		t.Errorf("optional: Secret %v, ConfigMap %v; want false for both", db.Optional, settings.Optional)
	}
}
