//go:build e2e

package e2e

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"webfarm.dev/operator/internal/vocabulary"
	"webfarm.dev/operator/test/e2e/framework"
)

// A static pool behind a cache tier: entries kept at the first request (the
// seed's tuned threshold 1), for 10 minutes, announced to browsers for an
// hour.
const cachedFarm = `apiVersion: v1
kind: ConfigMap
metadata: {name: logo}
data:
  index.html: "images\n"
  logo.txt: "logo v1\n"
---
apiVersion: webfarm.dev/v1alpha1
kind: AppPool
metadata: {name: images}
spec:
  content: {configMap: {name: logo}}
  replicas: 1
  cpu: 50m
  memory: 64Mi
---
apiVersion: webfarm.dev/v1alpha1
kind: CachePolicy
metadata: {name: tuned}
spec:
  frequentHitThreshold: 1
  objectTTL: 10m
  memorySize: 8Mi
  replicas: 1
  cpu: 100m
  clientCache: {mode: UseMaxAge, maxAge: 1h}
---
apiVersion: webfarm.dev/v1alpha1
kind: WebFarm
metadata: {name: cached}
spec:
  sites:
  - name: main
    hosts: [cached.example]
    routes: [{pathPrefix: /, appPool: images, cachePolicy: tuned}]
  frontend:
    replicas: 1
    cpu: 100m
`

// The cache tier answers a route's repeated requests from memory, counts its
// work into the CachePolicy's status and the operator's metrics, purges on
// request and after the pool's content changed, and leaves the path without
// a failed request when the route stops naming it.
func TestACachedRouteIsServedFromTheCacheTierUntilItsContentChanges(t *testing.T) {
	t.Parallel() // it mostly waits: it runs beside the other waiting tests, after the rest
	ns := cluster.Namespace(t)
	cluster.Apply(t, ns, cachedFarm)
	cluster.WaitReady(t, ns, 3*time.Minute, "webfarm/cached", "apppool/images", "cachepolicy/tuned")
	url := cluster.ServiceURL(t, ns, "cached-frontend") + "/logo.txt"
	host := "Host: cached.example"
	framework.ExpectBody(t, time.Minute, url, "logo v1", host)

	get := func() framework.Response {
		t.Helper()
		r, err := framework.HTTPGet(url, host)
		if err != nil || r.Status != 200 {
			t.Fatalf("GET: %d %q %v", r.Status, r.Body, err)
		}
		return r
	}

	t.Run("a second request is a hit with the policy's client expiry", func(t *testing.T) {
		r := get()
		if got := r.Header.Get("X-Cache-Status"); got != "HIT" {
			t.Errorf("X-Cache-Status %q, want HIT", got)
		}
		if got := r.Header.Get("Cache-Control"); got != "max-age=3600" {
			t.Errorf("Cache-Control %q, want max-age=3600", got)
		}
	})

	t.Run("the counters reach the status, kubectl get and Prometheus", func(t *testing.T) {
		for range 8 {
			get()
		}
		framework.Eventually(t, time.Minute, func() error {
			got := cluster.Run(t, "get", "cachepolicy", "tuned", "-n", ns, "-o",
				"jsonpath={.status.counters.hits} {.status.counters.stored} {.status.objects} {.status.hitPercent}")
			var hits, stored, objects int
			var percent string
			if _, err := fmt.Sscan(got, &hits, &stored, &objects, &percent); err != nil {
				return fmt.Errorf("status %q: %v", got, err)
			}
			if hits < 9 || stored != 1 || objects != 1 || !strings.HasSuffix(percent, "%") {
				return fmt.Errorf("hits, stored, objects, hit %%: %q; want at least 9 hits, 1 stored, 1 object", got)
			}
			return nil
		})
		table := cluster.Run(t, "get", "cachepolicies", "-n", ns)
		if !strings.Contains(table, "HIT %") || !strings.Contains(table, "OBJECTS") || !strings.Contains(table, "%") {
			t.Errorf("kubectl get cachepolicies shows no hit %% and objects:\n%s", table)
		}
		expr := fmt.Sprintf(`webfarm_cache_hits_total{namespace=%q,cachepolicy="tuned"} >= 9`, ns)
		cluster.EventuallyQuery(t, time.Minute, expr, func(s []framework.Sample) error {
			if len(s) != 1 {
				return fmt.Errorf("%s: samples %v", expr, s)
			}
			return nil
		})
	})

	// The operator's readings above carry the tier's token; a client without
	// it, such as any pod, is refused.
	t.Run("the agents' counters and purges refuse a client without the tier's token", func(t *testing.T) {
		pods := cluster.Pods(t, ns, "app.kubernetes.io/instance=tuned,app.kubernetes.io/component=cache")
		if len(pods) == 0 {
			t.Fatal("no cache pod")
		}
		for _, r := range []struct{ method, path string }{{http.MethodGet, vocabulary.AgentStatsPath}, {http.MethodPost, vocabulary.AgentPurgePath}} {
			req, err := http.NewRequest(r.method, "http://"+net.JoinHostPort(pods[0].IP, strconv.Itoa(vocabulary.AgentAdminPort))+r.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("%s %s without a token: %s, want 401", r.method, r.path, resp.Status)
			}
		}
	})

	t.Run("the purge annotation empties the cache once", func(t *testing.T) {
		cluster.Run(t, "annotate", "cachepolicy", "tuned", "-n", ns, "webfarm.dev/purge=first")
		framework.Eventually(t, 30*time.Second, func() error {
			got := cluster.Run(t, "get", "cachepolicy", "tuned", "-n", ns, "-o", "jsonpath={.status.lastPurge.token} {.status.lastPurge.entries}")
			if strings.TrimSpace(got) != "first 1" {
				return fmt.Errorf("lastPurge token and entries %q, want \"first 1\"", got)
			}
			return nil
		})
		if got := get().Header.Get("X-Cache-Status"); got != "MISS" {
			t.Errorf("after the purge: X-Cache-Status %q, want MISS", got)
		}
	})

	t.Run("new content is served within the documented bound", func(t *testing.T) {
		get() // cached again
		cluster.Run(t, "patch", "configmap", "logo", "-n", ns, "--type=merge", "-p", `{"data":{"logo.txt":"logo v2\n"}}`)
		changed := time.Now()
		// kubelet's file update, the operator's content check (30 s) and the
		// settle time (90 s), plus a margin.
		framework.EventuallyEvery(t, 3*time.Minute, 2*time.Second, func() error {
			if body := get().Body; body != "logo v2\n" {
				return fmt.Errorf("body %q after %s", body, time.Since(changed).Round(time.Second))
			}
			return nil
		})
		t.Logf("new content served %s after the change", time.Since(changed).Round(time.Second))
		got := cluster.Run(t, "get", "cachepolicy", "tuned", "-n", ns, "-o", "jsonpath={.status.poolContent[0].purgedAt}")
		if strings.TrimSpace(got) == "" {
			t.Errorf("status.poolContent has no purge of the pool's entries")
		}
	})

	t.Run("a route that stops naming the policy leaves the tier without a failed request", func(t *testing.T) {
		var mu sync.Mutex
		var failures []string
		var served int
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			deadline := time.Now().Add(2 * time.Minute) // the loop stops by itself
			for time.Now().Before(deadline) {
				select {
				case <-stop:
					return
				default:
				}
				r, err := framework.HTTPGet(url, host)
				mu.Lock()
				if err != nil || r.Status != 200 {
					failures = append(failures, fmt.Sprintf("%d %v", r.Status, err))
				} else {
					served++
				}
				mu.Unlock()
			}
		}()
		cluster.Run(t, "patch", "webfarm", "cached", "-n", ns, "--type=merge", "-p",
			`{"spec":{"sites":[{"name":"main","hosts":["cached.example"],"routes":[{"pathPrefix":"/","appPool":"images"}]}]}}`)
		framework.Eventually(t, time.Minute, func() error {
			if pods := cluster.Pods(t, ns, "app.kubernetes.io/instance=tuned,app.kubernetes.io/component=cache"); len(pods) > 0 {
				return fmt.Errorf("cache pods %v remain", pods)
			}
			return nil
		})
		close(stop)
		<-done
		if r := get(); r.Header.Get("X-Cache-Status") != "" {
			t.Errorf("the route still passes the cache tier: X-Cache-Status %q", r.Header.Get("X-Cache-Status"))
		}
		mu.Lock()
		defer mu.Unlock()
		t.Logf("%d requests served while the tier left the path", served)
		if len(failures) > 0 {
			t.Errorf("%d requests failed while the tier left the path: %v", len(failures), failures)
		}
	})
}
