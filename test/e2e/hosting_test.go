//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"webfarm.dev/operator/test/e2e/framework"
)

// providerFarm is a hosting provider's infrastructure namespace: a shared
// pool whose content is the folder of this host that a claim of its own
// mounts (see hostingContent), a farm with the provider's own site, and the
// Gateway its tenants attach to (namespaces labelled hosting=<tenantLabel>),
// with the grant that lets their routes use the shared pool.
func providerFarm(class, infra, volume, content string, tenants ...string) string {
	var from []string
	for _, ns := range tenants {
		from = append(from, fmt.Sprintf("  - {group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: %s}", ns))
	}
	return hostPathPool("shared", "tenants", volume, infra, content) + fmt.Sprintf(`apiVersion: webfarm.dev/v1alpha1
kind: WebFarm
metadata: {name: hosting}
spec:
  sites:
  - name: provider
    hosts: [www.provider.example]
    routes: [{pathPrefix: /, appPool: shared}]
  frontend: {replicas: 1, cpu: 200m}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: public}
spec:
  gatewayClassName: %[2]s
  infrastructure:
    parametersRef: {group: webfarm.dev, kind: WebFarm, name: hosting}
  listeners:
  - name: http
    port: 80
    protocol: HTTP
    allowedRoutes:
      namespaces:
        from: Selector
        selector: {matchLabels: {hosting: %[1]s}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: ReferenceGrant
metadata: {name: tenants-use-shared-pools}
spec:
  from:
%[3]s
  to: [{group: webfarm.dev, kind: AppPool}]
`, infra, class, strings.Join(from, "\n"))
}

// tenantMediaTypes are files every tenant's site holds, and the
// Content-Type each must be served with.
var tenantMediaTypes = map[string]string{"clip.mp4": "video/mp4", "module.wasm": "application/wasm", "photo.avif": "image/avif", "table.csv": "text/csv"}

// tenantOf is the tenant (an index of the test's tenants) that owns site i.
func tenantOf(i int) int { return i % 3 }

// defaultDocument is site i's default document: the pool's first for odd
// sites, one the site names for even ones.
func defaultDocument(i int) string {
	if i%2 == 0 {
		return "default.htm"
	}
	return "index.html"
}

// tenantContent writes the shared pool's content as a hosting provider lays
// it out, into a folder of this host that the node mounts (the local
// cluster runs on this host): the provider's own site at the root, and a
// folder per tenant namespace with the tenant's own index page and its
// sites (site-NN: a default document, a 404 page and a file of each media
// type), one more than the test starts with, for the site it adds.
func tenantContent(t *testing.T, tenants []string) string {
	t.Helper()
	files := map[string]string{"index.html": "shared pool\n"}
	for _, ns := range tenants {
		files[ns+"/index.html"] = ns + " folder\n"
	}
	for i := 1; i <= hostingSites+1; i++ {
		site := tenants[tenantOf(i)] + "/" + siteName(i) + "/"
		files[site+defaultDocument(i)] = siteName(i) + " home\n"
		files[site+"errors/404.html"] = siteName(i) + " has no such page\n"
		for name := range tenantMediaTypes {
			files[site+name] = siteName(i) + " " + name + "\n"
		}
	}
	return hostFolder(t, "webfarm-e2e-tenants-", files)
}

// tenantSite is a tenant's site i: its SiteContent (its folder, its
// default document, its 404 page) and the HTTPRoute that names it for
// its host, to the provider's shared pool.
func tenantSite(i int, infra string) string {
	documents := ""
	if defaultDocument(i) != "index.html" {
		documents = ", defaultDocuments: [" + defaultDocument(i) + "]"
	}
	return fmt.Sprintf(`apiVersion: webfarm.dev/v1alpha1
kind: SiteContent
metadata: {name: %[1]s}
spec: {directory: %[1]s%[3]s, errorPages: [{statusCode: 404, path: /errors/404.html}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: %[1]s}
spec:
  parentRefs: [{name: public, namespace: %[2]s}]
  hostnames: [%[1]s.example]
  rules:
  - filters: [{type: ExtensionRef, extensionRef: {group: webfarm.dev, kind: SiteContent, name: %[1]s}}]
    backendRefs: [{group: webfarm.dev, kind: AppPool, name: shared, namespace: %[2]s}]
---
`, siteName(i), infra, documents)
}

// tenantRoute is a tenant's HTTPRoute for hosts, to the provider's shared pool.
func tenantRoute(name, infra string, hosts ...string) string {
	return fmt.Sprintf(`apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: %s}
spec:
  parentRefs: [{name: public, namespace: %s}]
  hostnames: [%s]
  rules:
  - backendRefs: [{group: webfarm.dev, kind: AppPool, name: shared, namespace: %s}]
`, name, infra, strings.Join(hosts, ", "), infra)
}

// Shared hosting through Gateway API on the local cluster: three tenants'
// namespaces attach routes to a provider's Gateway and are served by its
// farm's shared pool, each from its own folder of the pool's content;
// fifty tenants' sites, each an HTTPRoute naming its SiteContent, serve
// their own files with their media types, default documents and 404
// pages; a site added restarts no worker; a namespace the Gateway does not
// select is refused with its reason; a host two tenants claim goes to the
// older route; a tenant removing its route removes only its hosts; no
// route change restarts the pool's worker.
func TestTenantsShareAFarmThroughGatewayAPI(t *testing.T) {
	t.Parallel() // it mostly waits: it runs beside the other waiting tests
	infra := cluster.Namespace(t)
	class := "webfarm-" + infra
	if _, err := cluster.Kubectl.RunWithInput(context.Background(), fmt.Sprintf(`apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: %s}
spec: {controllerName: webfarm.dev/gateway-controller}
`, class), "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cluster.Run(t, "delete", "gatewayclass", class, "--ignore-not-found", "--wait=false") })
	tenants := []string{cluster.Namespace(t), cluster.Namespace(t), cluster.Namespace(t)}
	outsider := cluster.Namespace(t)
	for _, ns := range tenants {
		cluster.Run(t, "label", "namespace", ns, "hosting="+infra)
	}
	volume := "tenants-" + infra // volumes are cluster-wide
	t.Cleanup(func() {
		_, _ = cluster.Kubectl.Run(context.Background(), "delete", "persistentvolume", volume, "--ignore-not-found", "--wait=false")
	})
	cluster.Apply(t, infra, providerFarm(class, infra, volume, tenantContent(t, tenants), append(tenants, outsider)...))
	cluster.WaitReady(t, infra, 3*time.Minute, "webfarm/hosting", "apppool/shared")
	workerState := func() string {
		return strings.TrimSpace(cluster.Run(t, "get", "pods", "-n", infra, "-l", "app.kubernetes.io/component=pool,app.kubernetes.io/instance=shared",
			"-o", `jsonpath={range .items[*]}{.metadata.uid} restarts {.status.containerStatuses[*].restartCount}{"\n"}{end}`))
	}
	worker := workerState()
	front := cluster.ServiceURL(t, infra, "hosting-frontend") + "/"
	serves := func(host, want string) func() error {
		return func() error {
			r, err := framework.HTTPGet(front, "Host: "+host)
			if err != nil {
				return err
			}
			if got := fmt.Sprintf("%d %s", r.Status, strings.TrimSpace(r.Body)); !strings.HasPrefix(got, want) {
				return fmt.Errorf("Host %s: %q, want %q", host, got, want)
			}
			return nil
		}
	}
	routeCondition := func(ns, name, typ string) string {
		return strings.TrimSpace(cluster.Run(t, "get", "httproute", "-n", ns, name, "-o",
			fmt.Sprintf(`jsonpath={.status.parents[0].conditions[?(@.type=="%s")].status}/{.status.parents[0].conditions[?(@.type=="%s")].reason}`, typ, typ)))
	}
	expectCondition := func(ns, name, typ, want string) func() error {
		return func() error {
			if got := routeCondition(ns, name, typ); got != want {
				return fmt.Errorf("HTTPRoute %s/%s %s: %q, want %q", ns, name, typ, got, want)
			}
			return nil
		}
	}

	cluster.Apply(t, tenants[0], tenantRoute("shop", infra, "a.example"))
	framework.Eventually(t, time.Minute, expectCondition(tenants[0], "shop", "Accepted", "True/Accepted"))
	// Creation times have a second's resolution: the next tenant's claim
	// of a.example must be the newer.
	framework.Eventually(t, 10*time.Second, func() error {
		created, err := time.Parse(time.RFC3339, strings.TrimSpace(cluster.Run(t, "get", "httproute", "-n", tenants[0], "shop", "-o", "jsonpath={.metadata.creationTimestamp}")))
		if err != nil || time.Since(created) < 2*time.Second {
			return fmt.Errorf("waiting for a later second than %v (%v)", created, err)
		}
		return nil
	})
	cluster.Apply(t, tenants[1], tenantRoute("blog", infra, "b.example", "a.example"))
	cluster.Apply(t, tenants[2], tenantRoute("docs", infra, "c.example"))
	cluster.Apply(t, outsider, tenantRoute("intruder", infra, "o.example"))
	sitesApplied := time.Now()
	for k, ns := range tenants {
		var manifest strings.Builder
		for i := 1; i <= hostingSites; i++ {
			if tenantOf(i) == k {
				manifest.WriteString(tenantSite(i, infra))
			}
		}
		cluster.Apply(t, ns, manifest.String())
	}

	t.Run("the Gateway is programmed at its farm's frontend address with the tenants' routes attached", func(t *testing.T) {
		framework.Eventually(t, time.Minute, func() error {
			out := strings.TrimSpace(cluster.Run(t, "get", "gateway", "-n", infra, "public", "-o",
				`jsonpath={.status.conditions[?(@.type=="Programmed")].status} {.status.addresses[0].value} {.status.listeners[0].attachedRoutes}`))
			ip := strings.TrimSpace(cluster.Run(t, "get", "service", "-n", infra, "hosting-frontend", "-o", "jsonpath={.spec.clusterIP}"))
			if want := fmt.Sprintf("True %s %d", ip, 3+hostingSites); out != want {
				return fmt.Errorf("Gateway Programmed, address, attached routes: %q, want %q", out, want)
			}
			return nil
		})
	})
	t.Run("each tenant's route without a SiteContent serves the tenant's own folder, the provider's site the root", func(t *testing.T) {
		for i, host := range []string{"a.example", "b.example", "c.example"} {
			framework.Eventually(t, time.Minute, serves(host, "200 "+tenants[i]+" folder"))
		}
		framework.Eventually(t, time.Minute, serves("www.provider.example", "200 shared pool"))
	})
	t.Run("fifty tenants' sites on the shared pool serve their own files, media types, default documents and 404 pages", func(t *testing.T) {
		for i := 1; i <= hostingSites; i++ {
			servesSite(t, front, i)
		}
		t.Logf("%d tenants' sites served %s after their routes were applied", hostingSites, time.Since(sitesApplied).Round(time.Second))
	})
	t.Run("a site a tenant adds is served and restarts, rolls or reconfigures no worker", func(t *testing.T) {
		before := poolState(t, infra, "shared")
		added := time.Now()
		cluster.Apply(t, tenants[tenantOf(hostingSites+1)], tenantSite(hostingSites+1, infra))
		servesSite(t, front, hostingSites+1)
		t.Logf("the site added was served %s after its route was applied", time.Since(added).Round(100*time.Millisecond))
		if after := poolState(t, infra, "shared"); after != before {
			t.Errorf("adding a site changed the pool's workers:\nbefore %s\nafter %s", before, after)
		}
	})
	t.Run("a namespace the Gateway does not select is refused with its reason and not served", func(t *testing.T) {
		framework.Eventually(t, time.Minute, expectCondition(outsider, "intruder", "Accepted", "False/NotAllowedByListeners"))
		framework.Eventually(t, time.Minute, serves("o.example", "404"))
	})
	t.Run("a host two tenants claim goes to the older route and the newer says which it lost", func(t *testing.T) {
		framework.Eventually(t, time.Minute, func() error {
			msg := cluster.Run(t, "get", "httproute", "-n", tenants[1], "blog", "-o", `jsonpath={.status.parents[0].conditions[?(@.type=="Accepted")].message}`)
			if !strings.Contains(msg, "a.example") {
				return fmt.Errorf("Accepted message %q does not name a.example", msg)
			}
			return nil
		})
	})
	t.Run("a tenant removing its route removes only its hosts, and the host passes to the other claim", func(t *testing.T) {
		cluster.Run(t, "delete", "httproute", "-n", tenants[2], "docs", siteName(2))
		framework.Eventually(t, time.Minute, serves("c.example", "404"))
		framework.Eventually(t, time.Minute, serves(siteName(2)+".example", "404"))
		for i := 1; i <= hostingSites+1; i++ {
			if i != 2 {
				framework.ExpectBody(t, time.Minute, front, siteName(i)+" home", "Host: "+siteName(i)+".example")
			}
		}
		cluster.Run(t, "delete", "httproute", "-n", tenants[0], "shop")
		framework.Eventually(t, time.Minute, func() error {
			msg := cluster.Run(t, "get", "httproute", "-n", tenants[1], "blog", "-o", `jsonpath={.status.parents[0].conditions[?(@.type=="Accepted")].message}`)
			if strings.Contains(msg, "a.example") {
				return fmt.Errorf("the route still lost a.example: %q", msg)
			}
			return nil
		})
		for _, host := range []string{"a.example", "b.example"} {
			framework.Eventually(t, time.Minute, serves(host, "200 "+tenants[1]+" folder"))
		}
		framework.Eventually(t, time.Minute, serves("www.provider.example", "200 shared pool"))
	})
	t.Run("no route change restarted or replaced the pool's worker", func(t *testing.T) {
		if now := workerState(); now != worker {
			t.Fatalf("the pool's workers were %q, now %q", worker, now)
		}
	})
}

// servesSite checks that a tenant's site i serves its own default document
// at "/", its own 404 page, and each of its files with its media type.
func servesSite(t *testing.T, front string, i int) {
	t.Helper()
	host := "Host: " + siteName(i) + ".example"
	framework.ExpectBody(t, time.Minute, front, siteName(i)+" home", host)
	if r, err := framework.HTTPGet(front+"no-such-page", host); err != nil || r.Status != 404 || r.Body != siteName(i)+" has no such page\n" {
		t.Errorf("%s /no-such-page: got %+v %v, want 404 with its own page", siteName(i), r, err)
	}
	for name, want := range tenantMediaTypes {
		r, err := framework.HTTPGet(front+name, host)
		if err != nil || r.Status != 200 || r.Header.Get("Content-Type") != want || r.Body != siteName(i)+" "+name+"\n" {
			t.Errorf("%s /%s: got %+v %v, want 200 %s with its own file", siteName(i), name, r, err, want)
		}
	}
}
