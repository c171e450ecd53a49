package envoy_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/envoy"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/testutil/localcache"
	"webfarm.dev/operator/internal/testutil/localenvoy"
	"webfarm.dev/operator/internal/vocabulary"
)

// These tests read the access log of the frontend the operator renders (real
// Envoy) in front of real workers and a real cache tier on loopback.

// logLine is one line of the access log.
type logLine map[string]any

// accessLog stops the frontend (so that every request has ended and been
// written) and returns the lines of its access log.
func accessLog(t *testing.T, fe *localenvoy.Frontend) []logLine {
	t.Helper()
	fe.Stop()
	var lines []logLine
	for _, text := range strings.Split(fe.Log(), "\n") {
		if !strings.HasPrefix(text, "{") {
			continue // Envoy's own messages
		}
		var l logLine
		if err := json.Unmarshal([]byte(text), &l); err != nil {
			t.Fatalf("an access log line is not JSON (%v): %s", err, text)
		}
		lines = append(lines, l)
	}
	return lines
}

// send makes a request to the frontend for host and returns its status, the
// response's headers and the length of its body.
func send(t *testing.T, fe *localenvoy.Frontend, method, host, path string) (int, http.Header, int) {
	t.Helper()
	req, err := http.NewRequest(method, fe.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, len(body)
}

// address is a loopback URL's host:port.
func address(t *testing.T, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// startCacheTier runs a real cache tier on loopback, cache policy name of
// namespace web in front of pool's worker at workerPort, and returns it and
// its port. It keeps the first response: the second request is a hit.
func startCacheTier(t *testing.T, name, pool string, workerPort int) (*localcache.Tier, int) {
	t.Helper()
	tier, err := localcache.Start(testutil.Tool(t, "WEBFARM_NGINX", "nginx"), model.Cache{
		Name: name, Namespace: "web",
		FrequentHitThreshold: 1, FrequentHitPeriod: 10 * time.Second, ObjectTTL: 30 * time.Second,
		MaxObjectSizeBytes: 256 << 10, MemorySizeBytes: 64 << 20, ClientCacheMode: "NoControl",
		Replicas: 1, CPUMilli: 1000,
		Upstreams: []model.Upstream{{Pool: pool, Address: "127.0.0.1", Port: int32(workerPort)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tier.Stop)
	port, err := strconv.Atoi(strings.TrimPrefix(tier.URL, "http://127.0.0.1:"))
	if err != nil {
		t.Fatal(err)
	}
	return tier, port
}

// checkFields compares a line's fields with want; a want of nil asks for
// JSON null (Envoy has no value), numbers compare as JSON numbers.
func checkFields(t *testing.T, l logLine, want map[string]any) {
	t.Helper()
	for field, w := range want {
		got, present := l[field]
		if !present {
			t.Errorf("%s: no field %q in %v", l["path"], field, l)
			continue
		}
		if n, ok := w.(int); ok {
			w = float64(n)
		}
		if got != w {
			t.Errorf("%s: %s = %#v, want %#v", l["path"], field, got, w)
		}
	}
}

var requestID = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func TestTheAccessLogHasALineForEachRequestWithItsSitePoolWorkerAndCacheStatus(t *testing.T) {
	www, images := worker(t, "www-1"), worker(t, "images-1")
	tier, tierPort := startCacheTier(t, "static", "images", images)
	fe := startFrontend(t, &v1.WebFarm{Spec: v1.WebFarmSpec{Sites: []v1.Site{
		{Name: "www", Hosts: []v1.Hostname{"www.example"}, Routes: []v1.Route{
			{PathPrefix: "/", AppPool: "www"},
			{PathPrefix: "/images", AppPool: "images", CachePolicy: "static"},
		}},
		{Name: "shop", Hosts: []v1.Hostname{"shop.example"}, Routes: []v1.Route{{AppPool: "www"}}},
	}}}, map[string][]int{"www": {www}, "images": {images}}, nil, map[string]int{"static": tierPort})

	type request struct{ method, host, path string }
	requests := []request{
		{http.MethodGet, "www.example", "/page.html"},
		{http.MethodHead, "shop.example:8080", "/small.txt?from=shop"},
		{http.MethodGet, "www.example", "/images/logo.png"},
		{http.MethodGet, "www.example", "/images/logo.png"},
		{http.MethodGet, "www.example", "/missing.html"},
		{http.MethodGet, "nowhere.example", "/page.html"},
	}
	var answers []struct{ status, bytes int }
	for _, r := range requests {
		status, header, n := send(t, fe, r.method, r.host, r.path)
		if header.Get(envoy.QueueHeader) != "" {
			t.Errorf("%s %s: %s %q on an answer the queue let through", r.method, r.path, envoy.QueueHeader, header.Get(envoy.QueueHeader))
		}
		answers = append(answers, struct{ status, bytes int }{status, n})
	}

	lines := accessLog(t, fe)
	if len(lines) != len(requests) {
		t.Fatalf("%d access log lines for %d requests:\n%v", len(lines), len(requests), lines)
	}
	wwwWorker, tierWorker := fmt.Sprintf("127.0.0.1:%d", www), address(t, tier.URL)
	want := []map[string]any{
		{"site": "www", "pool": "www", "cachePolicy": nil, "worker": wwwWorker, "status": 200, "cacheStatus": nil, "responseFlags": "-"},
		{"site": "shop", "pool": "www", "cachePolicy": nil, "worker": wwwWorker, "status": 200, "cacheStatus": nil, "responseFlags": "-"},
		// The path is the client's, not the one the cache tier saw (/logo.png).
		{"site": "www", "pool": "images", "cachePolicy": "static", "worker": tierWorker, "status": 200, "cacheStatus": "MISS", "responseFlags": "-"},
		{"site": "www", "pool": "images", "cachePolicy": "static", "worker": tierWorker, "status": 200, "cacheStatus": "HIT", "responseFlags": "-"},
		{"site": "www", "pool": "www", "cachePolicy": nil, "worker": wwwWorker, "status": 404, "cacheStatus": nil, "responseFlags": "-"},
		// No site has the host: Envoy answers 404 with NR (no route).
		{"site": nil, "pool": nil, "cachePolicy": nil, "worker": nil, "status": 404, "cacheStatus": nil, "responseFlags": "NR"},
	}
	ids := map[any]bool{}
	for i, l := range lines {
		r := requests[i]
		t.Logf("%s", mustJSON(t, l))
		w := want[i]
		// The host as the client sent it: with its port, which the
		// site's match ignored.
		w["method"], w["host"], w["path"] = r.method, r.host, r.path
		w["queue"], w["clientAddress"], w["bytesIn"], w["bytesOut"] = envoy.QueueServed, "127.0.0.1", 0, answers[i].bytes
		// Plain HTTP: no TLS version, no SNI.
		w["tlsVersion"], w["sni"] = nil, nil
		// These workers do not name their pod.
		w["workerPod"] = nil
		checkFields(t, l, w)
		if answers[i].status != int(l["status"].(float64)) {
			t.Errorf("%s: the client got %d, the log says %v", r.path, answers[i].status, l["status"])
		}
		if id, _ := l["requestId"].(string); !requestID.MatchString(id) || ids[id] {
			t.Errorf("%s: requestId %q is not a fresh UUID", r.path, id)
		}
		ids[l["requestId"]] = true
		if ts, _ := l["time"].(string); !isRecent(ts) {
			t.Errorf("%s: time %q is not an RFC 3339 time of the last minute", r.path, ts)
		}
		for _, ms := range []string{"durationMs", "upstreamTimeMs", "queueTimeMs"} {
			if _, isNumber := l[ms].(float64); !isNumber && (w["worker"] != nil || ms == "durationMs") {
				t.Errorf("%s: %s = %#v, want a number of milliseconds", r.path, ms, l[ms])
			}
		}
	}
}

func isRecent(ts string) bool {
	at, err := time.Parse(time.RFC3339, ts)
	return err == nil && time.Since(at) < time.Minute && time.Since(at) > -time.Second
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// queueWorker is a worker that holds /hold until release closes (telling
// held when it has it), and refuses a request that waited in the frontend
// longer than timeout with model.QueueTimeoutStatus, as a pool's nginx does
// (internal/render/nginx tests that check with the real nginx).
func queueWorker(t *testing.T, timeout time.Duration) (srv *httptest.Server, held chan struct{}, release chan struct{}) {
	held, release = make(chan struct{}, 1), make(chan struct{})
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Webfarm-Worker", "web-0")
		if at, err := strconv.ParseInt(r.Header.Get(model.QueuedAtHeader), 10, 64); err == nil && time.Since(time.UnixMilli(at)) > timeout {
			w.WriteHeader(model.QueueTimeoutStatus)
			return
		}
		if r.URL.Path == "/hold" {
			held <- struct{}{}
			<-release
		}
		_, _ = io.WriteString(w, "done\n")
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	return srv, held, release
}

func TestTheAccessLogSaysWhatThePoolsQueueDidWithEachRequest(t *testing.T) {
	const queueTimeout = 500 * time.Millisecond
	srv, held, release := queueWorker(t, queueTimeout)
	port, err := strconv.Atoi(strings.TrimPrefix(srv.URL, "http://127.0.0.1:"))
	if err != nil {
		t.Fatal(err)
	}
	// One frontend replica: the pool's limits are its own. The worker takes
	// one request at a time, ten wait, the next is refused.
	fe := startFrontend(t, &v1.WebFarm{Spec: v1.WebFarmSpec{
		Frontend: v1.Frontend{Replicas: 1},
		Sites:    []v1.Site{{Name: "www", Hosts: []v1.Hostname{"www.example"}, Routes: []v1.Route{{AppPool: "web"}}}},
	}}, map[string][]int{"web": {port}}, map[string]v1.AppPoolSpec{"web": {
		Content:               &v1.Content{ConfigMap: v1.ConfigMapContent{Name: "site"}},
		MaxConcurrentRequests: 1,
		Queue:                 v1.Queue{Length: 10, Timeout: v1.Duration(queueTimeout.String())},
	}}, nil)

	var wg sync.WaitGroup
	answers := make(chan string, 12)
	request := func(path string) {
		defer wg.Done()
		status, header, _ := send(t, fe, http.MethodGet, "www.example", path)
		answers <- fmt.Sprintf("%s %d %s", path, status, header.Get(envoy.QueueHeader))
	}
	wg.Add(1)
	go request("/hold")
	<-held
	for i := range 10 {
		wg.Add(1)
		go request(fmt.Sprintf("/queued-%d", i))
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		waiting, err := fe.Counter("cluster." + vocabulary.PoolCluster("web") + ".upstream_rq_pending_active")
		if err != nil || waiting != 10 {
			return fmt.Errorf("%d requests in the queue (%v), want 10", waiting, err)
		}
		return nil
	})
	queuedBy := time.Now()
	if status, header, _ := send(t, fe, http.MethodGet, "www.example", "/overflow"); status != http.StatusServiceUnavailable || header.Get(envoy.QueueHeader) != envoy.QueueRejected {
		t.Errorf("a request beyond the full queue got %d %s %q, want 503 and %q", status, envoy.QueueHeader, header.Get(envoy.QueueHeader), envoy.QueueRejected)
	}
	// The waiting requests must outwait the queue timeout before the worker
	// takes them.
	<-time.After(time.Until(queuedBy.Add(queueTimeout)))
	close(release)
	wg.Wait()
	close(answers)
	for a := range answers {
		t.Log(a)
	}
	if status, _, _ := send(t, fe, http.MethodGet, "www.example", "/after"); status != http.StatusOK {
		t.Errorf("a request after the queue emptied got %d", status)
	}

	lines := accessLog(t, fe)
	byQueue := map[string][]logLine{}
	for _, l := range lines {
		t.Logf("%s", mustJSON(t, l))
		q, _ := l["queue"].(string)
		byQueue[q] = append(byQueue[q], l)
	}
	if len(lines) != 13 || len(byQueue[envoy.QueueServed]) != 2 || len(byQueue[envoy.QueueRejected]) != 1 || len(byQueue[envoy.QueueTimedOut]) != 10 {
		t.Fatalf("%d lines: %d served, %d rejected, %d timed out; want 13: 2, 1, 10",
			len(lines), len(byQueue[envoy.QueueServed]), len(byQueue[envoy.QueueRejected]), len(byQueue[envoy.QueueTimedOut]))
	}
	workerAddress := address(t, srv.URL)
	for _, l := range byQueue[envoy.QueueServed] {
		checkFields(t, l, map[string]any{"site": "www", "pool": "web", "status": 200, "responseFlags": "-", "worker": workerAddress, "workerPod": "web-0"})
	}
	// Envoy refused it at once: it never reached a worker (UO: upstream overflow).
	checkFields(t, byQueue[envoy.QueueRejected][0], map[string]any{
		"path": "/overflow", "site": "www", "pool": "web", "status": 503, "responseFlags": "UO", "worker": nil, "upstreamTimeMs": nil,
	})
	for _, l := range byQueue[envoy.QueueTimedOut] {
		// The frontend's 503 replaces the worker's answer, and its headers.
		checkFields(t, l, map[string]any{"site": "www", "pool": "web", "status": 503, "worker": workerAddress, "workerPod": nil})
		if !strings.HasPrefix(l["path"].(string), "/queued-") {
			t.Errorf("%s timed out in the queue; only the queued requests waited", l["path"])
		}
		if waited, _ := l["queueTimeMs"].(float64); waited < float64(queueTimeout.Milliseconds()) {
			t.Errorf("%s: queueTimeMs %v, want at least the queue timeout (%d)", l["path"], l["queueTimeMs"], queueTimeout.Milliseconds())
		}
	}
}

func TestTheAccessLogCanBeTurnedOffOrSampled(t *testing.T) {
	port := worker(t, "w1")
	count := func(t *testing.T, setting v1.AccessLog, requests int) int {
		fe := frontend(t, port, func(wf *v1.WebFarm) { wf.Spec.Frontend.AccessLog = setting })
		for range requests {
			if status, _, _ := send(t, fe, http.MethodGet, "www.example", "/small.txt"); status != http.StatusOK {
				t.Fatalf("status %d", status)
			}
		}
		return len(accessLog(t, fe))
	}
	t.Run("a farm whose access log is off logs nothing", func(t *testing.T) {
		if n := count(t, v1.AccessLog{Enabled: new(false)}, 20); n != 0 {
			t.Errorf("%d lines for 20 requests, want none", n)
		}
	})
	t.Run("a farm that logs 10 percent logs some requests, not all", func(t *testing.T) {
		// 200 draws at 10 %: 20 lines expected; none, or 100 and more, has
		// a probability below one in a billion.
		n := count(t, v1.AccessLog{SamplePercent: 10}, 200)
		t.Logf("%d lines for 200 requests at 10 %%", n)
		if n == 0 || n >= 100 {
			t.Errorf("%d lines for 200 requests, want more than none and fewer than 100", n)
		}
	})
	t.Run("by default every request is logged", func(t *testing.T) {
		if n := count(t, v1.AccessLog{}, 20); n != 20 {
			t.Errorf("%d lines for 20 requests, want 20", n)
		}
	})
}

// A running frontend writes each line out within its flush interval, so
// "kubectl logs -f" shows requests as they come.
func TestARunningFrontendWritesItsAccessLogWithinASecondOrSo(t *testing.T) {
	fe := frontend(t, worker(t, "w1"), func(*v1.WebFarm) {})
	if status, _, _ := send(t, fe, http.MethodGet, "www.example", "/small.txt"); status != http.StatusOK {
		t.Fatalf("status %d", status)
	}
	sent := time.Now()
	testutil.Eventually(t, 5*time.Second, func() error {
		if !strings.Contains(fe.Log(), `"path":"/small.txt"`) {
			return fmt.Errorf("no access log line for the request yet")
		}
		return nil
	})
	t.Logf("the line was written %s after the request", time.Since(sent).Round(100*time.Millisecond))
}
