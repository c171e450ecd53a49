//go:build e2e

package e2e

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"webfarm.dev/operator/internal/render/nginx"
	"webfarm.dev/operator/test/e2e/framework"
)

// One pool behind two farms, the first also through a cache tier.
const isolatedFarms = `apiVersion: v1
kind: ConfigMap
metadata: {name: shared}
data:
  index.html: "shared pool\n"
---
apiVersion: webfarm.dev/v1alpha1
kind: AppPool
metadata: {name: shared}
spec:
  content: {configMap: {name: shared}}
  replicas: 1
  cpu: 50m
  memory: 64Mi
---
apiVersion: webfarm.dev/v1alpha1
kind: CachePolicy
metadata: {name: edge}
spec:
  frequentHitThreshold: 1
  memorySize: 8Mi
  replicas: 1
  cpu: 100m
---
apiVersion: webfarm.dev/v1alpha1
kind: WebFarm
metadata: {name: one}
spec:
  sites:
  - name: main
    hosts: [one.example]
    routes:
    - {pathPrefix: /index.html, appPool: shared, cachePolicy: edge}
    - {pathPrefix: /, appPool: shared}
  frontend: {replicas: 1, cpu: 100m}
---
apiVersion: webfarm.dev/v1alpha1
kind: WebFarm
metadata: {name: two}
spec:
  sites:
  - name: main
    hosts: [two.example]
    routes: [{pathPrefix: /, appPool: shared}]
  frontend: {replicas: 1, cpu: 100m}
`

// refusedAttempts is how many connections in a row a tenant's pod must fail
// to open, once the first failed, for the boundary to count as holding.
const refusedAttempts = 5

// Pools and cache tiers admit their own farms' frontends and cache tiers,
// the operator and the node; a pod of another namespace reaches neither,
// while both farms keep serving the pool they share through their frontends.
func TestAPodOfAnotherNamespaceCannotReachAPoolOrACacheTier(t *testing.T) {
	t.Parallel() // it mostly waits: it runs beside the other waiting tests, after the rest
	started := time.Now()
	ns, tenant := cluster.Namespace(t), cluster.Namespace(t)
	cluster.Apply(t, ns, isolatedFarms)
	client := cluster.ClientPod(t, tenant)
	cluster.WaitReady(t, ns, 3*time.Minute, "webfarm/one", "webfarm/two", "apppool/shared", "cachepolicy/edge")

	t.Run("both farms, and the cache tier in front, serve the shared pool to the other namespace", func(t *testing.T) {
		for _, r := range []struct{ frontend, host, path string }{
			{"one-frontend", "one.example", "/"}, {"two-frontend", "two.example", "/"}, {"one-frontend", "one.example", "/index.html"},
		} {
			url := fmt.Sprintf("http://%s.%s.svc%s", r.frontend, ns, r.path)
			framework.Eventually(t, time.Minute, func() error {
				status, body, err := client.Get(url, "Host: "+r.host)
				if err != nil || status != 200 || strings.TrimSpace(body) != "shared pool" {
					return fmt.Errorf("GET %s (Host %s) from namespace %s: %d %q %v; want 200 %q", url, r.host, tenant, status, body, err, "shared pool")
				}
				return nil
			})
		}
	})

	t.Run("the pool's policy admits both farms' frontends and the cache tier", func(t *testing.T) {
		got := cluster.Run(t, "get", "networkpolicy", "shared-pool", "-n", ns, "-o",
			`jsonpath={range .spec.ingress[0].from[*]}{.podSelector.matchLabels.app\.kubernetes\.io/name}/{.podSelector.matchLabels.app\.kubernetes\.io/instance} {end}`)
		if want := "webfarm-frontend/one webfarm-frontend/two webfarm-cache/edge "; got != want {
			t.Errorf("shared-pool admits %q; want %q", got, want)
		}
	})

	podURL := func(selector string) string {
		pods := cluster.Pods(t, ns, selector)
		if len(pods) == 0 || pods[0].IP == "" {
			t.Fatalf("no pod with an address for %s", selector)
		}
		return "http://" + net.JoinHostPort(pods[0].IP, strconv.Itoa(nginx.HTTPPort)) + "/"
	}
	for _, target := range []struct{ name, url string }{
		{"the pool's worker", podURL("app.kubernetes.io/component=pool,app.kubernetes.io/instance=shared")},
		{"the pool's Service", fmt.Sprintf("http://shared-pool.%s.svc/", ns)},
		{"the cache tier's nginx", podURL("app.kubernetes.io/component=cache,app.kubernetes.io/instance=edge")},
		{"the cache tier's Service", fmt.Sprintf("http://edge-cache.%s.svc/", ns)},
	} {
		url := target.url
		t.Run("the other namespace's pod cannot reach "+target.name, func(t *testing.T) {
			// kube-router writes a new pod's rules shortly after the pod
			// gets its address: the first attempts may still pass.
			framework.Eventually(t, time.Minute, func() error { return refused(client, url) })
			for i := range refusedAttempts {
				if err := refused(client, url); err != nil {
					t.Fatalf("attempt %d of %d after the first refusal: %v", i+1, refusedAttempts, err)
				}
			}
		})
	}
	t.Logf("isolation checked in %s", time.Since(started).Round(time.Second))
}

// refused is nil when the client pod cannot open a connection to url (the
// policy drops or rejects it), an error when it got any answer.
func refused(client *framework.Client, url string) error {
	status, body, err := client.Get(url)
	switch {
	case err == nil:
		return fmt.Errorf("GET %s from namespace %s answered %d %q; want no connection", url, client.Namespace, status, body)
	case strings.Contains(err.Error(), "curl: (28)"), strings.Contains(err.Error(), "curl: (7)"):
		return nil // timed out, or rejected
	}
	return errors.Join(fmt.Errorf("GET %s: not a refused connection", url), err)
}
