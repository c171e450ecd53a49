package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// tlsTestServer is a TLS 1.3 server that answers every GET with a small
// body, the way the handshake client expects a server to.
func tlsTestServer(t *testing.T) (*httptest.Server, *x509.CertPool) {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("small file"))
	}))
	srv.TLS = &tls.Config{MinVersion: tls.VersionTLS13, NextProtos: []string{"http/1.1"}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	return srv, roots
}

func TestHandshakeClientWithoutSessionCacheMakesOnlyFullHandshakes(t *testing.T) {
	srv, roots := tlsTestServer(t)
	c := handshakeClient{addr: srv.Listener.Addr().String(), serverName: "example.com", roots: roots, path: "/small", clients: 4}
	got, err := c.run(context.Background(), 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if got.connections == 0 || got.resumed != 0 {
		t.Errorf("connections %d, resumed %d: want some connections, none resumed", got.connections, got.resumed)
	}
	if got.suite == 0 {
		t.Error("no cipher suite recorded")
	}
}

func TestHandshakeClientWithASessionCacheCountsResumedHandshakes(t *testing.T) {
	srv, roots := tlsTestServer(t)
	c := handshakeClient{addr: srv.Listener.Addr().String(), serverName: "example.com", roots: roots, path: "/small", clients: 4,
		cache: tls.NewLRUClientSessionCache(16)}
	warm, err := c.run(context.Background(), 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if warm.resumed == 0 || warm.resumed >= warm.connections {
		t.Fatalf("warm-up: %d of %d resumed: want some, and the first ones full", warm.resumed, warm.connections)
	}
	// With the cache filled, every connection resumes: the server's tickets
	// come with each response, which the client reads to its end.
	got, err := c.run(context.Background(), 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if got.connections == 0 || got.resumed != got.connections || got.resumedShare() != 1 {
		t.Errorf("%d of %d resumed, want all", got.resumed, got.connections)
	}
}

func TestHandshakeClientWithoutRootsOpensClearTextConnections(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	t.Cleanup(srv.Close)
	c := handshakeClient{addr: srv.Listener.Addr().String(), serverName: "example.com", path: "/small", clients: 2}
	got, err := c.run(context.Background(), 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if got.connections == 0 || got.resumed != 0 {
		t.Errorf("connections %d, resumed %d", got.connections, got.resumed)
	}
}

func TestHandshakeClientFailsOnAServerThatAnswersAnError(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	c := handshakeClient{addr: srv.Listener.Addr().String(), serverName: "example.com", path: "/missing", clients: 2}
	if _, err := c.run(context.Background(), 100*time.Millisecond); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("err = %v, want the 404", err)
	}
}

func TestHandshakeClientRefusesAnythingButTLS13WithX25519AndHTTP11(t *testing.T) {
	ok := tls.ConnectionState{Version: tls.VersionTLS13, CurveID: tls.X25519, NegotiatedProtocol: "http/1.1"}
	if err := checkNegotiated(ok); err != nil {
		t.Errorf("TLS 1.3, X25519, http/1.1: %v", err)
	}
	for name, st := range map[string]tls.ConnectionState{
		"TLS 1.2": {Version: tls.VersionTLS12, CurveID: tls.X25519, NegotiatedProtocol: "http/1.1"},
		"P-256":   {Version: tls.VersionTLS13, CurveID: tls.CurveP256, NegotiatedProtocol: "http/1.1"},
		"h2":      {Version: tls.VersionTLS13, CurveID: tls.X25519, NegotiatedProtocol: "h2"},
	} {
		if checkNegotiated(st) == nil {
			t.Errorf("%s accepted", name)
		}
	}
}

func TestTheHandshakeFiguresArePerConnectionAndPerCore(t *testing.T) {
	c := handshakeCount{connections: 2000, resumed: 500, elapsed: 2 * time.Second}
	if got := c.perSecond(); got != 1000 {
		t.Errorf("perSecond = %v, want 1000", got)
	}
	if got := c.resumedShare(); got != 0.25 {
		t.Errorf("resumedShare = %v, want 0.25", got)
	}
	cpu, err := hopCPUPerConnection(time.Second, c)
	if err != nil || cpu != 500*time.Microsecond {
		t.Errorf("hopCPUPerConnection = %v, %v; want 500µs", cpu, err)
	}
	if got := perCore(cpu); got != 2000 {
		t.Errorf("perCore(500µs) = %v, want 2000", got)
	}
	if _, err := hopCPUPerConnection(time.Second, handshakeCount{}); err == nil {
		t.Error("no connections: want an error")
	}
	if perCore(0) != 0 {
		t.Error("perCore(0) should be 0, not infinite")
	}
}

func TestTheRequestAsksTheServerToClose(t *testing.T) {
	want := "GET /a HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"
	if got := requestLine("/a", "h"); got != want {
		t.Errorf("requestLine = %q, want %q", got, want)
	}
}
