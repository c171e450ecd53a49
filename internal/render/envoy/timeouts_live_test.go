package envoy_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "webfarm.dev/operator/api/v1alpha1"
)

// These tests are a client's view of the frontend's bounds on what a client
// may hold: a request that takes too long, a connection left idle.

func TestARequestPastTheRequestTimeoutIsAnswered504(t *testing.T) {
	srv, held, _ := queueWorker(t, time.Hour)
	port, err := strconv.Atoi(strings.TrimPrefix(srv.URL, "http://127.0.0.1:"))
	if err != nil {
		t.Fatal(err)
	}
	fe := frontend(t, port, func(wf *v1.WebFarm) { wf.Spec.Frontend.RequestTimeout = "1s" })
	start := time.Now()
	status, _, _ := send(t, fe, http.MethodGet, "www.example", "/hold")
	took := time.Since(start)
	select {
	case <-held:
	default:
		t.Fatal("the request never reached the worker")
	}
	// The client's own timeout (30 s) is far beyond: the frontend answered
	// (its timers may fire a few milliseconds early).
	if status != http.StatusGatewayTimeout || took < 900*time.Millisecond || took > 10*time.Second {
		t.Errorf("a request the worker holds got %d after %v, want 504 after the 1s request timeout", status, took)
	}
}

func TestAnIdleClientConnectionIsClosedAfterTheConnectionTimeout(t *testing.T) {
	fe := frontend(t, worker(t, "w1"), func(wf *v1.WebFarm) { wf.Spec.Frontend.ConnectionTimeout = "1s" })
	conn, err := net.Dial("tcp", strings.TrimPrefix(fe.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /small.txt HTTP/1.1\r\nHost: www.example\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(conn)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s, want 200", resp.Status)
	}
	// Idle from here: the frontend closes the connection once it has been
	// idle for the timeout and Envoy has drained it (some seconds more),
	// well before the read deadline; the API's default would keep it 120 s.
	idle := time.Now()
	if err := conn.SetReadDeadline(idle.Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	_, err = r.ReadByte()
	closedAfter := time.Since(idle)
	if !errors.Is(err, io.EOF) || closedAfter < 900*time.Millisecond {
		t.Errorf("an idle connection: %v after %v, want closed by the frontend after the 1s connection timeout", err, closedAfter)
	}
}
