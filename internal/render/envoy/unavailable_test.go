package envoy_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/envoy"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/testutil/localenvoy"
)

// These tests run the rendered frontend (real Envoy) on loopback and read
// what a client gets, byte for byte, where HTTP.sys would answer 503: a
// farm with unavailableResponse L7 answers 503 with a body that says why,
// one with L4 cuts the connection.

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

// checkCut fails unless the client got no answer it can use: the connection
// closed (or was reset) before a response completed, with no body, so an
// HTTP client fails the request.
func checkCut(t *testing.T, fe *localenvoy.Frontend, host, path string) {
	t.Helper()
	raw, closed := rawAnswer(t, fe, host, path)
	t.Logf("the client read %q, then the connection ended (%v)", raw, closed)
	head, body, complete := strings.Cut(raw, "\r\n\r\n")
	if complete {
		if n, err := strconv.Atoi(headerValue(head, "content-length")); err == nil && len(body) >= n {
			t.Errorf("the client got a whole response: %q", raw)
		}
		if body != "" {
			t.Errorf("the client got a body: %q", body)
		}
	}
	for _, why := range []string{envoy.QueueFullBody, envoy.NoWorkerBody, envoy.PoolStoppedBody} {
		if strings.Contains(raw, strings.TrimSpace(why)) {
			t.Errorf("the client was told why (%q): L4 answers nothing", why)
		}
	}
	req, err := http.NewRequest(http.MethodGet, fe.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	if err := func() error {
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, err = io.ReadAll(resp.Body)
		return err
	}(); err == nil {
		t.Error("an HTTP client's request succeeded; want it to fail")
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

func headerValue(head, name string) string {
	for _, line := range strings.Split(head, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, name) {
			return strings.TrimSpace(v)
		}
	}
	return ""
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
	worker := envoy.Endpoint{Address: "127.0.0.1", Port: uint32(workerPort)}
	return runFrontend(t, farm, pools, envoy.Backends{envoy.PoolCluster("busy"): {worker}, envoy.PoolCluster("stopped"): {worker}})
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
		waiting, err := fe.Counter("cluster." + envoy.PoolCluster("busy") + ".upstream_rq_pending_active")
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
			t.Run("an administrator-stopped pool", func(t *testing.T) { tt.check(t, fe, "/stopped/", envoy.PoolStoppedBody) })

			queued := fillQueue(t, fe, held)
			t.Run("a request beyond a full queue", func(t *testing.T) { tt.check(t, fe, "/busy/overflow", envoy.QueueFullBody) })
			// checkCut sends two requests beyond the queue (raw, then by an
			// HTTP client), checkRefused503 one.
			wantRejected := uint64(1)
			if tt.response == v1.UnavailableL4 {
				wantRejected = 2
			}
			if rejected, err := fe.Counter("cluster." + envoy.PoolCluster("busy") + ".upstream_rq_pending_overflow"); err != nil || rejected != wantRejected {
				t.Errorf("the pool's queue refused %d requests (%v), want %d", rejected, err, wantRejected)
			}
			close(release)
			queued.Wait()
			if raw, _ := rawAnswer(t, fe, "www.example", "/busy/after"); !strings.HasPrefix(raw, "HTTP/1.1 200 ") {
				t.Errorf("once the queue emptied a request got %q, want 200", raw)
			}
		})
	}
}
