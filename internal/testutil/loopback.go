package testutil

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
)

// ServeOnLoopbackHosts serves each handler on its own loopback address
// (127.0.0.1, 127.0.0.2, ...), all on one port, as the pods of one kind
// serve one port at their own IPs: a collector reads them as it reads pods.
// It returns the port and the addresses, in the handlers' order.
func ServeOnLoopbackHosts(t testing.TB, handlers ...http.Handler) (port int, ips []string) {
	t.Helper()
	for i, h := range handlers {
		ip := "127.0.0." + strconv.Itoa(i+1)
		l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
		if err != nil {
			t.Fatal(err)
		}
		port = l.Addr().(*net.TCPAddr).Port
		srv := httptest.NewUnstartedServer(h)
		srv.Listener.Close()
		srv.Listener = l
		srv.Start()
		t.Cleanup(srv.Close)
		ips = append(ips, ip)
	}
	return port, ips
}

// Hang is a handler that never answers: a server that does not answer in
// time. It returns when the client gives up.
var Hang = http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() })

// Answer is how a server answers one request: a status and a body, or no
// answer in time (Status 0).
type Answer struct {
	Status int
	Body   string
}

// AnswerAt answers requests for path?query with the answers in turn (the
// last repeats), as a status page does at each reading; other requests get
// 404.
func AnswerAt(path, query string, answers ...Answer) http.Handler {
	var served atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path || r.URL.RawQuery != query {
			http.NotFound(w, r)
			return
		}
		a := answers[min(int(served.Add(1))-1, len(answers)-1)]
		if a.Status == 0 {
			Hang(w, r)
			return
		}
		w.WriteHeader(a.Status)
		_, _ = w.Write([]byte(a.Body))
	})
}
