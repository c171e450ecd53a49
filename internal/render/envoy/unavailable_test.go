package envoy_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/activator"
	"webfarm.dev/operator/internal/endpoints"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/envoy"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/testutil/localenvoy"
	"webfarm.dev/operator/internal/vocabulary"
)

// These tests run the rendered frontend (real Envoy) on loopback and read
// what a client gets, byte for byte, where HTTP.sys would answer 503: a
// farm with unavailableResponse L7 answers 503 with a body that says why,
// one with L4 resets the connection before a byte of an answer.

// rawAnswer sends a GET for host and path on a connection of its own and
// returns all the frontend wrote before it closed, and how it closed (nil:
// it closed the connection in order).
func rawAnswer(t *testing.T, fe *localenvoy.Frontend, host, path string) (string, error) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", address(t, fe.URL), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", path, host); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(conn)
	var timeout net.Error
	if errors.As(err, &timeout) && timeout.Timeout() {
		t.Fatalf("the frontend neither answered nor closed within 10 s (read %q)", got)
	}
	return string(got), err
}

// checkCut fails unless the client read not one byte before the connection
// ended, in order (FIN) or by a reset (RST), so that an HTTP client fails
// the request and a layer 4 balancer sees the connection fail.
func checkCut(t *testing.T, fe *localenvoy.Frontend, host, path string) {
	t.Helper()
	begun := time.Now()
	raw, closed := rawAnswer(t, fe, host, path)
	t.Logf("the client read %d bytes, then the connection ended after %v (%v)", len(raw), time.Since(begun).Round(time.Millisecond), closed)
	if raw != "" {
		t.Errorf("the client read %q; want the connection to end before a byte", raw)
	}
	if closed != nil && !errors.Is(closed, syscall.ECONNRESET) {
		t.Errorf("the connection ended with %v; want EOF or a reset", closed)
	}
	req, err := http.NewRequest(http.MethodGet, fe.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	if resp, err := client.Do(req); err == nil {
		resp.Body.Close()
		t.Errorf("an HTTP client's request got %s; want it to fail", resp.Status)
	}
}

// checkRefused503 fails unless the client got a whole 503 with body.
func checkRefused503(t *testing.T, fe *localenvoy.Frontend, host, path, body string) {
	t.Helper()
	raw, _ := rawAnswer(t, fe, host, path)
	if !strings.HasPrefix(raw, "HTTP/1.1 503 ") || !strings.HasSuffix(raw, "\r\n\r\n"+body) {
		t.Errorf("the client got %q, want a 503 whose body is %q", raw, body)
	}
}

// unavailableFarm runs the frontend of a farm with three routes on
// www.example: /busy to a pool whose one worker takes one request at a time
// and queues ten, /empty to a pool without a worker, /stopped to a stopped
// pool.
func unavailableFarm(t *testing.T, response v1.UnavailableResponse, workerPort int) *localenvoy.Frontend {
	t.Helper()
	platform := model.Platform{XDSHost: "127.0.0.1", XDSPort: 18000}
	farm, err := model.ResolveFarm(&v1.WebFarm{ObjectMeta: metav1.ObjectMeta{Name: "contoso", Namespace: "web"}, Spec: v1.WebFarmSpec{
		UnavailableResponse: response,
		Frontend:            v1.Frontend{Replicas: 1},
		Sites: []v1.Site{{Name: "www", Hosts: []v1.Hostname{"www.example"}, Routes: []v1.Route{
			{PathPrefix: "/busy", AppPool: "busy"}, {PathPrefix: "/empty", AppPool: "empty"},
			{PathPrefix: "/stopped", AppPool: "stopped"},
		}}},
	}}, platform)
	if err != nil {
		t.Fatal(err)
	}
	pools := map[string]model.Pool{}
	for _, name := range []string{"busy", "empty", "stopped"} {
		spec := v1.AppPoolSpec{Content: &v1.Content{ConfigMap: v1.ConfigMapContent{Name: "site"}}, MaxConcurrentRequests: 1, Queue: v1.Queue{Length: 10}}
		p, err := model.ResolvePool(&v1.AppPool{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "web"}, Spec: spec}, platform)
		if err != nil {
			t.Fatal(err)
		}
		pools[name] = p.WithRuntime(model.Runtime{Stopped: name == "stopped", Replicas: 1})
	}
	worker := endpoints.Endpoint{Address: "127.0.0.1", Port: uint32(workerPort)}
	return runFrontend(t, farm, pools, endpoints.Backends{vocabulary.PoolCluster("busy"): {worker}, vocabulary.PoolCluster("stopped"): {worker}})
}

// fillQueue holds the busy pool's worker with one request and queues ten
// more behind it; the next request finds the queue full.
func fillQueue(t *testing.T, fe *localenvoy.Frontend, held chan struct{}) *sync.WaitGroup {
	t.Helper()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _, _ = rawAnswer(t, fe, "www.example", "/busy/hold") }()
	<-held
	for i := range 10 {
		wg.Add(1)
		go func() { defer wg.Done(); _, _ = rawAnswer(t, fe, "www.example", fmt.Sprintf("/busy/queued-%d", i)) }()
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		waiting, err := fe.Counter("cluster." + vocabulary.PoolCluster("busy") + ".upstream_rq_pending_active")
		if err != nil || waiting != 10 {
			return fmt.Errorf("%d requests in the queue (%v), want 10", waiting, err)
		}
		return nil
	})
	return &wg
}

func TestWhereIISResetsTheConnectionAnL4FarmCutsItAndAnL7FarmAnswers503(t *testing.T) {
	tests := []struct {
		name     string
		response v1.UnavailableResponse
		check    func(t *testing.T, fe *localenvoy.Frontend, path, l7Body string)
	}{
		{"an L4 farm cuts the connection", v1.UnavailableL4,
			func(t *testing.T, fe *localenvoy.Frontend, path, _ string) { checkCut(t, fe, "www.example", path) }},
		{"an L7 farm answers 503 and says why", v1.UnavailableL7,
			func(t *testing.T, fe *localenvoy.Frontend, path, body string) {
				checkRefused503(t, fe, "www.example", path, body)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, held, release := queueWorker(t, 0)
			port, err := strconv.Atoi(strings.TrimPrefix(srv.URL, "http://127.0.0.1:"))
			if err != nil {
				t.Fatal(err)
			}
			fe := unavailableFarm(t, tt.response, port)

			t.Run("a pool without a ready worker", func(t *testing.T) { tt.check(t, fe, "/empty/", envoy.NoWorkerBody) })
			t.Run("an administrator-stopped pool", func(t *testing.T) { tt.check(t, fe, "/stopped/", vocabulary.PoolStoppedBody) })

			queued := fillQueue(t, fe, held)
			t.Run("a request beyond a full queue", func(t *testing.T) { tt.check(t, fe, "/busy/overflow", envoy.QueueFullBody) })
			// checkCut sends two requests beyond the queue (raw, then by an
			// HTTP client), checkRefused503 one.
			wantRejected := uint64(1)
			if tt.response == v1.UnavailableL4 {
				wantRejected = 2
			}
			if rejected, err := fe.Counter("cluster." + vocabulary.PoolCluster("busy") + ".upstream_rq_pending_overflow"); err != nil || rejected != wantRejected {
				t.Errorf("the pool's queue refused %d requests (%v), want %d", rejected, err, wantRejected)
			}
			close(release)
			queued.Wait()
			if raw, _ := rawAnswer(t, fe, "www.example", "/busy/after"); !strings.HasPrefix(raw, "HTTP/1.1 200 ") {
				t.Errorf("once the queue emptied a request got %q, want 200", raw)
			}
			if tt.response == v1.UnavailableL4 {
				t.Run("an HTTP/2 client's stream is reset, its connection serves on", func(t *testing.T) { checkH2Reset(t, fe) })
			}
		})
	}
}

// checkH2Reset: over HTTP/2 the stopped pool's request ends in RST_STREAM
// (INTERNAL_ERROR) without a response, and the next request on the same
// connection is answered.
func checkH2Reset(t *testing.T, fe *localenvoy.Frontend) {
	t.Helper()
	h2 := newH2CClient()
	defer h2.CloseIdleConnections()
	request := func(path string, reused *bool) (*http.Response, error) {
		req, err := http.NewRequest(http.MethodGet, fe.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = "www.example"
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
			GotConn: func(info httptrace.GotConnInfo) { *reused = info.Reused },
		}))
		return h2.Do(req)
	}
	var reused bool
	resp, err := request("/stopped/", &reused)
	var reset http2.StreamError
	switch {
	case err == nil:
		resp.Body.Close()
		t.Fatalf("the stopped pool's request got %s over HTTP/2; want its stream reset", resp.Status)
	case !errors.As(err, &reset) || reset.Code != http2.ErrCodeInternal:
		t.Fatalf("the stopped pool's request failed with %v; want RST_STREAM INTERNAL_ERROR", err)
	}
	resp, err = request("/busy/after", &reused)
	if err != nil {
		t.Fatalf("the next request on the connection: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !reused {
		t.Errorf("the next request got %s on a reused connection: %v; want 200 on the same connection", resp.Status, reused)
	}
}

// activatorFarm runs the frontend of a farm whose site www.example sends
// everything to pool "shop", idle and starting on demand, through a real
// activator on loopback that gives up: it waits timeout for a worker that
// never comes, and takes at most maxWaiting requests at once.
func activatorFarm(t *testing.T, response v1.UnavailableResponse, timeout time.Duration, maxWaiting int) *localenvoy.Frontend {
	t.Helper()
	a := httptest.NewServer(&activator.Activator{Pools: neverReady{}, Timeout: timeout, MaxWaiting: maxWaiting, Poll: 20 * time.Millisecond})
	t.Cleanup(a.Close)
	port, err := strconv.Atoi(strings.TrimPrefix(a.URL, "http://127.0.0.1:"))
	if err != nil {
		t.Fatal(err)
	}
	platform := model.Platform{XDSHost: "127.0.0.1", XDSPort: 18000, ActivatorPort: int32(port), ActivationTimeout: time.Minute}
	farm, err := model.ResolveFarm(&v1.WebFarm{ObjectMeta: metav1.ObjectMeta{Name: "contoso", Namespace: "web"}, Spec: v1.WebFarmSpec{
		UnavailableResponse: response,
		Frontend:            v1.Frontend{Replicas: 1},
		Sites:               []v1.Site{{Name: "www", Hosts: []v1.Hostname{"www.example"}, Routes: []v1.Route{{PathPrefix: "/", AppPool: "shop"}}}},
	}}, platform)
	if err != nil {
		t.Fatal(err)
	}
	p, err := model.ResolvePool(&v1.AppPool{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "web"}, Spec: v1.AppPoolSpec{
		Content: &v1.Content{ConfigMap: v1.ConfigMapContent{Name: "site"}}, Idle: v1.Idle{OnDemandStart: new(true)},
	}}, platform)
	if err != nil {
		t.Fatal(err)
	}
	return runFrontend(t, farm, map[string]model.Pool{"shop": p.WithRuntime(model.Runtime{Idle: true})}, endpoints.Backends{})
}

// neverReady is a pool that never gets a ready worker.
type neverReady struct{}

// Serves: every farm routes to the pool.
func (neverReady) Serves(context.Context, string, string, string) bool { return true }

func (neverReady) ReadyWorker(context.Context, string, string) (string, bool) { return "", false }
func (neverReady) Start(context.Context, string, string) (bool, error)        { return true, nil }
func (neverReady) NoWorkerComing(context.Context, string, string) error       { return nil }

func TestWhereTheActivatorGivesUpAnL4FarmResetsAndAnL7FarmAnswers503(t *testing.T) {
	tests := []struct {
		name       string
		response   v1.UnavailableResponse
		maxWaiting int
		check      func(t *testing.T, fe *localenvoy.Frontend)
	}{
		{"an L4 farm resets a request whose pool did not start in time", v1.UnavailableL4, 10,
			func(t *testing.T, fe *localenvoy.Frontend) { checkCut(t, fe, "www.example", "/cart") }},
		{"an L4 farm resets a request beyond the start queue", v1.UnavailableL4, 0,
			func(t *testing.T, fe *localenvoy.Frontend) { checkCut(t, fe, "www.example", "/cart") }},
		{"an L7 farm answers 503 to a request whose pool did not start in time", v1.UnavailableL7, 10,
			func(t *testing.T, fe *localenvoy.Frontend) {
				checkRefused503(t, fe, "www.example", "/cart", activator.TimeoutBody)
			}},
		{"an L7 farm answers 503 to a request beyond the start queue", v1.UnavailableL7, 0,
			func(t *testing.T, fe *localenvoy.Frontend) {
				checkRefused503(t, fe, "www.example", "/cart", activator.QueueFullBody)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fe := activatorFarm(t, tt.response, 200*time.Millisecond, tt.maxWaiting)
			tt.check(t, fe)
			if n, err := fe.Counter("cluster." + envoy.ActivatorCluster + ".upstream_rq_total"); err != nil || n == 0 {
				t.Errorf("the activator took %d requests (%v); want the requests to have reached it", n, err)
			}
		})
	}
}
