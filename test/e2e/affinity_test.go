//go:build e2e

package e2e

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"webfarm.dev/operator/test/e2e/framework"
)

const affinityFarm = `apiVersion: v1
kind: ConfigMap
metadata: {name: affinity-content}
data:
  index.html: "affinity test page\n"
---
apiVersion: webfarm.dev/v1alpha1
kind: AppPool
metadata: {name: web}
spec:
  content: {configMap: {name: affinity-content}}
  replicas: 2
  cpu: 50m
  memory: 64Mi
---
apiVersion: webfarm.dev/v1alpha1
kind: WebFarm
metadata: {name: affinity}
spec:
  sites:
  - name: main
    hosts: [affinity.example]
    routes: [{pathPrefix: /, appPool: web}]
  frontend:
    replicas: 1
    cpu: 100m
    service: {type: NodePort}
    # The tests read which worker answered each request.
    debugHeaders: true
  sessionAffinity:
    type: Cookie
    cookie: {name: AFFINITY}
`

// workerHeader names the worker pod that answered, on the answers of farms
// with debugHeaders.
const workerHeader = "X-Webfarm-Worker"

// Clients in one /24 (10.201.1.x) and in seven others.
var (
	sameNetwork   = []string{"10.201.1.10", "10.201.1.20", "10.201.1.30"}
	otherNetworks = []string{"10.201.2.10", "10.201.3.10", "10.201.4.10", "10.201.5.10", "10.201.6.10", "10.201.7.10", "10.201.8.10"}
	// A load balancer in front of the farm, in a network of its own.
	proxyAddress, proxyNetwork = "10.201.9.1", "10.201.9.0/24"
)

// Session affinity with real HTTP from clients outside the cluster, through
// the farm's NodePort, to real nginx workers that name themselves.
func TestSessionAffinity(t *testing.T) {
	t.Parallel() // it mostly waits: it runs beside the other waiting tests, after the rest
	ns := cluster.Namespace(t)
	cluster.Apply(t, ns, affinityFarm)
	cluster.WaitReady(t, ns, 3*time.Minute, "webfarm/affinity", "apppool/web")
	clients := cluster.ClientNetwork(t, append(append([]string{proxyAddress}, sameNetwork...), otherNetworks...)...)
	front := cluster.NodeURL(t, ns, "affinity-frontend") + "/"
	getFrom := func(url, source string, headers ...string) (framework.Response, error) {
		r, err := clients.Get(source, url, append(headers, "Host: affinity.example")...)
		if err == nil && (r.Status != http.StatusOK || r.Header.Get(workerHeader) == "") {
			err = fmt.Errorf("GET from %s: %d %q (worker %q)", source, r.Status, r.Body, r.Header.Get(workerHeader))
		}
		return r, err
	}
	get := func(source string, headers ...string) (framework.Response, error) {
		return getFrom(front, source, headers...)
	}
	setAffinity := func(t *testing.T, affinity string) {
		cluster.Run(t, "patch", "webfarm", "affinity", "-n", ns, "--type=merge", "-p", `{"spec":{"sessionAffinity":`+affinity+`}}`)
		cluster.WaitReady(t, ns, time.Minute, "webfarm/affinity")
	}
	// workersThrough sends n requests from one source to url and counts them
	// per worker.
	workersThrough := func(url string) func(source string, n int) (map[string]int, error) {
		return func(source string, n int) (map[string]int, error) {
			seen := map[string]int{}
			for i := 0; i < n; i++ {
				r, err := getFrom(url, source)
				if err != nil {
					return seen, err
				}
				seen[r.Header.Get(workerHeader)]++
			}
			return seen, nil
		}
	}
	workersOf := workersThrough(front)

	t.Run("Cookie keeps a client on one worker across 100 requests, a scale-out from 2 to 4, and moves it once when its worker goes", func(t *testing.T) {
		var cookie string
		framework.Eventually(t, 30*time.Second, func() error {
			r, err := get(sameNetwork[0])
			if err != nil {
				return err
			}
			for _, c := range (&http.Response{Header: r.Header}).Cookies() {
				if c.Name == "AFFINITY.web" {
					cookie = c.Name + "=" + c.Value
					return nil
				}
			}
			return fmt.Errorf("no AFFINITY.web cookie in %v", r.Header)
		})
		sticky := func(n int) (string, error) {
			worker := ""
			for i := 0; i < n; i++ {
				// Clients in several networks share the cookie: it alone decides.
				r, err := get([]string{sameNetwork[0], otherNetworks[i%len(otherNetworks)]}[i%2], "Cookie: "+cookie)
				if err != nil {
					return worker, err
				}
				if w := r.Header.Get(workerHeader); worker == "" {
					worker = w
				} else if w != worker {
					return worker, fmt.Errorf("request %d went to %s, earlier ones to %s", i, w, worker)
				}
			}
			return worker, nil
		}
		worker, err := sticky(100)
		if err != nil {
			t.Fatal(err)
		}

		cluster.Run(t, "patch", "apppool", "web", "-n", ns, "--type=merge", "-p", `{"spec":{"replicas":4}}`)
		cluster.WaitReady(t, ns, 2*time.Minute, "apppool/web")
		framework.Eventually(t, 30*time.Second, func() error { // all four take new clients
			seen, err := workersOf(otherNetworks[0], 40)
			if err != nil || len(seen) < 4 {
				return fmt.Errorf("new clients reached %v (%v), want 4 workers", seen, err)
			}
			return nil
		})
		if after, err := sticky(100); err != nil || after != worker {
			t.Fatalf("after the scale-out the client went to %s (%v), want %s", after, err, worker)
		}

		cluster.Run(t, "delete", "pod", "-n", ns, worker, "--wait=false")
		deleted := time.Now()
		var lastFromDraining time.Time
		gone := func() bool {
			for _, p := range cluster.Pods(t, ns, "app.kubernetes.io/instance=web,app.kubernetes.io/name=webfarm-pool") {
				if p.Name == worker {
					return false
				}
			}
			return true
		}
		var sequence []string
		pace := time.NewTicker(100 * time.Millisecond) // one request per tick while the worker drains
		defer pace.Stop()
		for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); <-pace.C {
			r, err := get(sameNetwork[0], "Cookie: "+cookie)
			if err != nil {
				t.Fatalf("while %s went away: %v", worker, err)
			}
			for _, c := range (&http.Response{Header: r.Header}).Cookies() {
				if c.Name == "AFFINITY.web" {
					cookie = c.Name + "=" + c.Value
				}
			}
			w := r.Header.Get(workerHeader)
			if w == worker {
				lastFromDraining = time.Now()
			}
			if len(sequence) == 0 || sequence[len(sequence)-1] != w {
				sequence = append(sequence, w)
			}
			if w != worker && gone() {
				if moved, err := sticky(50); err != nil || moved != w {
					t.Fatalf("after moving to %s the client went to %s (%v)", w, moved, err)
				}
				break
			}
		}
		if len(sequence) != 2 || sequence[0] != worker {
			t.Errorf("workers the client saw while %s went away: %v, want %s then one other", worker, sequence, worker)
		}
		// The worker drains for its pre-stop delay (5 s) before nginx stops:
		// its sticky client is served there all that time.
		drained := lastFromDraining.Sub(deleted)
		t.Logf("the draining worker served its sticky client for %s after its deletion", drained.Round(100*time.Millisecond))
		if drained < 4*time.Second {
			t.Errorf("the sticky client left its draining worker %s after the deletion, want it served there for the 5 s drain", drained)
		}
	})

	t.Run("None spreads requests across the workers", func(t *testing.T) {
		setAffinity(t, `{"type":"None","cookie":null}`)
		framework.Eventually(t, 30*time.Second, func() error {
			seen, err := workersOf(sameNetwork[0], 40)
			if err != nil || len(seen) < 4 {
				return fmt.Errorf("40 requests reached %v (%v), want all 4 workers", seen, err)
			}
			return nil
		})
	})

	t.Run("ClientIP keeps each source address on one worker", func(t *testing.T) {
		setAffinity(t, `{"type":"ClientIP","cookie":null}`)
		checkStickyBy(t, workersOf, append(append([]string{}, sameNetwork...), otherNetworks...), func(source string) string { return source })
	})

	t.Run("ClassC keeps each /24 network on one worker", func(t *testing.T) {
		setAffinity(t, `{"type":"ClassC","cookie":null}`)
		checkStickyBy(t, workersOf, append(append([]string{}, sameNetwork...), otherNetworks...), func(source string) string {
			return source[:strings.LastIndex(source, ".")]
		})
	})

	t.Run("behind a trusted proxy, clients stick per /24, the access log has their own addresses, and a direct client cannot forge one", func(t *testing.T) {
		cluster.Run(t, "patch", "webfarm", "affinity", "-n", ns, "--type=merge", "-p",
			`{"spec":{"sessionAffinity":{"type":"ClassC","cookie":null},"frontend":{"clientAddress":{"trustedNetworks":["`+proxyNetwork+`"]}}}}`)
		cluster.WaitReady(t, ns, time.Minute, "webfarm/affinity")
		proxy := clients.Proxy(t, proxyAddress, strings.TrimSuffix(front, "/")) + "/"
		// Without trust every request would come from the proxy's address:
		// one worker for all, which checkStickyBy refuses.
		checkStickyBy(t, workersThrough(proxy), append(append([]string{}, sameNetwork...), otherNetworks...), func(source string) string {
			return source[:strings.LastIndex(source, ".")]
		})

		marker := fmt.Sprintf("?e2e=%d", time.Now().UnixNano())
		viaProxy, direct := otherNetworks[0], otherNetworks[1]
		if _, err := getFrom(proxy+marker+"-proxied", viaProxy); err != nil {
			t.Fatal(err)
		}
		if _, err := getFrom(front+marker+"-forged", direct, "X-Forwarded-For: 198.51.100.23"); err != nil {
			t.Fatal(err)
		}
		for suffix, want := range map[string]string{"-proxied": viaProxy, "-forged": direct} {
			entry := cluster.AccessLogEntry(t, ns, "affinity", marker+suffix)
			addr, _ := entry["clientAddress"].(string)
			if host, _, err := net.SplitHostPort(addr); err == nil {
				addr = host
			}
			if addr != want {
				t.Errorf("request %s: access log clientAddress %q, want %s: %v", suffix, entry["clientAddress"], want, entry)
			}
		}
	})
}

// checkStickyBy asserts that every source's requests go to one worker, that
// sources in one group (by key) share it, and that the groups do not all
// land on the same worker.
func checkStickyBy(t *testing.T, workersOf func(string, int) (map[string]int, error), sources []string, key func(string) string) {
	t.Helper()
	framework.Eventually(t, 30*time.Second, func() error {
		workerOfGroup := map[string]string{}
		distinct := map[string]bool{}
		for _, source := range sources {
			seen, err := workersOf(source, 10)
			if err != nil {
				return err
			}
			if len(seen) != 1 {
				return fmt.Errorf("%s reached %v, want one worker", source, seen)
			}
			for w := range seen {
				if other, ok := workerOfGroup[key(source)]; ok && other != w {
					return fmt.Errorf("%s reached %s, others of its group %s reached %s", source, w, key(source), other)
				}
				workerOfGroup[key(source)] = w
				distinct[w] = true
			}
		}
		if len(distinct) < 2 {
			return fmt.Errorf("every group reached the same worker: %v", workerOfGroup)
		}
		return nil
	})
}
