package envoy_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/endpoints"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/envoy"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/testutil/localenvoy"
	"webfarm.dev/operator/internal/testutil/localpool"
	"webfarm.dev/operator/internal/vocabulary"
)

// These tests send HTTP/2 and gRPC through the frontend the operator renders
// (real Envoy) and a pool's nginx as the operator renders it (real nginx) to
// a Go application that speaks HTTP/2 or gRPC in place of the app container.

// h2Pool is pool "api" whose app on appPort speaks protocol, with the API's
// defaults.
func h2Pool(t *testing.T, protocol v1.AppProtocol, appPort int32) model.Pool {
	t.Helper()
	p, err := model.ResolvePool(&v1.AppPool{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "web"},
		Spec: v1.AppPoolSpec{App: v1.AppContainer{Image: "registry.example/api:1", Port: appPort, Protocol: protocol},
			Idle: v1.Idle{OnDemandStart: new(false)}}}, model.Platform{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// h2Frontend runs the rendered frontend of a farm whose site api.example
// sends everything to pool (named "api"), whose workers take HTTP/2 on
// these ports.
func h2Frontend(t *testing.T, pool model.Pool, h2cPorts ...int) *localenvoy.Frontend {
	t.Helper()
	wf := &v1.WebFarm{
		ObjectMeta: metav1.ObjectMeta{Name: "contoso", Namespace: "web"},
		Spec: v1.WebFarmSpec{
			// The tests see the worker's header, as its nginx sends it over HTTP/2.
			Frontend: v1.Frontend{Replicas: 1, DebugHeaders: ptr.To(true)},
			Sites:    []v1.Site{{Name: "api", Hosts: []v1.Hostname{"api.example"}, Routes: []v1.Route{{PathPrefix: "/", AppPool: "api"}}}},
		},
	}
	farm, err := model.ResolveFarm(wf, model.Platform{XDSHost: "127.0.0.1", XDSPort: 18000})
	if err != nil {
		t.Fatal(err)
	}
	backends := endpoints.Backends{}
	for _, port := range h2cPorts {
		backends[vocabulary.PoolCluster("api")] = append(backends[vocabulary.PoolCluster("api")], endpoints.Endpoint{Address: "127.0.0.1", Port: uint32(port)})
	}
	return runFrontend(t, farm, map[string]model.Pool{"api": pool}, backends)
}

// grpcClient is one client connection (one HTTP/2 connection) to the
// frontend, for host api.example.
func grpcClient(t *testing.T, fe *localenvoy.Frontend) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(strings.TrimPrefix(fe.URL, "http://"),
		grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithAuthority("api.example"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// newH2CClient speaks HTTP/2 without TLS, with prior knowledge, and nothing else.
func newH2CClient() *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http2.Transport{
		AllowHTTP: true,
		DialTLSContext: func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
	}}
}

var h2cClient = newH2CClient()

func TestAGRPCCallReachesTheAppThroughTheFrontendAndThePoolsNginx(t *testing.T) {
	app := localpool.StartGRPCApp(t, "w1")
	pool := h2Pool(t, v1.AppProtocolGRPC, app.Port)
	fe := h2Frontend(t, pool, localpool.Start(t, pool).H2CPort)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var header metadata.MD
	resp, err := healthpb.NewHealthClient(grpcClient(t, fe)).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Header(&header))
	if err != nil {
		t.Fatalf("health check through the frontend: %v\nenvoy:\n%s", err, fe.Log())
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("health status %v, want SERVING", resp.GetStatus())
	}
	if got := header.Get("x-worker"); len(got) != 1 || got[0] != "w1" {
		t.Errorf("x-worker %q, want the app's name", got)
	}
	if got := header.Get("x-webfarm-worker"); len(got) != 1 || got[0] == "" {
		t.Errorf("x-webfarm-worker %q, want the worker's host name", got)
	}
}

func TestAnH2CClientIsServedOverHTTP2AsAnHTTP11ClientIs(t *testing.T) {
	port := worker(t, "w1")
	fe := frontend(t, port, func(*v1.WebFarm) {})
	for _, c := range []struct {
		name    string
		client  *http.Client
		upgrade bool
		proto   string
	}{
		{"HTTP/1.1", client, false, "HTTP/1.1"},
		{"h2c with prior knowledge", h2cClient, false, "HTTP/2.0"},
		{"an HTTP/1.1 request asking to upgrade to h2c stays HTTP/1.1", client, true, "HTTP/1.1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, fe.URL+"/small.txt", nil)
			req.Host = "www.example"
			if c.upgrade {
				req.Header.Set("Connection", "Upgrade, HTTP2-Settings")
				req.Header.Set("Upgrade", "h2c")
				req.Header.Set("HTTP2-Settings", "AAMAAABkAARAAAAAAAIAAAAA")
			}
			resp, err := c.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.Proto != c.proto {
				t.Errorf("%s %d %q, want %s 200", resp.Proto, resp.StatusCode, body, c.proto)
			}
		})
	}
}

func TestAnHTTP2AppIsReachedOverHTTP2FromBothKindsOfClient(t *testing.T) {
	app := localpool.StartH2CApp(t, "w1")
	pool := h2Pool(t, v1.AppProtocolHTTP2, app.Port)
	w := localpool.Start(t, pool)
	fe := h2Frontend(t, pool, w.H2CPort)
	for _, c := range []struct {
		name   string
		client *http.Client
	}{
		{"HTTP/1.1", client},
		{"h2c with prior knowledge", h2cClient},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, fe.URL+"/hello", nil)
			req.Host = "api.example"
			resp, err := c.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.HasPrefix(string(body), "w1 HTTP/2.0 ") {
				t.Errorf("%d %q, want 200 from the app over HTTP/2", resp.StatusCode, body)
			}
			if resp.Header.Get("X-Webfarm-Worker") == "" {
				t.Error("no X-Webfarm-Worker header")
			}
		})
	}
	// The kubelet probes the worker's HTTP/1.1 port; nginx passes the probe
	// to the app over HTTP/2.
	resp, err := client.Get(w.URL + "healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(string(body), "w1 HTTP/2.0 ") {
		t.Errorf("probe on the HTTP/1.1 port: %d %q, want 200 from the app over HTTP/2", resp.StatusCode, body)
	}
}

// The per-worker limit counts streams: a client that multiplexes more calls
// on its one connection than the worker may take has the excess wait in
// the queue, and the queue's overflow refused, as HTTP/1.1 requests are.
func TestConcurrentGRPCStreamsOnOneConnectionAreLimitedPerWorkerAndQueued(t *testing.T) {
	app := localpool.StartGRPCApp(t, "w1")
	pool := h2Pool(t, v1.AppProtocolGRPC, app.Port)
	pool.MaxConcurrentRequests, pool.QueueLength = 2, 1
	fe := h2Frontend(t, pool, localpool.Start(t, pool).H2CPort)
	conn := grpcClient(t, fe)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	results := make(chan error, 4)
	var wg sync.WaitGroup
	call := func() {
		wg.Go(func() {
			stream, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, localpool.HoldMethod)
			if err == nil {
				err = stream.CloseSend()
			}
			if err == nil {
				err = stream.RecvMsg(&emptypb.Empty{})
			}
			results <- err
		})
	}
	holding := func(want int32) {
		t.Helper()
		testutil.Eventually(t, 10*time.Second, func() error {
			if n := app.Holding.Load(); n != want {
				return fmt.Errorf("the app holds %d calls, want %d", n, want)
			}
			return nil
		})
	}
	// One call after the other, since a call waiting for a connection the
	// frontend is opening counts as queued: two fill the worker, a third
	// waits in the queue.
	call()
	holding(1)
	call()
	holding(2)
	call()
	testutil.Eventually(t, 10*time.Second, func() error {
		if n, err := fe.Counter("cluster.pool/api.upstream_rq_pending_active"); err != nil || n != 1 {
			return fmt.Errorf("%d calls wait in the queue (%v), want 1", n, err)
		}
		return nil
	})
	// A fourth finds the queue full and ends at once with the queue's answer.
	call()
	select {
	case err := <-results:
		if status.Code(err) != codes.Unavailable {
			t.Fatalf("the call beyond the queue ended with %v, want Unavailable", err)
		}
	case <-ctx.Done():
		t.Fatal("no call was refused")
	}
	if n := app.Holding.Load(); n != 2 {
		t.Fatalf("the app holds %d calls, want no more than the worker's 2", n)
	}
	app.Release()
	wg.Wait()
	close(results)
	for err := range results {
		if err != nil {
			t.Errorf("a held call ended with %v after the release, want its answer", err)
		}
	}
	if n, err := fe.Counter("http.farm.downstream_cx_http2_total"); err != nil || n != 1 {
		t.Errorf("%d HTTP/2 client connections (%v), want the calls on one", n, err)
	}
	if n, err := fe.Counter("cluster.pool/api.upstream_cx_http2_total"); err != nil || n == 0 {
		t.Errorf("%d HTTP/2 connections to the worker (%v), want the frontend to speak HTTP/2 to it", n, err)
	}
}

// A gRPC call that waited in the queue past the pool's queue timeout is
// refused by the worker when it gets there, and the client gets the
// queue's answer, as an HTTP/1.1 request does.
func TestAGRPCCallThatWaitedPastTheQueueTimeoutGetsTheQueuesAnswer(t *testing.T) {
	app := localpool.StartGRPCApp(t, "w1")
	pool := h2Pool(t, v1.AppProtocolGRPC, app.Port)
	pool.MaxConcurrentRequests, pool.QueueTimeout = 1, 100*time.Millisecond
	fe := h2Frontend(t, pool, localpool.Start(t, pool).H2CPort)
	conn := grpcClient(t, fe)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	held := make(chan error, 1)
	go func() {
		stream, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, localpool.HoldMethod)
		if err == nil {
			err = stream.CloseSend()
		}
		if err == nil {
			err = stream.RecvMsg(&emptypb.Empty{})
		}
		held <- err
	}()
	testutil.Eventually(t, 10*time.Second, func() error {
		if n := app.Holding.Load(); n != 1 {
			return fmt.Errorf("the app holds %d calls, want 1", n)
		}
		return nil
	})
	waited := make(chan error, 1)
	var header, trailer metadata.MD
	go func() {
		_, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Header(&header), grpc.Trailer(&trailer))
		waited <- err
	}()
	testutil.Eventually(t, 10*time.Second, func() error {
		if n, err := fe.Counter("cluster.pool/api.upstream_rq_pending_active"); err != nil || n != 1 {
			return fmt.Errorf("%d calls wait in the queue (%v), want 1", n, err)
		}
		return nil
	})
	// Past the queue timeout, the worker takes the waiting call.
	<-time.After(pool.QueueTimeout)
	app.Release()
	if err := <-held; err != nil {
		t.Fatalf("the held call ended with %v, want its answer", err)
	}
	err := <-waited
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("the call that waited past the queue timeout ended with %v, want Unavailable", err)
	}
	// The frontend's answer is trailers-only, as gRPC errors are.
	got := append(header.Get(envoy.QueueHeader), trailer.Get(envoy.QueueHeader)...)
	if len(got) != 1 || got[0] != envoy.QueueTimedOut {
		t.Errorf("%s %q, want %q (headers %v, trailers %v)", envoy.QueueHeader, got, envoy.QueueTimedOut, header, trailer)
	}
}

func TestWithoutKeepAliveAnH2CClientHasAConnectionPerRequestToo(t *testing.T) {
	fe := frontend(t, worker(t, "w1"), func(wf *v1.WebFarm) { wf.Spec.Frontend.KeepAlive = new(false) })
	c := newH2CClient()
	for range 3 {
		req, _ := http.NewRequest(http.MethodGet, fe.URL+"/small.txt", nil)
		req.Host = "www.example"
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.ProtoMajor != 2 || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %d, want HTTP/2 200", resp.Proto, resp.StatusCode)
		}
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		if n, err := fe.Counter("http.farm.downstream_cx_http2_total"); err != nil || n != 3 {
			return fmt.Errorf("Envoy accepted %d HTTP/2 connections (%v), want one per request", n, err)
		}
		return nil
	})
}
