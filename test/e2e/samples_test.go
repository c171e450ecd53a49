//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"webfarm.dev/operator/test/e2e/framework"
)

var samples = []string{"webfarm/contoso", "apppool/www", "apppool/images", "cachepolicy/static-content"}

const (
	// sampleLoadRate is the requests/s the load sends to the www pool, in
	// chunks of sampleLoadChunk.
	sampleLoadRate  = 20
	sampleLoadChunk = 20 * time.Second
	managedBy       = "app.kubernetes.io/managed-by=webfarm-operator"
	wwwPods         = "app.kubernetes.io/name=webfarm-pool,app.kubernetes.io/instance=www"
	wwwPage         = "Served by the www application pool"
	logoFragment    = "<svg"
)

// The samples as users apply them, in a namespace that enforces the
// restricted profile, from Ready to deletion. The steps share one farm
// because each builds on the state the one before left.
func TestTheSampleFarm(t *testing.T) {
	ns := cluster.Namespace(t)
	// The samples must start without a cause not to start, so without
	// waiting for room that an earlier test's pods still hold.
	cluster.WaitForNodeFree(t)
	cert := cluster.SampleCertificate(t, ns)
	cluster.ApplyFile(t, ns, filepath.Join(cluster.Root, "config", "samples"))
	cluster.WaitReady(t, ns, 4*time.Minute, samples...)

	t.Run("every generated pod is admitted under the restricted Pod Security profile", func(t *testing.T) {
		// The check means something only if the namespace refuses a pod that breaks the profile.
		_, err := cluster.Kubectl.RunWithInput(t.Context(), `apiVersion: v1
kind: Pod
metadata: {name: runs-as-root}
spec:
  containers: [{name: c, image: localhost/webfarm-client:dev, imagePullPolicy: Never}]
`, "apply", "-n", ns, "-f", "-")
		if err == nil || !strings.Contains(err.Error(), `violates PodSecurity "restricted`) {
			t.Fatalf("a pod that breaks the restricted profile was not refused: %v", err)
		}
		listing := cluster.Run(t, "get", "deployments", "-n", ns, "-l", managedBy, "-o",
			`jsonpath={range .items[*]}{.metadata.name} {.spec.replicas} {.status.readyReplicas}{"\n"}{end}`)
		deployments := strings.Split(strings.TrimSpace(listing), "\n")
		if len(deployments) != 4 {
			t.Fatalf("generated Deployments:\n%s\nwant 4 (frontend, two pools, cache tier)", listing)
		}
		for _, d := range deployments {
			if f := strings.Fields(d); len(f) != 3 || f[1] != f[2] {
				t.Errorf("Deployment %q: want every replica ready", d)
			}
		}
		if events := cluster.Run(t, "get", "events", "-n", ns, "--field-selector", "reason=FailedCreate", "-o", "name"); events != "" {
			t.Errorf("pods were refused: %s", events)
		}
		// No false alarm: the samples start without a cause not to start.
		for _, reason := range []string{"ImagePullFailed", "ContainerCannotStart", "Unschedulable", "PodCreateFailed", "RolloutStalled", "InvalidReference"} {
			if events := cluster.Run(t, "get", "events", "-n", ns, "--field-selector", "type=Warning,reason="+reason, "-o", "name"); events != "" {
				t.Errorf("the samples raised %s warnings: %s", reason, events)
			}
		}
	})

	t.Run("each pool's nginx serves its content through its Service, and a pod reaches it only through the frontend", func(t *testing.T) {
		// From the node (the kubelet's probes come from there too).
		framework.ExpectBody(t, 30*time.Second, cluster.ServiceURL(t, ns, "www-pool")+"/", wwwPage)
		framework.ExpectBody(t, 30*time.Second, cluster.ServiceURL(t, ns, "images-pool")+"/logo.svg", logoFragment)

		// A pod, even of the farm's namespace, is not a frontend: the
		// pools' NetworkPolicies refuse it, and the frontend serves it.
		client := cluster.ClientPod(t, ns)
		frontend := fmt.Sprintf("http://contoso-frontend.%s.svc.cluster.local", ns)
		for _, c := range []struct{ pool, url, want string }{
			{fmt.Sprintf("http://www-pool.%s.svc.cluster.local/", ns), frontend + "/", wwwPage},
			{fmt.Sprintf("http://images-pool.%s.svc.cluster.local/logo.svg", ns), frontend + "/images/logo.svg", logoFragment},
		} {
			framework.Eventually(t, time.Minute, func() error {
				if status, body, err := client.Get(c.pool); err == nil || status != 0 {
					return fmt.Errorf("from a client pod, GET %s: %d %q; want no connection", c.pool, status, body)
				}
				return nil
			})
			status, body, err := client.Get(c.url, "Host: www.contoso.example")
			if err != nil || status != http.StatusOK || !strings.Contains(body, c.want) {
				t.Errorf("from a client pod, GET %s: %d %q %v; want 200 with %q", c.url, status, body, err, c.want)
			}
		}
	})

	t.Run("the cache tier serves the images pool and then answers from its cache", func(t *testing.T) {
		url := cluster.ServiceURL(t, ns, "static-content-cache") + "/logo.svg"
		first := framework.ExpectBody(t, 30*time.Second, url, logoFragment, "X-Webfarm-Pool: images")
		framework.Eventually(t, 10*time.Second, func() error {
			r, err := framework.HTTPGet(url, "X-Webfarm-Pool: images")
			if err != nil {
				return err
			}
			if got := r.Header.Get("X-Cache-Status"); got != "HIT" {
				return fmt.Errorf("X-Cache-Status %q after a first answer with %q, want HIT", got, first.Header.Get("X-Cache-Status"))
			}
			return nil
		})
	})

	frontend := cluster.NodeURL(t, ns, "contoso-frontend")

	t.Run("the shop site answers over HTTPS with its certificate, trusted through the sample's CA", func(t *testing.T) {
		node := strings.TrimSpace(cluster.Run(t, "get", "nodes", "-o", `jsonpath={.items[0].status.addresses[?(@.type=="InternalIP")].address}`))
		port := strings.TrimSpace(cluster.Run(t, "get", "service", "-n", ns, "contoso-frontend", "-o", `jsonpath={.spec.ports[?(@.name=="https")].nodePort}`))
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(cert.CA)
		// As curl --resolve: the site's name in the URL (SNI, Host), the node's address dialled.
		client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, network, node+":"+port)
			},
		}}
		defer client.CloseIdleConnections()
		framework.Eventually(t, time.Minute, func() error {
			resp, err := client.Get("https://shop.contoso.example:" + port + "/")
			if err != nil {
				return err
			}
			defer func() { _ = resp.Body.Close() }()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), wwwPage) {
				return fmt.Errorf("%s %q, want 200 with %q", resp.Status, body, wwwPage)
			}
			return nil
		})
	})

	t.Run("the Envoy frontend routes each site's hosts and paths to their pools", func(t *testing.T) {
		for _, c := range []struct{ host, path, want string }{
			{"www.contoso.example", "/", wwwPage},
			{"contoso.example", "/", wwwPage},
			{"shop.contoso.example", "/", wwwPage},
			{"www.contoso.example", "/images/logo.svg", logoFragment},
		} {
			framework.ExpectBody(t, 60*time.Second, frontend+c.path, c.want, "Host: "+c.host)
		}
		r, err := framework.HTTPGet(frontend+"/", "Host: unknown.example")
		if err != nil || r.Status != http.StatusNotFound {
			t.Errorf("a host no site names: %d %v, want 404", r.Status, err)
		}
		r, err = framework.HTTPGet(frontend+"/images/logo.svg", "Host: www.contoso.example")
		if err != nil || r.Header.Get("X-Cache-Status") == "" {
			t.Errorf("/images goes through the static-content cache tier: want an X-Cache-Status header, got %v %v", r.Header, err)
		}
	})

	t.Run("the frontends' access log shows each request as a JSON line in kubectl logs, with the cache tier's answer", func(t *testing.T) {
		// A request with a query string passes the cache tier by (IIS
		// caches none by default).
		marker := fmt.Sprintf("/images/logo.svg?e2e=%d", time.Now().UnixNano())
		if r, err := framework.HTTPGet(frontend+marker, "Host: www.contoso.example", "X-Forwarded-For: 198.51.100.23"); err != nil || r.Status != http.StatusOK {
			t.Fatalf("GET %s: %v %v", marker, r.Status, err)
		}
		entry := cluster.AccessLogEntry(t, ns, "contoso", marker)
		framework.CheckAccessLogFields(t, entry, map[string]any{"site": "www", "pool": "images", "cachePolicy": "static-content",
			"status": float64(200), "queue": "served", "cacheStatus": "BYPASS", "path": marker})
		// The same image again and again, as a browser (its cookies keep it
		// on one cache replica), until the cache tier answers a hit: with
		// frequentHitThreshold 1 the second request is one, unless the
		// replica the cookie names changed in between (a cache pod that just
		// became ready reshapes the hash ring). Each request's log line
		// shows the cache tier's answer to it.
		since, cookies, answers := time.Now(), []string{}, []string{}
		framework.Eventually(t, 30*time.Second, func() error {
			r, err := framework.HTTPGet(frontend+"/images/logo.svg", "Host: www.contoso.example", "Cookie: "+strings.Join(cookies, "; "))
			if err != nil || r.Status != http.StatusOK {
				t.Fatalf("GET /images/logo.svg: %v %v", r.Status, err)
			}
			for _, c := range (&http.Response{Header: r.Header}).Cookies() {
				cookies = append(cookies, c.Name+"="+c.Value)
			}
			answers = append(answers, r.Header.Get("X-Cache-Status"))
			if len(answers) < 2 || answers[len(answers)-1] != "HIT" {
				return fmt.Errorf("the cache tier's answers: %v", answers)
			}
			return nil
		})
		if len(answers) > 2 {
			t.Logf("the cache tier's answers before its first hit on a repeated request: %v", answers)
		}
		cached := cluster.AccessLogEntries(t, ns, "contoso", len(answers), framework.LoggedSince("/images/logo.svg", since))
		if status := cached[0]["cacheStatus"]; status != "MISS" && status != "HIT" {
			t.Errorf("the first request's cacheStatus is %v, want MISS or HIT (when an earlier request filled the cache)", status)
		}
		for i, entry := range cached {
			framework.CheckAccessLogFields(t, entry, map[string]any{"site": "www", "pool": "images", "cachePolicy": "static-content",
				"status": float64(200), "queue": "served", "cacheStatus": answers[i]})
		}
		// The sample farm trusts no proxy: a client's own X-Forwarded-For is not its address.
		if addr, _ := entry["clientAddress"].(string); addr == "" || strings.HasPrefix(addr, "198.51.100.23") {
			t.Errorf("clientAddress %q: want the connecting address, not the one the client wrote", addr)
		}
	})

	t.Run("a browser with one cookie jar keeps its www worker over 50 loads of a page and its image from the cache tier, and learns nothing of the farm's inside", func(t *testing.T) {
		jar, err := cookiejar.New(nil)
		if err != nil {
			t.Fatal(err)
		}
		browser := &http.Client{Jar: jar, Timeout: 10 * time.Second}
		load := func(path, want string) {
			t.Helper()
			req, err := http.NewRequest(http.MethodGet, frontend+path, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Host = "www.contoso.example"
			resp, err := browser.Do(req)
			if err != nil {
				t.Fatalf("GET %s: %v", path, err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
				t.Fatalf("GET %s: %d %v, want 200 with %q", path, resp.StatusCode, err, want)
			}
			// The sample farm sends no debug headers: no answer names a
			// worker pod or what serves it.
			if w, s := resp.Header.Get("X-Webfarm-Worker"), resp.Header.Values("Server"); w != "" || len(s) > 0 {
				t.Fatalf("GET %s: X-Webfarm-Worker %q and Server %q, want neither", path, w, s)
			}
		}
		since := time.Now()
		for range 50 {
			load("/", wwwPage)
			load("/images/logo.svg", logoFragment)
		}
		// The access log names the worker pod of each page load.
		first := ""
		for i, entry := range cluster.AccessLogEntries(t, ns, "contoso", 50, framework.LoggedSince("/", since)) {
			www, _ := entry["workerPod"].(string)
			if i == 0 {
				first = www
			}
			if www == "" || www != first {
				t.Fatalf("page load %d reached www worker %q, the first reached %q", i+1, www, first)
			}
		}
		var names []string
		// The jar keeps a request's cookies under its Host, as a browser would.
		for _, c := range jar.Cookies(mustParseURL(t, "http://www.contoso.example/")) {
			names = append(names, c.Name)
		}
		slices.Sort(names)
		if want := []string{"CONTOSO_AFFINITY.cache.static-content", "CONTOSO_AFFINITY.www"}; !slices.Equal(names, want) {
			t.Errorf("cookies %v, want %v (one per pool and cache tier)", names, want)
		}
		t.Logf("50 page loads kept www worker %s; cookies %v", first, names)
	})

	t.Run("the fixed www pool and the farm's frontends under load show their requests/s and megacycles per request, and keep their replicas", func(t *testing.T) {
		client := cluster.ClientPod(t, ns)
		url := fmt.Sprintf("http://contoso-frontend.%s.svc.cluster.local/", ns)
		// hey in the client pod cannot be stopped from here: the load runs
		// in chunks until stop is closed.
		stop, done := make(chan struct{}), make(chan heyResult, 1)
		go func() {
			for {
				ctx, cancel := context.WithTimeout(context.Background(), sampleLoadChunk+time.Minute)
				out, err := client.Exec(ctx, "hey", "-z", sampleLoadChunk.String(), "-c", "2", "-q", strconv.Itoa(sampleLoadRate/2),
					"-host", "www.contoso.example", url)
				cancel()
				select {
				case <-stop:
				default:
					if err == nil {
						continue
					}
				}
				done <- heyResult{out, err}
				return
			}
		}()
		defer func() {
			close(stop)
			if r := <-done; r.err != nil {
				t.Errorf("hey: %v\n%s", r.err, r.out)
			}
		}()
		// The requests' rate is over a minute and a fixed pool's figures
		// reach its status once a minute: a quarter of the load shows within
		// two minutes.
		var figures string
		framework.Eventually(t, 150*time.Second, func() error {
			figures = cluster.Run(t, "get", "apppool", "www", "-n", ns, "-o",
				"jsonpath={.status.capacity.requestsPerSecond} {.status.capacity.megacyclesPerRequest} {.status.capacity.requiredMegahertz} {.status.capacity.recommendedReplicas} {.status.replicas}")
			f, err := loadFigures(figures, 5, 3)
			if err != nil {
				return fmt.Errorf("status.capacity (requests/s, megacycles/request, MHz, recommended, replicas) %w", err)
			}
			if f[4] != "2" {
				t.Fatalf("replicas %s with a recommendation of %s: a fixed pool keeps its 2 workers", f[4], f[3])
			}
			return nil
		})
		t.Logf("www (requests/s, megacycles/request, MHz at 30 %%, recommended workers, workers): %s", figures)
		if c := cluster.Run(t, "get", "apppool", "www", "-n", ns, "-o", `jsonpath={.status.conditions[?(@.type=="MetricsAvailable")].message}`); !strings.Contains(c, "a report only") {
			t.Errorf("MetricsAvailable says %q, want that the recommendation is a report", c)
		}
		listing := cluster.Run(t, "get", "apppools", "-n", ns)
		if rps, megacycles := listedColumn(listing, "www", "REQ/S"), listedColumn(listing, "www", "MCYCLES/REQ"); rps == "" || megacycles == "" {
			t.Errorf("kubectl get apppools shows www at REQ/S %q, MCYCLES/REQ %q, want figures:\n%s", rps, megacycles, listing)
		}
		expectPoolMetric(t, "webfarm_pool_megacycles_per_request", ns, "www", "> 0")

		// The farm's frontends carry the same load and are measured the
		// same way; their figures are a report (the frontend keeps its 2).
		framework.Eventually(t, 150*time.Second, func() error {
			figures = cluster.Run(t, "get", "webfarm", "contoso", "-n", ns, "-o",
				"jsonpath={.status.frontendCapacity.requestsPerSecond} {.status.frontendCapacity.megacyclesPerRequest} {.status.frontendCapacity.recommendedReplicas}")
			if _, err := loadFigures(figures, 3, 2); err != nil {
				return fmt.Errorf("status.frontendCapacity (requests/s, megacycles/request, recommended) %w", err)
			}
			return nil
		})
		t.Logf("contoso's frontends (requests/s, megacycles/request, recommended frontends): %s", figures)
		if r := cluster.Run(t, "get", "deployment", "contoso-frontend", "-n", ns, "-o", "jsonpath={.spec.replicas}"); r != "2" {
			t.Errorf("the frontend runs %s replicas, want its own 2: the recommendation is a report", r)
		}
		listing = cluster.Run(t, "get", "webfarms", "-n", ns)
		if rps, megacycles := listedColumn(listing, "contoso", "REQ/S"), listedColumn(listing, "contoso", "MCYCLES/REQ"); rps == "" || megacycles == "" {
			t.Errorf("kubectl get webfarms shows contoso at REQ/S %q, MCYCLES/REQ %q, want figures:\n%s", rps, megacycles, listing)
		}
		expr := fmt.Sprintf(`webfarm_frontend_megacycles_per_request{namespace=%q,farm="contoso"} > 0`, ns)
		cluster.EventuallyQuery(t, time.Minute, expr, func(s []framework.Sample) error {
			if len(s) != 1 {
				return fmt.Errorf("%s: samples %v, want one", expr, s)
			}
			return nil
		})
	})

	t.Run("the operator's metrics count both Envoys connected over xDS and no rejected configuration", func(t *testing.T) {
		farm := ns + "/contoso"
		cluster.EventuallyQuery(t, 30*time.Second, fmt.Sprintf(`sum(webfarm_xds_envoys{farm=%q})`, farm), func(s []framework.Sample) error {
			if len(s) != 1 || s[0].Value != 2 {
				return fmt.Errorf("connected Envoys of %s: %+v, want 2 (the frontend's replicas)", farm, s)
			}
			return nil
		})
		cluster.EventuallyQuery(t, 10*time.Second, fmt.Sprintf(`webfarm_xds_snapshots_total{farm=%q}`, farm), func(s []framework.Sample) error {
			if len(s) != 1 || s[0].Value < 1 {
				return fmt.Errorf("snapshots of %s: %+v, want at least one", farm, s)
			}
			return nil
		})
		if s, err := cluster.Query(fmt.Sprintf(`webfarm_xds_rejections_total{farm=%q} > 0`, farm)); err != nil || len(s) != 0 {
			t.Errorf("rejected configurations: %+v %v, want none", s, err)
		}
	})

	t.Run("a new route reaches the running Envoys in under a second", func(t *testing.T) {
		url := frontend + "/brand/logo.svg"
		if r, err := framework.HTTPGet(url, "Host: www.contoso.example"); err != nil || strings.Contains(r.Body, logoFragment) {
			t.Fatalf("before the change: %d %v; want the www pool's 404", r.Status, err)
		}
		start := time.Now() // sites[0] is the www site, as config/samples/ writes it
		cluster.Run(t, "patch", "webfarm", "contoso", "-n", ns, "--type=json", "-p",
			`[{"op":"add","path":"/spec/sites/0/routes/-","value":{"pathPrefix":"/brand","appPool":"images"}}]`)
		framework.EventuallyEvery(t, 10*time.Second, 20*time.Millisecond, func() error {
			r, err := framework.HTTPGet(url, "Host: www.contoso.example")
			if err != nil || !strings.Contains(r.Body, logoFragment) {
				return fmt.Errorf("GET /brand/logo.svg: %d %v", r.Status, err)
			}
			return nil
		})
		took := time.Since(start)
		t.Logf("the route served %s after kubectl patch returned", took.Round(time.Millisecond))
		if took > time.Second {
			t.Errorf("the new route took %s to serve, want under 1 s", took)
		}
	})

	t.Run("the frontend keeps serving while the operator is away", func(t *testing.T) {
		operator := "deployment/" + cluster.Release.Name
		cluster.Run(t, "scale", "-n", cluster.Release.Namespace, operator, "--replicas=0")
		defer func() {
			cluster.Run(t, "scale", "-n", cluster.Release.Namespace, operator, "--replicas=1")
			cluster.Run(t, "rollout", "status", "-n", cluster.Release.Namespace, operator, "--timeout=2m")
		}()
		framework.Eventually(t, 60*time.Second, func() error {
			if pods := cluster.Pods(t, cluster.Release.Namespace, framework.OperatorPods); len(pods) > 0 {
				return fmt.Errorf("operator pods still there: %+v", pods)
			}
			return nil
		})
		for i := 0; i < 20; i++ {
			r, err := framework.HTTPGet(frontend+"/", "Host: www.contoso.example")
			if err != nil || !strings.Contains(r.Body, wwwPage) {
				t.Fatalf("request %d with the operator gone: %d %v", i, r.Status, err)
			}
		}
	})

	t.Run("editing a pool rolls its pods and the pool serves again", func(t *testing.T) {
		before := cluster.Pods(t, ns, wwwPods)
		if len(before) != 2 {
			t.Fatalf("www pods before the edit: %+v, want 2", before)
		}
		cluster.Run(t, "patch", "apppool", "www", "-n", ns, "--type=merge", "-p", `{"spec":{"memory":"96Mi"}}`)
		cluster.WaitReady(t, ns, 3*time.Minute, "apppool/www")
		framework.Eventually(t, 2*time.Minute, func() error {
			after := cluster.Pods(t, ns, wwwPods)
			old := map[string]bool{}
			for _, p := range before {
				old[p.UID] = true
			}
			if len(after) != 2 {
				return fmt.Errorf("www pods: %+v, want 2 new ones", after)
			}
			for _, p := range after {
				if old[p.UID] || p.Ready != "True" || p.Deleting {
					return fmt.Errorf("www pods: %+v, want 2 ready pods none of which is one of %+v", after, before)
				}
			}
			return nil
		})
		memory := cluster.Run(t, "get", "deployment", "www-pool", "-n", ns, "-o", "jsonpath={.spec.template.spec.containers[0].resources.limits.memory}")
		if memory != "96Mi" {
			t.Errorf("the www pool's memory limit is %q after the edit, want 96Mi", memory)
		}
		framework.ExpectBody(t, 30*time.Second, cluster.ServiceURL(t, ns, "www-pool")+"/", wwwPage)
	})

	t.Run("deleting the farm removes every child of the farm, and the cache tier no route names", func(t *testing.T) {
		cluster.Run(t, "delete", "webfarm", "contoso", "-n", ns, "--wait", "--timeout=60s")
		framework.Eventually(t, 90*time.Second, func() error {
			left := cluster.Run(t, "get", "deployments,services,configmaps,serviceaccounts,poddisruptionbudgets,pods",
				"-n", ns, "-l", "app.kubernetes.io/name in (webfarm-frontend,webfarm-cache)", "-o", "name")
			if left != "" {
				return fmt.Errorf("still there:\n%s", left)
			}
			return nil
		})
		// The pools are resources of their own: they keep serving.
		framework.ExpectBody(t, 30*time.Second, cluster.ServiceURL(t, ns, "www-pool")+"/", wwwPage)
	})

	t.Run("deleting the pools and the policy leaves nothing the operator made", func(t *testing.T) {
		cluster.Run(t, "delete", "apppools,cachepolicies", "--all", "-n", ns, "--wait", "--timeout=60s")
		framework.Eventually(t, 90*time.Second, func() error {
			left := cluster.Run(t, "get", "deployments,replicasets,pods,services,configmaps,serviceaccounts,poddisruptionbudgets",
				"-n", ns, "-l", managedBy, "-o", "name")
			if left != "" {
				return fmt.Errorf("still there:\n%s", left)
			}
			return nil
		})
	})
}

func mustParseURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// loadFigures splits a status's n capacity figures (requests/s and
// megacycles/request first, the recommended count at index recommended)
// and checks that they show the sample's load: at least a quarter of its
// requests/s, at more than 0 megacycles, with a recommendation.
func loadFigures(figures string, n, recommended int) ([]string, error) {
	f := strings.Fields(figures)
	if len(f) != n {
		return nil, fmt.Errorf("%q: not measured yet", figures)
	}
	rps, errR := strconv.ParseFloat(f[0], 64)
	megacycles, errM := strconv.ParseFloat(f[1], 64)
	if errR != nil || errM != nil || rps < sampleLoadRate/4 || !(megacycles > 0) || f[recommended] == "0" {
		return nil, fmt.Errorf("%q: want at least %d requests/s at more than 0 megacycles, and a recommendation", figures, sampleLoadRate/4)
	}
	return f, nil
}

// listedColumn is a row's value in a column of kubectl get's table ("" when
// the row or the column is missing, or the cell is empty).
func listedColumn(table, row, column string) string {
	lines := strings.Split(strings.TrimSpace(table), "\n")
	at := strings.Index(lines[0], column)
	if at < 0 {
		return ""
	}
	for _, l := range lines[1:] {
		if f := strings.Fields(l); len(f) > 0 && f[0] == row && len(l) > at {
			if cell := strings.Fields(l[at:]); len(cell) > 0 && !strings.HasPrefix(l[at:], " ") {
				return cell[0]
			}
		}
	}
	return ""
}
