package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// handshakeClient opens TLS 1.3 connections to one server, as many goroutines
// at once as it has clients, each connection a new handshake that fetches one
// small file with "Connection: close" and closes. Without a session cache
// every handshake is a full one (certificate, signature, key exchange); with
// one, the client offers the server's last ticket (PSK resumption, with an
// X25519 exchange: Go offers psk_dhe_ke only), and the server decides.
type handshakeClient struct {
	addr       string         // where to connect
	serverName string         // SNI and Host
	roots      *x509.CertPool // nil: no TLS, a clear-text connection (the control)
	path       string         // the file each connection fetches
	clients    int
	// cache, when set, resumes sessions; one cache per server, as the
	// server's tickets mean nothing to another.
	cache tls.ClientSessionCache
}

// handshakeCount is what a run of the client saw.
type handshakeCount struct {
	connections int64 // completed: handshake, response, close
	resumed     int64 // of them, resumed sessions (ConnectionState.DidResume)
	suite       uint16
	elapsed     time.Duration
}

// perSecond is the completed connections' rate.
func (c handshakeCount) perSecond() float64 {
	if c.elapsed <= 0 {
		return 0
	}
	return float64(c.connections) / c.elapsed.Seconds()
}

// resumedShare is the share of the connections that resumed a session.
func (c handshakeCount) resumedShare() float64 {
	if c.connections == 0 {
		return 0
	}
	return float64(c.resumed) / float64(c.connections)
}

// config offers what the other HTTPS clients offer: TLS 1.3 only, X25519
// only (not Go's default hybrid post-quantum group, which neither BoringSSL's
// nor OpenSSL's defaults here would choose alike), HTTP/1.1 by ALPN.
func (h handshakeClient) config() *tls.Config {
	return &tls.Config{
		RootCAs:            h.roots,
		ServerName:         h.serverName,
		MinVersion:         tls.VersionTLS13,
		CurvePreferences:   []tls.CurveID{tls.X25519},
		NextProtos:         []string{"http/1.1"},
		ClientSessionCache: h.cache,
	}
}

// run opens connections for d and counts them; a connection begun in time
// runs to its end. Any failure ends the run: a server that refuses
// handshakes has no rate worth reporting.
func (h handshakeClient) run(ctx context.Context, d time.Duration) (handshakeCount, error) {
	cfg := h.config()
	var (
		conns, resumed atomic.Int64
		suite          atomic.Uint32
		failed         atomic.Bool
		wg             sync.WaitGroup
		errOnce        sync.Once
		firstErr       error
	)
	start := time.Now()
	end := start.Add(d)
	for range max(1, h.clients) {
		wg.Go(func() {
			for time.Now().Before(end) && ctx.Err() == nil && !failed.Load() {
				st, err := h.fetch(ctx, cfg)
				if err != nil {
					errOnce.Do(func() { firstErr = err })
					failed.Store(true)
					return
				}
				conns.Add(1)
				if st.DidResume {
					resumed.Add(1)
				}
				suite.Store(uint32(st.CipherSuite))
			}
		})
	}
	wg.Wait()
	c := handshakeCount{connections: conns.Load(), resumed: resumed.Load(), suite: uint16(suite.Load()), elapsed: time.Since(start)}
	if firstErr != nil {
		return c, fmt.Errorf("%s: %w", h.addr, firstErr)
	}
	return c, ctx.Err()
}

// fetch is one connection: handshake, GET, the whole response, close. The
// body is read to its end: TLS 1.3 tickets come after the handshake, with
// the response, and the cache holds them only once read.
func (h handshakeClient) fetch(ctx context.Context, cfg *tls.Config) (tls.ConnectionState, error) {
	var d interface {
		DialContext(ctx context.Context, network, addr string) (net.Conn, error)
	} = &net.Dialer{Timeout: 5 * time.Second}
	if h.roots != nil {
		d = &tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second}, Config: cfg}
	}
	conn, err := d.DialContext(ctx, "tcp", h.addr)
	if err != nil {
		return tls.ConnectionState{}, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	tc, secure := conn.(*tls.Conn)
	var st tls.ConnectionState
	if secure {
		st = tc.ConnectionState()
		if err := checkNegotiated(st); err != nil {
			return st, err
		}
	}
	if _, err := io.WriteString(conn, requestLine(h.path, h.serverName)); err != nil {
		return st, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return st, err
	}
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("GET %s: %s", h.path, resp.Status)
	}
	return st, nil // DidResume is known from the handshake on
}

// requestLine is the connection's only request: it asks the server to close.
func requestLine(path, host string) string {
	return "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n"
}

// checkNegotiated refuses a connection that is not what every server is
// measured on: TLS 1.3 with X25519 and HTTP/1.1.
func checkNegotiated(st tls.ConnectionState) error {
	switch {
	case st.Version != tls.VersionTLS13:
		return fmt.Errorf("negotiated %s, want TLS 1.3", tls.VersionName(st.Version))
	case st.CurveID != 0 && st.CurveID != tls.X25519:
		return fmt.Errorf("negotiated group %s, want X25519", st.CurveID)
	case st.NegotiatedProtocol != "http/1.1":
		return fmt.Errorf("negotiated ALPN %q, want http/1.1", st.NegotiatedProtocol)
	}
	return nil
}

// errNoConnections is a run in which no connection completed.
var errNoConnections = errors.New("no connection completed")

// handshakeSample is one measurement of a server's handshakes.
type handshakeSample struct {
	perSecond    float64       // completed connections per second
	resumedShare float64       // of them, resumed
	hopCPU       time.Duration // the server's CPU per connection
	otherCores   float64
}

// hopCPUPerConnection is the server's CPU time spent per connection.
func hopCPUPerConnection(cpu time.Duration, c handshakeCount) (time.Duration, error) {
	if c.connections == 0 {
		return 0, errNoConnections
	}
	return cpu / time.Duration(c.connections), nil
}

// perCore is how many connections one fully busy core would serve at a CPU
// cost of cpu each.
func perCore(cpu time.Duration) float64 {
	if cpu <= 0 {
		return 0
	}
	return float64(time.Second) / float64(cpu)
}
