package drain_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "webfarm.dev/operator/api/v1alpha1"
	"webfarm.dev/operator/internal/drain"
	"webfarm.dev/operator/internal/endpoints"
	"webfarm.dev/operator/internal/model"
	"webfarm.dev/operator/internal/render/envoy"
	"webfarm.dev/operator/internal/testutil"
	"webfarm.dev/operator/internal/testutil/localenvoy"
	"webfarm.dev/operator/internal/vocabulary"
)

// These tests drain the frontend the operator renders (the real Envoy) with
// drain.Run, as the pod's preStop hook does, while clients hold connections.

const host = "www.example"

// frontend runs the rendered frontend of a farm whose site www.example
// sends everything to a Go backend on loopback.
func frontend(t *testing.T) *localenvoy.Frontend {
	t.Helper()
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
	t.Cleanup(backend.Close)
	backendPort := uint32(backend.Listener.Addr().(*net.TCPAddr).Port)

	platform := model.Platform{XDSHost: "127.0.0.1", XDSPort: 18000}
	farm, err := model.ResolveFarm(&v1.WebFarm{ObjectMeta: metav1.ObjectMeta{Name: "contoso", Namespace: "web"},
		Spec: v1.WebFarmSpec{Sites: []v1.Site{{Name: "www", Hosts: []v1.Hostname{host}, Routes: []v1.Route{{AppPool: "web"}}}}}}, platform)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := model.ResolvePool(&v1.AppPool{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "web"},
		Spec: v1.AppPoolSpec{Content: &v1.Content{ConfigMap: v1.ConfigMapContent{Name: "site"}}}}, platform)
	if err != nil {
		t.Fatal(err)
	}
	routing, err := envoy.FarmRouting(farm, map[string]model.Pool{"web": pool},
		endpoints.Backends{vocabulary.PoolCluster("web"): {{Address: "127.0.0.1", Port: backendPort}}})
	if err != nil {
		t.Fatal(err)
	}
	fe, err := localenvoy.Start(testutil.Tool(t, "WEBFARM_ENVOY", "envoy"), t.TempDir(), farm, routing)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fe.Stop)
	return fe
}

// h1 is a keep-alive HTTP/1.1 connection to the frontend.
type h1 struct {
	conn net.Conn
	r    *bufio.Reader
}

func dialH1(t *testing.T, fe *localenvoy.Frontend) *h1 {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(fe.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &h1{conn: c, r: bufio.NewReader(c)}
}

// get sends a request and reads the response: its status and whether the
// frontend said "Connection: close" (Go reads that header into resp.Close).
func (c *h1) get(t *testing.T) (status int, closing bool) {
	t.Helper()
	if err := c.conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(c.conn, "GET / HTTP/1.1\r\nHost: "+host+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Close
}

// closedByFrontend waits for the frontend to close the connection.
func (c *h1) closedByFrontend(timeout time.Duration) error {
	if err := c.conn.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	if _, err := c.r.Peek(1); !errors.Is(err, io.EOF) {
		return fmt.Errorf("the connection is still open or failed otherwise: %v", err)
	}
	return nil
}

// h2c is an HTTP/2 cleartext connection (prior knowledge) that reports the
// GOAWAY frames it receives.
type h2c struct {
	conn   net.Conn
	framer *http2.Framer
	goaway chan *http2.GoAwayFrame
}

func dialH2C(t *testing.T, fe *localenvoy.Frontend) *h2c {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(fe.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	h := &h2c{conn: c, framer: http2.NewFramer(c, c), goaway: make(chan *http2.GoAwayFrame, 4)}
	if err := h.framer.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	go h.read()
	return h
}

func (h *h2c) read() {
	for {
		f, err := h.framer.ReadFrame()
		if err != nil {
			close(h.goaway)
			return
		}
		switch f := f.(type) {
		case *http2.GoAwayFrame:
			h.goaway <- f
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = h.framer.WriteSettingsAck()
			}
		}
	}
}

// get opens stream id with a GET request.
func (h *h2c) get(t *testing.T, id uint32) {
	t.Helper()
	var block strings.Builder
	enc := hpack.NewEncoder(&block)
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "http"}, {":authority", host}, {":path", "/"}} {
		if err := enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]}); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.framer.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: []byte(block.String()), EndStream: true, EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
}

// ended is a drain's result and when it returned.
type ended struct {
	drain.Result
	at time.Time
}

// startDrain runs drain.Run against the frontend's admin in the background.
func startDrain(fe *localenvoy.Frontend, minimum, maximum time.Duration) <-chan ended {
	done := make(chan ended, 1)
	o := drain.Options{Admin: strings.TrimPrefix(fe.AdminURL, "http://"), Minimum: minimum, Maximum: maximum, Poll: 50 * time.Millisecond}
	go func() {
		res := drain.Run(context.Background(), &http.Client{Timeout: 2 * time.Second}, o)
		done <- ended{res, time.Now()}
	}()
	return done
}

// draining waits until the frontend's admin says it is draining (/ready
// answers 503): the drain's admin call has been made.
func draining(t *testing.T, fe *localenvoy.Frontend) {
	t.Helper()
	testutil.Eventually(t, 5*time.Second, func() error {
		resp, err := http.Get(fe.AdminURL + "/ready")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			return fmt.Errorf("/ready: %s", resp.Status)
		}
		return nil
	})
}

func TestADrainingFrontendClosesOpenConnectionsAndServesNewOnes(t *testing.T) {
	t.Parallel()
	fe := frontend(t)
	clients := []*h1{dialH1(t, fe), dialH1(t, fe), dialH1(t, fe)}
	for _, c := range clients {
		if status, closing := c.get(t); status != http.StatusOK || closing {
			t.Fatalf("before the drain: %d, Connection: close %v", status, closing)
		}
	}
	h2 := dialH2C(t, fe)
	h2.get(t, 1)

	const minimum, maximum = 2 * time.Second, 20 * time.Second
	start := time.Now()
	done := startDrain(fe, minimum, maximum)
	draining(t, fe)

	t.Run("the next response on an open HTTP/1.1 connection says Connection: close", func(t *testing.T) {
		for i, c := range clients {
			if status, closing := c.get(t); status != http.StatusOK || !closing {
				t.Fatalf("connection %d: %d, Connection: close %v", i, status, closing)
			}
		}
	})
	t.Run("a connection opened during the drain is still served", func(t *testing.T) {
		late := dialH1(t, fe)
		if status, _ := late.get(t); status != http.StatusOK {
			t.Fatalf("a new connection got %d", status)
		}
		late.conn.Close()
	})
	t.Run("an HTTP/2 connection gets a GOAWAY with its next response", func(t *testing.T) {
		h2.get(t, 3)
		select {
		case g, ok := <-h2.goaway:
			if !ok || g.ErrCode != http2.ErrCodeNo {
				t.Fatalf("GOAWAY %v (connection open %v), want a graceful one", g, ok)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no GOAWAY within 5 s")
		}
		h2.conn.Close()
	})
	// Clients close on Connection: close; the frontend closes the
	// connection of one that does not.
	for _, c := range clients[1:] {
		c.conn.Close()
	}
	t.Run("the frontend closes a connection after its Connection: close", func(t *testing.T) {
		if err := clients[0].closedByFrontend(10 * time.Second); err != nil {
			t.Fatal(err)
		}
	})
	lastClosed := time.Now()

	t.Run("the drain ends once the connections are closed, not before its minimum", func(t *testing.T) {
		res := <-done
		t.Logf("drain ended after %s with %d open; the last connection closed after %s", res.Elapsed, res.Open, lastClosed.Sub(start))
		if res.Err != nil || res.Open != 0 {
			t.Fatalf("error %v, %d open", res.Err, res.Open)
		}
		if res.Elapsed < minimum || res.Elapsed >= maximum {
			t.Fatalf("ended after %s, want between %s and %s", res.Elapsed, minimum, maximum)
		}
		// The gauge drops when Envoy closes; a drain that did not wait
		// for it would have ended at its minimum, seconds earlier.
		if early := lastClosed.Sub(res.at); early > 500*time.Millisecond {
			t.Fatalf("the drain ended %s before the last connection was closed", early)
		}
	})
}

func TestAClientHoldingAnIdleConnectionKeepsTheDrainToItsMaximum(t *testing.T) {
	t.Parallel()
	fe := frontend(t)
	idle := dialH1(t, fe)
	if status, _ := idle.get(t); status != http.StatusOK {
		t.Fatalf("before the drain: %d", status)
	}
	const minimum, maximum = time.Second, 3 * time.Second
	res := <-startDrain(fe, minimum, maximum)
	if res.Err != nil || res.Open != 1 || res.Elapsed < maximum {
		t.Fatalf("ended after %s with %d open, error %v; want the maximum %s with the idle connection open", res.Elapsed, res.Open, res.Err, maximum)
	}
}
