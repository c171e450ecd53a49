package envoy_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"golang.org/x/net/websocket"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/endpoints"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/testutil/localenvoy"
	"webfarm.dev/operator/internal/testutil/localpool"
	"webfarm.dev/operator/internal/vocabulary"
)

// These tests open WebSockets through the frontend the operator renders
// (real Envoy) and a pool's nginx as the operator renders it (real nginx) to
// a Go application in place of the app container.

// appWorker runs one worker of pool "chat": its nginx in front of an app
// named name. It returns the nginx's port.
func appWorker(t *testing.T, name string) int {
	t.Helper()
	app := localpool.StartApp(t, name)
	return localpool.Start(t, chatPool(t, app.Port)).Port
}

// chatPool is pool "chat" with an app on appPort and the API's defaults.
func chatPool(t *testing.T, appPort int32) model.Pool {
	t.Helper()
	p, err := model.ResolvePool(&v1.AppPool{ObjectMeta: metav1.ObjectMeta{Name: "chat", Namespace: "web"},
		Spec: v1.AppPoolSpec{App: v1.AppContainer{Image: "registry.example/chat:1", Port: appPort}}}, model.Platform{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// cacheStub stands in for a cache tier: it answers every request itself and
// counts the upgrades it was asked for.
func cacheStub(t *testing.T, upgrades *atomic.Int32) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "" {
			upgrades.Add(1)
		}
		w.Header().Set("X-Worker", "cache")
		_, _ = w.Write([]byte("from the cache\n"))
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return l.Addr().(*net.TCPAddr).Port
}

// chatFrontend runs the rendered frontend of a farm whose site
// www.example sends "/" to pool chat and "/cached" to pool chat through the
// cache tier "pages" (the stub at cachePort).
func chatFrontend(t *testing.T, workers []int, cachePort int, edit func(*v1.WebFarm)) *localenvoy.Frontend {
	t.Helper()
	return chatFrontendOf(t, chatPool(t, 1), workers, cachePort, edit)
}

// chatFrontendOf is chatFrontend with the pool's queue limits taken from pool.
func chatFrontendOf(t *testing.T, pool model.Pool, workers []int, cachePort int, edit func(*v1.WebFarm)) *localenvoy.Frontend {
	t.Helper()
	wf := &v1.WebFarm{
		ObjectMeta: metav1.ObjectMeta{Name: "contoso", Namespace: "web"},
		Spec: v1.WebFarmSpec{Sites: []v1.Site{{Name: "www", Hosts: []v1.Hostname{"www.example"}, Routes: []v1.Route{
			{PathPrefix: "/", AppPool: "chat"},
			{PathPrefix: "/cached", AppPool: "chat", CachePolicy: "pages"},
		}}}},
	}
	if edit != nil {
		edit(wf)
	}
	farm, err := model.ResolveFarm(wf, model.Platform{XDSHost: "127.0.0.1", XDSPort: 18000})
	if err != nil {
		t.Fatal(err)
	}
	backends := endpoints.Backends{vocabulary.CacheCluster("pages"): {{Address: "127.0.0.1", Port: uint32(cachePort)}}}
	for _, port := range workers {
		backends[vocabulary.PoolCluster("chat")] = append(backends[vocabulary.PoolCluster("chat")], endpoints.Endpoint{Address: "127.0.0.1", Port: uint32(port)})
	}
	return runFrontend(t, farm, map[string]model.Pool{"chat": pool}, backends)
}

// dialWebSocket opens a WebSocket to path on www.example through the
// frontend, sending the given headers (cookies) with the upgrade.
func dialWebSocket(t *testing.T, fe *localenvoy.Frontend, path string, header http.Header) *websocket.Conn {
	t.Helper()
	config, err := websocket.NewConfig("ws://www.example"+path, "http://www.example/")
	if err != nil {
		t.Fatal(err)
	}
	config.Header = header
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(fe.URL, "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	ws, err := websocket.NewClient(config, conn)
	if err != nil {
		conn.Close()
		t.Fatalf("WebSocket upgrade for %s: %v", path, err)
	}
	_ = conn.SetDeadline(time.Time{})
	t.Cleanup(func() { ws.Close() })
	return ws
}

// echo sends msg and returns the answer, within 10 s.
func echo(t *testing.T, ws *websocket.Conn, msg string) string {
	t.Helper()
	_ = ws.SetDeadline(time.Now().Add(10 * time.Second))
	defer func() { _ = ws.SetDeadline(time.Time{}) }()
	if err := websocket.Message.Send(ws, msg); err != nil {
		t.Fatalf("sending %q: %v", msg, err)
	}
	var got string
	if err := websocket.Message.Receive(ws, &got); err != nil {
		t.Fatalf("waiting for the echo of %q: %v", msg, err)
	}
	return got
}

func TestAWebSocketEchoesThroughTheFrontendAndThePoolsNginxToTheApp(t *testing.T) {
	worker := appWorker(t, "w1")
	tests := []struct {
		name string
		path string
		edit func(*v1.WebFarm)
	}{
		{"a route to the pool upgrades", "/ws", nil},
		{"a route through a cache tier upgrades at the pool, not the cache", "/cached/ws", nil},
		{"the upgrade passes the compression filter", "/ws", func(wf *v1.WebFarm) { wf.Spec.Frontend.Compression = new(true) }},
		{"the upgrade passes a site's bandwidth limit", "/ws", func(wf *v1.WebFarm) { wf.Spec.Sites[0].MaxBandwidthBytesPerSecond = 64 * 1024 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cacheUpgrades atomic.Int32
			fe := chatFrontend(t, []int{worker}, cacheStub(t, &cacheUpgrades), tt.edit)
			header := http.Header{"Accept-Encoding": {"gzip, br"}}
			ws := dialWebSocket(t, fe, tt.path, header)
			for i, msg := range []string{"hello", strings.Repeat("a longer message, ", 200)} {
				if got, want := echo(t, ws, msg), "w1: "+msg; got != want {
					t.Fatalf("message %d came back as %.40q..., want %.40q...", i, got, want)
				}
			}
			if n := cacheUpgrades.Load(); n != 0 {
				t.Errorf("the cache tier was asked for %d upgrades", n)
			}
			// The route's other requests still go where they went.
			wantWorker := "w1"
			if strings.HasPrefix(tt.path, "/cached") {
				wantWorker = "cache"
			}
			if h, _ := get(t, fe.URL+strings.TrimSuffix(tt.path, "/ws")+"/", "www.example"); h.Get("X-Worker") != wantWorker {
				t.Errorf("a page of the route came from %q, want %q", h.Get("X-Worker"), wantWorker)
			}
		})
	}
}

func TestAnOpenWebSocketOutlivesTheRequestTimeoutWhileItCarriesMessages(t *testing.T) {
	var cacheUpgrades atomic.Int32
	fe := chatFrontend(t, []int{appWorker(t, "w1")}, cacheStub(t, &cacheUpgrades), func(wf *v1.WebFarm) {
		wf.Spec.Frontend.RequestTimeout = "1s"
		wf.Spec.Frontend.WebSocketIdleTimeout = "3s"
	})
	ws := dialWebSocket(t, fe, "/ws", nil)
	start := time.Now()
	// Four request timeouts long, each pause longer than the request timeout
	// and shorter than the idle timeout.
	const pause = 1500 * time.Millisecond
	for i := range 4 {
		msg := "tick " + strings.Repeat("!", i)
		if got := echo(t, ws, msg); got != "w1: "+msg {
			t.Fatalf("after %s the echo is %q", time.Since(start).Round(time.Millisecond), got)
		}
		if i < 3 {
			time.Sleep(pause) // the pace of the conversation, not a wait for a state
		}
	}
	t.Logf("4 messages %s apart over %s through a frontend whose request timeout is 1s", pause, time.Since(start).Round(time.Millisecond))
}

func TestAnIdleWebSocketIsClosedAfterTheIdleTimeout(t *testing.T) {
	var cacheUpgrades atomic.Int32
	fe := chatFrontend(t, []int{appWorker(t, "w1")}, cacheStub(t, &cacheUpgrades), func(wf *v1.WebFarm) {
		wf.Spec.Frontend.RequestTimeout = "10s"
		wf.Spec.Frontend.WebSocketIdleTimeout = "1s"
	})
	ws := dialWebSocket(t, fe, "/ws", nil)
	if got := echo(t, ws, "hello"); got != "w1: hello" {
		t.Fatalf("echo %q", got)
	}
	idleSince := time.Now()
	_ = ws.SetReadDeadline(idleSince.Add(10 * time.Second))
	var msg string
	err := websocket.Message.Receive(ws, &msg)
	idle := time.Since(idleSince)
	var timeout net.Error
	if err == nil || (errors.As(err, &timeout) && timeout.Timeout()) {
		t.Fatalf("the idle WebSocket is still open after %s (read: %q, %v)", idle.Round(time.Millisecond), msg, err)
	}
	// Envoy gives the client up to a second to close its end first.
	t.Logf("the frontend closed the idle WebSocket after %s (%v)", idle.Round(time.Millisecond), err)
	if idle < 900*time.Millisecond || idle > 4*time.Second {
		t.Errorf("closed after %s idle, want about the idle timeout of 1s", idle.Round(time.Millisecond))
	}
}

// With cookie affinity a browser's WebSocket reaches the worker that served
// its page: the upgrade carries the page's cookie.
func TestWithCookieAffinityAWebSocketReachesTheWorkerOfItsPage(t *testing.T) {
	var cacheUpgrades atomic.Int32
	fe := chatFrontend(t, []int{appWorker(t, "w1"), appWorker(t, "w2")}, cacheStub(t, &cacheUpgrades), func(wf *v1.WebFarm) {
		wf.Spec.SessionAffinity = v1.SessionAffinity{Type: v1.AffinityCookie, Cookie: &v1.AffinityCookieSpec{Name: "CONTOSO"}}
	})
	seen := map[string]int{}
	for browser := range 6 {
		jar, err := cookiejar.New(nil)
		if err != nil {
			t.Fatal(err)
		}
		c := &http.Client{Jar: jar, Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: dialFrontend(fe.URL)}}
		resp, err := c.Get("http://www.example/")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		page := resp.Header.Get("X-Worker")
		seen[page]++
		header := http.Header{}
		for _, ck := range jar.Cookies(mustURL(t, "http://www.example/ws")) {
			header.Add("Cookie", ck.Name+"="+ck.Value)
		}
		if header.Get("Cookie") == "" {
			t.Fatalf("browser %d: the page set no affinity cookie", browser)
		}
		// Twice: a reconnecting client keeps its worker too.
		for range 2 {
			ws := dialWebSocket(t, fe, "/ws", header)
			if got, want := echo(t, ws, "hi"), page+": hi"; got != want {
				t.Fatalf("browser %d: its page came from %s, its WebSocket answered %q", browser, page, got)
			}
			ws.Close()
		}
	}
	t.Logf("pages and WebSockets per worker: %v", seen)
	if len(seen) != 2 {
		t.Errorf("the browsers' pages came from %v: both workers should serve some", seen)
	}
}

// An open WebSocket holds one of its worker's concurrent requests for its
// whole life: with a limit of one, the next request waits in the pool's
// queue until the WebSocket closes.
func TestAnOpenWebSocketHoldsOneOfItsWorkersConcurrentRequests(t *testing.T) {
	pool := chatPool(t, 1)
	pool.MaxConcurrentRequests = 1
	var cacheUpgrades atomic.Int32
	fe := chatFrontendOf(t, pool, []int{appWorker(t, "w1")}, cacheStub(t, &cacheUpgrades), func(wf *v1.WebFarm) {
		wf.Spec.Frontend.Replicas = 1
	})
	ws := dialWebSocket(t, fe, "/ws", nil)
	if got := echo(t, ws, "hi"); got != "w1: hi" {
		t.Fatalf("echo %q", got)
	}
	page := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodGet, fe.URL+"/", nil)
		req.Host = "www.example"
		resp, err := client.Do(req)
		if err != nil {
			page <- 0
			return
		}
		resp.Body.Close()
		page <- resp.StatusCode
	}()
	testutil.Eventually(t, 10*time.Second, func() error {
		if n, err := fe.Counter("cluster.pool/chat.upstream_rq_pending_active"); err != nil || n != 1 {
			return fmt.Errorf("%d requests wait in the queue (%v), want the page", n, err)
		}
		return nil
	})
	select {
	case status := <-page:
		t.Fatalf("the page was answered %d while the WebSocket held the worker's only slot", status)
	default:
	}
	ws.Close()
	select {
	case status := <-page:
		if status != http.StatusOK {
			t.Errorf("the page waited for the WebSocket to close, then was answered %d", status)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the page is still waiting 10 s after the WebSocket closed")
	}
}

// A site's bandwidth limit paces what the pool sends over a WebSocket as it
// paces responses.
func TestASitesBandwidthLimitPacesItsWebSockets(t *testing.T) {
	const limit = 64 * 1024
	var cacheUpgrades atomic.Int32
	fe := chatFrontend(t, []int{appWorker(t, "w1")}, cacheStub(t, &cacheUpgrades), func(wf *v1.WebFarm) {
		wf.Spec.Sites[0].MaxBandwidthBytesPerSecond = limit
	})
	ws := dialWebSocket(t, fe, "/ws", nil)
	msg := strings.Repeat("0123456789abcdef", 192*1024/16)
	start := time.Now()
	if got := echo(t, ws, msg); got != "w1: "+msg {
		t.Fatalf("the echo is %d bytes, want %d", len(got), len("w1: "+msg))
	}
	took := time.Since(start)
	want := time.Duration(float64(len(msg)) / limit * float64(time.Second))
	t.Logf("a %d KiB echo at %d KiB/s took %s (size/limit %s)", len(msg)/1024, limit/1024, took.Round(time.Millisecond), want)
	if r := took.Seconds() / want.Seconds(); r < 0.8 || r > 1.3 {
		t.Errorf("the echo took %.2f times size/limit, want about 1", r)
	}
}

// On a route through a cache tier the upgrade goes to the pool with the
// pool's cookie: its answer sets the cookie, and the client's next
// WebSockets reach the same worker.
func TestThroughACacheTierAWebSocketGetsAndKeepsThePoolsCookie(t *testing.T) {
	var cacheUpgrades atomic.Int32
	fe := chatFrontend(t, []int{appWorker(t, "w1"), appWorker(t, "w2")}, cacheStub(t, &cacheUpgrades), func(wf *v1.WebFarm) {
		wf.Spec.SessionAffinity = v1.SessionAffinity{Type: v1.AffinityCookie, Cookie: &v1.AffinityCookieSpec{Name: "CONTOSO"}}
	})
	// The handshake by hand, to read the upgrade's answer (and with the
	// Upgrade token capitalised, as some clients send it).
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(fe.URL, "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	_, err = io.WriteString(conn, "GET /cached/ws HTTP/1.1\r\nHost: www.example\r\nUpgrade: WebSocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nOrigin: http://www.example/\r\n\r\n")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close() // a 101 has no body: the connection is the WebSocket's
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("the upgrade was answered %d", resp.StatusCode)
	}
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "CONTOSO.chat" {
			cookie = c
		}
	}
	if cookie == nil {
		t.Fatalf("the upgrade's answer sets cookies %v, want CONTOSO.chat", resp.Header.Values("Set-Cookie"))
	}
	conn.Close()
	header := http.Header{"Cookie": {cookie.Name + "=" + cookie.Value}}
	first := ""
	for i := range 4 {
		ws := dialWebSocket(t, fe, "/cached/ws", header)
		got := echo(t, ws, "hi")
		ws.Close()
		worker, _, _ := strings.Cut(got, ":")
		if i == 0 {
			first = worker
		} else if worker != first {
			t.Fatalf("WebSocket %d with the cookie reached %s, the first reached %s", i+1, worker, first)
		}
	}
	if n := cacheUpgrades.Load(); n != 0 {
		t.Errorf("the cache tier was asked for %d upgrades", n)
	}
}
