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
// pool, a farm with the provider's own site, and the Gateway its tenants
// attach to (namespaces labelled hosting=<tenantLabel>), with the grant
// that lets their routes use the shared pool.
func providerFarm(class, tenantLabel string, tenants ...string) string {
	var from []string
	for _, ns := range tenants {
		from = append(from, fmt.Sprintf("  - {group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: %s}", ns))
	}
	return `apiVersion: v1
kind: ConfigMap
metadata: {name: shared-content}
data:
  index.html: "shared pool\n"
---
apiVersion: webfarm.dev/v1alpha1
kind: AppPool
metadata: {name: shared}
spec:
  content: {configMap: {name: shared-content}}
  replicas: 1
  cpu: 50m
  memory: 64Mi
---
apiVersion: webfarm.dev/v1alpha1
kind: WebFarm
metadata: {name: hosting}
spec:
  sites:
  - name: provider
    hosts: [www.provider.example]
    routes: [{pathPrefix: /, appPool: shared}]
  frontend: {replicas: 1, cpu: 100m}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: public}
spec:
  gatewayClassName: ` + class + `
  infrastructure:
    parametersRef: {group: webfarm.dev, kind: WebFarm, name: hosting}
  listeners:
  - name: http
    port: 80
    protocol: HTTP
    allowedRoutes:
      namespaces:
        from: Selector
        selector: {matchLabels: {hosting: ` + tenantLabel + `}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: ReferenceGrant
metadata: {name: tenants-use-shared-pools}
spec:
  from:
` + strings.Join(from, "\n") + `
  to: [{group: webfarm.dev, kind: AppPool}]
`
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
// farm's shared pool; a namespace the Gateway does not select is refused
// with its reason; a host two tenants claim goes to the older route; a
// tenant removing its route removes only its hosts; no route change
// restarts the pool's worker.
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
	cluster.Apply(t, infra, providerFarm(class, infra, append(tenants, outsider)...))
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

	t.Run("the Gateway is programmed at its farm's frontend address with the tenants' routes attached", func(t *testing.T) {
		framework.Eventually(t, time.Minute, func() error {
			out := strings.TrimSpace(cluster.Run(t, "get", "gateway", "-n", infra, "public", "-o",
				`jsonpath={.status.conditions[?(@.type=="Programmed")].status} {.status.addresses[0].value} {.status.listeners[0].attachedRoutes}`))
			ip := strings.TrimSpace(cluster.Run(t, "get", "service", "-n", infra, "hosting-frontend", "-o", "jsonpath={.spec.clusterIP}"))
			if want := "True " + ip + " 3"; out != want {
				return fmt.Errorf("Gateway Programmed, address, attached routes: %q, want %q", out, want)
			}
			return nil
		})
	})
	t.Run("each tenant's host and the provider's own site are served by the shared pool", func(t *testing.T) {
		for _, host := range []string{"a.example", "b.example", "c.example", "www.provider.example"} {
			framework.Eventually(t, time.Minute, serves(host, "200 shared pool"))
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
		cluster.Run(t, "delete", "httproute", "-n", tenants[2], "docs")
		framework.Eventually(t, time.Minute, serves("c.example", "404"))
		cluster.Run(t, "delete", "httproute", "-n", tenants[0], "shop")
		framework.Eventually(t, time.Minute, func() error {
			msg := cluster.Run(t, "get", "httproute", "-n", tenants[1], "blog", "-o", `jsonpath={.status.parents[0].conditions[?(@.type=="Accepted")].message}`)
			if strings.Contains(msg, "a.example") {
				return fmt.Errorf("the route still lost a.example: %q", msg)
			}
			return nil
		})
		for _, host := range []string{"a.example", "b.example", "www.provider.example"} {
			framework.Eventually(t, time.Minute, serves(host, "200 shared pool"))
		}
	})
	t.Run("no route change restarted or replaced the pool's worker", func(t *testing.T) {
		if now := workerState(); now != worker {
			t.Fatalf("the pool's workers were %q, now %q", worker, now)
		}
	})
}
